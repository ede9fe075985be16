"""A client's librdkafka debug lines, kept in a bounded ring: written beside the node
logs when a scenario fails, so an anomaly the history checker finds (a skipped offset, an ack
naming the wrong offset) can be classified from the client's own account."""

from __future__ import annotations

import logging
from collections import deque


class _Ring(logging.Handler):
    def __init__(self, lines: deque[str], forward: logging.Logger | None, keep: tuple[str, ...],
                 kept: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines
        self.forward = forward
        self.keep, self.kept = keep, kept
        self.setFormatter(logging.Formatter("%(created).3f %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record)
        self.lines.append(line)
        if any(marker in line for marker in self.keep):
            self.kept.append(line)
        if self.forward is not None and record.levelno >= logging.CRITICAL:
            self.forward.handle(record)


class DebugRing:
    """``logger`` is the one to give librdkafka (``"logger"``, with ``"debug"`` contexts and
    ``"log_level": 7``); its lines go to the ring only, and critical ones also to ``forward``
    when given (a broker going away is what faults do: its connection errors reach the harness
    through ``error_cb``, and logged they would drown the run's progress lines). Lines containing
    one of ``keep`` are also kept outside the ring, all of them (rare lines a check needs from
    the whole run: a producer's ids). The logger is not registered with logging's manager (one per client
    would never be freed) and does not propagate."""

    def __init__(self, name: str, max_lines: int, forward: logging.Logger | None = None,
                 keep: tuple[str, ...] = ()) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._kept: list[str] = []
        self.logger = logging.Logger(name)
        self.logger.addHandler(_Ring(self._lines, forward, keep, self._kept))
        self.logger.propagate = False

    def lines(self) -> list[str]:
        return list(self._lines)

    def kept_lines(self) -> list[str]:
        """Every line that contained one of ``keep``, however old."""
        return list(self._kept)

"""Progress for long commands: plain stamped lines always (CI logs keep them), and on a terminal
one live status line under them — scenario i/N, the current step, elapsed, estimated remaining."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class Progress:
    total: int = 0  # cases planned (0: unknown, no estimate)
    out: TextIO = field(default_factory=lambda: sys.stdout)
    t0: float = field(default_factory=time.monotonic)
    live: bool | None = None  # None: a terminal decides
    _done: int = 0
    _current: str = ""
    _step: str = ""
    _status_shown: bool = False

    def __post_init__(self) -> None:
        if self.live is None:
            self.live = bool(getattr(self.out, "isatty", lambda: False)())

    def __call__(self, message: str) -> None:
        """One stamped line; on a terminal the status line is redrawn under it."""
        self._clear()
        self.out.write(f"[{time.monotonic() - self.t0:7.1f}s] {message}\n")
        if ": step " in message or message.endswith(("healing", "creating topics")):
            self._step = message.split(": ", 1)[-1]
        self._draw()
        self.out.flush()

    def case_started(self, name: str) -> None:
        self._current, self._step = name, ""

    def case_done(self) -> None:
        self._done += 1

    def status(self) -> str:
        elapsed = time.monotonic() - self.t0
        eta = ""
        if self.total and self._done:
            eta = f", ~{elapsed / self._done * (self.total - self._done):.0f}s left"
        where = f"{self._current} {self._step}".strip()
        return f"[{self._done + 1 if self._current else self._done}/{self.total or '?'}] {where} — {elapsed:.0f}s{eta}"

    def _clear(self) -> None:
        if self.live and self._status_shown:
            self.out.write("\r\033[K")
            self._status_shown = False

    def _draw(self) -> None:
        if self.live and self._current:
            self.out.write(self.status()[:200])
            self._status_shown = True

    def close(self) -> None:
        self._clear()
        self.out.flush()

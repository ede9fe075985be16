"""Client-side availability and end-to-end latency of one partition during one fault: pure
arithmetic over the step's :class:`scenarios.clients.ops.ClientOps` (Xinfra Monitor's produce /
consume availability and end-to-end latency, per fault).

* **Availability** — the window from the fault to the end of the step's measurement is cut
  into fixed :data:`WINDOW_S` windows; produce availability is the share of windows with at
  least one acknowledgement, consume availability the share with at least one record polled
  by the ``assign`` consumer (it reads every partition; the group member may legitimately be
  between assignments). The windows without success, in ms, are the phases
  ``produce_unavailable`` and ``consume_unavailable``.
* **Unavailability window** (``unavailable``) — the longest stretch of the fault window
  without an acknowledgement (its ends: the fault, the acks, the end of the window).
* **End-to-end latency** (``e2e_p50``, ``e2e_p99``, ``e2e_p999``) — for every message
  created (producer CreateTime) in the fault window and polled within the step's recorded
  stretch, the time from its creation to its first poll by any consumer (the read-back
  excluded), nearest rank. A message still unread when the step ends is not a sample: the
  step's consume availability shows that stall instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kafka_chaos.scenarios.clients.ops import ASSIGN, READBACK, ClientOps

WINDOW_S = 1.0
PHASES = ("produce_unavailable", "consume_unavailable", "unavailable", "e2e_p50", "e2e_p99", "e2e_p999")


@dataclass(frozen=True)
class Availability:
    windows: int
    produce: float  # share of windows with an ack
    consume: float | None  # share with an assign-consumer poll; None: no consumer recorded
    unavailable_ms: float
    e2e_ms: tuple[float, ...]  # sorted
    produced: int  # messages created in the window and acked
    consumed: int  # of those created in the window, how many were polled

    def latency_ms(self) -> dict[str, float | None]:
        return {
            "produce_unavailable": round((1 - self.produce) * self.windows * WINDOW_S * 1000, 1),
            "consume_unavailable": (None if self.consume is None
                                    else round((1 - self.consume) * self.windows * WINDOW_S * 1000, 1)),
            "unavailable": round(self.unavailable_ms, 1),
            "e2e_p50": nearest_rank(self.e2e_ms, 0.5), "e2e_p99": nearest_rank(self.e2e_ms, 0.99),
            "e2e_p999": nearest_rank(self.e2e_ms, 0.999),
        }


def nearest_rank(ordered: Sequence[float], fraction: float) -> float | None:
    """The smallest sample with at least ``fraction`` of the samples at or below it."""
    if not ordered:
        return None
    return round(ordered[max(0, math.ceil(fraction * len(ordered)) - 1)], 1)


def measure(ops: Sequence[ClientOps], start: float, end: float) -> Availability:
    """Availability of one partition over ``[start, end]`` from its ops (those of the step and
    the later ones: a message created in the window may be polled after it)."""
    windows = max(1, math.floor((end - start) / WINDOW_S))
    acked = sorted(a.acked_at for o in ops for a in o.acks if start <= a.acked_at <= end)
    polled = sorted(p.polled_at for o in ops for p in o.polls
                    if p.consumer == ASSIGN and start <= p.polled_at <= end)
    any_consumer = any(p.consumer != READBACK for o in ops for p in o.polls)

    def share(times: Sequence[float]) -> float:
        hit = {int((t - start) // WINDOW_S) for t in times}
        return sum(1 for i in range(windows) if i in hit) / windows

    ends = [start, *acked, end]
    longest = max(b - a for a, b in zip(ends, ends[1:]))
    first_poll: dict[str, float] = {}
    created: dict[str, float] = {}
    for o in ops:
        for p in o.polls:
            if p.consumer == READBACK:
                continue
            first_poll.setdefault(p.key, p.polled_at)
            if p.created_at is not None:
                created.setdefault(p.key, p.created_at)
    in_window = [k for k, c in created.items() if start <= c <= end]
    e2e = sorted(max(0.0, (first_poll[k] - created[k]) * 1000) for k in in_window)
    produced = sum(1 for o in ops for a in o.acks if a.key in created and start <= created[a.key] <= end)
    return Availability(windows, share(acked), share(polled) if any_consumer else None, longest * 1000,
                        tuple(e2e), produced, len(in_window))

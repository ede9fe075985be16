"""Client-side availability and end-to-end latency of one partition during one fault: pure
arithmetic over the step's :class:`scenarios.clients.ops.ClientOps` (Xinfra Monitor's produce /
consume availability and end-to-end latency, per fault).

* **Produce outage** (``produce_outage``, ms) — how long the producer's sends to the partition
  went unanswered, from its own delivery reports (:func:`produce_stalls`). What a history holds
  decides the definition: it records when each delivery report arrived (acks and failures), not
  when a message was sent, and the workload's producer is idempotent with retries and a 120 s
  delivery timeout, so during a leader switch a send almost never *fails*: its acknowledgement
  comes late, together with every later send's. A **stall** is a stretch between two
  consecutive acknowledgements (the first: the last ack at or before the fault, or the
  stretch's start when there was none; the last: the window's end when no ack closed it) that
  lasted :data:`records.schema.STALL_S` (1 s) or more, or in which a failed delivery report
  arrived after the fault. Its start, the last acknowledgement before it, is within one send
  interval (50 ms at the runner's 20 messages/s per partition) of the first send that went
  unanswered; its end is the next successful acknowledgement. The outage is the stalls' total
  within the window from the fault to the end of the step's measurement (a stall that began
  before the fault counts from the fault; one still open at the window's end counts to it, a
  lower bound). No stall: 0. Shorter silences are the workload's own pace and a loaded
  machine's jitter (docs/report.md, "Client availability"), so a shorter outage is not told
  apart from them and reads 0.
* **Availability** — the window from the fault to the end of the step's measurement is cut
  into fixed :data:`WINDOW_S` windows; produce availability is the share of windows with at
  least one acknowledgement, consume availability the share with at least one record polled
  by the ``assign`` consumer (it reads every partition; the group member may legitimately be
  between assignments). The windows without success, counted in ms (a multiple of 1,000), are
  the phases ``produce_unavailable`` and ``consume_unavailable``: coarse, kept for the gates and
  tables that use them, and shown apart from the millisecond phases.
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

from kafka_chaos.records.schema import CLIENT_PHASES, STALL_S
from kafka_chaos.scenarios.clients.ops import ASSIGN, READBACK, ClientOps

WINDOW_S = 1.0
PHASES = CLIENT_PHASES  # what Availability.latency_ms measures


@dataclass(frozen=True)
class Stall:
    """A stretch in which the producer's sends to one partition went unanswered (epoch s):
    from the last acknowledgement before it to the next one (``closed``), or to the window's
    end (not ``closed``: still stalled when the measurement ended); ``failed``: failed delivery
    reports that arrived in it after the fault."""

    start: float
    end: float
    closed: bool
    failed: int = 0


@dataclass(frozen=True)
class Availability:
    windows: int
    produce: float  # share of windows with an ack
    consume: float | None  # share with an assign-consumer poll; None: no consumer recorded
    unavailable_ms: float
    e2e_ms: tuple[float, ...]  # sorted
    produced: int  # messages created in the window and acked
    consumed: int  # of those created in the window, how many were polled
    stalls: tuple[Stall, ...]  # the producer's, overlapping the window
    outage_ms: float  # the stalls' total within the window

    def latency_ms(self) -> dict[str, float | None]:
        return {
            "produce_outage": round(self.outage_ms, 1),
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
    stalls = produce_stalls([a.acked_at for o in ops for a in o.acks], [f.at for o in ops for f in o.failed],
                            min((o.since for o in ops), default=start), start, end)
    return Availability(windows, share(acked), share(polled) if any_consumer else None, longest * 1000,
                        tuple(e2e), produced, len(in_window), tuple(stalls), outage_ms(stalls, start, end))


def produce_stalls(acked: Sequence[float], failed: Sequence[float], since: float, start: float,
                   end: float) -> list[Stall]:
    """The producer's stalls on one partition overlapping the window ``[start, end]`` (epoch s),
    from its delivery reports: ``acked`` and ``failed`` are when they arrived, ``since`` when
    the recorded stretch began (no acknowledgement between it and the first in ``acked``)."""
    before = [t for t in acked if t <= start]
    ends = [max(before, default=min(since, start)), *sorted(t for t in acked if start < t <= end)]
    closed = [True] * (len(ends) - 1)
    if ends[-1] < end:  # nothing acknowledged since the last ack: open until the window's end
        ends.append(end)
        closed.append(False)
    reported = sorted(t for t in failed if start < t <= end)
    stalls = []
    for (a, b), was_closed in zip(zip(ends, ends[1:]), closed):
        failures = sum(1 for t in reported if a < t <= b)
        if b > start and (b - a >= STALL_S or failures):
            stalls.append(Stall(a, b, was_closed, failures))
    return stalls


def outage_ms(stalls: Sequence[Stall], start: float, end: float) -> float:
    """The stalls' total within ``[start, end]``, in ms."""
    return sum(max(0.0, min(s.end, end) - max(s.start, start)) for s in stalls) * 1000

"""Leader-switch latency: pure arithmetic over recorded timestamps.

Phases, each in milliseconds from the moment the fault was injected
(``results.schema.LATENCY_PHASES``):

* ``detection`` — the controller can notice: the target's ``/brokers/ids/N`` znode is gone
  (session expiry after SIGKILL/SIGSTOP, session close after SIGTERM);
* ``election`` — the new leader is written in the partition's state znode;
* ``propagation`` — every live broker's metadata shows the new leader;
* ``first_produce`` — first acknowledged produce to the partition after the new leader was
  written (or after the fault when nothing was elected);
* ``client_gap`` — the longest silence between acknowledged produces around the fault.

Raw epoch-second timestamps are kept next to the milliseconds so the breakdown can be
recomputed (the record's ``timestamps`` field). Event extraction reads the observer's
``ObservedEvent`` list duck-typed (``at``, ``kind``, ``broker_id``, ``topic``, ``partition``,
``data``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scenarios.delivery import Ack, first_ack_after, largest_gap


@dataclass(frozen=True)
class LatencyBreakdown:
    """Raw timestamps (epoch seconds) of one fault's effect on one partition."""

    fault_at: float
    detection_at: float | None = None
    election_at: float | None = None
    propagation_at: float | None = None
    first_produce_at: float | None = None
    client_gap_s: float | None = None
    gap_start: float | None = None
    gap_end: float | None = None

    def ms(self) -> dict[str, float | None]:
        def since(t: float | None) -> float | None:
            return None if t is None else round((t - self.fault_at) * 1000.0, 1)

        return {
            "detection": since(self.detection_at),
            "election": since(self.election_at),
            "propagation": since(self.propagation_at),
            "first_produce": since(self.first_produce_at),
            "client_gap": None if self.client_gap_s is None else round(self.client_gap_s * 1000.0, 1),
        }

    def timestamps(self) -> dict[str, float]:
        raw = {
            "fault": self.fault_at, "detection": self.detection_at, "election": self.election_at,
            "propagation": self.propagation_at, "first_produce": self.first_produce_at,
            "gap_start": self.gap_start, "gap_end": self.gap_end,
        }
        return {k: v for k, v in raw.items() if v is not None}


def detection_at(events: Iterable[Any], brokers: Sequence[int], after: float) -> float | None:
    """When the last of ``brokers``' registrations vanished after ``after`` (the controller
    acts on each as it goes; for one broker this is simply its znode's disappearance)."""
    if not brokers:
        return None
    gone: dict[int, float] = {}
    for e in sorted(events, key=lambda e: e.at):
        if e.kind == "broker_gone" and e.broker_id in brokers and e.at >= after:
            gone.setdefault(e.broker_id, e.at)
    if len(gone) < len(set(brokers)):
        return None
    return max(gone.values())


def election_at(events: Iterable[Any], topic: str, partition: int, leader: int, after: float) -> float | None:
    """First write of the partition's state znode naming ``leader`` after ``after``."""
    for e in sorted(events, key=lambda e: e.at):
        if (e.kind == "partition_state" and e.topic == topic and e.partition == partition
                and e.at >= after and e.data is not None and e.data.get("leader") == leader):
            return e.at
    return None


def propagation_at(sightings: Iterable[tuple[float, int, int]], brokers: Iterable[int], leader: int,
                   after: float) -> float | None:
    """When every broker of ``brokers`` had reported ``leader`` in its metadata.

    ``sightings`` are ``(at, broker, leader_seen)`` polls of one partition; a broker counts from
    its first poll showing ``leader`` after ``after``.
    """
    wanted = set(brokers)
    first_seen: dict[int, float] = {}
    for at, broker, seen in sorted(sightings):
        if at >= after and broker in wanted and seen == leader:
            first_seen.setdefault(broker, at)
    if not wanted or set(first_seen) != wanted:
        return None
    return max(first_seen.values())


def breakdown(fault_at: float, *, detection: float | None, election: float | None,
              propagation: float | None, acks: Sequence[Ack], partition: int,
              window_end: float | None = None) -> LatencyBreakdown:
    """Combine phase timestamps with the partition's delivery reports.

    ``first_produce`` is the first ack after the election (after the fault when nothing was
    elected); ``client_gap`` the longest silence between acks overlapping
    [fault, first_produce] (or [fault, window_end] when produce never resumed).
    """
    since = election if election is not None else fault_at
    first = first_ack_after(acks, partition, since)
    first_at = first.acked_at if first is not None else None
    end = first_at if first_at is not None else (window_end if window_end is not None else fault_at)
    gap = largest_gap([a.acked_at for a in acks if a.partition == partition], (fault_at, max(fault_at, end)))
    return LatencyBreakdown(
        fault_at=fault_at, detection_at=detection, election_at=election, propagation_at=propagation,
        first_produce_at=first_at,
        client_gap_s=gap[0] if gap else None, gap_start=gap[1] if gap else None, gap_end=gap[2] if gap else None,
    )


def median(values: Iterable[float | None]) -> float | None:
    present = sorted(v for v in values if v is not None)
    if not present:
        return None
    mid = len(present) // 2
    return present[mid] if len(present) % 2 else (present[mid - 1] + present[mid]) / 2

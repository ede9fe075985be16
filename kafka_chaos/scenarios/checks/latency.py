"""Leader-switch latency: pure arithmetic over recorded timestamps.

Phases, each in milliseconds from the moment the fault was injected
(``records.schema.LATENCY_PHASES``):

* ``detection`` — the controller can notice: the target's ``/brokers/ids/N`` znode is gone
  (session expiry after SIGKILL/SIGSTOP, session close after SIGTERM);
* ``election`` — the new leader is written in the partition's state znode;
* ``propagation`` — every live broker's metadata shows the new leader;
* ``first_produce`` — first acknowledged produce to the partition after the new leader was
  written (or after the fault when nothing was elected);
* ``client_gap`` — the longest silence between acknowledged produces around the fault.

When the step recorded the controller's own log lines (:mod:`scenarios.history.controller_log`),
``election`` is split further, from the controller's timestamps:

* ``controller_queue`` — from ZooKeeper expiring the vanished broker's session (its own log,
  when exactly one session expired before the trigger; else ``detection``, our watch, which
  may fire after the controller's and so give a small negative wait) to the controller
  starting to process the BrokerChange event (its wait in the event queue, plus ZooKeeper's
  commit of the closeSession and the watch notification: milliseconds), or, when the
  controller itself died, to its successor's election (only for a broker that disappeared: a
  controlled shutdown's request is not observed arriving);
* ``controller_processing`` — from that start to the partition's new leader written in
  ZooKeeper (as the controller logged it);
* ``leader_and_isr`` / ``update_metadata`` — ms from the fault until the controller sent the
  new leader its LeaderAndIsr / the brokers their UpdateMetadata;
* ``leader_ready`` — ms from the fault until the new leader logged that it leads.

Raw epoch-second timestamps are kept next to the milliseconds so the breakdown can be
recomputed (the record's ``timestamps`` field). Event extraction reads the observer's
``ObservedEvent`` list duck-typed (``at``, ``kind``, ``broker_id``, ``topic``, ``partition``,
``data``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.records.schema import STALL_S
from kafka_chaos.scenarios.history.controller_log import ControllerPhases
from kafka_chaos.scenarios.clients.delivery import Ack, first_ack_after, largest_gap


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
    controller: ControllerPhases | None = None  # from the controller's logs, when recorded

    def ms(self) -> dict[str, float | None]:
        def since(t: float | None) -> float | None:
            return None if t is None else round((t - self.fault_at) * 1000.0, 1)

        phases = {
            "detection": since(self.detection_at),
            "election": since(self.election_at),
            "propagation": since(self.propagation_at),
            "first_produce": since(self.first_produce_at),
            "client_gap": None if self.client_gap_s is None else round(self.client_gap_s * 1000.0, 1),
        }
        if self.controller is not None:
            phases.update(controller_ms(self.controller, self.fault_at, self.detection_at))
        return phases

    def timestamps(self) -> dict[str, float]:
        raw = {
            "fault": self.fault_at, "detection": self.detection_at, "election": self.election_at,
            "propagation": self.propagation_at, "first_produce": self.first_produce_at,
            "gap_start": self.gap_start, "gap_end": self.gap_end,
        }
        if self.controller is not None:
            c = self.controller
            raw.update({"controller_trigger": c.trigger_at, "controller_written": c.written_at,
                        "controller_sent": c.sent_at, "controller_metadata": c.metadata_at,
                        "leader_ready": c.leader_at, "session_expired": c.expired_at})
        return {k: v for k, v in raw.items() if v is not None}


# The phases the controller's logs add (see the module doc), in order.
CONTROLLER_PHASES = ("controller_queue", "controller_processing", "leader_and_isr", "update_metadata", "leader_ready")


def controller_ms(c: ControllerPhases, fault_at: float, detection_at: float | None) -> dict[str, float | None]:
    """The controller phases in ms: the queue wait only where a vanished broker's znode
    enqueued the event the controller then processed (``broker_change``, or a successor's
    ``elected`` after the controller's own znodes vanished), from ZooKeeper's session expiry
    when its log says it, else from our ``detection``."""
    def ms(end: float | None, start: float | None) -> float | None:
        return None if end is None or start is None else round((end - start) * 1000.0, 1)

    vanished = c.expired_at if c.expired_at is not None else detection_at
    queued = vanished if c.trigger in ("broker_change", "elected") else None
    return {"controller_queue": ms(c.trigger_at, queued), "controller_processing": ms(c.written_at, c.trigger_at),
            "leader_and_isr": ms(c.sent_at, fault_at), "update_metadata": ms(c.metadata_at, fault_at),
            "leader_ready": ms(c.leader_at, fault_at)}


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
                and e.at >= after and e.leader == leader):
            return float(e.at)
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
              window_end: float | None = None, controller: ControllerPhases | None = None) -> LatencyBreakdown:
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
        controller=controller,
    )


def isr_written_at(events: Iterable[Any], topic: str, partition: int, isr: Iterable[int],
                   after: float) -> float | None:
    """First write of the partition's state znode with ``isr`` (as a set) after ``after``: when
    the cluster acted on a partition whose leader stays (a leader-side ISR shrink or expansion,
    the controller removing a dead follower)."""
    wanted = set(isr)
    for e in sorted(events, key=lambda e: e.at):
        if (e.kind == "partition_state" and e.topic == topic and e.partition == partition
                and e.at >= after and set(e.isr) == wanted):
            return float(e.at)
    return None


# A trailing silence shorter than this is the workload's own pace, not a stall.
STALL_MIN_S = STALL_S


@dataclass(frozen=True)
class ClientWindow:
    """What the clients of one partition saw around a fault that keeps its leader (raw epoch
    seconds): a network partition can stall a partition without moving anything in ZooKeeper
    (a leader cut off from its followers cannot commit ``acks=all``), or until the leader
    shrinks the ISR.

    ``fault_at``: this step's fault (a heal's window starts earlier, at the cut);
    ``isr_change_at``: the cluster acted (new ISR written), if it did; ``first_ack_at``: the
    first acknowledged produce after that (after ``fault_at`` when it did not);
    ``gap_*``: the longest silence between acknowledgements overlapping [start, end];
    ``silent_since``: the last ack, when the partition is still silent at the window's end for
    longer than any finite gap (a stall that has not ended)."""

    start: float
    end: float
    fault_at: float
    isr_change_at: float | None = None
    first_ack_at: float | None = None
    gap_s: float | None = None
    gap_start: float | None = None
    gap_end: float | None = None
    silent_since: float | None = None

    def ms(self) -> dict[str, float | None]:
        """``first_produce`` and ``client_gap`` as in :class:`LatencyBreakdown` (ms from the
        fault / the gap's length); no election phase — the leader did not move."""
        return {
            "first_produce": None if self.first_ack_at is None else round((self.first_ack_at - self.fault_at) * 1000.0, 1),
            "client_gap": None if self.gap_s is None else round(self.gap_s * 1000.0, 1),
        }

    def timestamps(self) -> dict[str, float]:
        raw = {"fault": self.fault_at, "window_start": self.start, "window_end": self.end,
               "isr_change": self.isr_change_at,
               "first_produce": self.first_ack_at, "gap_start": self.gap_start, "gap_end": self.gap_end,
               "silent_since": self.silent_since}
        return {k: v for k, v in raw.items() if v is not None}


def client_window(start: float, end: float, acks: Sequence[Ack], partition: int, *,
                  fault_at: float | None = None, isr_change_at: float | None = None) -> ClientWindow:
    """The client's view of ``partition`` over [start, end] (see :class:`ClientWindow`);
    ``fault_at`` defaults to ``start``."""
    fault = start if fault_at is None else fault_at
    times = [a.acked_at for a in acks if a.partition == partition]
    first = first_ack_after(acks, partition, isr_change_at if isr_change_at is not None else fault)
    gap = largest_gap(times, (start, max(start, end)))
    # Still silent at the end, for longer than any finite gap: a stall that has not ended.
    last = max((t for t in times if t <= end), default=None)
    silent = last if last is not None and end - last > max(gap[0] if gap else 0.0, STALL_MIN_S) else None
    return ClientWindow(start=start, end=end, fault_at=fault, isr_change_at=isr_change_at,
                        first_ack_at=first.acked_at if first is not None else None,
                        gap_s=gap[0] if gap else None, gap_start=gap[1] if gap else None,
                        gap_end=gap[2] if gap else None, silent_since=silent)


def median(values: Iterable[float | None]) -> float | None:
    present = sorted(v for v in values if v is not None)
    if not present:
        return None
    mid = len(present) // 2
    return present[mid] if len(present) % 2 else (present[mid - 1] + present[mid]) / 2

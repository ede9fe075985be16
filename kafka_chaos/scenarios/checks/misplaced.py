"""Why an acknowledged message was read back at another offset than its delivery report named:
the evidence a stored history holds, and who is to blame — ``kafka``, ``client`` or ``harness``.

Pure functions of recorded data.  With an idempotent ``acks=all`` producer the offset in a
delivery report is the offset of the message in the log, so a "misplaced" message means one of:

- the log changed at an offset after a reader saw it there (``kafka``: the broker rewrote an
  acknowledged position — truncation without an unclean election);
- the log is the same for every reader throughout, and the report named an offset that holds
  another message (``client``: the producer reported a wrong offset, e.g. for a batch it re-sent
  after a leader change — librdkafka's idempotent producer has an open report of this kind,
  confluentinc/librdkafka#4953);
- the message was read in another partition than it was acknowledged in, or the readers'
  records do not allow a judgement (``harness``: our matching or our recording is at fault).

The evidence carries every read of the message and of the acknowledged offset, every other
acknowledgement of that offset, the producer's failed sends around it, and the partition's
leader epochs around the acknowledgement (written to ZooKeeper by the controller), so a failure
can be classified from the record alone, without a re-run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.scenarios.clients.ops import ClientOps
from kafka_chaos.scenarios.clients.delivery import Ack

KAFKA = "kafka"
CLIENT = "client"
HARNESS = "harness"

EPOCH_WINDOW_S = 10.0  # leader changes this close to the acknowledgement are listed
FAILED_WINDOW_S = 10.0  # failed sends this close to it too (a re-sent batch's neighbours)


@dataclass(frozen=True)
class Read:
    """One consumer's record: ``key`` at ``offset`` of the partition, received at ``at``."""

    consumer: str
    offset: int
    key: str
    at: float

    def to_list(self) -> list[Any]:
        return [self.consumer, self.offset, self.key, round(self.at, 3)]


@dataclass(frozen=True)
class LeaderChange:
    """The partition's leader and leader epoch as the controller wrote them at ``at``."""

    at: float
    leader: int
    leader_epoch: int

    def to_list(self) -> list[Any]:
        return [round(self.at, 3), self.leader, self.leader_epoch]


@dataclass(frozen=True)
class MisplacedEvidence:
    key: str
    partition: str  # "topic-p", as the history names it
    acked_offset: int | None  # None: acknowledged without an offset (scenarios.clients.delivery.Ack)
    acked_at: float
    reads_of_key: tuple[Read, ...]  # every read of this key, in this partition
    reads_at_acked_offset: tuple[Read, ...]  # every read of the acknowledged offset
    other_acks_at_offset: tuple[str, ...]  # other keys acknowledged at the same offset
    failed_sends_near: tuple[tuple[str, str, float], ...]  # (key, error, at) within the window
    leader_epochs_near: tuple[LeaderChange, ...]
    classification: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "partition": self.partition, "acked_offset": self.acked_offset,
                "acked_at": round(self.acked_at, 3),
                "read_at": [r.to_list() for r in self.reads_of_key],
                "acked_offset_holds": [r.to_list() for r in self.reads_at_acked_offset],
                "other_acks_at_offset": list(self.other_acks_at_offset),
                "failed_sends_near": [[k, e, round(t, 3)] for k, e, t in self.failed_sends_near],
                "leader_epochs_near": [c.to_list() for c in self.leader_epochs_near],
                "classification": self.classification, "why": self.why}


def _reads(stretches: Sequence[ClientOps]) -> list[Read]:
    return [Read(p.consumer, p.offset, p.key, p.polled_at) for ops in stretches for p in ops.polls]


def classify(key: str, acked_offset: int | None, reads_of_key: Sequence[Read], reads_at_offset: Sequence[Read],
             other_acks_at_offset: Sequence[str], read_elsewhere: bool) -> tuple[str, str]:
    """Who moved the message, from what the readers saw (see the module's docstring)."""
    if read_elsewhere and not reads_of_key:
        return HARNESS, "read only in another partition than the one it was acknowledged in"
    if acked_offset is None:  # no offset to have moved from: only the partition could differ
        return HARNESS, "acknowledged without an offset and read in its own partition: not misplaced"
    if any(r.offset == acked_offset for r in reads_of_key):
        moved_to = sorted({r.offset for r in reads_of_key if r.offset != acked_offset})
        return KAFKA, (f"read at its acknowledged offset {acked_offset} and later at {moved_to}: the log "
                       f"was rewritten at an acknowledged position")
    contents = {r.key for r in reads_at_offset}
    if len(contents) > 1:
        return KAFKA, f"offset {acked_offset} held different messages over time {sorted(contents)}: the log changed"
    positions = {r.offset for r in reads_of_key}
    if len(positions) > 1:
        return KAFKA, f"the message was read at several offsets {sorted(positions)}: the log changed"
    if not reads_at_offset:
        return HARNESS, (f"no consumer read offset {acked_offset}, so the log there is unknown: the "
                         f"readers' records are incomplete")
    holder = next(iter(contents))
    also = f"; {holder} was acknowledged at that offset too" if holder in other_acks_at_offset else ""
    return CLIENT, (f"every reader saw {holder} at offset {acked_offset} and this message only at "
                    f"{sorted(positions)}, throughout: the log never changed, the delivery report "
                    f"named the wrong offset{also}")


def explain(ack: Ack, name: str, partitions: Mapping[str, Sequence[ClientOps]],
            leader_changes: Iterable[LeaderChange]) -> MisplacedEvidence:
    """The evidence for one misplaced acknowledgement ``ack`` of partition ``name`` ("topic-p"):
    ``partitions`` holds every recorded stretch of every partition of the topic."""
    reads = _reads(partitions.get(name, ()))
    reads_of_key = tuple(r for r in reads if r.key == ack.key)
    reads_at_offset = tuple(r for r in reads if ack.offset is not None and r.offset == ack.offset)
    read_elsewhere = any(p.key == ack.key for other, ops in partitions.items() if other != name
                         for o in ops for p in o.polls)
    acks = [a for ops in partitions.get(name, ()) for a in ops.acks]
    others = tuple(sorted({a.key for a in acks
                           if ack.offset is not None and a.offset == ack.offset and a.key != ack.key}))
    failed = tuple(sorted(((f.key, f.error, f.at) for ops in partitions.get(name, ()) for f in ops.failed
                           if abs(f.at - ack.acked_at) <= FAILED_WINDOW_S), key=lambda f: f[2]))
    near = tuple(sorted((c for c in leader_changes if abs(c.at - ack.acked_at) <= EPOCH_WINDOW_S),
                        key=lambda c: c.at))
    classification, why = classify(ack.key, ack.offset, reads_of_key, reads_at_offset, others, read_elsewhere)
    return MisplacedEvidence(ack.key, name, ack.offset, ack.acked_at, reads_of_key, reads_at_offset, others,
                             failed, near, classification, why)

"""Delivery accounting: what the producer was told versus what a consumer reads back.

Pure functions of recorded data (no I/O, no clocks), in the spirit of kafkatest's
``utils/util.py`` ``validate_delivery``: the checker only reports, the caller decides whether a
loss is a failure (it is not after an unclean election the oracle predicted — there the loss is
the measurement).

Messages are identified by their key, which the workload makes unique per run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Ack:
    """One successful delivery report (``acks=all``): the broker wrote ``key`` at ``offset``.

    ``offset`` is None when the report named none: an idempotent producer acknowledges a
    message *implicitly* when a later batch of its own succeeds after the message's own batch
    failed (librdkafka's "implicitly acked by subsequent batch success"), and never learns its
    offset. Such a message must still be read, once, in its partition; no rule that compares
    offsets may use it."""

    partition: int
    offset: int | None
    key: str
    acked_at: float  # time.time() when the delivery callback ran

    def log_order(self) -> tuple[int, bool, int]:
        """Sort key: by partition, then offset; acknowledgements without one last."""
        return (self.partition, self.offset is None, -1 if self.offset is None else self.offset)


def _frozen(counts: Mapping[int, int]) -> Mapping[int, int]:
    return MappingProxyType(dict(sorted(counts.items())))


@dataclass(frozen=True)
class DeliveryReport:
    """Outcome of comparing acknowledged messages with the consumed log.

    ``lost``: acknowledged keys that no consumer read (data loss: unclean election, truncation).
    ``duplicated``: acknowledged keys read more than once (each key listed once; the idempotent
    producer must make this empty). ``duplicated_unacked``: keys the producer was told had
    failed, read more than once — outside the producer's promise: librdkafka may write a
    message that timed out in flight and then re-send its batch-mates under a bumped epoch the
    broker cannot deduplicate (librdkafka INTRODUCTION.md "Idempotent Producer", issue #4953).
    ``misplaced``: acknowledged keys read back at another
    partition/offset than the delivery report named — with an idempotent producer the offset in
    the report is the offset in the log, so anything else means the log was rewritten (an
    acknowledgement without an offset is misplaced only when read in another partition).
    ``unacked_consumed``: keys in the log the producer never saw acknowledged (failed or still
    in flight when the workload stopped); normal, and never counted as a problem.
    """

    acked: int
    consumed: int
    lost: tuple[str, ...]
    duplicated: tuple[str, ...]
    lost_by_partition: Mapping[int, int]
    duplicated_by_partition: Mapping[int, int]
    misplaced: tuple[str, ...] = ()
    unacked_consumed: int = 0
    duplicate_copies: int = 0  # consumed records beyond the first copy of each key (any key)
    duplicated_unacked: tuple[str, ...] = ()
    acked_by_partition: Mapping[int, int] = field(default_factory=lambda: _frozen({}))
    # Acknowledged keys not read back that lie below their partition's recorded low watermark:
    # removed by delete_records (DeleteRecords), not lost; counted apart.
    deleted: tuple[str, ...] = ()
    deleted_by_partition: Mapping[int, int] = field(default_factory=lambda: _frozen({}))

    @property
    def ok(self) -> bool:
        """Nothing acknowledged was lost, duplicated or moved."""
        return not (self.lost or self.duplicated or self.misplaced)

    def describe(self, limit: int = 5) -> str:
        """One readable line for a check's ``detail``."""
        parts = [f"{self.acked} acked, {self.consumed} consumed"]
        for name, keys, by_partition in (
            ("lost", self.lost, self.lost_by_partition),
            ("duplicated", self.duplicated, self.duplicated_by_partition),
        ):
            if keys:
                parts.append(f"{len(keys)} {name} {dict(by_partition)} e.g. {list(keys[:limit])}")
        if self.misplaced:
            parts.append(f"{len(self.misplaced)} misplaced e.g. {list(self.misplaced[:limit])}")
        if self.unacked_consumed:
            parts.append(f"{self.unacked_consumed} consumed but never acked")
        if self.duplicated_unacked:
            parts.append(f"{len(self.duplicated_unacked)} of them duplicated")
        if self.deleted:
            parts.append(f"{len(self.deleted)} acked below a recorded low watermark, deleted "
                         f"{dict(self.deleted_by_partition)}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for a record's ``observed`` field (partition keys become strings)."""
        return {
            "acked": self.acked,
            "consumed": self.consumed,
            "lost": len(self.lost),
            "duplicated": len(self.duplicated),
            "misplaced": len(self.misplaced),
            "unacked_consumed": self.unacked_consumed,
            "duplicate_copies": self.duplicate_copies,
            "duplicated_unacked": len(self.duplicated_unacked),
            "lost_by_partition": {str(p): n for p, n in self.lost_by_partition.items()},
            "duplicated_by_partition": {str(p): n for p, n in self.duplicated_by_partition.items()},
            "acked_by_partition": {str(p): n for p, n in self.acked_by_partition.items()},
            "lost_sample": list(self.lost[:20]),
            "duplicated_sample": list(self.duplicated[:20]),
            # only where delete_records deleted any: other records stay as they were
            **({"deleted": len(self.deleted),
                "deleted_by_partition": {str(p): n for p, n in self.deleted_by_partition.items()}}
               if self.deleted else {}),
        }


def validate_delivery(
    acked: Iterable[Ack], consumed: Iterable[tuple[int, int, str]], *,
    deleted_below: Mapping[int, int] | None = None, placed: Mapping[str, int] | None = None,
) -> DeliveryReport:
    """Compare acknowledged messages with consumed ``(partition, offset, key)`` triples.

    Order does not matter on either side. Keys are reported in log order (partition, offset)
    so the first lost key is the first hole. ``deleted_below``: partition -> a low watermark
    ``delete_records`` recorded; an acknowledged message not consumed whose offset (its
    acknowledgement's, else ``placed[key]``: where a consumer read it) lies below it is
    ``deleted``, not ``lost``; one without any known offset stays lost.
    """
    acks_by_key: dict[str, Ack] = {}
    for ack in acked:
        acks_by_key.setdefault(ack.key, ack)
    consumed_list = list(consumed)

    first_position: dict[str, tuple[int, int]] = {}
    positions: dict[str, list[tuple[int, int]]] = {}
    copies: Counter[str] = Counter()
    for partition, offset, key in sorted(consumed_list):
        copies[key] += 1
        first_position.setdefault(key, (partition, offset))
        positions.setdefault(key, []).append((partition, offset))

    missing = sorted((ack for key, ack in acks_by_key.items() if key not in copies), key=Ack.log_order)
    below, where = deleted_below or {}, placed or {}

    def _deleted(ack: Ack) -> bool:
        offset = ack.offset if ack.offset is not None else where.get(ack.key)
        return offset is not None and ack.partition in below and offset < below[ack.partition]

    lost = [a for a in missing if not _deleted(a)]
    deleted = [a for a in missing if _deleted(a)]
    deleted_by_partition: defaultdict[int, int] = defaultdict(int)
    for ack in deleted:
        deleted_by_partition[ack.partition] += 1
    copied = [key for key, n in copies.items() if n > 1]  # already in log order
    duplicated = [key for key in copied if key in acks_by_key]
    # A duplicate whose acknowledgement names one of its copies is a duplicate, not misplaced (an
    # idempotent producer's re-send under a bumped epoch is acknowledged at its second copy).
    misplaced = sorted((ack for key, ack in acks_by_key.items()
                        if key in positions and not any(_read_where_acknowledged(ack, p) for p in positions[key])),
                       key=Ack.log_order)

    lost_by_partition: defaultdict[int, int] = defaultdict(int)
    for ack in lost:
        lost_by_partition[ack.partition] += 1
    duplicated_by_partition: defaultdict[int, int] = defaultdict(int)
    for key in duplicated:
        duplicated_by_partition[first_position[key][0]] += 1
    acked_by_partition: defaultdict[int, int] = defaultdict(int)
    for ack in acks_by_key.values():
        acked_by_partition[ack.partition] += 1

    return DeliveryReport(
        acked=len(acks_by_key),
        consumed=len(consumed_list),
        lost=tuple(a.key for a in lost),
        duplicated=tuple(duplicated),
        lost_by_partition=_frozen(lost_by_partition),
        duplicated_by_partition=_frozen(duplicated_by_partition),
        misplaced=tuple(a.key for a in misplaced),
        unacked_consumed=sum(1 for key in copies if key not in acks_by_key),
        duplicate_copies=sum(n - 1 for n in copies.values()),
        duplicated_unacked=tuple(key for key in copied if key not in acks_by_key),
        acked_by_partition=_frozen(acked_by_partition),
        deleted=tuple(a.key for a in deleted),
        deleted_by_partition=_frozen(deleted_by_partition),
    )


def _read_where_acknowledged(ack: Ack, position: tuple[int, int]) -> bool:
    partition, offset = position
    return partition == ack.partition and (ack.offset is None or offset == ack.offset)


def largest_gap(
    ack_times: Sequence[float], window: tuple[float, float] | None = None
) -> tuple[float, float, float] | None:
    """The longest silence between consecutive acknowledgements: ``(gap_s, start, end)``.

    With ``window=(lo, hi)`` (e.g. fault injected .. fault healed; ``lo == hi`` for an instant)
    only gaps overlapping the window count, and the acks bracketing the window are the gap's
    ends. ``None`` when no gap overlaps the window (fewer than two acks, or all of them on one
    side): a partition that stopped acknowledging at the fault and never recovered has no
    finite gap, and the caller must say so. Ties go to the earliest gap.
    """
    if window is not None and window[0] > window[1]:
        raise ValueError(f"window start {window[0]} is after its end {window[1]}")
    times = sorted(ack_times)
    best: tuple[float, float, float] | None = None
    for start, end in zip(times, times[1:]):
        if window is not None and (end < window[0] or start > window[1]):
            continue
        if best is None or end - start > best[0]:
            best = (end - start, start, end)
    return best


def first_ack_after(acks: Iterable[Ack], partition: int, t: float) -> Ack | None:
    """The earliest acknowledgement on ``partition`` strictly after ``t``, if any."""
    later = [a for a in acks if a.partition == partition and a.acked_at > t]
    return min(later, key=lambda a: (a.acked_at, a.log_order()), default=None)

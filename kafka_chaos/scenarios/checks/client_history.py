"""A Jepsen-style checker of what the clients saw: pure functions of the recorded sends and
polls of one partition (:class:`scenarios.clients.ops.ClientOps`, concatenated over a scenario).

The definitions follow Jepsen's Kafka workload (``jepsen/src/jepsen/tests/kafka.clj``), on
one partition (Jepsen's "key") whose messages are unique keys ("values"). The *log* is what
every acknowledgement and every poll says sits at each offset; the *version order* is the
known offsets in increasing order (gaps are not anomalies: Kafka offsets need not be
contiguous, as Jepsen ignores transaction markers).

Anomaly classes (:data:`ANOMALIES`):

``inconsistent_offsets``
    One offset holds two different messages (two acks, two polls, or an ack and a poll
    disagree). Kafka's log is append-only: an offset never changes its message — unless a
    leader without the latest writes was elected uncleanly and the log was truncated and
    rewritten.
``duplicate``
    One message at two offsets (Jepsen's ``duplicate-cases``). The idempotent producer must
    prevent it for acknowledged messages; librdkafka may rewrite a message whose send timed
    out (see :class:`scenarios.clients.delivery.DeliveryReport`), which also counts here.
``lost_write``
    An acknowledged message below the highest offset any consumer read (Jepsen's bound: the
    first offset of the highest read message) that no consumer ever read (Jepsen's
    ``lost-write-cases``): it should have been seen and was not.
``unseen``
    An acknowledged message the final read-back does not hold (Jepsen's ``unseen`` at the end
    of the test, made strict by our final read: after healing, every partition is read from
    its log start to its high watermark, so every acknowledged message must be there) —
    whether or not a consumer saw it earlier: a message read during the faults and gone at
    the end is what a truncated log looks like. Only judged when the final read-back happened.
``nonmonotonic_poll``
    A consumer's next record on the partition is at an offset at or below its previous one
    (Jepsen's ``nonmonotonic-poll``), with no reset (assignment, revocation, loss) in
    between: consumers advance their position by exactly the records they got.
``poll_skip``
    A consumer's next record jumps over an offset some other observation shows holds a
    message (Jepsen's ``poll-skip``), with no reset in between.
``nonmonotonic_send``
    The producer's later message (higher sequence number in its key) was acknowledged at a
    lower offset than an earlier one (Jepsen's ``nonmonotonic-send``): one idempotent
    producer's messages to one partition are appended in order.
``failed_send_read``
    A message whose send *definitely* failed was read (Jepsen's aborted read, ``G1a``).
    Timeouts, purges and most broker errors are indefinite (an earlier attempt may have been
    written) and never count: only :data:`DEFINITE_FAILURES` do.

An acknowledgement without an offset (an idempotent producer's implicit acknowledgement,
:class:`scenarios.clients.delivery.Ack`) says only that the message is in the partition: it takes part
in ``unseen`` and ``duplicate`` (it must be read, and at one offset), never in a rule that
compares offsets (``inconsistent_offsets``, ``lost_write``'s bound, ``nonmonotonic_send``).

An unclean election truncates the log of a partition: it must cause lost writes, unseen
messages, inconsistent offsets, non-monotonic polls (a position beyond the new log end is
reset to the earliest offset) and non-monotonic sends. Those classes
(:data:`TRUNCATION_ANOMALIES`) are *allowed* on a partition where the oracle predicted
``unclean_elected`` — counted apart, never hidden — and fail everywhere else.

A power failure of every in-sync replica may take the partition's unflushed tail (a loss the
durability contract permits: :mod:`oracle.durability`); the log then continues from the surviving
end, and the idempotent producer's state went with the tail (``UnifiedLog.rebuildProducerState``
rebuilds it from the surviving log on restart). A message a consumer read in that
tail, whose producer had no acknowledgement yet, is sent again by the producer's own retry and
appended after the surviving end: one message at two offsets. Such a ``duplicate`` is *allowed* on
a partition where the loss was permitted (``power_losses``: the times of those power failures)
and counted apart, when the history shows exactly that: the final read-back holds the message at
one offset, every observation of it there came after the power failure, and each of its other
offsets lies at or above the partition's end after the loss -- bounded from above by the lowest
offset the final read-back shows rewritten (another message there than an earlier observation
put) or gone (beyond the read-back's last offset). A duplicate whose earlier copy lies below that
bound, or one still twice in the final read-back, fails as everywhere else.

Records deleted on purpose (``delete_records``: DeleteRecords moved the partition's log start;
:mod:`scenarios.faults.records`) are gone by design. Each answer's *low watermark* — the lowest log
start of the leader and every live replica once the deletion was applied
(``Partition.lowWatermarkIfLeader``) — is recorded (:class:`LogStart`), and every offset below it
left every live replica's log (after REQUEST_TIMED_OUT the leader's own log start, recorded beside
it, where higher: the records below it left the leader). So an acknowledged message placed below the highest recorded low
watermark of its partition that the final read-back lacks is *deleted*: its ``unseen`` and
``lost_write`` anomalies are marked so (:attr:`Anomaly.deleted`) and counted apart, never hidden and
never failing — whether or not a consumer read it before the deletion. At or above the low
watermark everything is judged as before. A consumer positioned below the new log start gets
OFFSET_OUT_OF_RANGE and resets to it (``auto.offset.reset``; librdkafka records no reset the
consumer could see): its next record jumps forward over the deleted offsets, which no longer hold
a message, so a jump whose skipped offsets all lie below a low watermark recorded before the poll
is no ``poll_skip`` (and the reset only moves forward: no ``nonmonotonic_poll``).

*Placed* means: at the offset its acknowledgement names, else (an implicit acknowledgement) at the
lowest offset a consumer read it at. An implicit acknowledgement nobody read cannot be placed and
is never called deleted: it stays ``unseen`` when the read-back lacks it. That keeps the allowance
sound — it never explains a message whose offset is unknown — at the price of a possible false
``unseen`` for a message that was both implicitly acknowledged (a batch that failed, then a later
one of the same producer succeeded) and deleted before either consumer read it; the ``assign``
consumer follows the log within a poll, so this needs a deletion in the very second of such a
failure.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.clients.ops import READBACK, ClientOps, ConsumerReset, Poll

LOST_WRITE = "lost_write"
UNSEEN = "unseen"
DUPLICATE = "duplicate"
INCONSISTENT_OFFSETS = "inconsistent_offsets"
NONMONOTONIC_POLL = "nonmonotonic_poll"
POLL_SKIP = "poll_skip"
NONMONOTONIC_SEND = "nonmonotonic_send"
FAILED_SEND_READ = "failed_send_read"

ANOMALIES = (LOST_WRITE, UNSEEN, DUPLICATE, INCONSISTENT_OFFSETS, NONMONOTONIC_POLL, POLL_SKIP,
             NONMONOTONIC_SEND, FAILED_SEND_READ)
TRUNCATION_ANOMALIES = frozenset({LOST_WRITE, UNSEEN, INCONSISTENT_OFFSETS, NONMONOTONIC_POLL, NONMONOTONIC_SEND})

# Delivery errors that mean no attempt of the message can have been appended: the broker
# refuses the message itself (every attempt alike), or the client never had the topic. Nothing
# else is definite: librdkafka re-queues a batch after a retriable error, so a message it later
# purges from its queue (_PURGE_QUEUE, seen on a real cluster after an unclean election
# replaced the producer) or fails with NOT_ENOUGH_REPLICAS may have been written by an earlier
# attempt ("possibly persisted", a status confluent-kafka does not expose).
DEFINITE_FAILURES = frozenset({
    "MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "INVALID_RECORD", "CORRUPT_MESSAGE", "RECORD_LIST_TOO_LARGE",
    "TOPIC_AUTHORIZATION_FAILED", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_OR_PART",
    "INVALID_REQUIRED_ACKS",
})


@dataclass(frozen=True)
class Anomaly:
    kind: str
    partition: str  # "t-p"
    detail: str
    allowed: bool = False  # an unclean election the oracle predicted, or a permitted power-failure loss, explains it
    deleted: bool = False  # below a recorded low watermark: delete_records removed it


@dataclass(frozen=True)
class LogStart:
    """A low watermark a ``delete_records`` step's leader answered for the partition, and when the
    request was sent (``StepObserved.fault_at``): every offset below it was deleted by then."""

    at: float
    low_watermark: int


def recorded_log_starts(outcome: Mapping[str, Any] | None, at: float) -> dict[str, LogStart]:
    """``"t-p"`` -> its recorded low watermark, from a ``delete_records`` step's outcome
    (``FaultTraits.outcome``: ``{"partitions": {"t-p": {"low_watermark": ..., "log_start": ...}}}``;
    ``log_start``, the leader's own, recorded only after REQUEST_TIMED_OUT, counts where it is
    higher); partitions whose leader answered neither are left out."""
    found: dict[str, LogStart] = {}
    for name, answer in ((outcome or {}).get("partitions") or {}).items():
        if not isinstance(answer, Mapping):
            continue
        known = [v for v in (answer.get("low_watermark"), answer.get("log_start"))
                 if isinstance(v, int) and not isinstance(v, bool)]
        if known and max(known) > 0:
            found[str(name)] = LogStart(at, max(known))
    return found


@dataclass(frozen=True)
class PartitionSummary:
    """Counts of one partition's history (for the check's ``observed``)."""

    acks: int
    failed: int
    polls: int
    consumers: tuple[str, ...]
    deleted: int = 0  # acknowledged messages below a recorded low watermark, not read back


def _sequence(key: str) -> int | None:
    """The producer's sequence number in a workload key ``<run>-<partition>-<seq>``."""
    tail = key.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _where(offset: int | None) -> str:
    return "without an offset" if offset is None else f"at offset {offset}"


def check_partition(name: str, ops: Iterable[ClientOps], *, truncation_allowed: bool = False,
                    final_read: bool = True, log_starts: Sequence[LogStart] = (),
                    power_losses: Sequence[float] = ()) -> tuple[list[Anomaly], PartitionSummary]:
    """Every anomaly of one partition's history, in :data:`ANOMALIES` order, and its counts.
    ``ops`` in time order (the stretches of a run); ``final_read``: whether the last poll is
    the read-back up to the high watermarks (else ``unseen`` is not judged); ``log_starts``: the
    low watermarks ``delete_records`` steps recorded for it; ``power_losses``: when power
    failures whose loss of its tail was permitted struck (both: see the module)."""
    stretches = list(ops)
    acks = [a for o in stretches for a in o.acks]
    failed = [f for o in stretches for f in o.failed]
    polls = [p for o in stretches for p in o.polls]
    resets = [r for o in stretches for r in o.resets]

    at_offset: dict[int, set[str]] = {}
    offsets_of: dict[str, set[int]] = {}
    positioned = [(a.offset, a.key) for a in acks if a.offset is not None]
    for offset, key in positioned + [(p.offset, p.key) for p in polls]:
        at_offset.setdefault(offset, set()).add(key)
        offsets_of.setdefault(key, set()).add(offset)
    polled = {p.key for p in polls}
    read_at_end = {p.key for p in polls if p.consumer == READBACK}
    known = sorted(at_offset)

    found: list[tuple[str, str]] = []
    for offset in known:
        if len(at_offset[offset]) > 1:
            found.append((INCONSISTENT_OFFSETS, f"offset {offset} holds {sorted(at_offset[offset])}"))
    lost_again: set[tuple[str, str]] = set()  # duplicates a permitted power-failure loss explains
    end_bound = _end_after_loss_bound(acks, polls) if power_losses and final_read else None
    for key, where in offsets_of.items():
        if len(where) > 1:
            detail = f"{key} at offsets {sorted(where)}"
            why = _written_again_after_loss(key, where, acks, polls, end_bound, power_losses)
            if why is not None:
                detail += f" ({why})"
                lost_again.add((DUPLICATE, detail))
            found.append((DUPLICATE, detail))

    # Jepsen's bound: the highest of the first offsets of every message read.
    bound = max((min(offsets_of[k]) for k in polled), default=-1)
    acked_keys: dict[str, int | None] = {}
    for a in acks:
        if acked_keys.get(a.key) is None:  # the first acknowledgement that names an offset
            acked_keys[a.key] = a.offset
    deleted_below = max((s.low_watermark for s in log_starts), default=0)
    deleted: set[str] = set()  # keys placed below it that the read-back lacks
    explained: set[tuple[str, str]] = set()  # their anomalies
    for key, acked_at in acked_keys.items():
        placed = acked_at if acked_at is not None else min(offsets_of.get(key, ()), default=None)
        gone = placed is not None and placed < deleted_below and key not in read_at_end
        why = f" (deleted: below the low watermark {deleted_below})" if gone else ""
        mine: list[tuple[str, str]] = []
        if acked_at is not None and key not in polled and max(offsets_of[key]) <= bound:
            mine.append((LOST_WRITE, f"{key} acked at offset {acked_at}, below offset {bound} read, never read{why}"))
        if final_read and key not in read_at_end:
            mine.append((UNSEEN, f"{key} acked {_where(acked_at)}, not in the final read-back"
                                 + (" (read earlier)" if key in polled else "") + why))
        found += mine
        if gone:
            deleted.add(key)
            explained.update(mine)

    found += _poll_anomalies(polls, resets, known, log_starts)

    by_sequence = sorted((s, a.offset, a.key) for a in acks
                         if a.offset is not None and (s := _sequence(a.key)) is not None)
    for (_, o1, k1), (_, o2, k2) in zip(by_sequence, by_sequence[1:]):
        if o2 <= o1 and k1 != k2:
            found.append((NONMONOTONIC_SEND, f"{k2} acked at offset {o2}, after {k1} at offset {o1}"))

    for f in failed:
        if f.error in DEFINITE_FAILURES and f.key in polled:
            found.append((FAILED_SEND_READ, f"{f.key} failed with {f.error} yet was read"))

    order = {kind: i for i, kind in enumerate(ANOMALIES)}
    anomalies = [Anomaly(kind, name, detail,
                         (truncation_allowed and kind in TRUNCATION_ANOMALIES) or (kind, detail) in lost_again,
                         (kind, detail) in explained)
                 for kind, detail in sorted(found, key=lambda f: order[f[0]])]
    consumers = tuple(sorted({p.consumer for p in polls}))
    return anomalies, PartitionSummary(len(acks), len(failed), len(polls), consumers, len(deleted))


def _end_after_loss_bound(acks: Sequence[Ack], polls: Sequence[Poll]) -> int | None:
    """An upper bound on the partition's log end right after a loss of its tail: the lowest
    offset at which an acknowledgement or a consumer put a message the final read-back does not
    hold there -- another message is there (rewritten) or the read-back ends below it (gone);
    below the end a log never changes. None when the history shows no such offset."""
    read_back: dict[int, set[str]] = {}
    for p in polls:
        if p.consumer == READBACK:
            read_back.setdefault(p.offset, set()).add(p.key)
    last = max(read_back, default=-1)
    seen = [(a.offset, a.key) for a in acks if a.offset is not None]
    seen += [(p.offset, p.key) for p in polls if p.consumer != READBACK]
    removed = [offset for offset, key in seen
               if offset > last or (offset in read_back and key not in read_back[offset])]
    return min(removed, default=None)


def _written_again_after_loss(key: str, where: set[int], acks: Sequence[Ack], polls: Sequence[Poll],
                              end_bound: int | None, power_losses: Sequence[float]) -> str | None:
    """Why ``key``'s copies at ``where`` are one message lost with a permitted tail and appended
    again (see the module), or None when the history does not show exactly that."""
    if end_bound is None:
        return None
    kept = {p.offset for p in polls if p.consumer == READBACK and p.key == key}
    if len(kept) != 1:
        return None
    (again,) = kept
    removed = sorted(where - kept)
    if any(offset < end_bound for offset in removed):
        return None
    seen_at = [a.acked_at for a in acks if a.key == key and a.offset == again]
    seen_at += [p.polled_at for p in polls if p.key == key and p.offset == again]
    if not any(all(t > loss for t in seen_at) for loss in power_losses):
        return None
    return (f"allowed: offset(s) {removed} lost with the tail a permitted power failure took, the "
            f"partition's end after it at most {end_bound}; written again at offset {again}")


def _poll_anomalies(polls: Sequence[Poll], resets: Sequence[ConsumerReset], known: Sequence[int],
                    log_starts: Sequence[LogStart] = ()) -> list[tuple[str, str]]:
    """Non-monotonic polls and skips per consumer, restarting at each of its resets; a jump over
    offsets that all lie below a low watermark recorded before the poll is the reset to the new
    log start (OFFSET_OUT_OF_RANGE), not a skip."""
    starts = sorted((s.at, s.low_watermark) for s in log_starts)
    events: list[tuple[float, int, str, int, str]] = []  # (time, 0 reset / 1 poll, consumer, offset, key)
    for r in resets:
        events.append((r.at, 0, r.consumer, -1, ""))
    for p in polls:
        events.append((p.polled_at, 1, p.consumer, p.offset, p.key))
    # Stable: polls of one consumer stay in the order they were received.
    events.sort(key=lambda e: (e[0], e[1]))
    last: dict[str, tuple[int, str]] = {}
    found: list[tuple[str, str]] = []
    for polled_at, kind, consumer, offset, key in events:
        if kind == 0:
            last.pop(consumer, None)
            continue
        previous = last.get(consumer)
        last[consumer] = (offset, key)
        if previous is None:
            continue
        o1, k1 = previous
        if offset <= o1:
            found.append((NONMONOTONIC_POLL, f"{consumer} read {key} at offset {offset} after {k1} at {o1}"))
            continue
        first, end = bisect.bisect_right(known, o1), bisect.bisect_left(known, offset)
        skipped = end - first
        deleted_below = max((low for at, low in starts if at <= polled_at), default=0)
        if skipped > 0 and known[end - 1] >= deleted_below:
            found.append((POLL_SKIP, f"{consumer} read offset {offset} right after {o1}, skipping {skipped} "
                                     f"known offset(s)"))
    return found

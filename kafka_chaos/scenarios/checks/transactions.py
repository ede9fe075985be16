"""A Jepsen-style checker of transactional histories (issue 43): pure functions of what the
transactional clients recorded (:class:`scenarios.clients.txn_ops.TxnHistory`).

The definitions follow Jepsen's Kafka checker (``jepsen/src/jepsen/tests/kafka.clj``,
``analysis``) and Elle's dependency graphs (Kingsbury & Alvaro, "Elle: Inferring Isolation
Anomalies from Experimental Observations", VLDB 2020; Adya's G0 / G1a / G1c), made to fit what
Kafka promises a ``read_committed`` consumer (KIP-98): it sees the messages of committed
transactions only, all of them, in offset order, and nothing at or beyond the partition's
*last stable offset* (LSO: the first offset of the earliest transaction still open there).
Reads at ``read_uncommitted`` are outside every rule below but the positions they show.

A read is tied to the send it returned by ``(topic, partition, offset)`` when a delivery
report named that offset with that key, else by ``(topic, key)`` among the sends of that key to
that partition that named no offset (or, failing those, among all of them: a message at two
offsets). A read-process-write loop that aborted re-sends the same keys in its next attempt,
so a read may have several *candidates*: a class fires on a read only when every candidate
makes it fire; a read whose candidates all aborted is an aborted read and nothing else.

Outcomes are the client's (:data:`scenarios.clients.txn_ops.OUTCOMES`); an ``unknown`` one
(a timeout, a fatal error, a dead process: Jepsen's ``:info``) is never taken for committed
or aborted — its messages may be visible or not.

Anomaly classes (:data:`CLASSES`, one :class:`CheckResult` each per run):

``txn_aborted_read``
    A ``read_committed`` consumer (or the final read-back) received a message of a transaction
    the client saw abort — Adya's / Elle's **G1a** (aborted read), Jepsen's ``:G1a``
    (``g1a-cases``: a value written by a ``:fail`` operation was read).
``txn_torn``
    A committed transaction (or one whose end the client never learnt: all of it or none) seen
    in part: a ``read_committed`` consumer (or the final
    read-back), in one stretch without a reset, read past every offset of the transaction,
    received some of its messages and missed one another consumer did receive (a missed
    message nobody received is a ``txn_lost_write``) — the atomicity Jepsen's item 7
    ("intermediate reads") asks about; or readers disagreeing on the message at an offset
    holding a committed transaction's message (Jepsen's ``:inconsistent-offsets`` restricted
    to committed data).
``txn_lost_write``
    A message of a transaction the client saw commit that no ``read_committed`` consumer ever
    received although one read at or beyond its offset on its partition (Jepsen's
    ``:lost-write``, ``lost-write-cases``, with its bound: the highest offset read; consumers
    are taken to start at the log start, as Jepsen's do), or that the final read-back (from
    the log start to the end, after healing) does not hold (Jepsen's ``:unseen`` at the end of
    the test). A transaction counted as ``txn_outcome_contradiction`` is not counted again
    here; a message below the read-back's log start (deleted by retention or DeleteRecords) is
    not judged.
``txn_duplicate``
    One message (topic and key) at two positions among the ``read_committed`` reads and the
    acknowledgements of committed sends (Jepsen's ``:duplicate``, ``duplicate-cases``): in a
    read-process-write pipeline, an input processed twice (exactly-once broken). Its detail
    and ``observed.offsets_went_back`` name the reads below an offset the reader's group had
    committed before its reset (:func:`offsets_went_back`): the group's committed offsets went
    back (KAFKA-17507 on 3.6.1), and the loop processed its input again from there.
``txn_nonmonotonic_read``
    A ``read_committed`` consumer's next record on a partition is at or below its previous
    one, with no reset in between (Jepsen's ``:nonmonotonic-poll``).
``txn_read_past_lso``
    A ``read_committed`` consumer received a message of a transaction before the client had
    even called ``commit_transaction`` (the poll returned before the commit began): the
    consumer read at or beyond the LSO while the transaction was open. Jepsen's
    ``:precommitted-read`` (item 8) in time rather than within one operation. Judged only
    where the commit's start is known.
``txn_g1c``
    A cycle in the dependency graph — Elle's **G1c** (cyclic information flow). Kafka does not
    isolate writes, so Elle's plain ww edges make cycles with wr edges that are legal (Jepsen's
    ``allowed-error-types``: "When we include ww edges, G1c is normal"). The graph here keeps
    only what ``read_committed`` makes an order: T1 → T2 when T2 is a read-process-write
    transaction whose consumer's position on a partition (the offset it sent to the
    transaction) is past a message of T1 — T1 wrote there below what T2 read (a ww edge by
    offset order followed by T2's wr edge), so T1 had ended before T2 read, hence before T2
    ended. Every cycle is a contradiction — Jepsen's Bufstream analysis found such cycles of
    write-read edges only (``jepsen-io/bufstream`` ``workload/early_read.clj``: a poll saw a
    transaction's values before it committed); one of a single transaction is a transaction
    that read past its own open write (Jepsen's precommitted read). The version order of each
    partition is a chain of position nodes, so the graph stays linear in the history;
    strongly connected components by Tarjan's algorithm. A group's consumers read committed
    unless the history declares one ``read_uncommitted`` (then its positions order nothing);
    a position must come from the consumer's fetches or its group's committed offsets, never
    from a seek ahead.
``txn_offsets_without_writes``
    A group's final committed offset on an input partition is the one a read-process-write
    transaction sent, and no transaction that sent it has a message in the final read-back:
    the offsets committed without the writes (KIP-98: ``send_offsets_to_transaction`` commits
    with the transaction, atomically). Not judged where a transaction that sent it wrote
    nothing; this class and the next need the read-back and the groups' final offsets.
``txn_writes_without_offsets``
    A read-process-write transaction's messages are in the final read-back, but a group's
    final committed offset is below the position the transaction sent: the writes committed
    without the offsets (the input would be processed again).
``txn_outcome_contradiction``
    A transaction the client saw commit of which the final read-back holds no message while it
    holds a message of a later attempt of the same ``transactional.id``: the commit was
    undone (or the client was told "committed" for an attempt the coordinator aborted when the
    next one fenced it). A transaction the client saw abort whose messages are visible is a
    ``txn_aborted_read``, never counted here.

``txn_g0`` (:data:`G0`) is a measurement, never a verdict: cycles of ww edges alone (Elle's
**G0**, write cycles) — two transactions' messages interleaved in opposite orders on two
partitions — which Kafka's protocol allows (Jepsen allows ``:G0`` always).

No cluster, no clock: everything is read from the history; times compared are the harness's
own (one clock).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from dataclasses import dataclass
from typing import Any

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.clients.txn_ops import (
    ABORTED, COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, READBACK, UNKNOWN, Txn, TxnHistory, TxnSend,
)

ABORTED_READ = "txn_aborted_read"
TORN = "txn_torn"
LOST_WRITE = "txn_lost_write"
DUPLICATE = "txn_duplicate"
NONMONOTONIC_READ = "txn_nonmonotonic_read"
READ_PAST_LSO = "txn_read_past_lso"
G1C = "txn_g1c"
OFFSETS_WITHOUT_WRITES = "txn_offsets_without_writes"
WRITES_WITHOUT_OFFSETS = "txn_writes_without_offsets"
OUTCOME_CONTRADICTION = "txn_outcome_contradiction"
G0 = "txn_g0"  # permitted: measured, never failed

CLASSES = (ABORTED_READ, TORN, LOST_WRITE, DUPLICATE, NONMONOTONIC_READ, READ_PAST_LSO, G1C,
           OFFSETS_WITHOUT_WRITES, WRITES_WITHOUT_OFFSETS, OUTCOME_CONTRADICTION)
NEEDS_READBACK = frozenset({OFFSETS_WITHOUT_WRITES, WRITES_WITHOUT_OFFSETS, OUTCOME_CONTRADICTION})
NEEDS_GROUP_OFFSETS = frozenset({OFFSETS_WITHOUT_WRITES, WRITES_WITHOUT_OFFSETS})

SAMPLE = 10  # anomalies kept in a result's observed sample

TP = tuple[str, int]


@dataclass(frozen=True)
class TxnAnomaly:
    """One instance of a class: the transactions (``txn_id#seq``), messages (``topic/key``)
    and positions (``topic-partition@offset``) it involves, and a readable line."""

    kind: str
    detail: str
    txns: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    offsets: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"txns": list(self.txns), "keys": list(self.keys), "offsets": list(self.offsets),
                "detail": self.detail}


@dataclass(frozen=True)
class TxnAnalysis:
    """Every anomaly of a history (in :data:`CLASSES` order), the permitted write cycles
    (:data:`G0`), the classes that could not be judged (with why), the history's size and the
    reads below an offset the reader's group had committed (:func:`offsets_went_back`)."""

    anomalies: tuple[TxnAnomaly, ...]
    g0: tuple[TxnAnomaly, ...]
    not_judged: tuple[tuple[str, str], ...]
    txns: int
    reads: int
    # Evidence for txn_duplicate, never a class of its own (:func:`offsets_went_back`).
    went_back: tuple[TxnAnomaly, ...] = ()

    def of(self, kind: str) -> list[TxnAnomaly]:
        return [a for a in self.anomalies if a.kind == kind]


def effective_outcome(t: Txn) -> str:
    """The outcome the checks judge ``t`` by: the client's, except for an attempt held open past
    its own ``transaction.timeout.ms`` (``scenarios.faults.txn_timeout``) whose commit failed —
    the coordinator had aborted it (``TransactionCoordinator.abortTimedOutTransactions`` bumps
    the epoch and writes abort markers; the late EndTxn(commit) is refused with PRODUCER_FENCED
    by ``endTransaction``), so none of its messages may be read at ``read_committed``: an
    aborted read if one is. The client was not told "aborted", which is fine only because its
    commit failed; a held attempt the client saw commit is judged committed (lost if unseen)."""
    if t.held_past_timeout and t.outcome == UNKNOWN and t.committing_at is not None:
        return ABORTED
    return t.outcome


def _at(topic: str, partition: int, offset: int | None) -> str:
    return f"{topic}-{partition}@{'?' if offset is None else offset}"


# --- indexing -----------------------------------------------------------------------------------

class _Index:
    """The history's sends, reads and positions, indexed once (every class reads it)."""

    def __init__(self, h: TxnHistory) -> None:
        self.h = h
        self.txns = h.txns
        levels = h.isolation_of()
        self.sends: list[TxnSend] = []
        self.send_txn: list[int] = []
        self.txn_sends: list[list[int]] = []
        by_pos: dict[tuple[str, int, int], list[int]] = {}
        by_key: dict[tuple[str, str], list[int]] = {}
        for i, txn in enumerate(h.txns):
            mine = []
            for s in txn.sends:
                sid = len(self.sends)
                self.sends.append(s)
                self.send_txn.append(i)
                mine.append(sid)
                if s.offset is not None:
                    by_pos.setdefault((s.topic, s.partition, s.offset), []).append(sid)
                by_key.setdefault((s.topic, s.key), []).append(sid)
            self.txn_sends.append(mine)
        self.by_pos = by_pos
        self.by_key = by_key
        self.outcome = [effective_outcome(t) for t in h.txns]

        # read_committed reads (the read-back's too): (consumer, topic, partition, offset, key, at,
        # candidates other than aborted ones, every candidate aborted); per send who received it
        # (``read_by``: perhaps, one of several candidates; ``surely_read_by``: the only one) and
        # the offsets reads put it at
        unknown = sorted({r.consumer for r in h.reads} - set(levels))
        if unknown:
            raise ValueError(f"reads by consumers the history does not declare: {unknown}")
        committed = {c for c, level in levels.items() if level == READ_COMMITTED}
        self.rc_reads: list[tuple[str, str, int, int, str, float, tuple[int, ...], bool]] = []
        self.readback_reads: list[tuple[str, str, int, int, str, float, tuple[int, ...], bool]] = []
        self.readback_span: dict[TP, tuple[int, int]] = {}
        self.read_by: dict[int, set[str]] = {}
        self.surely_read_by: dict[int, set[str]] = {}
        self.read_offsets: dict[int, set[int]] = {}
        for rb in h.readback or ():
            self.readback_span[(rb.topic, rb.partition)] = (rb.start, rb.end)
        memo: dict[tuple[str, int, int, str], tuple[tuple[int, ...], bool]] = {}
        attribute, read_by, surely, read_offsets = self._attribute, self.read_by, self.surely_read_by, self.read_offsets
        rc_reads, readback_reads = self.rc_reads, self.readback_reads
        everything = chain(((r.consumer, r.topic, r.partition, r.offset, r.key, r.polled_at) for r in h.reads),
                           ((READBACK, rb.topic, rb.partition, o, key, rb.at)
                            for rb in h.readback or () for o, key in rb.records))
        for c, t, p, o, key, at in everything:
            if c not in committed:
                continue
            k = (t, p, o, key)
            got = memo.get(k)
            if got is None:
                got = memo[k] = attribute(t, p, o, key)
            cands = got[0]
            (readback_reads if c == READBACK else rc_reads).append((c, t, p, o, key, at, cands, got[1]))
            if len(cands) == 1:
                sid = cands[0]
                if sid in read_by:
                    read_by[sid].add(c)
                    surely[sid].add(c)
                    read_offsets[sid].add(o)
                else:
                    read_by[sid] = {c}
                    surely[sid] = {c}
                    read_offsets[sid] = {o}
            else:
                for sid in cands:
                    read_by.setdefault(sid, set()).add(c)
        self.pos: list[int | None] = []
        for sid, s in enumerate(self.sends):
            if s.offset is not None:
                self.pos.append(s.offset)
            else:
                seen = self.read_offsets.get(sid)
                self.pos.append(min(seen) if seen else None)

        self.rc_groups = {c.group for c in h.consumers if c.group is not None and c.isolation == READ_COMMITTED}
        self.ru_groups = {c.group for c in h.consumers if c.group is not None and c.isolation == READ_UNCOMMITTED}

    def _attribute(self, topic: str, partition: int, offset: int, key: str) -> tuple[tuple[int, ...], bool]:
        """The non-aborted sends a read of ``key`` at this position may have returned, and
        whether it surely returned an aborted one. A send acknowledged at this offset with this
        key is the one; else the sends of the key to the partition without an offset (one
        acknowledged elsewhere is there, not here), or failing those every send of the key (a
        message at two offsets). Aborted for sure: acknowledged here by aborted sends only, or
        every send of the key to the partition aborted."""
        possible = [sid for sid in self.by_pos.get((topic, partition, offset), ()) if self.sends[sid].key == key]
        exact = bool(possible)
        if not exact:
            possible = [sid for sid in self.by_key.get((topic, key), ()) if self.sends[sid].partition == partition]
        live = [sid for sid in possible if self.outcome[self.send_txn[sid]] != ABORTED]
        if not exact:
            live = [sid for sid in live if self.sends[sid].offset is None] or live
        return tuple(live), bool(possible) and not any(self.outcome[self.send_txn[sid]] != ABORTED for sid in possible)

    def _all_rc(self) -> Iterator[tuple[str, str, int, int, str, float, tuple[int, ...], bool]]:
        yield from self.rc_reads
        yield from self.readback_reads

    def visible(self, i: int, surely: bool = False) -> bool:
        """Some message of transaction ``i`` is in the read-back (``surely``: read there as the
        only candidate; else perhaps)."""
        seen = self.surely_read_by if surely else self.read_by
        return any(READBACK in seen.get(sid, ()) for sid in self.txn_sends[i])

    def readback_covers(self, i: int) -> bool:
        """The read-back read every partition transaction ``i`` wrote, from below its messages."""
        for sid in self.txn_sends[i]:
            s = self.sends[sid]
            span = self.readback_span.get((s.topic, s.partition))
            if span is None:
                return False
            o = self.pos[sid]
            if o is not None and o < span[0]:
                return False
        return True

    def name(self, i: int) -> str:
        return self.txns[i].name

    def key(self, sid: int) -> str:
        s = self.sends[sid]
        return f"{s.topic}/{s.key}"

    def where(self, sid: int) -> str:
        s = self.sends[sid]
        return _at(s.topic, s.partition, self.pos[sid])


# --- the classes --------------------------------------------------------------------------------

def _aborted_reads(ix: _Index) -> list[TxnAnomaly]:
    readers: dict[tuple[str, int, int, str], list[str]] = {}
    for c, t, p, o, k, _when, _cands, aborted in ix._all_rc():
        if aborted:
            readers.setdefault((t, p, o, k), []).append(c)
    found = []
    for (t, p, o, k), cs in readers.items():
        sids = [sid for sid in ix.by_pos.get((t, p, o), ()) if ix.sends[sid].key == k] or \
            [sid for sid in ix.by_key.get((t, k), ()) if ix.sends[sid].partition == p]
        writers = sorted({ix.name(ix.send_txn[sid]) for sid in sids})
        who = sorted(set(cs))
        found.append(TxnAnomaly(ABORTED_READ, f"{', '.join(who)} read {t}/{k} at {_at(t, p, o)}, written by "
                                              f"{', '.join(writers)}, which the client saw abort",
                                tuple(writers), (f"{t}/{k}",), (_at(t, p, o),)))
    return found


def _stretches(ix: _Index) -> tuple[dict[tuple[str, str, int], list[tuple[int, int]]], list[TxnAnomaly]]:
    """Per read_committed consumer and partition, the offset ranges it read through in one
    stretch without a reset (merged, sorted); and its non-monotonic reads."""
    resets: dict[str, list[float]] = defaultdict(list)
    for r in ix.h.resets:
        resets[r.consumer].append(r.at)
    by_consumer: dict[str, list[tuple[float, int, int, str, int, str]]] = defaultdict(list)
    for n, (c, t, p, o, k, at, _cands, _aborted) in enumerate(ix.rc_reads):
        by_consumer[c].append((at, 1, n, t, p, k))
    spans: dict[tuple[str, str, int], list[tuple[int, int]]] = defaultdict(list)
    found: list[TxnAnomaly] = []
    for c, events in by_consumer.items():
        events.extend((at, 0, -1, "", -1, "") for at in resets.get(c, ()))
        events.sort(key=lambda e: (e[0], e[1]))  # resets first at one instant; reads stay in order
        current: dict[TP, list[Any]] = {}  # tp -> [lo, hi, last offset, last key]
        for at, kind, n, t, p, k in events:
            if kind == 0:
                for (t0, p0), (lo, hi, _, _) in current.items():
                    spans[(c, t0, p0)].append((lo, hi))
                current.clear()
                continue
            o = ix.rc_reads[n][3]
            cur = current.get((t, p))
            if cur is None:
                current[(t, p)] = [o, o, o, k]
                continue
            if o <= cur[2]:
                found.append(TxnAnomaly(NONMONOTONIC_READ, f"{c} read {t}/{k} at {_at(t, p, o)} after {t}/{cur[3]} "
                                                           f"at offset {cur[2]}, with no reset in between",
                                        (), (f"{t}/{cur[3]}", f"{t}/{k}"), (_at(t, p, cur[2]), _at(t, p, o))))
            cur[0] = min(cur[0], o)
            cur[1] = max(cur[1], o)
            cur[2] = o
            cur[3] = k
        for (t0, p0), (lo, hi, _, _) in current.items():
            spans[(c, t0, p0)].append((lo, hi))
    for (t, p), (start, end) in ix.readback_span.items():
        if end > start:
            spans[(READBACK, t, p)].append((start, end - 1))
    merged: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    for key, ranges in spans.items():
        ranges.sort()
        out: list[tuple[int, int]] = []
        for lo, hi in ranges:
            if out and lo <= out[-1][1] + 1:
                out[-1] = (out[-1][0], max(out[-1][1], hi))
            else:
                out.append((lo, hi))
        merged[key] = out
    return merged, found


def _covered(spans: dict[tuple[str, str, int], list[tuple[int, int]]], consumer: str, topic: str,
             partition: int, offset: int) -> bool:
    ranges = spans.get((consumer, topic, partition))
    if not ranges:
        return False
    i = bisect.bisect_right(ranges, (offset, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= offset <= ranges[i][1]


def _torn(ix: _Index, spans: dict[tuple[str, str, int], list[tuple[int, int]]]) -> list[TxnAnomaly]:
    found: list[TxnAnomaly] = []
    for i, t in enumerate(ix.txns):
        # an attempt whose end the client never learnt committed all of it or none (a hung or
        # timed-out commit): judged like a committed one, which it is if any of it is read
        if effective_outcome(t) not in (COMMITTED, UNKNOWN):
            continue
        sids = ix.txn_sends[i]
        if len(sids) < 2 or any(ix.pos[sid] is None for sid in sids):
            continue
        readers: set[str] = set()
        for sid in sids:
            readers |= ix.surely_read_by.get(sid, set())
        for c in sorted(readers):
            if not all(_covered(spans, c, ix.sends[sid].topic, ix.sends[sid].partition, ix.pos[sid] or 0)
                       for sid in sids):
                continue
            seen = [sid for sid in sids if c in ix.surely_read_by.get(sid, ())]
            missed = [sid for sid in sids if c not in ix.read_by.get(sid, ()) and ix.surely_read_by.get(sid)]
            if seen and missed:
                found.append(TxnAnomaly(
                    TORN, f"{c} read past every offset of {t.outcome} {t.name} and received "
                          f"{len(seen)} of its {len(sids)} messages, missing {ix.key(missed[0])} at "
                          f"{ix.where(missed[0])} (which {sorted(ix.surely_read_by[missed[0]])[0]} received)",
                    (t.name,), tuple(ix.key(sid) for sid in missed), tuple(ix.where(sid) for sid in missed)))
    # readers (and acknowledgements) disagreeing on an offset that holds a committed message
    first: dict[tuple[str, int, int], str] = {}
    at_offset: dict[tuple[str, int, int], set[str]] = defaultdict(set)  # the offsets holding two or more
    for s in ix.sends:
        if s.offset is not None:
            was = first.setdefault((s.topic, s.partition, s.offset), s.key)
            if was != s.key:
                at_offset[(s.topic, s.partition, s.offset)].update((was, s.key))
    for _c, tp_t, tp_p, o, k, _when, _cands, _aborted in ix._all_rc():
        was = first.setdefault((tp_t, tp_p, o), k)
        if was != k:
            at_offset[(tp_t, tp_p, o)].update((was, k))
    for (tp_t, tp_p, o), keys in at_offset.items():
        writers = sorted({ix.name(ix.send_txn[sid]) for k in keys for sid in ix.by_key.get((tp_t, k), ())
                          if ix.sends[sid].partition == tp_p and ix.outcome[ix.send_txn[sid]] == COMMITTED})
        if writers:
            found.append(TxnAnomaly(TORN, f"{_at(tp_t, tp_p, o)} holds {sorted(keys)} by different readers or "
                                          f"acknowledgements (committed: {', '.join(writers)})",
                                    tuple(writers), tuple(f"{tp_t}/{k}" for k in sorted(keys)), (_at(tp_t, tp_p, o),)))
    return found


def _contradictions(ix: _Index) -> tuple[list[TxnAnomaly], set[int]]:
    later_visible: dict[str, list[int]] = defaultdict(list)  # txn_id -> seqs with a visible message
    for i, t in enumerate(ix.txns):
        if ix.visible(i, surely=True):
            later_visible[t.txn_id].append(t.seq)
    found, which = [], set()
    for i, t in enumerate(ix.txns):
        if t.outcome != COMMITTED or not ix.txn_sends[i] or not ix.readback_covers(i) or ix.visible(i):
            continue
        later = sorted(s for s in later_visible.get(t.txn_id, ()) if s > t.seq)
        if later:
            which.add(i)
            sids = ix.txn_sends[i]
            found.append(TxnAnomaly(
                OUTCOME_CONTRADICTION, f"the client saw {t.name} commit, yet the read-back holds none of its "
                                       f"{len(sids)} messages and holds {t.txn_id}#{later[0]}'s",
                (t.name, f"{t.txn_id}#{later[0]}"), tuple(ix.key(sid) for sid in sids),
                tuple(ix.where(sid) for sid in sids)))
    return found, which


def _lost(ix: _Index, excluded: set[int]) -> list[TxnAnomaly]:
    bound: dict[TP, int] = {}
    for _c, t, p, o, _k, _when, _cands, aborted in ix._all_rc():
        if not aborted and o > bound.get((t, p), -1):
            bound[(t, p)] = o
    found = []
    for i, tx in enumerate(ix.txns):
        if tx.outcome != COMMITTED or i in excluded:
            continue
        for sid in ix.txn_sends[i]:
            if ix.read_by.get(sid):
                continue
            s, at = ix.sends[sid], ix.pos[sid]
            span = ix.readback_span.get((s.topic, s.partition))
            if span is not None and at is not None and at < span[0]:
                continue  # below the log start when read back: deleted (retention, DeleteRecords)
            why = None
            if at is not None and at <= bound.get((s.topic, s.partition), -1):
                why = f"below offset {bound[(s.topic, s.partition)]} read"
            elif span is not None and (at is None or at >= span[0]):
                why = "not in the final read-back"
            if why is not None:
                found.append(TxnAnomaly(LOST_WRITE, f"{ix.key(sid)} of committed {tx.name} at {ix.where(sid)}, "
                                                    f"{why}, never read", (tx.name,), (ix.key(sid),), (ix.where(sid),)))
    return found


def _duplicates(ix: _Index) -> list[TxnAnomaly]:
    first: dict[tuple[str, str], tuple[int, int]] = {}
    places: dict[tuple[str, str], set[tuple[int, int]]] = defaultdict(set)  # the keys at two or more
    for sid, s in enumerate(ix.sends):
        if s.offset is not None and ix.outcome[ix.send_txn[sid]] == COMMITTED:
            here = (s.partition, s.offset)
            was = first.setdefault((s.topic, s.key), here)
            if was != here:
                places[(s.topic, s.key)].update((was, here))
    for _c, t, p, o, k, _when, cands, _aborted in ix._all_rc():
        if cands:
            here = (p, o)
            was = first.setdefault((t, k), here)
            if was != here:
                places[(t, k)].update((was, here))
    found = []
    for (t, k), where in places.items():
        if len(where) > 1:
            writers = sorted({ix.name(ix.send_txn[sid]) for sid in ix.by_key.get((t, k), ())})
            offsets = tuple(_at(t, p, o) for p, o in sorted(where))
            found.append(TxnAnomaly(DUPLICATE, f"{t}/{k} (by {', '.join(writers)}) at {len(where)} positions: "
                                               f"{', '.join(offsets)}", tuple(writers), (f"{t}/{k}",), offsets))
    return found


def _read_past_lso(ix: _Index) -> list[TxnAnomaly]:
    found = []
    for c, t, p, o, k, at, cands, _aborted in ix.rc_reads:
        if not cands:
            continue
        starts = [ix.txns[ix.send_txn[sid]].committing_at for sid in cands]
        if all(s is not None and at < s for s in starts):
            writer = ix.txns[ix.send_txn[cands[0]]]
            found.append(TxnAnomaly(READ_PAST_LSO, f"{c} received {t}/{k} at {_at(t, p, o)} at {at:.3f}, before "
                                                   f"{writer.name}'s commit began at {writer.committing_at:.3f}",
                                    (writer.name,), (f"{t}/{k}",), (_at(t, p, o),)))
    return found


# --- graphs -------------------------------------------------------------------------------------

def strongly_connected(n: int, edges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components of the graph on nodes ``0..n-1`` (``edges[v]``:
    v's successors), iteratively (histories are deep); every component, singletons too."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, pi = work[-1]
            succ = edges[v]
            if pi < len(succ):
                work[-1] = (v, pi + 1)
                w = succ[pi]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work and low[v] < low[work[-1][0]]:
                low[work[-1][0]] = low[v]
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    component.append(w)
                    if w == v:
                        break
                out.append(component)
    return out


def _cycle_through(start: int, members: set[int], edges: Sequence[Sequence[int]]) -> list[int]:
    """A shortest cycle from ``start`` back to it inside one component (breadth first)."""
    parent: dict[int, int] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in edges[v]:
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return path[::-1] + [start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def _g1c(ix: _Index) -> list[TxnAnomaly]:
    n = len(ix.txns)
    offsets_of: dict[TP, list[int]] = defaultdict(list)
    for sid, s in enumerate(ix.sends):
        o = ix.pos[sid]
        if o is not None:
            offsets_of[(s.topic, s.partition)].append(o)
    base: dict[TP, int] = {}
    labels: list[str] = []
    chains: dict[TP, list[int]] = {}
    total = n
    for tp, offs in offsets_of.items():
        chain = sorted(set(offs))
        chains[tp] = chain
        base[tp] = total
        total += len(chain)
        labels.extend(_at(tp[0], tp[1], o) for o in chain)
    edges: list[list[int]] = [[] for _ in range(total)]
    for tp, chain in chains.items():
        b = base[tp]
        for k in range(len(chain) - 1):
            edges[b + k].append(b + k + 1)
    for sid, s in enumerate(ix.sends):
        o = ix.pos[sid]
        if o is not None:
            tp = (s.topic, s.partition)
            edges[ix.send_txn[sid]].append(base[tp] + bisect.bisect_left(chains[tp], o))
    for i, tx in enumerate(ix.txns):
        for off in tx.offsets:
            if off.group in ix.ru_groups and off.group not in ix.rc_groups:
                continue  # a read_uncommitted loop orders nothing
            tp = (off.topic, off.partition)
            read = chains.get(tp)
            if read is None:
                continue
            k = bisect.bisect_left(read, off.offset) - 1
            if k >= 0:
                edges[base[tp] + k].append(i)
    found = []
    for component in strongly_connected(total, edges):
        txns = sorted(v for v in component if v < n)
        if len(component) < 2 or not txns:
            continue
        cycle = _cycle_through(txns[0], set(component), edges)
        steps: list[str] = []
        run: list[str] = []  # consecutive positions on one partition, shown as [first..last]
        for v in cycle:
            if v >= n:
                run.append(labels[v - n])
                continue
            if run:
                steps.append(f"[{run[0]}]" if len(run) == 1 else f"[{run[0]}..{run[-1].rsplit('@', 1)[1]}]")
                run = []
            steps.append(ix.name(v))
        names = tuple(ix.name(v) for v in txns)
        what = "read past its own open write" if len(txns) == 1 else "each ended before the next read"
        found.append(TxnAnomaly(G1C, f"cycle of {len(txns)} transaction(s), {what}: {' -> '.join(steps)}",
                                names, (), tuple(step for step in steps if step.startswith("["))))
    return found


def _g0(ix: _Index) -> list[TxnAnomaly]:
    per_tp: dict[TP, list[tuple[int, int]]] = defaultdict(list)
    for sid, s in enumerate(ix.sends):
        o = ix.pos[sid]
        if o is not None and ix.outcome[ix.send_txn[sid]] != ABORTED:
            per_tp[(s.topic, s.partition)].append((o, ix.send_txn[sid]))
    succ: list[set[int]] = [set() for _ in ix.txns]
    for entries in per_tp.values():
        entries.sort()
        for (_, a), (_, b) in zip(entries, entries[1:]):
            if a != b:
                succ[a].add(b)
    edges = [sorted(s) for s in succ]
    found = []
    for component in strongly_connected(len(ix.txns), edges):
        if len(component) > 1:
            names = tuple(ix.name(v) for v in sorted(component))
            found.append(TxnAnomaly(G0, f"write cycle over {len(names)} transactions: {', '.join(names[:5])}"
                                        + (" ..." if len(names) > 5 else ""), names))
    return found


def _offsets(ix: _Index) -> tuple[list[TxnAnomaly], list[TxnAnomaly]]:
    final = {(o.group, o.topic, o.partition): o.offset for o in ix.h.group_offsets or ()}
    senders: dict[tuple[str, str, int, int], list[int]] = defaultdict(list)
    for i, tx in enumerate(ix.txns):
        for off in tx.offsets:
            senders[(off.group, off.topic, off.partition, off.offset)].append(i)
    without_writes = []
    for (g, t, p), o in final.items():
        cands = senders.get((g, t, p, o), [])
        if not cands or any(not ix.txn_sends[i] or not ix.readback_covers(i) or ix.visible(i) for i in cands):
            continue
        names = tuple(ix.name(i) for i in cands)
        without_writes.append(TxnAnomaly(
            OFFSETS_WITHOUT_WRITES, f"group {g} committed offset {o} on {t}-{p}, sent by {', '.join(names)}, "
                                    f"none of whose messages the read-back holds", names, (), (_at(t, p, o),)))
    without_offsets = []
    for i, tx in enumerate(ix.txns):
        if not tx.offsets or not ix.visible(i, surely=True):
            continue
        behind = [off for off in tx.offsets if final.get((off.group, off.topic, off.partition), -1) < off.offset]
        if behind:
            off = behind[0]
            have = final.get((off.group, off.topic, off.partition))
            without_offsets.append(TxnAnomaly(
                WRITES_WITHOUT_OFFSETS, f"{tx.name}'s messages are in the read-back but group {off.group}'s final "
                                        f"offset on {off.topic}-{off.partition} is {have}, below the {off.offset} "
                                        f"it sent", (tx.name,), (),
                tuple(_at(b.topic, b.partition, b.offset) for b in behind)))
    return without_writes, without_offsets


WENT_BACK = "offsets_went_back"  # evidence attached to txn_duplicate (TxnAnomaly.kind), not a class


def offsets_went_back(h: TxnHistory) -> list[TxnAnomaly]:
    """Where a group's consumer read below an offset its group had committed before the
    consumer's last reset: the first such read per consumer, partition and reset. A reset
    (an assignment, or the copier's rewind after an abort: ``consumer.committed()`` then a seek)
    takes the position from the group's committed offsets, and a transaction the client saw
    commit had committed its offsets (KIP-98: ``send_offsets_to_transaction`` commits with the
    transaction; KIP-447: a read_committed consumer's OffsetFetch asks for stable offsets, so an
    offset commit still awaiting its marker is waited for, never skipped). Only a transaction that
    ended before the reset counts (the copier's transactions and rewinds are one thread's, in
    turn). A read-process-write loop that re-reads its input from there copies it again: the
    ``txn_duplicate`` it makes is then the group's committed offsets going back (KAFKA-17507 on
    3.6.1: docs/transactions.md), not the copier's protocol. Evidence, never a verdict of its own:
    a log truncated below the committed offset (an unclean election) sends a reader back as well."""
    group_of = {c.name: c.group for c in h.consumers if c.group is not None}
    commits: dict[tuple[str, str, int], list[tuple[float, int, str]]] = defaultdict(list)
    for t in h.txns:
        if t.ended_at is None or effective_outcome(t) != COMMITTED:
            continue
        for off in t.offsets:
            commits[(off.group, off.topic, off.partition)].append((t.ended_at, off.offset, t.name))
    # per (group, topic, partition): the end times in order, and the highest offset committed by then
    highest: dict[tuple[str, str, int], tuple[list[float], list[tuple[int, str, float]]]] = {}
    for k, cs in commits.items():
        times: list[float] = []
        best: list[tuple[int, str, float]] = []
        for at, offset, name in sorted(cs):
            top = best[-1] if best and best[-1][0] >= offset else (offset, name, at)
            times.append(at)
            best.append(top)
        highest[k] = (times, best)
    resets: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for reset in h.resets:
        resets[reset.consumer].append((reset.at, reset.why))
    for v in resets.values():
        v.sort()
    reset_times = {c: [at for at, _why in v] for c, v in resets.items()}
    first: dict[tuple[str, str, int, float], tuple[float, TxnAnomaly]] = {}
    for r in h.reads:
        g = group_of.get(r.consumer)
        k = (g or "", r.topic, r.partition)
        if g is None or k not in highest or r.consumer not in resets:
            continue
        i = bisect.bisect_right(reset_times[r.consumer], r.polled_at)
        if i == 0:
            continue
        reset_at, why = resets[r.consumer][i - 1]
        times, best = highest[k]
        j = bisect.bisect_right(times, reset_at)
        if j == 0 or r.offset >= best[j - 1][0]:
            continue
        offset, name, ended = best[j - 1]
        where = (r.consumer, r.topic, r.partition, reset_at)
        if where in first and first[where][0] <= r.polled_at:
            continue
        first[where] = (r.polled_at, TxnAnomaly(
            WENT_BACK, f"{r.consumer} read {_at(r.topic, r.partition, r.offset)} after its reset ({why}) "
                       f"{reset_at - ended:.2f} s after {name} committed offset {offset} there for group {g}: "
                       f"the group's committed offset had gone back", (name,), (f"{r.topic}/{r.key}",),
            (_at(r.topic, r.partition, r.offset),)))
    return [a for _polled, a in sorted(first.values(), key=lambda v: v[0])]


# --- entry points -------------------------------------------------------------------------------

def unexercised(history: TxnHistory) -> dict[str, str]:
    """Classes the history cannot show, with why: an aborted read needs an attempt judged
    aborted or unknown, a torn transaction one that wrote two records or more. Kafka's Java
    VerifiableProducer sends one record per commit and records no abort, so a pass there would
    test nothing: such a class is left out of the checks and named in ``txn_workload``."""
    found = {}
    if all(effective_outcome(t) == COMMITTED for t in history.txns):
        found[ABORTED_READ] = "no transaction recorded as aborted or unknown"
    if all(len(t.sends) < 2 for t in history.txns):
        found[TORN] = "no transaction recorded with two writes or more"
    return found


def analyse(history: TxnHistory) -> TxnAnalysis:
    """Every anomaly of ``history``. Raises ValueError on a malformed history (a read by an
    undeclared consumer)."""
    ix = _Index(history)
    spans, nonmonotonic = _stretches(ix)
    contradictions, contradicted = _contradictions(ix)
    found: dict[str, list[TxnAnomaly]] = {
        ABORTED_READ: _aborted_reads(ix), TORN: _torn(ix, spans), LOST_WRITE: _lost(ix, contradicted),
        DUPLICATE: _duplicates(ix), NONMONOTONIC_READ: nonmonotonic, READ_PAST_LSO: _read_past_lso(ix),
        G1C: _g1c(ix), OUTCOME_CONTRADICTION: contradictions}
    not_judged: list[tuple[str, str]] = []
    if history.readback is None:
        not_judged += [(k, "no final read-back") for k in CLASSES if k in NEEDS_READBACK]
        found[OUTCOME_CONTRADICTION] = []
    if history.readback is None or history.group_offsets is None:
        found[OFFSETS_WITHOUT_WRITES], found[WRITES_WITHOUT_OFFSETS] = [], []
        if history.readback is not None:
            not_judged += [(k, "no final group offsets") for k in CLASSES if k in NEEDS_GROUP_OFFSETS]
    else:
        found[OFFSETS_WITHOUT_WRITES], found[WRITES_WITHOUT_OFFSETS] = _offsets(ix)
    anomalies = tuple(a for k in CLASSES for a in found[k])
    return TxnAnalysis(anomalies, tuple(_g0(ix)), tuple(not_judged), len(history.txns),
                       len(history.reads) + len(ix.readback_reads), tuple(offsets_went_back(history)))


def _results(analysis: TxnAnalysis, left_out: Mapping[str, str]) -> list[CheckResult]:
    scope = f"over {analysis.txns} transactions and {analysis.reads} reads"
    skipped = dict(analysis.not_judged)
    results = []
    for kind in (k for k in CLASSES if k not in left_out):
        bad = analysis.of(kind)
        observed: dict[str, Any] = {
            "anomalies": len(bad), "transactions": sorted({t for a in bad for t in a.txns})[:20],
            "sample": [a.as_dict() for a in bad[:SAMPLE]], "txns": analysis.txns, "reads": analysis.reads}
        label = kind.removeprefix("txn_").replace("_", " ")
        if kind in skipped:
            results.append(CheckResult(kind, None, 0, observed, f"not judged: {skipped[kind]}"))
            continue
        detail = f"{len(bad)} {label} {scope}" + (f"; e.g. {bad[0].detail}" if bad else "")
        if kind == DUPLICATE and bad and analysis.went_back:  # where the duplicates came from
            back = analysis.went_back
            observed["offsets_went_back"] = {"reads": len(back), "sample": [a.as_dict() for a in back[:SAMPLE]]}
            detail += (f"; {len(back)} read(s) below an offset the reader's group had committed before its reset, "
                       f"e.g. {back[0].detail}")
        results.append(CheckResult(kind, not bad, 0, observed, detail))
    g0 = analysis.g0
    observed = {"cycles": len(g0), "transactions": sum(len(a.txns) for a in g0),
                "sample": [a.as_dict() for a in g0[:SAMPLE]], "permitted": True}
    results.append(CheckResult(G0, None, None, observed,
                               f"{len(g0)} write cycle(s) (G0, permitted: Kafka does not isolate writes) {scope}",
                               kind="measurement"))
    return results


def check_transactions(history: TxnHistory) -> list[CheckResult]:
    """One :class:`CheckResult` per class of :data:`CLASSES` the history can show
    (:func:`unexercised` names the others; passed True when none fired, None when a missing
    read-back or group offsets leave it unjudged) and the :data:`G0` measurement, in that order."""
    return _results(analyse(history), unexercised(history))


def workload_figures(history: TxnHistory) -> CheckResult:
    """The ``txn_workload`` measurement: transaction attempts per outcome (and per transactional
    id), records each consumer received, the read-back's records and the groups' final offsets."""
    outcomes = {o: sum(1 for t in history.txns if t.outcome == o) for o in (COMMITTED, ABORTED, UNKNOWN)}
    per_id: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys((COMMITTED, ABORTED, UNKNOWN), 0))
    for t in history.txns:
        per_id[t.txn_id][t.outcome] += 1
    reads: dict[str, int] = defaultdict(int)
    for r in history.reads:
        reads[r.consumer] += 1
    readback = None if history.readback is None else sum(len(rb.records) for rb in history.readback)
    errors = sorted({t.error for t in history.txns if t.error})
    observed = {**outcomes, "by_txn_id": dict(sorted(per_id.items())), "reads": dict(sorted(reads.items())),
                "readback": readback, "resets": len(history.resets), "errors": errors[:20],
                "group_offsets": None if history.group_offsets is None else len(history.group_offsets),
                # attempts held past their transaction.timeout.ms (scenarios.faults.txn_timeout)
                "held_past_timeout": [{"txn": t.name, "outcome": t.outcome, "judged": effective_outcome(t),
                                       "error": t.error, "timeout_ms": t.timeout_ms, "held_ms": t.held_ms}
                                      for t in history.txns if t.held_past_timeout],
                "unexercised": unexercised(history)}
    detail = (f"{outcomes[COMMITTED]} committed, {outcomes[ABORTED]} aborted, {outcomes[UNKNOWN]} unknown "
              f"transaction(s) of {len(per_id)} transactional id(s); "
              + ", ".join(f"{c} read {n}" for c, n in sorted(reads.items()))
              + (f"; read-back {readback} record(s)" if readback is not None else "; no read-back")
              + "".join(f"; {kind} not checked: {why}" for kind, why in unexercised(history).items()))
    return CheckResult("txn_workload", None, None, observed, detail, kind="measurement")


def fired(results: Iterable[CheckResult]) -> set[str]:
    """The classes that failed among ``results``."""
    return {r.check for r in results if r.passed is False}

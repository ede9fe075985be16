"""What a read-process-write copier that prints no transaction of its own must have written (issue
43, Kafka's ``TransactionalMessageCopier``: :mod:`scenarios.clients.java_txn_workload`) — pure.

The copier copies each input record to the output partition of the same number, key and value
unchanged (``producerRecordFromConsumerRecord``), and commits the consumer's positions with the
same transaction (``sendOffsetsToTransaction``). So once every transaction has ended (the
transactional id fenced after the run), a ``read_committed`` read-back of output partition ``p``
must hold exactly the input partition ``p``'s values below the copier group's committed offset,
once each and in input order — the exactly-once property Kafka's own
``tests/kafkatest/tests/core/transactions_test.py`` asserts (every input message copied, no
duplicate). Classes:

``txn_copy_lost``
    an input value below the committed offset missing from the output (a committed copy lost,
    or offsets committed without their writes);
``txn_copy_extra``
    an output value that is not the input's below the committed offset: an aborted or uncommitted
    copy visible at ``read_committed`` (G1a), or writes committed without their offsets;
``txn_copy_duplicate``
    an output value at two offsets (an input copied twice: exactly-once broken);
``txn_copy_order``
    the output's values in another order than the input's.

Judged only for a history that declares the Java copier (consumer ``java_copier`` with its group)
and holds the read-back and that group's committed offsets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.clients.txn_ops import ReadBack, TxnHistory

JAVA_COPIER = "java_copier"  # scenarios.clients.java_txn_workload.JAVA_COPIER
LOST, EXTRA, DUPLICATE, ORDER = "txn_copy_lost", "txn_copy_extra", "txn_copy_duplicate", "txn_copy_order"
CLASSES = (LOST, EXTRA, DUPLICATE, ORDER)
_SHOWN = 5


def copier_group(history: TxnHistory) -> str | None:
    return next((c.group for c in history.consumers if c.name == JAVA_COPIER), None)


def _values(rb: ReadBack, below: int | None = None) -> list[str]:
    return [key for offset, key in rb.records if below is None or offset < below]


def copy_findings(history: TxnHistory) -> dict[str, list[str]] | None:
    """Each class's findings (one line each), or None when not judged."""
    group = copier_group(history)
    if group is None or history.readback is None or history.group_offsets is None:
        return None
    committed = {(o.topic, o.partition): o.offset for o in history.group_offsets if o.group == group}
    in_topics = {t for t, _p in committed}
    if len(in_topics) > 1:
        return None
    by_tp = {(rb.topic, rb.partition): rb for rb in history.readback}
    topics = sorted({rb.topic for rb in history.readback})
    if len(topics) != 2:
        return None
    in_topic = next(iter(in_topics)) if in_topics else topics[0]
    out_topic = next(t for t in topics if t != in_topic)
    found: dict[str, list[str]] = {c: [] for c in CLASSES}
    for (topic, p), rb in sorted(by_tp.items()):
        if topic != in_topic:
            continue
        end = committed.get((topic, p), 0)
        expected = _values(rb, end)
        out = by_tp.get((out_topic, p))
        got = _values(out) if out is not None else []
        where = f"{in_topic}-{p} -> {out_topic}-{p}"
        if end > rb.end:
            found[EXTRA].append(f"{where}: the copier's committed offset {end} is past the input's end {rb.end}")
        want, have = set(expected), Counter(got)
        missing = [v for v in expected if v not in have]
        extra = [v for v in have if v not in want]
        twice = [v for v, n in have.items() if n > 1]
        if missing:
            found[LOST].append(f"{where}: {len(missing)} input values below committed offset {end} not copied: "
                               f"{missing[:_SHOWN]}")
        if extra:
            found[EXTRA].append(f"{where}: {len(extra)} output values not among the input's below {end}: {extra[:_SHOWN]}")
        if twice:
            found[DUPLICATE].append(f"{where}: {len(twice)} values copied more than once: {twice[:_SHOWN]}")
        common = [v for v in got if v in want]
        if not twice and common != [v for v in expected if v in have]:
            found[ORDER].append(f"{where}: output order differs from the input's")
    return found


def check_copy(history: TxnHistory) -> list[CheckResult]:
    """One result per class (none for a history without the Java copier)."""
    if copier_group(history) is None:
        return []
    found = copy_findings(history)
    if found is None:
        return [CheckResult(c, None, 0, 0, "not judged: no read-back or no committed offsets of the copier's group")
                for c in CLASSES]
    group = copier_group(history)
    copied = sum(o.offset for o in history.group_offsets or () if o.group == group)
    observed = {"anomalies": {c: len(found[c]) for c in CLASSES}, "committed_input": copied,
                "read_back": sum(len(rb.records) for rb in history.readback or ())}
    return [CheckResult(c, not found[c], 0, observed,
                        "; ".join(found[c]) if found[c] else f"{_NONE[c]} (the output against the {copied} input "
                                                                f"records below the copier's committed offsets)")
            for c in CLASSES]


_NONE = {LOST: "nothing lost", EXTRA: "nothing extra", DUPLICATE: "no duplicate", ORDER: "in input order"}

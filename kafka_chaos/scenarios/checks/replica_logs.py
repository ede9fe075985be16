"""In-sync replicas' logs agree below the high watermark: an invariant that needs no prediction.

Every offset below a partition's high watermark is committed, and every in-sync replica holds it
as the leader wrote it: the leader advances the high watermark only once each in-sync follower
fetched past it (``Partition.maybeIncrementLeaderHW``), a follower appends the fetched batches
unchanged (``UnifiedLog.appendAsFollower``), and a follower that diverged truncates to the leader's
log (``OffsetsForLeaderEpoch``, KIP-101 and KIP-279) before it can rejoin the ISR. Two in-sync
replicas whose logs differ below it are the symptom of most truncation and replication bugs (a
replica that truncated committed data, a leader that served a divergent log, a high watermark
that moved back — KAFKA-14704).

Pure: judges the blocks :mod:`scenarios.run.log_view` recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.history.replica_logs import BLOCK_OFFSETS, LogBlock, PartitionLogs

CHECK = "replica_logs_agree"


def first_difference(reference: tuple[LogBlock, ...], other: tuple[LogBlock, ...]) -> str | None:
    """Where ``other`` first parts from ``reference``, or None when they are the same."""
    for mine, theirs in zip(reference, other):
        if mine != theirs:
            start = min(mine.start, theirs.start)
            same_offsets = replace(mine, digest=theirs.digest) == theirs
            return (f"offsets {start}-{start + BLOCK_OFFSETS - 1}: {theirs.batches} batch(es) {theirs.first_offset}.."
                    f"{theirs.last_offset} vs {mine.batches} batch(es) {mine.first_offset}..{mine.last_offset}"
                    + (", same offsets, different bytes" if same_offsets else ""))
    if len(reference) != len(other):
        longer, shorter = (reference, other) if len(reference) > len(other) else (other, reference)
        missing = longer[len(shorter)]
        who = "it lacks" if longer is reference else "it has more:"
        return f"{who} offsets {missing.first_offset}..{longer[-1].last_offset}"
    return None


def _reference(logs: PartitionLogs) -> int | None:
    readable = sorted(b for b, r in logs.replicas.items() if not isinstance(r, str))
    return logs.leader if logs.leader in readable else (readable[0] if readable else None)


def check_partition_logs(topic: str, partition: int, logs: PartitionLogs) -> CheckResult:
    """Each readable in-sync replica's blocks against the leader's (or, when the leader's log could
    not be read, the lowest broker's); unknown when a replica could not be read and none differs."""
    reference = _reference(logs)
    observed = {str(b): r if isinstance(r, str) else sum(x.batches for x in r) for b, r in sorted(logs.replicas.items())}
    expected = f"offsets {logs.low}..{logs.high - 1} alike on every in-sync replica"
    if reference is None:
        return CheckResult(CHECK, None, expected, observed, "no replica's log could be read", topic, partition)
    mine = logs.replicas[reference]
    assert not isinstance(mine, str)
    differences = []
    for b, theirs in sorted(logs.replicas.items()):
        if b != reference and not isinstance(theirs, str):
            where = first_difference(mine, theirs)
            if where is not None:
                differences.append(f"broker {b}'s log differs from broker {reference}'s below the high "
                                   f"watermark {logs.high}: {where}")
    if differences:
        return CheckResult(CHECK, False, expected, observed, "; ".join(differences), topic, partition)
    unread = {b: r for b, r in logs.replicas.items() if isinstance(r, str)}
    if unread:
        return CheckResult(CHECK, None, expected, observed,
                           "; ".join(f"broker {b}: {why}" for b, why in sorted(unread.items())), topic, partition)
    batches = sum(x.batches for x in mine)
    return CheckResult(CHECK, True, expected, observed,
                       f"{len(logs.replicas)} replicas alike: {batches} batches in offsets {logs.low}..{logs.high - 1}",
                       topic, partition)


def check_replica_logs(logs: Mapping[str, PartitionLogs]) -> list[CheckResult]:
    """One verdict per compared partition, in ``topic-partition`` order."""
    results = []
    for key, partition_logs in sorted(logs.items()):
        topic, _, number = key.rpartition("-")
        results.append(check_partition_logs(topic, int(number), partition_logs))
    return results

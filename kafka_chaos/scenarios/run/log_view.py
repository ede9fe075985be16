"""The in-sync replicas' logs of each partition once a step settled, read from their segment
files (:mod:`harness.replica_logs`) and summed up in blocks (:mod:`scenarios.history.replica_logs`)
for the ``replica_logs_agree`` check.

The range compared ends at the leader's high watermark, asked (ListOffsets) before the files are
read: every in-sync replica held each offset below it then. Compared: the partitions of the
scenario's topics with a leader and at least two in-sync replicas on live brokers no fault holds (a
paused broker's files say nothing about what it will do). Left out: topics being deleted, and
compacted topics (``cleanup.policy`` with ``compact``: each replica's log cleaner rewrites its own
segments, ``LogCleaner``, so their batches differ by design).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.cluster import Cluster, ReplicaLogReader
from kafka_chaos.harness.metadata import MetadataError, latest_offsets
from kafka_chaos.harness.replica_logs import ReplicaLog, read_replica
from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.scenarios.checks.replica_logs import check_partition_logs
from kafka_chaos.scenarios.history.replica_logs import PartitionLogs, ReplicaBlocks, compared_range, log_blocks

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.5


def compacted(config: Mapping[str, str]) -> bool:
    return "compact" in config.get("cleanup.policy", "")


def compared_replicas(state: PartitionZkState, live: Iterable[int], held: Iterable[int]) -> list[int]:
    """The in-sync replicas whose logs are read: on live brokers no fault holds."""
    live, held = set(live), set(held)
    return [b for b in state.isr if b in live and b not in held]


def _read(reader: ReplicaLogReader, broker: int, topic: str, partition: int) -> ReplicaLog | str:
    try:
        found = read_replica(reader.replica_log_dirs(broker), topic, partition)
    except HarnessError as exc:
        return str(exc)
    return found if found is not None else "no log directory of the partition"


def partition_logs(reader: ReplicaLogReader, topic: str, partition: int, leader: int, brokers: Sequence[int],
                   high_watermark: int | None = None) -> PartitionLogs | None:
    """The replicas' blocks over the range every readable one must hold alike: up to the leader's
    ``high_watermark`` (asked before the files are read), or without it the lowest one their
    brokers checkpointed. None when fewer than two could be read (nothing to compare)."""
    read = {b: _read(reader, b, topic, partition) for b in brokers}
    logs = {b: r for b, r in read.items() if isinstance(r, ReplicaLog)}
    checkpointed = [r.high_watermark for r in logs.values() if r.high_watermark is not None]
    if len(logs) < 2 or (high_watermark is None and len(checkpointed) < len(logs)):
        return None
    low, high = compared_range((r.batches[0].base_offset for r in logs.values() if r.batches),
                               [high_watermark] if high_watermark is not None else checkpointed)
    replicas: dict[int, ReplicaBlocks] = {b: log_blocks(r.batches, low, high) for b, r in logs.items()}
    replicas.update({b: r for b, r in read.items() if isinstance(r, str)})
    return PartitionLogs(leader, low, high, replicas)


# Leader -> {topic: partitions} it leads -> each partition's high watermark (those it answered).
HighWatermarks = Callable[[Mapping[int, Mapping[str, Sequence[int]]]], Mapping[tuple[str, int], int]]


def leaders_high_watermarks(cluster: Cluster, timeout: float = 2.0) -> HighWatermarks:
    """:data:`HighWatermarks` asked of each leader with ListOffsets; a leader that does not answer,
    or answers a partition with an error, leaves it out (its checkpoints bound the range then)."""

    def ask(leaders: Mapping[int, Mapping[str, Sequence[int]]]) -> dict[tuple[str, int], int]:
        found: dict[tuple[str, int], int] = {}
        for leader, partitions in sorted(leaders.items()):
            try:
                answer = latest_offsets(cluster.endpoint(leader).bootstrap, partitions, timeout)
            except (MetadataError, HarnessError) as exc:
                log.debug("high watermarks of broker %d: %s", leader, exc)
                continue
            found.update({k: offset for k, (error, offset) in answer.offsets.items() if error == 0 and offset >= 0})
        return found

    return ask


def compared_partitions(after: ZkSnapshot, topics: Iterable[str], held: Iterable[int]) -> dict[tuple[str, int], list[int]]:
    """(topic, partition) -> the in-sync replicas to read, for each partition compared."""
    wanted = set(topics) - set(after.topics_being_deleted)
    held = tuple(held)
    found: dict[tuple[str, int], list[int]] = {}
    for (topic, partition), state in sorted(after.partitions.items()):
        if topic not in wanted or compacted(after.topic_configs.get(topic, {})) or state.leader < 0:
            continue
        brokers = compared_replicas(state, after.live_brokers, held)
        if len(brokers) >= 2:
            found[(topic, partition)] = brokers
    return found


def _agrees(topic: str, partition: int, logs: PartitionLogs) -> bool:
    return check_partition_logs(topic, partition, logs).passed is True


def replica_logs(reader: ReplicaLogReader, high_watermarks: HighWatermarks, after: ZkSnapshot,
                 topics: Iterable[str], held: Iterable[int], timeout: float) -> dict[str, PartitionLogs]:
    """``"<topic>-<partition>"`` -> its in-sync replicas' logs, for every compared partition.
    A partition whose logs do not agree is read again (its leader's high watermark asked again
    first) until they do or ``timeout`` runs out: a follower the leader just dropped from its ISR
    may still be in the snapshot's, behind the leader's high watermark, until the shrink lands."""
    pending = compared_partitions(after, topics, held)
    found: dict[str, PartitionLogs] = {}

    def read_pending() -> dict[tuple[str, int], list[int]]:
        """Read the pending partitions; the ones whose logs still disagree stay pending."""
        nonlocal pending
        leaders: dict[int, dict[str, list[int]]] = {}
        for topic, partition in pending:
            leaders.setdefault(after.partitions[(topic, partition)].leader, {}).setdefault(topic, []).append(partition)
        watermarks = high_watermarks(leaders)
        disagreeing: dict[tuple[str, int], list[int]] = {}
        for (topic, partition), brokers in pending.items():
            logs = partition_logs(reader, topic, partition, after.partitions[(topic, partition)].leader, brokers,
                                  watermarks.get((topic, partition)))
            if logs is None:
                continue
            found[f"{topic}-{partition}"] = logs
            if not _agrees(topic, partition, logs):
                disagreeing[(topic, partition)] = brokers
        pending = disagreeing
        return pending

    if pending:
        try:
            wait_until(read_pending, timeout=timeout, interval=POLL_INTERVAL_S, accept=lambda left: not left,
                       description="the in-sync replicas' logs to agree")
        except WaitTimeout:
            pass  # the last reads are what the check judges
    log.debug("read the in-sync replicas' logs of %d partitions", len(found))
    return found

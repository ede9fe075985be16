"""The ``durability`` suite: faults below the process (:mod:`scenarios.faults.disks`) on clusters
whose data directories are on the crash-consistency layer (:mod:`harness.lazyfs`), and what
Kafka's contract lets them cost (:mod:`oracle.durability`): a power failure that spares one ISR
member loses nothing acknowledged; one that takes every ISR member may lose the unflushed tails,
counted as permitted; with ``flush.messages=1`` it must lose nothing. Not pinned to a mode:
``--mode kraft`` runs the brokers' power failures on a KRaft cluster (a fenced broker), and leaves
out the controller broker's and the disk errors (ZooKeeper-mode faults here; a KRaft
controller's is ``quorum_leader_power_failure``).

Imported by :mod:`scenarios.plans.catalogue` once its own scenarios are registered.
"""

from __future__ import annotations

from kafka_chaos.harness.config import REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS
from kafka_chaos.scenarios.model.steps import Step, TopicSpec, frozen
from kafka_chaos.scenarios.model.targets import Controller, EarlierTarget, FollowerOf, IsrOf, LeaderOf
from kafka_chaos.scenarios.plans import catalogue as zk
from kafka_chaos.scenarios.plans.spec import ClusterNeeds

DURABILITY_SUITE = zk.DURABILITY_SUITE
LAZY = ClusterNeeds(3, filesystem="lazyfs")
LAZY_TWO_LOG_DIRS = ClusterNeeds(3, ((REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, "1000"),), log_dirs=2,
                                 filesystem="lazyfs")
_SUITES = frozenset({DURABILITY_SUITE})
_HEAL = frozen({"variant": "heal"})


def topic_t_flushed() -> TopicSpec:
    """``t``'s layout, every append fsynced (``flush.messages=1``)."""
    return TopicSpec("t", zk.topic_t().assignment, frozen({"flush.messages": "1"}))


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def leader_power_failure() -> list[Step]:
    """The leader of t-0 loses power (killed, its unsynced writes gone), then starts on what its
    disk kept. To the controller (Kafka 3.9) a hard kill: the session expires, t-0 elects its other ISR member
    (``onBrokerFailure``, epoch +1); that member has every acknowledged record, so nothing
    acknowledged may be lost. The returning broker recovers its log (an unclean shutdown: every
    segment after the recovery point is checked) and catches up as a follower."""
    return [Step("power_failure", LeaderOf("t", 0)), Step("start", EarlierTarget(0))]


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def rack_power_failure() -> list[Step]:
    """Every ISR member of t-0 -- brokers 1 and 2, which hold t-3 too -- loses power at once, then starts.
    Those partitions lose their unflushed tails on both replicas: acknowledged records may be
    lost there (Kafka 3.9's trade-off: ``flush.messages`` is ``Long.MAX_VALUE``; counted in
    ``delivery_power_failure_loss``), nowhere else (broker 3 has every other partition's records)."""
    return [Step("power_failure", IsrOf("t", 0)), Step("start", EarlierTarget(0))]


@zk.scenario(topics=[topic_t_flushed], needs=LAZY, suites=_SUITES)
def rack_power_failure_with_every_append_fsynced() -> list[Step]:
    """As ``rack_power_failure`` with ``flush.messages=1`` on t: Kafka 3.9's ``UnifiedLog.append`` fsyncs every
    append on the leader and the followers before the high watermark passes it, so no
    acknowledged record may be lost even where every ISR member lost power."""
    return [Step("power_failure", IsrOf("t", 0)), Step("start", EarlierTarget(0))]


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def controller_power_failure() -> list[Step]:
    """The controller broker loses power: a controller failover (the survivors race for
    ``/controller``; Kafka 3.9 ``onControllerFailover``) and the offline elections of what it
    led; then it starts again."""
    return [Step("controller_power_failure", Controller()), Step("start", EarlierTarget(0))]


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def leader_disk_stall() -> list[Step]:
    """Every write of t-0's leader takes 200 ms longer for 5 s: appends, and with them produce
    responses, slow down; nothing else may change (Kafka 3.9: no session, heartbeat or ISR rule
    reads the disk's speed), and no acknowledged record may be lost. The clients' produce gap and
    latency during the stall are measured."""
    return [Step("disk_stall", LeaderOf("t", 0), frozen({"op": "write", "delay_ms": 200, "seconds": 5}))]


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def follower_disk_stall() -> list[Step]:
    """Every write of an in-sync follower of t-0 takes a second longer for 10 s: it appends one
    fetched batch a second, yet each fetch still starts at the leader's end offset of the one
    before, so it stays caught up and in the ISR (Kafka 3.9 ``Replica.updateFetchStateOrThrow``);
    producers with ``acks=all`` wait for it, and nothing else changes."""
    return [Step("disk_stall", FollowerOf("t", 0), frozen({"op": "write", "delay_ms": 1000, "seconds": 10}))]


@zk.scenario(topics=[zk.topic_t], needs=LAZY_TWO_LOG_DIRS, suites=_SUITES)
def leader_log_write_error() -> list[Step]:
    """Writes to the segment files of the log directory holding t-0 on its leader fail with EIO.
    The next append there throws (Kafka 3.9 ``LocalLog.append`` in ``maybeHandleIOException``), the
    directory goes offline and the controller moves what it led (``onBrokerLogDirFailure``, as
    ``leader_log_dir_failure``); the heal stops the errors and restarts the broker."""
    return [Step("disk_error", LeaderOf("t", 0), frozen({"topic": "t", "partition": 0, "files": "log"})),
            Step("disk_error", EarlierTarget(0), _HEAL)]


@zk.scenario(topics=[zk.topic_t], needs=LAZY_TWO_LOG_DIRS, suites=_SUITES)
def follower_checkpoint_disk_full() -> list[Step]:
    """The checkpoint files of the log directory holding t-0 on an in-sync follower meet ENOSPC:
    the next high-watermark checkpoint (every second here) fails (Kafka 3.9
    ``CheckpointFileWithFailureHandler.write``), the directory goes offline and its replicas
    leave their ISRs (``onReplicasBecomeOffline``, as ``follower_log_dir_failure``); the heal
    stops the errors and restarts the broker."""
    return [Step("disk_error", FollowerOf("t", 0), frozen({"topic": "t", "partition": 0, "error": "ENOSPC",
                                                           "files": "checkpoint"})),
            Step("disk_error", EarlierTarget(0), _HEAL)]

"""The ``durability`` suite: faults below the process (:mod:`scenarios.faults.disks`) on clusters
whose data directories are on the crash-consistency layer (:mod:`harness.lazyfs`), and what
Kafka's contract lets them cost (:mod:`oracle.durability`): a power failure that spares one ISR
member loses nothing acknowledged; one that takes every ISR member may lose the unflushed tails,
counted as permitted; with ``flush.messages=1`` it must lose nothing. And wall-clock jumps
(:mod:`scenarios.faults.clocks`) on t-0's leader and on the controller, an hour each way: every
time-based rule Kafka applies to data reads the broker's wall clock. Not pinned to a mode:
``--mode kraft`` runs the brokers' power failures on a KRaft cluster (a fenced broker) and the
clock jumps there (the controller's: the active KRaft controller, one voter), and leaves out the
controller broker's power failure and the disk errors (ZooKeeper-mode faults here; a KRaft
controller's is ``quorum_leader_power_failure``).

Imported by :mod:`scenarios.plans.catalogue` once its own scenarios are registered.
"""

from __future__ import annotations

from kafka_chaos.harness.config import REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS
from kafka_chaos.scenarios.faults.clocks import CLOCK_JUMP, MAX_JUMP_S
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


# --- wall-clock jumps ------------------------------------------------------------------------

# An hour, clock_jump's largest (scenarios.faults.clocks.MAX_JUMP_S): far past every timer Kafka 3.9
# runs on the wall clock near replication (request.timeout.ms 30 s, replica.lag.time.max.ms 30 s on
# test clusters), and 24 times short of the shortest time-based rule on data at its default
# (producer.id.expiration.ms, one day): see leader_clock_jump_ahead. Held 20 s, so the leader's
# isr-expiration check (every replica.lag.time.max.ms / 2 = 15 s) runs at least once under it.
CLOCK_JUMP_S = MAX_JUMP_S
CLOCK_HOLD_S = 20


def clock_jump_steps(target: LeaderOf | Controller, seconds: float) -> list[Step]:
    """A jump of ``seconds`` on ``target``'s wall clock, then back onto the host's (itself a jump
    the other way), each held :data:`CLOCK_HOLD_S`."""
    return [Step(CLOCK_JUMP, target, frozen({"seconds": seconds, "hold_s": CLOCK_HOLD_S})),
            Step(CLOCK_JUMP, EarlierTarget(0), frozen({"variant": "heal", "hold_s": CLOCK_HOLD_S}))]


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def leader_clock_jump_ahead() -> list[Step]:
    """t-0's leader's wall clock jumps an hour ahead for 20 s, then back (a jump an hour back, held
    20 s). Kafka 3.9 applies every time-based rule on data by comparing its wall clock
    (``time.milliseconds``) with record timestamps, which the producers stamp with their own, unmoved
    clock -- and every such rule is days long by default, so Kafka must not act on any:

    * retention deletes a segment once ``now - largestTimestamp > retention.ms``
      (``UnifiedLog.deleteRetentionMsBreachedSegments``, 3.9 ``UnifiedLog.scala`` line 1585; 7 days,
      ``LogConfig.DEFAULT_RETENTION_MS`` line 175): no segment may go;
    * a producer's idempotence state expires once ``now - lastTimestamp >= producer.id.expiration.ms``
      (``ProducerStateManager.isProducerExpired`` line 360; one day, ``TransactionLogConfigs`` line 56):
      forgotten, it would let a retried batch in twice -- no duplicate may appear;
    * a segment rolls by time on its records' timestamps, not the clock (``LogSegment.timeWaitedForRoll``
      line 714), and the high-watermark and recovery-point checkpoints run on the scheduler's
      monotonic period (``ReplicaManager.startHighWatermarkCheckPointThread`` line 360,
      ``LogManager.startup`` line 637); the time-based flush (``LogManager.flushDirtyLogs`` line 1497
      compares the wall clock with ``lastFlushTime``) runs every ``log.flush.scheduler.interval.ms``,
      ``Long.MAX_VALUE`` by default (``ServerLogConfigs`` line 92): never.

    So no acknowledged record may be lost or duplicated, and the replicas' logs must agree. What the
    hour does cross: ``request.timeout.ms`` (the leader's fetchers' in-flight requests time out,
    ``NetworkClient``: a reconnect) and ``replica.lag.time.max.ms``: a follower whose log end differs
    from the leader's looks out of sync until its next caught-up fetch stamps ``lastCaughtUpTimeMs``
    with the jumped clock (``Partition.getOutOfSyncReplicas`` line 1309, ``Replica.scala`` line 128),
    so at most a transient ISR shrink and expand, never a settled change and no controller election:
    the oracle predicts no event (leaders and ISRs as before, epochs never back). After the heal those
    ``lastCaughtUpTimeMs`` lie an hour ahead of the clock (kept by a ``max``): for that hour no follower
    of this leader can leave its ISR by lag -- a stuck one would hold ``acks=all`` producers, not
    lose their records.

    What Kafka 3.9 does besides (seed 4471, docs/clocks.md): the jump times out the broker's fetch
    requests in flight, and a failed fetch backs off *every* partition of that fetcher
    (``AbstractFetcherThread.handlePartitionsWithErrors`` -> ``delayPartitions``) with a
    ``DelayedItem`` due at ``Time.SYSTEM.milliseconds + replica.fetch.backoff.ms`` -- the wall
    clock (``DelayedItem.scala`` line 28). A partition's backoff is cleared only by a response with
    records for it, so an idle partition keeps its spent backoff, and the heal puts it an hour in
    the future: the broker stops fetching every partition that was idle, for the hour, and leaves
    the ISR of each one that gets records (its leader's lag rule). Not in the oracle (which
    partitions are idle is the workload's): the failed ISR check comes in whichever later step
    first writes to such a partition -- a later scenario's consumer group on ``__consumer_offsets``.
    Reported upstream as unsafe in apache/kafka#8517 (2020, a monotonic ``DelayedItem``, not
    merged); the 3.9 and trunk ``DelayedItem`` still read ``Time.SYSTEM.milliseconds``."""
    return clock_jump_steps(LeaderOf("t", 0), CLOCK_JUMP_S)


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def leader_clock_jump_back() -> list[Step]:
    """t-0's leader's wall clock jumps an hour back for 20 s, then forward onto the host's. Back,
    Kafka 3.9's time-based rules on data (``leader_clock_jump_ahead``) only come an hour later: no
    segment deleted, no producer expired. The producers' timestamps lie an hour in the leader's
    future, which it must accept: ``log.message.timestamp.after.max.ms`` is ``Long.MAX_VALUE`` in
    3.9 (``ServerLogConfigs`` line 148, checked by ``LogValidator.validateTimestamp``), so no produce
    may fail with ``InvalidTimestampException``. The jump cannot shrink an ISR (``lastCaughtUpTimeMs``
    is a ``max``, ahead of the clock); the heal, a jump an hour forward, is the ahead case (a
    transient shrink and expand at most). No acknowledged record lost, the logs agree, no controller
    event (leaders and ISRs as before)."""
    return clock_jump_steps(LeaderOf("t", 0), -CLOCK_JUMP_S)


@zk.scenario(topics=[zk.topic_t], needs=LAZY, suites=_SUITES)
def controller_clock_jump_ahead() -> list[Step]:
    """The controller's wall clock jumps an hour ahead for 20 s, then back: in ZooKeeper mode the
    controller broker, with ``--mode kraft`` the active KRaft controller (one voter: the clock fault
    refuses a voter of three). Kafka 3.9 must move no leader, fence no broker and lose nothing
    acknowledged:

    * ZooKeeper mode: the controller's session (``ZooKeeperClient``) and the server's expiry run
      on the monotonic clock, and its periodic tasks on the scheduler's monotonic periods (the
      auto leader rebalance, ``KafkaController.scala`` line 500); its requests to brokers may time
      out in flight (``NetworkClient``) and are sent again. As a broker it leads and follows
      partitions: ``leader_clock_jump_ahead``'s rules hold for them, its fetchers' wall-clock
      backoff too (the idle partitions it follows stall for the hour after the heal).
    * KRaft: a broker's session is judged on the controller's monotonic clock
      (``BrokerHeartbeatManager``: ``lastContactNs = time.nanoseconds()`` line 391, checked at line
      354), so no broker is fenced; a single voter's check-quorum never expires
      (``LeaderState.timeUntilCheckQuorumExpires`` line 147); the brokers' long-polling metadata
      fetches wait in a purgatory timed by ``SystemTimer`` (``Time.SYSTEM.hiResClockMs``,
      monotonic). One wall-clock deadline does matter: the Raft accumulator's linger
      (``BatchAccumulator.maybeResetLinger`` line 173, ``time.milliseconds() + linger``, 25 ms), so
      a batch started in the 25 ms before the heal (a jump back) waits up to the hour to be
      written unless a full batch drains it first -- metadata commits stall, heartbeats time out,
      live brokers are fenced (shown with a 1 s linger, docs/clocks.md; passed at 25 ms, seed 4472).

    The oracle predicts no event (leaders, ISRs as before); delivery and the logs' agreement are
    checked."""
    return clock_jump_steps(Controller(), CLOCK_JUMP_S)

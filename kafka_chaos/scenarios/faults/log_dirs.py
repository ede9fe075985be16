"""A failed log directory: one of a broker's ``log.dirs`` made unusable while it runs
(:mod:`harness.log_dirs`: moved aside, a regular file in its place), and its heal, the broker
restarted with the directory repaired.

What Kafka 3.9 does (ZooKeeper mode): the broker's next write under the directory fails
(``CheckpointFileWithFailureHandler.write`` -> ``LogDirFailureChannel.maybeAddOfflineLogDir``),
``ReplicaManager.handleLogDirFailure`` takes the replicas there offline and writes
``/log_dir_event_notification`` (``KafkaZkClient.propagateLogDirEvent``); the controller's
``processLogDirEventNotification`` -> ``onBrokerLogDirFailure`` sends LeaderAndIsr, the broker
answers KAFKA_STORAGE_ERROR for those partitions and ``onReplicasBecomeOffline`` elects new leaders
among their other online ISR members and drops the broker from the followers' ISRs (the oracle's
``LogDirFailure``). A broker whose every directory has failed halts instead
(``LogManager.handleLogDirFailure``: ``Exit.halt(1)``): the oracle's ``BrokerFailure``.

Which partitions a directory holds is Kafka's choice (``LogManager.nextLogDirs``: the directory with
the fewest partitions), so the fault reads it from the broker's directory just before the step
(:meth:`LogDirFailureFault.prepare`). Detection waits for the high-watermark checkpoint
(``replica.high.watermark.checkpoint.interval.ms``, 5 s by default; the catalogue's scenarios set
1 s). Needs the ``log_dir_failure`` capability (``harness.cluster.LogDirFailer``) and brokers with
two ``log.dirs`` (``ClusterNeeds.log_dirs``) for a broker that keeps running.

KRaft (3.7+, metadata.version 3.7-IV2+: KIP-858) is the same on the broker up to the notification:
``ReplicaManager.handleLogDirFailure`` (3.9 branch lines 2471-2524) calls
``directoryEventHandler.handleFailure`` -> ``BrokerLifecycleManager.propagateDirectoryFailure``
(lines 259-265), whose next heartbeat (sent at once: ``OfflineDirEvent``, lines 334-345) lists the
directory in ``offlineLogDirs``; the controller's ``handleDirectoriesOffline``
(ReplicationControlManager.java 3.9 branch lines 1402-1427) runs ``generateLeaderAndIsrUpdates``
removing the broker from the partitions it registered on that directory and drops the directory
from its registration (the oracle's ``LogDirFailure``, :mod:`oracle.kraft.controller`). Unanswered
for ``log.dir.failure.timeout.ms`` (3.8+, default 30 s) the broker shuts itself down
(``OfflineDirBrokerFailureEvent``, lines 347-354). The local KRaft launcher keeps a broker's metadata
log out of the directories that can fail (``harness.config.KRAFT_METADATA_SUBDIR``): a failed
metadata log directory halts the broker (ReplicaManager.scala 3.9 branch lines 2502-2505).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, LogDirFailer
from kafka_chaos.oracle import (
    BrokerFailure,
    BrokerStartup,
    ClusterState,
    ControlledShutdown,
    Event,
    LogDirFailure,
    PartitionPhase,
    TopicPartition,
)
from kafka_chaos.scenarios.faults.base import KRAFT_ONLY, ZOOKEEPER_ONLY, Fault, FaultBase, FaultEnv, StepTopics, register_fault, require_capability
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.ledger import STARTS_NODES, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, Target

log = logging.getLogger(__name__)

KIND = "log_dir_failure"
HEAL = "heal"
_NEEDS = frozenset({Capability.LOG_DIR_FAILURE, Capability.BROKER_CONTROL})
_OPTIONS = frozenset({"topic", "partition", "dir", "variant"})
LOGS_TIMEOUT_S = 15.0
# Not migration mode: a migrating ZooKeeper broker halts on any failed directory
# (oracle.kraft.migration.log_dir_failure_halts), and its cluster has one directory per broker.
_MODES = ZOOKEEPER_ONLY | KRAFT_ONLY


def _one_broker(target: Target, what: str) -> int:
    if len(target.brokers) != 1:
        raise HarnessError(f"{what} acts on one broker, the target is {list(target.brokers)}")
    return target.brokers[0]


def restart_repaired(env: FaultEnv, broker: int) -> None:
    """Put the broker's failed directories back, then restart it: Kafka keeps a failed directory
    offline until the process restarts (``LogManager`` reads ``log.dirs`` only at start-up). The
    repair comes first: on the containers backend the directories are reachable only while the
    container runs. A controlled shutdown (the broker leads nothing on the failed directory)."""
    cluster = require_capability(env, Capability.LOG_DIR_FAILURE, KIND)
    repaired = cast(LogDirFailer, cluster).repair_log_dirs(broker)
    if cluster.broker_running(broker):
        cluster.stop_broker(broker)
    log.info("broker %d: log directories %s repaired, starting it", broker, repaired)
    cluster.start_broker(broker)


def _wait_logs_created(cluster: LogDirFailer, broker: int, state: ClusterState, timeout: float = LOGS_TIMEOUT_S) -> None:
    """Wait (bounded) until the broker has created the log of every replica ``state`` gives it:
    ZooKeeper shows a new partition's ISR as the controller wrote it, and a follower creates its
    log only when its LeaderAndIsr arrives, a moment later (found by benchmarks/log_dir_bench.py:
    a directory listed too early missed two follower replicas). Goes on with what is there."""
    from kafka_chaos.common.waits import WaitTimeout, wait_until

    # Not awaited: a topic being deleted (its logs go) and a partition with no state znode yet
    # (no LeaderAndIsr was sent for it).
    hosted = {(tp.topic, tp.partition) for tp, p in state.partitions()
              if broker in p.replicas and tp.topic not in state.topics_being_deleted
              and p.phase is not PartitionPhase.NEW}

    def missing() -> set[tuple[str, int]]:
        found = {tp for i in range(len(cluster.log_dirs(broker))) for tp in cluster.log_dir_partitions(broker, i)}
        return hosted - found

    try:
        wait_until(missing, timeout=timeout, interval=0.2, accept=lambda left: not left,
                   description=f"broker {broker}'s replica logs")
    except WaitTimeout:
        log.warning("%s: broker %d has no log yet for %s; going on", KIND, broker, sorted(missing()))


@dataclass
class LogDirFailureFault(FaultBase):
    """Fail one log directory of the target broker (one broker); it stays held until healed, by a
    ``variant: heal`` step or at teardown (restart with the directory repaired). Options: ``topic``
    and ``partition`` (default 0): fail the directory holding that partition's replica on the
    target; or ``dir``: the directory's index in ``log.dirs`` (0 = first; default 0)."""

    topic: str | None = None
    partition: int = 0
    directory: int | None = None
    kind: ClassVar[str] = KIND
    mode_support: ClassVar[frozenset[str]] = _MODES
    requires: ClassVar[frozenset[Capability]] = _NEEDS
    _index: int | None = field(default=None, init=False)
    _partitions: tuple[TopicPartition, ...] = field(default=(), init=False)
    _halts: bool = field(default=False, init=False)
    _failed: bool = field(default=False, init=False)

    @property
    def label(self) -> str:
        return KIND

    @property
    def broker(self) -> int:
        return _one_broker(self.target, KIND)

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def offline_replicas(self) -> Mapping[int, frozenset[TopicPartition]]:
        return {} if self._halts or not self._failed else {self.broker: frozenset(self._partitions)}

    def prepare(self, env: FaultEnv, state: ClusterState | None = None) -> None:
        """Which directory fails, the partitions of ``state`` it holds (all it holds when None),
        and whether it is the broker's last live one (then Kafka halts the broker)."""
        cluster = cast(LogDirFailer, require_capability(env, Capability.LOG_DIR_FAILURE, KIND))
        broker = self.broker
        if state is not None:
            _wait_logs_created(cluster, broker, state)
        index = self.directory if self.directory is not None else self._directory_of_partition(cluster, broker)
        held = [TopicPartition(t, p) for t, p in cluster.log_dir_partitions(broker, index)]
        self._index = index
        # Other scenarios' topics, not yet deleted, are no oracle input.
        self._partitions = tuple(tp for tp in held if state is None or state.has_partition(tp))
        self._halts = len(set(cluster.failed_log_dirs(broker)) | {index}) >= len(cluster.log_dirs(broker))
        log.info("%s: broker %d's log directory %d (%s) holds %s%s", KIND, broker, index,
                 cluster.log_dirs(broker)[index], [f"{tp.topic}-{tp.partition}" for tp in self._partitions],
                 "; it is its last: the broker halts" if self._halts else "")

    def _directory_of_partition(self, cluster: LogDirFailer, broker: int) -> int:
        if self.topic is None:
            return 0
        for index in range(len(cluster.log_dirs(broker))):
            if (self.topic, self.partition) in cluster.log_dir_partitions(broker, index):
                return index
        raise HarnessError(f"{KIND}: broker {broker} holds no replica of {self.topic}-{self.partition}")

    def oracle_events(self) -> list[Event]:
        if self._index is None:  # not prepared: the catalogue's validation
            return []
        if self._halts:
            return [BrokerFailure((self.broker,))]
        return [LogDirFailure(self.broker, self._partitions)]

    def inject(self, env: FaultEnv) -> None:
        if self._index is None:
            self.prepare(env)
        assert self._index is not None
        cluster = cast(LogDirFailer, require_capability(env, Capability.LOG_DIR_FAILURE, KIND))
        cluster.fail_log_dir(self.broker, self._index)
        self._failed = True

    def heal(self, env: FaultEnv) -> None:
        if self._failed:
            restart_repaired(env, self.broker)
            self._failed = False


@dataclass
class LogDirRepair(FaultBase):
    """Restart the target broker with its failed log directories repaired (``variant: heal``).
    Oracle events: ``ControlledShutdown`` (when it still runs) then ``BrokerStartup``, which drops
    its entry in ``replicasOnOfflineDirs`` (``onBrokerStartup``): its replicas there rejoin."""

    kind: ClassVar[str] = KIND
    mode_support: ClassVar[frozenset[str]] = _MODES
    requires: ClassVar[frozenset[Capability]] = _NEEDS
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES  # a restart
    _running: bool = field(default=True, init=False)

    @property
    def label(self) -> str:
        return f"{KIND}/{HEAL}"

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    def prepare(self, env: FaultEnv, state: ClusterState | None = None) -> None:
        self._running = bool(env.cluster.broker_running(_one_broker(self.target, f"{KIND}/{HEAL}")))

    def oracle_events(self) -> list[Event]:
        broker = _one_broker(self.target, f"{KIND}/{HEAL}")
        down: list[Event] = [ControlledShutdown(broker)] if self._running else []
        return down + [BrokerStartup((broker,))]

    def inject(self, env: FaultEnv) -> None:
        restart_repaired(env, _one_broker(self.target, f"{KIND}/{HEAL}"))


def log_dir_fault(target: Target, options: Mapping[str, Any], topics: StepTopics) -> Fault:
    """One kind, two classes: ``variant: heal`` builds a :class:`LogDirRepair`, anything else a
    :class:`LogDirFailureFault`."""
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise UsageError(f"{KIND}: unknown option {unknown[0]!r} (expected {', '.join(sorted(_OPTIONS))})")
    variant = options.get("variant")
    if variant == HEAL:
        return LogDirRepair(target)
    if variant not in (None, "fail"):
        raise UsageError(f"{KIND}: 'variant' must be 'fail' or 'heal', not {variant!r}")
    directory = options.get("dir")
    if directory is not None and (isinstance(directory, bool) or not isinstance(directory, int) or directory < 0):
        raise UsageError(f"{KIND}: 'dir' must be a log directory index >= 0, not {directory!r}")
    partition = options.get("partition", 0)
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise UsageError(f"{KIND}: 'partition' must be a partition number, not {partition!r}")
    if "topic" in options and directory is not None:
        raise UsageError(f"{KIND}: give 'topic' (the directory holding it) or 'dir', not both")
    topic = topics.physical(KIND, options) if "topic" in options else None
    return LogDirFailureFault(target, topic, partition, directory)


register_fault(LogDirFailureFault, build=log_dir_fault)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# A schedule that may fail a log directory gives every broker two (the broker keeps running on the
# other) and checkpoints high watermarks every second, so Kafka notices the failed one within
# about a second (as the catalogue's TWO_LOG_DIRS).
GENERATED_CLUSTER = {"replica.high.watermark.checkpoint.interval.ms": "1000"}


def fail_log_dir(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Fail log directory 0 of one free broker (it keeps running on directory 1, its replicas
    there offline), or heal: restart it with the directory repaired."""
    if step.options.get("variant") == HEAL:
        if target is None or len(target) != 1 or target[0] not in model.failed_dir:
            raise IllegalStep(f"heal of {target}: no failed log directory there")
        model.failed_dir.discard(target[0])
        return
    if target is None or len(target) != 1:
        raise IllegalStep("log_dir_failure acts on one named broker")
    # Held like a cut broker; its other directory still serves, so it costs no spare broker.
    hit = model.need_free(step.fault, target, downs=False)
    model.failed_dir |= set(hit)


def _log_dir_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.failed_dir:
        return [Step(KIND, Brokers((draw.rng.choice(sorted(model.failed_dir)),)), {"variant": HEAL})]
    free, _ = model.drawable()
    if free and not model.unknown_down:
        return [Step(KIND, Brokers((draw.rng.choice(free),)), {"dir": 0})]
    return []


register_generator(GeneratorSide(KIND, 1, fail_log_dir, _log_dir_candidates, opt_in=True,
                                 cluster_overrides=GENERATED_CLUSTER, log_dirs=2))

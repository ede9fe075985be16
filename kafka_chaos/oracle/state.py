"""Frozen snapshots of what the ZooKeeper-mode controller knows about a cluster.

A :class:`PartitionState` is the content of ``/brokers/topics/<t>/partitions/<p>/state`` (leader,
ISR, leader epoch, leader recovery state) joined with the partition's assignment from
``/brokers/topics/<t>`` (replicas in AR order plus ``adding_replicas`` / ``removing_replicas``
while a reassignment runs) and the controller's in-memory partition state
(``PartitionStateMachine``: NewPartition / OnlinePartition / OfflinePartition).

In KRaft mode (``ClusterState.mode`` is :attr:`Mode.KRAFT`) a :class:`PartitionState` is the
partition's ``PartitionRegistration`` in the metadata log (``metadata/.../PartitionRegistration.java``):
the same leader, ISR, leader epoch, recovery state and assignment, plus the *partition epoch*,
which every ``PartitionChangeRecord`` bumps by one (``PartitionRegistration.merge``) -- the role the
state znode's ``version`` plays in ZooKeeper mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Hashable, Iterator, Mapping, TypeVar

from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.release import NEWEST, Release

# kafka.api.LeaderAndIsr
NO_LEADER = -1
INITIAL_LEADER_EPOCH = 0
# org.apache.kafka.metadata.LeaderRecoveryState
RECOVERED = 0
RECOVERING = 1


class PartitionPhase(Enum):
    """The controller's partition states (``PartitionStateMachine.scala``); NonExistent is not modelled."""

    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def _distinct(values: tuple[int, ...]) -> bool:
    return len(set(values)) == len(values)


@dataclass(frozen=True)
class PartitionState:
    """Leader, ISR and assignment of one partition.

    ``replicas`` is the full replica set RS in AR order (during a reassignment it is
    ``target ++ (origin - target)``, as ``ReplicaAssignment.reassignTo`` builds it).
    A NEW partition has no state znode yet: leader -1, empty ISR.
    """

    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int
    leader_recovery_state: int = RECOVERED
    phase: PartitionPhase = PartitionPhase.ONLINE
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    # KRaft only: PartitionRegistration.partitionEpoch, +1 per PartitionChangeRecord (a controller
    # change or an accepted AlterPartition), 0 at creation. None = not known / not modelled: the
    # ZooKeeper model never sets it (and a ZOOKEEPER ClusterState refuses it), the KRaft model keeps
    # None as None.
    partition_epoch: int | None = None
    # KRaft only: replicas whose log directory the controller has not been told yet (DirectoryId
    # MIGRATING, which a ZooKeeper migration writes for every replica: ZkTopicMigrationClient,
    # PartitionRegistration(PartitionRecord) 3.9 lines 198-207); a KRaft broker hosting one
    # assigns it (oracle.kraft.controller.assign_directories).
    unassigned_dirs: tuple[int, ...] = ()
    # KRaft only, Kafka 4.x with eligible.leader.replicas.version >= 1 (KIP-966; on by default from
    # 4.1.0): PartitionRegistration.elr and .lastKnownElr (PartitionChangeBuilder 4.1.2
    # maybePopulateTargetElr, maybeUpdateLastKnownLeader).  Empty on every 3.x release.
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("replicas", "isr", "adding_replicas", "removing_replicas", "unassigned_dirs", "elr",
                     "last_known_elr"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))
        if not self.replicas:
            raise ValueError("a partition needs at least one replica")
        if not _distinct(self.replicas):
            raise ValueError(f"duplicate replicas {list(self.replicas)}")
        if not _distinct(self.isr):
            raise ValueError(f"duplicate ISR members {list(self.isr)}")
        if self.leader != NO_LEADER and self.leader not in self.replicas:
            raise ValueError(f"leader {self.leader} is not one of the replicas {list(self.replicas)}")
        if not set(self.isr) <= set(self.replicas):
            raise ValueError(f"ISR {list(self.isr)} is not a subset of the replicas {list(self.replicas)}")
        if not set(self.adding_replicas) | set(self.removing_replicas) <= set(self.replicas):
            raise ValueError("adding/removing replicas must be among the replicas")
        if self.leader_recovery_state not in (RECOVERED, RECOVERING):
            raise ValueError(f"leader_recovery_state must be 0 or 1, not {self.leader_recovery_state}")
        if self.partition_epoch is not None and (isinstance(self.partition_epoch, bool) or self.partition_epoch < 0):
            raise ValueError(f"partition_epoch must be a non-negative integer or None, not {self.partition_epoch!r}")

    # ControllerContext.ReplicaAssignment
    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def has_leader_and_isr(self) -> bool:
        """``controllerContext.partitionLeadershipInfo(tp).isDefined``: a state znode exists."""
        return self.phase is not PartitionPhase.NEW

    @property
    def preferred_replica(self) -> int:
        return self.replicas[0]

    def with_changes(self, **changes: object) -> "PartitionState":
        return replace(self, **changes)  # type: ignore[arg-type]


_K = TypeVar("_K")
_V = TypeVar("_V")


def _frozen_mapping(mapping: Mapping[_K, _V]) -> Mapping[_K, _V]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class TopicState:
    partitions: Mapping[int, PartitionState]
    config: Mapping[str, str] = field(default_factory=dict)  # /config/topics/<t> overrides

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", _frozen_mapping({int(k): v for k, v in self.partitions.items()}))
        object.__setattr__(self, "config", _frozen_mapping(self.config))


@dataclass(frozen=True)
class ClusterState:
    """Live brokers (registered in ``/brokers/ids``), every topic, the controller id if known
    (``None`` = unknown, e.g. after a controller failover) and the controller's broker config.

    ``topics_being_deleted``: topics named under ``/admin/delete_topics`` that still exist (a
    deletion waiting for a replica's broker, ``TopicDeletionManager``).  ``offline_replicas``:
    ``ControllerContext.replicasOnOfflineDirs``, the partitions each live broker reported on a
    failed log directory (a broker's entry is dropped when it fails or restarts)."""

    live_brokers: frozenset[int]
    topics: Mapping[str, TopicState]
    controller: int | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    topics_being_deleted: frozenset[str] = frozenset()
    offline_replicas: Mapping[int, frozenset[TopicPartition]] = field(default_factory=dict)
    # Controller memory carried from one event to the next of a prediction: replicas of topics
    # queued for deletion that the controller deleted (ReplicaDeletionSuccessful) and whose
    # broker is down since. They stay deleted through the broker's failure and restart (neither
    # OfflineReplica, OnlineReplica nor ReplicaDeletionIneligible may follow
    # ReplicaDeletionSuccessful: ReplicaStateMachine.scala 3.9 lines 463-486). An observed state
    # has none: there every replica of a queued topic on an online broker counts as deleted.
    deleted_offline_replicas: frozenset[tuple[TopicPartition, int]] = frozenset()
    # Controller memory too: queued topics the current controller has deleted no replica of — a
    # failover found them ineligible (an offline replica), so its replica states start without
    # ReplicaDeletionSuccessful (ReplicaStateMachine.initializeReplicaState) and the next resume
    # takes their online replicas offline again, writing their ISR removals (onPartitionDeletion,
    # TopicDeletionManager.scala 3.9 lines 284-315). An observed state has none.
    deletions_forgotten: frozenset[str] = frozenset()
    # Controller memory within one prediction: a failover with ``auto.leader.rebalance.enable``
    # scheduled its first leader-imbalance check 5 s later (KafkaController.onControllerFailover ->
    # scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS), KafkaController.scala 3.9), so the
    # check sees what the step's later events did in those seconds -- a paused or restarted
    # controller re-registering -- and runs after the step's last event (``prediction.predict``).
    # A prediction's result and an observed state have none.
    rebalance_check_due: bool = False
    # The release the controller runs (oracle.release): rules that changed between releases
    # follow it, the IBP's default with it.
    release: Release = NEWEST
    # Which controller: ZOOKEEPER (the default; everything above as described) or KRAFT, where
    # ``live_brokers`` are the *active* brokers -- registered, unfenced and not in controlled
    # shutdown (ClusterControlManager.isActive, ClusterControlManager.java 3.9 lines 737-745: the
    # brokers ReplicationControlManager accepts as leaders and puts in new ISRs) -- and
    # ``controller`` is the active controller's node id (a controller node, not a broker) or None.
    # ``config`` is then the active controller's settings. KRaft has no deletion queue and no
    # partition without a registration (NEW).
    mode: Mode = Mode.ZOOKEEPER

    def __post_init__(self) -> None:
        object.__setattr__(self, "live_brokers", frozenset(int(b) for b in self.live_brokers))
        object.__setattr__(self, "topics", _frozen_mapping(self.topics))
        object.__setattr__(self, "config", _frozen_mapping(self.config))
        object.__setattr__(self, "topics_being_deleted", frozenset(self.topics_being_deleted))
        object.__setattr__(self, "deleted_offline_replicas",
                           frozenset((tp, int(b)) for tp, b in self.deleted_offline_replicas))
        object.__setattr__(self, "deletions_forgotten", frozenset(self.deletions_forgotten))
        object.__setattr__(
            self,
            "offline_replicas",
            _frozen_mapping({int(b): frozenset(tps) for b, tps in self.offline_replicas.items() if tps}),
        )
        object.__setattr__(self, "mode", Mode(self.mode))
        if self.rebalance_check_due and self.mode is not Mode.ZOOKEEPER:
            raise ValueError("rebalance_check_due is the ZooKeeper controller's memory (mode zookeeper)")
        if self.mode is Mode.ZOOKEEPER:
            if self.controller is not None and self.controller not in self.live_brokers:
                raise ValueError(f"controller {self.controller} is not a live broker")
            for tp, p in self.partitions():
                if p.partition_epoch is not None:
                    raise ValueError(f"{tp}: partition_epoch is KRaft's (mode kraft); the ZooKeeper model does not predict it")
        else:
            self._check_kraft()
        unknown = sorted(self.topics_being_deleted - set(self.topics))
        if unknown:
            raise ValueError(f"topic {unknown[0]} is being deleted but does not exist")
        if not self.deletions_forgotten <= self.topics_being_deleted:
            raise ValueError(f"topics {sorted(self.deletions_forgotten - self.topics_being_deleted)} are not being deleted")
        for tp, broker in self.deleted_offline_replicas:
            if tp.topic not in self.topics_being_deleted or not self.has_partition(tp) \
                    or broker not in self.partition(tp).replicas:
                raise ValueError(f"{tp} on broker {broker} is no replica of a topic being deleted")
        for broker, tps in self.offline_replicas.items():
            if broker not in self.live_brokers:
                raise ValueError(f"broker {broker} has offline log directories but is not live")
            for tp in tps:
                if not self.has_partition(tp) or broker not in self.partition(tp).replicas:
                    raise ValueError(f"{tp} has no replica on broker {broker}")

    def _check_kraft(self) -> None:
        if self.controller is not None and self.controller < 0:
            raise ValueError(f"controller {self.controller} is not a node id")
        if self.topics_being_deleted or self.deleted_offline_replicas or self.deletions_forgotten:
            raise ValueError("KRaft deletes a topic at once (RemoveTopicRecord): no topic is being deleted")
        for tp, p in self.partitions():
            if p.phase is PartitionPhase.NEW:
                raise ValueError(f"{tp}: every KRaft partition has a registration (no NewPartition)")

    def is_replica_online(self, broker: int, tp: TopicPartition) -> bool:
        """``ControllerContext.isReplicaOnline`` (ControllerContext.scala 3.9 lines 242-248): a
        live broker whose log directory holding ``tp`` has not failed."""
        return broker in self.live_brokers and tp not in self.offline_replicas.get(broker, frozenset())

    def partition(self, tp: TopicPartition | str, partition: int | None = None) -> PartitionState:
        if isinstance(tp, str):
            assert partition is not None
            tp = TopicPartition(tp, partition)
        return self.topics[tp.topic].partitions[tp.partition]

    def has_partition(self, tp: TopicPartition) -> bool:
        topic = self.topics.get(tp.topic)
        return topic is not None and tp.partition in topic.partitions

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionState]]:
        """Every partition, in (topic, partition) order."""
        for topic in sorted(self.topics):
            partitions = self.topics[topic].partitions
            for number in sorted(partitions):
                yield TopicPartition(topic, number), partitions[number]


def initial_phase(leader: int, live_brokers: frozenset[int] | set[int], has_state_znode: bool = True) -> PartitionPhase:
    """The phase a freshly elected controller gives a partition
    (``PartitionStateMachine.initializePartitionState``): New without a state znode, else Online
    when the leader is a live broker, else Offline.  Use it when building states from ZooKeeper."""
    if not has_state_znode:
        return PartitionPhase.NEW
    return PartitionPhase.ONLINE if leader in live_brokers else PartitionPhase.OFFLINE


def state_key(state: ClusterState) -> Hashable:
    """A hashable value equal for equal states (``ClusterState`` holds mappings, so it is not
    hashable itself): for deduplicating alternatives without comparing every pair."""
    return (
        state.mode,
        state.live_brokers,
        state.controller,
        tuple(sorted(state.config.items())),
        tuple((name, tuple(sorted(ts.config.items()))) for name, ts in sorted(state.topics.items())),
        tuple(state.partitions()),
        tuple(sorted(state.topics_being_deleted)),
        tuple(sorted((b, tuple(sorted(tps))) for b, tps in state.offline_replicas.items())),
        tuple(sorted(state.deleted_offline_replicas)),
        tuple(sorted(state.deletions_forgotten)),
        state.rebalance_check_due,
    )

"""The faults and admin operations the oracle can predict, as frozen values.

``KIND`` is the event's name in the ``kafka-chaos predict`` JSON (``{"type": "broker_failure"}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Iterable, Mapping, SupportsInt, Union

from kafka_chaos.oracle.state import TopicPartition


def _ints(values: Iterable[SupportsInt]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


@dataclass(frozen=True)
class BrokerFailure:
    """The brokers' ZooKeeper sessions are gone in one controller event (kill -9 followed by session
    expiry, an expired session, ...).  The controller broker may be among them.

    ``restarting`` (KRaft model only): each broker was SIGKILLed and started again at once (a hard
    ``restart``), so its new incarnation may register in the gap between its old session's expiry
    and the controller's periodic fence -- the registration then cleans up the old incarnation
    instead of a fence (:meth:`oracle.kraft.controller.KRaftController.handle_registration_before_fence`)."""

    brokers: tuple[int, ...]
    restarting: bool = False
    KIND: ClassVar[str] = "broker_failure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", _ints(self.brokers))


@dataclass(frozen=True)
class ControlledShutdown:
    """SIGTERM with ``controlled.shutdown.enable=true``: the controlled-shutdown requests, then the
    broker's exit (its session closes at once, so the controller sees the broker gone)."""

    broker: int
    KIND: ClassVar[str] = "controlled_shutdown"


@dataclass(frozen=True)
class BrokerStartup:
    """The brokers register in ``/brokers/ids`` again (or for the first time).

    ``kraft_brokers`` (KRaft model only): those of ``brokers`` that start as KRaft brokers after
    running as migrating ZooKeeper brokers (the ZooKeeper migration's roll to KRaft): the
    controller stops counting them as ZooKeeper brokers, and each assigns the log directory of
    every replica of its own the controller still has unassigned (:attr:`PartitionState.unassigned_dirs`)."""

    brokers: tuple[int, ...]
    kraft_brokers: tuple[int, ...] = ()
    KIND: ClassVar[str] = "broker_startup"

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", _ints(self.brokers))
        object.__setattr__(self, "kraft_brokers", _ints(self.kraft_brokers))
        if not set(self.kraft_brokers) <= set(self.brokers):
            raise ValueError(f"kraft_brokers {list(self.kraft_brokers)} must be among the starting brokers "
                             f"{list(self.brokers)}")


@dataclass(frozen=True)
class Reassign:
    """A reassignment of one partition to ``replicas`` (the target, in the given order), written to
    ``/admin/reassign_partitions`` (no liveness validation on that path)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    KIND: ClassVar[str] = "reassign"

    def __post_init__(self) -> None:
        object.__setattr__(self, "replicas", _ints(self.replicas))

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class CancelReassignment:
    """KRaft only: AlterPartitionReassignments naming the partition with a null target (KIP-455's
    cancellation), which the controller answers with ``cancelPartitionReassignment``: the
    reassignment in progress reverted in one record -- not a reassignment back to the original
    replicas, as ZooKeeper mode's ``maybeBuildReassignment`` makes it (there, the fault gives the
    oracle a :class:`Reassign` to them) -- or, none in progress, NO_REASSIGNMENT_IN_PROGRESS and
    nothing written (:meth:`oracle.kraft.controller.KRaftController.cancel_partition_reassignment`)."""

    topic: str
    partition: int
    KIND: ClassVar[str] = "cancel_reassignment"

    def __post_init__(self) -> None:
        object.__setattr__(self, "partition", int(self.partition))

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class PreferredElection:
    """Admin ``ElectLeaders(PREFERRED)`` for the given partitions."""

    partitions: tuple[TopicPartition, ...]
    KIND: ClassVar[str] = "preferred_election"

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(self.partitions))


@dataclass(frozen=True)
class UncleanElection:
    """Admin ``ElectLeaders(UNCLEAN)`` for the given partitions."""

    partitions: tuple[TopicPartition, ...]
    KIND: ClassVar[str] = "unclean_election"

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(self.partitions))


@dataclass(frozen=True)
class AutoRebalance:
    """One run of the controller's ``checkAndTriggerAutoLeaderRebalance`` task."""

    KIND: ClassVar[str] = "auto_rebalance"


@dataclass(frozen=True)
class CreateTopic:
    """A topic created with an explicit assignment ``{partition: replicas in AR order}``."""

    topic: str
    replicas: Mapping[int, tuple[int, ...]]
    config: Mapping[str, str] = field(default_factory=dict)
    KIND: ClassVar[str] = "create_topic"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "replicas", MappingProxyType({int(k): _ints(v) for k, v in self.replicas.items()})
        )
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))


@dataclass(frozen=True)
class TopicConfigChange:
    """``kafka-configs --alter --add-config`` on a topic: ``config`` is merged over the topic's
    overrides (a value of None deletes the override)."""

    topic: str
    config: Mapping[str, str | None]
    KIND: ClassVar[str] = "topic_config_change"

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))


@dataclass(frozen=True)
class DeleteTopic:
    """``/admin/delete_topics/<topic>`` created (``AdminClient.deleteTopics``):
    ``processTopicDeletion`` queues it; ``TopicDeletionManager`` deletes it once every replica is
    online, otherwise it waits (ReplicaDeletionIneligible) until a replica's broker returns."""

    topic: str
    KIND: ClassVar[str] = "delete_topic"


@dataclass(frozen=True)
class AddPartitions:
    """``AdminClient.createPartitions`` with an explicit assignment of the *new* partitions
    ``{partition: replicas in AR order}`` (``processPartitionModifications``)."""

    topic: str
    replicas: Mapping[int, tuple[int, ...]]
    KIND: ClassVar[str] = "add_partitions"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "replicas", MappingProxyType({int(k): _ints(v) for k, v in self.replicas.items()})
        )


@dataclass(frozen=True)
class LogDirFailure:
    """A live broker's log directory fails; ``partitions`` are the replicas it held (the broker
    writes ``/log_dir_event_notification``, the controller asks it with LeaderAndIsr and it answers
    KAFKA_STORAGE_ERROR for them).  A broker whose every directory fails halts instead: that is a
    ``BrokerFailure``."""

    broker: int
    partitions: tuple[TopicPartition, ...]
    KIND: ClassVar[str] = "log_dir_failure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(self.partitions))


@dataclass(frozen=True)
class ControllerFailover:
    """KRaft only: the active controller stops leading the metadata quorum (killed, paused, cut
    off, or resigned) and ``controller`` -- another voter, or the same node once it is back, None
    when not known -- becomes the active controller (``QuorumController.claim``).  No partition
    changes and no broker is fenced by it: the new active controller starts every registered
    broker's session afresh (``ClusterControlManager.activate``).  In ZooKeeper mode the
    controller is a broker: its failover is that broker's ``BrokerFailure`` or
    ``ControlledShutdown``, and this event is refused."""

    controller: int | None = None
    KIND: ClassVar[str] = "controller_failover"

    def __post_init__(self) -> None:
        if self.controller is not None:
            object.__setattr__(self, "controller", int(self.controller))


Event = Union[
    BrokerFailure,
    ControlledShutdown,
    BrokerStartup,
    Reassign,
    PreferredElection,
    UncleanElection,
    AutoRebalance,
    CreateTopic,
    TopicConfigChange,
    DeleteTopic,
    AddPartitions,
    LogDirFailure,
    ControllerFailover,
    CancelReassignment,
]

EVENT_TYPES: Mapping[str, type] = MappingProxyType(
    {
        cls.KIND: cls
        for cls in (
            BrokerFailure,
            ControlledShutdown,
            BrokerStartup,
            Reassign,
            PreferredElection,
            UncleanElection,
            AutoRebalance,
            CreateTopic,
            TopicConfigChange,
            DeleteTopic,
            AddPartitions,
            LogDirFailure,
            ControllerFailover,
            CancelReassignment,
        )
    }
)

# Events only a KRaft state (ClusterState.mode kraft) takes; ZooKeeper mode refuses them.
KRAFT_ONLY_EVENTS: frozenset[str] = frozenset({ControllerFailover.KIND, CancelReassignment.KIND})

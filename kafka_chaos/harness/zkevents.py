"""What the ZooKeeper watches saw, as typed values: one frozen dataclass per kind of change.

Every event has ``at`` (``time.time()`` when the watch callback ran) and a ``kind`` string
(class-level; the strings are the ones the observer has always used, so records and queries
keep working); ``broker_id``, ``topic`` and ``partition`` answer on every class (``None``
where the event has no such thing), so queries can filter any event the same way.

:func:`event_to_dict` / :func:`event_from_dict` are a lossless, kind-tagged JSON round trip,
for histories stored on disk.

Deletions are events of their own (:class:`PartitionStateDeleted`, :class:`TopicDeleted`), not
a state or assignment event without data: a reader of ``PartitionStateWritten`` always has a
leader and an ISR.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness import zkpaths

# The ``kind`` strings.
BROKER_REGISTERED = "broker_registered"
BROKER_GONE = "broker_gone"
CONTROLLER_CHANGED = "controller_changed"
PARTITION_STATE = "partition_state"
PARTITION_STATE_DELETED = "partition_state_deleted"
TOPIC_ASSIGNMENT = "topic_assignment"
TOPIC_DELETED = "topic_deleted"
TOPIC_CONFIG = "topic_config"
REASSIGNMENT = "reassignment"  # /admin/reassign_partitions appeared or went
PREFERRED_ELECTION = "preferred_election"  # /admin/preferred_replica_election appeared or went

# Admin znode path -> the kind of its AdminZnodeChanged events.
ADMIN_ZNODE_KINDS: Mapping[str, str] = {
    zkpaths.REASSIGN_PARTITIONS: REASSIGNMENT,
    zkpaths.PREFERRED_REPLICA_ELECTION: PREFERRED_ELECTION,
}

JsonDict: TypeAlias = dict[str, Any]


class EventFormatError(HarnessError):
    """A stored event is not one this version can read."""


def _replica_map_to_json(m: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(m.items())}


def _replica_map_from_json(m: Mapping[str, Any]) -> dict[int, tuple[int, ...]]:
    return {int(p): tuple(int(b) for b in r) for p, r in m.items()}


@dataclass(frozen=True)
class BrokerRegistered:
    """``/brokers/ids/<id>`` appeared."""

    kind: ClassVar[str] = BROKER_REGISTERED
    topic: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    broker_id: int

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "broker_id": self.broker_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BrokerRegistered:
        return cls(at=float(d["at"]), broker_id=int(d["broker_id"]))


@dataclass(frozen=True)
class BrokerGone:
    """``/brokers/ids/<id>`` went (the broker's session closed or expired)."""

    kind: ClassVar[str] = BROKER_GONE
    topic: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    broker_id: int

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "broker_id": self.broker_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BrokerGone:
        return cls(at=float(d["at"]), broker_id=int(d["broker_id"]))


@dataclass(frozen=True)
class ControllerChanged:
    """``/controller`` was written (an election, even one the same broker won again) or
    removed (``controller`` None)."""

    kind: ClassVar[str] = CONTROLLER_CHANGED
    topic: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    controller: int | None

    @property
    def broker_id(self) -> int | None:
        return self.controller

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "controller": self.controller}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ControllerChanged:
        controller = d["controller"]
        return cls(at=float(d["at"]), controller=None if controller is None else int(controller))


@dataclass(frozen=True)
class PartitionStateWritten:
    """A partition's ``state`` znode was written (leader, ISR, epochs)."""

    kind: ClassVar[str] = PARTITION_STATE
    broker_id: ClassVar[None] = None
    at: float
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int
    version: int  # the znode's version after this write
    # KRaft: whether the leader written was an active broker (registered, unfenced, not in
    # controlled shutdown) in the metadata log at this record; None: not known (ZooKeeper mode,
    # no leader, a broker the log has no registration of, or a history written before it).
    leader_active: bool | None = None

    def to_dict(self) -> JsonDict:
        active = {} if self.leader_active is None else {"leader_active": self.leader_active}  # old shape kept
        return {"kind": self.kind, "at": self.at, "topic": self.topic, "partition": self.partition,
                "leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "controller_epoch": self.controller_epoch,
                "leader_recovery_state": self.leader_recovery_state, "version": self.version, **active}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PartitionStateWritten:
        active = d.get("leader_active")
        return cls(at=float(d["at"]), topic=str(d["topic"]), partition=int(d["partition"]),
                   leader=int(d["leader"]), leader_epoch=int(d["leader_epoch"]),
                   isr=tuple(int(b) for b in d["isr"]), controller_epoch=int(d["controller_epoch"]),
                   leader_recovery_state=int(d["leader_recovery_state"]), version=int(d["version"]),
                   leader_active=None if active is None else bool(active))


@dataclass(frozen=True)
class PartitionStateDeleted:
    """A partition's ``state`` znode went (topic deletion)."""

    kind: ClassVar[str] = PARTITION_STATE_DELETED
    broker_id: ClassVar[None] = None
    at: float
    topic: str
    partition: int

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "topic": self.topic, "partition": self.partition}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PartitionStateDeleted:
        return cls(at=float(d["at"]), topic=str(d["topic"]), partition=int(d["partition"]))


@dataclass(frozen=True)
class TopicAssignmentChanged:
    """``/brokers/topics/<t>`` was written: created, partitions added, or a reassignment's
    adding/removing replicas changed."""

    kind: ClassVar[str] = TOPIC_ASSIGNMENT
    broker_id: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    topic: str
    partitions: Mapping[int, tuple[int, ...]]  # partition -> replicas in AR order
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    version: int = -1

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "topic": self.topic,
                "partitions": _replica_map_to_json(self.partitions),
                "adding_replicas": _replica_map_to_json(self.adding_replicas),
                "removing_replicas": _replica_map_to_json(self.removing_replicas),
                "version": self.version}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TopicAssignmentChanged:
        return cls(at=float(d["at"]), topic=str(d["topic"]),
                   partitions=_replica_map_from_json(d["partitions"]),
                   adding_replicas=_replica_map_from_json(d["adding_replicas"]),
                   removing_replicas=_replica_map_from_json(d["removing_replicas"]),
                   version=int(d["version"]))


@dataclass(frozen=True)
class TopicDeleted:
    """``/brokers/topics/<t>`` went."""

    kind: ClassVar[str] = TOPIC_DELETED
    broker_id: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    topic: str

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "topic": self.topic}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TopicDeleted:
        return cls(at=float(d["at"]), topic=str(d["topic"]))


@dataclass(frozen=True)
class TopicConfigChanged:
    """``/config/topics/<t>`` was written (or removed: ``config`` empty)."""

    kind: ClassVar[str] = TOPIC_CONFIG
    broker_id: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    topic: str
    config: Mapping[str, str]

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "topic": self.topic, "config": dict(sorted(self.config.items()))}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TopicConfigChanged:
        return cls(at=float(d["at"]), topic=str(d["topic"]),
                   config={str(k): str(v) for k, v in d["config"].items()})


@dataclass(frozen=True)
class AdminZnodeChanged:
    """An admin request znode appeared (``pending``) or went (the controller finished it).
    Its ``kind`` depends on the znode (:data:`ADMIN_ZNODE_KINDS`): one class, two kinds."""

    broker_id: ClassVar[None] = None
    topic: ClassVar[None] = None
    partition: ClassVar[None] = None
    at: float
    znode: str  # a key of ADMIN_ZNODE_KINDS
    pending: bool

    def __post_init__(self) -> None:
        if self.znode not in ADMIN_ZNODE_KINDS:
            raise ValueError(f"{self.znode!r} is not an admin znode the observer watches "
                             f"({', '.join(ADMIN_ZNODE_KINDS)})")

    @property
    def kind(self) -> str:
        return ADMIN_ZNODE_KINDS[self.znode]

    def to_dict(self) -> JsonDict:
        return {"kind": self.kind, "at": self.at, "znode": self.znode, "pending": self.pending}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AdminZnodeChanged:
        pending = d["pending"]
        if not isinstance(pending, bool):
            raise EventFormatError(f"admin znode event: pending must be true or false, not {pending!r}")
        return cls(at=float(d["at"]), znode=str(d["znode"]), pending=pending)


ZkEvent: TypeAlias = (BrokerRegistered | BrokerGone | ControllerChanged | PartitionStateWritten
                      | PartitionStateDeleted | TopicAssignmentChanged | TopicDeleted
                      | TopicConfigChanged | AdminZnodeChanged)

_BY_KIND: Mapping[str, Any] = {
    BROKER_REGISTERED: BrokerRegistered,
    BROKER_GONE: BrokerGone,
    CONTROLLER_CHANGED: ControllerChanged,
    PARTITION_STATE: PartitionStateWritten,
    PARTITION_STATE_DELETED: PartitionStateDeleted,
    TOPIC_ASSIGNMENT: TopicAssignmentChanged,
    TOPIC_DELETED: TopicDeleted,
    TOPIC_CONFIG: TopicConfigChanged,
    REASSIGNMENT: AdminZnodeChanged,
    PREFERRED_ELECTION: AdminZnodeChanged,
}
EVENT_KINDS = frozenset(_BY_KIND)


def event_to_dict(event: ZkEvent) -> JsonDict:
    """A JSON-ready dict tagged with ``kind``; :func:`event_from_dict` reads it back equal."""
    return event.to_dict()


def event_from_dict(d: Mapping[str, Any]) -> ZkEvent:
    """The event :func:`event_to_dict` wrote.  Raises :class:`EventFormatError` naming what is
    wrong when ``d`` is not such a dict."""
    kind = d.get("kind") if isinstance(d, Mapping) else None
    cls = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise EventFormatError(f"unknown ZooKeeper event kind {kind!r}: expected one of "
                               f"{', '.join(sorted(_BY_KIND))}")
    try:
        event: ZkEvent = cls.from_dict(d)
    except (KeyError, TypeError, ValueError) as exc:
        raise EventFormatError(f"damaged {kind} event {dict(d)!r}: {type(exc).__name__}: {exc}") from exc
    if event.kind != kind:
        raise EventFormatError(f"event tagged {kind!r} is a {event.kind} event: {dict(d)!r}")
    return event


class EventLog:
    """The events recorded so far, bounded (the oldest go first, for long chaos runs), with the
    queries scenarios time faults by.  Not locked itself: its owner
    (:class:`harness.observer.ZkObserver`) holds one lock around every use."""

    def __init__(self, max_events: int) -> None:
        self._events: deque[ZkEvent] = deque(maxlen=max_events)

    def __len__(self) -> int:
        return len(self._events)

    def append(self, event: ZkEvent) -> None:
        self._events.append(event)

    def since(self, t: float) -> list[ZkEvent]:
        """Events stamped at or after ``t``, oldest first.  (Callbacks run on two threads, so
        the order of recording may differ from the order of the stamps by a few microseconds.)"""
        return sorted((e for e in self._events if e.at >= t), key=lambda e: e.at)

    def first(self, kind: str, *, after: float, broker_id: int | None = None,
              topic: str | None = None, partition: int | None = None,
              where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent | None:
        """The earliest-stamped event of ``kind`` at or after ``after`` matching every filter."""
        found: ZkEvent | None = None
        for event in self._events:
            if (event.at >= after and event.kind == kind
                    and (found is None or event.at < found.at)
                    and (broker_id is None or event.broker_id == broker_id)
                    and (topic is None or event.topic == topic)
                    and (partition is None or event.partition == partition)
                    and (where is None or where(event))):
                found = event
        return found

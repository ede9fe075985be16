"""The KRaft controller's view of the cluster, replayed from its metadata log records
(:mod:`.records`) the way the controller and every broker replay them, and shown as the same
:class:`harness.zksnapshot.ZkSnapshot` the ZooKeeper observer reads, so the oracle's input, the
checks and ``history.jsonl`` work on both modes:

* ``live_brokers``: registered, unfenced and not in controlled shutdown -- the brokers 3.9's
  ``ClusterControlManager.isActive`` lets lead -- with their broker epoch;
* ``controller`` / ``controller_epoch``: the quorum's leader and epoch (LEADER_CHANGE);
* a partition's ``version``: its partition epoch, the znode version's counterpart (every change
  bumps it: ``PartitionRegistration.merge``, 3.9 line 277);
* ``leader_epoch``: +1 whenever a PartitionChangeRecord names a leader, the same one included
  (``PartitionRegistration.merge`` lines 257-263: that is how ``PartitionChangeBuilder`` bumps
  the epoch without a new leader).

Every change also becomes the event the ZooKeeper watches would have given (fenced: broker gone,
unfenced: registered, a partition's new leader/ISR: a state write), stamped with the active
controller's append time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from kafka_chaos.harness.kraft.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChanged,
    ConfigChanged,
    ElrCleared,
    FeatureLevel,
    FenceBroker,
    LeaderChange,
    LogEntry,
    PartitionChanged,
    PartitionCreated,
    RegisterBroker,
    TopicCreated,
    TopicRemoved,
    UnfenceBroker,
    UnregisterBroker,
    ZkMigrationStateChanged,
)
from kafka_chaos.harness.zkevents import (
    BrokerGone,
    BrokerRegistered,
    ControllerChanged,
    PartitionStateWritten,
    TopicConfigChanged,
    TopicDeleted,
    ZkEvent,
)
from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool

    @property
    def active(self) -> bool:
        """``BrokerRegistration``'s fenced/inControlledShutdown as 3.9's ``ClusterControlManager
        .isActive`` reads them: what may lead a partition."""
        return not self.fenced and not self.in_controlled_shutdown


@dataclass(frozen=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing: tuple[int, ...]
    adding: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    unassigned_dirs: tuple[bool, ...] = ()  # per replica: directory MIGRATING/UNASSIGNED
    # KIP-966 (Kafka 4.x with eligible.leader.replicas.version 1: on by default from 4.1.0)
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @property
    def unassigned_replicas(self) -> tuple[int, ...]:
        return tuple(b for b, unassigned in zip(self.replicas, self.unassigned_dirs) if unassigned)

    def merge(self, change: PartitionChanged) -> PartitionRegistration:
        """``PartitionRegistration.merge(PartitionChangeRecord)`` (3.9 lines 241-280)."""
        named = change.leader != NO_LEADER_CHANGE
        return PartitionRegistration(
            replicas=self.replicas if change.replicas is None else change.replicas,
            isr=self.isr if change.isr is None else change.isr,
            removing=self.removing if change.removing is None else change.removing,
            adding=self.adding if change.adding is None else change.adding,
            leader=change.leader if named else self.leader,
            # LeaderRecoveryState.changeTo: -1 keeps the state
            leader_recovery_state=(self.leader_recovery_state if change.leader_recovery_state < 0
                                   else change.leader_recovery_state),
            leader_epoch=self.leader_epoch + 1 if named else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            unassigned_dirs=self._dirs_after(change),
            # PartitionRegistration.merge 4.1.0 lines 266-267: null keeps them
            elr=self.elr if change.elr is None else change.elr,
            last_known_elr=self.last_known_elr if change.last_known_elr is None else change.last_known_elr)

    def without_elr(self) -> PartitionRegistration | None:
        """``ReplicationControlManager.removeTopicElrs`` (4.1.0 lines 603-618): a partition with an
        ELR or a last known ELR is merged with both empty (its partition epoch +1, leader and ISR
        kept); None for one with neither (no change)."""
        if not self.elr and not self.last_known_elr:
            return None
        return replace(self, elr=(), last_known_elr=(), partition_epoch=self.partition_epoch + 1)

    def _dirs_after(self, change: PartitionChanged) -> tuple[bool, ...]:
        """``PartitionRegistration.merge`` (3.9 lines 241-248): the record's directories when it has
        them, else the old ones; all MIGRATING (or none) stays all MIGRATING for the new replica
        count. (A new replica list without directories keeps each surviving replica's here:
        Kafka keeps the old array as is, which its builders never leave stale.)"""
        replicas = self.replicas if change.replicas is None else change.replicas
        dirs = self.unassigned_dirs if change.unassigned_dirs is None else change.unassigned_dirs
        if not dirs or all(dirs):  # PartitionRegistration.defaultToMigrating (lines 186-203)
            return (True,) * len(replicas)
        if change.unassigned_dirs is not None or change.replicas is None:
            return dirs
        was = dict(zip(self.replicas, dirs))
        return tuple(was.get(b, False) for b in replicas)


class MetadataImage:
    """Replays log entries in offset order; :meth:`snapshot` shows the result."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerRegistration] = {}
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.partitions: dict[tuple[str, int], PartitionRegistration] = {}  # (topic id, partition)
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.quorum_leader: int | None = None
        self.quorum_epoch: int | None = None
        # the epoch's LEADER_CHANGE append time: a 4.x controller's periodic balances count from it
        self.quorum_epoch_at: float | None = None
        self.next_offset = 0
        self.last_at: float | None = None
        # the last ZkMigrationStateRecord's value (None: none written, a cluster never migrated)
        self.zk_migration_state: int | None = None
        # finalized feature levels (FeatureLevelRecord): metadata.version's level, and on 4.x
        # eligible.leader.replicas.version (KIP-966: 0 on 4.0's defaults, 1 from 4.1's), the
        # switch of the ELR rules the 3.9 model lacks
        self.features: dict[str, int] = {}

    def apply_all(self, entries: Iterable[LogEntry]) -> list[ZkEvent]:
        events: list[ZkEvent] = []
        for entry in entries:
            events.extend(self.apply(entry))
        return events

    def apply(self, entry: LogEntry) -> list[ZkEvent]:
        """Replay one entry (entries at offsets already replayed are ignored); the events it makes."""
        if entry.offset < self.next_offset:
            return []
        self.next_offset = entry.offset + 1
        self.last_at = entry.at
        record, at = entry.record, entry.at
        if isinstance(record, LeaderChange):
            self.quorum_leader, self.quorum_epoch, self.quorum_epoch_at = record.leader_id, entry.epoch, at
            return [ControllerChanged(at, record.leader_id)]
        if isinstance(record, (RegisterBroker, UnregisterBroker, FenceBroker, UnfenceBroker,
                               BrokerRegistrationChanged)):
            return self._broker(record, at)
        if isinstance(record, ZkMigrationStateChanged):
            self.zk_migration_state = record.state
            return []
        if isinstance(record, TopicCreated):
            self.topic_names[record.topic_id] = record.name
            return []
        if isinstance(record, TopicRemoved):
            return self._remove_topic(record.topic_id, at)
        if isinstance(record, ConfigChanged):
            return self._config(record, at)
        if isinstance(record, FeatureLevel):
            self.features[record.name] = record.level
            return []
        if isinstance(record, ElrCleared):
            return self._clear_elr(record.topic_name, at)
        if isinstance(record, PartitionCreated):
            created = PartitionRegistration(record.replicas, record.isr, record.removing, record.adding,
                                            record.leader, record.leader_recovery_state, record.leader_epoch,
                                            record.partition_epoch, record.unassigned_dirs, record.elr,
                                            record.last_known_elr)
            return self._set_partition(record.topic_id, record.partition, created, at)
        old = self.partitions.get((record.topic_id, record.partition))
        if old is None:  # a change of a partition this image never saw created: a log gap
            return []
        return self._set_partition(record.topic_id, record.partition, old.merge(record), at)

    def _broker(self, record: RegisterBroker | UnregisterBroker | FenceBroker | UnfenceBroker
                | BrokerRegistrationChanged, at: float) -> list[ZkEvent]:
        was = self.brokers.get(record.broker_id)
        if isinstance(record, RegisterBroker):
            now: BrokerRegistration | None = BrokerRegistration(record.broker_id, record.epoch, record.fenced,
                                                                record.in_controlled_shutdown)
        elif isinstance(record, UnregisterBroker):
            now = None
        elif was is None:
            return []
        elif isinstance(record, FenceBroker):
            now = replace(was, fenced=True)
        elif isinstance(record, UnfenceBroker):
            now = replace(was, fenced=False)
        else:
            now = replace(was, fenced=was.fenced if record.fenced == 0 else record.fenced > 0,
                          in_controlled_shutdown=was.in_controlled_shutdown or record.in_controlled_shutdown > 0)
        if now is None:
            self.brokers.pop(record.broker_id, None)
        else:
            self.brokers[record.broker_id] = now
        was_active, is_active = was is not None and was.active, now is not None and now.active
        if was_active and not is_active:
            return [BrokerGone(at, record.broker_id)]
        if is_active and not was_active:
            return [BrokerRegistered(at, record.broker_id)]
        return []

    def _clear_elr(self, topic_name: str, at: float) -> list[ZkEvent]:
        """``replay(ClearElrRecord)`` (ReplicationControlManager 4.1.0 lines 571-601): the named
        topic's partitions, or every topic's for "" (an unknown name: none)."""
        events: list[ZkEvent] = []
        for (topic_id, number), p in sorted(self.partitions.items()):
            if topic_name and self.topic_names.get(topic_id) != topic_name:
                continue
            cleared = p.without_elr()
            if cleared is not None:
                events += self._set_partition(topic_id, number, cleared, at)
        return events

    def _remove_topic(self, topic_id: str, at: float) -> list[ZkEvent]:
        name = self.topic_names.pop(topic_id, None)
        for key in [k for k in self.partitions if k[0] == topic_id]:
            del self.partitions[key]
        if name is None:
            return []
        self.topic_configs.pop(name, None)
        return [TopicDeleted(at, name)]

    def _config(self, record: ConfigChanged, at: float) -> list[ZkEvent]:
        if record.resource_type != TOPIC_RESOURCE or not record.resource_name:
            return []
        config = self.topic_configs.setdefault(record.resource_name, {})
        if record.value is None:
            config.pop(record.name, None)
        else:
            config[record.name] = record.value
        return [TopicConfigChanged(at, record.resource_name, dict(config))]

    def _set_partition(self, topic_id: str, partition: int, now: PartitionRegistration, at: float) -> list[ZkEvent]:
        self.partitions[(topic_id, partition)] = now
        name = self.topic_names.get(topic_id)
        if name is None:
            return []
        return [PartitionStateWritten(at=at, topic=name, partition=partition, leader=now.leader,
                                      leader_epoch=now.leader_epoch, isr=now.isr,
                                      controller_epoch=self.quorum_epoch if self.quorum_epoch is not None else -1,
                                      leader_recovery_state=now.leader_recovery_state,
                                      version=now.partition_epoch, leader_active=self._active(now.leader))]

    def _active(self, broker: int) -> bool | None:
        """Whether ``broker`` may lead at this point of the log (``ClusterControlManager.isActive``);
        None for no leader or a broker the log has no registration of (an image started past it)."""
        registration = self.brokers.get(broker) if broker >= 0 else None
        return None if registration is None else registration.active

    def snapshot(self, topics: frozenset[str] | None, taken_at: float) -> ZkSnapshot:
        """What ZooKeeper would show, for ``topics`` (None: every topic)."""
        epoch = self.quorum_epoch if self.quorum_epoch is not None else -1
        partitions: dict[tuple[str, int], PartitionZkState] = {}
        ids: dict[str, str | None] = {}
        for (topic_id, number), p in self.partitions.items():
            name = self.topic_names.get(topic_id)
            if name is None or (topics is not None and name not in topics):
                continue
            ids[name] = topic_id
            partitions[(name, number)] = PartitionZkState(
                topic=name, partition=number, replicas=p.replicas, leader=p.leader, leader_epoch=p.leader_epoch,
                isr=p.isr, controller_epoch=epoch, leader_recovery_state=p.leader_recovery_state,
                version=p.partition_epoch, adding_replicas=p.adding, removing_replicas=p.removing,
                unassigned_dirs=p.unassigned_replicas, elr=p.elr, last_known_elr=p.last_known_elr)
        shown = set(ids)
        return ZkSnapshot(
            taken_at=taken_at,
            live_brokers={b: r.epoch for b, r in sorted(self.brokers.items()) if r.active},
            controller=self.quorum_leader,
            controller_epoch=self.quorum_epoch,
            controller_elected_at=self.quorum_epoch_at,
            partitions=partitions,
            topic_configs={t: dict(c) for t, c in self.topic_configs.items() if t in shown},
            # AlterPartitionReassignments keeps no pending znode: adding/removing replicas show it
            pending_reassignment=any(p.adding or p.removing for p in self.partitions.values()),
            pending_preferred_election=False,
            topic_ids=ids,
            topics_being_deleted=frozenset(),  # a KRaft deletion is one RemoveTopicRecord
            mode="kraft",
            features=dict(self.features),
        )

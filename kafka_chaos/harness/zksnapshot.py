"""ZooKeeper's state read in one pass: :class:`ZkSnapshot` and :class:`PartitionZkState`
(frozen values with a lossless JSON round trip, ``to_dict``/``from_dict``), and
:class:`SnapshotReader`, which reads them with a few pipelined round trips."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness import zkpaths
from kafka_chaos.harness.zkclient import ZkUnavailable

NO_LEADER = -1
# /admin/delete_topics/<t>: AdminClient deleteTopics writes it, the controller removes it once the
# topic is gone (TopicDeletionManager.completeDeleteTopic) -- a child names a deletion in flight.
DELETE_TOPICS = "/admin/delete_topics"


class UnknownPartition(HarnessError, LookupError):
    """The snapshot holds no such partition (topic not created yet, or not observed)."""


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, not {value!r}")
    return value


@dataclass(frozen=True)
class PartitionZkState:
    """One partition as ZooKeeper has it: assignment from the topic znode, the rest from ``state``."""

    topic: str
    partition: int
    replicas: tuple[int, ...]  # AR order; replicas[0] is the preferred leader
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int  # 0 unless the znode says 1 (RECOVERING, after unclean election)
    version: int  # state znode version; -1 when there is no state znode yet
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    # KRaft: replicas whose log directory the controller has not been told yet (MIGRATING after a
    # ZooKeeper migration, UNASSIGNED); ZooKeeper knows no directories
    unassigned_dirs: tuple[int, ...] = ()
    # KRaft on Kafka 4.x with ELR on (KIP-966): eligible leader replicas and last known ELR
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def describe(self) -> str:
        extra = ""
        if self.leader_recovery_state:
            extra += f" recovery={self.leader_recovery_state}"
        if self.adding_replicas or self.removing_replicas:
            extra += f" adding={list(self.adding_replicas)} removing={list(self.removing_replicas)}"
        if self.elr or self.last_known_elr:
            extra += f" elr={list(self.elr)} lke={list(self.last_known_elr)}"
        return (f"{self.topic}-{self.partition}: replicas={list(self.replicas)} leader={self.leader} "
                f"epoch={self.leader_epoch} isr={list(self.isr)} v{self.version}{extra}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` reads it back equal."""
        return {"topic": self.topic, "partition": self.partition, "replicas": list(self.replicas),
                "leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "controller_epoch": self.controller_epoch,
                "leader_recovery_state": self.leader_recovery_state, "version": self.version,
                "adding_replicas": list(self.adding_replicas),
                "removing_replicas": list(self.removing_replicas),
                **({"unassigned_dirs": list(self.unassigned_dirs)} if self.unassigned_dirs else {}),
                **({"elr": list(self.elr)} if self.elr else {}),
                **({"last_known_elr": list(self.last_known_elr)} if self.last_known_elr else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PartitionZkState:
        return cls(topic=str(d["topic"]), partition=int(d["partition"]), replicas=_ints(d["replicas"]),
                   leader=int(d["leader"]), leader_epoch=int(d["leader_epoch"]), isr=_ints(d["isr"]),
                   controller_epoch=int(d["controller_epoch"]),
                   leader_recovery_state=int(d["leader_recovery_state"]), version=int(d["version"]),
                   adding_replicas=_ints(d["adding_replicas"]),
                   removing_replicas=_ints(d["removing_replicas"]),
                   unassigned_dirs=_ints(d.get("unassigned_dirs", ())),
                   elr=_ints(d.get("elr", ())), last_known_elr=_ints(d.get("last_known_elr", ())))


def partition_zk_state(topic: str, partition: int, assignment: zkpaths.TopicAssignment,
                       state: zkpaths.LeaderIsrState | None, version: int) -> PartitionZkState:
    """Join a topic znode's replica list with a (possibly missing) state znode.

    Kafka writes no state znode while no replica of a new partition is live (doc §1.6): that
    reads as leader -1, epoch -1, empty ISR, version -1.
    """
    if state is None:
        state, version = zkpaths.LeaderIsrState(leader=NO_LEADER, leader_epoch=-1, isr=(),
                                                controller_epoch=-1), -1
    return PartitionZkState(
        topic=topic, partition=partition,
        replicas=assignment.partitions.get(partition, ()),
        leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
        controller_epoch=state.controller_epoch, leader_recovery_state=state.leader_recovery_state,
        version=version,
        adding_replicas=assignment.adding_replicas.get(partition, ()),
        removing_replicas=assignment.removing_replicas.get(partition, ()),
    )


@dataclass(frozen=True)
class ZkSnapshot:
    """Everything read from ZooKeeper in one pass (a few pipelined round trips, not atomic)."""

    taken_at: float  # time.time()
    live_brokers: Mapping[int, int]  # broker id -> broker epoch (czxid of /brokers/ids/N)
    controller: int | None
    controller_epoch: int | None
    partitions: Mapping[tuple[str, int], PartitionZkState]
    topic_configs: Mapping[str, Mapping[str, str]]  # /config/topics/<t>; {} when none
    pending_reassignment: bool  # /admin/reassign_partitions exists
    pending_preferred_election: bool = False  # /admin/preferred_replica_election exists
    topic_ids: Mapping[str, str | None] = field(default_factory=dict)
    # children of /admin/delete_topics (a topic may already be gone while its entry is removed)
    topics_being_deleted: frozenset[str] = frozenset()
    # "zookeeper", or "kraft" for the KRaft controller's view (harness.kraft.image): there the
    # live brokers are the active ones, the controller is the quorum's leader and a partition's
    # version is its partition epoch.
    mode: str = "zookeeper"
    # When the controller won its election (/controller's timestamp, epoch s; KRaft: its epoch's
    # LEADER_CHANGE append time): its scheduled leader-imbalance checks count from it
    # (scenarios.model.imbalance_checks).
    controller_elected_at: float | None = None
    # KRaft: the finalized feature levels (FeatureLevelRecord), e.g. eligible.leader.replicas.version
    features: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (partitions as a sorted list, broker ids as string keys);
        :meth:`from_dict` reads it back equal."""
        mode = {} if self.mode == "zookeeper" else {"mode": self.mode}  # old histories stay byte-identical
        elected = {} if self.controller_elected_at is None else {"controller_elected_at": self.controller_elected_at}
        features = {"features": dict(sorted(self.features.items()))} if self.features else {}
        return {**mode, **elected, **features,
            "taken_at": self.taken_at,
            "live_brokers": {str(b): e for b, e in sorted(self.live_brokers.items())},
            "controller": self.controller,
            "controller_epoch": self.controller_epoch,
            "partitions": [self.partitions[k].to_dict() for k in sorted(self.partitions)],
            "topic_configs": {t: dict(sorted(c.items())) for t, c in sorted(self.topic_configs.items())},
            "pending_reassignment": self.pending_reassignment,
            "pending_preferred_election": self.pending_preferred_election,
            "topic_ids": dict(sorted(self.topic_ids.items())),
            "topics_being_deleted": sorted(self.topics_being_deleted),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ZkSnapshot:
        partitions = [PartitionZkState.from_dict(p) for p in d["partitions"]]
        return cls(
            taken_at=float(d["taken_at"]),
            live_brokers={int(b): int(e) for b, e in d["live_brokers"].items()},
            controller=_int_or_none(d["controller"]),
            controller_epoch=_int_or_none(d["controller_epoch"]),
            partitions={(p.topic, p.partition): p for p in partitions},
            topic_configs={str(t): {str(k): str(v) for k, v in c.items()} for t, c in d["topic_configs"].items()},
            pending_reassignment=_bool(d["pending_reassignment"]),
            pending_preferred_election=_bool(d["pending_preferred_election"]),
            topic_ids={str(t): None if i is None else str(i) for t, i in d["topic_ids"].items()},
            # absent from histories written before topic deletion was observed
            topics_being_deleted=frozenset(str(t) for t in d.get("topics_being_deleted", ())),
            mode=str(d.get("mode", "zookeeper")),
            controller_elected_at=None if d.get("controller_elected_at") is None else float(d["controller_elected_at"]),
            features={str(k): int(v) for k, v in d.get("features", {}).items()},
        )

    def partition(self, topic: str, partition: int) -> PartitionZkState:
        try:
            return self.partitions[(topic, partition)]
        except KeyError:
            raise UnknownPartition(f"no partition {topic}-{partition} in ZooKeeper") from None

    def topic_partitions(self, topic: str) -> list[PartitionZkState]:
        return [self.partitions[k] for k in sorted(self.partitions) if k[0] == topic]

    def has_topic(self, topic: str) -> bool:
        return topic in self.topic_ids

    def summary(self, max_partitions: int = 12) -> str:
        """One line, for error messages."""
        brokers = ",".join(str(b) for b in sorted(self.live_brokers)) or "none"
        which = "quorum leader" if self.mode == "kraft" else "controller"
        parts = [f"{which}={self.controller} (epoch {self.controller_epoch})",
                 f"live brokers=[{brokers}]"]
        if self.pending_reassignment:
            parts.append("reassignment pending")
        if self.pending_preferred_election:
            parts.append("preferred election pending")
        if self.topics_being_deleted:
            parts.append("deleting " + ",".join(sorted(self.topics_being_deleted)))
        keys = sorted(self.partitions)
        parts.extend(self.partitions[k].describe() for k in keys[:max_partitions])
        if len(keys) > max_partitions:
            parts.append(f"... {len(keys) - max_partitions} more partitions")
        return "; ".join(parts)

    def render(self) -> str:
        """A readable multi-line table."""
        lines = [
            f"controller {self.controller} (controller_epoch {self.controller_epoch})",
            "live brokers: " + (", ".join(f"{b} (epoch {e})" for b, e in sorted(self.live_brokers.items()))
                                or "none"),
            f"reassignment pending: {'yes' if self.pending_reassignment else 'no'}; "
            f"preferred election pending: {'yes' if self.pending_preferred_election else 'no'}",
        ]
        lines.extend("  " + self.partitions[k].describe() for k in sorted(self.partitions))
        for topic, config in sorted(self.topic_configs.items()):
            if config:
                lines.append(f"  config {topic}: " + ", ".join(f"{k}={v}" for k, v in sorted(config.items())))
        return "\n".join(lines)


class SnapshotReader:
    """Reads :class:`ZkSnapshot` s through one kazoo client (which it does not own)."""

    def __init__(self, client: KazooClient, zk_connect: str) -> None:
        self._client = client
        self._zk_connect = zk_connect

    def _await(self, result: Any, deadline: float, path: str, missing: Any = None) -> Any:
        try:
            return result.get(timeout=max(0.0, deadline - time.monotonic()))
        except NoNodeError:
            return missing
        except KazooTimeoutError:
            raise ZkUnavailable(f"ZooKeeper at {self._zk_connect} did not answer a read of {path} "
                                f"in time") from None
        except KazooException as exc:
            raise ZkUnavailable(f"reading {path} from ZooKeeper at {self._zk_connect} failed: "
                                f"{type(exc).__name__}") from exc

    def read(self, topics: frozenset[str] | None, timeout: float) -> ZkSnapshot:
        """Everything about ``topics`` (None: every topic) and the cluster, read within
        ``timeout``; raises :class:`ZkUnavailable` when ZooKeeper does not answer in time."""
        client = self._client
        deadline = time.monotonic() + timeout
        wanted = topics
        # Round trip 1: the cluster-level znodes (requests are pipelined on one connection).
        ids_r = client.get_children_async(zkpaths.BROKER_IDS)
        ctrl_r = client.get_async(zkpaths.CONTROLLER)
        epoch_r = client.get_async(zkpaths.CONTROLLER_EPOCH)
        reassign_r = client.exists_async(zkpaths.REASSIGN_PARTITIONS)
        preferred_r = client.exists_async(zkpaths.PREFERRED_REPLICA_ELECTION)
        topics_r = client.get_children_async(zkpaths.BROKER_TOPICS) if wanted is None else None
        deleting_r = client.get_children_async(DELETE_TOPICS)
        ids = self._await(ids_r, deadline, zkpaths.BROKER_IDS, missing=[])
        ctrl = self._await(ctrl_r, deadline, zkpaths.CONTROLLER)
        epoch = self._await(epoch_r, deadline, zkpaths.CONTROLLER_EPOCH)
        reassign_stat = self._await(reassign_r, deadline, zkpaths.REASSIGN_PARTITIONS)
        preferred_stat = self._await(preferred_r, deadline, zkpaths.PREFERRED_REPLICA_ELECTION)
        deleting = frozenset(self._await(deleting_r, deadline, DELETE_TOPICS, missing=[]))
        topic_names = sorted(wanted) if wanted is not None else sorted(
            self._await(topics_r, deadline, zkpaths.BROKER_TOPICS, missing=[]))
        # Round trip 2: broker registrations (for their epochs), topic znodes and configs.
        broker_ids = sorted(int(c) for c in ids if c.isdigit())
        broker_rs = {b: client.exists_async(zkpaths.broker_path(b)) for b in broker_ids}
        topic_rs = {t: client.get_async(zkpaths.topic_path(t)) for t in topic_names}
        config_rs = {t: client.get_async(zkpaths.topic_config_path(t)) for t in topic_names}
        live: dict[int, int] = {}
        for b, r in broker_rs.items():
            stat = self._await(r, deadline, zkpaths.broker_path(b))
            if stat is not None:  # gone between the two reads
                live[b] = stat.czxid  # the broker epoch (KafkaZkClient.registerBroker)
        assignments: dict[str, zkpaths.TopicAssignment] = {}
        for t, r in topic_rs.items():
            got = self._await(r, deadline, zkpaths.topic_path(t))
            if got is not None:
                assignments[t] = zkpaths.parse_topic_assignment(got[0], t)
        configs: dict[str, Mapping[str, str]] = {}
        for t, r in config_rs.items():
            got = self._await(r, deadline, zkpaths.topic_config_path(t))
            if t in assignments:
                configs[t] = zkpaths.parse_topic_config(got[0], t) if got is not None else {}
        # Round trip 3: every partition's state znode.
        state_rs = {(t, p): client.get_async(zkpaths.partition_state_path(t, p))
                    for t, a in assignments.items() for p in a.partitions}
        partitions: dict[tuple[str, int], PartitionZkState] = {}
        for (t, p), r in state_rs.items():
            path = zkpaths.partition_state_path(t, p)
            got = self._await(r, deadline, path)
            state = zkpaths.parse_partition_state(got[0], path) if got is not None else None
            version = got[1].version if got is not None else -1
            partitions[(t, p)] = partition_zk_state(t, p, assignments[t], state, version)
        return ZkSnapshot(
            taken_at=time.time(),
            live_brokers=live,
            controller=zkpaths.parse_controller(ctrl[0]) if ctrl is not None else None,
            controller_elected_at=zkpaths.parse_controller_elected_at(ctrl[0]) if ctrl is not None else None,
            controller_epoch=zkpaths.parse_controller_epoch(epoch[0]) if epoch is not None else None,
            partitions=partitions,
            topic_configs=configs,
            pending_reassignment=reassign_stat is not None,
            pending_preferred_election=preferred_stat is not None,
            topic_ids={t: a.topic_id for t, a in assignments.items()},
            topics_being_deleted=deleting if wanted is None else deleting & frozenset(wanted),
        )

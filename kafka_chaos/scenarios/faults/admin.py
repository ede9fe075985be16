"""Admin operations as faults: reassignment, preferred and unclean elections. They act through
ZooKeeper's admin znodes (:class:`harness.zkadmin.ZkAdmin`) or the AdminClient and need no
capability beyond a running cluster."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.config import UNCLEAN_LEADER_ELECTION_ENABLE
from kafka_chaos.oracle import ClusterState, Event, PreferredElection, Reassign, TopicConfigChange, TopicPartition, UncleanElection
from kafka_chaos.scenarios.faults.base import FaultBase, FaultEnv, StepTopics, admin_request, register_fault
from kafka_chaos.scenarios.model.targets import Target

if TYPE_CHECKING:
    from kafka_chaos.harness.metadata import Election

log = logging.getLogger(__name__)


def _admin_errors(result: Mapping[Any, str | None], what: str, tolerated: frozenset[str]) -> None:
    """An admin election's per-partition errors are outcomes the checks compare (e.g.
    ELECTION_NOT_NEEDED); only errors outside ``tolerated`` are a harness problem."""
    bad = {f"{k[0]}-{k[1]}" if isinstance(k, tuple) else str(k): e for k, e in result.items()
           if e is not None and e not in tolerated}
    if bad:
        log.warning("%s: partitions answered with errors %s", what, bad)


def _unanswerable(state: ClusterState, partitions: tuple[TopicPartition, ...]) -> bool:
    """Whether an ElectLeaders request naming ``partitions`` gets no answer: one of them (of a
    topic not queued for deletion) has no leadership information (no state znode), so
    ``KafkaController.processReplicaLeaderElection``'s ``partitionLeadershipInfo(tp).get``
    throws before any election and the callback never answers (the oracle's ``request_failed``)."""
    return any(tp.topic in state.topics and tp.topic not in state.topics_being_deleted
               and tp.partition in state.topics[tp.topic].partitions
               and not state.partition(tp.topic, tp.partition).has_leader_and_isr for tp in partitions)


def _elect(env: FaultEnv, election: "Election", partitions: tuple[TopicPartition, ...], unanswerable: bool,
           tolerated: frozenset[str]) -> None:
    from kafka_chaos.harness.metadata import elect_leaders

    pairs = [(tp.topic, tp.partition) for tp in partitions]
    result = admin_request(lambda timeout: elect_leaders(env.bootstrap, election, pairs, timeout=timeout),
                           unanswered=unanswerable, what=f"{election} election naming a partition without state")
    if result is not None:
        _admin_errors(result, f"{election} election", tolerated)


def _via(kind: str, options: Mapping[str, Any], allowed: tuple[str, ...]) -> str:
    via = options.get("via", "admin")
    if via not in allowed:
        raise UsageError(f"{kind}: 'via' must be one of {allowed}, not {via!r}")
    return str(via)


@register_fault
@dataclass
class ReassignmentFault(FaultBase):
    """Write ``/admin/reassign_partitions`` (the pre-2.4 ZooKeeper path the seeds describe).
    Options: ``topic`` and ``moves``, a list of (partition, target replicas in order)."""

    topic: str = ""
    moves: tuple[tuple[int, tuple[int, ...]], ...] = ()
    kind: ClassVar[str] = "reassignment"
    # Phases A and B write several times, and a dead target stalls phase A: "increased".
    exact_epochs: ClassVar[bool] = False

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ReassignmentFault:
        topic = topics.physical(cls.kind, options)
        try:
            moves = tuple((int(p), tuple(int(r) for r in replicas)) for p, replicas in options["moves"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{cls.kind}: 'moves' must be a list of (partition, [replicas]) pairs") from exc
        return cls(target, topic, moves)

    def oracle_events(self) -> list[Event]:
        return [Reassign(self.topic, p, tuple(r)) for p, r in self.moves]

    def inject(self, env: FaultEnv) -> None:
        env.admin.write_reassignment([(self.topic, p, list(r)) for p, r in self.moves])


@register_fault
@dataclass
class PreferredElectionFault(FaultBase):
    """Preferred leader election by AdminClient ``elect_leaders`` (``via="admin"``) or by
    creating ``/admin/preferred_replica_election`` (``via="znode"``). Options: ``topic``,
    ``partitions`` (default: all), ``via``."""

    topic: str = ""
    partitions: tuple[TopicPartition, ...] = ()
    via: str = "admin"
    kind: ClassVar[str] = "preferred_election"
    _unanswerable: bool = field(default=False, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> PreferredElectionFault:
        topic = topics.physical(cls.kind, options)
        parts = tuple(TopicPartition(topic, p) for p in topics.partitions_of(options))
        return cls(target, topic, parts, _via(cls.kind, options, ("admin", "znode")))

    def oracle_events(self) -> list[Event]:
        return [PreferredElection(self.partitions)]

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        self._unanswerable = _unanswerable(state, self.partitions)

    def inject(self, env: FaultEnv) -> None:
        if self.via == "znode":
            env.admin.write_preferred_election([(tp.topic, tp.partition) for tp in self.partitions])
            return
        _elect(env, "preferred", self.partitions, self._unanswerable,
               frozenset({"ELECTION_NOT_NEEDED", "PREFERRED_LEADER_NOT_AVAILABLE"}))


@register_fault
@dataclass
class UncleanElectionFault(FaultBase):
    """Unclean election by AdminClient ``elect_leaders(UNCLEAN)`` (``via="admin"``) or by
    enabling ``unclean.leader.election.enable`` on the topic (``via="config"``, undone by
    ``heal``). Options: ``topic``, ``partitions`` (default: all), ``via``."""

    topic: str = ""
    partitions: tuple[TopicPartition, ...] = ()
    via: str = "admin"
    kind: ClassVar[str] = "unclean_election"
    _config_set: bool = field(default=False, init=False)
    _unanswerable: bool = field(default=False, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> UncleanElectionFault:
        topic = topics.physical(cls.kind, options)
        parts = tuple(TopicPartition(topic, p) for p in topics.partitions_of(options))
        return cls(target, topic, parts, _via(cls.kind, options, ("admin", "config")))

    def oracle_events(self) -> list[Event]:
        if self.via == "config":
            return [TopicConfigChange(self.topic, {UNCLEAN_LEADER_ELECTION_ENABLE: "true"})]
        return [UncleanElection(self.partitions)]

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        self._unanswerable = _unanswerable(state, self.partitions)

    def inject(self, env: FaultEnv) -> None:
        if self.via == "config":
            self._config_set = True
            env.admin.set_topic_config(self.topic, {UNCLEAN_LEADER_ELECTION_ENABLE: "true"})
            return
        _elect(env, "unclean", self.partitions, self._unanswerable, frozenset({"ELECTION_NOT_NEEDED"}))

    def heal(self, env: FaultEnv) -> None:
        if self._config_set:
            env.admin.set_topic_config(self.topic, {UNCLEAN_LEADER_ELECTION_ENABLE: None})
            self._config_set = False

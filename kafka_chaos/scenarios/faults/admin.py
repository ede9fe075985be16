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
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle import (
    CancelReassignment,
    ClusterState,
    Event,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    TopicPartition,
    UncleanElection,
)
from kafka_chaos.scenarios.faults.base import (
    KRAFT_ONLY,
    MIGRATION_ONLY,
    ZOOKEEPER_ONLY,
    FaultBase,
    FaultEnv,
    StepTopics,
    admin_request,
    register_fault,
)
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import NoTarget, Target

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
    """Write ``/admin/reassign_partitions`` (the pre-2.4 ZooKeeper path the seeds describe,
    ``via="znode"``, the default in ZooKeeper mode) or send AlterPartitionReassignments (KIP-455,
    ``via="admin"``; always on a KRaft cluster, or a migrating one whose KRaft controller is in
    charge: ``harness.kraft.admin``, ``harness.migration.admin``). Options: ``topic`` and ``moves``,
    a list of (partition, target replicas in order); a target of ``null`` cancels the partition's
    reassignment (``via="admin"``). ZooKeeper mode: ``KafkaController.maybeBuildReassignment``, 3.9
    line 1912, reassigns a partition being reassigned to its original replicas (the oracle gets a
    ``Reassign`` to them), and answers NO_REASSIGNMENT_IN_PROGRESS for any other, writing nothing.
    KRaft: ``ReplicationControlManager.cancelPartitionReassignment`` reverts it in one record
    (``oracle.CancelReassignment``: the adding replicas out of the replicas and the ISR, whatever the
    ISR holds) or answers NO_REASSIGNMENT_IN_PROGRESS / INVALID_REPLICA_ASSIGNMENT (an unclean
    revert the topic does not allow), writing nothing: those partitions are sent in a request of
    their own, whose refusal is the predicted outcome. A migrating cluster's cancellation is not
    modelled."""

    topic: str = ""
    moves: tuple[tuple[int, tuple[int, ...] | None], ...] = ()
    via: str = "znode"
    kind: ClassVar[str] = "reassignment"
    # Every write of phases A and B is modelled (one bump for A, one per removed ISR member and the
    # leader move in B; a dead or throttled target stalls after A), so the epochs are exact.
    exact_epochs: ClassVar[bool] = True
    # A cancelled partition being reassigned -> its original replicas (set by prepare())
    _origins: dict[int, tuple[int, ...]] = field(default_factory=dict, init=False)
    _zookeeper_controller: bool = field(default=True, init=False)
    # KRaft: the cancelled partitions the controller refuses to revert, and why (set by prepare())
    _refused: dict[int, str] = field(default_factory=dict, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ReassignmentFault:
        topic = topics.physical(cls.kind, options)
        try:
            moves = tuple((int(p), None if replicas is None else tuple(int(r) for r in replicas))
                          for p, replicas in options["moves"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{cls.kind}: 'moves' must be a list of (partition, [replicas] or null) pairs") from exc
        via = _via(cls.kind, {"via": options.get("via", "znode")}, ("znode", "admin"))
        if via == "znode" and any(r is None for _, r in moves):
            raise UsageError(f"{cls.kind}: a cancellation (target null) needs \"via\": \"admin\" "
                             "(/admin/reassign_partitions cannot cancel)")
        return cls(target, topic, moves, via)

    @property
    def cancels(self) -> bool:
        return any(r is None for _, r in self.moves)

    @property
    def modes(self) -> frozenset[str]:
        return ZOOKEEPER_ONLY | KRAFT_ONLY if self.cancels else self.mode_support

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        self._zookeeper_controller = state.mode is Mode.ZOOKEEPER
        cancelled = [TopicPartition(self.topic, p) for p, replicas in self.moves if replicas is None]
        self._origins = {tp.partition: state.partition(tp).origin_replicas for tp in cancelled
                         if state.has_partition(tp) and state.partition(tp).is_being_reassigned}
        self._refused = {}
        if state.mode is Mode.KRAFT and cancelled:
            from kafka_chaos.oracle.kraft.controller import KRaftController

            controller = KRaftController(state)
            refusals = {tp.partition: controller.cancel_refusal(tp) for tp in cancelled if state.has_partition(tp)}
            self._refused = {p: why for p, why in refusals.items() if why is not None}

    def oracle_events(self) -> list[Event]:
        """The reassignments; a cancellation's is known once :meth:`prepare` read the cluster's
        mode and, in ZooKeeper mode, the partition's original replicas (before that, the explicit
        targets only: what schedule validation reads)."""
        if not self._zookeeper_controller:
            return [Reassign(self.topic, p, r) if r is not None else CancelReassignment(self.topic, p)
                    for p, r in self.moves]
        targets = [(p, r if r is not None else self._origins.get(p)) for p, r in self.moves]
        return [Reassign(self.topic, p, r) for p, r in targets if r is not None]

    def inject(self, env: FaultEnv) -> None:
        if not self._zookeeper_controller and self.cancels:
            self._cancel_in_kraft(env)
            return
        if self.via == "znode" or not self._zookeeper_controller:
            env.admin.write_reassignment([(self.topic, p, list(r)) for p, r in self.moves if r is not None])
            return
        from kafka_chaos.harness.metadata import alter_partition_reassignments

        # In ZooKeeper mode only the controller takes it (KafkaApis.handleAlterPartitionReassignmentsRequest
        # answers NOT_CONTROLLER elsewhere: ZkSupport has no forwarding of it before KRaft).
        controller = env.observer.snapshot().controller
        address = env.cluster.endpoint(controller).bootstrap if controller is not None else env.bootstrap
        alter_partition_reassignments(address, {self.topic: {p: r for p, r in self.moves}})

    def _cancel_in_kraft(self, env: FaultEnv) -> None:
        """AlterPartitionReassignments through any broker (it forwards it to the active controller):
        the moves the controller takes in one request, then the cancellations it refuses
        (:meth:`prepare`) in another, whose error is the outcome predicted -- a MetadataError then
        only when it is not that refusal."""
        from kafka_chaos.harness.metadata import MetadataError, alter_partition_reassignments

        taken = {p: r for p, r in self.moves if p not in self._refused}
        if taken:
            alter_partition_reassignments(env.bootstrap, {self.topic: taken})
        if not self._refused:
            return
        try:
            alter_partition_reassignments(env.bootstrap, {self.topic: {p: None for p in sorted(self._refused)}})
        except MetadataError as exc:
            if not all(why in str(exc) for why in self._refused.values()):
                raise
            log.info("cancellation refused, as predicted (%s): %s", self._refused, exc)
            return
        log.warning("cancellation of %s-%s taken, though predicted refused (%s)", self.topic,
                    sorted(self._refused), self._refused)


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

    @property
    def modes(self) -> frozenset[str]:
        return ZOOKEEPER_ONLY if self.via == "znode" else self.mode_support

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


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _admin(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    topic = step.options.get("topic")
    if not isinstance(topic, str) or topic not in model.topics:
        raise IllegalStep(f"{step.fault} on unknown topic {topic!r}")
    if step.fault == ReassignmentFault.kind:
        for p, replicas in step.options.get("moves", ()):
            if p not in model.topics[topic].assignment:
                raise IllegalStep(f"reassignment of {topic}-{p}: no such partition")
            if replicas is None:  # a cancellation (KIP-455): legal only while one is pending
                raise IllegalStep(f"cancelling {topic}-{p}'s reassignment: the model settles every "
                                  "reassignment, so none is ever pending to cancel")
            dead = [r for r in replicas if r not in model.live or r in model.cut]
            if dead or model.unknown_down:  # a stalled reassignment never settles
                raise IllegalStep(f"reassignment of {topic}-{p} onto brokers that may be down")
            if not model.can_move(topic, p):
                raise IllegalStep(f"reassignment of {topic}-{p}: a current replica is down or held, its leader "
                                  "may be gone")
            spec = model.topics[topic]  # the settled reassignment leaves the new replicas
            model.topics = {**model.topics, topic: TopicSpec(spec.name, {**spec.assignment, p: tuple(replicas)},
                                                             spec.config, spec.workload)}
    for p in step.options.get("partitions", ()) or ():
        if p not in model.topics[topic].assignment:
            raise IllegalStep(f"{step.fault} of {topic}-{p}: no such partition")


def _reassignment_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    """Only onto free brokers, of a partition whose replicas are all free: a reassignment that
    stalls keeps ``/admin/reassign_partitions`` pending, which the next settle wait cannot pass."""
    free, _ = model.drawable()
    movable = [t for t in sorted(model.topics) if any(model.can_move(t, p) for p in model.topics[t].assignment)]
    if model.unknown_down or not free or not movable:
        return []
    topic = draw.rng.choice(movable)
    p = draw.rng.choice([p for p in sorted(model.topics[topic].assignment) if model.can_move(topic, p)])
    size = draw.rng.randint(1, min(3, len(free)))
    replicas = tuple(draw.rng.sample(free, size))
    return [Step(ReassignmentFault.kind, NoTarget(f"{topic}-{p} -> {list(replicas)}"),
                 {"topic": topic, "moves": [[p, list(replicas)]]})]


def _preferred_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    topic = draw.rng.choice(sorted(model.topics))
    return [Step(PreferredElectionFault.kind, NoTarget(f"{topic} (preferred)"),
                 {"topic": topic, "via": draw.rng.choice(("admin", "znode"))})]


def _unclean_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    topic = draw.rng.choice(sorted(model.topics))
    via = draw.rng.choice(("admin", "config"))
    options: dict[str, Any] = {"topic": topic, "via": via}
    if via == "admin":
        partitions = sorted(model.topics[topic].assignment)
        options["partitions"] = sorted(draw.rng.sample(partitions, draw.rng.randint(1, len(partitions))))
    return [Step(UncleanElectionFault.kind, NoTarget(f"{topic} (unclean, {via})"), options)]


# Admin operations: drawn less often than process faults.
register_generator(GeneratorSide(ReassignmentFault.kind, 2, _admin, _reassignment_candidates))
register_generator(GeneratorSide(PreferredElectionFault.kind, 2, _admin, _preferred_candidates))
register_generator(GeneratorSide(UncleanElectionFault.kind, 1, _admin, _unclean_candidates))

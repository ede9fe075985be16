"""KRaft events applied to a settled state, in every order Kafka leaves open (pure).

Where the ZooKeeper controller may see several session expiries in one ``BrokerChange``, the
KRaft controller fences *one broker per controller event*: ``maybeFenceOneStaleBroker``
(ReplicationControlManager.java 3.9 lines 1602-1614) takes the broker with the oldest last
contact (``BrokerHeartbeatManager.findOneStaleBroker``, lines 453-465: the unfenced list is
ordered by last heartbeat, lines 170-182) and the task reschedules itself at once while more are
stale (QuorumController.java lines 1323-1337).  Brokers that die together are fenced in the order
of their last heartbeats (every ``broker.heartbeat.interval.ms``, 2 s: any order), each fence's
records replayed before the next is generated; likewise each starting broker is unfenced by
its own heartbeat.  So a ``BrokerFailure`` / ``BrokerStartup`` of k brokers is every order of k
single fences / unfences (k! orders), each also with the cluster settled in between (whether a
new leader's followers rejoin before the next fence is timing).

In ZooKeeper migration mode (:mod:`oracle.kraft.migration`) a ``LogDirFailure`` of a migrating
ZooKeeper broker halts it (ReplicaManager.scala 3.9 lines 2507-2511; in 3.6 LogManager.scala
3.6.1 lines 214-219, its only log directory gone): its one plan is the fence of that broker, as
for a ``BrokerFailure`` of it alone.

3.6.x to 3.8.x (:data:`MODELLED_LINES`): the same fences, unfences and orders (``maybeFenceOneStaleBroker``,
ReplicationControlManager.java 3.6.1 lines 1480-1492, 3.7.2 lines 1589-1601, 3.8.1 lines 1617-1629;
``BrokerHeartbeatManager`` differs from 3.9 only in how ``register``/``touch`` are split, 3.7.2 =
3.8.1; ``processBrokerHeartbeat`` 3.8.1 lines 1548-1580 routes SHUTDOWN_NOW to ``handleBrokerFenced``
as 3.9 does); a ``TopicConfigChange`` has one plan (no periodic unclean check before 3.9.0).

A hard restart (``BrokerFailure.restarting``: SIGKILL, then started at once) has a further plan
per broker on every modelled line: its new incarnation registers after the old session expired
but before the periodic check fenced it, and the registration's cleanup replaces the fence
(:meth:`KRaftController.handle_registration_before_fence`: 3.x writes no partition record, 4.x runs
``handleBrokerShutdown`` with the old registration still active).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, permutations
from typing import Callable, Hashable, Iterator, Sequence

from kafka_chaos.oracle.events import (
    AddPartitions,
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ControlledShutdown,
    ControllerFailover,
    CreateTopic,
    DeleteTopic,
    Event,
    LogDirFailure,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    UncleanElection,
)
from kafka_chaos.oracle.kraft import config as kcfg
from kafka_chaos.oracle.kraft import migration
from kafka_chaos.oracle.kraft.controller import KRaftController
from kafka_chaos.oracle.outcomes import Outcome, PartitionOutcome
from kafka_chaos.oracle.release import Release
from kafka_chaos.oracle.state import NO_LEADER, ClusterState, PartitionState, TopicPartition, state_key

MAX_UNORDERED_BROKERS = 4
"""Up to this many brokers in one BrokerFailure / BrokerStartup, every order of their single
fences (unfences) is listed (1, 2, 6, 24 orders, each also settled in between); beyond it only
ascending and descending."""

MODELLED_LINES = ((3, 6), (3, 7), (3, 8), (3, 9), (4, 0), (4, 1), (4, 2), (4, 3), (4, 4))
"""The release lines the KRaft model covers.  It is 3.9's, with every rule that differs in 3.6.x,
3.7.x or 3.8.x keyed by release or metadata version (``git diff 3.6.1 3.9`` of the controller
package, 3.6.0 and 3.6.2 compared with 3.6.1; 3.7.2 and 3.8.1 from their released sources jars,
3.7.0/3.7.1/3.8.0 against them; oracle/README.md, "3.6.x" and "3.7.x and 3.8.x").  3.5 and earlier:
refused.  4.0.x-4.4.x (docs/kraft-4x-audit.md): 3.9's decisions with each line's default metadata
version, the registration's shutdown handler (:meth:`KRaftController.handle_broker_registration`)
and, where ``eligible.leader.replicas.version`` is on (default from 4.1.0), KIP-966's ELR rules
(:mod:`oracle.kraft.builder`)."""
MODELLED_TEXT = "3.6.x, 3.7.x, 3.8.x, 3.9.x and 4.0.x-4.4.x"


def release_modelled(release: Release) -> bool:
    """Whether the KRaft model covers ``release`` (:data:`MODELLED_LINES`)."""
    return (release.major, release.minor) in MODELLED_LINES


@dataclass(frozen=True)
class _Plan:
    label: str
    run: Callable[[KRaftController], None]


def _orders(brokers: Sequence[int]) -> list[tuple[int, ...]]:
    ordered = tuple(sorted(set(brokers)))
    if len(ordered) <= MAX_UNORDERED_BROKERS:
        return list(permutations(ordered))
    return [ordered, tuple(reversed(ordered))]


def _sequence_plans(
    verb: str, brokers: Sequence[int], step: Callable[[KRaftController, int], None]
) -> list[_Plan]:
    """Each order of single-broker controller events, then (for two or more brokers) the same
    order with the cluster settled between them."""
    orders = _orders(brokers)

    def runner(order: tuple[int, ...], settle_between: bool) -> Callable[[KRaftController], None]:
        def run(ctl: KRaftController) -> None:
            for index, broker in enumerate(order):
                if index and settle_between:
                    ctl.settle()
                step(ctl, broker)

        return run

    def label(order: tuple[int, ...], settle_between: bool) -> str:
        if not order:
            return f"no broker {verb}"
        text = f"{verb} " + " then ".join(str(b) for b in order)
        return text + (", followers rejoining in between" if settle_between else "")

    plans = [_Plan(label(order, False), runner(order, False)) for order in orders]
    plans += [_Plan(label(order, True), runner(order, True)) for order in orders if len(order) > 1]
    return plans


MAX_RESTARTS_EACH_WAY = 2
"""Up to this many brokers in one hard restart, each may be fenced first or register first
(every non-empty set of the latter); beyond it only all of them registering first."""


def _registered_before_fence_plans(brokers: Sequence[int]) -> list[_Plan]:
    """A hard restart's further plans (``BrokerFailure.restarting``): some of the SIGKILLed brokers'
    new incarnations register before the periodic check fences the old ones
    (:meth:`KRaftController.handle_registration_before_fence`, after a SIGKILL: unclean), then are
    unfenced by their first caught-up heartbeat; the others are fenced as usual."""
    if len(brokers) <= MAX_RESTARTS_EACH_WAY:
        early_sets = [frozenset(c) for n in range(1, len(brokers) + 1) for c in combinations(brokers, n)]
    else:
        early_sets = [frozenset(brokers)]
    plans: list[_Plan] = []
    for early in early_sets:
        def step(ctl: KRaftController, b: int, early: frozenset[int] = early) -> None:
            if b in early:
                ctl.handle_registration_before_fence(b, clean=False)
                ctl.handle_broker_unfenced(b)
            else:
                ctl.handle_broker_fenced(b)
        verb = "registered before the fence: " + ", ".join(str(b) for b in sorted(early)) + "; brokers in order"
        plans += _sequence_plans(verb, brokers, step)
    return plans


def _event_plans(state: ClusterState, event: Event) -> list[_Plan]:
    if isinstance(event, BrokerFailure):
        dead = sorted(set(event.brokers) & state.live_brokers)
        plans = _sequence_plans("fenced", dead, lambda ctl, b: ctl.handle_broker_fenced(b))
        return plans + (_registered_before_fence_plans(dead) if event.restarting else [])
    if isinstance(event, BrokerStartup):
        new = sorted(set(event.brokers) - state.live_brokers)
        kraft = set(event.kraft_brokers)

        def start(clean: bool) -> Callable[[KRaftController, int], None]:
            def step(ctl: KRaftController, b: int) -> None:
                if b in kraft:
                    ctl.start_as_kraft_broker(b)
                ctl.handle_broker_registration(b, clean)
                ctl.handle_broker_unfenced(b)
            return step
        if kcfg.elr_feature_enabled(state.config, state.release):
            # Whether the broker's last shutdown was clean (its clean-shutdown file names the epoch
            # the controller stored: SIGTERM) or not (SIGKILL, power failure) is not in the event:
            # both (ClusterControlManager.java 4.1.2 lines 434-436).
            return (_sequence_plans("unfenced after an unclean shutdown", new, start(False))
                    + _sequence_plans("unfenced after a clean shutdown", new, start(True)))
        return _sequence_plans("unfenced", new, start(True))
    if isinstance(event, LogDirFailure) and migration.log_dir_failure_halts(state.config, event.broker):
        # A migrating ZooKeeper broker halts (ReplicaManager.scala 3.9 lines 2507-2511): fenced
        # when its session expires, like a BrokerFailure of it alone.
        return [_Plan(f"ZooKeeper broker {event.broker} halted, fenced",
                      lambda ctl: ctl.handle_broker_fenced(event.broker))]
    if isinstance(event, TopicConfigChange):
        if not kcfg.unclean_leader_election_configurable(state.release):
            # Before 3.9.0 the controller never reads the setting and has no periodic unclean
            # check (ConfigurationControlManager.java 3.6.1 lines 478-480): only ConfigRecords.
            return [_Plan(event.KIND, lambda ctl: None)]
        # Enabling unclean election acts only at the next periodic check, up to
        # unclean.leader.election.interval.ms later: both the state before and after it.
        return [
            _Plan("before the unclean election check", lambda ctl: None),
            _Plan("after the unclean election check", lambda ctl: ctl.maybe_elect_unclean_leaders()),
        ]
    return [_Plan(event.KIND, lambda ctl: None)]


def _check_known(state: ClusterState, partitions: Sequence[TopicPartition]) -> None:
    for tp in partitions:
        if not state.has_partition(tp):
            raise ValueError(f"unknown partition {tp}")


def _check_replicas(what: str, replicas: Sequence[int]) -> None:
    if not replicas or len(set(replicas)) != len(replicas):
        raise ValueError(f"{what} needs distinct replicas, got {list(replicas)}")


def classify(tp: TopicPartition, before: PartitionState | None, after: PartitionState, active: set[int],
             unclean: set[TopicPartition]) -> Outcome:
    if after.leader == NO_LEADER or after.leader not in active:
        return Outcome.NO_REPLICA_ONLINE
    if tp in unclean:
        return Outcome.UNCLEAN_ELECTED
    if before is None or before.leader != after.leader:
        return Outcome.ELECTED
    return Outcome.UNCHANGED


def check_supported(state: ClusterState, event: Event) -> None:
    """Refuse what the KRaft model does not model, with a clear ValueError."""
    if not release_modelled(state.release):
        raise ValueError(f"the KRaft model covers Kafka {MODELLED_TEXT}; release {state.release} is not "
                         "modelled in KRaft mode")
    mv = kcfg.metadata_version(state.config, state.release)
    kcfg.check_metadata_version_known(mv, state.release)
    kcfg.check_elr_not_in_effect(state.config, mv, state.release)
    migration.check_supported(state.config, mv)
    _check_directories(state)
    if isinstance(event, LogDirFailure) and not migration.log_dir_failure_halts(state.config, event.broker):
        if not kcfg.directory_assignment_supported(mv):
            raise ValueError(_log_dir_failure_refusal(state.release))


def _log_dir_failure_refusal(release: Release) -> str:
    if kcfg.partition_directories_supported(release):
        return ("LogDirFailure in KRaft needs metadata.version 3.7-IV2 or later (JBOD, KIP-858); below it "
                "a broker with a failed log directory shuts down: model that as BrokerFailure")
    # 3.6: no directory reaches the controller (no offlineLogDirs in the heartbeat, no
    # handleDirectoriesOffline); a broker whose only (or last) log directory fails halts
    # (LogManager.handleLogDirFailure, LogManager.scala 3.6.1 lines 214-219).
    return (f"LogDirFailure of a KRaft broker is not modelled on Kafka {release}: the controller never learns of "
            "a failed directory before 3.7 (KIP-858); a broker whose last log directory fails halts "
            "(LogManager.scala 3.6.1 lines 214-219): model that as BrokerFailure")


def _check_directories(state: ClusterState) -> None:
    """A registration without directories (before 3.7.0) cannot have unassigned (MIGRATING) ones."""
    if kcfg.partition_directories_supported(state.release):
        return
    for tp, p in state.partitions():
        if p.unassigned_dirs:
            raise ValueError(f"{tp}: unassigned_dirs on Kafka {state.release}, whose partition registrations have "
                             "no directories (KIP-858 is 3.7; PartitionRegistration.java 3.6.1 lines 159-188)")


def _apply(state: ClusterState, event: Event, event_index: int, run: Callable[[KRaftController], None]
           ) -> tuple[ClusterState, tuple[PartitionOutcome, ...]]:
    ctl = KRaftController(state)
    before = dict(ctl.partitions)
    explicit: dict[TopicPartition, Outcome] | None = None
    concerned: set[TopicPartition] = set()

    halted: set[int] = set()
    if isinstance(event, LogDirFailure) and migration.log_dir_failure_halts(state.config, event.broker):
        _check_known(state, event.partitions)
        halted = {event.broker}
    if isinstance(event, (BrokerFailure, BrokerStartup, ControlledShutdown)) or halted:
        if isinstance(event, (BrokerFailure, BrokerStartup)):
            brokers = set(event.brokers)
        elif isinstance(event, ControlledShutdown):
            brokers = {event.broker}
        else:  # a migrating ZooKeeper broker halted by a failed log directory
            brokers = halted
        concerned = {tp for tp, p in before.items() if brokers & set(p.replicas)}
        concerned |= {tp for tp, p in before.items() if p.leader == NO_LEADER or p.leader not in ctl.active}
        if isinstance(event, ControlledShutdown):
            ctl.handle_controlled_shutdown(event.broker)
        else:
            run(ctl)
    elif isinstance(event, ControllerFailover):
        # QuorumController.claim (QuorumController.java 3.9 lines 1215-1237) ->
        # ClusterControlManager.activate (ClusterControlManager.java lines 322-327): a new
        # BrokerHeartbeatManager registers every broker with its current fencing and
        # lastContactNs = now (BrokerHeartbeatManager.java lines 365-401), so no broker is fenced
        # by the failover; CompleteActivationEvent writes no partition record (lines 1239-1266,
        # ActivationRecordsGenerator) and reschedules the periodic tasks from now.
        ctl.controller = event.controller
    elif isinstance(event, Reassign):
        _check_known(state, [event.topic_partition])
        _check_replicas(f"reassignment of {event.topic_partition}", event.replicas)
        concerned = {event.topic_partition}
        ctl.change_partition_reassignment(event.topic_partition, tuple(event.replicas))
    elif isinstance(event, CancelReassignment):
        # cancelPartitionReassignment (ReplicationControlManager.java 3.9.2 lines 2067-2097): the
        # revert, or an error answered and nothing written
        _check_known(state, [event.topic_partition])
        if not ctl.cancel_partition_reassignment(event.topic_partition):
            explicit = {event.topic_partition: Outcome.REQUEST_FAILED}
        else:
            concerned = {event.topic_partition}
    elif isinstance(event, (PreferredElection, UncleanElection)):
        _check_known(state, event.partitions)
        preferred = isinstance(event, PreferredElection)
        explicit = {}
        for tp in dict.fromkeys(event.partitions):
            explicit[tp] = ctl.elect_leader(tp, preferred)
    elif isinstance(event, AutoRebalance):
        ctl.maybe_balance_partition_leaders()
    elif isinstance(event, CreateTopic):
        if event.topic in state.topics:
            raise ValueError(f"topic {event.topic} already exists")
        for number, replicas in event.replicas.items():
            _check_replicas(f"partition {event.topic}-{number}", replicas)
        if not ctl.create_topic(event.topic, event.replicas, event.config):
            explicit = {TopicPartition(event.topic, n): Outcome.REQUEST_FAILED for n in event.replicas}
        else:
            concerned = {TopicPartition(event.topic, n) for n in event.replicas}
    elif isinstance(event, DeleteTopic):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        concerned = {tp for tp in before if tp.topic == event.topic}
        ctl.delete_topic(event.topic)
    elif isinstance(event, AddPartitions):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        existing = sorted(set(event.replicas) & set(state.topics[event.topic].partitions))
        if existing:
            raise ValueError(f"partition {event.topic}-{existing[0]} already exists")
        for number, replicas in event.replicas.items():
            _check_replicas(f"new partition {event.topic}-{number}", replicas)
        if not ctl.create_partitions(event.topic, event.replicas):
            explicit = {TopicPartition(event.topic, n): Outcome.REQUEST_FAILED for n in event.replicas}
        else:
            concerned = {TopicPartition(event.topic, n) for n in event.replicas}
    elif isinstance(event, LogDirFailure):
        _check_known(state, event.partitions)
        concerned = set(ctl.handle_directories_offline(event.broker, event.partitions))
    elif isinstance(event, TopicConfigChange):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        concerned = {tp for tp, p in before.items() if tp.topic == event.topic and p.leader == NO_LEADER}
        ctl.process_topic_config_change(event.topic, event.config)
        run(ctl)
    else:
        raise TypeError(f"not an oracle event: {event!r}")

    ctl.settle()
    after_state = ctl.freeze()
    after = dict(after_state.partitions())
    if explicit is None:
        concerned |= {tp for tp, p in after.items() if before.get(tp) != p}
        concerned &= set(after)  # a deleted topic's partitions have no outcome
        explicit = {tp: classify(tp, before.get(tp), after[tp], ctl.active, ctl.unclean_elected) for tp in concerned}
    outcomes = tuple(PartitionOutcome(event_index, tp.topic, tp.partition, explicit[tp]) for tp in sorted(explicit))
    return after_state, outcomes


def iter_event_alternatives(
    state: ClusterState, event: Event, event_index: int = 0
) -> Iterator[tuple[str, ClusterState, tuple[PartitionOutcome, ...]]]:
    """Every settled state ``event`` may leave in KRaft mode, one per legal order, the main
    (first) one first; orders leaving equal states are listed once, with the first label."""
    check_supported(state, event)
    seen: set[Hashable] = set()
    for plan in _event_plans(state, event):
        after, outcomes = _apply(state, event, event_index, plan.run)
        key = state_key(after)
        if key not in seen:
            seen.add(key)
            yield plan.label, after, outcomes

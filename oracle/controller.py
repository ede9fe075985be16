"""The ZooKeeper-mode controller's event handlers (``KafkaController.scala``, Kafka 3.9), applied to
the *settled* state left by the previous event.

Each event is run by a throw-away :class:`_Controller` holding a mutable working copy (the
controller context plus the ZooKeeper partition state, which the controller keeps equal), then
settled (:meth:`_Controller.settle`) and frozen into a new :class:`ClusterState`.  Method names
follow the Scala functions they model.
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, Iterable, Mapping

from oracle import config as cfg
from oracle import election
from oracle.events import (
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    ControlledShutdown,
    CreateTopic,
    Event,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    UncleanElection,
)
from oracle.outcomes import Outcome, PartitionOutcome
from oracle.selectors import preferred_replica_partition_leader_election
from oracle.state import (
    NO_LEADER,
    RECOVERED,
    ClusterState,
    PartitionPhase,
    PartitionState,
    TopicPartition,
    TopicState,
)


class Strategy(Enum):
    """``PartitionLeaderElectionStrategy`` (``PartitionStateMachine.scala``)."""

    OFFLINE = "OfflinePartitionLeaderElectionStrategy(false)"
    OFFLINE_ALLOW_UNCLEAN = "OfflinePartitionLeaderElectionStrategy(true)"
    REASSIGN = "ReassignPartitionLeaderElectionStrategy"
    PREFERRED = "PreferredReplicaPartitionLeaderElectionStrategy"
    CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElectionStrategy"


def _settled_phase(p: PartitionState, live: Iterable[int]) -> PartitionPhase:
    # Between events the controller's memory matches PartitionStateMachine.initializePartitionState:
    # a partition with a state znode is Online iff its leader is a live broker.
    if not p.has_leader_and_isr:
        return PartitionPhase.NEW
    return PartitionPhase.ONLINE if p.leader in live else PartitionPhase.OFFLINE


class _Controller:
    """One controller's view while it processes one event.  Not shared, not kept."""

    def __init__(self, state: ClusterState) -> None:
        self.live: set[int] = set(state.live_brokers)  # liveBrokerEpochs.keySet (liveOrShuttingDown)
        self.shutting_down: set[int] = set()  # shuttingDownBrokerIds
        self.controller = state.controller
        self.config: dict[str, str] = dict(state.config)
        self.topic_configs: dict[str, dict[str, str]] = {t: dict(ts.config) for t, ts in state.topics.items()}
        self.partitions: dict[TopicPartition, PartitionState] = {
            tp: p.with_changes(phase=_settled_phase(p, self.live)) for tp, p in state.partitions()
        }
        self.unclean_elected: set[TopicPartition] = set()

    # --- ControllerContext ---------------------------------------------------------------------

    @property
    def online(self) -> set[int]:
        """``liveBrokerIds`` = registered brokers minus those in controlled shutdown
        (``isReplicaOnline`` with log dirs assumed healthy)."""
        return self.live - self.shutting_down

    def sorted_partitions(self, predicate: Callable[[TopicPartition, PartitionState], bool]) -> list[TopicPartition]:
        return [tp for tp in sorted(self.partitions) if predicate(tp, self.partitions[tp])]

    def freeze(self) -> ClusterState:
        topics: dict[str, dict[int, PartitionState]] = {t: {} for t in self.topic_configs}
        for tp, p in self.partitions.items():
            topics.setdefault(tp.topic, {})[tp.partition] = p.with_changes(phase=_settled_phase(p, self.live))
        return ClusterState(
            live_brokers=frozenset(self.live),
            topics={t: TopicState(partitions=parts, config=self.topic_configs.get(t, {})) for t, parts in topics.items()},
            controller=self.controller,
            config=self.config,
        )

    # --- PartitionStateMachine -----------------------------------------------------------------

    def handle_online_state_changes(
        self, partitions: Iterable[TopicPartition], strategy: Strategy
    ) -> dict[TopicPartition, bool]:
        """``ZkPartitionStateMachine.doHandleStateChanges(..., OnlinePartition, strategy)``: New
        partitions are initialised, the others elected with ``strategy``.  Returns success per
        partition; a failure writes nothing and leaves the phase alone."""
        results: dict[TopicPartition, bool] = {}
        online = self.online
        for tp in partitions:
            p = self.partitions[tp]
            if p.phase is PartitionPhase.NEW:
                initialised = election.initialize_leader_and_isr(p, online)
                if initialised is not None:
                    self.partitions[tp] = initialised
                results[tp] = initialised is not None
                continue
            result = self.elect(tp, p, strategy, online)
            if result.new_state is not None:
                self.partitions[tp] = result.new_state
                if result.unclean:
                    self.unclean_elected.add(tp)
            results[tp] = result.new_state is not None
        return results

    def elect(self, tp: TopicPartition, p: PartitionState, strategy: Strategy, online: set[int]) -> election.ElectionResult:
        """``doElectLeaderForPartitions``: the strategy's ``Election.leaderFor*``."""
        if strategy in (Strategy.OFFLINE, Strategy.OFFLINE_ALLOW_UNCLEAN):
            return election.leader_for_offline(
                p,
                online,
                self.unclean_allowed(tp, p, allow_unclean=strategy is Strategy.OFFLINE_ALLOW_UNCLEAN),
                cfg.leader_recovery_supported(self.config),
            )
        if strategy is Strategy.REASSIGN:
            return election.leader_for_reassign(p, online)
        if strategy is Strategy.PREFERRED:
            return election.leader_for_preferred_replica(p, online)
        return election.leader_for_controlled_shutdown(p, self.live, self.shutting_down)

    def unclean_allowed(self, tp: TopicPartition, p: PartitionState, *, allow_unclean: bool) -> bool:
        """``collectUncleanLeaderElectionState``: unclean is considered only when no ISR member is
        online, then allowed by the admin request or by the topic's merged config."""
        if any(r in self.online for r in p.isr):
            return False
        return allow_unclean or cfg.unclean_leader_election_enabled(self.config, self.topic_configs.get(tp.topic, {}))

    def trigger_online_partition_state_change(self, topic: str | None = None) -> None:
        """``PartitionStateMachine.triggerOnlinePartitionStateChange``: every New/Offline partition
        (of ``topic`` if given) gets the offline election."""
        candidates = self.sorted_partitions(
            lambda tp, p: p.phase in (PartitionPhase.NEW, PartitionPhase.OFFLINE) and topic in (None, tp.topic)
        )
        self.handle_online_state_changes(candidates, Strategy.OFFLINE)

    def mark_partitions_with_offline_leader(self) -> None:
        """``partitionsWithOfflineLeader`` -> OfflinePartition (any partition with a state znode
        whose leader is not online, leader -1 included)."""
        for tp in self.sorted_partitions(lambda tp, p: p.has_leader_and_isr and p.leader not in self.online):
            self.partitions[tp] = self.partitions[tp].with_changes(phase=PartitionPhase.OFFLINE)

    # --- ReplicaStateMachine -------------------------------------------------------------------

    def offline_replica_transitions(self, replicas: Iterable[tuple[TopicPartition, int]]) -> None:
        """``ZkReplicaStateMachine.handleStateChanges(replicas, OfflineReplica)``: grouped by broker
        (``groupBy(_.replica)`` on an immutable HashMap iterates small int keys in ascending order),
        one ``doRemoveReplicasFromIsr`` per broker, each reading the state the previous one wrote."""
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, broker in replicas:
            by_broker.setdefault(broker, []).append(tp)
        for broker in sorted(by_broker):
            for tp in sorted(set(by_broker[broker])):
                removed = election.remove_replica_from_isr(self.partitions[tp], broker)
                if removed is not None:
                    self.partitions[tp] = removed

    def replicas_on_brokers(self, brokers: set[int]) -> list[tuple[TopicPartition, int]]:
        return [(tp, b) for tp, p in sorted(self.partitions.items()) for b in p.replicas if b in brokers]

    # --- KafkaController: brokers --------------------------------------------------------------

    def on_broker_failure(self, dead: set[int]) -> None:
        """``processBrokerChange`` (removeLiveBrokers) then ``onBrokerFailure`` ->
        ``onReplicasBecomeOffline``: mark, elect everything New/Offline, then OfflineReplica."""
        self.live -= dead
        self.shutting_down -= dead
        self.mark_partitions_with_offline_leader()
        self.trigger_online_partition_state_change()
        self.offline_replica_transitions(self.replicas_on_brokers(dead))

    def brokers_gone(self, brokers: Iterable[int]) -> None:
        """The brokers' ZooKeeper sessions end; the controller among them means a failover."""
        dead = set(brokers) & self.live
        if not dead:
            return
        remaining = self.live - dead
        if not remaining:
            # No broker is left to become controller: nobody writes ZooKeeper.
            self.live, self.shutting_down, self.controller = set(), set(), None
            return
        if self.controller is not None and self.controller in dead:
            self.live, self.shutting_down, self.controller = remaining, set(), None  # winner unknown
            self.on_controller_failover()
        else:
            self.on_broker_failure(dead)

    def on_broker_startup(self, new: set[int]) -> None:
        """``onBrokerStartup``: OnlineReplica (no ZK write), offline elections for every New/Offline
        partition, resume reassignments that target a new broker.  Leadership is *not* given back."""
        self.live |= new
        self.trigger_online_partition_state_change()
        self.maybe_resume_reassignments(lambda p: any(r in new for r in p.target_replicas))

    def brokers_started(self, brokers: Iterable[int]) -> None:
        new = set(brokers) - self.live
        if not new:
            return
        if not self.live:
            # No controller: the first starting broker to create /controller wins and fails over.
            self.live = set(new)
            self.controller = next(iter(new)) if len(new) == 1 else None
            self.on_controller_failover()
        else:
            self.on_broker_startup(new)

    def on_controller_failover(self) -> None:
        """``onControllerFailover``: ``initializeControllerContext`` (shutting-down ids cleared),
        ``replicaStateMachine.startup()`` (OfflineReplica for every replica on a non-live broker:
        the removal write comes *before* the election), ``partitionStateMachine.startup()``,
        ``initializePartitionReassignments``, and the auto-rebalance task scheduled 5 s later."""
        self.shutting_down.clear()
        online = self.online
        self.offline_replica_transitions(
            [(tp, r) for tp, p in sorted(self.partitions.items()) for r in p.replicas if r not in online]
        )
        for tp, p in self.partitions.items():
            self.partitions[tp] = p.with_changes(phase=_settled_phase(p, online))
        self.trigger_online_partition_state_change()
        self.maybe_resume_reassignments(lambda p: True)
        if cfg.auto_leader_rebalance_enabled(self.config):
            self.settle()  # five seconds is time enough for caught-up followers to rejoin
            self.check_and_trigger_auto_leader_rebalance()

    def do_controlled_shutdown(self, broker: int) -> list[TopicPartition]:
        """``doControlledShutdown``: acts only on partitions with RF > 1 and a state znode; leaders
        move by the controlled-shutdown election, followers leave the ISR (OfflineReplica).
        Returns ``partitionLeadersOnBroker`` (RF = 1 partitions included)."""
        self.shutting_down.add(broker)
        act_on = self.sorted_partitions(
            lambda tp, p: broker in p.replicas and len(p.replicas) > 1 and p.has_leader_and_isr
        )
        led = [tp for tp in act_on if self.partitions[tp].leader == broker]
        followed = [tp for tp in act_on if self.partitions[tp].leader != broker]
        self.handle_online_state_changes(led, Strategy.CONTROLLED_SHUTDOWN)
        self.offline_replica_transitions((tp, broker) for tp in followed)
        return self.sorted_partitions(lambda tp, p: p.has_leader_and_isr and p.leader == broker)

    def controlled_shutdown(self, broker: int) -> None:
        """``KafkaServer.controlledShutdown``: up to ``controlled.shutdown.max.retries`` requests while
        partitions remain led by the broker, then the process exits and its session closes."""
        if broker not in self.live:
            return
        attempts = cfg.controlled_shutdown_max_retries(self.config) if cfg.controlled_shutdown_enabled(self.config) else 0
        for _ in range(max(attempts, 0)):
            if not self.do_controlled_shutdown(broker):
                break
        self.brokers_gone({broker})

    # --- KafkaController: reassignment ---------------------------------------------------------

    def maybe_resume_reassignments(self, should_resume: Callable[[PartitionState], bool]) -> None:
        for tp in self.sorted_partitions(lambda tp, p: p.is_being_reassigned and should_resume(p)):
            p = self.partitions[tp]
            self.on_partition_reassignment(tp, p.target_replicas)

    def on_partition_reassignment(self, tp: TopicPartition, target: tuple[int, ...]) -> None:
        """``onPartitionReassignment``: record RS = TRS ++ (ORS - TRS) with adding/removing
        (``updateCurrentReassignment``), then phase A (epoch +1, wait for the ISR) or, once every
        target replica is in the ISR, phase B (:meth:`complete_reassignment`)."""
        current = self.partitions[tp]
        origin = current.origin_replicas
        replicas = tuple(dict.fromkeys(target + origin))  # ReplicaAssignment.reassignTo
        adding = tuple(r for r in replicas if r not in origin)
        removing = tuple(r for r in replicas if r not in target)
        if (replicas, adding, removing) != (current.replicas, current.adding_replicas, current.removing_replicas):
            # A superseded reassignment's additions that are no longer wanted leave the ISR
            # (stopRemovedReplicasOfReassignedPartition) while they are still assigned here.
            self.offline_replica_transitions((tp, r) for r in current.replicas if r not in replicas)
            p = self.partitions[tp]
            self.partitions[tp] = p.with_changes(
                replicas=replicas,
                adding_replicas=adding,
                removing_replicas=removing,
                isr=tuple(r for r in p.isr if r in replicas),
                leader=p.leader if p.leader in replicas else NO_LEADER,
            )
        p = self.partitions[tp]
        if not p.has_leader_and_isr or not self.live:
            # updateLeaderEpoch / moveReassignedPartitionLeaderIfRequired need a state znode (Kafka
            # fails the reassignment after recording the assignment); without any live broker there
            # is no controller yet, and the next one resumes the reassignment when it fails over.
            return
        if self.is_reassignment_complete(p):
            self.complete_reassignment(tp)
        else:
            self.partitions[tp] = election.new_epoch(p)  # A1 updateLeaderEpochAndSendRequest; A2 NewReplica

    @staticmethod
    def is_reassignment_complete(p: PartitionState) -> bool:
        """``isReassignmentComplete``: not being reassigned, or every target replica is in the ISR."""
        return not p.is_being_reassigned or (p.has_leader_and_isr and set(p.target_replicas) <= set(p.isr))

    def complete_reassignment(self, tp: TopicPartition) -> None:
        """Phase B: ``moveReassignedPartitionLeaderIfRequired`` (B3), removed replicas ->
        OfflineReplica, one ISR write per removed ISR member (B4), AR = TRS (B2/B6).  The model
        keeps the full replica set until the removals are done so the ISR stays within it; the
        written states are the same."""
        self.move_reassigned_partition_leader_if_required(tp)
        removing = self.partitions[tp].removing_replicas
        self.offline_replica_transitions((tp, r) for r in removing)
        p = self.partitions[tp]
        self.partitions[tp] = p.with_changes(
            replicas=p.target_replicas,
            adding_replicas=(),
            removing_replicas=(),
            isr=tuple(r for r in p.isr if r not in removing),
            leader=NO_LEADER if p.leader in removing else p.leader,
        )

    def move_reassigned_partition_leader_if_required(self, tp: TopicPartition) -> None:
        """Leader not in the target or dead -> reassign election (first live target replica in the
        ISR; ISR unchanged; +1); otherwise only the epoch moves (``updateLeaderEpochAndSendRequest``)."""
        p = self.partitions[tp]
        if p.leader in p.target_replicas and p.leader in self.online:
            self.partitions[tp] = election.new_epoch(p)
        else:
            self.handle_online_state_changes([tp], Strategy.REASSIGN)

    # --- KafkaController: elections ------------------------------------------------------------

    def process_replica_leader_election(
        self, partitions: Iterable[TopicPartition], preferred: bool
    ) -> dict[TopicPartition, Outcome]:
        """``processReplicaLeaderElection`` for an admin request (``AdminClientTriggered``)."""
        outcomes: dict[TopicPartition, Outcome] = {}
        electable: list[TopicPartition] = []
        for tp in dict.fromkeys(partitions):
            p = self.partitions[tp]
            if preferred:
                needs = p.leader != p.preferred_replica
            else:
                needs = p.leader == NO_LEADER or p.leader not in self.online
            if needs:
                electable.append(tp)
            else:
                outcomes[tp] = Outcome.ELECTION_NOT_NEEDED
        strategy = Strategy.PREFERRED if preferred else Strategy.OFFLINE_ALLOW_UNCLEAN
        for tp, ok in self.handle_online_state_changes(electable, strategy).items():
            if ok:
                outcomes[tp] = Outcome.UNCLEAN_ELECTED if tp in self.unclean_elected else Outcome.ELECTED
            else:
                # PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE
                outcomes[tp] = Outcome.PREFERRED_LEADER_NOT_AVAILABLE if preferred else Outcome.NO_REPLICA_ONLINE
        return outcomes

    def check_and_trigger_auto_leader_rebalance(self) -> None:
        """``checkAndTriggerAutoLeaderRebalance``: per preferred broker B, the share of its partitions
        (AR.head == B) with a state znode whose leader is not B; strictly above
        ``leader.imbalance.per.broker.percentage`` / 100 -> preferred election for those whose
        preferred replica can lead (``canPreferredReplicaBeLeader``)."""
        threshold = cfg.leader_imbalance_per_broker_percentage(self.config) / 100
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp, p in sorted(self.partitions.items()):
            by_preferred.setdefault(p.preferred_replica, []).append(tp)
        for broker in sorted(by_preferred):
            group = by_preferred[broker]
            not_preferred = [
                tp for tp in group if self.partitions[tp].has_leader_and_isr and self.partitions[tp].leader != broker
            ]
            if len(not_preferred) / len(group) > threshold:
                candidates = [
                    tp
                    for tp in not_preferred
                    if preferred_replica_partition_leader_election(
                        self.partitions[tp].replicas, self.partitions[tp].isr, self.online
                    )
                    is not None
                ]
                self.handle_online_state_changes(candidates, Strategy.PREFERRED)

    # --- KafkaController: topics ---------------------------------------------------------------

    def on_new_partition_creation(self, topic: str, assignment: Mapping[int, tuple[int, ...]], config: Mapping[str, str]) -> list[TopicPartition]:
        """``onNewPartitionCreation``: NewPartition, then OnlinePartition (initialisation)."""
        self.topic_configs[topic] = dict(config)
        created = []
        for number in sorted(assignment):
            tp = TopicPartition(topic, number)
            self.partitions[tp] = PartitionState(
                replicas=assignment[number], leader=NO_LEADER, isr=(), leader_epoch=0, phase=PartitionPhase.NEW
            )
            created.append(tp)
        self.handle_online_state_changes(created, Strategy.OFFLINE)
        return created

    def process_topic_config_change(self, topic: str, changes: Mapping[str, str | None]) -> None:
        """The new overrides; ``TopicConfigHandler`` sends ``TopicUncleanLeaderElectionEnable`` when
        the topic's override parses as true, and ``processTopicUncleanLeaderElectionEnable`` runs
        the offline election for the topic's New/Offline partitions."""
        overrides = dict(self.topic_configs.get(topic, {}))
        for key, value in changes.items():
            if value is None:
                overrides.pop(key, None)
            else:
                overrides[key] = value
        self.topic_configs[topic] = overrides
        if cfg.topic_override_enables_unclean(overrides):
            self.trigger_online_partition_state_change(topic)

    # --- settling ------------------------------------------------------------------------------

    def settle(self) -> None:
        """What happens after the controller is done: every live replica of a partition with a live
        leader catches up and the *leader* adds it to the ISR (AlterPartition: appended, epoch
        unchanged; the leader sends RECOVERED since ``Partition.makeLeader`` marked it so).  A
        reassigning partition whose targets are then all in the ISR completes
        (``processAlterPartition`` -> ``maybeCompleteReassignment``)."""
        changed = True
        while changed:
            changed = False
            for tp in sorted(self.partitions):
                p = self.partitions[tp]
                if not p.has_leader_and_isr or p.leader not in self.online:
                    continue
                joining = tuple(r for r in p.replicas if r in self.online and r not in p.isr)
                if not joining:
                    continue
                self.partitions[tp] = p.with_changes(isr=p.isr + joining, leader_recovery_state=RECOVERED)
                changed = True
                if self.partitions[tp].is_being_reassigned and self.is_reassignment_complete(self.partitions[tp]):
                    self.complete_reassignment(tp)


# --- outcomes ---------------------------------------------------------------------------------

def _needs_election(p: PartitionState, live: Iterable[int]) -> bool:
    return p.phase is PartitionPhase.NEW or p.leader not in live


def _classify(
    tp: TopicPartition, before: PartitionState | None, after: PartitionState, live: set[int], unclean: set[TopicPartition]
) -> Outcome:
    if after.leader == NO_LEADER or after.leader not in live:
        return Outcome.NO_REPLICA_ONLINE
    if tp in unclean:
        return Outcome.UNCLEAN_ELECTED
    if before is None or before.leader != after.leader:
        return Outcome.ELECTED
    return Outcome.UNCHANGED


def _check_known(state: ClusterState, partitions: Iterable[TopicPartition]) -> None:
    for tp in partitions:
        if not state.has_partition(tp):
            raise ValueError(f"unknown partition {tp}")


def settled(state: ClusterState) -> ClusterState:
    """``state`` once every live follower of a partition with a live leader is back in the ISR (and
    caught-up reassignments have completed), with no event applied."""
    ctl = _Controller(state)
    ctl.settle()
    return ctl.freeze()


def apply_event(
    state: ClusterState, event: Event, event_index: int = 0
) -> tuple[ClusterState, tuple[PartitionOutcome, ...]]:
    """The settled state after ``event`` and one outcome per partition the event concerns:

    * broker failure / controlled shutdown / startup: partitions with a replica on those brokers,
      partitions that lacked a live leader before, and any partition whose state changed;
    * reassign: the partition; preferred / unclean election: each requested partition;
    * auto rebalance: the partitions whose state changed; create topic: each new partition;
    * topic config change: the topic's partitions that lacked a live leader, and changed ones.
    """
    ctl = _Controller(state)
    before = dict(ctl.partitions)
    live_before = set(ctl.live)
    explicit: dict[TopicPartition, Outcome] | None = None
    concerned: set[TopicPartition] = set()

    if isinstance(event, (BrokerFailure, BrokerStartup, ControlledShutdown)):
        brokers = {event.broker} if isinstance(event, ControlledShutdown) else set(event.brokers)
        concerned = {tp for tp, p in before.items() if brokers & set(p.replicas)}
        concerned |= {tp for tp, p in before.items() if _needs_election(p, live_before)}
        if isinstance(event, BrokerFailure):
            ctl.brokers_gone(brokers)
        elif isinstance(event, BrokerStartup):
            ctl.brokers_started(brokers)
        else:
            ctl.controlled_shutdown(event.broker)
    elif isinstance(event, Reassign):
        _check_known(state, [event.topic_partition])
        if not event.replicas or len(set(event.replicas)) != len(event.replicas):
            raise ValueError(f"reassignment of {event.topic_partition} needs distinct replicas, got {list(event.replicas)}")
        concerned = {event.topic_partition}
        ctl.on_partition_reassignment(event.topic_partition, tuple(event.replicas))
    elif isinstance(event, (PreferredElection, UncleanElection)):
        _check_known(state, event.partitions)
        explicit = ctl.process_replica_leader_election(event.partitions, preferred=isinstance(event, PreferredElection))
    elif isinstance(event, AutoRebalance):
        ctl.check_and_trigger_auto_leader_rebalance()
    elif isinstance(event, CreateTopic):
        if event.topic in state.topics:
            raise ValueError(f"topic {event.topic} already exists")
        concerned = set(ctl.on_new_partition_creation(event.topic, event.replicas, event.config))
    elif isinstance(event, TopicConfigChange):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        concerned = {tp for tp, p in before.items() if tp.topic == event.topic and _needs_election(p, live_before)}
        ctl.process_topic_config_change(event.topic, event.config)
    else:
        raise TypeError(f"not an oracle event: {event!r}")

    ctl.settle()
    after_state = ctl.freeze()
    after = dict(after_state.partitions())
    if explicit is None:
        concerned |= {tp for tp, p in after.items() if before.get(tp) != p}
        explicit = {
            tp: _classify(tp, before.get(tp), after[tp], ctl.live, ctl.unclean_elected) for tp in concerned
        }
    outcomes = tuple(
        PartitionOutcome(event_index, tp.topic, tp.partition, explicit[tp]) for tp in sorted(explicit)
    )
    return after_state, outcomes

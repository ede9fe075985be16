"""The ZooKeeper-mode controller's event handlers (``KafkaController.scala``, Kafka 3.9), applied to
the *settled* state left by the previous event.

Each event is run by a throw-away :class:`WorkingController` holding a mutable working copy (the
controller context plus the ZooKeeper partition state, which the controller keeps equal), then
settled (:meth:`WorkingController.settle`) and frozen into a new :class:`ClusterState`.  Method names
follow the Scala functions they model. Where Kafka does not fix the order in which it sees an
event, every legal order is enumerated by :mod:`oracle.interleavings`.
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, Iterable, Mapping

from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle import election
from kafka_chaos.oracle.kraft import controller as kraft_controller
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.outcomes import Outcome
from kafka_chaos.oracle.scala_order import hash_map_order
from kafka_chaos.oracle.selectors import preferred_replica_partition_leader_election
from kafka_chaos.oracle.state import (
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
    # a partition with a state znode is Online iff its leader is online (isReplicaOnline).
    if not p.has_leader_and_isr:
        return PartitionPhase.NEW
    return PartitionPhase.ONLINE if p.leader in live else PartitionPhase.OFFLINE


class WorkingController:
    """One controller's view while it processes one event.  Not shared, not kept."""

    def __init__(self, state: ClusterState) -> None:
        self.live: set[int] = set(state.live_brokers)  # liveBrokerEpochs.keySet (liveOrShuttingDown)
        self.shutting_down: set[int] = set()  # shuttingDownBrokerIds
        self.controller = state.controller
        self.release = state.release  # the controller's Kafka release: the key of rules that changed
        self.config: dict[str, str] = dict(state.config)
        self.topic_configs: dict[str, dict[str, str]] = {t: dict(ts.config) for t, ts in state.topics.items()}
        # replicasOnOfflineDirs (ControllerContext): broker -> partitions on its failed log dirs
        self.offline_dirs: dict[int, set[TopicPartition]] = {b: set(tps) for b, tps in state.offline_replicas.items()}
        self.partitions: dict[TopicPartition, PartitionState] = {}
        for tp, p in state.partitions():
            self.partitions[tp] = p.with_changes(phase=_settled_phase(p, self.online_for(tp)))
        self.unclean_elected: set[TopicPartition] = set()
        # topicsToBeDeleted, and the replicas of those topics in ReplicaDeletionSuccessful.  A settled
        # state keeps no controller memory: once the StopReplica answers are in, every replica of a
        # queued topic on an online broker has been deleted by the controller that queued it
        # (onPartitionDeletion, TopicDeletionManager.scala 3.9 lines 284-315).  Not so after a
        # failover that found the topic ineligible (README: what it cannot predict).
        self.deleting: set[str] = set(state.topics_being_deleted)
        self.forgotten: set[str] = set(state.deletions_forgotten)  # see ClusterState.deletions_forgotten
        self.rebalance_due = state.rebalance_check_due  # see ClusterState.rebalance_check_due
        self.deleted_replicas: set[tuple[TopicPartition, int]] = {
            (tp, r)
            for tp, p in self.partitions.items()
            if tp.topic in self.deleting and tp.topic not in self.forgotten
            for r in p.replicas
            if r in self.online_for(tp)
        } | set(state.deleted_offline_replicas)

    # --- ControllerContext ---------------------------------------------------------------------

    @property
    def online(self) -> set[int]:
        """``liveBrokerIds`` = registered brokers minus those in controlled shutdown."""
        return self.live - self.shutting_down

    def online_for(self, tp: TopicPartition) -> set[int]:
        """The brokers ``isReplicaOnline(_, tp)`` accepts (ControllerContext.scala 3.9 lines 242-248):
        live, not shutting down, and ``tp`` not on one of their failed log directories."""
        return {b for b in self.online if tp not in self.offline_dirs.get(b, ())}

    def is_queued_for_deletion(self, tp: TopicPartition) -> bool:
        """``isTopicQueuedUpForDeletion`` (``delete.topic.enable`` is checked when queueing)."""
        return tp.topic in self.deleting

    def sorted_partitions(self, predicate: Callable[[TopicPartition, PartitionState], bool]) -> list[TopicPartition]:
        return [tp for tp in sorted(self.partitions) if predicate(tp, self.partitions[tp])]

    def freeze(self) -> ClusterState:
        topics: dict[str, dict[int, PartitionState]] = {t: {} for t in self.topic_configs}
        for tp, p in self.partitions.items():
            # a shutting-down broker still counts as live here (its exit comes as its own step)
            online = {b for b in self.live if tp not in self.offline_dirs.get(b, ())}
            topics.setdefault(tp.topic, {})[tp.partition] = p.with_changes(phase=_settled_phase(p, online))
        return ClusterState(
            live_brokers=frozenset(self.live),
            topics={t: TopicState(partitions=parts, config=self.topic_configs.get(t, {})) for t, parts in topics.items()},
            controller=self.controller,
            config=self.config,
            release=self.release,
            topics_being_deleted=frozenset(self.deleting),
            # Kafka keeps stale entries (a replica reassigned away); the state holds hosted ones only.
            offline_replicas={
                b: frozenset(tp for tp in tps if tp in self.partitions and b in self.partitions[tp].replicas)
                for b, tps in self.offline_dirs.items()
                if b in self.live
            },
            # the deleted replicas a settled state cannot show: those whose broker is down now (and
            # none once no controller is left: the next one starts without memory)
            deleted_offline_replicas=frozenset(
                (tp, r) for tp, r in self.deleted_replicas
                if self.controller is not None and tp.topic in self.deleting and tp in self.partitions
                and r not in self.online_for(tp)
            ),
            deletions_forgotten=frozenset(self.forgotten & self.deleting),
            rebalance_check_due=self.rebalance_due,
        )

    # --- PartitionStateMachine -----------------------------------------------------------------

    def handle_online_state_changes(
        self, partitions: Iterable[TopicPartition], strategy: Strategy
    ) -> dict[TopicPartition, bool]:
        """``ZkPartitionStateMachine.doHandleStateChanges(..., OnlinePartition, strategy)``: New
        partitions are initialised, the others elected with ``strategy``.  Returns success per
        partition; a failure writes nothing and leaves the phase alone."""
        results: dict[TopicPartition, bool] = {}
        for tp in partitions:
            online = self.online_for(tp)  # doElectLeaderForPartitions: isReplicaOnline per partition
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
                cfg.leader_recovery_supported(self.config, self.release),
            )
        if strategy is Strategy.REASSIGN:
            return election.leader_for_reassign(p, online)
        if strategy is Strategy.PREFERRED:
            return election.leader_for_preferred_replica(p, online)
        offline_dir = {b for b in self.live if tp in self.offline_dirs.get(b, ())}
        return election.leader_for_controlled_shutdown(p, self.live - offline_dir, self.shutting_down)

    def unclean_allowed(self, tp: TopicPartition, p: PartitionState, *, allow_unclean: bool) -> bool:
        """``collectUncleanLeaderElectionState``: unclean is considered only when no ISR member is
        online, then allowed by the admin request or by the topic's merged config."""
        if any(r in self.online_for(tp) for r in p.isr):
            return False
        return allow_unclean or cfg.unclean_leader_election_enabled(self.config, self.topic_configs.get(tp.topic, {}))

    def trigger_online_partition_state_change(self, topic: str | None = None) -> None:
        """``PartitionStateMachine.triggerOnlinePartitionStateChange``: every New/Offline partition
        (of ``topic`` if given) gets the offline election, except partitions of topics queued for
        deletion (``triggerOnlineStateChangeForPartitions``, PartitionStateMachine.scala 3.9 lines 69-76)."""
        candidates = self.sorted_partitions(
            lambda tp, p: p.phase in (PartitionPhase.NEW, PartitionPhase.OFFLINE)
            and topic in (None, tp.topic)
            and not self.is_queued_for_deletion(tp)
        )
        self.handle_online_state_changes(candidates, Strategy.OFFLINE)

    def mark_partitions_with_offline_leader(self) -> None:
        """``partitionsWithOfflineLeader`` -> OfflinePartition (any partition with a state znode
        whose leader is not online, leader -1 included, except topics queued for deletion:
        ControllerContext.scala 3.9 lines 479-484)."""
        for tp in self.sorted_partitions(
            lambda tp, p: p.has_leader_and_isr and p.leader not in self.online_for(tp) and not self.is_queued_for_deletion(tp)
        ):
            self.partitions[tp] = self.partitions[tp].with_changes(phase=PartitionPhase.OFFLINE)

    # --- ReplicaStateMachine -------------------------------------------------------------------

    def offline_replica_transitions(self, replicas: Iterable[tuple[TopicPartition, int]]) -> None:
        """``ZkReplicaStateMachine.handleStateChanges(replicas, OfflineReplica)`` (ReplicaStateMachine.scala
        3.9 lines 107-113): ``replicas.groupBy(_.replica).forKeyValue`` runs one ``doRemoveReplicasFromIsr``
        per broker, each reading the state the previous one wrote, so the broker visited last is the ISR
        member kept (lines 341-346).  ``groupBy`` builds an ``immutable.HashMap``: the visiting order is
        the CHAMP order of the broker ids (:func:`oracle.scala_order.hash_map_order`; {4, 5} visits 5
        then 4), not ascending.  Every caller (broker failure, controller failover, controlled shutdown,
        reassignment) goes through here."""
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, broker in replicas:
            by_broker.setdefault(broker, []).append(tp)
        for broker in hash_map_order(by_broker):
            for tp in sorted(set(by_broker[broker])):
                removed = election.remove_replica_from_isr(self.partitions[tp], broker)
                if removed is not None:
                    self.partitions[tp] = removed

    def replicas_on_brokers(self, brokers: set[int]) -> list[tuple[TopicPartition, int]]:
        return [(tp, b) for tp, p in sorted(self.partitions.items()) for b in p.replicas if b in brokers]

    # --- KafkaController: brokers --------------------------------------------------------------

    def on_broker_failure(self, dead: set[int]) -> None:
        """``processBrokerChange`` (removeLiveBrokers) then ``onBrokerFailure`` (KafkaController.scala
        3.9 lines 635-646: the brokers' ``replicasOnOfflineDirs`` entries dropped) ->
        ``onReplicasBecomeOffline``."""
        self.live -= dead
        self.shutting_down -= dead
        for broker in dead:
            self.offline_dirs.pop(broker, None)
        self.on_replicas_become_offline(self.replicas_on_brokers(dead))

    def on_replicas_become_offline(self, replicas: list[tuple[TopicPartition, int]]) -> None:
        """``onReplicasBecomeOffline`` (KafkaController.scala 3.9 lines 664-692): mark partitions with
        an offline leader, elect everything New/Offline, then OfflineReplica for the replicas *not*
        of topics queued for deletion.  Those of queued topics go to ReplicaDeletionIneligible
        (``failReplicaDeletion``) — valid only from OfflineReplica/ReplicaDeletionStarted, and in a
        settled state an online replica of a queued topic is already ReplicaDeletionSuccessful, so
        nothing is written for them."""
        self.mark_partitions_with_offline_leader()
        self.trigger_online_partition_state_change()
        self.offline_replica_transitions([(tp, b) for tp, b in replicas if not self.is_queued_for_deletion(tp)])

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
        """``onBrokerStartup`` (KafkaController.scala 3.9 lines 572-604): the brokers'
        ``replicasOnOfflineDirs`` entries dropped, OnlineReplica (no ZK write), offline elections for
        every New/Offline partition, resume reassignments that target a new broker, then resume the
        deletion of queued topics with a replica on a new broker (``resumeDeletionForTopics``).
        Leadership is *not* given back."""
        self.live |= new
        for broker in new:
            self.offline_dirs.pop(broker, None)
        self.trigger_online_partition_state_change()
        self.maybe_resume_reassignments(lambda p: any(r in new for r in p.target_replicas))
        resumed = sorted({tp.topic for tp, p in self.partitions.items() if self.is_queued_for_deletion(tp) and new & set(p.replicas)})
        if resumed:
            self.resume_deletions(*resumed)

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
        ``initializePartitionReassignments``, and the auto-rebalance task scheduled 5 s later
        (``ClusterState.rebalance_check_due``: run once the step's events are done)."""
        self.shutting_down.clear()
        # A new controller has no ReplicaDeletionSuccessful replicas (initializeReplicaState).
        self.deleted_replicas.clear()
        self.forgotten = set(self.deleting)
        self.offline_replica_transitions(
            [(tp, r) for tp, p in sorted(self.partitions.items()) for r in p.replicas if r not in self.online_for(tp)]
        )
        for tp, p in self.partitions.items():
            self.partitions[tp] = p.with_changes(phase=_settled_phase(p, self.online_for(tp)))
        self.trigger_online_partition_state_change()
        if any(p.is_being_reassigned and not p.has_leader_and_isr for p in self.partitions.values()):
            # initializePartitionReassignments (KafkaController.scala 3.9 lines 1010-1017) resumes every
            # reassignment; one whose partition still has no state znode reaches updateLeaderEpoch, which
            # throws IllegalStateException (lines 1283-1285).  onControllerFailover aborts there, elect()
            # calls triggerControllerMove (lines 1577-1580) and the next controller does the same: the
            # resumes and the auto-rebalance never happen, and the writes above are repeated on every
            # round until one of the partition's replicas starts (README: what it cannot predict).
            return
        self.maybe_resume_reassignments(lambda p: True)
        # topicDeletionManager.tryTopicDeletion (KafkaController.scala 3.9 line 322): a queued topic with
        # every replica online is deleted; one with an offline replica is ineligible
        # (fetchTopicDeletionsInProgress, lines 1019-1030) and waits, its online replicas *not* deleted.
        eligible = [t for t in sorted(self.deleting) if self.all_replicas_online(t) and not self.topic_being_reassigned(t)]
        if eligible:
            self.resume_deletions(*eligible)
        self.rebalance_due = cfg.auto_leader_rebalance_enabled(self.config)

    def do_controlled_shutdown(self, broker: int) -> list[TopicPartition]:
        """``doControlledShutdown`` (KafkaController.scala 3.9 lines 1360-1410): acts only on partitions
        with RF > 1 and a state znode; leaders move by the controlled-shutdown election, followers leave
        the ISR (OfflineReplica).  Returns ``partitionLeadersOnBroker`` (ControllerContext.scala lines
        486-492), which also filters on ``partitionReplicaAssignment(tp).size > 1``: RF = 1 partitions
        never count as remaining, so they cause no retry."""
        self.shutting_down.add(broker)
        act_on = self.sorted_partitions(
            lambda tp, p: broker in p.replicas
            and len(p.replicas) > 1
            and p.has_leader_and_isr
            and not self.is_queued_for_deletion(tp)  # lines 1385-1390
        )
        led = [tp for tp in act_on if self.partitions[tp].leader == broker]
        followed = [tp for tp in act_on if self.partitions[tp].leader != broker]
        self.handle_online_state_changes(led, Strategy.CONTROLLED_SHUTDOWN)
        self.offline_replica_transitions((tp, broker) for tp in followed)
        return self.sorted_partitions(
            lambda tp, p: p.has_leader_and_isr
            and p.leader == broker
            and len(p.replicas) > 1
            and not self.is_queued_for_deletion(tp)
        )

    def controlled_shutdown(self, broker: int) -> None:
        """``KafkaServer.controlledShutdown`` (KafkaServer.scala 3.9 lines 850-936): up to
        ``controlled.shutdown.max.retries`` requests while the answer lists remaining partitions (RF > 1
        ones still led by the broker, see :meth:`do_controlled_shutdown`), then the process exits and
        its session closes.  Each extra request rewrites the leaderless partitions whose ISR is still
        the broker's (+1 each time through OfflineReplica of the followers, and the retried election)."""
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
        if self.is_queued_for_deletion(tp) and not self.topic_being_reassigned(tp.topic):
            # B: topicDeletionManager.resumeDeletionForTopics (KafkaController.scala 3.9 line 812)
            self.resume_deletions(tp.topic)

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
        """``processReplicaLeaderElection`` for an admin request (``AdminClientTriggered``).

        Splitting the request into electable and already-valid partitions reads
        ``partitionLeadershipInfo(partition).get`` for every requested partition (KafkaController.scala
        3.9 lines 2234-2246).  A partition without leadership information (created while all its
        replicas were down: no state znode) makes that ``.get`` throw ``NoSuchElementException``
        *before* ``onReplicaElection`` runs: ``process`` logs it (lines 2659-2664), nothing is
        written for any partition of the request and the callback never answers (the admin client
        times out).  Every requested partition's outcome is then ``request_failed``."""
        requested = list(dict.fromkeys(partitions))
        outcomes: dict[TopicPartition, Outcome] = {}
        # Partitions of topics queued for deletion are answered INVALID_TOPIC_EXCEPTION before the
        # split (lines 2226-2231, 2263-2265): nothing is written for them.
        being_deleted = [tp for tp in requested if self.is_queued_for_deletion(tp)]
        requested = [tp for tp in requested if not self.is_queued_for_deletion(tp)]
        for tp in being_deleted:
            leaderless = self.partitions[tp].leader not in self.live  # -1, or a dead broker left there
            outcomes[tp] = Outcome.NO_REPLICA_ONLINE if leaderless else Outcome.UNCHANGED
        if any(not self.partitions[tp].has_leader_and_isr for tp in requested):
            return {tp: Outcome.REQUEST_FAILED for tp in requested + being_deleted}
        electable: list[TopicPartition] = []
        for tp in requested:
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
        """``checkAndTriggerAutoLeaderRebalance`` (which also answers a failover's scheduled check):
        per preferred broker B, the share of its partitions
        (AR.head == B) with a state znode whose leader is not B; strictly above
        ``leader.imbalance.per.broker.percentage`` / 100 -> preferred election for those whose
        preferred replica can lead (``canPreferredReplicaBeLeader``)."""
        self.rebalance_due = False
        threshold = cfg.leader_imbalance_per_broker_percentage(self.config) / 100
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp, p in sorted(self.partitions.items()):
            if not self.is_queued_for_deletion(tp):  # lines 1293-1296
                by_preferred.setdefault(p.preferred_replica, []).append(tp)
        for broker in sorted(by_preferred):
            group = by_preferred[broker]
            not_preferred = [
                tp for tp in group if self.partitions[tp].has_leader_and_isr and self.partitions[tp].leader != broker
            ]
            if len(not_preferred) / len(group) > threshold:
                candidates = [tp for tp in not_preferred if self.auto_rebalance_candidate(tp, broker)]
                self.handle_online_state_changes(candidates, Strategy.PREFERRED)

    def auto_rebalance_candidate(self, tp: TopicPartition, preferred: int) -> bool:
        """The ``candidatePartitions`` filter of ``checkAndTriggerAutoLeaderRebalance``, by release:
        before 3.4 nothing while any partition is being reassigned (``partitionsBeingReassigned.isEmpty``,
        removed by KAFKA-10149: KafkaController.scala 3.3.2 vs 3.4.1); from 2.6 only a preferred
        replica that can lead (``canPreferredReplicaBeLeader``: live and in the ISR, KAFKA-9866),
        before it any live preferred replica (``isReplicaOnline(leaderBroker, tp)``, 2.5.1), whose
        election then fails when it is out of the ISR (``leaderForPreferredReplica``)."""
        if not self.release.at_least(3, 4) and any(p.is_being_reassigned for p in self.partitions.values()):
            return False
        p = self.partitions[tp]
        if not self.release.at_least(2, 6):
            return preferred in self.online_for(tp)
        return preferred_replica_partition_leader_election(p.replicas, p.isr, self.online_for(tp)) is not None

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

    def add_partitions(self, topic: str, assignment: Mapping[int, tuple[int, ...]]) -> list[TopicPartition]:
        """``processPartitionModifications`` (KafkaController.scala 3.9 lines 1742-1785): partitions
        new to the controller go through ``onNewPartitionCreation`` (lines 699-708: NewPartition,
        then OnlinePartition = initialisation with the online replicas; none online -> it stays
        NewPartition, no state znode, until ``onBrokerStartup`` elects it).  For a topic queued for
        deletion the assignment is restored and nothing is added."""
        if topic in self.deleting:
            return []
        return self.on_new_partition_creation(topic, assignment, self.topic_configs.get(topic, {}))

    # --- TopicDeletionManager ------------------------------------------------------------------

    def topic_partitions(self, topic: str) -> list[TopicPartition]:
        return [tp for tp in sorted(self.partitions) if tp.topic == topic]

    def all_replicas_online(self, topic: str) -> bool:
        return all(r in self.online_for(tp) for tp in self.topic_partitions(topic) for r in self.partitions[tp].replicas)

    def topic_being_reassigned(self, topic: str) -> bool:
        return any(self.partitions[tp].is_being_reassigned for tp in self.topic_partitions(topic))

    def process_topic_deletion(self, topic: str) -> None:
        """``processTopicDeletion`` (KafkaController.scala 3.9 lines 1787-1811): with
        ``delete.topic.enable=false`` the request is dropped; a topic with a reassignment in progress
        is queued but ineligible (it resumes when the reassignment completes, line 812); otherwise
        ``enqueueTopicsForDeletion`` -> ``resumeDeletions``."""
        if not cfg.delete_topic_enabled(self.config):
            return
        self.deleting.add(topic)
        if not self.topic_being_reassigned(topic):
            self.resume_deletions(topic)

    def resume_deletions(self, *topics: str) -> None:
        """``resumeDeletions`` -> ``onTopicDeletion`` -> ``onPartitionDeletion`` (TopicDeletionManager.scala
        3.9 lines 256-356), then what the StopReplica answers trigger:

        * online replicas not yet deleted: OfflineReplica — the ISR removal *writes*
          (``doRemoveReplicasFromIsr`` per broker in ``groupBy`` order: the leader becomes -1, the
          last ISR member is kept, +1 each) — then ReplicaDeletionStarted; their brokers answer and
          they become ReplicaDeletionSuccessful (``completeReplicaDeletion``, lines 205-210);
        * offline replicas: ReplicaDeletionIneligible (lines 306-313), the topic is marked
          ineligible;
        * every replica deleted -> ``completeDeleteTopic`` (lines 238-247): the topic znode, its
          config and ``/admin/delete_topics/<t>`` are removed;
        * otherwise, once the answers are in (nothing left in ReplicaDeletionStarted), the ineligible
          replicas are retried: ReplicaDeletionIneligible -> OfflineReplica
          (``retryDeletionForIneligibleReplicas``, lines 231-236, 325-350), another ISR removal for
          each offline replica still in the ISR; the topic stays ineligible and waits for
          ``onBrokerStartup``.

        Several topics resumed together go through one ``handleStateChanges`` per transition, so
        their replicas share one ``groupBy`` over brokers (its HashMap order depends on the whole
        set of broker ids)."""
        partitions = [tp for topic in topics for tp in self.topic_partitions(topic)]
        alive = [
            (tp, r)
            for tp in partitions
            for r in self.partitions[tp].replicas
            if r in self.online_for(tp) and (tp, r) not in self.deleted_replicas
        ]
        self.offline_replica_transitions(alive)
        self.deleted_replicas |= set(alive)
        self.forgotten -= set(topics)
        retry: list[tuple[TopicPartition, int]] = []
        for topic in topics:
            own = self.topic_partitions(topic)
            dead = [(tp, r) for tp in own for r in self.partitions[tp].replicas if r not in self.online_for(tp)]
            if dead:
                if any(tp.topic == topic for tp, _ in alive):  # answers came: resumeDeletions retries
                    retry += dead
                continue
            for tp in own:
                del self.partitions[tp]
            self.deleted_replicas = {(tp, r) for tp, r in self.deleted_replicas if tp.topic != topic}
            self.topic_configs.pop(topic, None)
            self.deleting.discard(topic)
            for tps in self.offline_dirs.values():
                tps.difference_update(own)
        self.offline_replica_transitions(retry)

    # --- log directories -----------------------------------------------------------------------

    def on_log_dir_failure(self, broker: int, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """``processLogDirEventNotification`` -> ``onBrokerLogDirFailure`` (KafkaController.scala 3.9
        lines 551-556, 1730-1740): OnlineReplica for every replica on the broker (LeaderAndIsr, no
        write); the broker answers KAFKA_STORAGE_ERROR for the partitions on its failed directory and
        ``processLeaderAndIsrResponseReceived`` (lines 1421-1449) records them in
        ``replicasOnOfflineDirs`` and calls ``onReplicasBecomeOffline`` for the new ones: partitions
        led there are elected elsewhere (their ISR minus the broker, order kept; +1), then the
        broker leaves the ISR of the others (+1)."""
        if broker not in self.live:
            return []
        hosted = {tp for tp in partitions if tp in self.partitions and broker in self.partitions[tp].replicas}
        previous = self.offline_dirs.setdefault(broker, set())
        new = sorted(hosted - previous)
        previous |= hosted
        self.on_replicas_become_offline([(tp, broker) for tp in new])
        return new

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

    def throttled(self, tp: TopicPartition, broker: int) -> bool:
        """Whether ``broker``'s follower replica of ``tp`` is throttled by its topic's config."""
        return cfg.follower_throttled(self.topic_configs.get(tp.topic, {}), tp.partition, broker)

    def settle(self, throttled_behind: bool = False) -> None:
        """What happens after the controller is done: every live replica of a partition with a live
        leader catches up and the *leader* adds it to the ISR (AlterPartition: appended, epoch
        unchanged; the leader sends RECOVERED since ``Partition.makeLeader`` marked it so).  A
        reassigning partition whose targets are then all in the ISR completes
        (``processAlterPartition`` -> ``maybeCompleteReassignment``).  ``throttled_behind``: a
        follower its topic throttles (:func:`config.throttled_followers`) stays out -- whether it
        catches up hangs on its broker's throttle rate, a dynamic broker config the model does not
        see, so both are legal (:func:`interleavings.iter_event_alternatives`)."""
        changed = True
        while changed:
            changed = False
            for tp in sorted(self.partitions):
                p = self.partitions[tp]
                online = self.online_for(tp)  # a replica on a failed log directory cannot fetch
                if not p.has_leader_and_isr or p.leader not in online:
                    continue
                joining = tuple(r for r in p.replicas if r in online and r not in p.isr
                                and not (throttled_behind and self.throttled(tp, r)))
                if not joining:
                    continue
                self.partitions[tp] = p.with_changes(isr=p.isr + joining, leader_recovery_state=RECOVERED)
                changed = True
                if self.partitions[tp].is_being_reassigned and self.is_reassignment_complete(self.partitions[tp]):
                    self.complete_reassignment(tp)


# --- outcomes ---------------------------------------------------------------------------------

def needs_election(p: PartitionState, live: Iterable[int]) -> bool:
    return p.phase is PartitionPhase.NEW or p.leader not in live


def classify_outcomes(
    tp: TopicPartition, before: PartitionState | None, after: PartitionState, live: set[int], unclean: set[TopicPartition]
) -> Outcome:
    if after.leader == NO_LEADER or after.leader not in live:
        return Outcome.NO_REPLICA_ONLINE
    if tp in unclean:
        return Outcome.UNCLEAN_ELECTED
    if before is None or before.leader != after.leader:
        return Outcome.ELECTED
    return Outcome.UNCHANGED


def check_known(state: ClusterState, partitions: Iterable[TopicPartition]) -> None:
    for tp in partitions:
        if not state.has_partition(tp):
            raise ValueError(f"unknown partition {tp}")


def settled(state: ClusterState) -> ClusterState:
    """``state`` once every live follower of a partition with a live leader is back in the ISR (and
    caught-up reassignments have completed), with no event applied.  In KRaft mode the leaders'
    AlterPartition requests (:func:`oracle.kraft.controller.settled`: partition epoch +1 each)."""
    if state.mode is Mode.KRAFT:
        return kraft_controller.settled(state)
    ctl = WorkingController(state)
    ctl.settle()
    return ctl.freeze()

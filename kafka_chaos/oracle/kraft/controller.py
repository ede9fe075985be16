"""The KRaft quorum controller's partition decisions (Kafka 3.9), applied to the *settled* state
left by the previous event.

Each event is run by a throw-away :class:`KRaftController` holding a mutable working copy of
what the active controller's ``ReplicationControlManager`` / ``ClusterControlManager`` know (the
partition registrations, which brokers are active, topic configs, offline log directories),
then settled (:meth:`KRaftController.settle`: the leaders' AlterPartition requests) and frozen
into a new :class:`ClusterState`.  Method names follow the Java methods they model; every
partition change goes through :func:`oracle.kraft.builder.change` (``PartitionChangeBuilder``).

Line numbers are those of apache/kafka branch ``3.9`` (commit ``c821449fb7c1``), files under
``metadata/src/main/java/org/apache/kafka/controller/`` unless said otherwise.  The handlers of
3.6.x (ReplicationControlManager.java 3.6.1: ``handleBrokerFenced`` lines 1226-1243,
``handleBrokerUnfenced`` 1275-1287, ``handleBrokerInControlledShutdown`` 1300-1310, ``electLeader``
1368-1412, ``processBrokerHeartbeat`` 1414-1450, ``maybeFenceOneStaleBroker`` 1480-1492,
``maybeBalancePartitionLeaders`` 1506-1542, ``generateLeaderAndIsrUpdates`` 1717-1787,
``changePartitionReassignment`` 1910-1940) build the same changes with ``clusterControl::isActive``
(no ``LeaderAcceptor``: no directories before 3.7); those of 3.7.x and 3.8.x (the 3.7.2 / 3.8.1
sources jars: ``alterPartition`` lines 1009 / 1021, ``handleBrokerFenced`` 1289 / 1301,
``handleBrokerUnfenced`` 1338 / 1352, ``handleBrokerInControlledShutdown`` 1363 / 1377,
``electLeader`` 1470 / 1498, ``processBrokerHeartbeat`` 1520 / 1548, ``maybeBalancePartitionLeaders``
1615 / 1643, ``generateLeaderAndIsrUpdates`` 1821 / 1853, ``changePartitionReassignment`` 2021 /
2062) are 3.9's with ``eligibleLeaderReplicasEnabled`` off, 3.8's passing ``brokerWithUncleanShutdown``
= NO_LEADER.  What the release changes is read through :mod:`oracle.kraft.config` (``self.release``).

Iteration orders: ``brokersToIsrs.partitionsWithBrokerInIsr`` / ``partitionsWithNoLeader``
(BrokersToIsrs.java lines 278-292) and ``imbalancedPartitions`` (a ``TimelineHashSet``) iterate
in hash order, but every handler builds at most one record per partition from the
registration as it was *before* the handler (records are replayed after the whole batch is
generated), so partitions are independent and any order gives the same result: the model uses
(topic, partition) order.  The order that does matter -- which broker is fenced (or unfenced)
first -- is enumerated by :mod:`oracle.kraft.interleavings`.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle.kraft import builder
from kafka_chaos.oracle.kraft import config as kcfg
from kafka_chaos.oracle.kraft import migration
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.outcomes import Outcome
from kafka_chaos.oracle.state import (
    NO_LEADER,
    RECOVERED,
    ClusterState,
    PartitionPhase,
    PartitionState,
    TopicPartition,
    TopicState,
)

MIN_INSYNC_REPLICAS = "min.insync.replicas"


def _without(test: Callable[[int], bool], broker: int) -> Callable[[int], bool]:
    """``test`` that also refuses ``broker`` (NO_LEADER: refuses nothing more)."""
    return lambda replica: replica != broker and test(replica)


def _phase(p: PartitionState, active: Iterable[int]) -> PartitionPhase:
    # KRaft has no NewPartition: a partition is created with a leader (createTopic refuses one
    # without an active replica). Online iff its leader is an active broker.
    return PartitionPhase.ONLINE if p.leader != NO_LEADER and p.leader in active else PartitionPhase.OFFLINE


class KRaftController:
    """The active controller's view while it processes one event.  Not shared, not kept."""

    def __init__(self, state: ClusterState) -> None:
        if state.mode is not Mode.KRAFT:
            raise ValueError("the KRaft model needs a ClusterState with mode kraft")
        # ClusterControlManager.isActive (ClusterControlManager.java lines 737-745): registered,
        # not fenced, not in controlled shutdown.
        self.active: set[int] = set(state.live_brokers)
        self.controller = state.controller
        self.release = state.release
        self.config: dict[str, str] = dict(state.config)
        self.metadata_version = kcfg.metadata_version(self.config, self.release)
        # ZooKeeper migration mode (oracle.kraft.migration): ClusterControlManager.zkRegistrationAllowed,
        # the builders' zkMigrationEnabled, and the brokers registered as migrating ZK brokers.
        self.zk_registration_allowed = migration.zk_registration_allowed(self.config, self.metadata_version)
        self.bump_leader_epoch_on_isr_shrink = migration.isr_shrink_bumps_leader_epoch(
            self.config, self.metadata_version)
        self.zk_brokers = migration.migrating_zk_brokers(self.config)
        self.topic_configs: dict[str, dict[str, str]] = {t: dict(ts.config) for t, ts in state.topics.items()}
        # BrokerRegistration.directories minus the failed ones: broker -> partitions whose
        # directory on it is offline (LeaderAcceptor.test -> ClusterControlManager.hasOnlineDir)
        self.offline_dirs: dict[int, set[TopicPartition]] = {b: set(tps) for b, tps in state.offline_replicas.items()}
        self.partitions: dict[TopicPartition, PartitionState] = {
            tp: p.with_changes(phase=_phase(p, self.active)) for tp, p in state.partitions()
        }
        self.unclean_elected: set[TopicPartition] = set()
        # KIP-966 (Kafka 4.x): the finalized eligible.leader.replicas.version, else the format default
        self.elr_on = kcfg.elr_feature_enabled(self.config, self.release)

    # --- ClusterControlManager / LeaderAcceptor --------------------------------------------------

    def acceptable(self, tp: TopicPartition, *, removing: int = NO_LEADER, adding: int = NO_LEADER) -> Callable[[int], bool]:
        """The ``isAcceptableLeader`` of ``generateLeaderAndIsrUpdates`` (ReplicationControlManager.java
        lines 1915-1917: not the broker being removed, and the broker being added or an active one)
        wrapped in a ``LeaderAcceptor`` (lines 2343-2365: its directory holding the partition online).
        Without ``removing``/``adding`` it is the plain ``LeaderAcceptor(clusterControl, partition)``
        (``clusterControl::isActive``) of elections, reassignments and AlterPartition."""
        offline = self.offline_dirs

        def test(replica: int) -> bool:
            if replica == removing or not (replica == adding or replica in self.active):
                return False
            return tp not in offline.get(replica, ())

        return test

    def unclean_enabled(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable`` as the controller reads it: always false
        before 3.9.0 (:func:`kcfg.unclean_leader_election_configurable`)."""
        return kcfg.unclean_leader_election_enabled(self.config, self.topic_configs.get(topic, {}), self.release)

    def min_isr(self, tp: TopicPartition) -> int:
        """``getTopicEffectiveMinIsr`` (ReplicationControlManager.java 4.1.2 lines 2350-2356): the
        topic's effective ``min.insync.replicas`` (default 1), at most the replication factor of
        its partition 0."""
        merged = {**self.config, **self.topic_configs.get(tp.topic, {})}
        try:
            configured = int(str(merged.get(MIN_INSYNC_REPLICAS, "1")).strip())
        except ValueError:
            configured = 1
        first = self.partitions.get(TopicPartition(tp.topic, 0), self.partitions[tp])
        return min(configured, len(first.replicas))

    def elr_switches(self, tp: TopicPartition, unclean_shutdown: int = NO_LEADER) -> builder.Elr | None:
        """The builder's KIP-966 switches, None with ELR off (every 3.x release, 4.0.x by default)."""
        if not self.elr_on:
            return None
        return builder.Elr(
            min_isr=self.min_isr(tp),
            unclean_shutdown_replicas=() if unclean_shutdown == NO_LEADER else (unclean_shutdown,),
            lke_must_be_acceptable=kcfg.last_known_leader_must_be_acceptable(self.release),
            lke_simplified=kcfg.last_known_leader_simplified(self.release),
        )

    def _change(self, tp: TopicPartition, acceptable: Callable[[int], bool], *, unclean_shutdown: int = NO_LEADER,
                **targets: object) -> bool:
        """One ``PartitionChangeBuilder`` build + replay; True if a record was written.  The
        release's builder: :func:`kcfg.isr_shrink_bump_reads_target_isr` and
        :func:`kcfg.reassignment_completes_when_adding_in_isr` (both before 3.8.0)."""
        result = builder.change(
            self.partitions[tp],
            acceptable,
            bump_leader_epoch_on_isr_shrink=self.bump_leader_epoch_on_isr_shrink,
            leader_recovery_supported=kcfg.leader_recovery_supported(self.metadata_version),
            isr_shrink_bump_reads_target_isr=kcfg.isr_shrink_bump_reads_target_isr(self.release),
            reassignment_completes_when_adding_in_isr=kcfg.reassignment_completes_when_adding_in_isr(self.release),
            elr=self.elr_switches(tp, unclean_shutdown),
            reassignment_kafka_19975=kcfg.reassignment_completes_kafka_19975(self.release),
            **targets,  # type: ignore[arg-type]
        )
        if result is None:
            return False
        changed, unclean = result
        if changed.unassigned_dirs and not set(changed.unassigned_dirs) <= set(changed.replicas):
            # a replica that left takes its directory with it (PartitionChangeBuilder re-maps
            # directories by replica); a new one gets its broker's default directory
            changed = changed.with_changes(unassigned_dirs=tuple(b for b in changed.unassigned_dirs
                                                                 if b in changed.replicas))
        self.partitions[tp] = changed
        if unclean:
            self.unclean_elected.add(tp)
        return True

    def sorted_partitions(self, predicate: Callable[[TopicPartition, PartitionState], bool]) -> list[TopicPartition]:
        return [tp for tp in sorted(self.partitions) if predicate(tp, self.partitions[tp])]

    def partitions_with_broker_in_isr(self, broker: int) -> list[TopicPartition]:
        """``BrokersToIsrs.partitionsWithBrokerInIsr`` (BrokersToIsrs.java lines 286-288)."""
        return self.sorted_partitions(lambda tp, p: broker in p.isr)

    def partitions_with_broker_in_elr(self, broker: int) -> list[TopicPartition]:
        """``BrokersToElrs.partitionsWithBrokerInElr`` (4.x)."""
        return self.sorted_partitions(lambda tp, p: broker in p.elr)

    def partitions_with_no_leader(self) -> list[TopicPartition]:
        """``BrokersToIsrs.partitionsWithNoLeader`` (lines 278-280)."""
        return self.sorted_partitions(lambda tp, p: p.leader == NO_LEADER)

    # --- ReplicationControlManager: brokers ------------------------------------------------------

    def generate_leader_and_isr_updates(
        self, partitions: Iterable[TopicPartition], *, broker_to_remove: int = NO_LEADER, broker_to_add: int = NO_LEADER,
        broker_with_unclean_shutdown: int = NO_LEADER,
    ) -> None:
        """``generateLeaderAndIsrUpdates`` (ReplicationControlManager.java lines 1891-1973): per
        partition a builder with target ISR = ISR minus ``broker_to_remove`` (order kept), the
        UNCLEAN election when the topic's ``unclean.leader.election.enable`` is true (lines
        1941-1943), else ONLINE.  4.x's ``brokerWithUncleanShutdown`` (4.1.2 lines 1974-2033) is
        unacceptable too, left out of the target ISR and passed as the builder's unclean-shutdown
        replica (left out of the ELR)."""
        gone = {broker_to_remove, broker_with_unclean_shutdown}
        for tp in partitions:
            p = self.partitions[tp]
            election = builder.Election.UNCLEAN if self.unclean_enabled(tp.topic) else builder.Election.ONLINE
            self._change(
                tp,
                _without(self.acceptable(tp, removing=broker_to_remove, adding=broker_to_add),
                         broker_with_unclean_shutdown),
                unclean_shutdown=broker_with_unclean_shutdown,
                election=election,
                target_isr=tuple(r for r in p.isr if r not in gone),
            )

    def handle_broker_registration(self, broker: int, clean: bool) -> None:
        """A new incarnation's registration on 4.x (``registerBroker``, ClusterControlManager.java
        4.1.2 lines 362, 434-436 -> ``handleBrokerShutdown``, ReplicationControlManager.java 4.1.2
        lines 1438-1451): with ELR on and an unclean shutdown (no clean-shutdown file: SIGKILL, power
        failure) the broker leaves every ISR and ELR it is in (``brokerWithUncleanShutdown``: +1
        partition epoch where it was in the ELR); otherwise the fence builder runs again over the
        partitions whose ISR holds it (no record unless an unclean-enabled topic can elect another
        replica).  Nothing before 4.0 (:func:`kcfg.registration_runs_shutdown_handler`)."""
        if broker in self.active:
            return
        self._registration_cleanup(broker, clean)

    def _registration_cleanup(self, broker: int, clean: bool) -> None:
        """What ``registerBroker`` writes for a new incarnation before its RegisterBrokerRecord
        (:meth:`handle_broker_registration`); nothing before 4.0."""
        if not kcfg.registration_runs_shutdown_handler(self.release):
            return
        if self.elr_on and not clean:
            self.generate_leader_and_isr_updates(self.partitions_with_broker_in_isr(broker),
                                                 broker_with_unclean_shutdown=broker)
            self.generate_leader_and_isr_updates(self.partitions_with_broker_in_elr(broker),
                                                 broker_with_unclean_shutdown=broker)
        else:
            self.generate_leader_and_isr_updates(self.partitions_with_broker_in_isr(broker), broker_to_remove=broker)

    def handle_registration_before_fence(self, broker: int, clean: bool) -> None:
        """A new incarnation of an *unfenced* broker registering: a broker SIGKILLed and started
        again at once whose registration reaches the controller after its old session expired
        but before the periodic ``maybeFenceOneStaleBroker`` fenced it.  ``registerBroker``
        refuses a new incarnation only while the old session is valid -- 3.6-3.9: unfenced *and*
        last heartbeat within ``broker.session.timeout.ms`` (``hasValidSession``,
        BrokerHeartbeatManager.java 3.6.1 lines 349-355, the same in 3.7.1, 3.8.0 and 3.9.0;
        ClusterControlManager.java 3.6.1 lines 328-339, 3.9.0 line 377); 4.x: last contact of
        the old epoch within the timeout, fenced or not (BrokerHeartbeatTracker.java 4.3.1 lines
        131-150, ClusterControlManager.java 4.3.1 lines 366-376, 4.0.0 line 356) -- so once the
        session has expired it is accepted whether or not the fence came first.  Without the
        fence no ``handleBrokerFenced`` runs: the registration's own cleanup is all
        (:meth:`_registration_cleanup`; 4.x: ClusterControlManager.java 4.3.1 lines 435-439 ->
        ``handleBrokerShutdown``, ReplicationControlManager.java 4.3.1 lines 1482-1494, with the
        old registration still active; 3.6-3.9 write none: 3.8.0 and 3.9.0 call
        ``handleBrokerUncleanShutdown`` (ClusterControlManager.java 3.8.0 line 358, 3.9.0 line 463),
        which returns at once below metadata version 4.0-IV0 (ReplicationControlManager.java 3.8.0
        line 1396, 3.9.1 line 1414), and 3.6.x-3.7.x have no such call).  The
        RegisterBrokerRecord itself is fenced (RegisterBrokerRecord.json ``Fenced`` default true)
        and replaces the old session (``heartbeatManager.remove`` / ``register``, ClusterControlManager.java
        4.3.1 lines 464-468), so the stale-broker check never fences it afterwards (4.3.1
        ``maybeFenceOneStaleBroker`` lines 1739-1760 drops the old epoch's entry).  On 3.x the
        broker thus keeps every leadership and ISR place it had, epochs unchanged; on 4.x with ELR
        on it leaves every ISR and ELR and a partition whose ISR it was alone in keeps it as last
        known leader, re-elected RECOVERING at its unfence (found by `explore --mode kraft --seed
        7703` on 4.4.0: partition epoch 2, leader epoch 2, RECOVERING -- one write fewer than
        fence-then-register)."""
        if broker not in self.active:
            return
        self._registration_cleanup(broker, clean)
        self.active.discard(broker)
        self.offline_dirs.pop(broker, None)

    def handle_broker_fenced(self, broker: int) -> None:
        """``handleBrokerFenced`` (lines 1288-1305), reached from ``maybeFenceOneStaleBroker``
        (lines 1602-1614: the session, ``broker.session.timeout.ms``, expired) or from a heartbeat
        granted SHUTDOWN_NOW (``processBrokerHeartbeat``, lines 1548-1553): every partition whose
        ISR holds the broker gets a builder without it -- a partition it led elects the first
        acceptable ISR member in assignment order, or, none left, gets leader -1 *and keeps the
        broker as its only ISR member* (an empty ISR is never written, builder step 4); a follower
        just leaves the ISR (partition epoch +1, leader epoch unchanged from metadata version
        3.6-IV0 -- +1 in ZooKeeper migration mode, :func:`migration.isr_shrink_bumps_leader_epoch`).
        Then the broker's registration is fenced (BrokerRegistrationChangeRecord).  A migrating
        ZooKeeper broker is fenced the same way: its ``BrokerLifecycleManager`` heartbeats like a
        KRaft broker's (KafkaServer.scala 3.9 lines 425-429, 487-494) and neither
        ``BrokerHeartbeatManager`` nor ``processBrokerHeartbeat`` looks at ``isMigratingZkBroker``."""
        if broker not in self.active:
            return
        self.generate_leader_and_isr_updates(self.partitions_with_broker_in_isr(broker), broker_to_remove=broker)
        self.active.discard(broker)
        # The offline directories of a fenced broker matter again only after it registers anew
        # (a restart, whose registration names its directories again): dropped here.
        self.offline_dirs.pop(broker, None)

    def handle_broker_unfenced(self, broker: int) -> None:
        """``handleBrokerUnfenced`` (lines 1339-1351): the heartbeat of a fenced broker that has
        caught up with its registration is granted UNFENCED (``BrokerHeartbeatManager.calculateNextBrokerState``,
        BrokerHeartbeatManager.java lines 542-556); every *leaderless* partition gets a builder
        where the broker is acceptable though still fenced (``brokerToAdd``): a partition whose
        ISR holds it elects it (or an earlier active ISR member in assignment order), an
        unclean-enabled topic's partition takes the first acceptable replica.  Nothing else: the
        broker re-enters ISRs through its leaders' AlterPartition (:meth:`settle`).

        A migrating ZooKeeper broker registers (``isMigratingZkBroker``, BrokerLifecycleManager.scala
        3.9 line 396) and asks to be unfenced once caught up with the metadata log (KafkaServer.scala
        lines 635-644, ``setReadyToUnfence``): the same.  Only a controller not in migration mode
        refuses its registration (``registerBroker``, ClusterControlManager.java lines 385-387):
        it then stays fenced."""
        if broker in self.active:
            return
        if broker in self.zk_brokers and not self.zk_registration_allowed:
            return
        # A (re-)registration names the broker's directories anew (ClusterControlManager.registerBroker).
        self.offline_dirs.pop(broker, None)
        self.generate_leader_and_isr_updates(self.partitions_with_no_leader(), broker_to_add=broker)
        self.active.add(broker)

    def start_as_kraft_broker(self, broker: int) -> None:
        """A migrating ZooKeeper broker restarted as a KRaft broker (the migration's roll to KRaft):
        it registers without ``isMigratingZkBroker`` and, applying the metadata, finds each of its
        replicas whose registered directory is not its real one -- every replica the migration
        copied has DirectoryId.MIGRATING -- and sends AssignReplicasToDirs
        (``ReplicaManager.maybeUpdateTopicAssignment``, core ReplicaManager.scala 3.9 lines
        2912-2923).  ``handleAssignReplicasToDirs`` (ReplicationControlManager.java lines 2157-2230)
        builds one change per partition with ``setDirectory`` only: partition epoch +1, leader and
        ISR unchanged (the directory is online).  Seen on 3.9.2: each roll to KRaft moved the
        partition epoch of the broker's partitions by one more than its shutdown and ISR rejoin.
        Before 3.7.0 registrations have no directories (:func:`kcfg.partition_directories_supported`;
        3.6's ReplicaManager has no ``maybeUpdateTopicAssignment``): no record, only the new
        registration.  Nor below metadata version 3.7-IV2 on any release: the broker sends no
        assignment (``if (metadataVersion.isDirectoryAssignmentSupported())`` around
        ``maybeUpdateTopicAssignment``: ReplicaManager.scala 3.7.2 lines 2881-2884, 3.8.1 line 2759,
        3.9 lines 2771-2774; ``handleAssignReplicasToDirs`` would refuse it, ReplicationControlManager.java
        3.7.2 lines 2079-2081)."""
        self.zk_brokers = self.zk_brokers - {broker}
        if not kcfg.partition_directories_supported(self.release) \
                or not kcfg.directory_assignment_supported(self.metadata_version):
            return
        for tp in sorted(self.partitions):
            p = self.partitions[tp]
            if broker in p.unassigned_dirs:
                self.partitions[tp] = p.with_changes(
                    partition_epoch=None if p.partition_epoch is None else p.partition_epoch + 1,
                    unassigned_dirs=tuple(b for b in p.unassigned_dirs if b != broker))

    def handle_controlled_shutdown(self, broker: int) -> None:
        """A heartbeat with ``wantShutDown`` from an unfenced broker (``calculateNextBrokerState``,
        BrokerHeartbeatManager.java lines 565-587): CONTROLLED_SHUTDOWN while it leads a partition
        (``handleBrokerInControlledShutdown``, ReplicationControlManager.java lines 1364-1374: the
        registration marked in controlled shutdown, then ``generateLeaderAndIsrUpdates`` removing
        it from every ISR -- the same builder as a fence), else SHUTDOWN_NOW at once.  Once its
        leaderships are gone and the active brokers have replayed past its shutdown offset
        (lines 589-607) it is granted SHUTDOWN_NOW: ``handleBrokerFenced``, whose pass finds only
        partitions where it is the last ISR member, leaderless already (no record unless unclean
        election is enabled, which the first pass did already).  The broker then exits.
        ``controlled.shutdown.enable=false`` (BrokerServer.scala 3.9 line 619) skips the requests:
        the broker is fenced when its session expires, with the same records.  A migrating
        ZooKeeper broker whose metadata cache names a KRaft controller does the same through its
        ``BrokerLifecycleManager`` (KafkaServer.scala 3.9 lines 950-964, heartbeats with
        ``wantShutDown``; its ZooKeeper ControlledShutdown request is skipped, lines 799-803).

        In 3.6.x and 3.7.x (:func:`kcfg.isr_shrink_bump_reads_target_isr`) with the ISR-shrink bump
        on (ZooKeeper migration mode, or MV < 3.6-IV0) the SHUTDOWN_NOW ``handleBrokerFenced``
        does write a record for each leaderless partition whose ISR is [broker]: target ISR []
        is a "shrink" (PartitionChangeBuilder.java 3.6.1 line 296), the record sets leader -1
        again -- leader epoch +1, partition epoch +1 -- once more than 3.9.  With
        ``controlled.shutdown.enable=false`` (KafkaServer.scala 3.6.1 line 846, BrokerServer.scala
        3.9 line 619) only the fence at session expiry runs, one pass: no such record."""
        if broker not in self.active:
            return
        if not cfg.controlled_shutdown_enabled(self.config):
            self.handle_broker_fenced(broker)
            return
        self.generate_leader_and_isr_updates(self.partitions_with_broker_in_isr(broker), broker_to_remove=broker)
        self.handle_broker_fenced(broker)

    def handle_directories_offline(self, broker: int, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """``handleDirectoriesOffline`` (lines 1402-1427), from a heartbeat listing the failed
        directory (metadata version 3.7-IV2+, ``processBrokerHeartbeat`` lines 1564-1566): the
        broker's partitions on it get ``generateLeaderAndIsrUpdates`` removing the broker (as a
        fence does, for those partitions only), then its registration drops the directory, so it
        can lead none of them again (``LeaderAcceptor``) until it registers anew."""
        if broker not in self.active:
            return []
        hosted = {tp for tp in partitions if tp in self.partitions and broker in self.partitions[tp].replicas}
        previous = self.offline_dirs.setdefault(broker, set())
        new = sorted(hosted - previous)
        self.generate_leader_and_isr_updates(new, broker_to_remove=broker)
        previous |= hosted
        return new

    # --- ReplicationControlManager: elections ----------------------------------------------------

    def elect_leader(self, tp: TopicPartition, preferred: bool) -> Outcome:
        """``electLeader`` (lines 1485-1533) for an admin ``ElectLeaders`` request: ELECTION_NOT_NEEDED
        when the preferred replica leads (PREFERRED) or any broker leads (UNCLEAN); otherwise a
        PREFERRED or UNCLEAN builder with the plain ``LeaderAcceptor`` and the ISR unchanged; no
        record -> PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE."""
        p = self.partitions[tp]
        if (preferred and p.leader == p.preferred_replica) or (not preferred and p.leader != NO_LEADER):
            return Outcome.ELECTION_NOT_NEEDED
        election = builder.Election.PREFERRED if preferred else builder.Election.UNCLEAN
        if not self._change(tp, self.acceptable(tp), election=election):
            return Outcome.PREFERRED_LEADER_NOT_AVAILABLE if preferred else Outcome.NO_REPLICA_ONLINE
        return Outcome.UNCLEAN_ELECTED if tp in self.unclean_elected else Outcome.ELECTED

    def maybe_balance_partition_leaders(self) -> None:
        """``maybeBalancePartitionLeaders`` -> ``maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader``
        (lines 1632-1671): a PREFERRED builder for *every* partition whose leader is not its first
        replica (``imbalancedPartitions``, kept by every replay, lines 483-488, 529-534; leaderless
        ones included) -- no per-broker ``leader.imbalance.per.broker.percentage`` threshold as in
        ZooKeeper mode.  At most ``MAX_ELECTIONS_PER_IMBALANCE`` = 1000 records per run, then the
        task reschedules itself 10 ms later (QuorumController.java lines 1368-1392): one modelled
        run is all of them.  The task exists only with ``auto.leader.rebalance.enable`` (every
        ``leader.imbalance.check.interval.seconds``, default 300, after a write)."""
        if not kcfg.auto_leader_rebalance_enabled(self.config):
            return
        for tp in self.sorted_partitions(lambda tp, p: p.leader != p.preferred_replica):
            self._change(tp, self.acceptable(tp), election=builder.Election.PREFERRED)

    def maybe_elect_unclean_leaders(self) -> None:
        """``maybeElectUncleanLeaders`` -> ``maybeTriggerUncleanLeaderElectionForLeaderlessPartitions``
        (lines 1684-1720), every ``unclean.leader.election.interval.ms`` (default 5 min,
        QuorumController.java lines 1406-1443): ``electLeader(UNCLEAN)`` for every leaderless
        partition of a topic whose effective ``unclean.leader.election.enable`` is true.  This is
        how a topic config change enabling unclean election takes effect in KRaft: nothing
        happens at the change itself (``incrementalAlterConfigs`` only writes ConfigRecords,
        QuorumController.java lines 2140-2157)."""
        for tp in self.partitions_with_no_leader():
            if self.unclean_enabled(tp.topic):
                self.elect_leader(tp, preferred=False)

    # --- ReplicationControlManager: topics and reassignments -------------------------------------

    def create_topic(self, topic: str, assignment: Mapping[int, tuple[int, ...]], config: Mapping[str, str]) -> bool:
        """``createTopic`` with a manual assignment (lines 670-714, 817-830): partition ids must be
        0..n-1 and every partition needs an active replica, else the whole topic is refused
        (INVALID_REPLICA_ASSIGNMENT) -- unlike ZooKeeper mode, there is no partition without a
        leader.  ISR = the active replicas in assignment order, leader = the first of them,
        leader epoch 0, partition epoch 0, RECOVERED.  (Replicas must be *registered* brokers,
        ``validateManualPartitionAssignment`` lines 1842-1873: every broker named is taken to be
        registered -- a registration survives fencing.)"""
        if sorted(assignment) != list(range(len(assignment))):
            return False
        created: dict[TopicPartition, PartitionState] = {}
        for number in sorted(assignment):
            replicas = assignment[number]
            isr = tuple(r for r in replicas if r in self.active)
            if not isr:
                return False
            created[TopicPartition(topic, number)] = PartitionState(
                replicas=replicas, leader=isr[0], isr=isr, leader_epoch=0, partition_epoch=0
            )
        self.partitions.update(created)
        self.topic_configs[topic] = dict(config)
        return True

    def create_partitions(self, topic: str, assignment: Mapping[int, tuple[int, ...]]) -> bool:
        """``createPartitions`` with manual assignments (lines 1746-1840): the new ids follow the
        existing ones (the request gives a count), every assignment has the topic's replication
        factor (that of its first partition) and an active replica, else the topic's request is
        refused as a whole; each new partition is built as by :meth:`create_topic`."""
        existing = [tp for tp in self.partitions if tp.topic == topic]
        start = len(existing)
        if sorted(assignment) != list(range(start, start + len(assignment))):
            return False
        factor = len(self.partitions[min(existing)].replicas) if existing else None
        created: dict[TopicPartition, PartitionState] = {}
        for number in sorted(assignment):
            replicas = assignment[number]
            isr = tuple(r for r in replicas if r in self.active)
            if (factor is not None and len(replicas) != factor) or not isr:
                return False
            created[TopicPartition(topic, number)] = PartitionState(
                replicas=replicas, leader=isr[0], isr=isr, leader_epoch=0, partition_epoch=0
            )
        self.partitions.update(created)
        return True

    def delete_topic(self, topic: str) -> bool:
        """``deleteTopic`` (lines 953-969): one RemoveTopicRecord, at once, whatever the replicas'
        brokers (no deletion queue as in ZooKeeper mode); the topic's configs go with it
        (``replay(RemoveTopicRecord)``, lines 543-584).  Refused with ``delete.topic.enable=false``."""
        if not kcfg.delete_topic_enabled(self.config):
            return False
        for tp in [tp for tp in self.partitions if tp.topic == topic]:
            del self.partitions[tp]
            for tps in self.offline_dirs.values():
                tps.discard(tp)
        self.topic_configs.pop(topic, None)
        return True

    def change_partition_reassignment(self, tp: TopicPartition, target: tuple[int, ...]) -> bool:
        """``changePartitionReassignment`` (lines 2100-2130) with ``PartitionReassignmentReplicas``
        (PartitionReassignmentReplicas.java lines 53-64): removing = current - target and adding =
        target - current, each *ascending* (TreeSet); replicas = target ++ removing.  The builder
        (ONLINE election, plain LeaderAcceptor) completes it at once when the ISR already holds
        every target replica (a reorder, a pure removal); otherwise the record only sets replicas,
        adding and removing -- leader epoch unchanged, partition epoch +1 -- and the leader's
        AlterPartition completes it once the new replicas have caught up (:meth:`settle`).  A
        target left without an adding/removing list keeps the partition's current one (the builder
        starts from it), as Kafka does.  True if a record was written.  Same in 3.6.1
        (ReplicationControlManager.java lines 1910-1940, PartitionReassignmentReplicas.java lines
        53-63); only the completion rule differs before 3.8.0 (:func:`builder._complete_reassignment`)."""
        p = self.partitions[tp]
        current = p.replicas
        removing = tuple(sorted(set(current) - set(target)))
        adding = tuple(sorted(set(target) - set(current)))
        replicas = target + removing
        return self._change(
            tp,
            self.acceptable(tp),
            target_replicas=replicas if replicas != current else None,
            target_removing=removing or None,
            target_adding=adding or None,
        )

    def reassignment_revert(self, tp: TopicPartition) -> tuple[tuple[int, ...], tuple[int, ...], bool] | None:
        """``PartitionReassignmentRevert`` (PartitionReassignmentRevert.java, the same in 3.6.2 and
        3.9.2, lines 33-70): what cancelling the partition's reassignment leaves, (replicas, ISR,
        unclean), or None when none is in progress (``isReassignmentInProgress``: adding or removing
        replicas).  Replicas: the current ones minus the adding ones, *in the current order*
        (``PartitionReassignmentReplicas.originalReplicas``, lines 128-132) -- the record of the
        reassignment put the target first (target ++ removing), so a cancelled move of [2, 1] to
        [3, 1] leaves [1, 2], not [2, 1]: the preferred replica may change.  ISR: the current one
        minus the adding replicas, order kept; left empty (only adding replicas were in sync) it
        becomes [first remaining replica] and the revert is *unclean*."""
        p = self.partitions[tp]
        if not p.adding_replicas and not p.removing_replicas:
            return None
        replicas = tuple(r for r in p.replicas if r not in p.adding_replicas)
        isr = tuple(r for r in p.isr if r not in p.adding_replicas)
        if isr or not replicas:
            return replicas, isr, False
        return replicas, (replicas[0],), True

    def cancel_refusal(self, tp: TopicPartition) -> str | None:
        """The error Kafka answers a cancellation of the partition's reassignment with, nothing
        written (``cancelPartitionReassignment``, ReplicationControlManager.java 3.9.2 lines
        2067-2079, 3.6.2 lines 1850-1862): NO_REASSIGNMENT_IN_PROGRESS when none is; an unclean
        revert (:meth:`reassignment_revert`) of a topic whose unclean leader election is off --
        always off before 3.9.0 (:func:`kcfg.unclean_leader_election_configurable`) -- and a revert
        left with no replica (unreachable: a partition never starts empty) are
        INVALID_REPLICA_ASSIGNMENT; None when it is taken."""
        revert = self.reassignment_revert(tp)
        if revert is None:
            return "NO_REASSIGNMENT_IN_PROGRESS"
        replicas, _, unclean = revert
        if not replicas or (unclean and not self.unclean_enabled(tp.topic)):
            return "INVALID_REPLICA_ASSIGNMENT"
        return None

    def cancel_partition_reassignment(self, tp: TopicPartition) -> bool:
        """``alterPartitionReassignment`` with a null target -> ``cancelPartitionReassignment``
        (ReplicationControlManager.java 3.9.2 lines 2039-2097; 3.6.2 lines 1822-1877, the same with
        ``clusterControl::isActive`` for the leader acceptor): refused as :meth:`cancel_refusal`
        says (False, nothing written), else one builder with target replicas and ISR the revert's,
        adding and removing cleared, the ONLINE election (UNCLEAN where the topic enables it): the
        current leader stays if it is still in the ISR and active, else the first such replica of
        the reverted ones leads (leader epoch +1); a replica set that lost its adding replicas
        rewrites the same leader (``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``: leader
        epoch +1); partition epoch +1.  No AlterPartition is waited for: the revert is written
        whatever the ISR, so a replica it keeps may stay out of the ISR (a removed replica that fell
        behind) until its leader adds it (:meth:`settle`).  An unclean revert's leader is counted
        as unclean-elected (its ISR was made up; the builder itself sees a clean election)."""
        if self.cancel_refusal(tp) is not None:
            return False
        revert = self.reassignment_revert(tp)
        assert revert is not None
        replicas, isr, unclean = revert
        election = builder.Election.UNCLEAN if self.unclean_enabled(tp.topic) else builder.Election.ONLINE
        written = self._change(tp, self.acceptable(tp), election=election, target_isr=isr, target_replicas=replicas,
                               target_removing=(), target_adding=())
        if written and unclean and self.partitions[tp].leader != NO_LEADER:
            self.unclean_elected.add(tp)
        return written

    def process_topic_config_change(self, topic: str, changes: Mapping[str, str | None]) -> None:
        """The new overrides (ConfigRecords); no election at the change (see
        :meth:`maybe_elect_unclean_leaders`)."""
        overrides = dict(self.topic_configs.get(topic, {}))
        for key, value in changes.items():
            if value is None:
                overrides.pop(key, None)
            else:
                overrides[key] = value
        self.topic_configs[topic] = overrides
        if self.elr_on and MIN_INSYNC_REPLICAS in changes:
            self.clear_topic_elrs(topic)

    def clear_topic_elrs(self, topic: str) -> None:
        """A ``min.insync.replicas`` ConfigRecord with ELR on is followed by a ClearElrRecord
        (``createClearElrRecordsAsNeeded``, ConfigurationControlManager.java 4.1.2 lines 217-236),
        replayed as ``removeTopicElrs`` (ReplicationControlManager.java 4.1.2 lines 603-618): each
        partition with an ELR or a last known ELR loses both, partition epoch +1."""
        for tp in sorted(self.partitions):
            p = self.partitions[tp]
            if tp.topic == topic and (p.elr or p.last_known_elr):
                self.partitions[tp] = p.with_changes(
                    elr=(), last_known_elr=(),
                    partition_epoch=None if p.partition_epoch is None else p.partition_epoch + 1)

    # --- the leaders' AlterPartition -------------------------------------------------------------

    def alter_partition(self, tp: TopicPartition, target_isr: tuple[int, ...]) -> bool:
        """A leader's AlterPartition with ``target_isr`` (``alterPartition``, ReplicationControlManager.java
        lines 1008-1120), True if a record was written.  Refused (no record) as
        ``validateAlterPartitionData`` does (lines 1151-1255) when the partition has no leader, the
        ISR is not a subset of the replicas or lacks the leader, or names a broker that is not
        active, the leader included (``ineligibleReplicasForIsr``, lines 1257-1277).  Otherwise
        the builder with the topic's unclean setting (lines 1075-1077) and RECOVERED: a shrink
        bumps the partition epoch, and the leader epoch only where
        :func:`migration.isr_shrink_bumps_leader_epoch` (metadata version below 3.6-IV0, or
        ZooKeeper migration mode: ``setZkMigrationEnabled``, line 1073)."""
        p = self.partitions[tp]
        acceptable = self.acceptable(tp)
        if p.leader == NO_LEADER or not acceptable(p.leader) or p.leader not in target_isr:
            return False
        if not set(target_isr) <= set(p.replicas) or len(set(target_isr)) != len(target_isr):
            return False
        if any(r not in self.active for r in target_isr):
            return False
        election = builder.Election.UNCLEAN if self.unclean_enabled(tp.topic) else builder.Election.ONLINE
        return self._change(tp, acceptable, election=election, target_isr=target_isr,
                            target_leader_recovery_state=RECOVERED)

    def settle(self) -> None:
        """What the partition leaders do once the controller is done: each active replica with its
        directory online catches up and its leader asks to add it (``Partition.maybeExpandIsr``:
        one follower per AlterPartition, the next only once the previous is answered,
        ``PartitionState.isInflight``; the request carries RECOVERED, ``Partition.makeLeader``
        having marked the partition so: Partition.scala 3.9 lines 742-756).  The controller's
        ``alterPartition`` (ReplicationControlManager.java lines 1008-1120) accepts it from an
        active broker (``ineligibleReplicasForIsr``, lines 1257-1277: not fenced, not in controlled
        shutdown) and builds the change with the new ISR and RECOVERED: leader epoch unchanged,
        partition epoch +1 per follower; the ISR that holds every target replica of a reassignment
        completes it in the same record (replicas = target, removed replicas leave the ISR, a
        removed leader is replaced by the first target replica in the ISR: leader epoch +1, and a
        shrunk replica set bumps the leader epoch even when the leader stays).  Followers join in
        assignment order (when several catch up at once their order is timing: compare ISRs as
        sets)."""
        changed = True
        while changed:
            changed = False
            for tp in sorted(self.partitions):
                p = self.partitions[tp]
                if p.leader == NO_LEADER or not self.acceptable(tp)(p.leader):
                    continue
                joining = next((r for r in p.replicas if r not in p.isr and self.acceptable(tp)(r)), None)
                if joining is None:
                    continue
                election = builder.Election.UNCLEAN if self.unclean_enabled(tp.topic) else builder.Election.ONLINE
                if self._change(tp, self.acceptable(tp), election=election, target_isr=p.isr + (joining,),
                                target_leader_recovery_state=RECOVERED):
                    changed = True

    # --- freezing --------------------------------------------------------------------------------

    def freeze(self) -> ClusterState:
        topics: dict[str, dict[int, PartitionState]] = {t: {} for t in self.topic_configs}
        for tp, p in self.partitions.items():
            topics.setdefault(tp.topic, {})[tp.partition] = p.with_changes(phase=_phase(p, self.active))
        return ClusterState(
            live_brokers=frozenset(self.active),
            topics={t: TopicState(partitions=parts, config=self.topic_configs.get(t, {})) for t, parts in topics.items()},
            controller=self.controller,
            config=self.config,
            release=self.release,
            offline_replicas={
                b: frozenset(tp for tp in tps if tp in self.partitions and b in self.partitions[tp].replicas)
                for b, tps in self.offline_dirs.items()
                if b in self.active
            },
            mode=Mode.KRAFT,
        )


def leader_isr_shrink(state: ClusterState, cut: Iterable[int]) -> ClusterState:
    """The KRaft counterpart of a leader-side ISR shrink (``Partition.maybeShrinkIsr`` ->
    ``prepareIsrShrink``, Partition.scala 3.9.0 lines 1243-1281 and 1792-1814: the ISR minus every
    follower ``getOutOfSyncReplicas`` names, lines 1309-1319, in one AlterPartition; run every
    ``replica.lag.time.max.ms / 2``, ReplicaManager.scala line 387) when the ``cut`` brokers are cut
    from their peer brokers only -- their links to the controllers kept, so they keep
    heartbeating, are never fenced and their own AlterPartition requests get through:

    * every partition led by an active broker outside ``cut`` whose ISR holds a ``cut`` follower
      gets :meth:`KRaftController.alter_partition` with those followers removed (order kept);
    * every partition led by a ``cut`` broker keeps only its leader: none of its followers can
      fetch from it (a cut leader's other followers are outside ``cut``, or cut as well).

    Each accepted request: partition epoch +1, leader epoch +1 only below metadata version 3.6-IV0
    or in ZooKeeper migration mode.  One request per partition: the fewest writes.  A cut leader
    may need more -- ``getOutOfSyncReplicas`` leaves out a follower whose log end equals the
    leader's until the next record arrives, so its followers may leave one check apart (seen on
    3.9.2: "Shrinking ISR from 2,3,1 to 2,3", 1.5 s later "2,3 to 2"); the ISR rule does not count
    those (``scenarios.model.isr_rules.epochs_unexact``).  No settling: the cut followers are not
    back."""
    gone = frozenset(cut)
    ctl = KRaftController(state)
    for tp in sorted(ctl.partitions):
        p = ctl.partitions[tp]
        if p.leader == NO_LEADER:
            continue
        if p.leader in gone:
            if len(p.isr) > 1 and p.leader in p.isr:
                ctl.alter_partition(tp, (p.leader,))
        elif gone & set(p.isr):
            ctl.alter_partition(tp, tuple(r for r in p.isr if r not in gone))
    return ctl.freeze()


def settled(state: ClusterState) -> ClusterState:
    """``state`` once every active follower of a partition with an active leader is back in the
    ISR (and caught-up reassignments have completed), with no event applied."""
    ctl = KRaftController(state)
    ctl.settle()
    return ctl.freeze()

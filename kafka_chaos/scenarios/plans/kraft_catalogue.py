"""The ``kraft`` suite: the conformance scenarios that mean the same on a KRaft cluster, run on
one (1 controller, or a 3-voter quorum for the quorum faults), each checked against the KRaft
controller model (:mod:`oracle.kraft`), plus the faults only KRaft has: its quorum leader killed
or paused, and the whole quorum lost.

A mirrored scenario keeps its steps and topics; its docstring names the KRaft 3.9 rule it
exercises (``metadata/src/main/java/org/apache/kafka/controller/``). Left out: scenarios whose
faults write ZooKeeper's admin znodes or target the controller broker (``Fault.modes``), and
those needing a capability the KRaft launcher lacks (ZooKeeper mode's network cuts).
Imported by :mod:`scenarios.plans.catalogue` once its own scenarios are registered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from kafka_chaos.harness.config import (
    AUTO_LEADER_REBALANCE_ENABLE,
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
    REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
    REPLICA_LAG_TIME_MAX_MS,
)
from kafka_chaos.scenarios.model.steps import Step, TopicSpec, frozen
from kafka_chaos.scenarios.model.targets import Controller, EarlierTarget, FollowerOf, LeaderOf, NoTarget
from kafka_chaos.scenarios.plans import catalogue as zk
from kafka_chaos.scenarios.plans.spec import ClusterNeeds, KnownBug

KRAFT_SUITE = zk.KRAFT_SUITE
KRAFT = ClusterNeeds(3, mode="kraft")
KRAFT_QUORUM = ClusterNeeds(3, mode="kraft", controllers=3)
KRAFT_AUTO_REBALANCE = ClusterNeeds(3, tuple(sorted({
    AUTO_LEADER_REBALANCE_ENABLE: "true",
    # QuorumController schedules maybeBalancePartitionLeaders every
    # leader.imbalance.check.interval.seconds (and after a leaderless partition appears).
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: "3",
}.items())), mode="kraft")

# Mirrored conformance scenario -> the KRaft 3.9 rule it exercises there.
MIRRORED: dict[str, str] = {
    "leader_hard_kill": (
        "SIGKILL the leader of t-0. No heartbeat for broker.session.timeout.ms: "
        "ReplicationControlManager.maybeFenceOneStaleBroker → handleBrokerFenced → "
        "generateLeaderAndIsrUpdates: the broker leaves every ISR, t-0 gets the first ISR member in "
        "replica order that is active (PartitionChangeBuilder.electLeader), leader epoch +1."),
    "follower_hard_kill": (
        "SIGKILL an in-sync follower of t-0. handleBrokerFenced removes it from t-0's ISR: the "
        "partition epoch moves, the leader epoch does not (KAFKA-15021, PartitionChangeBuilder."
        "triggerLeaderEpochBumpForIsrShrinkIfNeeded: no bump on metadata version 3.9-IV0)."),
    "non_replica_controlled_shutdown": (
        "SIGTERM a broker holding no replica of t-0: t-0 must not change at all while the "
        "broker's own partitions move (handleBrokerInControlledShutdown touches only partitions "
        "with the broker in their ISR)."),
    "controlled_shutdown_leader": (
        "SIGTERM the leader of t-0: its heartbeats ask to shut down (BrokerHeartbeatManager, "
        "wantShutDown); handleBrokerInControlledShutdown moves its leaderships (leader epoch +1) "
        "and removes it from every ISR."),
    "controlled_shutdown_follower": (
        "SIGTERM a follower of t-0: handleBrokerInControlledShutdown removes it from the ISR, "
        "partition epoch +1, leader epoch unchanged (KAFKA-15021)."),
    "controlled_shutdown_only_isr": (
        "Kill t-0's follower, then SIGTERM the leader, now the only ISR member: no other ISR "
        "member can lead, so t-0 is left leaderless with its last ISR member kept "
        "(PartitionChangeBuilder: the ISR never becomes empty without ELR)."),
    "rf1_broker_loss": (
        "Replication factor 1: SIGKILL the broker holding s-0, then start it. Fenced: s-0 "
        "leaderless, ISR [it]; unfenced again: handleBrokerUnfenced elects it for the "
        "partitions without a leader whose ISR has it (brokersToIsrs.partitionsWithNoLeader)."),
    "rolling_restart": (
        "Controlled restart of every broker in turn: each shutdown moves leaderships "
        "(handleBrokerInControlledShutdown), each start unfences the broker; no leadership moves "
        "back without a preferred election."),
    "restart_after_kill": (
        "SIGKILL the leader of t-0, then start it: it registers with a new broker epoch, is "
        "unfenced once caught up, and rejoins the ISRs through the leaders' AlterPartition."),
    "preferred_election_after_restart": (
        "Kill t-0's leader, start it, then electLeaders(PREFERRED) over t: "
        "ReplicationControlManager.electLeaders → PartitionChangeBuilder with Election.PREFERRED "
        "(the first replica, when in the ISR and active); ELECTION_NOT_NEEDED elsewhere."),
    "unclean_admin_election": (
        "Kill t-0's follower, then its leader, start the follower, then electLeaders(UNCLEAN) on "
        "t-0: the out-of-sync replica leads, ISR [it], leader recovery state RECOVERING "
        "(PartitionChangeBuilder.electLeader, unclean)."),
    "unclean_off_non_isr_first": (
        "Kill t-0's follower, then its leader, then start the follower first: with unclean "
        "election off no ISR member is active, t-0 stays leaderless."),
    "session_expiry_pause": (
        "SIGSTOP the leader of t-0 past broker.session.timeout.ms: fenced as if killed; at SIGCONT "
        "its heartbeat reaches the controller again and it is unfenced (same broker epoch)."),
    "short_pause_leader": (
        "SIGSTOP the leader of t-0 for 2 s, below the broker session: nothing is fenced and no "
        "partition changes; the clients' produce gap is the cost."),
    "cascading_failures_recovery": (
        "Kill r-0's leader, then the next one, then start both: two fencings, each moving "
        "leadership to the next active ISR member; no leadership moves back."),
    "add_partitions_admin_follower_down": (
        "Kill broker 3, add t-6 on [1, 2] through CreatePartitions "
        "(ReplicationControlManager.createPartitions: ISR = the active replicas), start broker 3."),
}


def _mirror(name: str, doc: str) -> None:
    original = zk.by_names([name])[0]
    needs = replace(original.needs, mode="kraft")
    steps = list(original.steps)
    topics = [lambda t=t: t for t in original.topics]
    kraft_doc = f"Kafka 3.9 KRaft mirror of ``{name}``: {doc}"

    def steps_of() -> Sequence[Step]:
        return steps

    steps_of.__doc__ = kraft_doc
    zk.scenario(topics=topics, needs=needs, suites=frozenset({KRAFT_SUITE}), name=f"{name}_kraft")(steps_of)


def _register(name: str, needs: ClusterNeeds, topics: Sequence[Callable[[], TopicSpec]],
              known_bugs: tuple[KnownBug, ...] = ()
              ) -> Callable[[Callable[[], Sequence[Step]]], Callable[[], Sequence[Step]]]:
    return zk.scenario(topics=topics, needs=needs, suites=frozenset({KRAFT_SUITE}), name=name, known_bugs=known_bugs)


for _name, _doc in MIRRORED.items():
    _mirror(_name, _doc)


@_register("auto_leader_rebalance_kraft", KRAFT_AUTO_REBALANCE, [zk.topic_t])
def auto_leader_rebalance_kraft() -> list[Step]:
    """Kafka 3.9 KRaft, with ``auto.leader.rebalance.enable=true``: SIGTERM t-0's leader, start it, and let the
    active controller's ``maybeBalancePartitionLeaders`` (every
    ``leader.imbalance.check.interval.seconds``) give the preferred replicas their leadership
    back (``PartitionChangeBuilder`` with Election.PREFERRED)."""
    return [Step("controlled_shutdown", LeaderOf("t", 0), then=("auto_rebalance",)),
            Step("start", EarlierTarget(0), then=("auto_rebalance",))]


@_register("quorum_leader_kill", KRAFT_QUORUM, [zk.topic_t])
def quorum_leader_kill() -> list[Step]:
    """Kafka 3.9 KRaft: SIGKILL the active controller of a 3-voter quorum: another voter wins the next epoch
    (KafkaRaftClient, after controller.quorum.fetch.timeout.ms) and becomes active
    (``QuorumController.claim``); no partition changes and no broker is fenced, because
    ``ClusterControlManager.activate`` starts every broker's heartbeat clock afresh."""
    return [Step("quorum_leader_kill", Controller())]


@_register("quorum_leader_pause", KRAFT_QUORUM, [zk.topic_t])
def quorum_leader_pause() -> list[Step]:
    """Kafka 3.9 KRaft: SIGSTOP the active controller until another voter leads, then SIGCONT: the old leader
    resumes in an old epoch and follows; partitions and brokers unchanged."""
    return [Step("quorum_leader_pause", Controller())]


# On 3.6.x a cut leader keeps leading its epoch until the heal (KAFKA-15489, fixed in 3.7.0; the
# corpus entry kafka_15489_cut_quorum_leader_keeps_leading): the kraft suite expects it there.
KAFKA_15489 = KnownBug("KAFKA-15489", "3.6.2", "3.7.0", "one_quorum_leader")


@_register("quorum_leader_cut", KRAFT_QUORUM, [zk.topic_t], known_bugs=(KAFKA_15489,))
def quorum_leader_cut() -> list[Step]:
    """Kafka 3.9 KRaft: cut the active controller from the two other voters (its brokers keep their links):
    the others elect a leader of a later epoch, and the cut one resigns within 1.5 fetch timeouts
    of its last majority fetch (``KafkaRaftClient.pollLeader``'s check-quorum, from 3.7.0:
    KAFKA-15489), so one voter leads while the cut holds; then heal it (its candidacy in later
    epochs may force another election). Partitions and brokers unchanged throughout."""
    return [Step("quorum_leader_cut", Controller()),
            Step("quorum_leader_cut", Controller(), frozen({"variant": "heal"}))]


@_register("quorum_loss_brokers_carry_on", KRAFT_QUORUM, [zk.topic_t])
def quorum_loss_brokers_carry_on() -> list[Step]:
    """Kafka 3.9 KRaft: kill every controller for 10 s (longer than the brokers' session), then start them: the
    brokers keep serving on the metadata they have, and the new active controller fences nobody
    (heartbeat clocks start afresh on activation) -- nothing may change. Then a leader kill on
    the recovered quorum is handled as usual."""
    return [Step("quorum_loss", NoTarget("every controller"), frozen({"seconds": 10.0})),
            Step("hard_kill", LeaderOf("t", 0))]


# Two log directories per broker (the metadata log in a third: harness.config.KRAFT_METADATA_SUBDIR)
# and the high-watermark checkpoint every second, as the ZooKeeper-mode TWO_LOG_DIRS.
KRAFT_TWO_LOG_DIRS = ClusterNeeds(3, ((REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, "1000"),), log_dirs=2, mode="kraft")


@_register("leader_log_dir_failure_kraft", KRAFT_TWO_LOG_DIRS, [zk.topic_t])
def leader_log_dir_failure_kraft() -> list[Step]:
    """Kafka 3.9 KRaft (and 3.7+: JBOD, KIP-858), mirror of ``leader_log_dir_failure``: the log directory
    holding t-0 on its leader fails, then the broker restarts with it repaired. The broker's next
    checkpoint there fails, ``ReplicaManager.handleLogDirFailure`` takes the directory's replicas
    offline and its next heartbeat lists the directory in ``offlineLogDirs``; the controller's
    ``handleDirectoriesOffline`` (ReplicationControlManager.java 3.9 branch lines 1402-1427) runs
    ``generateLeaderAndIsrUpdates`` removing the broker from every partition it registered there:
    t-0 gets the next active ISR member (leader epoch +1), followers there leave their ISRs
    (partition epoch +1 only); the directory leaves the broker's registration, so ``LeaderAcceptor``
    keeps it from leading them while it runs on its other directory. The repair (controlled
    shutdown, start) registers the directory again: its replicas rejoin the ISRs, leadership does
    not move back."""
    return [Step("log_dir_failure", LeaderOf("t", 0), frozen({"topic": "t", "partition": 0})),
            Step("log_dir_failure", EarlierTarget(0), frozen({"variant": "heal"}))]


# replica.lag.time.max.ms 3 s (the ZooKeeper-mode SHORT_REPLICA_LAG): the shrink within 3-4.5 s.
KRAFT_SHORT_REPLICA_LAG = ClusterNeeds(3, ((REPLICA_LAG_TIME_MAX_MS, "3000"),), mode="kraft")


@_register("broker_peer_cut_kraft", KRAFT_SHORT_REPLICA_LAG, [zk.topic_r])
def broker_peer_cut_kraft() -> list[Step]:
    """Kafka 3.9 KRaft, the counterpart of ``follower_cut_from_leader``: cut a follower of r-0 from
    the other brokers (its controller and client links kept), then heal. It heartbeats on, so the
    controller fences nobody (no oracle event); after ``replica.lag.time.max.ms`` (3 s here) each
    leader drops what cannot fetch -- ``Partition.maybeShrinkIsr``/``getOutOfSyncReplicas`` ->
    AlterPartition, accepted (``ReplicationControlManager.alterPartition``): the two partitions it
    follows lose it, and the one it leads (r-1 for broker 2, r-2 for broker 3) keeps only it (its
    followers cannot fetch from it, its request reaches the controller -- ZooKeeper mode's keeps its
    ISR). Each request: partition epoch +1, leader epoch unchanged (MV 3.6-IV0 and later). Healed,
    the followers rejoin one AlterPartition each (``Partition.maybeExpandIsr``): +2 on the partition
    it leads, +1 on the others. Passed on 3.9.2 and 4.4.0 (``--seed 4801 --iterations 2``)."""
    return [Step("broker_peer_cut", FollowerOf("r", 0)),
            Step("broker_peer_cut", EarlierTarget(0), frozen({"variant": "heal"}))]

"""The scenario catalogue: what each chaos scenario sets up, which faults it injects, in order.

A scenario is declarative data (topics with an explicit assignment, cluster needs, steps of
fault + pure target selector); :mod:`scenarios.run.runner` executes it and asks the oracle what
each step must do. Each scenario is defined by a function whose docstring names the seed
section (``shared/seeds/``) and the Kafka 3.9 rule (Scala function) it exercises; the function
returns the steps.

Topics (logical names; the runner makes them unique per scenario iteration):

* ``t`` — 6 partitions, replication factor 2 over 3 brokers, every broker leads two and is a
  non-replica of two: a fault on one broker hits leaders, followers and non-replicas at once.
* ``r`` — 3 partitions, replication factor 3 (every broker in every ISR).
* ``s`` — 3 partitions, replication factor 1 (one per broker).
* ``m`` — 4 partitions, replication factor 3 over 6 brokers (the seeds' {1,2,3} → {4,5,6}).

Suites: ``smoke`` (a handful, a few minutes) and ``conformance`` (every scenario).

Capabilities: a scenario requires the union of what its faults require
(``scenarios.faults``: network partitions need ``network_partition``, which ``--backend
containers`` has, each broker in its own network namespace, and the local backend has as root
with iptables, docs/local-network.md). :func:`select` leaves a suite's scenarios out when the
backend lacks a capability they need and says why (``kafka-chaos run`` prints it), so
``conformance`` stays green where partitions cannot be made and runs them where they can. Named explicitly (``--scenario``) on such a backend, the runner starts no
cluster for them: it records one unknown verdict (``passed=None``) saying why, and the run does
not exit 0. Every step is checked against the fault registry when the catalogue is built (a
misspelt kind or option fails at import, not mid-run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_chaos.harness.config import (
    AUTO_LEADER_REBALANCE_ENABLE,
    INTER_BROKER_PROTOCOL_VERSION,
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
    REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
    REPLICA_LAG_TIME_MAX_MS,
)
from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.scenarios.model.targets import (
    BrokerId,
    Controller,
    EarlierTarget,
    FollowerLeadingNothing,
    FollowerOf,
    LeaderOf,
    NonControllerLeaderOf,
    NonReplicaOf,
    NoTarget,
)
from kafka_chaos.scenarios.model.steps import Step, TopicSpec, frozen
from kafka_chaos.scenarios.plans.spec import ClusterNeeds, KnownBug, Scenario, mode_problem, validate_steps
from kafka_chaos.scenarios.plans import corpus
from kafka_chaos.scenarios.plans.corpus import CORPUS_SUITE

SMOKE = "smoke"
CONFORMANCE = "conformance"
# ZooKeeper-ensemble scenarios (docs/zookeeper-faults.md): a suite of their own, so the main
# job's conformance run does not start 3- and 5-server ensembles.
ZOOKEEPER_SUITE = "zookeeper"
NETWORK_SUITE = "network"  # degraded links (docs/local-network.md)
# Behaviour that changed between Kafka releases, each scenario pinned to the releases around
# the change (docs/releases.md): every one passes, and the records show which way it went.
RELEASES_SUITE = "releases"
# Rolling upgrades under faults (scenarios.faults.upgrade): the local launcher only.
UPGRADE_SUITE = "upgrade"
# The scenarios that mean the same on a KRaft cluster, and the quorum's own faults
# (scenarios.plans.kraft_catalogue).
KRAFT_SUITE = "kraft"
# The ZooKeeper→KRaft migration driven phase by phase, faults in every phase
# (scenarios.plans.migration_catalogue).
MIGRATION_SUITE = "migration"
# The whole journey as one schedule: migrated to KRaft on 3.9, every node rolled to 4.x, the
# features finalized, faults between every step (scenarios.plans.journey_catalogue).
JOURNEY_SUITE = "journey"
# Faults below the process (power failures, disk errors) on the crash-consistency layer
# (scenarios.plans.durability_catalogue).
DURABILITY_SUITE = "durability"
# The transactional workload under faults aimed at its coordinators, partitions and clients
# (scenarios.plans.transactions_catalogue, docs/transactions.md).
TRANSACTIONS_SUITE = "transactions"


@dataclass(frozen=True)
class Suite:
    """A suite, and the cluster mode it pins: ``mode`` is the one every scenario of it is written
    for, which ``--mode`` (or any option that needs another mode) contradicts, ``pinned`` says
    why in the refusal line (:mod:`scenarios.plans.pins`). An unpinned suite's scenarios are
    converted by ``--mode`` where they mean the same there, the others left out with the reason."""

    name: str
    mode: str | None = None
    pinned: str = ""
    # Each scenario runs in the mode (and on the release) it is written for, none converted:
    # any --mode contradicts the suite (``pinned`` says why).
    own_modes: bool = False


SUITES: Mapping[str, Suite] = {suite.name: suite for suite in (
    Suite(SMOKE),
    Suite(CONFORMANCE),
    Suite(ZOOKEEPER_SUITE, "zookeeper", "the zookeeper suite's faults hit the ZooKeeper ensemble of ZooKeeper-mode "
                                        "clusters"),
    Suite(NETWORK_SUITE, "zookeeper", "the network suite degrades and delays the links of ZooKeeper-mode clusters"),
    Suite(RELEASES_SUITE, "zookeeper", "the releases suite checks ZooKeeper-mode behaviour that changed between "
                                       "releases"),
    Suite(UPGRADE_SUITE, "zookeeper", "the upgrade suite rolls ZooKeeper-mode clusters from one release to another"),
    Suite(KRAFT_SUITE, "kraft", "the kraft suite is written for KRaft clusters (its ZooKeeper-mode twins are in "
                                "conformance)"),
    Suite(MIGRATION_SUITE, "migration", "the migration suite migrates ZooKeeper-mode clusters to KRaft (migration "
                                        "mode)"),
    Suite(JOURNEY_SUITE, "migration", "the journey suite migrates ZooKeeper-mode clusters to KRaft and upgrades "
                                      "them to 4.x (migration mode)"),
    Suite(DURABILITY_SUITE),
    Suite(TRANSACTIONS_SUITE),
    Suite(CORPUS_SUITE, None, "each entry of the corpus runs in the mode and on the releases its Kafka bug needs",
          own_modes=True),
)}

NETWORK_PARTITION = "network_partition"  # a fault kind (scenarios.faults.network)


# --- topics -----------------------------------------------------------------------------------

def topic_t() -> TopicSpec:
    # Leaders 1,2,3,2,3,1; each broker is a non-replica of two partitions (t-0's is broker 3).
    return TopicSpec("t", frozen({0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (2, 1), 4: (3, 2), 5: (1, 3)}))


def topic_r() -> TopicSpec:
    return TopicSpec("r", frozen({0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}))


def topic_s() -> TopicSpec:
    return TopicSpec("s", frozen({0: (1,), 1: (2,), 2: (3,)}))


def topic_d() -> TopicSpec:
    # Unproduced, for deletion: RF 2, leaders 1, 2, 3 (broker 3 leads d-2 and follows d-1).
    return TopicSpec("d", frozen({0: (1, 2), 1: (2, 3), 2: (3, 1)}), workload=False)


def topic_m() -> TopicSpec:
    return TopicSpec("m", frozen({0: (1, 2, 3), 1: (2, 3, 1), 2: (4, 5, 6), 3: (5, 6, 4)}))


# --- registry ---------------------------------------------------------------------------------

_REGISTRY: dict[str, Scenario] = {}


def scenario(*, topics: Sequence[Callable[[], TopicSpec]], smoke: bool = False,
             needs: ClusterNeeds = ClusterNeeds(), suites: frozenset[str] | None = None, name: str | None = None,
             known_bugs: tuple[KnownBug, ...] = (),
             ) -> Callable[[Callable[[], Sequence[Step]]], Callable[[], Sequence[Step]]]:
    """Register the decorated function's steps as a scenario named after the function (or ``name``);
    ``known_bugs``: Kafka bugs it meets on the releases that have them (:attr:`Scenario.known_bugs`)."""

    def register(fn: Callable[[], Sequence[Step]]) -> Callable[[], Sequence[Step]]:
        doc = (fn.__doc__ or "").strip()
        if not doc:
            raise TypeError(f"scenario {fn.__name__} needs a docstring naming the rule it exercises")
        chosen = suites if suites is not None else frozenset({CONFORMANCE, SMOKE} if smoke else {CONFORMANCE})
        built = Scenario(name or fn.__name__, doc, tuple(t() for t in topics), tuple(fn()), chosen, needs,
                         known_bugs=known_bugs)
        validate_steps(built)
        _REGISTRY[built.name] = built
        return fn

    return register


def release_fixture(*, releases: Sequence[str], topics: Sequence[Callable[[], TopicSpec]],
                    needs: ClusterNeeds = ClusterNeeds(),
                    ) -> Callable[[Callable[[], Sequence[Step]]], Callable[[], Sequence[Step]]]:
    """Register the decorated function's steps once per release, as ``<name>_on_<X_Y_Z>`` with
    ``ClusterNeeds.kafka_version`` pinned, in the ``releases`` suite."""

    def register(fn: Callable[[], Sequence[Step]]) -> Callable[[], Sequence[Step]]:
        for release in releases:
            name = f"{fn.__name__}_on_{release.replace('.', '_')}"
            pinned = replace(needs, kafka_version=release)
            scenario(topics=topics, needs=pinned, suites=frozenset({RELEASES_SUITE}), name=name)(fn)
        return fn

    return register


AUTO_REBALANCE = ClusterNeeds(3, tuple(sorted({
    AUTO_LEADER_REBALANCE_ENABLE: "true",
    # The first check runs 5 s after controller failover, then every interval.
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: "3",
}.items())))
SIX_BROKERS = ClusterNeeds(6)
# A follower silent for 3 s leaves the ISR (Partition.getOutOfSyncReplicas); the default 30 s
# would make the peer-partition scenario wait half a minute for the shrink.
SHORT_REPLICA_LAG = ClusterNeeds(3, ((REPLICA_LAG_TIME_MAX_MS, "3000"),))


def _cut(variant: str) -> Mapping[str, Any]:
    return frozen({"variant": variant})


def _heal(variant: str) -> Mapping[str, Any]:
    return frozen({"variant": "heal", "cut": variant})


# --- the scenarios ----------------------------------------------------------------------------

@scenario(topics=[topic_t], smoke=True)
def leader_hard_kill() -> list[Step]:
    """SIGKILL the leader of t-0. Seed 002 ``onBrokerFailure`` (partitions without leader →
    OfflinePartition → OnlinePartition with OfflinePartitionLeaderSelector; replicas on the
    failed broker → OfflineReplica); Kafka 3.9 ``PartitionLeaderElectionAlgorithms.
    offlinePartitionLeaderElection`` (first live ISR member in AR order) and
    ``Election.leaderForOffline`` (ISR minus the dead broker, epoch +1)."""
    return [Step("hard_kill", LeaderOf("t", 0))]


@scenario(topics=[topic_t])
def follower_hard_kill() -> list[Step]:
    """SIGKILL an in-sync follower of t-0. Seed 002 replica state change
    ``OnlineReplica → OfflineReplica`` ("remove this replica from the isr");
    ``ReplicaStateMachine.doRemoveReplicasFromIsr``: leader unchanged, ISR minus it, epoch +1."""
    return [Step("hard_kill", FollowerOf("t", 0))]


@scenario(topics=[topic_t])
def non_replica_controlled_shutdown() -> list[Step]:
    """SIGTERM a broker holding no replica of t-0: t-0 must not change at all while the
    broker's own partitions move. Seed 002 ``shutdownBroker`` acts only on the shutting-down
    broker's partitions; ``KafkaController.doControlledShutdown``."""
    return [Step("controlled_shutdown", NonReplicaOf("t", 0))]


@scenario(topics=[topic_r], smoke=True)
def controller_kill() -> list[Step]:
    """SIGKILL the controller. Seeds 000/001 controller election through the ephemeral
    ``/controller`` znode and ``onControllerFailover`` (epoch bump, replica/partition state
    machines start-up, offline elections); Kafka 3.9 ``KafkaController.elect`` /
    ``onControllerFailover``. Which broker wins is nondeterministic: any live broker is allowed;
    partitions the old controller led get epoch +2 (removal, then election), the others it
    followed +1: the oracle's count, judged exactly."""
    return [Step("controller_kill", Controller())]


@scenario(topics=[topic_t], smoke=True)
def controlled_shutdown_leader() -> list[Step]:
    """SIGTERM (controlled shutdown) the leader of t-0. Seed 002 ``shutdownBroker`` with
    ControlledShutdownLeaderSelector ("new leader = replica in isr that's not being shutdown;
    new isr = current isr - shutdown replica"); Kafka 3.9
    ``controlledShutdownPartitionLeaderElection`` and ``Election.leaderForControlledShutdown``."""
    return [Step("controlled_shutdown", LeaderOf("t", 0))]


@scenario(topics=[topic_t])
def controlled_shutdown_follower() -> list[Step]:
    """SIGTERM a follower of t-0. Seed 002 ``shutdownBroker`` steps 2–3 (StopReplica without
    deletion, follower → OfflineReplica to force it out of the ISR); Kafka 3.9
    ``KafkaController.doControlledShutdown``: leader unchanged, ISR minus it, epoch +1."""
    return [Step("controlled_shutdown", FollowerOf("t", 0))]


@scenario(topics=[topic_t])
def controlled_shutdown_only_isr() -> list[Step]:
    """Kill t-0's follower so the leader is the only ISR member, then SIGTERM that leader.
    ``controlledShutdownPartitionLeaderElection`` finds no candidate: nothing is written during
    the controlled shutdown (the partition stays "remaining", the broker retries), and when its
    session closes ``onBrokerFailure`` leaves t-0 leaderless with ISR [it] (Kafka 3.9
    ``doRemoveReplicasFromIsr`` keeps the last ISR member)."""
    return [Step("hard_kill", FollowerOf("t", 0)), Step("controlled_shutdown", LeaderOf("t", 0))]


@scenario(topics=[topic_s])
def rf1_broker_loss() -> list[Step]:
    """Replication factor 1: SIGKILL the broker holding s-0, then restart it. Seed 004 /
    Kafka 3.9 ``offlinePartitionLeaderElection`` has no candidate: leader -1, ISR [it]
    (``doRemoveReplicasFromIsr`` keeps the last member); on restart ``onBrokerStartup`` →
    ``triggerOnlinePartitionStateChange`` gives the leadership back to it (clean election)."""
    return [Step("hard_kill", LeaderOf("s", 0)), Step("start", EarlierTarget(0))]


@scenario(topics=[topic_t])
def rolling_restart() -> list[Step]:
    """Controlled restart of every broker in turn, waiting for the settled state in between
    (an operator's rolling upgrade). Seed 002 ``shutdownBroker`` then ``onBrokerStartup``;
    leadership is never returned by a restart (only preferred election / auto-rebalance)."""
    return [Step("restart", BrokerId(b)) for b in (1, 2, 3)]


@scenario(topics=[topic_t])
def restart_after_kill() -> list[Step]:
    """SIGKILL the leader of t-0, then restart it once its old session is gone. Seed 002
    ``onBrokerStartup`` (replicas → OnlineReplica, offline partitions elected; no leadership
    moves back): the restarted broker rejoins ISRs (leader-driven, epoch unchanged) but leads
    nothing it did not lead before only through a preferred election."""
    return [Step("hard_kill", LeaderOf("t", 0)), Step("start", EarlierTarget(0))]


@scenario(topics=[topic_t], smoke=True)
def preferred_election_after_restart() -> list[Step]:
    """Kill t-0's leader, restart it, then run a preferred replica election (AdminClient
    ``elect_leaders(PREFERRED)``) over every partition of t. Seed 002
    ``onPreferredReplicaElection`` with PreferredReplicaPartitionLeaderSelector ("new leader =
    first assigned replica (if in isr); new isr = current isr"); Kafka 3.9
    ``preferredReplicaPartitionLeaderElection``, ELECTION_NOT_NEEDED where AR.head leads."""
    return [Step("hard_kill", LeaderOf("t", 0)), Step("start", EarlierTarget(0)),
            Step("preferred_election", NoTarget("every partition of t"), frozen({"topic": "t", "via": "admin"}))]


@scenario(topics=[topic_t], needs=AUTO_REBALANCE)
def auto_leader_rebalance() -> list[Step]:
    """With ``auto.leader.rebalance.enable=true`` and a short
    ``leader.imbalance.check.interval.seconds``: SIGTERM the leader of t-0, restart it, and
    let the controller's ``checkAndTriggerAutoLeaderRebalance`` move its preferred partitions
    back (imbalance > ``leader.imbalance.per.broker.percentage``, strictly greater). Seed 003
    (auto rebalance with ``leader.imbalance.*``)."""
    return [Step("controlled_shutdown", LeaderOf("t", 0), then=("auto_rebalance",)),
            Step("start", EarlierTarget(0), then=("auto_rebalance",))]


@scenario(topics=[topic_t])
def unclean_off_non_isr_first() -> list[Step]:
    """Kill t-0's follower (it leaves the ISR), then its leader (t-0 leaderless, ISR [leader]),
    then restart the follower first. With unclean election off, Kafka 3.9
    ``offlinePartitionLeaderElection`` only takes ISR members: t-0 stays leaderless
    (NoReplicaOnline) — the seeds' OfflinePartitionLeaderSelector "(preferably in isr)" is
    stricter in 3.9. No acknowledged message may be lost."""
    return [Step("hard_kill", FollowerOf("t", 0)), Step("hard_kill", LeaderOf("t", 0)),
            Step("start", EarlierTarget(0))]


@scenario(topics=[topic_t])
def unclean_config_non_isr_first() -> list[Step]:
    """As ``unclean_off_non_isr_first``, then enable ``unclean.leader.election.enable`` on the
    topic (``/config/topics/<t>`` + change notification). Kafka 3.9
    ``KafkaController.processTopicUncleanLeaderElectionEnable`` runs the offline election with
    unclean allowed: the out-of-sync replica leads, ISR [it], leader_recovery_state RECOVERING
    (``Election.leaderForOffline``). Acknowledged messages written while it was down are lost:
    counted and reported, not failed."""
    return [Step("hard_kill", FollowerOf("t", 0)), Step("hard_kill", LeaderOf("t", 0)),
            Step("start", EarlierTarget(0)),
            Step("unclean_election", NoTarget("t (topic config)"), frozen({"topic": "t", "via": "config"}))]


@scenario(topics=[topic_t])
def unclean_admin_election() -> list[Step]:
    """As ``unclean_off_non_isr_first``, then an AdminClient ``elect_leaders(UNCLEAN)`` on t-0.
    Seed 003 (unclean election from the admin client); Kafka 3.9 ``ElectionType.UNCLEAN`` →
    ``leaderForOffline`` with unclean allowed for that request only."""
    return [Step("hard_kill", FollowerOf("t", 0)), Step("hard_kill", LeaderOf("t", 0)),
            Step("start", EarlierTarget(0)),
            Step("unclean_election", NoTarget("t-0 (admin)"), frozen({"topic": "t", "partitions": (0,), "via": "admin"}))]


@scenario(topics=[topic_t], smoke=True)
def reassign_leader_off() -> list[Step]:
    """Reassign t-0 from [1, 2] to [3, 2] through ``/admin/reassign_partitions``: the leader
    leaves the replica set. Seeds 001/002 ``onPartitionReassignment`` steps 1–12; Kafka 3.9
    ``moveReassignedPartitionLeaderIfRequired`` with ``reassignPartitionLeaderElection``
    (first target replica live and in ISR); final AR = the target in the given order."""
    return [Step("reassignment", NoTarget("t-0 -> [3, 2]"), frozen({"topic": "t", "moves": ((0, (3, 2)),)}))]


@scenario(topics=[topic_t])
def expand_replication_factor() -> list[Step]:
    """Reassign t-0 from [1, 2] to [1, 2, 3]: the new replica is added (NewReplica), joins the
    ISR through the leader, the leader stays (seed 002 step 7 "potential new leader (if
    current leader not in RAR)")."""
    return [Step("reassignment", NoTarget("t-0 -> [1, 2, 3]"), frozen({"topic": "t", "moves": ((0, (1, 2, 3)),)}))]


@scenario(topics=[topic_t])
def reorder_then_preferred() -> list[Step]:
    """Reassign t-0 from [1, 2] to [2, 1] (reorder only: completes at once, leader unchanged),
    then trigger a preferred election by creating ``/admin/preferred_replica_election``: the
    new AR head 2 takes the leadership. Seed 003 (changing a partition's preferred replica);
    seed 001 (the preferred replica election listener)."""
    return [Step("reassignment", NoTarget("t-0 -> [2, 1]"), frozen({"topic": "t", "moves": ((0, (2, 1)),)})),
            Step("preferred_election", NoTarget("t-0 (znode)"), frozen({"topic": "t", "partitions": (0,), "via": "znode"}))]


@scenario(topics=[topic_m], needs=SIX_BROKERS)
def move_123_to_456() -> list[Step]:
    """The seeds' worked example on 6 brokers: reassign m-0 from OAR {1,2,3} to RAR {4,5,6}.
    Seed 002 ``onPartitionReassignment`` table (AR {1..6} while catching up, leader 4 once
    RAR joined the ISR, OAR forced out of the ISR, AR = RAR last)."""
    return [Step("reassignment", NoTarget("m-0 -> [4, 5, 6]"), frozen({"topic": "m", "moves": ((0, (4, 5, 6)),)}))]


@scenario(topics=[topic_t])
def session_expiry_pause() -> list[Step]:
    """SIGSTOP the leader of t-0 past ``zookeeper.session.timeout.ms`` (+ tick + margin), then
    SIGCONT it. ZooKeeper expires the session → ``onBrokerFailure`` as for a kill (docs 2.10);
    the resumed broker re-registers with a new broker epoch → ``onBrokerStartup``; leadership
    is not returned."""
    return [Step("pause", LeaderOf("t", 0))]


@scenario(topics=[topic_t])
def short_pause_leader() -> list[Step]:
    """SIGSTOP the leader of t-0 for 2 s, well inside ``zookeeper.session.timeout.ms``, then
    SIGCONT. The controller acts only on ``/brokers/ids`` changes (seed 000: the
    ``BrokerChangeHandler`` listener; Kafka 3.9 ``KafkaController.processBrokerChange``): the
    session survives, nothing is written — same leaders, ISRs and epochs. A GC pause, not a
    failure; its cost shows only in the clients' produce gap."""
    return [Step("short_pause", LeaderOf("t", 0), frozen({"seconds": 2.0}))]


@scenario(topics=[topic_r])
def cascading_failures_recovery() -> list[Step]:
    """Kill r-0's leader, then the next leader, then restart them in the order they died.
    Seed 002 ``onBrokerFailure`` twice (ISR shrinks to the last member) then
    ``onBrokerStartup`` twice (offline elections; ISR rejoin through the leader; leadership
    not returned)."""
    return [Step("hard_kill", LeaderOf("r", 0)), Step("hard_kill", LeaderOf("r", 0)),
            Step("start", EarlierTarget(0)), Step("start", EarlierTarget(1))]


@scenario(topics=[topic_t], needs=SHORT_REPLICA_LAG)
def leader_cut_from_zookeeper() -> list[Step]:
    """Cut a leader of t (not the controller) off from ZooKeeper only, then heal. Its session
    expires while it keeps running and serving clients with stale metadata (failover-timing.md:
    expiry in [2T/3, T + tick]); the controller sees ``onBrokerFailure`` exactly as after a
    kill — Kafka 3.9 ``offlinePartitionLeaderElection`` for what it led, ``doRemoveReplicasFromIsr``
    elsewhere — and its AlterPartition requests are refused (``processAlterPartition``:
    STALE_BROKER_EPOCH; KIP-841 rejects a non-live replica in an ISR), so it cannot take the ISR
    back while cut. Healed, it re-creates its session and re-registers with a new broker epoch →
    ``onBrokerStartup``; leadership is not returned (seed 002)."""
    return [Step(NETWORK_PARTITION, NonControllerLeaderOf("t"), _cut("zookeeper")),
            Step(NETWORK_PARTITION, EarlierTarget(0), _heal("zookeeper"))]


@scenario(topics=[topic_r], needs=SHORT_REPLICA_LAG)
def follower_cut_from_leader() -> list[Step]:
    """Cut a follower of r-0 (not the controller) off from its peers only, then heal. ZooKeeper
    sees it live, so the controller does nothing; each leader drops it from the ISR itself after
    ``replica.lag.time.max.ms`` (3 s here) — Kafka 3.9 ``Partition.maybeShrinkIsr`` /
    ``getOutOfSyncReplicas`` → AlterPartition, leader and leader epoch unchanged (seed 002
    "replica.lag.time.max.ms"); the workload keeps producing because a silent follower is
    never out of sync. The partition the cut broker leads keeps its ISR (its AlterPartition
    cannot reach the controller) and stalls for ``acks=all`` clients until healed. Healed, the
    follower catches up and ``Partition.maybeExpandIsr`` adds it back. The oracle models the
    controller, not the leader, so the ISR expectation is the documented rule of
    ``scenarios.model.isr_rules`` (old ISR minus the follower while cut, full ISR after heal)."""
    return [Step(NETWORK_PARTITION, FollowerOf("r", 0, spare_controller=True), _cut("peers")),
            Step(NETWORK_PARTITION, EarlierTarget(0), _heal("peers"))]


@scenario(topics=[topic_t], needs=SHORT_REPLICA_LAG)
def controller_cut_from_zookeeper() -> list[Step]:
    """Cut the controller off from ZooKeeper only, then heal. Its session expires, so
    ``/controller`` and its ``/brokers/ids`` entry vanish; the other brokers' ``/controller``
    watches race to Kafka 3.9 ``KafkaController.elect`` and the winner runs ``onControllerFailover``
    (seeds 000/001) with the cut broker dead — partitions it led get epoch +2 (removal, then
    election), judged exactly like any modelled step. Which broker wins is
    nondeterministic: the check is exactly one controller, live, and not the cut one, plus the
    predicted leaders and ISRs. Healed, the old controller learns its session expired
    (``processExpire`` → ``onControllerResignation``), re-registers, and finds a controller in
    place (``onBrokerStartup`` on the new one)."""
    return [Step(NETWORK_PARTITION, Controller(), _cut("zookeeper")),
            Step(NETWORK_PARTITION, EarlierTarget(0), _heal("zookeeper"))]


@scenario(topics=[topic_t])
def broker_isolated_from_everyone() -> list[Step]:
    """Cut a leader of t (not the controller) off from everyone — ZooKeeper, its peers and the
    clients — then heal: a live, silent broker. The controller acts only when the session
    expires (Kafka 3.9 ``onBrokerFailure``, as for a kill); with the default
    ``replica.lag.time.max.ms`` (30 s) no leader shrinks the ISR first, so the oracle's epochs
    are exact. Clients' requests to it hang until their own timeouts (DROP, not RST) — the
    produce gap shows how much longer than a kill that lasts. Healed: ``onBrokerStartup``, no
    leadership returned (seed 002)."""
    return [Step(NETWORK_PARTITION, NonControllerLeaderOf("t"), _cut("everyone")),
            Step(NETWORK_PARTITION, EarlierTarget(0), _heal("everyone"))]


# --- ZooKeeper ensembles (docs/zookeeper-faults.md; suite "zookeeper") ---------------------------

ZOOKEEPER_SERVER = "zookeeper_server"  # fault kinds (scenarios.faults.zookeeper)
ZOOKEEPER_QUORUM_LOSS = "zookeeper_quorum_loss"
ZOOKEEPER_LEADER_CUT = "zookeeper_leader_cut"
ENSEMBLE_3 = ClusterNeeds(3, zookeepers=3)
ENSEMBLE_5 = ClusterNeeds(3, zookeepers=5)
_ZK_ONLY = frozenset({ZOOKEEPER_SUITE})


def _zk(action: str, role: str = "leader") -> Mapping[str, Any]:
    return frozen({"action": action, "role": role})


@scenario(topics=[topic_t], needs=ENSEMBLE_3, suites=_ZK_ONLY)
def zookeeper_leader_killed() -> list[Step]:
    """SIGKILL the ZooKeeper leader of a 3-server ensemble, then restart it. The two followers
    elect a new leader (ZooKeeper 3.8 ``FastLeaderElection``) and keep a quorum; every broker whose
    client was on the dead server times out (``ClientCnxn``: readTimeout = 2/3 of the session) and
    reconnects to a survivor with its session intact, so no ``/brokers/ids`` znode vanishes and
    the controller (Kafka 3.9 ``KafkaController``: no ``BrokerChange``) changes nothing: leaders,
    ISRs and epochs exactly as before, checked one session window after the kill."""
    return [Step(ZOOKEEPER_SERVER, options=_zk("kill", "leader")), Step(ZOOKEEPER_SERVER, options=_zk("restore"))]


@scenario(topics=[topic_t], needs=ENSEMBLE_3, suites=_ZK_ONLY)
def zookeeper_follower_paused() -> list[Step]:
    """SIGSTOP a ZooKeeper follower of a 3-server ensemble, then resume it. The leader keeps a
    quorum with the other follower (ZooKeeper 3.8 ``Leader``: a follower silent for syncLimit
    ticks is dropped); clients of the frozen server hang until readTimeout (2/3 of the session)
    and move on with their sessions (``ClientCnxn.startConnect`` to the next host). Nothing
    reaches the Kafka 3.9 controller: state unchanged (oracle: no event)."""
    return [Step(ZOOKEEPER_SERVER, options=_zk("pause", "follower")), Step(ZOOKEEPER_SERVER, options=_zk("restore"))]


@scenario(topics=[topic_t], needs=ENSEMBLE_5, suites=_ZK_ONLY)
def zookeeper_minority_killed() -> list[Step]:
    """SIGKILL a minority of a 5-server ensemble — the leader and one follower — then restart
    them. Three servers are a quorum (ZooKeeper 3.8 ``QuorumMaj.containsQuorum``: more than half)
    and elect a new leader; sessions move to survivors before expiring, so the Kafka 3.9
    controller sees no ``BrokerChange``. State unchanged (oracle: no event), checked one session
    window after the kill."""
    return [Step(ZOOKEEPER_SERVER, options=_zk("kill", "minority")), Step(ZOOKEEPER_SERVER, options=_zk("restore"))]


@scenario(topics=[topic_t], needs=ENSEMBLE_3, suites=_ZK_ONLY)
def zookeeper_quorum_lost() -> list[Step]:
    """Kill two of three ZooKeeper servers (the leader first) for twice the session timeout,
    then restart them. The survivor stops serving (ZooKeeper 3.8 ``Learner.shutdown`` →
    ``closeAllConnections``); no write can happen, so Kafka 3.9's ``ZooKeeperClient`` blocks in
    ``waitUntilConnected`` and nothing changes. When the quorum returns the new leader re-arms
    every session with its full timeout (``LeaderZooKeeperServer.createSessionTracker`` →
    ``SessionTrackerImpl`` → ``trackSession``/``updateSessionExpiry``): live brokers reconnect
    in time and keep their sessions although the outage outlasted them. Oracle: no event; leaders,
    ISRs and epochs exactly as before, one session window after the restore."""
    return [Step(ZOOKEEPER_QUORUM_LOSS)]


@scenario(topics=[topic_t], needs=ENSEMBLE_3, suites=_ZK_ONLY)
def zookeeper_quorum_lost_leader_dies() -> list[Step]:
    """Lose the ZooKeeper quorum, SIGKILL a leader of t (not the controller) during the outage,
    restore the quorum. With no ZooKeeper leader the dead broker's session cannot expire; the
    restored leader re-arms it with a full timeout (``SessionTrackerImpl`` → ``trackSession``),
    so it expires one session timeout after the restore → Kafka 3.9 ``onBrokerFailure`` →
    ``offlinePartitionLeaderElection`` and ``doRemoveReplicasFromIsr`` as for any kill (oracle:
    ``BrokerFailure``, exact epochs)."""
    return [Step(ZOOKEEPER_QUORUM_LOSS, NonControllerLeaderOf("t"), frozen({"kill_broker": True}))]


@scenario(topics=[topic_t], needs=ENSEMBLE_3, suites=_ZK_ONLY)
def controller_cut_from_zookeeper_leader() -> list[Step]:
    """Cut the Kafka controller from the ZooKeeper leader only, then heal. If its client was on
    the leader it times out (2/3 of the session) and reconnects to a follower, which forwards
    the session to the leader (ZooKeeper 3.8 ``FollowerRequestProcessor``/``Learner.
    validateSession``) over the quorum link that still works; on a follower nothing happens.
    Either way no session expires and the controller stays (Kafka 3.9 ``KafkaController``
    resigns only when ``/controller`` is deleted): oracle no event."""
    return [Step(ZOOKEEPER_LEADER_CUT, Controller(), frozen({"variant": "cut"})),
            Step(ZOOKEEPER_LEADER_CUT, EarlierTarget(0), frozen({"variant": "heal"}))]


# --- degraded links (docs/local-network.md; suite "network") -----------------------------------

NETWORK_DEGRADE = "network_degrade"  # a fault kind (scenarios.faults.degrade)
_NETWORK_ONLY = frozenset({NETWORK_SUITE})


def topic_f() -> TopicSpec:
    # Both partitions led by broker 1: brokers 2 and 3 follow and lead nothing, so a degraded
    # follower's own AlterPartition never decides an ISR of this topic.
    return TopicSpec("f", frozen({0: (1, 2, 3), 1: (1, 3, 2), 2: (1, 2, 3)}))


def _degrade(links: str, loss_pct: float, expect: str) -> Mapping[str, Any]:
    return frozen({"links": links, "loss_pct": loss_pct, "expect": expect})


def _degrade_heal(expect: str) -> Mapping[str, Any]:
    return frozen({"variant": "heal", "expect": expect})


@scenario(topics=[topic_f], needs=SHORT_REPLICA_LAG, suites=_NETWORK_ONLY)
def follower_peer_links_lossy() -> list[Step]:
    """Lose 80 % of a follower's packets to and from its peers (both ways; it leads nothing of f
    and is not the controller), then heal. Its fetches stall in TCP retransmission back-off for
    longer than ``replica.lag.time.max.ms`` (3 s), so leader 1 drops it from both ISRs itself —
    Kafka 3.9 ``Partition.maybeShrinkIsr``/``getOutOfSyncReplicas`` → AlterPartition, leader and
    leader epoch unchanged (rule ``rule_leader_isr_shrink``); ZooKeeper still sees it live, so no
    controller event. Healed, it catches up and ``Partition.maybeExpandIsr`` adds it back
    (``rule_leader_isr_expand``)."""
    return [Step(NETWORK_DEGRADE, FollowerLeadingNothing("f"), _degrade("peers", 80, "isr_shrink")),
            Step(NETWORK_DEGRADE, EarlierTarget(0), _degrade_heal("isr_shrink"))]


@scenario(topics=[topic_f], needs=SHORT_REPLICA_LAG, suites=_NETWORK_ONLY)
def follower_peer_links_lightly_lossy() -> list[Step]:
    """Lose 2 % of a follower's peer packets: below the ISR-shrink threshold. A lost segment is
    retransmitted within a few hundred ms, far inside ``replica.lag.time.max.ms`` (3 s), so
    Kafka 3.9 ``getOutOfSyncReplicas`` never names it: no ISR change, no controller event
    (oracle: no event), observed one session window after the fault; then healed."""
    return [Step(NETWORK_DEGRADE, FollowerLeadingNothing("f"), _degrade("peers", 2, "nothing")),
            Step(NETWORK_DEGRADE, EarlierTarget(0), _degrade_heal("nothing"))]


@scenario(topics=[topic_t], suites=_NETWORK_ONLY)
def leader_zookeeper_link_lossy() -> list[Step]:
    """Lose 10 % of a leader's packets to and from ZooKeeper (not the controller): below the
    session-expiry threshold. Its client pings every readTimeout/2 (2 s of the 6 s session,
    ZooKeeper 3.8 ``ClientCnxn``) and a lost ping is retransmitted by TCP long before the
    4 s readTimeout, so the session lives: no ``/brokers/ids`` change, no Kafka 3.9 controller event
    (oracle: no event), observed one session window after the fault; then healed."""
    return [Step(NETWORK_DEGRADE, NonControllerLeaderOf("t"), _degrade("zookeeper", 10, "nothing")),
            Step(NETWORK_DEGRADE, EarlierTarget(0), _degrade_heal("nothing"))]


# --- delayed ZooKeeper links (scenarios.faults.delay; docs/zookeeper-faults.md R5) ------------

NETWORK_DELAY = "network_delay"  # a fault kind (scenarios.faults.delay)
PROXIED = ClusterNeeds(3, link_proxies=True)


def _delay(delay_ms: int, jitter_ms: int, expect: str) -> Mapping[str, Any]:
    return frozen({"to": "zookeeper", "delay_ms": delay_ms, "jitter_ms": jitter_ms, "expect": expect})


@scenario(topics=[topic_t], needs=PROXIED, suites=_NETWORK_ONLY)
def leader_zookeeper_link_delayed() -> list[Step]:
    """Delay a leader's ZooKeeper links (not the controller's) by 1 s ± 0.2 s each way: below the
    session-expiry threshold (docs/zookeeper-faults.md R5, ``scenarios.model.zk_delay_rule``). Its idle
    ZooKeeper 3.8 client pings every readTimeout / 2 = 2 s (``ClientCnxn.SendThread.run``) and
    hears each reply 2 s late: at the onset the gap since the last reply may reach the 4 s
    readTimeout and drop one connection, which reconnects at once; the server hears a ping at
    least every 3 s, well inside the 6 s session, so the session lives: no ``/brokers/ids``
    change, no Kafka 3.9 controller event (oracle: no event), observed one session window after
    the fault; then healed."""
    return [Step(NETWORK_DELAY, NonControllerLeaderOf("t"), _delay(1000, 200, "nothing")),
            Step(NETWORK_DELAY, EarlierTarget(0), frozen({"variant": "heal", "expect": "nothing"}))]


@scenario(topics=[topic_t], needs=PROXIED, suites=_NETWORK_ONLY)
def leader_zookeeper_link_delayed_past_session() -> list[Step]:
    """Delay a leader's ZooKeeper links (not the controller's) by 9 s each way, 1.5 × the 6 s
    session: above the threshold (R5, ``scenarios.model.zk_delay_rule``). The first ping sent after
    the onset reaches the server 2 s + 9 s after the last undelayed one, more than the session
    plus a tick, so ZooKeeper 3.8 expires the session 4–6.5 s after the onset
    (``SessionTrackerImpl``), ``/brokers/ids/N`` vanishes and the Kafka 3.9
    controller runs ``onBrokerFailure`` (oracle ``BrokerFailure``). Healed, its client reads
    ``Expired``, re-creates the session and re-registers (``BrokerStartup``)."""
    return [Step(NETWORK_DELAY, NonControllerLeaderOf("t"), _delay(9000, 0, "session_expiry")),
            Step(NETWORK_DELAY, EarlierTarget(0), frozen({"variant": "heal", "expect": "session_expiry"}))]


# --- delayed peer links (scenarios.faults.delay; docs/local-network.md "Delayed peer and client links")

PROXIED_SHORT_REPLICA_LAG = ClusterNeeds(3, ((REPLICA_LAG_TIME_MAX_MS, "3000"),), link_proxies=True)


def _peer_delay(delay_ms: int, jitter_ms: int, expect: str) -> Mapping[str, Any]:
    return frozen({"to": "peers", "delay_ms": delay_ms, "jitter_ms": jitter_ms, "expect": expect})


@scenario(topics=[topic_f], needs=PROXIED_SHORT_REPLICA_LAG, suites=_NETWORK_ONLY)
def follower_link_delayed_past_lag_time() -> list[Step]:
    """Delay a follower's peer links (it leads nothing of f, is not the controller) by 3 s each
    way, then heal. Its fetches reach leader 1 a 6 s round trip apart, so Kafka 3.9
    ``Replica.updateFetchStateOrThrow`` leaves it caught up at best as of its last fetch and
    ``Partition.getOutOfSyncReplicas`` finds it behind for longer than ``replica.lag.time.max.ms``
    (3 s; the lag is ≈ 2 × the one-way delay under the workload's acks=all producer,
    scenarios.faults.delay): leader 1 drops it from every ISR itself (rule
    ``rule_leader_isr_shrink``; its session lives, no controller event). Healed, the delayed
    bytes drain, it catches up and ``Partition.maybeExpandIsr`` adds
    it back (``rule_leader_isr_expand``)."""
    # 3 s, not 2 s: at 2 s (2D = 4 s, 1 s over) the benchmark saw one partition of three leave
    # within 15 s while the others' lag hovered at the threshold (docs/local-network.md).
    return [Step(NETWORK_DELAY, FollowerLeadingNothing("f"), _peer_delay(3000, 0, "isr_shrink")),
            Step(NETWORK_DELAY, EarlierTarget(0), frozen({"variant": "heal", "expect": "isr_shrink"}))]


@scenario(topics=[topic_f], needs=PROXIED_SHORT_REPLICA_LAG, suites=_NETWORK_ONLY)
def follower_link_delayed() -> list[Step]:
    """Delay a follower's peer links by 200 ms ± 50 ms each way: below the ISR-shrink threshold.
    Its lag at leader 1 stays under 4 × 250 ms = 1 s, inside ``replica.lag.time.max.ms`` (3 s), so
    Kafka 3.9 ``getOutOfSyncReplicas`` never names it: no ISR change, no controller event
    (oracle: no event), observed one session window after the fault; then healed."""
    return [Step(NETWORK_DELAY, FollowerLeadingNothing("f"), _peer_delay(200, 50, "nothing")),
            Step(NETWORK_DELAY, EarlierTarget(0), frozen({"variant": "heal", "expect": "nothing"}))]


# --- behaviour that changed between releases (the releases suite) -----------------------------

@release_fixture(releases=("2.5.1",), topics=[topic_f])
def zookeeper_cut_follower_rejoins_isr() -> list[Step]:
    """KAFKA-9338 (fixed in 2.5.0) on a real cluster: cut a follower of f (RF 3, every partition
    led by broker 1, so a follower other than the controller always exists) from ZooKeeper only,
    then heal. Its session expires and the controller takes it out of
    every ISR with a new leader epoch it is never told of; it keeps fetching from the leaders it
    knew. On 2.4.1 the incremental fetch session drops the epoch the follower sends, nothing
    fences it, and its leaders add it back: the ISRs name a broker that is not registered
    (``rule_leader_isr_rejoin`` records). On 2.5.1 the session keeps the epoch, the fetch is
    fenced ("has an older epoch") and it stays out until it registers again. 2.4.1, where the
    ``isr_registered`` invariant fails, is the known-bug corpus's entry
    (``kafka_9338_cut_follower_added_back_to_the_isr``). docs/releases.md."""
    return [Step(NETWORK_PARTITION, FollowerOf("f", 0, spare_controller=True), _cut("zookeeper")),
            Step(NETWORK_PARTITION, EarlierTarget(0), _heal("zookeeper"))]


@release_fixture(releases=("3.1.2", "3.2.3"), topics=[topic_t])
def unclean_election_recovery_state() -> list[Step]:
    """KIP-704 (KAFKA-13587, 3.2.0, IBP 3.2-IV0) on a real cluster: the steps of
    ``unclean_config_non_isr_first`` — the out-of-sync follower of t-0 becomes leader through
    an unclean election while the old leader is down. On 3.2.3 the state znode says
    ``leader_recovery_state`` RECOVERING until a follower joins (``oracle_recovery`` records);
    on 3.1.2 the field is never written (``Election.leaderForOffline`` has no recovery state).
    docs/releases.md."""
    return [Step("hard_kill", FollowerOf("t", 0)), Step("hard_kill", LeaderOf("t", 0)),
            Step("start", EarlierTarget(0)),
            Step("unclean_election", NoTarget("t (topic config)"), frozen({"topic": "t", "via": "config"}))]


# --- rolling upgrades under faults (the upgrade suite) ---------------------------------------

ROLL = "roll"  # a fault kind (scenarios.faults.upgrade)
_UPGRADE_ONLY = frozenset({UPGRADE_SUITE})


def _rolling_upgrade(to: str, ibp: str) -> list[Step]:
    """Kafka's upgrade notes for ZooKeeper mode, with a fault between the rolls: the IBP pinned
    to the old release from the start (the cluster's needs), each broker rolled onto ``to`` by
    controlled shutdown, a leader killed and restarted after the first roll, a leader shut down
    under control and restarted after the second, then the IBP raised to ``ibp`` broker by broker."""
    return [Step(ROLL, BrokerId(1), frozen({"to": to})),
            Step("hard_kill", LeaderOf("t", 0)), Step("start", EarlierTarget(1)),
            Step(ROLL, BrokerId(2), frozen({"to": to})),
            Step("controlled_shutdown", LeaderOf("t", 1)), Step("start", EarlierTarget(4)),
            Step(ROLL, BrokerId(3), frozen({"to": to})),
            *(Step(ROLL, BrokerId(b), frozen({"ibp": ibp})) for b in (1, 2, 3))]


@scenario(topics=[topic_t], suites=_UPGRADE_ONLY,
          needs=ClusterNeeds(3, ((INTER_BROKER_PROTOCOL_VERSION, "2.8"),), kafka_version="2.8.2"))
def upgrade_2_8_to_3_9() -> list[Step]:
    """A rolling upgrade from 2.8.2 to 3.9.2 (IBP 2.8, then 3.9) under a hard kill and a
    controlled shutdown between the rolls (docs/releases.md#rolling-upgrades). Each step is
    predicted by the controller's release: 2.8.2's rules (no KIP-841: a controlled shutdown's
    epoch count is open) until the controller's broker runs 3.9.2. The client-history checker
    runs through the whole roll."""
    return _rolling_upgrade("3.9.2", "3.9")


@scenario(topics=[topic_t], suites=_UPGRADE_ONLY,
          needs=ClusterNeeds(3, ((INTER_BROKER_PROTOCOL_VERSION, "3.4"),), kafka_version="3.4.1"))
def upgrade_3_4_to_3_9() -> list[Step]:
    """A rolling upgrade from 3.4.1 to 3.9.2 (IBP 3.4, then 3.9) under a hard kill and a
    controlled shutdown between the rolls (docs/releases.md#rolling-upgrades); every step is
    predicted by the controller's release, KIP-841 and KIP-704 holding on both."""
    return _rolling_upgrade("3.9.2", "3.9")


# --- lookup -----------------------------------------------------------------------------------

def all_scenarios() -> list[Scenario]:
    return list(_REGISTRY.values())


def scenario_names() -> list[str]:
    return list(_REGISTRY)


def suite(name: str) -> list[Scenario]:
    if name not in SUITES:
        raise UsageError(f"unknown suite {name!r}; valid suites: {', '.join(SUITES)}")
    return [s for s in _REGISTRY.values() if name in s.suites]


def by_names(names: Sequence[str]) -> list[Scenario]:
    unknown = [n for n in names if n not in _REGISTRY]
    if unknown:
        raise UsageError(f"unknown scenario {', '.join(unknown)}; valid scenarios: {', '.join(_REGISTRY)}")
    return [_REGISTRY[n] for n in names]


@dataclass(frozen=True)
class Selection:
    """The scenarios to run, and those a suite left out with the reason."""

    scenarios: list[Scenario]
    left_out: list[tuple[Scenario, str]]

    def left_out_lines(self) -> list[str]:
        """One line per reason: "leaving out N scenario(s) (a, b): why"."""
        by_reason: dict[str, list[str]] = {}
        for s, why in self.left_out:
            by_reason.setdefault(why, []).append(s.name)
        return [f"leaving out {len(names)} scenario(s) ({', '.join(names)}): {why}"
                for why, names in by_reason.items()]


def select(suite_name: str | None, names: Sequence[str] = (), *,
           missing: Mapping[Capability, str] | None = None,
           missing_by_mode: Mapping[str, Mapping[Capability, str]] | None = None) -> Selection:
    """``--scenario`` names when given (in that order), else the suite (default conformance)
    without the scenarios needing a capability their clusters lack: ``missing_by_mode`` (cluster
    mode -> capability -> why the backend lacks it), else ``missing`` for every mode. Scenarios
    are then grouped by cluster needs (stable) so each cluster shape starts once."""
    left_out: list[tuple[Scenario, str]] = []
    if names:
        chosen = by_names(names)
    else:
        chosen = []
        for s in suite(suite_name or CONFORMANCE):
            absent = (missing_by_mode or {}).get(s.needs.mode, missing)
            lacking = [why for c, why in (absent or {}).items() if c in s.requirements]
            if lacking:
                left_out.append((s, "; ".join(lacking)))
            else:
                chosen.append(s)
    order = {needs: i for i, needs in enumerate(dict.fromkeys(s.needs for s in chosen))}
    return Selection(sorted(chosen, key=lambda s: order[s.needs]), left_out)


def with_zookeepers(s: Scenario, zookeepers: int | None) -> Scenario:
    """``--zookeepers N``: run the scenario on an ensemble of N servers (never a smaller one
    than it needs)."""
    if zookeepers is None or zookeepers <= s.needs.zookeepers:
        return s
    return replace(s, needs=replace(s.needs, zookeepers=zookeepers))


def with_mode(s: Scenario, mode: str | None, controllers: int | None = None) -> Scenario:
    """``--mode kraft [--controllers N]``: the scenario on a KRaft cluster (UsageError when one of
    its faults is ZooKeeper mode's: :func:`leave_out_for_mode` keeps those out of suites) of at
    least N controllers: a scenario needing more keeps its own (a quorum fault needs another
    voter to take over), as ``--brokers`` and ``--zookeepers`` never shrink a cluster."""
    voters = max(controllers or s.needs.controllers, s.needs.controllers)
    if mode is None or (mode == s.needs.mode and voters == s.needs.controllers):
        return s
    if mode not in s.modes:
        raise UsageError(f"scenario {s.name} cannot run on a {mode} cluster: {mode_problem(s, mode)}")
    return replace(s, needs=replace(s.needs, mode=mode, controllers=voters))


def leave_out_for_mode(scenarios: Sequence[Scenario], mode: str) -> tuple[list[Scenario], list[tuple[Scenario, str]]]:
    """The scenarios that can run on ``mode`` clusters, and the others with the reason."""
    kept, left = [], []
    for s in scenarios:
        if mode in s.modes:
            kept.append(s)
        else:
            left.append((s, mode_problem(s, mode)))
    return kept, left


def leave_out_for_release(scenarios: Sequence[Scenario], mode: str | None, kafka_version: str | None
                          ) -> tuple[list[Scenario], list[tuple[Scenario, str]]]:
    """The scenarios whose clusters ``kafka_version`` can start in ``mode`` (None: each its own), and
    the others with the reason: KRaft brokers with several log directories need 3.7+ (KIP-858,
    :func:`harness.config.check_kraft_jbod`). A scenario pinning its own release keeps it."""
    from kafka_chaos.harness.config import check_kraft_jbod

    kept, left = [], []
    for s in scenarios:
        version = s.needs.kafka_version or kafka_version
        try:
            if (mode or s.needs.mode) == "kraft" and s.needs.log_dirs > 1 and version is not None:
                check_kraft_jbod(version)
        except UsageError as exc:
            left.append((s, str(exc)))
            continue
        kept.append(s)
    return kept, left


def with_brokers(s: Scenario, brokers: int | None) -> Scenario:
    """``--brokers N``: grow the cluster of scenarios needing fewer (never shrink one)."""
    if brokers is None or brokers <= s.needs.brokers or s.needs.broker_ids:  # named ids stay as named
        return s
    return replace(s, needs=replace(s.needs, brokers=brokers))


# --- topic deletion and partition growth during faults -------------------------------


@scenario(topics=[topic_t, topic_d])
def delete_topic_replica_down() -> list[Step]:
    """Kill broker 3 (d-2's leader, d-1's follower), delete the unproduced topic d, start broker 3.
    Seeds 000/001 (topic deletion: ``TopicDeletionManager``, replica states ReplicaDeletionStarted /
    Successful / Ineligible); Kafka 3.9 ``processTopicDeletion`` → ``resumeDeletions`` →
    ``onPartitionDeletion``: the online replicas leave the ISR (OfflineReplica writes, leader -1)
    and are deleted, broker 3's replica is ReplicaDeletionIneligible, so d stays in
    ``/brokers/topics`` with ``/admin/delete_topics/d`` pending; ``onBrokerStartup`` →
    ``resumeDeletionForTopics`` deletes the last replica and ``completeDeleteTopic`` removes the
    topic. d carries no workload (``workload=False``)."""
    return [Step("hard_kill", BrokerId(3)), Step("delete_topic", NoTarget("d"), frozen({"topic": "d"})),
            Step("start", EarlierTarget(0))]


@scenario(topics=[topic_t])
def add_partitions_replicas_down() -> list[Step]:
    """Kill broker 3, add t-6 on [3] and t-7 on [3, 1] by rewriting ``/brokers/topics/t`` (the
    AdminClient accepts only registered brokers), start broker 3 again. Seeds 000/001 (the
    partition-modification listener); Kafka 3.9 ``processPartitionModifications`` →
    ``onNewPartitionCreation``: t-7 is initialised with its live replica (leader 1, ISR [1],
    epoch 0), t-6 has none and stays NewPartition with no state znode; ``onBrokerStartup`` →
    ``triggerOnlinePartitionStateChange`` initialises it (leader 3, epoch 0) and 3 rejoins t-7's
    ISR through the leader."""
    return [Step("hard_kill", BrokerId(3)),
            Step("add_partitions", NoTarget("t-6 [3], t-7 [3, 1]"),
                 frozen({"topic": "t", "add": ((6, (3,)), (7, (3, 1))), "via": "znode"})),
            Step("start", EarlierTarget(0))]


@scenario(topics=[topic_t])
def add_partitions_admin_follower_down() -> list[Step]:
    """Kill broker 3, add t-6 on [1, 2] by AdminClient ``createPartitions`` (registered brokers
    only), start broker 3. Kafka 3.9 ``processPartitionModifications`` → ``onNewPartitionCreation``:
    leader 1, ISR [1, 2], epoch 0, while the existing partitions keep the leaders the kill gave
    them."""
    return [Step("hard_kill", BrokerId(3)),
            Step("add_partitions", NoTarget("t-6 [1, 2]"), frozen({"topic": "t", "add": ((6, (1, 2)),)})),
            Step("start", EarlierTarget(0))]


# Two log directories per broker, so one can fail while the broker runs on; the high-watermark
# checkpoint (the write that reveals the failed directory, ReplicaManager.checkpointHighWatermarks)
# every second instead of 5.
TWO_LOG_DIRS = ClusterNeeds(3, ((REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, "1000"),), log_dirs=2)
_FAILED_DIR_OF_T0 = frozen({"topic": "t", "partition": 0})
_REPAIR = frozen({"variant": "heal"})


@scenario(topics=[topic_t], needs=TWO_LOG_DIRS)
def leader_log_dir_failure() -> list[Step]:
    """The log directory holding t-0 on its leader fails (Kafka's own
    ``log_dir_failure_test``), then the broker restarts with it repaired. The broker's next write
    there fails (``LogDirFailureChannel``), ``ReplicaManager.handleLogDirFailure`` takes the
    directory's replicas offline and writes ``/log_dir_event_notification``; Kafka 3.9
    ``processLogDirEventNotification`` → ``onBrokerLogDirFailure`` → ``onReplicasBecomeOffline``:
    t-0 (and every partition led from that directory) gets the offline election among its other
    online ISR members (``isReplicaOnline``), ISR minus the broker, epoch +1; followers there leave
    their ISRs (OfflineReplica, +1); the broker keeps running on its other directory. The repair
    (controlled shutdown, start) drops ``replicasOnOfflineDirs`` (``onBrokerStartup``): its
    replicas rejoin the ISRs, leadership does not move back."""
    return [Step("log_dir_failure", LeaderOf("t", 0), _FAILED_DIR_OF_T0),
            Step("log_dir_failure", EarlierTarget(0), _REPAIR)]


@scenario(topics=[topic_t], needs=TWO_LOG_DIRS)
def follower_log_dir_failure() -> list[Step]:
    """The log directory holding t-0 on its in-sync follower fails, then the broker restarts with
    it repaired. Kafka 3.9 ``onBrokerLogDirFailure`` → ``onReplicasBecomeOffline``: OfflineReplica for the
    follower (``doRemoveReplicasFromIsr``: leader unchanged, ISR minus it, epoch +1), the same for
    the directory's other partitions (a leader there moves); the replica can rejoin no ISR until
    the restart (``processLeaderAndIsrResponseReceived`` keeps it in ``replicasOnOfflineDirs``)."""
    return [Step("log_dir_failure", FollowerOf("t", 0), _FAILED_DIR_OF_T0),
            Step("log_dir_failure", EarlierTarget(0), _REPAIR)]


# The kraft suite mirrors scenarios registered above, so it is registered last.
from kafka_chaos.scenarios.plans import kraft_catalogue  # noqa: E402,F401  isort: skip
from kafka_chaos.scenarios.plans import migration_catalogue  # noqa: E402,F401  isort: skip
from kafka_chaos.scenarios.plans import journey_catalogue  # noqa: E402,F401  isort: skip
from kafka_chaos.scenarios.plans import durability_catalogue  # noqa: E402,F401  isort: skip
from kafka_chaos.scenarios.plans import transactions_catalogue  # noqa: E402,F401  isort: skip

# The known-bug corpus: schedule files, each twice (its affected and its fixed release).
_REGISTRY.update((s.name, s) for s in corpus.scenarios())

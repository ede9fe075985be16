"""The ``migration`` suite: the ZooKeeper→KRaft migration (KIP-866) of a running 3-broker
cluster under the client workload, driven phase by phase as Kafka 3.9's operations guide gives
it (``docs/ops.html`` 3.9, "ZooKeeper to KRaft Migration"; :mod:`scenarios.faults.migration`),
with faults in every phase. Every step is predicted by the model of the controller in charge
before it and checked against ZooKeeper, the KRaft metadata log and every broker's metadata;
the client history is checked across the whole migration.

Imported by :mod:`scenarios.plans.catalogue` once its own scenarios are registered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafka_chaos.scenarios.model.steps import Step, TopicSpec, frozen
from kafka_chaos.scenarios.model.targets import BrokerId, Brokers, Controller, EarlierTarget, NoTarget
from kafka_chaos.scenarios.plans import catalogue as zk
from kafka_chaos.scenarios.plans.spec import ClusterNeeds

MIGRATION_SUITE = zk.MIGRATION_SUITE
ONE_CONTROLLER = ClusterNeeds(3, mode="migration", controllers=1)
THREE_CONTROLLERS = ClusterNeeds(3, mode="migration", controllers=3)
ALL = Brokers((1, 2, 3))


def _register(name: str, needs: ClusterNeeds, topics: Sequence[Callable[[], TopicSpec]]
              ) -> Callable[[Callable[[], Sequence[Step]]], Callable[[], Sequence[Step]]]:
    return zk.scenario(topics=topics, needs=needs, suites=frozenset({MIGRATION_SUITE}), name=name)


def topic_gone() -> TopicSpec:
    """A topic deleted in the hybrid phase (no workload: nothing to read back)."""
    return TopicSpec("gone", frozen({0: (1, 2), 1: (2, 3), 2: (3, 1)}), workload=False)


def provision() -> Step:
    return Step("migration_provision", NoTarget("the KRaft controllers"))


def roll(to: str, *brokers: int) -> Step:
    return Step("migration_roll", Brokers(tuple(brokers)) if brokers else ALL, frozen({"to": to}))


def finalize() -> Step:
    return Step("migration_finalize", NoTarget("the KRaft controllers"))


@_register("migration_clean", ONE_CONTROLLER, [zk.topic_t])
def migration_clean() -> list[Step]:
    """Kafka 3.9, ops.html "ZooKeeper to KRaft Migration", with no fault: provision a KRaft controller with
    ``zookeeper.metadata.migration.enable``; roll each broker into migration mode (the ZooKeeper
    controller handles each controlled shutdown; the last registration starts the copy:
    KRaftMigrationDriver WAIT_FOR_BROKERS → … → DUAL_WRITE, leader epochs and ISRs copied as ZooKeeper
    had them); roll each broker to KRaft (the KRaft controller handles each shutdown, bumping the
    leader epoch on every ISR change while migrating: PartitionChangeBuilder zkMigrationEnabled);
    finalise. ZooKeeper must equal the metadata log at every dual-write step."""
    return [provision(), roll("hybrid", 1), roll("hybrid", 2), roll("hybrid", 3),
            roll("kraft", 1), roll("kraft", 2), roll("kraft", 3), finalize()]


@_register("migration_quorum_leader_kill_dual_write", THREE_CONTROLLERS, [zk.topic_t])
def migration_quorum_leader_kill_dual_write() -> list[Step]:
    """Kafka 3.9, 3 controllers: pause the active KRaft controller in the hybrid phase (ZooKeeper brokers,
    dual-writing) until another voter leads, roll the brokers to KRaft, then kill the active one
    once every broker is a KRaft broker and finalise on the two voters left (finalising starts
    the third again). Each new leader's driver recovers the migration state from ``/migration``
    (ZkMigrationClient.getOrCreateMigrationRecoveryState), claims ``/controller`` with a higher
    epoch and resumes dual-writing from the metadata it has (KAFKA-15010: the first releases lost
    writes across this failover). No partition changes."""
    return [provision(), roll("hybrid"), Step("quorum_leader_pause", Controller()),
            roll("kraft"), Step("quorum_leader_kill", Controller()), finalize()]


@_register("migration_broker_kill_mid_roll", ONE_CONTROLLER, [zk.topic_t])
def migration_broker_kill_mid_roll() -> list[Step]:
    """Kafka 3.9: SIGKILL a broker while the roll is half done, in each phase. Before the copy the
    ZooKeeper controller handles it (session expiry → onBrokerFailure); in hybrid the KRaft
    controller fences it after broker.session.timeout.ms and moves its leaderships, the
    migrating ZooKeeper brokers following by LeaderAndIsr (which is why the KRaft controller bumps
    the leader epoch on ISR shrinks while migrating: KAFKA-15109)."""
    return [provision(), roll("hybrid", 1), Step("hard_kill", BrokerId(2)), Step("start", EarlierTarget(2)),
            roll("hybrid", 2, 3), roll("kraft", 1), Step("hard_kill", BrokerId(3)), Step("start", EarlierTarget(6)),
            roll("kraft", 2, 3), finalize()]


@_register("migration_topics_in_hybrid", ONE_CONTROLLER, [zk.topic_t, topic_gone])
def migration_topics_in_hybrid() -> list[Step]:
    """Kafka 3.9, hybrid phase (KRaft controller, ZooKeeper brokers): add partitions, delete a topic and
    reassign a partition through the Admin API. The controller must send LeaderAndIsr for new
    partitions to the ZooKeeper brokers (KAFKA-15149), write the deletion and the reassignment
    to ZooKeeper, and leave no stray replica on the broker a reassignment removed (KAFKA-16120/16121)."""
    return [provision(), roll("hybrid"),
            Step("add_partitions", NoTarget("t-6 [1, 2], t-7 [2, 3]"),
                 frozen({"topic": "t", "add": ((6, (1, 2)), (7, (2, 3)))})),
            Step("delete_topic", NoTarget("topic gone"), frozen({"topic": "gone"})),
            Step("reassignment", NoTarget("t-0 to [2, 3]"), frozen({"topic": "t", "moves": ((0, (2, 3)),)})),
            roll("kraft"), finalize()]


@_register("migration_rollback_after_failover", THREE_CONTROLLERS, [zk.topic_t])
def migration_rollback_after_failover() -> list[Step]:
    """Kafka 3.9, ops.html "Reverting to ZooKeeper mode During the Migration", after two KRaft controller
    failovers (the active one paused until another leads) and a broker moved to KRaft: roll that broker back into migration mode, deprovision
    the quorum and delete ``/controller`` and ``/migration`` (a migrating broker wins the
    ZooKeeper controller election and takes the state as dual-written), then roll every broker
    to plain ZooKeeper mode. No partition may go offline (KAFKA-20488: a KRaft controller epoch
    above ZooKeeper's controller epoch)."""
    return [provision(), roll("hybrid"), Step("quorum_leader_pause", Controller()),
            Step("quorum_leader_pause", Controller()), roll("kraft", 1), roll("hybrid", 1),
            Step("migration_deprovision", NoTarget("the KRaft controllers")), roll("zk")]

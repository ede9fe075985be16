"""The ``journey`` suite: the whole way off ZooKeeper as one schedule, under the client workload
(docs/journey.md). A ZooKeeper-mode Kafka 3.9.2 cluster of 3 brokers is migrated to KRaft as the
3.9 operations guide says (``scenarios.faults.migration``, the steps as the ``migration`` suite has
them), then every node is rolled onto Kafka 4.4.0 one at a time -- the 3 controllers, then the 3
brokers -- and the features are finalized with ``kafka-features upgrade --release-version 4.4``, as
4.4's upgrade notes say (``scenarios.faults.kraft_upgrade``). Kills, pauses and quorum faults fall
between every step. Each step is predicted by the model of the controller in charge before it,
with that controller's release and the features the metadata log finalized (ELR comes on at the
finalize, not at the binary roll); the client history is checked across all of it.

Imported by :mod:`scenarios.plans.catalogue` once its own scenarios are registered.
"""

from __future__ import annotations

from kafka_chaos.harness.config import FIRST_CONTROLLER_ID
from kafka_chaos.scenarios.faults.kraft_upgrade import JOURNEY_RELEASE, JOURNEY_RELEASE_VERSION
from kafka_chaos.scenarios.model.steps import Step, frozen
from kafka_chaos.scenarios.model.targets import BrokerId, Brokers, Controller, EarlierTarget, LeaderOf, NoTarget
from kafka_chaos.scenarios.plans import catalogue as zk
from kafka_chaos.scenarios.plans.migration_catalogue import finalize, provision, roll
from kafka_chaos.scenarios.plans.spec import ClusterNeeds

JOURNEY_SUITE = zk.JOURNEY_SUITE
# The run's release is where the journey starts (3.9.2 by default: the last ZooKeeper line's newest;
# 4.4's notes take any 3.3.x or later, the migration any 3.6.x or later).
JOURNEY = ClusterNeeds(3, mode="migration", controllers=3)
CONTROLLERS = tuple(range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + 3))  # ClusterConfig.controller_ids of 3 brokers


def kraft_roll_controller(node: int) -> Step:
    return Step("kraft_roll", NoTarget(f"controller {node}"), frozen({"controller": node, "to": JOURNEY_RELEASE}))


def kraft_roll_broker(broker: int) -> Step:
    return Step("kraft_roll", Brokers((broker,)), frozen({"to": JOURNEY_RELEASE}))


def kraft_finalize() -> Step:
    return Step("kraft_finalize", NoTarget("the cluster's features"), frozen({"release_version": JOURNEY_RELEASE_VERSION}))


# A finalize that keeps the quorum static: what ``kafka-features version-mapping --release-version 4.4`` prints
# (4.4.0's own tool) less kraft.version, so the static quorum stays static.
FEATURES_4_4_WITHOUT_KRAFT_VERSION = {"metadata.version": 33, "transaction.version": 2, "group.version": 1,
                                      "eligible.leader.replicas.version": 1, "share.version": 2, "streams.version": 1}


def kraft_finalize_features() -> Step:
    return Step("kraft_finalize", NoTarget("the cluster's features but kraft.version"),
                frozen({"release_version": JOURNEY_RELEASE_VERSION, "features": FEATURES_4_4_WITHOUT_KRAFT_VERSION}))


def journey_steps() -> list[Step]:
    """The schedule, its indices fixed (``EarlierTarget`` names them)."""
    steps = [
        provision(),                                        # 0  controllers with the migration flag
        roll("hybrid"),                                     # 1  every broker into migration mode: the copy
        Step("hard_kill", BrokerId(2)),                     # 2  in dual-write: the KRaft controller fences it
        Step("start", EarlierTarget(2)),                    # 3
        Step("quorum_leader_pause", Controller()),          # 4  a KRaft failover while dual-writing
        roll("kraft"),                                      # 5  every broker a KRaft broker
        finalize(),                                         # 6  POST_MIGRATION: no way back
        # 7: every voter killed for 10 s, then back (a killed voter would stay down, and rolling
        # another one then would leave no majority)
        Step("quorum_loss", NoTarget("every KRaft controller")),
    ]
    steps += [kraft_roll_controller(c) for c in CONTROLLERS]  # 8, 9, 10: one at a time, caught up in between
    steps += [
        Step("hard_kill", LeaderOf("t", 0)),                # 11 a 4.4.0 controller, metadata.version 3.9-IV0
        Step("start", EarlierTarget(11)),                   # 12
        kraft_roll_broker(1),                               # 13
        Step("pause", BrokerId(2)),                         # 14 fenced by the 4.4.0 controller, then back
        kraft_roll_broker(2),                               # 15
        Step("quorum_leader_pause", Controller()),          # 16 between 4.4.0 voters
        kraft_roll_broker(3),                               # 17 every node on 4.4.0, ELR still off
        kraft_finalize(),                                   # 18 metadata.version 4.4-IV2, ELR on
        Step("hard_kill", LeaderOf("t", 1)),                # 19 ELR rules from here
        Step("start", EarlierTarget(19)),                   # 20
        Step("quorum_leader_kill", Controller()),           # 21
        Step("controlled_shutdown", BrokerId(3)),           # 22
        Step("start", EarlierTarget(22)),                   # 23
    ]
    return steps


@zk.scenario(topics=[zk.topic_t], needs=JOURNEY, suites=frozenset({JOURNEY_SUITE}), name="journey_zk_to_4_4")
def journey_zk_to_4_4() -> list[Step]:
    """Kafka 3.9.2 in ZooKeeper mode to 4.4.0 in KRaft, with 3 controllers: the 3.9 operations guide's
    migration (provision, the rolls to migration mode and to KRaft, finalising), a broker killed in
    dual-write and the active controller paused; then 4.4's upgrade notes ("Upgrading Servers to 4.4.0
    from any version 3.3.x through 4.3.0"): each controller and each broker restarted on 4.4.0, one at a
    time, with a leader killed, a broker paused and quorum failovers between them, and
    ``kafka-features upgrade --release-version 4.4`` (metadata.version 4.4-IV2, eligible leader replicas
    on: FeatureCommand sets every production feature to its default level for 4.4); then a leader
    killed, the active controller killed and a controlled shutdown under the 4.4 rules. The whole
    quorum is lost for 10 s right after the migration is finalised. Until the
    finalize the 4.4.0 controllers run at metadata.version 3.9-IV0 with ELR off."""
    return journey_steps()


def static_quorum_steps() -> list[Step]:
    """The shorter journey finalized with the features named, kraft.version left out (indices fixed: ``EarlierTarget``)."""
    steps = [provision(), roll("hybrid"), roll("kraft"), finalize()]              # 0-3
    steps += [kraft_roll_controller(c) for c in CONTROLLERS]                     # 4-6
    steps += [kraft_roll_broker(1),                                               # 7
              Step("hard_kill", LeaderOf("t", 2)), Step("start", EarlierTarget(8)),  # 8-9
              kraft_roll_broker(2), kraft_roll_broker(3),                         # 10-11
              kraft_finalize_features(),                                          # 12
              Step("hard_kill", LeaderOf("t", 3)), Step("start", EarlierTarget(13)),  # 13-14
              Step("quorum_leader_pause", Controller())]                          # 15
    return steps


@zk.scenario(topics=[zk.topic_t], needs=JOURNEY, suites=frozenset({JOURNEY_SUITE}),
             name="journey_finalize_without_kraft_version")
def journey_finalize_without_kraft_version() -> list[Step]:
    """The journey to Kafka 4.4.0 finalized with the features named one by one: ``kafka-features upgrade
    --feature`` with every level ``version-mapping --release-version 4.4`` gives but ``kraft.version``
    (``--release-version 4.4`` also asks kraft.version=1, which turns the static quorum of
    ``controller.quorum.voters`` dynamic). The migration with no fault between its steps, the six
    rolls with a leader killed among the brokers', then a leader killed and the active controller
    paused at metadata.version 4.4-IV2 with ELR on, the quorum still static (docs/journey.md)."""
    return static_quorum_steps()

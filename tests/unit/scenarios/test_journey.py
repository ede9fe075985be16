"""The journey (docs/journey.md): the pure parts of ``kraft_roll`` and ``kraft_finalize``, the
features the oracle reads from the metadata log, and the journey suite's schedule."""

from __future__ import annotations

import pytest

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.local.kraft_releases import command_for_release
from kafka_chaos.oracle import BrokerStartup, ControlledShutdown, Release
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.oracle.kraft.config import (
    ELR_FEATURE,
    METADATA_VERSION,
    elr_feature_enabled,
    finalized_feature_config,
    metadata_version,
)
from kafka_chaos.oracle.release import ProtocolVersion
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
from kafka_chaos.scenarios.faults.kraft_upgrade import (
    KraftFinalize,
    KraftRoll,
    finalize_tool_release,
    metadata_level,
    roll_events,
)
from kafka_chaos.scenarios.model.steps import Step, frozen
from kafka_chaos.scenarios.model.targets import Brokers, NoTarget, Target
from kafka_chaos.scenarios.plans.catalogue import suite
from kafka_chaos.scenarios.plans.journey_catalogue import CONTROLLERS, journey_steps, static_quorum_steps


def _fault(kind: str, target: Target, **options: object) -> object:
    return make_fault(kind, target, options, topic_names={}, topic_partitions={})


# --- the command line of a rolled node -----------------------------------------------------------

OLD = ["/usr/bin/java", "-Xmx384m", "-XX:SharedArchiveFile=/c/kafka-3.9.2-broker.jsa", "-javaagent:/j.jar=1:/y",
       "-Dkafka.logs.dir=/r/controller-3000/logs", "-Dlog4j.configuration=file:/r/log4j.properties",
       "-cp", "/k/3.9.2/a.jar:/k/3.9.2/b.jar", "kafka.Kafka", "/r/controller-3000/server.properties"]


def test_a_rolled_node_keeps_its_flags_and_takes_the_releases_class_path_and_logging() -> None:
    new = command_for_release(OLD, "/k/4.4.0/a.jar", "-Dlog4j2.configurationFile=/r/log4j2.properties")
    assert new == ["/usr/bin/java", "-Xmx384m", "-javaagent:/j.jar=1:/y", "-Dkafka.logs.dir=/r/controller-3000/logs",
                   "-Dlog4j2.configurationFile=/r/log4j2.properties", "-cp", "/k/4.4.0/a.jar", "kafka.Kafka",
                   "/r/controller-3000/server.properties"]
    # rolled again (back to a log4j 1 release): the log4j2 flag is the one replaced
    again = command_for_release(new, "/k/3.9.2/a.jar:/k/3.9.2/b.jar", "-Dlog4j.configuration=file:/r/log4j.properties")
    assert again == [a for a in OLD if not a.startswith("-XX:SharedArchiveFile")]


def test_a_command_without_a_class_path_is_refused() -> None:
    with pytest.raises(HarnessError):
        command_for_release(["java", "kafka.Kafka"], "/x", "-Dlog4j.configuration=file:/l")


# --- what the oracle reads from the log ----------------------------------------------------------

@pytest.mark.parametrize("features, expected", [
    # a cluster migrated on 3.9.2: metadata.version 3.9-IV0 finalized, no ELR record -> off
    ({METADATA_VERSION: 21}, {METADATA_VERSION: "3.9-IV0", ELR_FEATURE: "0"}),
    # after kafka-features upgrade --release-version 4.4 (version-mapping: 33, ELR 1)
    ({METADATA_VERSION: 33, ELR_FEATURE: 1, "kraft.version": 1, "transaction.version": 2},
     {METADATA_VERSION: "4.4-IV2", ELR_FEATURE: "1"}),
    # a fresh 4.0 cluster: 4.0-IV3, ELR's default 0 is never written
    ({METADATA_VERSION: 25, "group.version": 1}, {METADATA_VERSION: "4.0-IV3", ELR_FEATURE: "0"}),
    # the log's start not seen: nothing (the release's format default then decides)
    ({}, {}),
    ({ELR_FEATURE: 1}, {}),
    # a level the table does not know: ELR only
    ({METADATA_VERSION: 99}, {ELR_FEATURE: "0"}),
])
def test_finalized_features_as_the_oracle_reads_them(features: dict[str, int], expected: dict[str, str]) -> None:
    assert finalized_feature_config(features) == expected


@pytest.mark.parametrize("release, features, elr, mv", [
    # the rule switches at the finalize, not at the binary roll
    ("3.9.2", {METADATA_VERSION: 21}, False, ProtocolVersion(3, 9, 0, 0)),
    ("4.4.0", {METADATA_VERSION: 21}, False, ProtocolVersion(3, 9, 0, 0)),   # rolled, not finalized
    ("4.4.0", {METADATA_VERSION: 33, ELR_FEATURE: 1}, True, ProtocolVersion(4, 4, 0, 2)),  # finalized
    ("4.4.0", {}, True, ProtocolVersion(4, 4, 0, 2)),  # a fresh 4.4 cluster's defaults
])
def test_elr_and_metadata_version_follow_the_finalized_features(release: str, features: dict[str, int], elr: bool,
                                                                mv: ProtocolVersion) -> None:
    config = finalized_feature_config(features)
    assert elr_feature_enabled(config, Release.parse(release)) is elr
    assert metadata_version(config, Release.parse(release)) == mv


# --- the faults ----------------------------------------------------------------------------------

@pytest.mark.parametrize("controller, brokers, led, events", [
    (None, (2,), False, [ControlledShutdown(2), BrokerStartup((2,))]),
    (3001, (), True, [ControllerFailover()]),   # the active controller resigns
    (3001, (), False, []),                       # a follower voter: nothing the controller decides
])
def test_roll_events(controller: int | None, brokers: tuple[int, ...], led: bool, events: list[object]) -> None:
    assert roll_events(controller, brokers, led) == events


def test_kraft_roll_options() -> None:
    broker = _fault("kraft_roll", Target((2,), "broker 2"), to="4.4.0")
    assert isinstance(broker, KraftRoll) and broker.node == 2 and broker.label == "kraft_roll/broker to 4.4.0"
    assert broker.oracle_events() == [ControlledShutdown(2), BrokerStartup((2,))]
    controller = _fault("kraft_roll", Target((), "controller 3000"), to="4.4.0", controller=3000)
    assert isinstance(controller, KraftRoll) and controller.node == 3000
    assert controller.oracle_events() == []  # until prepare saw it lead
    for bad in ({"to": "4.4"}, {"to": "3.5.2"}, {"to": "4.4.0", "controller": "3000"}, {"to": "4.4.0", "x": 1}):
        with pytest.raises(UsageError):
            _fault("kraft_roll", Target((2,), "broker 2"), **bad)
    with pytest.raises(UsageError):  # two brokers at once is not one node
        _fault("kraft_roll", Target((1, 2), "brokers 1, 2"), to="4.4.0")


def test_kraft_finalize_options() -> None:
    fault = _fault("kraft_finalize", Target((), "features"), release_version="4.4")
    assert isinstance(fault, KraftFinalize) and fault.oracle_events() == [] and fault.label == "kraft_finalize/4.4"
    workaround = _fault("kraft_finalize", Target((), "features"), release_version="4.4",
                        features={"metadata.version": 33, "eligible.leader.replicas.version": 1})
    assert isinstance(workaround, KraftFinalize) and workaround.label == "kraft_finalize/4.4/features"
    for bad in ({"release_version": "5.0"}, {"release_version": 4.4}, {"features": {"x": "1"}}):
        with pytest.raises(UsageError):
            _fault("kraft_finalize", Target((), "features"), **bad)


@pytest.mark.parametrize("version, level", [("4.4", 33), ("4.4-IV0", 31), ("3.9", 21), ("3.9-IV0", 21), ("4.0", 25)])
def test_metadata_level_of_a_release_version(version: str, level: int) -> None:
    assert metadata_level(version) == level


def test_the_finalize_runs_the_one_release_every_node_runs() -> None:
    assert finalize_tool_release({3000: "4.4.0", 1: "4.4.0"}, "4.4") == "4.4.0"
    with pytest.raises(HarnessError, match="every node"):
        finalize_tool_release({3000: "4.4.0", 1: "3.9.2"}, "4.4")
    with pytest.raises(HarnessError, match="not the nodes' release"):
        finalize_tool_release({3000: "4.3.1", 1: "4.3.1"}, "4.4")


# --- the generator side ---------------------------------------------------------------------------

def _finalised_model() -> ClusterModel:
    model = ClusterModel((1, 2, 3), {}, live={1, 2, 3}, mode="migration", controllers=3)
    model.provisioned, model.finalized = True, True
    model.roles = {1: "kraft", 2: "kraft", 3: "kraft"}
    return model


def test_the_generator_rolls_every_node_once_then_finalizes() -> None:
    model = _finalised_model()
    for node in (3000, 3001, 3002):
        model.apply(Step("kraft_roll", NoTarget(f"controller {node}"), frozen({"controller": node, "to": "4.4.0"})))
    with pytest.raises(IllegalStep):  # brokers 1-3 still on the old release
        model.apply(Step("kraft_finalize", NoTarget("features")))
    for b in (1, 2, 3):
        model.apply(Step("kraft_roll", Brokers((b,)), frozen({"to": "4.4.0"})))
    model.apply(Step("kraft_finalize", NoTarget("features")))
    with pytest.raises(IllegalStep):
        model.apply(Step("kraft_finalize", NoTarget("features")))


def test_no_roll_before_the_migration_is_finalised() -> None:
    model = _finalised_model()
    model.finalized = False
    with pytest.raises(IllegalStep):
        model.apply(Step("kraft_roll", Brokers((1,)), frozen({"to": "4.4.0"})))


# --- the journey suite's schedule -----------------------------------------------------------------

PHASES = {"migration_provision", "migration_roll", "migration_finalize", "kraft_roll", "kraft_finalize"}


def test_the_journey_walks_migration_rolls_and_finalize_in_the_documented_order() -> None:
    steps = journey_steps()
    scenarios = {s.name: s for s in suite("journey")}
    assert set(scenarios) == {"journey_zk_to_4_4", "journey_finalize_without_kraft_version"}
    scenario = scenarios["journey_zk_to_4_4"]
    assert list(scenario.steps) == steps and scenario.needs.mode == "migration" and scenario.needs.controllers == 3
    assert list(scenarios["journey_finalize_without_kraft_version"].steps) == static_quorum_steps()
    phases = [s for s in steps if s.fault in PHASES]
    kinds = [s.fault for s in phases]
    # the migration as the migration suite has it, then every controller, every broker, the finalize
    assert kinds[:4] == ["migration_provision", "migration_roll", "migration_roll", "migration_finalize"]
    assert [s.options["to"] for s in phases[1:3]] == ["hybrid", "kraft"]
    rolls = phases[4:-1]
    assert [s.options.get("controller") for s in rolls[:3]] == list(CONTROLLERS)
    assert [s.target.broker_ids for s in rolls[3:]] == [(1,), (2,), (3,)]  # type: ignore[attr-defined]
    assert {s.options["to"] for s in rolls} == {"4.4.0"}
    assert kinds[-1] == "kraft_finalize" and phases[-1].options["release_version"] == "4.4"
    # faults between the phases: a kill, pause or quorum fault after each of the migration's steps
    # but the provisioning, and around the rolls; and faults after the finalize (the ELR rules)
    between = [i for i, s in enumerate(steps) if s.fault not in PHASES and s.fault != "start"]
    assert len(between) >= 8
    finalize_at = steps.index(phases[-1])
    assert any(s.fault == "hard_kill" for s in steps[finalize_at + 1:])
    assert any(s.fault.startswith("quorum_") for s in steps[finalize_at + 1:])
    assert any(s.fault.startswith("quorum_") for s in steps[:steps.index(phases[3])])  # before the migration's end


def test_the_static_quorum_journey_finalizes_every_4_4_feature_but_kraft_version() -> None:
    steps = static_quorum_steps()
    phases = [s for s in steps if s.fault in PHASES]
    assert [s.fault for s in phases] == ["migration_provision", "migration_roll", "migration_roll", "migration_finalize",
                                         *["kraft_roll"] * 6, "kraft_finalize"]
    features = phases[-1].options["features"]
    # 4.4.0's version-mapping --release-version 4.4, less kraft.version (the quorum stays static)
    assert features == {"metadata.version": 33, "transaction.version": 2, "group.version": 1,
                        "eligible.leader.replicas.version": 1, "share.version": 2, "streams.version": 1}
    fault = _fault("kraft_finalize", Target((), "f"), **phases[-1].options)
    assert isinstance(fault, KraftFinalize) and "kraft.version" not in fault.features
    assert any(s.fault == "hard_kill" for s in steps[steps.index(phases[-1]) + 1:])


def test_every_journey_step_builds_its_fault_for_a_migrating_cluster() -> None:
    for step in [*journey_steps(), *static_quorum_steps()]:
        fault = make_fault(step.fault, Target((1,), "v"), step.options, topic_names={"t": "t"},
                           topic_partitions={"t": range(6)})
        assert "migration" in fault.modes, step.fault  # type: ignore[attr-defined]


# --- the release the oracle predicts with ----------------------------------------------------------

class _RolledCluster:
    """A migrated cluster whose controllers 3000-3002 were partly rolled (KraftReleaseRoller only)."""

    kafka_version = "3.9.2"
    broker_ids = [1, 2, 3]

    def __init__(self, releases: dict[int, str]) -> None:
        self.releases = releases

    def broker_settings(self) -> dict[str, str]:
        return {"min.insync.replicas": "1"}

    def node_version(self, node_id: int) -> str:
        return self.releases.get(node_id, self.kafka_version)

    def node_versions(self) -> dict[int, str]:
        return dict(self.releases)

    def set_node_release(self, node_id: int, kafka_version: str) -> None:
        self.releases[node_id] = kafka_version

    def server_log_size(self, node_id: int) -> int:
        return 0

    def wait_controller_caught_up(self, node_id: int, since: int, timeout: float) -> None:
        return None

    def upgrade_features(self, release_version: str, tool_version: str, features: object = None) -> str:
        return ""


@pytest.mark.parametrize("controller, release", [(3000, "4.4.0"), (3001, "3.9.2"), (None, "3.9.2")])
def test_the_oracle_predicts_with_the_active_controllers_release(controller: int | None, release: str) -> None:
    from kafka_chaos.scenarios.run.step import controller_settings

    settings, got = controller_settings(_RolledCluster({3000: "4.4.0"}), controller)  # type: ignore[arg-type]
    assert got == release and settings == {"min.insync.replicas": "1"}


def test_the_local_migrating_cluster_rolls_its_kraft_nodes() -> None:
    from kafka_chaos.harness.cluster import KraftReleaseRoller, implements
    from kafka_chaos.harness.local.migration import LocalMigrationCluster

    assert implements(LocalMigrationCluster, KraftReleaseRoller)
    assert implements(_RolledCluster({}), KraftReleaseRoller)


def test_the_finalize_records_what_the_tool_upgraded_and_what_is_finalized_after() -> None:
    from kafka_chaos.harness.cluster import DESCRIBE_MARK

    fault = _fault("kraft_finalize", Target((), "features"), release_version="4.4")
    assert isinstance(fault, KraftFinalize) and fault.outcome is None
    fault._said = f"kraft.version was upgraded to 1.\nmetadata.version was upgraded to 33.\n{DESCRIBE_MARK}\n" \
                  "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1"
    assert fault.outcome == {
        "tool": ["kraft.version was upgraded to 1.", "metadata.version was upgraded to 33."],
        "describe": ["Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1"]}


def test_explore_mode_migration_carries_on_to_the_4_4_upgrade_legally() -> None:
    """Generated migration schedules draw the rolls once finalised, controllers first, and the
    finalize once every node is rolled; every schedule stays legal."""
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig, default_faults, generate, problems

    config = GeneratorConfig(steps=30, mode="migration", faults=default_faults("migration"))
    assert {"kraft_roll", "kraft_finalize"} <= set(config.faults)
    finalized = 0
    for index in range(40):
        schedule = generate(5, index, config)
        assert problems(schedule) == []
        kinds = [s.fault for s in schedule.steps]
        rolls = [s for s in schedule.steps if s.fault == "kraft_roll"]
        if rolls:
            assert kinds.index("migration_finalize") < kinds.index("kraft_roll")
            controllers = [s.options.get("controller") for s in rolls if "controller" in s.options]
            assert controllers == sorted(controllers) and len(set(controllers)) == len(controllers)
        if "kraft_finalize" in kinds:
            finalized += 1
            assert len(rolls[:kinds.count("kraft_roll")]) >= 6 and kinds.count("kraft_finalize") == 1
    assert finalized >= 1

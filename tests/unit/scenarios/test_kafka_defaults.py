"""Which clusters run Kafka's own ``auto.leader.rebalance.enable=true`` and which keep the harness's
quick ``false`` (harness.config.chaos_cluster_defaults): the catalogue's runs (``kafka-chaos run``,
``explore``) state Kafka's value in ZooKeeper mode, and in KRaft mode on every release the KRaft
model covers (3.6-3.9, 4.x), where a scenario states nothing; schedule files run as written; the test command (``--harness-defaults``, and
``run_scenarios``, ``GeneratorConfig`` and ``ClusterConfig`` as its tests call them) keeps it
off. No cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_chaos.app.runs import kafka_defaults_stated
from kafka_chaos.cli.main import main
from kafka_chaos.harness.config import (
    AUTO_LEADER_REBALANCE_ENABLE,
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
    ClusterConfig,
    broker_properties,
    kafka_default_overrides,
)
from kafka_chaos.scenarios.plans import catalogue
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate
from kafka_chaos.scenarios.plans.schedule import dumps, schedule_from_json
from kafka_chaos.scenarios.plans.spec import ClusterNeeds, Scenario, with_kafka_defaults

ON, OFF = {AUTO_LEADER_REBALANCE_ENABLE: "true"}, {AUTO_LEADER_REBALANCE_ENABLE: "false"}
SHORT = {AUTO_LEADER_REBALANCE_ENABLE: "true", LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: "3"}
LAG = {"replica.lag.time.max.ms": "3000"}


@pytest.mark.parametrize("mode, fake_clocks, release, overrides", [
    ("zookeeper", False, None, ON),  # the controller's checks: times a step reads from /controller
    ("zookeeper", False, "3.9.2", ON),
    ("zookeeper", True, None, {}),  # ... from its wall clock, which a clock fault moves
    ("kraft", False, None, {}),  # an unknown release: which controller's rule is not known
    ("kraft", False, "3.5.2", {}),  # not a release the KRaft model covers (refused for KRaft runs)
    # 3.x: armed by the write that first leaves a leader off its first replica, a time the step
    # replays from the metadata log (scenarios.model.kraft_balances)
    ("kraft", False, "3.6.0", ON),
    ("kraft", False, "3.6.2", ON),
    ("kraft", False, "3.7.2", ON),
    ("kraft", False, "3.8.1", ON),
    ("kraft", False, "3.9.2", ON),
    ("kraft", False, "4.0.0", ON),  # a periodic task from the activation: timed from LEADER_CHANGE
    ("kraft", False, "4.4.0", ON),
    ("kraft", True, "3.9.2", {}),  # the metadata log's append times are the node's wall clock
    ("kraft", True, "4.4.0", {}),
    ("migration", False, "3.9.2", {}),  # ZooKeeper's controller, then KRaft's, mid-run
    ("migration", False, "3.6.2", {}),
])
def test_kafka_default_overrides_by_mode(mode: str, fake_clocks: bool, release: str | None,
                                         overrides: dict[str, str]) -> None:
    assert kafka_default_overrides(mode, fake_clocks=fake_clocks, release=release) == overrides


def test_clock_fault_scenarios_keep_the_harness_default() -> None:
    clocked = [s for s in catalogue.all_scenarios() if s.needs.fake_clocks and s.needs.mode == "zookeeper"]
    assert clocked and all(with_kafka_defaults(s) == s for s in clocked)


def _scenario(mode: str = "zookeeper", overrides: dict[str, str] | None = None, name: str = "s") -> Scenario:
    return Scenario(name, "", (catalogue.topic_t(),), (), frozenset({"conformance"}),
                    ClusterNeeds(3, tuple(sorted((overrides or {}).items())), mode=mode))


# (mode, the scenario's own overrides, the overrides it runs with in a catalogue run)
STATED = [
    ("zookeeper", {}, ON),
    ("zookeeper", LAG, {**LAG, **ON}),  # its own kept, Kafka's added
    ("zookeeper", OFF, OFF),  # a scenario that needs it off says so, and keeps it
    ("zookeeper", SHORT, SHORT),  # catalogue.auto_leader_rebalance: its own interval
    ("kraft", {}, {}),
    ("kraft", LAG, LAG),
    ("migration", {}, {}),
]


@pytest.mark.parametrize("mode, own, runs_with", STATED)
def test_with_kafka_defaults(mode: str, own: dict[str, str], runs_with: dict[str, str]) -> None:
    needs = with_kafka_defaults(_scenario(mode, own)).needs
    assert needs.overrides_dict == runs_with and list(needs.overrides) == sorted(needs.overrides)
    assert needs.mode == mode


@pytest.mark.parametrize("needs_release, run_release, runs_with", [
    (None, "4.4.0", ON),  # the run's release
    (None, "3.9.2", ON),
    (None, "3.6.2", ON),
    (None, None, {}),  # not known (a --kafka-home run)
    ("3.9.2", "4.4.0", ON),  # the scenario's own release decides
    ("3.5.2", "4.4.0", {}),
    ("4.1.0", "3.5.2", ON),
])
def test_kraft_runs_with_kafkas_default_on_the_modelled_releases(needs_release: str | None, run_release: str | None,
                                                 runs_with: dict[str, str]) -> None:
    from dataclasses import replace

    s = _scenario("kraft")
    s = replace(s, needs=replace(s.needs, kafka_version=needs_release))
    assert with_kafka_defaults(s, run_release).needs.overrides_dict == runs_with
    assert with_kafka_defaults(_scenario("kraft", SHORT), "4.4.0").needs.overrides_dict == SHORT
    assert [x.needs.overrides_dict for x in kafka_defaults_stated([_scenario("kraft")], {}, "4.4.0")] == [ON]


def test_a_schedule_file_runs_as_written_the_catalogue_with_kafka_defaults() -> None:
    file, catalogued = _scenario(name="from-a-file"), _scenario(name="catalogued")
    stated = kafka_defaults_stated([file, catalogued], {"from-a-file": "/x/from-a-file.json"})
    assert [s.needs.overrides_dict for s in stated] == [{}, ON]


def test_equal_needs_still_share_a_cluster() -> None:
    a, b = (with_kafka_defaults(s) for s in catalogue.by_names(["leader_hard_kill", "controller_kill"]))
    assert a.needs == b.needs and a.needs.overrides_dict == ON


@pytest.mark.parametrize("overrides, rendered", [
    ({}, "false"),  # the test command's clusters (ClusterConfig as its tests build it)
    (ON, "true"),  # a catalogue run's (the pool builds ClusterConfig from the needs)
])
def test_the_rendered_server_properties(overrides: dict[str, str], rendered: str) -> None:
    props = broker_properties(ClusterConfig(brokers=3, cluster_overrides=overrides), 1,
                              zookeeper_connect="127.0.0.1:2181", listeners={"PLAINTEXT": "127.0.0.1:9092"},
                              log_dir="/data")
    assert props[AUTO_LEADER_REBALANCE_ENABLE] == rendered


@pytest.mark.parametrize("mode, kafka_defaults, stated", [
    ("zookeeper", True, ON),
    ("zookeeper", False, {}),  # GeneratorConfig's default: the test command's explore tests
    ("kraft", True, {}),
    ("migration", True, {}),
])
def test_generated_schedules_state_kafka_defaults_and_draw_the_same_steps(mode: str, kafka_defaults: bool,
                                                                           stated: dict[str, str]) -> None:
    with_them = generate(7, 3, GeneratorConfig(mode=mode, kafka_defaults=kafka_defaults))
    without = generate(7, 3, GeneratorConfig(mode=mode))
    assert {k: v for k, v in with_them.overrides.items() if k == AUTO_LEADER_REBALANCE_ENABLE} == stated
    assert with_them.steps == without.steps and with_them.topics == without.topics
    assert with_them.scenario().needs.overrides_dict == {**without.scenario().needs.overrides_dict, **stated}
    # Its file (explore's failures/) replays it so.
    assert schedule_from_json(json.loads(dumps(with_them)), "x.json").overrides == with_them.overrides


def test_a_generated_schedule_with_clock_faults_keeps_the_harness_default() -> None:
    schedule = generate(7, 3, GeneratorConfig(faults=("clock_jump", "hard_kill", "start"), kafka_defaults=True))
    assert "clock_jump" in {s.fault for s in schedule.steps}
    assert AUTO_LEADER_REBALANCE_ENABLE not in schedule.overrides


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``kafka-chaos run`` stops at ``run_scenarios``: what it was given."""
    calls: list[dict[str, Any]] = []

    def run_scenarios(scenarios: list[Scenario], **kwargs: Any) -> int:
        calls.append({"scenarios": scenarios, **kwargs})
        return 0

    monkeypatch.setattr("kafka_chaos.cli.run.run_scenarios", run_scenarios)
    return calls


def _rerun_file(directory: Path, kafka_defaults: bool | None) -> Path:
    data: dict[str, Any] = {"seed": 5, "backend": "local",
                            "cases": [{"scenario": "leader_hard_kill", "iteration": 0, "verdict": "fail",
                                       "schedule": None}]}
    if kafka_defaults is not None:
        data["kafka_defaults"] = kafka_defaults
    path = directory / f"rerun-{kafka_defaults}.json"
    path.write_text(json.dumps(data))
    return path


# (argv, whether run_scenarios states Kafka's defaults); {on}/{off}/{old}: rerun files of a run
# with them, of one without, and of one written before they were recorded
RUNS = [
    ("run", True),  # the main job: conformance
    ("run --suite conformance", True),
    ("run --suite kraft", True),  # on the releases the KRaft model covers (kafka_default_overrides)
    ("run --scenario leader_hard_kill", True),  # as in the suite it fails in
    ("run --schedule {schedule}", True),  # the file's own scenario is left as written (above)
    ("run --suite smoke --harness-defaults", False),  # the test command's smoke suite
    ("run --scenario leader_hard_kill --harness-defaults", False),
    ("run --rerun {on}", True),
    ("run --rerun {on} --harness-defaults", False),
    ("run --rerun {off}", False),
    ("run --rerun {old}", False),
]


@pytest.mark.parametrize("argv, stated", RUNS, ids=[a for a, _ in RUNS])
def test_run_states_kafka_defaults_unless_harness_defaults(argv: str, stated: bool, runs: list[dict[str, Any]],
                                                          tmp_path: Path) -> None:
    schedule = tmp_path / "mine.json"
    schedule.write_text(json.dumps({"schedule_version": 1, "name": "mine", "cluster": {"brokers": [1, 2, 3]},
                                    "topics": [{"name": "t", "assignment": {"0": [1, 2]}}],
                                    "steps": [{"fault": "hard_kill", "target": {"broker": 1}}]}))
    files = {"schedule": schedule, "on": _rerun_file(tmp_path, True), "off": _rerun_file(tmp_path, False),
             "old": _rerun_file(tmp_path, None)}
    assert main(argv.format(**files).split()) == 0
    [call] = runs
    assert call["kafka_defaults"] is stated


class Started(Exception):
    pass


@pytest.mark.parametrize("argv, stated", [("explore --schedules 1", True),
                                          ("explore --schedules 1 --harness-defaults", False)])
def test_explore_states_kafka_defaults_unless_harness_defaults(argv: str, stated: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.cli.explore as explore

    configs: list[GeneratorConfig] = []
    real = explore._config

    def config(*args: Any) -> GeneratorConfig:
        configs.append(real(*args))
        return configs[-1]

    def resolve_distribution(*_: object) -> None:
        raise Started

    monkeypatch.setattr(explore, "_config", config)
    monkeypatch.setattr("kafka_chaos.harness.distribution.resolve_distribution", resolve_distribution)
    with pytest.raises(Started):
        main(argv.split())
    assert [c.kafka_defaults for c in configs] == [stated]

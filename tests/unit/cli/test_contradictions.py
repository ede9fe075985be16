"""Contradictory options of ``run`` and ``explore`` are refused in one line, exit 2, before
anything starts (scenarios.plans.pins); meaningful combinations are kept. Every row goes through
the CLI's own parser and handler (``kafka_chaos.cli.main.main``); an accepted ``run`` stops at
``run_scenarios``, an accepted ``explore`` at resolving the Kafka distribution -- no cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.harness.config import kraft_releases_text
from kafka_chaos.scenarios.plans import catalogue
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate
from kafka_chaos.scenarios.plans.schedule import dumps

KRAFT = "the kraft suite is written for KRaft clusters (its ZooKeeper-mode twins are in conformance)"
MIGRATION = "the migration suite migrates ZooKeeper-mode clusters to KRaft (migration mode)"
ENSEMBLE = "only ZooKeeper-mode and migrating clusters have a ZooKeeper ensemble"
KRAFT_RELEASES = f"KRaft and migrating clusters run Kafka {kraft_releases_text()} (the releases the KRaft model covers)"
CONTAINERS = "the containers launcher runs ZooKeeper-mode and KRaft clusters only"
REPLAYS = "the rerun file names the iterations to run and their seed"
DEFAULT_FAULTS = ("it leaves out the opt-in kinds, those that shape the cluster and those --backend cannot inject: "
                  "name them in --faults")

# (argv, the refusal line after "kafka-chaos: error: "); {d}: a directory of schedule and rerun files
REFUSED = [
    # a suite pins its cluster mode (catalogue.SUITES) ...
    ("run --suite kraft --mode zookeeper", f"--suite kraft contradicts --mode zookeeper: {KRAFT}"),
    ("run --suite kraft --zookeepers 3", f"--suite kraft contradicts --zookeepers 3: {KRAFT}; {ENSEMBLE}"),
    ("run --suite kraft --kafka-version 3.4.1", f"--suite kraft contradicts --kafka-version 3.4.1: {KRAFT}; {KRAFT_RELEASES}"),
    ("run --suite migration --mode kraft", f"--suite migration contradicts --mode kraft: {MIGRATION}"),
    ("run --suite migration --mode zookeeper", f"--suite migration contradicts --mode zookeeper: {MIGRATION}"),
    ("run --suite migration --controllers 3",
     f"--suite migration contradicts --controllers 3: {MIGRATION}; KRaft controllers are a KRaft cluster's"),
    ("run --suite migration --kafka-version 3.5.2",
     f"--suite migration contradicts --kafka-version 3.5.2: {MIGRATION}; {KRAFT_RELEASES}"),
    ("run --suite migration --backend containers", f"--suite migration contradicts --backend containers: {MIGRATION}; {CONTAINERS}"),
    ("run --suite zookeeper --mode kraft", "--suite zookeeper contradicts --mode kraft: the zookeeper suite's faults hit "
                                           "the ZooKeeper ensemble of ZooKeeper-mode clusters"),
    ("run --suite network --mode kraft", "--suite network contradicts --mode kraft: the network suite degrades and "
                                         "delays the links of ZooKeeper-mode clusters"),
    ("run --suite releases --mode kraft", "--suite releases contradicts --mode kraft: the releases suite checks "
                                          "ZooKeeper-mode behaviour that changed between releases"),
    ("run --suite upgrade --mode kraft", "--suite upgrade contradicts --mode kraft: the upgrade suite rolls "
                                         "ZooKeeper-mode clusters from one release to another"),
    # ... and releases, each scenario its own
    ("run --suite releases --kafka-version 2.4.1", "--suite releases contradicts --kafka-version 2.4.1: each scenario "
                                                   "of the releases suite runs on its own Kafka release (2.5.1, 3.1.2, "
                                                   "3.2.3)"),
    ("run --suite upgrade --kafka-version 3.9.2", "--suite upgrade contradicts --kafka-version 3.9.2: each scenario of "
                                                  "the upgrade suite runs on its own Kafka release (2.8.2, 3.4.1)"),
    # a suite whose every scenario needs what the backend's launcher never has
    ("run --suite upgrade --backend containers", "--suite upgrade contradicts --backend containers: rolling a broker to "
                                                 "another release needs the local launcher (one class path per broker); "
                                                 "the containers launcher builds one image per release"),
    # options against each other
    ("run --mode kraft --zookeepers 3", f"--mode kraft contradicts --zookeepers 3: {ENSEMBLE}"),
    ("run --mode kraft --kafka-version 3.4.1", f"--mode kraft contradicts --kafka-version 3.4.1: {KRAFT_RELEASES}"),
    ("run --mode zookeeper --controllers 3",
     "--mode zookeeper contradicts --controllers 3: KRaft controllers are a KRaft cluster's"),
    # a named scenario written for another mode, ensemble or release
    ("run --scenario quorum_leader_kill --mode zookeeper",
     "--scenario quorum_leader_kill contradicts --mode zookeeper: quorum_leader_kill is written for KRaft clusters"),
    ("run --scenario leader_hard_kill_kraft --mode zookeeper",
     "--scenario leader_hard_kill_kraft contradicts --mode zookeeper: leader_hard_kill_kraft is written for KRaft "
     "clusters"),
    ("run --scenario migration_clean --mode kraft",
     "--scenario migration_clean contradicts --mode kraft: migration_clean is written for migrating clusters"),
    ("run --scenario zookeeper_leader_killed --mode kraft",
     "--scenario zookeeper_leader_killed contradicts --mode kraft: zookeeper_leader_killed runs on a 3-server "
     "ZooKeeper ensemble"),
    ("run --scenario upgrade_2_8_to_3_9 --kafka-version 3.9.2",
     "--scenario upgrade_2_8_to_3_9 contradicts --kafka-version 3.9.2: upgrade_2_8_to_3_9 is written for Kafka 2.8.2"),
    ("run --scenario upgrade_2_8_to_3_9 --mode kraft",
     f"--scenario upgrade_2_8_to_3_9 contradicts --mode kraft: upgrade_2_8_to_3_9 is written for Kafka 2.8.2; "
     f"{KRAFT_RELEASES}"),
    # a schedule file's cluster
    ("run --schedule {d}/quorum_leader_kill.json --mode zookeeper",
     "--schedule {d}/quorum_leader_kill.json contradicts --mode zookeeper: quorum_leader_kill is written for KRaft "
     "clusters"),
    ("run --schedule {d}/quorum_leader_kill.json --zookeepers 3",
     f"--schedule {{d}}/quorum_leader_kill.json contradicts --zookeepers 3: quorum_leader_kill is written for KRaft "
     f"clusters; {ENSEMBLE}"),
    ("run --schedule {d}/migration_clean.json --backend containers",
     f"--schedule {{d}}/migration_clean.json contradicts --backend containers: migration_clean is written for "
     f"migrating clusters; {CONTAINERS}"),
    ("run --schedule {d}/upgrade_2_8_to_3_9.json --kafka-version 3.9.2",
     "--schedule {d}/upgrade_2_8_to_3_9.json contradicts --kafka-version 3.9.2: upgrade_2_8_to_3_9 is written for "
     "Kafka 2.8.2"),
    ("run --schedule {d}/explore.json --brokers 5",
     "--schedule {d}/explore.json contradicts --brokers 5: explore-5-0 names its brokers [2, 9, 10], and a cluster of "
     "named brokers is not grown"),
    # the rerun file: its iterations and seed, its scenarios' pins
    ("run --rerun {d}/rerun.json --seed 3", f"--rerun {{d}}/rerun.json contradicts --seed 3: {REPLAYS}"),
    ("run --rerun {d}/rerun.json --iterations 2", f"--rerun {{d}}/rerun.json contradicts --iterations 2: {REPLAYS}"),
    ("run --rerun {d}/rerun.json --shard 0/2", f"--rerun {{d}}/rerun.json contradicts --shard 0/2: {REPLAYS}"),
    ("run --rerun {d}/rerun.json --mode zookeeper",
     "--rerun {d}/rerun.json contradicts --mode zookeeper: leader_hard_kill_kraft is written for KRaft clusters"),
    # explore: --mode against --faults, --weights, --kafka-version, --backend
    ("explore --mode zookeeper --faults quorum_leader_kill",
     "--mode zookeeper contradicts --faults quorum_leader_kill: quorum_leader_kill applies to KRaft and migrating "
     "clusters only"),
    ("explore --faults quorum_leader_kill",
     "the default --mode zookeeper contradicts --faults quorum_leader_kill: quorum_leader_kill applies to KRaft and "
     "migrating clusters only"),
    ("explore --mode kraft --faults controller_kill,hard_kill",
     "--mode kraft contradicts --faults controller_kill,hard_kill: controller_kill applies to ZooKeeper-mode clusters "
     "only"),
    ("explore --mode kraft --faults migration_roll",
     "--mode kraft contradicts --faults migration_roll: migration_roll applies to migrating clusters only"),
    ("explore --mode kraft --weights controller_kill=2",
     "--mode kraft contradicts --weights controller_kill=2: controller_kill applies to ZooKeeper-mode clusters only"),
    ("explore --faults hard_kill --weights pause=3",
     "--faults hard_kill contradicts --weights pause=3: pause is not among the faults it draws"),
    ("explore --weights network_partition=2",
     f"the default --faults contradicts --weights network_partition=2: network_partition is not among the faults it "
     f"draws ({DEFAULT_FAULTS})"),
    ("explore --mode kraft --kafka-version 3.4.1", f"--mode kraft contradicts --kafka-version 3.4.1: {KRAFT_RELEASES}"),
    ("explore --mode migration --kafka-version 3.5.2",
     f"--mode migration contradicts --kafka-version 3.5.2: {KRAFT_RELEASES}"),
    ("explore --mode migration --backend containers", f"--mode migration contradicts --backend containers: {CONTAINERS}"),
    # JBOD in KRaft is 3.7's (KIP-858): its schedules' two log directories cannot start on 3.6
    ("explore --mode kraft --kafka-version 3.6.2 --faults hard_kill,log_dir_failure",
     "--faults log_dir_failure: a KRaft broker with several log directories (JBOD, KIP-858) needs Kafka 3.7 or "
     "later, not 3.6.2: the controller of 3.6.2 never learns of a failed directory"),
]

# Meaningful combinations, kept: conversions, "at least" sizes, releases a file agrees with.
ACCEPTED = [
    "run --suite conformance --mode kraft",  # converts what means the same on KRaft, leaves the rest out
    "run --suite smoke --mode kraft --controllers 3",
    "run --suite kraft --mode kraft",
    "run --suite kraft --controllers 3",  # the kraft suite's mode counts as --mode kraft
    "run --suite kraft --mode kraft --controllers 1",  # the quorum scenarios keep their 3 voters
    "run --suite kraft --brokers 2",  # at least: scenarios needing more keep theirs
    "run --suite kraft --kafka-version 3.6.1",
    "run --suite kraft --backend containers",
    "run --suite smoke --seed 7 --iterations 3",  # three iterations of seed 7: choices that agree
    "run --suite smoke --seed 7 --shard 0/2",
    "run --suite migration --zookeepers 3",  # a migrating cluster starts in ZooKeeper mode
    "run --suite migration --kafka-version 3.6.1",
    "run --suite zookeeper --zookeepers 1",  # at least: 3- and 5-server ensembles keep theirs
    "run --suite zookeeper --backend containers",
    "run --suite network --backend containers",  # the delayed-link scenarios are left out, one line why
    "run --zookeepers 3",
    "run --kafka-version 3.4.1",
    "run --mode kraft --kafka-version 3.6.1",
    "run --scenario quorum_leader_kill --controllers 3",
    "run --scenario upgrade_2_8_to_3_9 --kafka-version 2.8.2",
    "run --mode kraft --backend containers --controllers 3 --scenario leader_hard_kill_kraft --scenario quorum_leader_kill",
    "run --schedule {d}/leader_hard_kill.json --mode kraft",  # a ZooKeeper-mode file converts
    "run --schedule {d}/leader_hard_kill.json --brokers 5",  # ids 1..3, not named: grown
    "run --schedule {d}/explore.json --brokers 3",
    "run --schedule {d}/quorum_leader_kill.json --controllers 1",  # keeps its 3 voters
    "run --schedule {d}/upgrade_2_8_to_3_9.json --kafka-version 2.8.2",
    "run --schedule {d}/upgrade_2_8_to_3_9.json --schedule {d}/leader_hard_kill.json",  # each its own release
    "run --rerun {d}/rerun.json --controllers 3",  # the file does not record the clusters' shape
    "explore --mode kraft --faults quorum_leader_kill,hard_kill --weights quorum_leader_kill=5",
    "explore --faults hard_kill --weights pause=0",  # 0 leaves a kind out: no contradiction
    "explore --faults log_dir_failure --weights log_dir_failure=1",
    "explore --mode zookeeper --kafka-version 3.4.1",
    "explore --mode migration --faults hard_kill,quorum_leader_kill",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Schedule files as ``schedule export`` writes them, one with named broker ids, a rerun file."""
    d = tmp_path_factory.mktemp("pins")
    names = ["quorum_leader_kill", "leader_hard_kill", "upgrade_2_8_to_3_9", "migration_clean"]
    assert main(["schedule", "export", *names, "--out", str(d)]) == 0
    named = generate(5, 0, GeneratorConfig(faults=("hard_kill", "start")))
    assert named.brokers == (2, 9, 10)
    (d / "explore.json").write_text(dumps(named))
    cases = [{"scenario": "leader_hard_kill_kraft", "iteration": 0}, {"scenario": "quorum_leader_kill", "iteration": 1}]
    (d / "rerun.json").write_text(json.dumps({"seed": 7, "backend": "local", "cases": cases}))
    return d


class Started(Exception):
    """An accepted explore got as far as resolving the Kafka distribution."""


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """run: ``run_scenarios`` records the scenarios instead; explore: resolving the distribution
    raises :class:`Started`."""
    ran: list[list[str]] = []

    def run_scenarios(scenarios: list[catalogue.Scenario], **_: object) -> int:
        ran.append([s.name for s in scenarios])
        return 0

    def resolve_distribution(*_: object) -> None:
        raise Started

    monkeypatch.setattr("kafka_chaos.cli.run.run_scenarios", run_scenarios)
    monkeypatch.setattr("kafka_chaos.harness.distribution.resolve_distribution", resolve_distribution)
    return ran


@pytest.mark.parametrize("argv, line", REFUSED, ids=[argv for argv, _ in REFUSED])
def test_contradictions_are_refused_in_one_line(argv: str, line: str, files: Path, nothing_starts: list[list[str]],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv.format(d=files).split()) == 2
    assert capsys.readouterr().err == f"kafka-chaos: error: {line.format(d=files)}\n"
    assert nothing_starts == []


@pytest.mark.parametrize("argv", ACCEPTED)
def test_meaningful_combinations_are_kept(argv: str, files: Path, nothing_starts: list[list[str]],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    if argv.startswith("explore"):
        with pytest.raises(Started):
            main(argv.split())
    else:
        assert main(argv.format(d=files).split()) == 0
        assert nothing_starts and all(nothing_starts)
    assert capsys.readouterr().err == ""


def test_a_kraft_suite_keeps_its_quorum_under_controllers_1(nothing_starts: list[list[str]],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``--controllers N`` is at least N: a quorum fault needs another voter to take over."""
    shaped: dict[str, int] = {}

    def run_scenarios(scenarios: list[catalogue.Scenario], **_: object) -> int:
        shaped.update({s.name: s.needs.controllers for s in scenarios})
        return 0

    monkeypatch.setattr("kafka_chaos.cli.run.run_scenarios", run_scenarios)
    assert main(["run", "--suite", "kraft", "--mode", "kraft", "--controllers", "1"]) == 0
    assert shaped["quorum_leader_kill"] == 3 and shaped["leader_hard_kill_kraft"] == 1
    assert main(["run", "--suite", "kraft", "--controllers", "3"]) == 0
    assert set(shaped.values()) == {3}


def test_a_suite_pins_the_mode_its_scenarios_are_written_for() -> None:
    """The data in catalogue.SUITES agrees with the scenarios: a pinned suite's every scenario is
    written for its mode, and the suites --mode converts are the ZooKeeper-mode ones."""
    for name, suite in catalogue.SUITES.items():
        modes = {s.needs.mode for s in catalogue.suite(name)}
        if suite.own_modes:  # the corpus: each entry its bug's mode; the reason is said
            assert suite.mode is None and suite.pinned, name
            continue
        assert modes == {suite.mode or "zookeeper"}, name
        assert (suite.mode is None) == (suite.pinned == ""), name


# (argv, how the line starts, what else it names)
BAD_WEIGHTS = [
    ("explore --weights session_expiry=3",
     "--weights: 'session_expiry=3': 'session_expiry' is not in the generator's repertoire: ", "hard_kill"),
    ("explore --weights hard_kill=-1", "--weights: 'hard_kill=-1': a weight is 0 or more", ""),
    ("explore --weights hard_kill=often", "--weights: 'hard_kill=often' is not KIND=NUMBER", ""),
]


@pytest.mark.parametrize("argv, start, names", BAD_WEIGHTS, ids=[argv for argv, _, _ in BAD_WEIGHTS])
def test_a_bad_weight_is_one_line_naming_what_is_wrong(argv: str, start: str, names: str,
                                                       nothing_starts: list[list[str]],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv.split()) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kafka-chaos: error: {start}") and err.count("\n") == 1 and names in err


def test_kraft_jbod_scenarios_are_left_out_before_3_7_in_one_line(nothing_starts: list[list[str]],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``--suite kraft`` on 3.6.x runs every other scenario and says why the failed log directory's
    is left out (its brokers' two log directories need 3.7: KIP-858); so does a converted
    conformance run; from 3.7 it runs."""
    assert main(["run", "--suite", "kraft", "--kafka-version", "3.6.2"]) == 0
    assert "leader_log_dir_failure_kraft" not in nothing_starts[-1] and len(nothing_starts[-1]) == 22
    assert ("leaving out 1 scenario(s) (leader_log_dir_failure_kraft): a KRaft broker with several log directories "
            "(JBOD, KIP-858) needs Kafka 3.7 or later, not 3.6.2") in capsys.readouterr().out
    assert main(["run", "--suite", "conformance", "--mode", "kraft", "--kafka-version", "3.6.2"]) == 0
    assert not {"leader_log_dir_failure", "follower_log_dir_failure"} & set(nothing_starts[-1])
    assert main(["run", "--suite", "kraft", "--kafka-version", "3.7.2"]) == 0
    assert "leader_log_dir_failure_kraft" in nothing_starts[-1]

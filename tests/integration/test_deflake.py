"""--deflake on a real cluster: a scenario that fails once and passes on its rerun is flaky
(exit 0, Surefire's flakyFailure in JUnit, listed in rerun.json), and run --rerun replays it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from kafka_chaos.cli.main import main
from kafka_chaos.app.runs import run_scenarios
from kafka_chaos.oracle import ControlledShutdown, Outcome, predict
from kafka_chaos.scenarios.plans.catalogue import by_names


class FailsOnce:
    """The real oracle, except that the first controlled shutdown it sees is said to elect
    uncleanly (only oracle_outcome fails; leaders, ISRs and epochs stay right)."""

    def __init__(self) -> None:
        self.spoilt = False

    def __call__(self, state, events):
        right = predict(state, events)
        if self.spoilt or not any(isinstance(e, ControlledShutdown) for e in events):
            return right
        self.spoilt = True
        alternatives = tuple(replace(a, outcomes=tuple(replace(o, outcome=Outcome.UNCLEAN_ELECTED)
                                                       for o in a.outcomes)) for a in right.alternatives)
        return replace(right, outcomes=alternatives[0].outcomes, alternatives=alternatives)


def test_a_scenario_failing_once_is_flaky_and_replays_from_the_rerun_file(tmp_path: Path) -> None:
    results, junit = tmp_path / "run", tmp_path / "junit.xml"
    rc = run_scenarios(by_names(["controlled_shutdown_leader"]), seed=3, results_dir=results, report=False,
                       junit=junit, predictor=FailsOnce(), deflake=2)
    assert rc == 0
    info = json.loads((results / "run.json").read_text())
    assert [(o["verdict"], o["reruns"]) for o in info["outcomes"]] == [("flaky", 1)]
    xml = junit.read_text()
    assert "<flakyFailure" in xml and "<failure" not in xml
    assert (results / "reruns" / "controlled_shutdown_leader-0-1" / "rerun.jsonl").is_file()
    rerun = json.loads((results / "rerun.json").read_text())
    assert rerun["seed"] == 3 and rerun["cases"] == [
        {"scenario": "controlled_shutdown_leader", "iteration": 0, "verdict": "flaky", "schedule": None}]
    again = tmp_path / "again"
    assert main(["run", "--rerun", str(results / "rerun.json"), "--results", str(again), "--no-report"]) == 0
    assert json.loads((again / "run.json").read_text())["seed"] == 3


class CaughtOnSecondAttempt(FailsOnce):
    """The real oracle for the first controlled shutdown, then FailsOnce's spoilt answer once: an
    intermittent known bug that the first attempt misses and the second catches."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def __call__(self, state, events):
        if any(isinstance(e, ControlledShutdown) for e in events):
            self.seen += 1
            if self.seen == 1:
                return predict(state, events)
        return super().__call__(state, events)


def test_an_intermittent_known_bug_is_repeated_until_caught(tmp_path: Path) -> None:
    """A corpus entry with ``known_bug.attempts`` (KAFKA-15653's race): missed by its first run,
    caught by its repeat, the run says CAUGHT and exits 0; JUnit has no failure."""
    from kafka_chaos.scenarios.plans.spec import KnownBug

    bug = KnownBug("KAFKA-15653", "3.9.2", "3.9.3", "oracle_outcome", attempts=3)
    scenario = replace(by_names(["controlled_shutdown_leader"])[0], expects=bug)
    results, junit = tmp_path / "run", tmp_path / "junit.xml"
    rc = run_scenarios([scenario], seed=3, results_dir=results, report=False, junit=junit,
                       predictor=CaughtOnSecondAttempt())
    assert rc == 0
    info = json.loads((results / "run.json").read_text())
    assert [(o["verdict"], o["reruns"]) for o in info["outcomes"]] == [("caught", 1)]
    assert "<failure" not in junit.read_text()

"""The `smoke` chaos suite against a real local cluster, and proof that the checks can fail."""

from __future__ import annotations

import json
from pathlib import Path

from cli.main import main
from oracle import BrokerFailure, predict
from results.writer import read_records
from scenarios.catalogue import by_names, suite


def test_smoke_suite_passes_and_records_everything(tmp_path: Path) -> None:
    results = tmp_path / "results"
    junit = tmp_path / "junit.xml"
    rc = main(["run", "--suite", "smoke", "--backend", "local", "--seed", "7", "--results", str(results),
               "--junit", str(junit), "--no-report"])
    read = read_records(results)
    failed = [(r.scenario, r.check, r.topic, r.partition, r.detail) for r in read.records
              if r.kind == "check" and r.passed is not True]
    assert rc == 0, failed
    assert not read.malformed
    assert {r.scenario for r in read.records} == {s.name for s in suite("smoke")}
    checks = {r.check for r in read.records if r.kind == "check"}
    assert {"oracle_leader", "oracle_isr", "oracle_replicas", "oracle_epoch", "oracle_outcome",
            "single_controller", "metadata_agrees_zk", "delivery", "converged"} <= checks
    latencies = [r for r in read.records if r.check == "latency"]
    assert latencies and all(r.latency_ms and r.timestamps for r in latencies)
    kill = [r for r in latencies if r.scenario == "leader_hard_kill"]
    assert kill and all(r.latency_ms["detection"] is not None and r.latency_ms["election"] is not None
                        for r in kill)
    info = json.loads((results / "run.json").read_text())
    assert info["seed"] == 7 and info["status"] == "finished" and info["passed"] is True
    assert junit.read_text().count("<testcase") == len(suite("smoke"))


def _wrong_leader(state, events):
    """The real oracle, except that after a broker failure it names the wrong leader for every
    partition it says gets a new one."""
    prediction = predict(state, events)
    if not any(isinstance(e, BrokerFailure) for e in events):
        return prediction
    topics = dict(prediction.state.topics)
    for name, ts in prediction.state.topics.items():
        parts = dict(ts.partitions)
        for p, ps in ts.partitions.items():
            before = state.topics[name].partitions[p] if name in state.topics else None
            if before is not None and before.leader != ps.leader and ps.leader != -1:
                others = [r for r in ps.replicas if r != ps.leader]
                parts[p] = ps.with_changes(leader=others[0])
        topics[name] = type(ts)(partitions=parts, config=ts.config)
    return type(prediction)(state=type(prediction.state)(
        live_brokers=prediction.state.live_brokers, topics=topics, controller=prediction.state.controller,
        config=prediction.state.config), outcomes=prediction.outcomes, steps=prediction.steps)


def test_a_wrong_expectation_fails_the_run(tmp_path: Path) -> None:
    from cli.run import run_scenarios

    results = tmp_path / "results"
    rc = run_scenarios(by_names(["leader_hard_kill"]), seed=7, results_dir=results, report=False,
                       predictor=_wrong_leader, runner_options={"convergence_timeout": 25.0})
    assert rc == 1
    read = read_records(results)
    wrong = [r for r in read.records if r.check == "oracle_leader" and r.passed is False]
    assert wrong, "the altered leader must be caught"
    assert all("leader expected" in r.detail for r in wrong)
    assert any(r.check == "converged" and r.passed is False and "timed out" in r.detail for r in read.records)
    assert (results / "logs" / "leader_hard_kill-0").is_dir()  # node logs of the failed scenario

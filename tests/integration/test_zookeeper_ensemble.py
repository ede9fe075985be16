"""ZooKeeper ensembles on the local launcher, through `kafka-chaos run` on one 3-server
cluster: the leader killed (no event), the controller cut from the ZooKeeper leader (no event);
then proof that the checks can fail: the same history judged by an oracle that expects a broker
failure after the leader kill gives FAIL verdicts.  About 20 s of cluster time. The quorum lost
while a broker dies (its session expires only after the restore: a broker failure; about 29 s)
is the nightly's cell; the whole `zookeeper` suite (with a 5-server ensemble) is
`kafka-chaos run --suite zookeeper`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.harness.local.network import partition_problem
from kafka_chaos.oracle import BrokerFailure, predict
from kafka_chaos.results.verdicts import verdict_changes
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.checks.registry import check_history, to_records
from kafka_chaos.scenarios.history.observations import HistoryProblem, read_history

LEADER_KILL_AND_CUT = ["zookeeper_leader_killed", "controller_cut_from_zookeeper_leader"]
QUORUM_LOSS = ["zookeeper_quorum_lost_leader_dies"]


@pytest.mark.parametrize("scenarios", [pytest.param(LEADER_KILL_AND_CUT, id="leader"),
                                       pytest.param(QUORUM_LOSS, id="quorum", marks=pytest.mark.nightly)])
def test_ensemble_faults_keep_sessions_or_fail_brokers_as_predicted(tmp_path: Path, scenarios: list[str]) -> None:
    chosen = [s for s in scenarios if partition_problem() is None or "cut" not in s]  # the cut needs root
    results = tmp_path / "results"
    # --harness-defaults: no waits for the controller's imbalance checks (the test command's budget).
    argv = ["run", "--backend", "local", "--seed", "13", "--results", str(results), "--no-report", "--harness-defaults"]
    for name in chosen:
        argv += ["--scenario", name]
    rc = main(argv)
    read = read_records(results)
    failed = [(r.scenario, r.check, r.topic, r.partition, r.detail) for r in read.records
              if r.kind == "check" and r.passed is not True]
    assert rc == 0, failed
    assert {r.scenario for r in read.records} == set(chosen)
    if "zookeeper_leader_killed" not in chosen:
        return
    observations = [o for o in read_history(results / "history.jsonl") if not isinstance(o, HistoryProblem)]
    wrong = [r for obs, rs in check_history(observations, predictor=_expects_a_failure) for r in to_records(obs, rs)]
    changes = verdict_changes(read.records, wrong)
    assert any(c.key[1] == "zookeeper_leader_killed" and c.after == "FAIL" for c in changes), changes


def _expects_a_failure(state, events):
    """The real oracle, except that a ZooKeeper fault with no event is said to fail broker 1."""
    return predict(state, list(events) or [BrokerFailure((min(state.live_brokers),))])

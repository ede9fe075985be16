"""Consumers through a real unclean election: the truncated log shows up in the clients'
history as the anomalies the oracle's ``unclean_elected`` prediction allows (counted apart), and
in the workload's delivery report as acknowledged messages lost where it was predicted; the same
history judged with that prediction withheld fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kafka_chaos.oracle import Outcome, predict
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.plans.catalogue import by_names
from kafka_chaos.scenarios.model.targets import EarlierTarget
from kafka_chaos.scenarios.checks.registry import check_history
from kafka_chaos.scenarios.history.observations import HistoryProblem, ScenarioFinished, StepObserved, read_history


def _withheld(state, events):
    """The real oracle, except that it never predicts an unclean election: those outcomes are
    reported as clean ones (the leaders and ISRs it predicts stay the same)."""
    prediction = predict(state, events)

    def clean(outcomes):
        return tuple(replace(o, outcome=Outcome.ELECTED) if o.outcome == Outcome.UNCLEAN_ELECTED else o
                     for o in outcomes)

    return replace(prediction, outcomes=clean(prediction.outcomes),
                   alternatives=tuple(replace(a, outcomes=clean(a.outcomes)) for a in prediction.alternatives))


def test_unclean_truncation_is_allowed_where_predicted_and_fails_when_withheld(tmp_path: Path) -> None:
    from kafka_chaos.app.runs import run_scenarios

    # unclean_admin_election, then the old leader restarts: the producer writes to the unclean
    # leader meanwhile, so the offsets the old leader had acknowledged get new messages.
    base = by_names(["unclean_admin_election"])[0]
    scenario = replace(base, name="unclean_then_old_leader_back",
                       steps=base.steps + (Step("start", EarlierTarget(1)),))
    results = tmp_path / "results"
    rc = run_scenarios([scenario], seed=7, results_dir=results, report=False)
    records = read_records(results).records
    failed = [(r.check, r.detail) for r in records if r.kind == "check" and r.passed is False]
    assert rc == 0, failed
    history = {r.check: r for r in records if r.check.startswith("history_")}
    assert len(history) == 8 and all(r.passed is True for r in history.values())
    # The unclean leader missed the acknowledged writes of the old one: their offsets were
    # rewritten with new messages, and they are gone at the end — reported, allowed, counted apart.
    for name in ("history_inconsistent_offsets", "history_unseen"):
        r = history[name]
        assert r.observed["allowed"] > 0 and r.observed["anomalies"] == 0, r.detail
        assert "unclean election predicted on ['" in r.detail
    observations = [o for o in read_history(results / "history.jsonl") if not isinstance(o, HistoryProblem)]
    assert any(isinstance(o, StepObserved) and o.ops for o in observations)
    polls = {p.consumer for o in observations if isinstance(o, (StepObserved, ScenarioFinished))
             for ops in o.ops.values() for p in ops.polls}
    assert polls == {"assign", "group", "readback"}
    # The group worked through the faults: __consumer_offsets was created at cluster start, so its
    # member polls also while two of the three brokers are down (step 2).
    two_down = [o for o in observations if isinstance(o, StepObserved) and o.index == 1]
    assert two_down and len(two_down[0].after.live_brokers) == 1
    assert any(p.consumer == "group" for ops in two_down[0].ops.values() for p in ops.polls)
    # 3.9.2 writes RECOVERING with an unclean election, predicted and observed (3.1.2 writes
    # nothing: tests/integration/test_releases.py)
    recovery = [(r.expected, r.observed, r.passed) for r in records if r.check == "oracle_recovery"]
    assert recovery and all(passed and expected == observed == 1 for expected, observed, passed in recovery), recovery
    # The same loss in the workload's delivery report: counted where the oracle predicted the
    # unclean election, not failed, and nothing written twice.
    [delivery] = [r for r in records if r.check == "delivery"]
    [unclean_loss] = [r for r in records if r.check == "delivery_unclean_loss"]
    assert delivery.passed is True and unclean_loss.passed is True
    assert delivery.observed["lost"] == unclean_loss.observed["lost_total"] > 0, delivery.detail
    lost_on = {p for p, n in delivery.observed["lost_by_partition"].items() if n}
    assert lost_on <= {str(p) for p in unclean_loss.expected["unclean_partitions"]}, lost_on
    assert delivery.observed["duplicated"] == 0
    measured = [r for r in records if r.check == "client_availability"]
    assert measured and all(r.latency_ms and "e2e_p99" in r.latency_ms for r in measured)

    rechecked = {r.check: r for _, rs in check_history(observations, predictor=_withheld) for r in rs
                 if r.check.startswith("history_")}
    for name in ("history_inconsistent_offsets", "history_unseen"):
        assert rechecked[name].passed is False
        assert rechecked[name].observed["anomalies"] == history[name].observed["allowed"]
        assert rechecked[name].observed["allowed"] == 0

"""The transactional workload (librdkafka side, issue 43) on a real ZooKeeper-mode cluster, as
a schedule file opts into it (``"workload": {"transactions": true}``): two transactional
producers and a read-process-write copier commit and abort through the kill of the transaction
coordinator of producer p0's transactional id (``{"coordinator_of": "p0"}``: the leader of the
``__transaction_state`` partition that owns it, as observed before the fault) and its start; the ``read_committed`` readers and the final read-back see no
message of an aborted transaction (the ``read_uncommitted`` reader does: the aborted messages
were written), and every check — the oracle's on the transactional topics too, and every class
of the transactional history checker — passes; ``kafka-chaos check`` re-judges the stored
history to the same verdicts.

The coordinator kill on 3.9.2 is the nightly's; the test command checks the same workload and
history through its entry of the known-bug corpus (docs/recall.md): KAFKA-16692 caught on 3.6.2,
transactions aborted by a verification request the older coordinator of a rolling upgrade
refuses, every other check passing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.checks.transactions import CLASSES
from kafka_chaos.scenarios.clients.txn_ops import ABORTED, COMMITTED
from kafka_chaos.scenarios.history.observations import (
    HistoryProblem,
    Observation,
    StepObserved,
    merged_txn,
    read_history,
)
from kafka_chaos.scenarios.model.coordinators import partition_for
from tests.integration.test_schedule_files import run_schedule

SCHEDULE = {
    "schedule_version": 1,
    "name": "txn_coordinator_kill",
    "doc": "the transactional workload through the kill of producer p0's transaction coordinator and its start",
    "cluster": {"brokers": [1, 2, 3]},
    "workload": {"transactions": True},
    "topics": [{"name": "t", "assignment": {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]}}],
    "steps": [
        {"fault": "hard_kill", "target": {"coordinator_of": "p0"}},
        {"fault": "start", "target": {"earlier": 0}},
    ],
}


@pytest.mark.nightly  # the test command runs the same workload and checks through KAFKA-16692's entry, below
def test_transactions_commit_and_abort_through_a_coordinator_kill_and_every_check_passes(tmp_path: Path) -> None:
    results = run_schedule(SCHEDULE, tmp_path, seed=43)
    assert_the_transactional_history_holds(results, tmp_path, steps=2, failing=set())


def assert_the_transactional_history_holds(results: Path, tmp_path: Path, steps: int, failing: set[str]) -> None:
    """Every fault step stored its stretch of the workload; step 1 hit the coordinator of p0's
    transactional id (the leader of the __transaction_state partition owning it before the
    fault); transactions committed and aborted, the copier's among them; no read_committed read
    and no read-back saw an aborted write, which the read_uncommitted reader did see; every
    checker class ran and passed but the ``failing`` ones; ``kafka-chaos check`` re-judges the
    stored history to the same verdicts."""
    from kafka_chaos.cli.main import main

    observations: list[Observation] = [o for o in read_history(results / "history.jsonl")
                                       if not isinstance(o, HistoryProblem)]
    steps_with_txn = [o for o in observations if getattr(o, "index", None) is not None and getattr(o, "txn", None)]
    assert len(steps_with_txn) == steps  # each fault step stored its stretch
    [first] = [o for o in observations if isinstance(o, StepObserved) and o.index == 0]
    assert first.txn is not None
    p0 = next(t.txn_id for t in first.txn.txns if t.txn_id.endswith("-p0"))
    assert f"coordinator of transactional id {p0}: leader of __transaction_state-" in first.target.description
    assert first.target.brokers == (first.before.partition("__transaction_state", partition_for(p0, 5)).leader,)
    history = merged_txn(observations)
    assert history is not None and history.readback is not None and history.group_offsets
    committed = [t for t in history.txns if t.outcome == COMMITTED]
    aborted = [t for t in history.txns if t.outcome == ABORTED]
    assert len(committed) >= 10 and len(aborted) >= 2, (len(committed), len(aborted))
    assert any(t.offsets for t in committed)  # the copier's read-process-write transactions
    # (a key the copier sent in an aborted attempt it sends again in a later one, which may commit)
    aborted_keys = ({(s.topic, s.key) for t in aborted for s in t.sends}
                    - {(s.topic, s.key) for t in history.txns if t.outcome != ABORTED for s in t.sends})
    levels = history.isolation_of()
    committed_reads = {(r.topic, r.key) for r in history.reads if levels[r.consumer] == "read_committed"}
    committed_reads |= {(rb.topic, k) for rb in history.readback for _, k in rb.records}
    assert not committed_reads & aborted_keys
    assert {(r.topic, r.key) for r in history.reads if r.consumer == "ru"} & aborted_keys  # they were written

    records = read_records(results).records
    verdicts: dict[str, list[bool | None]] = {}
    for r in records:
        if r.check.startswith("txn_") and r.kind == "check":
            verdicts.setdefault(r.check, []).append(r.passed)
    # every class of the history checker; the planned-operation check where a step is one
    assert set(CLASSES) <= set(verdicts) <= {*CLASSES, "txn_transparent_operation"}, verdicts
    assert all(all(said) if check not in failing else False in said for check, said in verdicts.items()), verdicts
    [figures] = [r for r in records if r.check == "txn_workload"]
    assert figures.observed["committed"] == len(committed) and figures.observed["aborted"] == len(aborted)
    oracle = [r for r in records if r.check == "oracle_leader" and str(r.topic).endswith("txn-in")]
    assert oracle and all(r.passed for r in oracle)

    assert main(["check", str(results), "--out", str(tmp_path / "recheck"), "--no-report"]) == (1 if failing else 0)
    rechecked = sorted((r.check, r.passed) for r in read_records(tmp_path / "recheck").records if r.check.startswith("txn_"))
    assert rechecked == sorted((r.check, r.passed) for r in records if r.check.startswith("txn_"))


def test_the_corpus_catches_kafka_16692_on_3_6_2_through_a_roll_to_3_5_2(tmp_path: Path) -> None:
    """The transactional corpus entry on its affected release, as ``run --suite corpus`` runs it
    (docs/recall.md): producer p0's coordinator rolled back to 3.5.2 in a 3.6.2 cluster at IBP 3.5,
    then t's preferred leaders elected; 3.6.2's leaders verify each transactional produce with
    AddPartitionsToTxn v4, which the 3.5.2 coordinator refuses, and abort p0's transactions with
    NETWORK_EXCEPTION (AddPartitionsToTxnManager.onComplete, 3.6.2) during planned operations with
    every broker up. The entry is CAUGHT, so the run passes; the fixed release (3.7.1) is the
    nightly's corpus run."""
    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.scenarios.plans.catalogue import by_names

    scenario = by_names(["kafka_16692_txn_verification_refused_by_an_older_coordinator_on_3_6_2"])[0]
    results = tmp_path / "run"
    rc = run_scenarios([scenario], seed=16693, results_dir=results, report=False, suite="corpus",
                       junit=tmp_path / "junit.xml")
    records = read_records(results).records
    failed = [(r.check, r.fault, r.detail) for r in records if r.kind == "check" and r.passed is False]
    assert rc == 0, failed
    assert {r.kafka_version for r in records} == {"3.6.2"}
    assert failed and {check for check, _, _ in failed} == {"txn_transparent_operation"}, failed
    assert all("NETWORK_EXCEPTION" in detail for _, _, detail in failed), failed
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="0"' in junit and "KAFKA-16692 caught on 3.6.2: txn_transparent_operation failed" in junit
    # and the workload and every other class of the checker as on any run (a roll of p0's coordinator, an election)
    assert_the_transactional_history_holds(results, tmp_path, steps=2, failing={"txn_transparent_operation"})

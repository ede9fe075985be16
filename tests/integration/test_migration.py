"""The ZooKeeper→KRaft migration driven on a real local cluster (``--mode migration``), from a
hand-written schedule file with odd broker ids: the KRaft controller provisioned with the
ZooKeeper cluster's id, every broker rolled into migration mode at once (the metadata copy), a
migrating ZooKeeper broker killed while the KRaft controller is in charge, every broker rolled
to KRaft, the controller finalised -- under the client workload. Every check passes, each phase
is the one Kafka reported, ZooKeeper equals the metadata log at every dual-write step, and the
history re-checks offline to the same verdicts (``kafka-chaos check``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kafka_chaos.app.runs import run_scenarios
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.checks.registry import check_history
from kafka_chaos.scenarios.history.observations import HistoryProblem, read_history
from kafka_chaos.scenarios.plans.schedule import load

SCHEDULE = Path(__file__).parent / "schedules" / "migration_kill_in_hybrid.json"


def test_a_migration_with_a_kill_in_hybrid_passes_and_its_phases_are_observed(tmp_path: Path) -> None:
    schedule = load(SCHEDULE)
    results = tmp_path / "run"
    rc = run_scenarios([schedule.scenario()], seed=31, results_dir=results, report=False,
                       sources={schedule.name: str(SCHEDULE)})
    records = read_records(results).records
    assert rc == 0, [(r.check, r.fault, r.detail) for r in records if r.kind == "check" and r.passed is False]

    timeline = [r for r in records if r.check == "migration_timeline"]
    assert [(r.fault, r.observed["phase_after"]) for r in timeline] == [
        ("migration_provision", "pre-migration"), ("migration_roll/hybrid", "hybrid"), ("hard_kill", "hybrid"),
        ("start", "hybrid"), ("migration_roll/kraft", "dual-write"), ("migration_finalize", "finalized")]
    assert timeline[1].observed["driver_state"] == "DUAL_WRITE" and timeline[1].observed["kraft_controller"] == 3000
    phases = [r for r in records if r.check == "migration_phase"]
    assert len(phases) == 4 and all(r.passed for r in phases)
    dual_write = [r for r in records if r.check == "migration_dual_write"]
    assert len(dual_write) == 4 and all(r.passed for r in dual_write)  # hybrid x3 and dual-write
    # the KRaft controller judged the kill in hybrid, bumping the leader epoch on each ISR shrink
    kill = [r for r in records if r.fault == "hard_kill" and r.check == "oracle_partition_epoch"]
    assert kill and all(r.passed for r in kill)
    assert {r.mode for r in records if r.check == "oracle_leader"} == {"migration"}

    observations = [o for o in read_history(results / "history.jsonl") if not isinstance(o, HistoryProblem)]
    recorded = Counter((r.check, r.passed) for r in records if r.kind == "check")
    rechecked = Counter((r.check, r.passed) for _, rs in check_history(observations) for r in rs if not r.is_measurement)
    assert rechecked == recorded

"""Comparing a run's verdicts with its re-check."""

from __future__ import annotations

from dataclasses import replace

from kafka_chaos.records.schema import Record
from kafka_chaos.results.verdicts import verdict_changes

BASE = Record(run_id="r", scenario="s", iteration=0, seed=1, backend="local", kafka_version="3.9.2", brokers=3,
              partitions=6, kind="check", check="oracle_leader", passed=True, started_at=10.0, finished_at=11.0,
              fault="hard_kill", topic="t", partition=0)


def test_identical_records_have_no_changes_and_measurements_are_not_verdicts() -> None:
    latency = replace(BASE, kind="measurement", check="latency", passed=None)
    assert verdict_changes([BASE, latency], [BASE]) == []


def test_a_flipped_verdict_a_new_check_and_a_vanished_one_are_reported() -> None:
    other = replace(BASE, partition=1)
    new = replace(BASE, check="oracle_epoch")
    changes = verdict_changes([BASE, other], [replace(BASE, passed=False, detail="leader expected 2"), new])
    described = sorted(c.describe() for c in changes)
    assert described == [
        "s#0 oracle_epoch t-0 after hard_kill: absent -> pass",
        "s#0 oracle_leader t-0 after hard_kill: pass -> FAIL (leader expected 2)",
        "s#0 oracle_leader t-1 after hard_kill: pass -> absent",
    ]


def test_steps_are_told_apart_by_their_start() -> None:
    second_step = replace(BASE, started_at=20.0, passed=False)
    assert verdict_changes([BASE, second_step], [BASE, replace(second_step, passed=False)]) == []
    assert len(verdict_changes([BASE, second_step], [BASE, replace(second_step, passed=True)])) == 1

"""The ``active_controller_count`` invariant: every broker's own ActiveControllerCount against
``/controller`` — on real scrapes of a kafka-chaos run, and a table of the ways it fails."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_chaos.harness.zkevents import ControllerChanged
from kafka_chaos.scenarios.checks.functions import check_active_controller_count
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.history import controller_metrics as cm
from kafka_chaos.scenarios.history.controller_metrics import FaultMetrics, MetricsScrape
from tests.unit.scenarios.histories import AFTER, hard_kill_step

DATA = Path(__file__).parent / "data" / "metrics"
GAUGE = cm.MEASURED["active_controllers"][0] + "_value"


@pytest.mark.parametrize("controller, counts, passed, detail", [
    (3, {1: 0, 2: 0, 3: 1}, True, "3 brokers: only 3 active"),
    (3000, {1: 0, 2: 0, 3: 0}, True, "3 brokers: none active"),  # a migration's KRaft controller
    (None, {2: 0.0}, True, "1 brokers: none active"),
    (3, {1: 0, 2: 0, 3: 0}, False, "/controller names 3; brokers reporting themselves active controller: none"),
    (3, {1: 1, 2: 0, 3: 1}, False, "/controller names 3; brokers reporting themselves active controller: [1, 3]"),
    (3, {1: 1, 2: 0, 3: 0}, False, "/controller names 3; brokers reporting themselves active controller: [1]"),
    (None, {1: 1, 2: 0}, False, "no /controller; brokers reporting themselves active controller: [1]"),
    (3000, {1: 0, 2: 1}, False, "/controller names 3000; brokers reporting themselves active controller: [2]"),
])
def test_exactly_the_named_controller_reports_itself_active(controller: int | None, counts: dict[int, float],
                                                             passed: bool, detail: str) -> None:
    result = check_active_controller_count(controller, counts)
    assert (result.passed, result.detail) == (passed, detail)


def test_a_controller_change_after_the_snapshot_makes_a_mismatch_unknown_not_a_failure() -> None:
    assert check_active_controller_count(3, {1: 1, 3: 0}, changed_since=True).passed is None
    assert check_active_controller_count(3, {1: 0, 3: 1}, changed_since=True).passed is True


def _step_with(after_scrape: dict[int, dict[str, float]], **changes: object):
    scrape = MetricsScrape(AFTER.taken_at + 1, after_scrape)
    return replace(hard_kill_step(), metrics=FaultMetrics(scrape, scrape), **changes)


def test_the_registered_check_reads_the_scrape_at_the_end_of_the_step() -> None:
    real = FaultMetrics.from_dict(json.loads((DATA / "leader_hard_kill_scrapes.json").read_text()))
    assert cm.active_controller_counts(real.after.brokers) == {2: 1.0, 3: 0.0}  # broker 1 was killed
    step = replace(hard_kill_step(), metrics=real, after=replace(AFTER, controller=2))  # that run's controller
    results = [r for r in evaluate(step, CheckContext()) if r.check == "active_controller_count"]
    assert [(r.passed, r.detail) for r in results] == [(True, "2 brokers: only 2 active")]
    results = [r for r in evaluate(replace(step, after=AFTER), CheckContext()) if r.check == "active_controller_count"]
    assert [r.passed for r in results] == [False]  # /controller names 3, which says it is not
    resigned = _step_with({2: {GAUGE: 0.0}, 3: {GAUGE: 0.0}})
    assert [r.passed for r in evaluate(resigned, CheckContext()) if r.check == "active_controller_count"] == [False]
    moved = _step_with({2: {GAUGE: 1.0}, 3: {GAUGE: 0.0}},
                       events=(ControllerChanged(AFTER.taken_at + 0.5, 2),))
    assert [r.passed for r in evaluate(moved, CheckContext()) if r.check == "active_controller_count"] == [None]


def test_no_gauge_or_no_scrape_gives_no_result() -> None:
    for step in (hard_kill_step(), _step_with({2: {}, 3: {}})):
        assert [r for r in evaluate(step, CheckContext()) if r.check == "active_controller_count"] == []


def test_a_broker_a_fault_holds_is_not_asked() -> None:
    """controller_cut_from_zookeeper on 3.9.2 (seed 4242): the cut controller 3 still reports
    itself active -- it resigns only when its new ZooKeeper session begins -- while 1 took over."""
    cut = _step_with({1: {GAUGE: 1.0}, 3: {GAUGE: 1.0}}, after=replace(AFTER, controller=1), excused=(3,))
    assert [(r.passed, r.detail) for r in evaluate(cut, CheckContext())
            if r.check == "active_controller_count"] == [(True, "1 brokers: only 1 active")]
    assert [r.passed for r in evaluate(replace(cut, excused=()), CheckContext())
            if r.check == "active_controller_count"] == [False]

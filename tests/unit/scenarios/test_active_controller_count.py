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


# --- "and it acts as one": GlobalPartitionCount (issue 42, KAFKA-13461) -----------------------------

PARTITIONS = cm.GLOBAL_PARTITION_COUNT + "_value"


@pytest.mark.parametrize("counts, partitions, existing, fresh, passed, detail", [
    # the controller holds every partition with a state (and more: its context has all topics)
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0, 3: 23}, 23, False, True,
     "3 brokers: only 3 active, its GlobalPartitionCount 23 (>= 23 partitions in ZooKeeper)"),
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0, 3: 30}, 23, False, True,
     "3 brokers: only 3 active, its GlobalPartitionCount 30 (>= 23 partitions in ZooKeeper)"),
    ({1: 0, 3: 1}, {1: 0, 3: 0}, 0, False, True,  # no topic at all: 0 is every count
     "2 brokers: only 3 active, its GlobalPartitionCount 0 (>= 0 partitions in ZooKeeper)"),
    # KAFKA-13461: resigned on an auth-failure reinitialisation, active again by /controller alone
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0, 3: 0}, 23, False, False,
     "controller 3 reports GlobalPartitionCount 0 while ZooKeeper has 23 partitions with a state: "
     "active, but not acting as the controller"),
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0, 3: 20}, 23, False, False,
     "controller 3 reports GlobalPartitionCount 20 while ZooKeeper has 23 partitions with a state: "
     "active, but not acting as the controller"),
    # a broker that is not the controller counts partitions
    ({1: 0, 2: 0, 3: 1}, {1: 23, 2: 0, 3: 23}, 23, False, False,
     "broker 1 is not the controller but reports GlobalPartitionCount 23"),
    # elected moments before the scrape: its failover event may not have ended (unknown)
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0, 3: 0}, 23, True, None,
     "controller 3 reports GlobalPartitionCount 0 while ZooKeeper has 23 partitions with a state: "
     "active, but not acting as the controller (/controller written less than 10 s before the scrape: "
     "its failover may not have ended)"),
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0, 3: 23}, 23, True, True,
     "3 brokers: only 3 active, its GlobalPartitionCount 23 (>= 23 partitions in ZooKeeper)"),
    # the gauge absent (a history scraped before it was exported): the first part alone
    ({1: 0, 2: 0, 3: 1}, {}, 23, False, True, "3 brokers: only 3 active"),
    ({1: 0, 2: 0, 3: 1}, {1: 0, 2: 0}, 23, False, True, "3 brokers: only 3 active"),
    # the first part fails first, whatever the partition counts
    ({1: 1, 2: 0, 3: 0}, {1: 23, 2: 0, 3: 0}, 23, False, False,
     "/controller names 3; brokers reporting themselves active controller: [1]"),
])
def test_the_named_controller_acts_as_one(counts: dict[int, float], partitions: dict[int, float], existing: int,
                                          fresh: bool, passed: bool | None, detail: str) -> None:
    result = check_active_controller_count(3, counts, partitions=partitions, existing=existing, fresh=fresh)
    assert (result.passed, result.detail) == (passed, detail)


def test_a_migration_s_kraft_controller_leaves_every_broker_at_zero_partitions() -> None:
    assert check_active_controller_count(3000, {1: 0, 2: 0}, partitions={1: 0, 2: 0}, existing=23).passed is True
    assert check_active_controller_count(3000, {1: 0, 2: 0}, partitions={1: 23, 2: 0}, existing=23).passed is False


def test_the_partition_counts_change_the_record_only_when_scraped() -> None:
    """Old histories (no GlobalPartitionCount) give the records they gave: same observed, same detail."""
    old = check_active_controller_count(3, {1: 0, 3: 1})
    assert check_active_controller_count(3, {1: 0, 3: 1}, partitions={}, existing=5) == old
    assert old.observed == {"1": 0, "3": 1}
    new = check_active_controller_count(3, {1: 0, 3: 1}, partitions={1: 0, 3: 5}, existing=5)
    assert new.observed == {"active_controller_count": {"1": 0, "3": 1},
                            "global_partition_count": {"1": 0, "3": 5}, "partitions_in_zookeeper": 5}


def test_the_registered_check_compares_the_count_with_the_partitions_in_the_snapshot() -> None:
    """AFTER: /controller names 3, two partitions with a state znode."""
    def verdicts(scrape: dict[int, dict[str, float]], **changes: object) -> list[bool | None]:
        return [r.passed for r in evaluate(_step_with(scrape, **changes), CheckContext())
                if r.check == "active_controller_count"]

    acting = {2: {GAUGE: 0.0, PARTITIONS: 0.0}, 3: {GAUGE: 1.0, PARTITIONS: 2.0}}
    zombie = {2: {GAUGE: 0.0, PARTITIONS: 0.0}, 3: {GAUGE: 1.0, PARTITIONS: 0.0}}
    assert verdicts(acting) == [True]
    assert verdicts(zombie) == [False]
    # /controller written 2 s before the scrape (the scrape is at AFTER.taken_at + 1): unknown
    assert verdicts(zombie, events=(ControllerChanged(AFTER.taken_at - 1, 3),)) == [None]
    # ... and 11 s before it: its failover has long ended
    assert verdicts(zombie, events=(ControllerChanged(AFTER.taken_at - 10, 3),)) == [False]
    # a partition without a state znode (no replica live when created) is in no context
    stateless = replace(AFTER, partitions={k: replace(p, version=-1) if k[1] == 1 else p
                                           for k, p in AFTER.partitions.items()})
    one = {2: {GAUGE: 0.0, PARTITIONS: 0.0}, 3: {GAUGE: 1.0, PARTITIONS: 1.0}}
    assert verdicts(one, after=stateless) == [True]
    assert verdicts(one) == [False]
    # a topic being deleted may have left the controller's context already
    deleting = replace(AFTER, topics_being_deleted=frozenset({next(iter(AFTER.partitions))[0]}))
    assert verdicts(zombie, after=deleting) == [True]

"""Voter changes of a dynamic KRaft quorum: the quorum_voters check (scenarios.checks.voters) over
what the fault recorded, which voter controller_remove takes (scenarios.faults.voters), and the
schedule file's cluster "quorum"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.checks.voters import VOTER_CHANGE, check_quorum_voters
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.faults.base import FAULTS
from kafka_chaos.scenarios.model.voters import FOLLOWER, LEADER, removal_target
from kafka_chaos.scenarios.history.observations import FaultTraits, observation_from_json, observation_to_json
from kafka_chaos.scenarios.model.targets import NoTarget
from kafka_chaos.scenarios.plans.schedule import schedule_from_json, schedule_to_json
from tests.unit.scenarios.histories import hard_kill_step

SCHEDULE = Path(__file__).parents[3] / "docs" / "schedules" / "kraft_dynamic_quorum.json"
AFTER_ADD = [3000, 3001, 3002, 3003]
AFTER_REMOVE = [3001, 3002, 3003]


def seen(**changes: Any) -> dict[str, Any]:
    """3000 (the leader) removed from 3000-3003: 3001 leads epoch 9."""
    base: dict[str, Any] = {"expected": AFTER_REMOVE, "running": [3000, 3001, 3002, 3003],
                            "logs": {"3000": AFTER_REMOVE, "3001": AFTER_REMOVE, "3002": AFTER_REMOVE,
                                     "3003": AFTER_REMOVE},
                            "leader": 3001, "leader_epoch": 9, "described": AFTER_REMOVE}
    return {**base, **changes}


CASES = {
    "every voter and the leader agree": (seen(), True),
    "the removed controller's own log may lag": (seen(logs={**seen()["logs"], "3000": AFTER_ADD}), True),
    "a stopped voter is not asked": (seen(running=[3001, 3002], logs={**seen()["logs"], "3003": AFTER_ADD}), True),
    "a running voter still names the old set": (seen(logs={**seen()["logs"], "3002": AFTER_ADD}), False),
    "a voter's log names no voter set": (seen(logs={**seen()["logs"], "3003": None}), False),
    "the leader describes the old set": (seen(described=AFTER_ADD), False),
    "the removed controller still leads": (seen(leader=3000), False),
    "no leader answers": (seen(leader=None, leader_epoch=None, described=None), False),
    "a restarted removed voter left the quorum alone": (
        seen(keep_epoch=True, leader_before=3001, epoch_before=9), True),
    "a restarted removed voter forced an election": (
        seen(keep_epoch=True, leader_before=3001, epoch_before=9, leader=3002, leader_epoch=10), False),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_quorum_voters(case: str) -> None:
    observed, verdict = CASES[case]
    assert check_quorum_voters(observed).passed is verdict


def test_a_failure_names_the_voter_and_what_it_holds() -> None:
    result = check_quorum_voters(seen(logs={**seen()["logs"], "3002": AFTER_ADD}, described=AFTER_ADD))
    assert result.detail == ("voter 3002's log names [3000, 3001, 3002, 3003]; "
                             "the leader describes voters [3000, 3001, 3002, 3003]")


def test_the_registered_check_reads_the_recorded_outcome_and_it_survives_the_history_file() -> None:
    traits = FaultTraits("controller_remove", "controller_remove", True, outcome={VOTER_CHANGE: seen(leader=3000)})
    step = hard_kill_step(traits=traits)
    back = observation_from_json(observation_to_json(step))
    assert [r.passed for r in evaluate(back, CheckContext()) if r.check == "quorum_voters"] == [False]
    assert [r.passed for r in evaluate(hard_kill_step(), CheckContext()) if r.check == "quorum_voters"] == []


@pytest.mark.parametrize("voter, leader, voters, removed", [
    (LEADER, 3001, (3000, 3001, 3002), 3001),
    (FOLLOWER, 3001, (3000, 3001, 3002), 3000),
    (FOLLOWER, 3000, (3000, 3001, 3002, 3003), 3001),
])
def test_which_voter_is_removed(voter: str, leader: int, voters: tuple[int, ...], removed: int) -> None:
    assert removal_target(voter, leader, voters) == removed


def test_a_lone_voter_has_no_follower_to_remove() -> None:
    with pytest.raises(UsageError, match="no follower voter"):
        removal_target(FOLLOWER, 3000, (3000,))


def test_the_kinds_are_registered_kraft_only_and_their_options_checked() -> None:
    for kind in ("controller_add", "controller_remove", "removed_voter_restart"):
        assert FAULTS[kind].modes == frozenset({"kraft"})
    with pytest.raises(UsageError, match="'voter' must be 'leader' or 'follower'"):
        make_fault("controller_remove", NoTarget(), {"voter": "observer"}, topic_names={}, topic_partitions={})
    with pytest.raises(UsageError, match="unknown option"):
        make_fault("controller_add", NoTarget(), {"count": 2}, topic_names={}, topic_partitions={})
    assert make_fault("controller_remove", NoTarget(), {}, topic_names={}, topic_partitions={}).oracle_events()


def test_the_schedule_file_asks_for_a_dynamic_quorum_and_round_trips() -> None:
    data = json.loads(SCHEDULE.read_text())
    schedule = schedule_from_json(data)
    assert schedule.quorum == "dynamic" and schedule.needs.quorum == "dynamic"
    assert "dynamic quorum" in schedule.needs.describe()
    assert schedule_from_json(schedule_to_json(schedule)) == schedule
    assert [s.fault for s in schedule.steps] == ["controller_add", "controller_remove", "removed_voter_restart"]


@pytest.mark.parametrize("name", ["kraft_dynamic_quorum.json", "kraft_dynamic_quorum_follower.json"])
def test_the_generators_model_takes_a_dynamic_schedules_voter_changes_and_refuses_them_on_a_static_one(
        name: str) -> None:
    """The model the shrinker checks each candidate with (generator.problems) knows the schedule's
    quorum: a dynamic schedule's steps are legal (else none of its shrinks could run), the same
    steps on a static quorum are not."""
    from dataclasses import replace

    from kafka_chaos.scenarios.plans.generator import problems

    schedule = schedule_from_json(json.loads((SCHEDULE.parent / name).read_text()))
    assert problems(schedule) == []
    [refused] = problems(replace(schedule, quorum="static"))
    assert refused.startswith(f"step 1 ({schedule.steps[0].fault}): ") and "needs a dynamic quorum" in refused


@pytest.mark.parametrize("cluster, message", [
    ({"mode": "zookeeper", "quorum": "dynamic"}, "needs \"mode\": \"kraft\""),
    ({"mode": "kraft", "quorum": "dynamic", "kafka_version": "3.8.1"}, "needs Kafka 3.9 or later, not 3.8.1"),
    ({"mode": "kraft", "quorum": "joint"}, "must be \"static\" or \"dynamic\""),
])
def test_a_bad_cluster_quorum_is_refused_in_one_line(cluster: dict[str, Any], message: str) -> None:
    data = json.loads(SCHEDULE.read_text())
    data["cluster"] = {"brokers": [1, 2, 3], **cluster}
    with pytest.raises(UsageError, match=message):
        schedule_from_json(data)


def test_the_pool_reuses_a_static_quorum_but_never_a_dynamic_ones_cluster() -> None:
    """A dynamic quorum's voter changes outlive the pool's restore (it starts nodes, adds and
    removes no voter): the next iteration of kraft_dynamic_quorum.json gets a fresh cluster."""
    from kafka_chaos.scenarios.plans.catalogue import by_names
    from kafka_chaos.scenarios.plans.schedule import load
    from kafka_chaos.scenarios.run.pool import ClusterPool

    pool = ClusterPool("local", None, lambda line: None)  # type: ignore[arg-type]
    for needs, reused in ((by_names(["leader_hard_kill_kraft"])[0].needs, True),
                          (load(SCHEDULE).scenario().needs, False)):
        pool.cluster, pool.needs = object(), needs  # type: ignore[assignment]
        assert pool._reusable(needs) is reused, needs.describe()

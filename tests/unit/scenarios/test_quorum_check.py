"""The one_quorum_leader invariant (scenarios.checks.quorum) over recorded DescribeQuorum answers
(scenarios.history.quorum)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.harness.kafka_wire import WireQuorum
from kafka_chaos.scenarios.checks.quorum import GRACE_S, check_one_quorum_leader
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.history.observations import observation_from_json, observation_to_json
from kafka_chaos.scenarios.history.quorum import VoterAnswer, voter_answer
from tests.unit.scenarios.histories import AFTER, T0, hard_kill_step

FAULT = T0
LATE = T0 + GRACE_S + 1
EARLY = T0 + 1


def leads(epoch: int, at: float = LATE, leader: int = 0) -> VoterAnswer:
    return VoterAnswer(at, leader, epoch)


def follows(at: float = LATE) -> VoterAnswer:
    return VoterAnswer(at, error="NOT_LEADER_OR_FOLLOWER")


KRAFT = replace(AFTER, mode="kraft", controller=3001, controller_epoch=7)

CASES = {
    "one leader, the others follow": ({3000: follows(), 3001: leads(7), 3002: follows()}, KRAFT, True),
    # KAFKA-15489 (3.6.x): the old leader, cut from the other voters, still leads its epoch
    "a stale leader long after the fault": ({3000: leads(6), 3001: leads(7), 3002: follows()}, KRAFT, False),
    "a stale leader within the grace": ({3000: leads(6, EARLY), 3001: leads(7, EARLY)}, KRAFT, None),
    "stale against the metadata log, the new leader silent": ({3000: leads(6), 3002: follows()}, KRAFT, False),
    "two leaders of one epoch": ({3000: leads(7, EARLY), 3001: leads(7, EARLY)}, KRAFT, False),
    "a leader the log does not show yet": ({3000: follows(), 3002: leads(8)}, KRAFT, True),
    "nobody leads (an election)": ({3000: follows(), 3001: VoterAnswer(LATE, error="timed out")}, KRAFT, True),
    # a migration's ZooKeeper phase: the snapshot is ZooKeeper's, only the voters' answers count
    "migration, one leader": ({3000: leads(2), 3001: follows()}, AFTER, True),
    "migration, two epochs": ({3000: leads(2), 3001: leads(3)}, AFTER, False),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_one_quorum_leader(case: str) -> None:
    answers, after, verdict = CASES[case]
    assert check_one_quorum_leader(answers, after, FAULT).passed is verdict


def test_a_stale_leader_is_named_with_the_newest_epoch() -> None:
    result = check_one_quorum_leader({3000: leads(6), 3001: leads(7)}, KRAFT, FAULT)
    assert result.detail == (f"voter 3000 answers as the leader of epoch 6, {GRACE_S + 1:.1f} s after the fault; "
                             "the newest epoch is 7 (the metadata log's leader: 3001)")


@pytest.mark.parametrize(("wire", "recorded"), [
    (WireQuorum(1, 0, 3001, 7, 40, ((3000, 40), (3001, 40))), VoterAnswer(5.0, 3001, 7)),
    (WireQuorum(1, 6, 0, 0, 0, ()), VoterAnswer(5.0, error="NOT_LEADER_OR_FOLLOWER")),
])
def test_a_voters_answer_is_recorded_as_a_claim_or_an_error(wire: WireQuorum, recorded: VoterAnswer) -> None:
    assert voter_answer(5.0, wire, "NOT_LEADER_OR_FOLLOWER") == recorded


def test_the_registered_check_judges_the_recorded_answers_and_they_survive_the_history_file() -> None:
    step = hard_kill_step(after=KRAFT, fault_at=FAULT, quorum={3000: leads(6), 3001: leads(7), 3002: follows()})
    back = observation_from_json(observation_to_json(step))
    assert back == step
    assert [r.passed for r in evaluate(back, CheckContext()) if r.check == "one_quorum_leader"] == [False]
    assert [r.passed for r in evaluate(hard_kill_step(), CheckContext()) if r.check == "one_quorum_leader"] == []

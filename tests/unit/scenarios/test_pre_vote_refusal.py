"""The generator's refusal to start, restart or resume a broker while a voter is cut, keyed by release.

Before 4.0 a voter cut from the others stands as a candidate in ever later epochs, and a broker
starting meanwhile may follow them (explore --mode kraft --seed 7733 on 3.9.2); from 4.0 every voter
pre-votes (KIP-996: KafkaRaftClient 4.0.0 lines 3181, 3285, 675-682; no setting), so the cut voter
keeps its epoch and the brokers find the leader. The refusal holds while any voter runs a release
without pre-vote, or the release is unknown."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep, pre_votes
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import Brokers, Controller, EarlierTarget
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate, problems
from kafka_chaos.scenarios.plans.schedule import Schedule
from kafka_chaos.scenarios.plans.shrink import legal

BROKERS = (1, 2, 3, 4, 5)
TOPIC = TopicSpec("t", {0: (1, 2, 3)})
# Before the cut: broker 5 killed (step 0, for the start), broker 4's log directory 0 failed (for the heals).
BEFORE = (Step("hard_kill", Brokers((5,))), Step("log_dir_failure", Brokers((4,)), {"dir": 0}))
RESTARTS = {
    "start": Step("start", EarlierTarget(0)),
    "restart": Step("restart", Brokers((1,))),
    "pause": Step("pause", Brokers((1,))),
    "short_pause": Step("short_pause", Brokers((1,))),
    "log_dir_failure heal": Step("log_dir_failure", Brokers((4,)), {"variant": "heal"}),
    "disk_error heal": Step("disk_error", Brokers((4,)), {"variant": "heal"}),
}
CUTS = ("quorum_follower_cut", "quorum_leader_cut")
WITHOUT_PRE_VOTE = (None, "3.9.2", "3.7.2", "4.0.0-SNAPSHOT")  # unknown and unparsable: conservative
WITH_PRE_VOTE = ("4.0.0", "4.0.2", "4.4.0")


def _model(release: str | None, cut: str | None) -> ClusterModel:
    m = ClusterModel(BROKERS, {"t": TOPIC}, live=set(BROKERS), mode="kraft", controllers=3, release=release)
    for step in BEFORE + ((Step(cut, Controller()),) if cut else ()):
        m.apply(step)
    return m


@pytest.mark.parametrize("release, pre_vote", [
    (None, False), ("3.9.2", False), ("3.9.0", False), ("3.1.2", False), ("4.0.0-SNAPSHOT", False),
    ("4.0.0", True), ("4.1.2", True), ("4.4.0", True), ("5.0.0", True),
])
def test_pre_vote_from_4_0(release: str | None, pre_vote: bool) -> None:
    assert pre_votes(release) is pre_vote


@pytest.mark.parametrize("fault", sorted(RESTARTS))
@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("release", WITHOUT_PRE_VOTE)
def test_refused_while_a_voter_is_cut_without_pre_vote(release: str | None, cut: str, fault: str) -> None:
    with pytest.raises(IllegalStep, match="while a voter is cut .* without pre-vote"):
        _model(release, cut).apply(RESTARTS[fault])


@pytest.mark.parametrize("fault", sorted(RESTARTS))
@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("release", WITH_PRE_VOTE)
def test_legal_while_a_voter_is_cut_with_pre_vote(release: str, cut: str, fault: str) -> None:
    """The rows the release-blind refusal failed: every one was refused on every release."""
    _model(release, cut).apply(RESTARTS[fault])


@pytest.mark.parametrize("fault", sorted(RESTARTS))
@pytest.mark.parametrize("release", WITHOUT_PRE_VOTE + WITH_PRE_VOTE)
def test_legal_without_a_cut(release: str | None, fault: str) -> None:
    _model(release, None).apply(RESTARTS[fault])


def test_a_voter_not_yet_rolled_keeps_the_refusal() -> None:
    """The journey: migrated on 3.9.2, its controllers rolled to 4.4.0 one at a time (ClusterModel.releases);
    until the last voter runs 4.4.0 a broker may still follow a pre-vote-less voter's epochs."""
    m = ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2, 3)})}, live={1, 2, 3}, mode="migration",
                     controllers=3, provisioned=True, finalized=True, release="3.9.2", quorum_cut=True)
    roll = Step("kraft_roll", Brokers((1,)), {"to": "4.4.0"})
    assert m.voter_ids == [3000, 3001, 3002]
    for voter in (3000, 3001):
        m.releases[voter] = "4.4.0"
        assert m.refusal(roll) is not None and m.refusal(Step("restart", Brokers((1,)))) is not None
    m.releases[2] = "4.4.0"  # a broker rolled: not a voter
    assert m.refusal(roll) is not None
    m.releases[3002] = "4.4.0"
    assert m.refusal(roll) is None and m.refusal(Step("restart", Brokers((1,)))) is None
    m.quorum_cut = False
    assert replace(m, release="4.4.0", releases={3000: "3.9.2"}, quorum_cut=True).refusal(roll) is not None


def _cut_then_start(**pins: str) -> Schedule:
    return Schedule("s", BROKERS, (TOPIC,), (BEFORE[0], Step("quorum_follower_cut", Controller()),
                                             Step("start", EarlierTarget(0))), mode="kraft", controllers=3, **pins)


def test_problems_and_the_shrinker_take_the_release_the_schedule_pins_else_the_runs() -> None:
    assert problems(_cut_then_start(kafka_version="4.4.0")) == []
    assert problems(_cut_then_start(kafka_version="4.4.0"), "3.9.2") == []  # the pin wins
    [refused] = problems(_cut_then_start(kafka_version="3.9.2"), "4.4.0")
    assert refused.startswith("step 3 (start): start while a voter is cut")
    assert problems(_cut_then_start(), "4.4.0") == []
    assert problems(_cut_then_start()) != []  # unknown: conservative
    assert legal(_cut_then_start(), "4.4.0") and not legal(_cut_then_start())


def test_generated_4_x_schedules_start_brokers_while_a_voter_is_cut_and_3_x_ones_never() -> None:
    faults = ("hard_kill", "start", "pause", "short_pause", "restart", "quorum_leader_cut", "quorum_follower_cut")

    def starts_while_cut(release: str) -> int:
        config = GeneratorConfig(mode="kraft", faults=faults, steps=10, kafka_version=release)
        n = 0
        for i in range(40):
            s = generate(45, i, config)
            assert problems(s, release) == [], (s.name, problems(s, release))
            cut = False
            for st in s.steps:
                if st.fault in CUTS:
                    cut = st.options.get("variant") != "heal"
                elif cut and st.fault in RESTARTS:
                    n += 1
        return n

    assert starts_while_cut("3.9.2") == 0
    assert starts_while_cut("4.4.0") > 10

"""``delete_records`` (scenarios.faults.records): its options (bad input: one UsageError line), what
it asks each leader and records, its generator side; and the checks' ``deleted`` allowance
(scenarios.checks.client_history, the delivery check), which fires only below a recorded low
watermark."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness import kafka_wire, metadata
from kafka_chaos.scenarios.checks import client_history as hc
from kafka_chaos.scenarios.checks.registry import check_history
from kafka_chaos.scenarios.clients.delivery import Ack, validate_delivery
from kafka_chaos.scenarios.clients.ops import ClientOps, Poll
from kafka_chaos.scenarios.faults import FAULTS, GENERATORS, make_fault
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, IllegalStep
from kafka_chaos.scenarios.faults.records import HIGH_WATERMARK, DeleteRecordsFault
from kafka_chaos.scenarios.history.observations import (
    FaultTraits,
    ScenarioFinished,
    TopicDelivery,
    observation_from_json,
    observation_to_json,
)
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import NoTarget, Target
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate, problems
from kafka_chaos.scenarios.plans.schedule import dumps, schedule_from_json
from tests.unit.scenarios.histories import RUN, T0, hard_kill_step

NONE = Target((), "cluster")
TOPICS: dict[str, Any] = {"topic_names": {"t": "phys-t"}, "topic_partitions": {"t": (0, 1, 2)}}


# --- options --------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, partitions, before", [
    ({"topic": "t"}, (0, 1, 2), HIGH_WATERMARK),
    ({"topic": "t", "before": "high_watermark"}, (0, 1, 2), HIGH_WATERMARK),
    ({"topic": "t", "before": 0.5, "partitions": [2, 0]}, (0, 2), 0.5),
    ({"topic": "t", "before": 1.0}, (0, 1, 2), 1.0),
    ({"topic": "t", "before": 120}, (0, 1, 2), 120),
    ({"topic": "t", "before": 0, "partitions": [7]}, (7,), 0),  # a partition an add_partitions step made
])
def test_options_name_the_partitions_and_the_offset(options: dict[str, Any], partitions: tuple[int, ...],
                                                    before: Any) -> None:
    fault = make_fault("delete_records", NONE, options, **TOPICS)
    assert isinstance(fault, DeleteRecordsFault)
    assert (fault.topic, fault.partitions, fault.before) == ("phys-t", partitions, before)
    assert type(fault.before) is type(before)
    assert fault.oracle_events() == [] and fault.outcome is None and fault.modes == {"zookeeper", "kraft", "migration"}
    assert fault.label == f"delete_records before {before}"


@pytest.mark.parametrize("options, message", [
    ({}, "option 'topic' must be one of ['t'], not None"),
    ({"topic": "u"}, "option 'topic' must be one of ['t'], not 'u'"),
    ({"topic": "t", "before": "hw"}, "'before' must be 'high_watermark', an offset"),
    ({"topic": "t", "before": -1}, "not -1"),
    ({"topic": "t", "before": 0.0}, "a number in (0, 1]"),
    ({"topic": "t", "before": 1.5}, "not 1.5"),
    ({"topic": "t", "before": True}, "not True"),
    ({"topic": "t", "before": "0.5"}, "not '0.5'"),
    ({"topic": "t", "before": None}, "not None"),
    ({"topic": "t", "partitions": "0"}, "'partitions' must be a non-empty list"),
    ({"topic": "t", "partitions": []}, "not []"),
    ({"topic": "t", "partitions": [0, 0]}, "distinct"),
    ({"topic": "t", "partitions": [True]}, "not [True]"),
    ({"topic": "t", "partitions": [-1]}, "not [-1]"),
    ({"topic": "t", "offset": 3}, "unknown option(s) 'offset': 'topic', 'partitions', 'before'"),
])
def test_bad_options_are_one_usage_error_line(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as refused:
        make_fault("delete_records", NONE, options, **TOPICS)
    text = str(refused.value)
    assert text.startswith("delete_records: ") and message in text and "\n" not in text


def test_the_kind_is_registered_for_every_mode_without_a_capability() -> None:
    entry = FAULTS["delete_records"]
    assert entry.requires == frozenset() and entry.modes == {"zookeeper", "kraft", "migration"}
    assert "\n" not in entry.doc


# --- what it asks and records ---------------------------------------------------------------------

@dataclass
class _Cluster:
    def endpoint(self, broker: int) -> SimpleNamespace:
        return SimpleNamespace(bootstrap=f"127.0.0.1:{9000 + broker}")


@dataclass
class _Observer:
    leaders: list[dict[int, int]]  # one per snapshot asked: partition -> leader
    asked: int = 0

    def snapshot(self, topics: Any = None) -> SimpleNamespace:
        leaders = self.leaders[min(self.asked, len(self.leaders) - 1)]
        self.asked += 1
        return SimpleNamespace(live_brokers={1: 10, 2: 11, 3: 12},
                               partitions={("phys-t", p): SimpleNamespace(leader=b) for p, b in leaders.items()})


@dataclass
class _Broker:
    """What the leaders answer: DeleteRecords requests seen, and per address its answers."""

    high_watermarks: dict[int, int]
    not_leader_once: set[int] = field(default_factory=set)
    timed_out: set[int] = field(default_factory=set)  # a live follower does not fetch: the old low watermark
    requests: list[tuple[str, dict[str, dict[int, int]]]] = field(default_factory=list)

    def delete_records(self, address: str, offsets: dict[str, dict[int, int]], **_: Any) -> kafka_wire.WireDeleted:
        self.requests.append((address, {t: dict(p) for t, p in offsets.items()}))
        answers = {}
        for p, offset in offsets["phys-t"].items():
            if p in self.not_leader_once:
                self.not_leader_once.discard(p)
                answers[("phys-t", p)] = (6, -1)
            elif p in self.timed_out:
                answers[("phys-t", p)] = (7, 3)  # REQUEST_TIMED_OUT, the low watermark before
            elif offset > self.high_watermarks[p]:
                answers[("phys-t", p)] = (1, -1)  # OFFSET_OUT_OF_RANGE
            else:
                answers[("phys-t", p)] = (0, self.high_watermarks[p] if offset == -1 else offset)
        return kafka_wire.WireDeleted(1, answers)

    def latest_offsets(self, address: str, partitions: dict[str, list[int]], timeout: float = 2.0
                       ) -> kafka_wire.WireOffsets:
        return kafka_wire.WireOffsets(1, {("phys-t", p): (0, self.high_watermarks[p]) for p in partitions["phys-t"]})

    def log_start_offsets(self, address: str, partitions: dict[str, list[int]], timeout: float = 2.0
                          ) -> kafka_wire.WireOffsets:
        self.requests.append((address, {"earliest": {p: -2 for p in partitions["phys-t"]}}))
        return kafka_wire.WireOffsets(1, {("phys-t", p): (0, self.high_watermarks[p]) for p in partitions["phys-t"]})


def _inject(monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], broker: _Broker,
            leaders: list[dict[int, int]]) -> DeleteRecordsFault:
    monkeypatch.setattr(metadata, "delete_records", broker.delete_records)
    monkeypatch.setattr(metadata, "latest_offsets", broker.latest_offsets)
    monkeypatch.setattr(metadata, "log_start_offsets", broker.log_start_offsets)
    monkeypatch.setattr("kafka_chaos.scenarios.faults.records.RETRY_PAUSE_S", 0.0)
    fault = make_fault("delete_records", NONE, options, **TOPICS)
    assert isinstance(fault, DeleteRecordsFault)
    fault.inject(SimpleNamespace(cluster=_Cluster(), observer=_Observer(leaders)))  # type: ignore[arg-type]
    return fault


def test_each_leader_is_asked_for_its_own_partitions_and_its_low_watermarks_are_recorded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    broker = _Broker({0: 100, 1: 80, 2: 60})
    fault = _inject(monkeypatch, {"topic": "t"}, broker, [{0: 1, 1: 2, 2: 1}])
    assert broker.requests == [("127.0.0.1:9001", {"phys-t": {0: -1, 2: -1}}), ("127.0.0.1:9002", {"phys-t": {1: -1}})]
    assert fault.outcome == {"before": "high_watermark", "partitions": {
        "phys-t-0": {"leader": 1, "requested": -1, "low_watermark": 100, "error": None},
        "phys-t-1": {"leader": 2, "requested": -1, "low_watermark": 80, "error": None},
        "phys-t-2": {"leader": 1, "requested": -1, "low_watermark": 60, "error": None}}}
    assert fault.label == "delete_records before high_watermark"  # records and reports group by it
    assert fault.answered() == "0: 100, 1: 80, 2: 60"
    assert hc.recorded_log_starts(fault.outcome, 5.0) == {
        "phys-t-0": hc.LogStart(5.0, 100), "phys-t-1": hc.LogStart(5.0, 80), "phys-t-2": hc.LogStart(5.0, 60)}


def test_a_fraction_is_of_each_leaders_high_watermark_and_a_moved_leader_is_asked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    broker = _Broker({0: 101, 1: 80, 2: 60}, not_leader_once={1})
    fault = _inject(monkeypatch, {"topic": "t", "before": 0.5, "partitions": [0, 1]}, broker,
                    [{0: 1, 1: 1}, {0: 1, 1: 3}])
    assert broker.requests == [("127.0.0.1:9001", {"phys-t": {0: 50, 1: 40}}), ("127.0.0.1:9003", {"phys-t": {1: 40}})]
    assert fault.outcome is not None
    assert {tp: (a["leader"], a["low_watermark"]) for tp, a in fault.outcome["partitions"].items()} == {
        "phys-t-0": (1, 50), "phys-t-1": (3, 40)}


def test_refusals_and_partitions_without_a_leader_are_recorded_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    broker = _Broker({0: 100, 1: 80, 2: 60})
    fault = _inject(monkeypatch, {"topic": "t", "before": 90, "partitions": [0, 1, 2, 7]}, broker,
                    [{0: 1, 1: 2, 2: -1}])
    assert fault.outcome is not None
    answers = fault.outcome["partitions"]
    assert {tp: a["error"] for tp, a in answers.items()} == {
        "phys-t-0": None, "phys-t-1": "OFFSET_OUT_OF_RANGE", "phys-t-2": "NO_LEADER",
        "phys-t-7": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert answers["phys-t-0"]["low_watermark"] == 90 and answers["phys-t-1"]["low_watermark"] is None
    assert hc.recorded_log_starts(fault.outcome, 0.0) == {"phys-t-0": hc.LogStart(0.0, 90)}


def test_after_a_timed_out_answer_the_leaders_own_log_start_is_recorded_and_counts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    broker = _Broker({0: 100, 1: 80, 2: 60}, timed_out={1})
    fault = _inject(monkeypatch, {"topic": "t", "partitions": [0, 1]}, broker, [{0: 2, 1: 2}])
    assert broker.requests == [("127.0.0.1:9002", {"phys-t": {0: -1, 1: -1}}),
                               ("127.0.0.1:9002", {"earliest": {1: -2}})]
    assert fault.outcome is not None and fault.outcome["partitions"]["phys-t-1"] == {
        "leader": 2, "requested": -1, "low_watermark": 3, "error": "REQUEST_TIMED_OUT", "log_start": 80}
    assert "log_start" not in fault.outcome["partitions"]["phys-t-0"]
    assert hc.recorded_log_starts(fault.outcome, 1.0) == {"phys-t-0": hc.LogStart(1.0, 100),
                                                          "phys-t-1": hc.LogStart(1.0, 80)}


def test_the_outcome_round_trips_in_the_history_and_other_steps_are_written_as_before() -> None:
    outcome = {"before": 0.5, "partitions": {"t-0": {"leader": 1, "requested": 5, "low_watermark": 5, "error": None}}}
    step = hard_kill_step(traits=FaultTraits("delete_records", "delete_records t before 0.5", True, outcome=outcome))
    line = observation_to_json(step)
    assert json.loads(line)["traits"]["outcome"] == outcome and observation_from_json(line) == step
    assert "outcome" not in json.loads(observation_to_json(hard_kill_step()))["traits"]


# --- the history checker's allowance --------------------------------------------------------------

def _acks(start: int, end: int, t: float) -> tuple[Ack, ...]:
    return tuple(Ack(0, i, f"r-0-{i}", t + 0.01 * i) for i in range(start, end))


def _polls(consumer: str, offsets: range | list[int], t: float) -> tuple[Poll, ...]:
    return tuple(Poll(consumer, i, f"r-0-{i}", t + 0.01 * i) for i in offsets)


DELETED_AT = 10.0


def _history(*, read_before: range = range(0, 20), read_after: list[int] | None = None,
             read_back: range = range(40, 60), implicit: tuple[int, ...] = (),
             poll_after_at: float = DELETED_AT + 1) -> ClientOps:
    """Acks at offsets 0..59; the assign consumer reads ``read_before`` before a deletion up to 40
    (at ``DELETED_AT``), then ``read_after`` (default 40..59); the read-back reads ``read_back``."""
    acks = tuple(replace(a, offset=None) if a.offset in implicit else a for a in _acks(0, 60, 1.0))
    after = list(range(40, 60)) if read_after is None else read_after
    polls = _polls("assign", read_before, 2.0) + _polls("assign", after, poll_after_at) + _polls(
        "readback", read_back, 30.0)
    return ClientOps(0.0, None, acks, (), polls, ())


def _judge(ops: ClientOps, *, low_watermark: int | None = 40) -> dict[str, tuple[int, int]]:
    """Anomaly kind -> (failing, deleted) counts."""
    starts = () if low_watermark is None else (hc.LogStart(DELETED_AT, low_watermark),)
    anomalies, summary = hc.check_partition("t-0", [ops], log_starts=starts)
    counts: dict[str, tuple[int, int]] = {}
    for a in anomalies:
        bad, gone = counts.get(a.kind, (0, 0))
        counts[a.kind] = (bad + (not a.deleted), gone + a.deleted)
    assert summary.deleted == sum(1 for a in anomalies if a.kind == hc.UNSEEN and a.deleted) or not anomalies
    return counts


CASES = [
    # below the recorded low watermark and not read back: deleted (read earlier or never), no skip
    ("deleted below the low watermark", {}, 40, {hc.LOST_WRITE: (0, 20), hc.UNSEEN: (0, 40)}),
    # the same history without a recorded deletion: every class fires
    ("no deletion recorded", {}, None,
     {hc.LOST_WRITE: (20, 0), hc.UNSEEN: (40, 0), hc.POLL_SKIP: (1, 0)}),
    # a lower low watermark explains only what lies below it
    ("below 30 only", {}, 30,
     {hc.LOST_WRITE: (10, 10), hc.UNSEEN: (10, 30), hc.POLL_SKIP: (1, 0)}),
    # at or above the low watermark a missing message is judged as before
    ("missing at 45", {"read_back": range(40, 59)}, 40, {hc.LOST_WRITE: (0, 20), hc.UNSEEN: (1, 40)}),
    # a jump that skips offsets above the low watermark is still a skip
    ("skip past it", {"read_after": list(range(45, 60))}, 40,
     {hc.LOST_WRITE: (0, 20), hc.UNSEEN: (0, 40), hc.POLL_SKIP: (1, 0)}),
    # a jump before the deletion was sent is a skip
    ("jump before the deletion", {"poll_after_at": 2.0}, 40,
     {hc.LOST_WRITE: (0, 20), hc.UNSEEN: (0, 40), hc.POLL_SKIP: (1, 0)}),
    # implicit acks: placed where a consumer read them (5: deleted); never read (25): not placed, unseen
    ("implicit acks", {"implicit": (5, 25)}, 40, {hc.LOST_WRITE: (0, 19), hc.UNSEEN: (1, 39)}),
    # a message below the low watermark that is read back is no anomaly (only absence is judged)
    ("read back below it", {"read_back": range(0, 60)}, 40, {}),
]


@pytest.mark.parametrize("name, changes, low_watermark, expected", CASES, ids=[c[0] for c in CASES])
def test_the_deleted_allowance_fires_only_below_a_recorded_low_watermark(
        name: str, changes: dict[str, Any], low_watermark: int | None, expected: dict[str, tuple[int, int]]) -> None:
    assert _judge(_history(**changes), low_watermark=low_watermark) == expected


def test_the_delivery_report_counts_deleted_messages_apart() -> None:
    acks = list(_acks(0, 60, 1.0)) + [Ack(0, None, "r-0-x", 5.0), Ack(0, None, "r-0-y", 5.0)]
    consumed = [(0, i, f"r-0-{i}") for i in range(40, 60)]
    report = validate_delivery(acks, consumed, deleted_below={0: 40}, placed={"r-0-x": 3})
    assert len(report.deleted) == 41 and report.lost == ("r-0-y",)  # y: implicit and never read
    assert dict(report.deleted_by_partition) == {0: 41} and report.as_dict()["deleted"] == 41
    assert "41 acked below a recorded low watermark, deleted {0: 41}" in report.describe()
    plain = validate_delivery(acks, consumed)
    assert len(plain.lost) == 42 and "deleted" not in plain.as_dict()


def test_the_registered_checks_read_the_recorded_low_watermarks() -> None:
    """A delete_records step's outcome reaches the delivery and history checks; without it the
    same history fails them."""
    ops = _history()
    outcome = {"before": "high_watermark",
               "partitions": {"t-0": {"leader": 1, "requested": -1, "low_watermark": 40, "error": None}}}
    step = hard_kill_step(traits=FaultTraits("delete_records", "delete_records t", True, outcome=outcome),
                          fault_at=DELETED_AT, ops={"t-0": replace(ops, polls=tuple(
                              p for p in ops.polls if p.consumer != "readback"))})
    readback = tuple(p for p in ops.polls if p.consumer == "readback")
    stored = validate_delivery(ops.acks, [(0, p.offset, p.key) for p in readback])
    finished = ScenarioFinished(RUN, 20.0, 31.0, None, (TopicDelivery("t", stored),),
                                {"t-0": ClientOps(DELETED_AT + 5, None, (), (), readback, ())})

    def verdicts(history: list[Any]) -> dict[str, Any]:
        return {r.check: r for obs, rs in check_history(history) if isinstance(obs, ScenarioFinished) for r in rs
                if r.check == "delivery" or r.check.startswith("history_")}

    judged = verdicts([step, finished])
    assert [c for c, r in judged.items() if r.passed is not True] == []
    assert judged["history_unseen"].observed["deleted"] == 40 and "40 more deleted" in judged["history_unseen"].detail
    assert judged["history_lost_write"].observed["deleted"] == 20
    assert judged["delivery"].observed["deleted"] == 40
    without = verdicts([replace(step, traits=replace(step.traits, outcome=None)), finished])
    assert {c for c, r in without.items() if r.passed is False} == {
        "delivery", "history_unseen", "history_lost_write", "history_poll_skip"}
    assert "deleted" not in without["history_unseen"].observed


# --- the generator side ---------------------------------------------------------------------------

def _model(mode: str = "zookeeper") -> ClusterModel:
    return ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2), 1: (2, 3)})}, live={1, 2, 3}, mode=mode)


def test_the_generator_side_is_opt_in_and_refuses_what_the_model_says_cannot_run() -> None:
    side = GENERATORS["delete_records"]
    assert side.opt_in and not side.shapes_cluster
    model = _model()
    side.apply(model, Step("delete_records", NoTarget("t records"), {"topic": "t", "partitions": [1]}), ())
    for options, message in [({"topic": "u"}, "unknown topic 'u'"), ({"topic": "t", "partitions": [2]}, "lacks"),
                             ({"topic": "t", "before": 2.0}, "'before' must be")]:
        with pytest.raises(IllegalStep, match=message):
            side.apply(model, Step("delete_records", NoTarget("t"), options), ())


@pytest.mark.parametrize("mode", ["zookeeper", "kraft", "migration"])
@pytest.mark.parametrize("seed", range(10))
def test_every_drawn_step_is_legal_in_every_mode_and_builds(mode: str, seed: int) -> None:
    model = _model(mode)
    model.live.discard(3)  # a replica's broker down changes nothing
    for step in GENERATORS["delete_records"].candidates(model, Draw(random.Random(seed), ())):
        GENERATORS["delete_records"].apply(model, step, ())
        fault = make_fault(step.fault, NONE, step.options, topic_names={"t": "t"}, topic_partitions={"t": (0, 1)})
        assert fault.oracle_events() == [] and mode in fault.modes


def test_explore_draws_it_only_when_named_and_the_schedules_stay_valid() -> None:
    named = GeneratorConfig(faults=("hard_kill", "start", "delete_records"), steps=6)
    drawn = 0
    for i in range(30):
        s = generate(3, i, named)
        assert problems(s) == []
        s.scenario()
        assert schedule_from_json(json.loads(dumps(s))) == s
        drawn += sum(step.fault == "delete_records" for step in s.steps)
    assert drawn > 10
    assert not any(step.fault == "delete_records" for i in range(30) for step in generate(3, i).steps)

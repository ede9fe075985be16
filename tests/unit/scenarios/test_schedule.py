"""Schedule files: every catalogue scenario exports and loads back to the same scenario; bad
files are one line naming the field, never a traceback, whatever JSON they hold."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_chaos.cli.main import main
from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.plans import catalogue
from kafka_chaos.scenarios.plans.schedule import dumps, from_scenario, load, load_all, schedule_from_json, schedule_to_json
from kafka_chaos.scenarios.model.targets import Brokers, EarlierTarget, LeaderOf


@pytest.mark.parametrize("name", catalogue.scenario_names())
def test_every_catalogue_scenario_round_trips(name: str, tmp_path: Path) -> None:
    s = catalogue.by_names([name])[0]
    path = tmp_path / f"{name}.json"
    path.write_text(dumps(from_scenario(s)))
    back = load(path).scenario()
    assert (back.name, back.topics, back.needs, back.requirements) == (s.name, s.topics, s.needs, s.requirements)
    assert [(b.fault, b.target, b.then) for b in back.steps] == [(a.fault, a.target, a.then) for a in s.steps]
    # options come back as JSON has them (lists for tuples): the same faults
    assert schedule_to_json(from_scenario(back)) == schedule_to_json(from_scenario(s))


def _valid() -> dict:
    return {"schedule_version": 1, "name": "gen-1", "cluster": {"brokers": [4, 5, 9]},
            "topics": [{"name": "t", "assignment": {"0": [4, 5], "1": [9, 4]}}],
            "steps": [{"fault": "hard_kill", "target": {"brokers": [4, 5]}},
                      {"fault": "start", "target": {"earlier": 0}},
                      {"fault": "reassignment", "options": {"topic": "t", "moves": [[0, [5, 9]]]}}]}


def test_a_generated_shape_loads_with_gaps_in_the_broker_ids() -> None:
    s = schedule_from_json(_valid())
    assert s.brokers == (4, 5, 9) and s.needs.broker_ids == (4, 5, 9) and s.needs.ids == (4, 5, 9)
    assert [st.target for st in s.steps[:2]] == [Brokers((4, 5)), EarlierTarget(0)]
    assert schedule_from_json(json.loads(dumps(s))) == s
    assert schedule_from_json(schedule_to_json(s)) == s


def test_a_schedule_may_name_its_release() -> None:
    data = _valid()
    data["cluster"]["kafka_version"] = "2.8.2"
    s = schedule_from_json(data)
    assert s.kafka_version == "2.8.2" and schedule_from_json(schedule_to_json(s)) == s
    assert "kafka_version" not in schedule_to_json(schedule_from_json(_valid()))["cluster"]


def test_a_kraft_schedule_may_name_feature_levels_for_its_format() -> None:
    """``cluster.features``: what ``kafka-storage format --feature`` finalizes (KAFKA-19522's entry:
    eligible leader replicas on 4.0.x); they reach the cluster's needs and round-trip."""
    data = _valid()
    data["cluster"].update(mode="kraft", features={"eligible.leader.replicas.version": 1, "group.version": 1})
    s = schedule_from_json(data)
    assert s.needs.features == (("eligible.leader.replicas.version", 1), ("group.version", 1))
    assert "eligible.leader.replicas.version=1" in s.needs.describe()
    assert schedule_from_json(schedule_to_json(s)) == s
    assert "features" not in schedule_to_json(schedule_from_json(_valid()))["cluster"]
    for bad in (-1, True, "1"):
        data["cluster"]["features"] = {"eligible.leader.replicas.version": bad}
        with pytest.raises(UsageError, match="schedule.cluster.features.eligible.leader.replicas.version: must be a "
                                             "feature level"):
            schedule_from_json(data)


def _with(path: str, value):
    data = _valid()
    node = data
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is ...:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize("path, value, message", [
    ("schedule_version", 2, "schedule.schedule_version: must be 1"),
    ("name", "", "schedule.name: must be a non-empty string"),
    ("cluster.brokers", [1, 1], "schedule.cluster.brokers: must be 1 to 9 distinct broker ids"),
    ("cluster.brokers", list(range(10)), "1 to 9 distinct"),
    ("cluster.brokers", [True], "schedule.cluster.brokers[0]: must be an integer >= 0"),
    ("cluster.zookeepers", 2, "schedule.cluster.zookeepers: must be 1, 3 or 5"),
    ("cluster.kafka_version", "4.0.0", "schedule.cluster.kafka_version: Kafka 4.0.0 has no ZooKeeper mode"),
    ("cluster.kafka_version", "2.3.1", "schedule.cluster.kafka_version: Kafka 2.3.1 is not supported"),
    ("cluster.kafka_version", 3.9, "schedule.cluster.kafka_version: must be a non-empty string"),
    ("topics.0.assignment", {"0": [4, 6]}, "schedule.topics[0].assignment.0: must be distinct brokers of the cluster"),
    ("topics.0.assignment", {"1": [4]}, "partitions must be 0..n-1"),
    ("topics.0.assignment", {"0": [4], "1": [4, 5]}, "same replication factor"),
    ("topics.0.assignment", {"²": [4]}, "partition keys are 0, 1, 2"),
    ("steps.0", {"fault": "meteor"}, "schedule.steps[0].fault: unknown fault kind 'meteor'"),
    ("steps.0", {"fault": "hard_kill", "target": {"leader_of": {"topic": "t", "colour": 1}}},
     "schedule.steps[0].target.leader_of: unknown field(s) 'colour'"),
    ("steps.0", {"fault": "hard_kill", "target": {"sideways": {}}}, "unknown selector 'sideways'"),
    ("steps.0", {"fault": "hard_kill", "target": {"brokers": [1], "earlier": 0}}, "must name one selector"),
    ("steps.0", {"fault": "network_partition", "options": {"variant": "smoke"}}, "network_partition: 'variant'"),
    ("steps.0", {"fault": "hard_kill", "then": ["nap"]}, "only 'auto_rebalance'"),
    ("steps.2", {"fault": "reassignment", "options": {"topic": "zz", "moves": []}}, "option 'topic' must be one of"),
    ("extra", 1, "schedule: unknown field(s) 'extra'"),
    ("cluster.features", {"eligible.leader.replicas.version": 1},
     "schedule.cluster.features: feature levels at format time are a KRaft cluster's"),
    # What the file alone decides cannot run on its cluster [4, 5, 9]: refused before a cluster starts.
    ("steps.2", {"fault": "reassignment", "options": {"topic": "t", "moves": [[0, [7, 8]]]}},
     "schedule.steps[2].options: partition 0's replicas [7, 8] name broker(s) [7, 8] not in the cluster [4, 5, 9]"),
    ("steps.0", {"fault": "hard_kill", "target": {"brokers": [4, 6]}},
     "schedule.steps[0].target: broker(s) [6] not in the cluster [4, 5, 9]"),
    ("steps.0", {"fault": "controlled_shutdown", "target": {"broker": {"broker_id": 1}}},
     "schedule.steps[0].target: broker(s) [1] not in the cluster"),
    ("steps.1", {"fault": "start", "target": {"earlier": 2}},
     "schedule.steps[1].target.earlier: step 2 is not an earlier step (this is step 1)"),
    ("steps.1", {"fault": "start", "target": {"earlier": 1}}, "step 1 is not an earlier step"),
    ("steps.1", {"fault": "start", "target": {"brokers": [9]}},
     "schedule.steps[1].target: broker(s) [9] are running here: no earlier step left them down"),
    ("steps.0", {"fault": "restart", "target": {"brokers": [4]}},
     "schedule.steps[1].target.earlier: step 0 (restart) leaves no broker down to start"),
    ("steps.2", {"fault": "recreate_topic", "options": {"topic": "t", "assignment": {"0": [4, 5]}}},
     "schedule.steps[2].options.topic: no earlier step deletes topic 't'"),
    ("steps.2", {"fault": "reassignment", "options": {"topic": "t", "moves": [[0, None]]}},
     "a cancellation (target null) needs \"via\": \"admin\""),
])
def test_bad_schedules_are_one_line_naming_the_field(path: str, value, message: str) -> None:
    with pytest.raises(UsageError) as info:
        schedule_from_json(_with(path, value))
    assert message in str(info.value) and "\n" not in str(info.value)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 12) | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_json_anywhere_is_a_usage_error_or_a_schedule(data) -> None:
    field_path = data.draw(st.sampled_from(["name", "cluster", "cluster.brokers", "topics", "topics.0",
                                            "topics.0.assignment", "topics.0.config", "steps", "steps.0",
                                            "steps.1", "steps.2", "doc"]))
    try:
        schedule_from_json(_with(field_path, data.draw(JSON)))
    except UsageError as exc:
        assert "\n" not in str(exc)


def test_files_and_the_cli(tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_valid()))
    assert main(["schedule", "check", str(good)]) == 0
    assert "gen-1: 3 brokers [4, 5, 9], 1 topic(s), 3 step(s)" in capsys.readouterr().out
    for name, text, message in [("bad.json", "{", "bad.json: not JSON"), ("deep.json", "[" * 100000, "deep.json")]:
        (tmp_path / name).write_text(text)
        assert main(["schedule", "check", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert main(["schedule", "check", str(tmp_path / "missing.json")]) == 2
    with pytest.raises(UsageError, match="distinct within a run: gen-1"):
        load_all([good, good])
    assert main(["schedule", "export", "leader_hard_kill", "--out", str(tmp_path / "out")]) == 0
    assert load(tmp_path / "out" / "leader_hard_kill.json").steps[0].target == LeaderOf("t", 0)
    assert main(["run", "--schedule", str(good), "--scenario", "leader_hard_kill"]) == 2


TOTAL_OUTAGE = [{"fault": "hard_kill", "target": {"brokers": [4, 5, 9]}},
                {"fault": "start", "target": {"brokers": [5]}}, {"fault": "start", "target": {"brokers": [4, 9]}}]


@pytest.mark.parametrize("steps", [
    TOTAL_OUTAGE,  # every broker killed, then started again: legal, judged by the checks
    [{"fault": "controller_kill", "target": {"controller": {}}}, {"fault": "start", "target": {"earlier": 0}}],
    # only the cluster knows which broker the controller was: a named start cannot be refused
    [{"fault": "controller_kill", "target": {"controller": {}}}, {"fault": "start", "target": {"brokers": [9]}}],
    [{"fault": "controlled_shutdown", "target": {"broker": 5}}, {"fault": "start", "target": {"brokers": [5]}}],
    [{"fault": "add_partitions", "options": {"topic": "t", "add": [[2, [9, 5]]], "via": "znode"}}],
])
def test_legal_schedules_are_not_refused(steps: list) -> None:
    data = _valid()
    data["steps"] = steps
    assert len(schedule_from_json(data).steps) == len(steps)


def test_a_start_of_a_broker_started_already_is_refused() -> None:
    data = _valid()
    data["steps"] = TOTAL_OUTAGE + [{"fault": "start", "target": {"brokers": [5]}}]
    with pytest.raises(UsageError, match=r"schedule.steps\[3\].target: broker\(s\) \[5\] are running here"):
        schedule_from_json(data)
    data["steps"][1] = {"fault": "add_partitions", "options": {"topic": "t", "add": [[2, [9, 6]]], "via": "znode"}}
    with pytest.raises(UsageError, match=r"schedule.steps\[1\].options: partition 2's replicas \[9, 6\]"):
        schedule_from_json(data)


def test_named_ids_are_never_grown() -> None:
    s = schedule_from_json(_valid()).scenario()
    assert catalogue.with_brokers(s, 6) is s
    assert replace(s.needs, broker_ids=()).ids == (1, 2, 3)

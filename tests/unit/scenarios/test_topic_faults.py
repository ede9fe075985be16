"""Topic deletion and partition growth in the step pipeline: the fault kinds, the
generator's rules, the history codec, the convergence predicate and the checks that a partition
without a state znode or a topic queued for deletion needs."""

from __future__ import annotations

import json

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import AddPartitions, ClusterState, DeleteTopic, PartitionPhase, PartitionState, TopicPartition, TopicState
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.checks.functions import ELECTED, UNCLEAN_ELECTED, check_epoch, observed_class
from kafka_chaos.scenarios.clients.codec import state_from_dict, state_to_dict
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.plans.generator import ClusterModel, IllegalStep
from kafka_chaos.scenarios.model.snapshots import cluster_state_of, mismatches
from kafka_chaos.scenarios.plans.schedule import Schedule, dumps, schedule_from_json
from kafka_chaos.scenarios.model.targets import Brokers, NoTarget, Target

TOPICS = {"topic_names": {"t": "phys-t", "d": "phys-d"}, "topic_partitions": {"t": (0, 1), "d": (0,)}}
ONE = Target((1,), "broker 1")


def _zk(topic: str, partition: int, replicas: tuple[int, ...], leader: int, isr: tuple[int, ...],
        epoch: int, version: int = 0) -> PartitionZkState:
    return PartitionZkState(topic, partition, replicas, leader, epoch, isr, 1, 0, version)


def _snapshot(partitions: list[PartitionZkState], deleting: frozenset[str] = frozenset()) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers={1: 10, 2: 11}, controller=1, controller_epoch=1,
                      partitions={(p.topic, p.partition): p for p in partitions},
                      topic_configs={p.topic: {} for p in partitions}, pending_reassignment=False,
                      topic_ids={p.topic: "id" for p in partitions}, topics_being_deleted=deleting)


def test_the_fault_kinds_build_their_oracle_events_and_refuse_bad_options() -> None:
    delete = make_fault("delete_topic", ONE, {"topic": "d"}, **TOPICS)
    assert delete.oracle_events() == [DeleteTopic("phys-d")] and delete.holds == () and delete.requires == frozenset()
    add = make_fault("add_partitions", ONE, {"topic": "t", "add": [[2, [3, 1]]], "via": "znode"}, **TOPICS)
    assert add.oracle_events() == [AddPartitions("phys-t", {2: (3, 1)})]
    for options in ({"topic": "t", "add": []}, {"topic": "t", "add": [[2, [1, 1]]]}, {"topic": "t"},
                    {"topic": "t", "add": [[2, [1]]], "via": "zk"}, {"topic": "d", "extra": 1}):
        kind = "delete_topic" if "extra" in options else "add_partitions"
        with pytest.raises(UsageError):
            make_fault(kind, ONE, options, **TOPICS)


def test_generator_rules_delete_only_unproduced_topics_and_grow_by_the_next_partition() -> None:
    t = TopicSpec("t", {0: (1, 2)})
    d = TopicSpec("d", {0: (2, 3)}, workload=False)
    model = ClusterModel.of(Schedule("s", (1, 2, 3), (t, d), ()))
    model.apply(Step("hard_kill", Brokers((3,))))
    with pytest.raises(IllegalStep, match="workload"):
        model.apply(Step("delete_topic", NoTarget(), {"topic": "t"}))
    with pytest.raises(IllegalStep, match="registered"):  # the AdminClient refuses a stopped broker
        model.apply(Step("add_partitions", NoTarget(), {"topic": "t", "add": [[1, [3, 1]]]}))
    with pytest.raises(IllegalStep, match="next partition"):
        model.apply(Step("add_partitions", NoTarget(), {"topic": "t", "add": [[2, [3, 1]]], "via": "znode"}))
    model.apply(Step("add_partitions", NoTarget(), {"topic": "t", "add": [[1, [3, 1]]], "via": "znode"}))
    assert model.topics["t"].assignment[1] == (3, 1)
    model.apply(Step("delete_topic", NoTarget(), {"topic": "d"}))  # its replica 3 is down: allowed
    assert "d" not in model.topics
    with pytest.raises(IllegalStep, match="unknown topic"):
        model.apply(Step("delete_topic", NoTarget(), {"topic": "d"}))


def test_an_unproduced_topic_round_trips_through_a_schedule_file() -> None:
    s = Schedule("s", (1, 2), (TopicSpec("t", {0: (1, 2)}), TopicSpec("d", {0: (2,)}, workload=False)),
                 (Step("delete_topic", NoTarget("d"), {"topic": "d"}),))
    text = dumps(s)
    assert '"workload": false' in text and text.count('"workload"') == 1
    assert schedule_from_json(json.loads(text)) == s


def test_the_history_codec_keeps_deletions_and_failed_directories() -> None:
    tp = TopicPartition("t", 0)
    state = ClusterState(frozenset({1, 2}), {"t": TopicState({0: PartitionState((1, 2), -1, (2,), 5)})}, 1,
                         topics_being_deleted=frozenset({"t"}), offline_replicas={2: frozenset({tp})})
    assert state_from_dict(json.loads(json.dumps(state_to_dict(state)))) == state
    plain = ClusterState(frozenset({1}), {}, 1)
    assert set(state_to_dict(plain)) == {"live_brokers", "controller", "config", "topics"}  # old shape


def test_the_convergence_predicate_knows_deleted_and_queued_topics() -> None:
    pending = _snapshot([_zk("d", 0, (1, 3), -1, (1,), 4)], frozenset({"d"}))
    before = cluster_state_of(pending, ["d"], {})
    assert before.topics_being_deleted == {"d"}
    assert mismatches(pending, before, ["d"]) == []
    gone = ClusterState(frozenset({1, 2}), {}, 1)
    assert mismatches(pending, gone, ["d"]) == ["topic d still exists"]
    assert mismatches(_snapshot([]), gone, ["d"]) == []
    not_queued = ClusterState(before.live_brokers, before.topics, 1)
    assert mismatches(pending, not_queued, ["d"]) == ["topic d queued for deletion"]


def test_a_new_partition_without_state_is_checked_as_such() -> None:
    new = PartitionState((3,), -1, (), 0, phase=PartitionPhase.NEW)
    no_znode = _zk("t", 6, (3,), -1, (), -1, version=-1)
    assert check_epoch("t", 6, no_znode, new, no_znode, exact=True).passed is True
    written = _zk("t", 6, (3,), 3, (3,), 0)
    assert check_epoch("t", 6, no_znode, new, written, exact=True).passed is False
    # its first leader is an initialisation, not an unclean election
    assert observed_class(no_znode, written) == ELECTED
    lost = _zk("t", 0, (1, 3), 1, (1,), 4)
    assert observed_class(lost, _zk("t", 0, (1, 3), 3, (3,), 5)) == UNCLEAN_ELECTED


def test_the_cluster_verbs_refuse_bad_input_in_one_line(tmp_path, capsys) -> None:
    from kafka_chaos.cli.main import main

    assert main(["cluster", "add-partitions", "t", "--replicas", "1,a", "--state-dir", str(tmp_path)]) == 2
    assert main(["cluster", "add-partitions", "t", "--replicas", "1,1", "--state-dir", str(tmp_path)]) == 2
    assert main(["cluster", "delete-topic", "t", "--state-dir", str(tmp_path)]) == 2  # no cluster there
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and "Traceback" not in err and "expected comma-separated broker ids" in err


def test_a_recreated_topic_is_the_oracles_create_topic_with_the_assignment_given() -> None:
    from kafka_chaos.oracle import CreateTopic

    topics = {"topic_names": {"d": "phys-d"}, "topic_partitions": {"d": (0,)}}
    fault = make_fault("recreate_topic", Target((), "d"), {"topic": "d", "assignment": {"0": [3, 1, 2]}}, **topics)
    assert fault.oracle_events() == [CreateTopic("phys-d", {0: (3, 1, 2)})]
    for options, message in [({"topic": "d"}, "option 'assignment' is required"),
                              ({"topic": "d", "assignment": {"1": [1]}}, "needs partitions 0..n-1"),
                              ({"topic": "d", "assignment": {"0": [1, 1]}}, "distinct replicas"),
                              ({"topic": "d", "assignment": {"0": [1]}, "via": "x"}, r"unknown option\(s\) 'via'")]:
        with pytest.raises(UsageError, match=message):
            make_fault("recreate_topic", Target((), "d"), options, **topics)


def test_the_generator_recreates_only_a_deleted_topic_with_a_live_replica_in_every_partition() -> None:
    import random

    from kafka_chaos.scenarios.faults import GENERATORS
    from kafka_chaos.scenarios.faults.generation import Draw

    model = ClusterModel((1, 2, 3), {"d": TopicSpec("d", {0: (1, 2)}, workload=False)}, live={1, 3})
    side = GENERATORS["recreate_topic"]
    assert side.candidates(model, Draw(random.Random(1), ())) == []  # nothing deleted yet
    with pytest.raises(IllegalStep, match="no step deleted it"):
        side.apply(model, Step("recreate_topic", NoTarget("d"), {"topic": "d", "assignment": {"0": [1, 2]}}), None)
    GENERATORS["delete_topic"].apply(model, Step("delete_topic", NoTarget("d"), {"topic": "d"}), None)
    with pytest.raises(IllegalStep, match="without a live replica"):
        side.apply(model, Step("recreate_topic", NoTarget("d"), {"topic": "d", "assignment": {"0": [2]}}), None)
    for seed in range(10):
        [step] = side.candidates(model, Draw(random.Random(seed), ()))
        assert set(step.options["assignment"]["0"]) & {1, 3}
    side.apply(model, Step("recreate_topic", NoTarget("d"), {"topic": "d", "assignment": {"0": [2, 3]}}), None)
    assert model.topics["d"].assignment == {0: (2, 3)} and model.deleted == {}

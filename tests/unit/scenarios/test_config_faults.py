"""The configuration faults (scenarios.faults.configs) and a reassignment's cancellation
(scenarios.faults.admin): options, oracle events, refusals, and their generator side."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.oracle import Reassign, TopicConfigChange
from kafka_chaos.scenarios.faults import GENERATORS, make_fault
from kafka_chaos.scenarios.faults.configs import config_changes
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, IllegalStep
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import NoTarget, Target
from tests.unit.oracle.builders import cluster, part

NONE = Target((), "cluster")
TOPICS: dict[str, Any] = {"topic_names": {"t": "phys-t"}, "topic_partitions": {"t": (0, 1)}}


@pytest.mark.parametrize("options, changes", [
    ({"set": {"min.insync.replicas": 2}}, {"min.insync.replicas": "2"}),
    ({"set": {"unclean.leader.election.enable": True}}, {"unclean.leader.election.enable": "true"}),
    ({"delete": ["retention.ms"]}, {"retention.ms": None}),
    ({"set": {"a": "1"}, "delete": ["b"]}, {"a": "1", "b": None}),
])
def test_set_and_delete_make_one_change(options: dict[str, Any], changes: dict[str, str | None]) -> None:
    assert config_changes("topic_config", options) == changes


@pytest.mark.parametrize("options, message", [
    ({}, "nothing to change"),
    ({"set": {"a": None}}, "cannot set 'a' to None"),
    ({"set": {"a": "1"}, "delete": ["a"]}, "cannot delete 'a'"),
    ({"set": ["a"]}, "'set' must map"),
])
def test_bad_changes_are_one_line(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        config_changes("topic_config", options)


def test_a_topic_config_change_is_the_oracles_topic_config_change() -> None:
    fault = make_fault("topic_config", NONE, {"topic": "t", "set": {"min.insync.replicas": 2}, "delete": ["x"]},
                       **TOPICS)
    assert fault.oracle_events() == [TopicConfigChange("phys-t", {"min.insync.replicas": "2", "x": None})]
    assert fault.label == "topic_config phys-t: min.insync.replicas=2, -x"
    with pytest.raises(UsageError, match=r"unknown option\(s\) 'via'"):
        make_fault("topic_config", NONE, {"topic": "t", "set": {"a": 1}, "via": "znode"}, **TOPICS)


def test_a_broker_config_change_moves_no_partition_and_refuses_what_the_controller_reads() -> None:
    fault = make_fault("broker_config", NONE, {"broker": "default", "delete": ["log.cleaner.threads"]}, **TOPICS)
    assert fault.oracle_events() == [] and fault.label == "broker_config default: -log.cleaner.threads"
    with pytest.raises(UsageError, match="unclean.leader.election.enable as a dynamic broker default is not modelled"):
        make_fault("broker_config", NONE, {"broker": 1, "set": {"unclean.leader.election.enable": True}}, **TOPICS)
    with pytest.raises(UsageError, match="'broker' must be a broker id or 'default'"):
        make_fault("broker_config", NONE, {"broker": True, "set": {"a": 1}}, **TOPICS)


def test_a_cancellation_reassigns_a_partition_being_reassigned_to_its_original_replicas_and_nothing_else() -> None:
    cancel = make_fault("reassignment", NONE, {"topic": "t", "moves": [[0, None], [1, None]], "via": "admin"},
                        **TOPICS)
    assert cancel.oracle_events() == []  # before prepare(): only the explicit targets are known
    moving = part((1, 2, 3), 1, (1, 2), 1, adding=(3,))
    before = cluster((1, 2, 3), {"phys-t": {0: moving, 1: part((2, 1), 2, (2, 1))}})
    cancel.prepare(None, before)  # type: ignore[arg-type]  # the environment is not read
    assert cancel.oracle_events() == [Reassign("phys-t", 0, (1, 2))]
    with pytest.raises(UsageError, match="a cancellation \\(target null\\) needs \"via\": \"admin\""):
        make_fault("reassignment", NONE, {"topic": "t", "moves": [[0, None]]}, **TOPICS)


def test_a_kraft_cancellation_is_the_models_revert_and_sends_what_kafka_refuses_apart(monkeypatch) -> None:
    """KRaft: every cancelled partition is a CancelReassignment (the controller reverts, or refuses);
    the refused ones (no reassignment in progress here) go in a request of their own, whose refusal
    is the outcome predicted."""
    from kafka_chaos.harness import metadata
    from kafka_chaos.oracle import CancelReassignment, ClusterState, Mode, PartitionState, TopicState

    cancel = make_fault("reassignment", NONE, {"topic": "t", "moves": [[0, None], [1, None]], "via": "admin"},
                        **TOPICS)
    assert cancel.modes == {"zookeeper", "kraft"}  # not a migrating cluster's
    moving = PartitionState((3, 1, 2), 1, (1, 2), 4, adding_replicas=(3,), removing_replicas=(2,), partition_epoch=9)
    before = ClusterState(frozenset({1, 2}), {"phys-t": TopicState(
        {0: moving, 1: PartitionState((2, 1), 2, (2, 1), 0, partition_epoch=0)})}, controller=3000, mode=Mode.KRAFT)
    cancel.prepare(None, before)  # type: ignore[arg-type]  # the environment is not read
    assert cancel.oracle_events() == [CancelReassignment("phys-t", 0), CancelReassignment("phys-t", 1)]
    sent: list[dict[str, Any]] = []

    def alter(bootstrap: str, moves: dict[str, Any], timeout: float = 30.0) -> None:
        sent.append(moves)
        if moves == {"phys-t": {1: None}}:
            raise metadata.MetadataError("AlterPartitionReassignments refused by way of b: phys-t-1: "
                                         "NO_REASSIGNMENT_IN_PROGRESS")

    class Env:
        bootstrap = "b"

    monkeypatch.setattr(metadata, "alter_partition_reassignments", alter)
    cancel.inject(Env())  # type: ignore[arg-type]
    assert sent == [{"phys-t": {0: None}}, {"phys-t": {1: None}}]
    sent.clear()

    def refuse_all(bootstrap: str, moves: dict[str, Any], timeout: float = 30.0) -> None:
        sent.append(moves)
        raise metadata.MetadataError("AlterPartitionReassignments refused by way of b: phys-t-0: NOT_CONTROLLER")

    monkeypatch.setattr(metadata, "alter_partition_reassignments", refuse_all)
    with pytest.raises(metadata.MetadataError, match="NOT_CONTROLLER"):  # not the refusal predicted
        cancel.inject(Env())  # type: ignore[arg-type]


def _model() -> ClusterModel:
    return ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2), 1: (2, 3)})}, live={1, 2, 3})


def test_the_generator_keeps_min_insync_replicas_within_the_replication_factor_and_tracks_the_config() -> None:
    side, model = GENERATORS["topic_config"], _model()
    side.apply(model, Step("topic_config", NoTarget("t config"), {"topic": "t", "set": {"min.insync.replicas": "2"}}),
               None)
    assert model.topics["t"].config == {"min.insync.replicas": "2"}
    with pytest.raises(IllegalStep, match="above its replication factor 2"):
        side.apply(model, Step("topic_config", NoTarget("t"), {"topic": "t", "set": {"min.insync.replicas": "3"}}),
                   None)
    # a reassignment later shrinks t-0 to one replica: its other settings still change (generator
    # property test, seed 7204839 schedule 2600: IllegalStep raised by generate itself)
    shrunk = ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1,), 1: (2, 3)}, {"min.insync.replicas": "2"})},
                          live={1, 2, 3})
    side.apply(shrunk, Step("topic_config", NoTarget("t"), {"topic": "t", "set": {"segment.bytes": "16777216"}}), None)
    assert shrunk.topics["t"].config == {"min.insync.replicas": "2", "segment.bytes": "16777216"}
    side.apply(model, Step("topic_config", NoTarget("t"), {"topic": "t", "delete": ["min.insync.replicas"]}), None)
    assert model.topics["t"].config == {}
    with pytest.raises(IllegalStep, match="unknown broker 9"):
        GENERATORS["broker_config"].apply(model, Step("broker_config", NoTarget("b"), {"broker": 9, "set": {"a": "1"}}),
                                          None)
    # Found by `explore --mode kraft --seed 78`: a config change asked of a killed broker.
    model.live.discard(3)
    with pytest.raises(IllegalStep, match="broker_config of broker 3: it may be down"):
        GENERATORS["broker_config"].apply(model, Step("broker_config", NoTarget("b"), {"broker": 3, "set": {"a": "1"}}),
                                          None)
    GENERATORS["broker_config"].apply(model, Step("broker_config", NoTarget("b"),
                                                  {"broker": "default", "set": {"a": "1"}}), None)
    for seed in range(20):
        [step] = GENERATORS["broker_config"].candidates(model, Draw(random.Random(seed), ()))
        assert step.options["broker"] != 3


@pytest.mark.parametrize("seed", range(20))
def test_every_drawn_config_change_is_legal_and_builds(seed: int) -> None:
    model = _model()
    for kind in ("topic_config", "broker_config"):
        for step in GENERATORS[kind].candidates(model, Draw(random.Random(seed), ())):
            GENERATORS[kind].apply(model, step, None)
            make_fault(step.fault, NONE, step.options, **TOPICS)


def test_two_cleaner_threads_are_drawn_with_a_dedupe_buffer_kafka_accepts_for_them() -> None:
    """KafkaConfig.validateValues wants more than 1 MiB of log.cleaner.dedupe.buffer.size per
    cleaner thread; the harness's buffer is 2 MiB, so `log.cleaner.threads=2` alone was refused
    (INVALID_REQUEST; explore --mode kraft --seed 7702 on 4.4.0, schedule 0)."""
    from kafka_chaos.harness.config import LOG_CLEANER_DEDUPE_BUFFER_SIZE, chaos_cluster_defaults

    harness_buffer = int(chaos_cluster_defaults(3)[LOG_CLEANER_DEDUPE_BUFFER_SIZE])
    assert harness_buffer // 2 <= 1024 * 1024  # why: two threads on the harness's buffer alone are refused
    drawn = set()
    for seed in range(200):
        [step] = GENERATORS["broker_config"].candidates(_model(), Draw(random.Random(seed), ()))
        changes = step.options["set"]
        threads = changes.get("log.cleaner.threads")
        if threads is None:
            assert LOG_CLEANER_DEDUPE_BUFFER_SIZE not in changes
            continue
        drawn.add(threads)
        buffer = int(changes.get(LOG_CLEANER_DEDUPE_BUFFER_SIZE, harness_buffer))
        assert buffer // int(threads) > 1024 * 1024, changes
    assert drawn == {"1", "2"}

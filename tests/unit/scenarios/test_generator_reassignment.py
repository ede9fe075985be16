"""Reassignments the generator may draw: only of partitions whose every replica is up, so the
reassignment can complete and the next step's settle wait passes. Found by `kafka-chaos explore
--seed 7 --faults ...,log_dir_failure,reassignment`: broker 7, the only replica of t0-0, was
killed, then t0-0 was moved to [9]; Kafka 3.9 kept it pending (adding [9], removing [7], no
leader), as the oracle predicted, and every later step waited 90 s for a settled cluster."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.faults import GENERATORS
from kafka_chaos.scenarios.faults.generation import Draw
from kafka_chaos.scenarios.plans.generator import REPERTOIRE, ClusterModel, GeneratorConfig, IllegalStep, generate
from kafka_chaos.scenarios.plans.schedule import Schedule
from kafka_chaos.scenarios.model.targets import Brokers


def _model() -> ClusterModel:
    s = Schedule("x", (7, 8, 9), (TopicSpec("t0", {0: (7,), 1: (8, 9)}),), ())
    return ClusterModel.of(s)


def test_a_partition_whose_replica_is_down_is_not_moved() -> None:
    model = _model()
    model.apply(Step("hard_kill", Brokers((7,))))
    with pytest.raises(IllegalStep, match="a current replica is down"):
        model.apply(Step("reassignment", options={"topic": "t0", "moves": [[0, [9]]]}))
    model.apply(Step("reassignment", options={"topic": "t0", "moves": [[1, [9]]]}))  # both replicas up
    draw = Draw(random.Random(1), ())
    for _ in range(50):  # t0-1 is the only partition the generator may move now
        for step in GENERATORS["reassignment"].candidates(model, draw):
            assert step.options["moves"][0][0] == 1


def test_the_model_follows_a_reassignment_to_its_new_replicas() -> None:
    model = _model()
    model.apply(Step("reassignment", options={"topic": "t0", "moves": [[1, [9]]]}))
    assert model.topics["t0"].assignment[1] == (9,)
    model.apply(Step("hard_kill", Brokers((8,))))
    model.apply(Step("reassignment", options={"topic": "t0", "moves": [[1, [7, 9]]]}))  # 8 no longer holds it


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**31), index=st.integers(0, 1000))
def test_no_generated_reassignment_moves_a_partition_with_a_replica_down(seed: int, index: int) -> None:
    schedule = generate(seed, index, GeneratorConfig(faults=REPERTOIRE, steps=10))
    model = ClusterModel.of(schedule)
    for step in schedule.steps:
        if step.fault == "reassignment":
            for p, _ in step.options["moves"]:
                assert model.can_move(step.options["topic"], p)
        model.apply(step)

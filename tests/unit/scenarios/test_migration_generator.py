"""`explore --mode migration`: generated migration schedules are legal by construction, walk the
phases only the documented ways, and leave the other modes' seeds as they were."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, NoTarget
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, default_faults, generate, problems
from kafka_chaos.scenarios.plans.schedule import Schedule

MIGRATION_STEPS = {"migration_provision", "migration_roll", "migration_finalize", "migration_deprovision"}
CONFIG = GeneratorConfig(steps=14, mode="migration", faults=default_faults("migration"))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 50))
def test_every_generated_migration_schedule_is_legal_and_walks_the_documented_phases(seed: int, index: int) -> None:
    schedule = generate(seed, index, CONFIG)
    assert problems(schedule) == []
    assert schedule.mode == "migration" and schedule.controllers == 3
    roles = {b: "zk" for b in schedule.brokers}
    provisioned = False
    for step in schedule.steps:
        if step.fault == "migration_provision":
            assert not provisioned and set(roles.values()) == {"zk"}
            provisioned = True
        elif step.fault == "migration_deprovision":
            assert provisioned and set(roles.values()) == {"hybrid"}
            provisioned = False
        elif step.fault == "migration_finalize":
            assert set(roles.values()) == {"kraft"}
        elif step.fault == "migration_roll":
            for b in step.target.broker_ids:  # type: ignore[attr-defined]
                roles[b] = step.options["to"]
        elif step.fault.startswith("quorum_"):
            assert provisioned, "quorum faults only once the controllers run"


def test_the_other_modes_never_draw_a_migration_step() -> None:
    for mode in ("zookeeper", "kraft"):
        config = GeneratorConfig(steps=12, mode=mode, faults=default_faults(mode))
        assert not MIGRATION_STEPS & set(config.faults)
        for index in range(20):
            assert not {s.fault for s in generate(11, index, config).steps} & MIGRATION_STEPS


def test_some_seeds_reach_each_phase() -> None:
    reached = {s.fault + (f"/{s.options.get('to')}" if s.fault == "migration_roll" else "")
               for i in range(80) for s in generate(3, i, CONFIG).steps}
    assert {"migration_provision", "migration_roll/hybrid", "migration_roll/kraft", "migration_finalize",
            "migration_deprovision", "migration_roll/zk"} <= reached


def _model() -> ClusterModel:
    schedule = Schedule("m", (1, 2, 3), generate(1, 0, CONFIG).topics, (), mode="migration", controllers=3)
    return ClusterModel.of(schedule)


@pytest.mark.parametrize(("steps", "why"), [
    ([Step("migration_roll", Brokers((1,)), {"to": "hybrid"})], "needs the controllers"),
    ([Step("migration_provision", NoTarget()), Step("migration_roll", Brokers((1,)), {"to": "kraft"})],
     "cannot roll from zk to kraft"),
    ([Step("migration_provision", NoTarget()), Step("migration_roll", Brokers((1,)), {"to": "hybrid"}),
      Step("migration_roll", Brokers((1,)), {"to": "kraft"})], "once the metadata is copied"),
    ([Step("migration_provision", NoTarget()), Step("migration_finalize", NoTarget())], "every broker a KRaft broker"),
    ([Step("migration_provision", NoTarget()), Step("hard_kill", Brokers((2,))),
      Step("migration_roll", Brokers((1,)), {"to": "hybrid"})], "down or held"),
    ([Step("quorum_leader_kill", NoTarget())], "needs KRaft controllers"),
])
def test_illegal_migration_steps_are_refused_with_the_reason(steps: list[Step], why: str) -> None:
    model = _model()
    with pytest.raises(IllegalStep, match=why):
        for step in steps:
            model.apply(step)

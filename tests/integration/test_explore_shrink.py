"""A deliberately wrong oracle rule makes a generated schedule fail on a real cluster, and the
shrinker brings it down to at most 2 steps that still fail the same check."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path

from kafka_chaos.app.explore import Explorer, ShrinkBudget, explore_one
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.oracle import ClusterState, ControlledShutdown, Outcome, Prediction, predict
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate
from kafka_chaos.scenarios.run.pool import ClusterPool
from kafka_chaos.scenarios.run.runner import RunOptions
from kafka_chaos.scenarios.plans.schedule import load

# Two preferred elections, then a controlled shutdown of t0-0's leader (broker 9) over brokers 2,
# 5, 9; RF 3. No step waits for a session to expire (a hard kill or a hard restart did, in every
# run of the original and of each shrink trial), and the shrinker must still drop two steps.
SEED, INDEX = 11, 280
CONFIG = GeneratorConfig(steps=3, brokers=3, max_partitions=3, topics=1,
                         faults=("hard_kill", "start", "controlled_shutdown", "preferred_election", "restart"))


def calls_controlled_shutdowns_unclean(state: ClusterState, events) -> Prediction:
    """The real oracle, except that every partition a controlled shutdown touches is said to get
    an unclean election — leaders, ISRs and epochs stay right, so only oracle_outcome fails."""
    right = predict(state, events)
    shutdowns = {i for i, e in enumerate(events) if isinstance(e, ControlledShutdown)}
    if not shutdowns:
        return right

    def wrong(outcomes):
        return tuple(replace(o, outcome=Outcome.UNCLEAN_ELECTED) if o.event_index in shutdowns else o
                     for o in outcomes)

    alternatives = tuple(replace(a, outcomes=wrong(a.outcomes)) for a in right.alternatives)
    return replace(right, outcomes=alternatives[0].outcomes, alternatives=alternatives)


def test_a_wrong_rule_fails_a_generated_schedule_and_it_shrinks_to_two_steps_or_fewer(tmp_path: Path) -> None:
    schedule = generate(SEED, INDEX, CONFIG)
    assert [s.fault for s in schedule.steps] == ["preferred_election", "preferred_election", "controlled_shutdown"]
    lines: list[str] = []
    distribution = resolve_distribution(None, None)
    options = RunOptions(run_id=uuid.uuid4().hex[:12], seed=SEED, results_dir=tmp_path,
                         kafka_version=distribution.version)
    pool = ClusterPool("local", distribution, lines.append)
    explorer = Explorer(tmp_path, pool, options, lines.append, predictor=calls_controlled_shutdowns_unclean)
    try:
        failure = explore_one(explorer, SEED, INDEX, CONFIG, ShrinkBudget(300.0, confirm=1))
    finally:
        pool.release()
    assert failure["failed"] and (failure["check"], failure["fault"]) == ("oracle_outcome", "controlled_shutdown")
    assert failure["class"] == "model" and failure["confirmed"] and failure["reproduced"] == "1/1"
    minimal = load(Path(failure["file"]))
    assert 1 <= len(minimal.steps) <= 2 and minimal.steps[-1].fault == "controlled_shutdown"
    assert failure["replay"] == f"kafka-chaos run --schedule {failure['file']}"
    assert json.loads(Path(failure["file"]).read_text())["doc"].startswith("model: oracle_outcome failed")
    assert any("shrunk to" in line for line in lines)

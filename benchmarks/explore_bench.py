"""Figures for `kafka-chaos explore` on the local backend:

* checked steps per 10 minutes with 3 and 6 brokers (explore for ``--minutes`` each, scaled);
* disagreements per 100 generated steps, by triage class (the real oracle: every failure found);
* the shrink time of a 10-step failing schedule (a deliberately wrong oracle rule: every
  partition a controlled shutdown touches is said to be elected uncleanly).

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/explore_bench.py --minutes 3

Prints one line per figure; writes nothing outside a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_chaos.app.explore import Explorer, ShrinkBudget, explore_one  # noqa: E402
from kafka_chaos.app.runs import quiet_client_logs  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.oracle import ClusterState, ControlledShutdown, Outcome, Prediction, predict  # noqa: E402
from kafka_chaos.scenarios.plans.generator import REPERTOIRE, GeneratorConfig, generate  # noqa: E402
from kafka_chaos.scenarios.run.pool import ClusterPool  # noqa: E402
from kafka_chaos.scenarios.run.runner import RunOptions  # noqa: E402

LOCAL_FAULTS = tuple(k for k in REPERTOIRE if k != "network_partition")


def unclean_after_controlled_shutdown(state: ClusterState, events) -> Prediction:
    right = predict(state, events)
    shutdowns = {i for i, e in enumerate(events) if isinstance(e, ControlledShutdown)}
    if not shutdowns:
        return right
    alternatives = tuple(replace(a, outcomes=tuple(
        replace(o, outcome=Outcome.UNCLEAN_ELECTED) if o.event_index in shutdowns else o for o in a.outcomes))
        for a in right.alternatives)
    return replace(right, outcomes=alternatives[0].outcomes, alternatives=alternatives)


def _explorer(directory: Path, seed: int, predictor=None) -> tuple[Explorer, ClusterPool]:
    distribution = resolve_distribution(None, None)
    options = RunOptions(run_id=uuid.uuid4().hex[:12], seed=seed, results_dir=directory,
                         kafka_version=distribution.version)
    pool = ClusterPool("local", distribution, lambda _: None)
    return Explorer(directory, pool, options, lambda _: None, predictor=predictor), pool


def steps_per_ten_minutes(brokers: int, minutes: float, seed: int, root: Path) -> None:
    config = GeneratorConfig(steps=6, brokers=brokers, faults=LOCAL_FAULTS)
    explorer, pool = _explorer(root / f"b{brokers}", seed)
    ns = ShrinkBudget(0.0, confirm=0)
    started, steps, schedules, classes = time.monotonic(), 0, 0, {}
    try:
        while time.monotonic() - started < minutes * 60:
            result = explore_one(explorer, seed, schedules, config, ns)
            steps += result["steps_checked"]
            schedules += 1
            if result.get("failed"):
                classes[result["class"]] = classes.get(result["class"], 0) + 1
    finally:
        pool.release()
    elapsed = time.monotonic() - started
    print(f"{brokers} brokers: {steps} checked steps in {schedules} schedules over {elapsed:.0f} s "
          f"= {steps * 600 / elapsed:.0f} checked steps per 10 minutes; failing schedules by class "
          f"{classes or '{}'} = {sum(classes.values()) * 100 / max(steps, 1):.1f} per 100 steps", flush=True)


def shrink_ten_steps(seed: int, root: Path) -> None:
    config = GeneratorConfig(steps=10, brokers=3, max_partitions=6, faults=LOCAL_FAULTS)
    index = next(i for i in range(1000) if len(generate(seed, i, config).steps) == 10
                 and any(s.fault == "controlled_shutdown" for s in generate(seed, i, config).steps[:3]))
    explorer, pool = _explorer(root / "shrink", seed, unclean_after_controlled_shutdown)
    started = time.monotonic()
    try:
        result = explore_one(explorer, seed, index, config, ShrinkBudget(900.0, confirm=0))
    finally:
        pool.release()
    print(f"shrink: schedule {index} of seed {seed}, 10 steps -> {result.get('minimal_steps')} step(s) in "
          f"{time.monotonic() - started:.0f} s wall (first run included), {explorer.trials} cluster trials; "
          f"failure {result.get('check')} after {result.get('fault')} ({result.get('class')})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="exploration time per broker count")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--skip-explore", action="store_true")
    parser.add_argument("--skip-shrink", action="store_true")
    parser.add_argument("--keep", type=Path, default=None, help="keep the results here (else a temporary dir)")
    args = parser.parse_args()
    quiet_client_logs()
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-explore-bench-") as tmp:
        root = args.keep or Path(tmp)
        if not args.skip_explore:
            for brokers in (3, 6):
                steps_per_ten_minutes(brokers, args.minutes, args.seed, root)
        if not args.skip_shrink:
            shrink_ten_steps(args.seed, root)


if __name__ == "__main__":
    main()

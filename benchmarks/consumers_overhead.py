"""What the consumers (an assign-mode and a group consumer per topic, every poll
recorded) cost: the same scenarios run with and without them, on one local cluster each time.

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/consumers_overhead.py \
        [--scenario leader_hard_kill --scenario controlled_shutdown_leader | --suite conformance] [--rounds 1]

Prints, per mode, the wall time of each scenario iteration (the runner's ``seconds``), the mean
time of a fault step (``finished_at - started_at`` of its observation: settle, inject, converge,
measure) and the size of history.jsonl. Figures only; runs one cluster at a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.app.runs import run_scenarios  # noqa: E402
from kafka_chaos.scenarios.plans.catalogue import by_names, select  # noqa: E402


def one(scenarios: list[Any], consumers: bool, out: Path) -> dict[str, float]:
    started = time.monotonic()
    run_scenarios(scenarios, seed=7, results_dir=out, report=False, runner_options={"consumers": consumers})
    wall = time.monotonic() - started
    steps = []
    for line in (out / "history.jsonl").read_text().splitlines():
        obs = json.loads(line)
        if obs.get("type") == "step" and obs.get("index") is not None:
            steps.append(obs["finished_at"] - obs["started_at"])
    info = json.loads((out / "run.json").read_text())
    scenario_s = [s.get("seconds") for s in info.get("outcomes", []) if isinstance(s, dict)]
    return {"wall_s": wall, "step_mean_s": statistics.mean(steps) if steps else float("nan"),
            "steps": len(steps), "history_kb": (out / "history.jsonl").stat().st_size / 1024,
            "scenario_s": sum(s for s in scenario_s if isinstance(s, (int, float)))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--suite", default=None, help="a whole suite instead (local backend: what it can run)")
    args = parser.parse_args()
    if args.suite:
        from kafka_chaos.harness.backends import missing_capabilities

        names = select(args.suite, missing=dict(missing_capabilities("local"))).scenarios
    else:
        names = by_names(args.scenario or ["leader_hard_kill", "controlled_shutdown_leader"])
    rows: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="consumers-overhead-") as tmp:
        for r in range(args.rounds):
            for consumers in (False, True):
                rows[consumers].append(one(names, consumers, Path(tmp) / f"{r}-{consumers}"))
    for consumers, results in rows.items():
        print(f"consumers={'on ' if consumers else 'off'}: " + "; ".join(
            f"wall {x['wall_s']:.1f} s, scenarios {x['scenario_s']:.1f} s, {x['steps']} steps "
            f"mean {x['step_mean_s']:.2f} s, history {x['history_kb']:.0f} KiB" for x in results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Wall time of the chaos suites and the leader-switch latency per fault type.

    .venv/bin/python benchmarks/suite_bench.py [--suite smoke|conformance ...] [--seed S]
    .venv/bin/python benchmarks/suite_bench.py --from RESULTS_DIR ...   # only summarise

Runs each suite through ``kafka-chaos run`` on the local backend (no report), then prints per
fault type the median of each latency phase (ms from the fault: detection → election →
propagation → first produce; client gap), with the session timeout and tickTime used.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_chaos.records.schema import LATENCY_PHASES  # noqa: E402
from kafka_chaos.records.writer import read_records  # noqa: E402


def run_suite(suite: str, seed: int, results: Path) -> tuple[int, float]:
    from kafka_chaos.cli.main import main

    start = time.monotonic()
    rc = main(["run", "--suite", suite, "--seed", str(seed), "--results", str(results), "--no-report"])
    return rc, time.monotonic() - start


def summarise(results: Path) -> None:
    read = read_records(results)
    by_fault: dict[str, list] = defaultdict(list)
    settings = set()
    for r in read.records:
        if r.latency_ms:
            by_fault[r.fault or "?"].append(r.latency_ms)
            settings.add((r.session_timeout_ms, r.tick_time_ms))
    checks = [r for r in read.records if r.kind == "check"]
    print(f"  checks: {sum(r.passed is True for r in checks)} passed, {sum(r.passed is False for r in checks)} "
          f"failed, {sum(r.passed is None for r in checks)} unknown; session timeout / tick (ms): {sorted(settings)}")
    print(f"  {'fault':22s} {'n':>3s} " + " ".join(f"{p:>13s}" for p in LATENCY_PHASES))
    for fault, rows in sorted(by_fault.items()):
        medians = []
        for phase in LATENCY_PHASES:
            values = [row[phase] for row in rows if row.get(phase) is not None]
            medians.append(f"{statistics.median(values):13.0f}" if values else f"{'-':>13s}")
        print(f"  {fault:22s} {len(rows):3d} " + " ".join(medians))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=("smoke", "conformance"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--from", dest="existing", type=Path, action="append", default=[])
    args = parser.parse_args()
    for path in args.existing:
        info = json.loads((path / "run.json").read_text())
        print(f"{path}: suite {info.get('suite')} wall {info.get('wall_seconds')} s, status {info.get('status')}")
        summarise(path)
    if args.existing and not args.suite:
        return 0
    base = Path(tempfile.mkdtemp(prefix="kafka-chaos-bench-"))
    for suite in args.suite or ["smoke"]:
        results = base / suite
        rc, wall = run_suite(suite, args.seed, results)
        print(f"suite {suite}: exit {rc}, wall time {wall:.1f} s ({results})")
        summarise(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

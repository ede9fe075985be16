"""One run's cold report, local Spark against a Spark Connect server that is already running.

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/connect_report_bench.py \\
        [--results-dir RESULTS_DIR | --records 3760] [--repeat 3] [--port 15123]

Each figure is a fresh `kafka-chaos report RESULTS_DIR --no-cache` process (nothing kept from an
earlier report): local mode starts its Spark JVM, Connect mode (``--master sc://...``) sends the
same queries to a server this script starts once with `kafka-chaos spark up` (its start and
warm-up printed apart) and stops at the end, on failure too.  Without ``--results-dir``, records are
generated (results.synthetic: about one conformance run's count) into a temp dir.  Also checks
that both modes wrote the same summary.json results.  Prints one line per figure, with the load
average (the machine is shared); no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NOT_RESULTS = ("generated_at", "timings")


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def kafka_chaos(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    return time.monotonic() - started, done


def report(results: Path, out: Path, master: str | None) -> tuple[float, dict[str, Any]]:
    seconds, done = kafka_chaos("report", str(results), "--out", str(out), "--no-cache",
                                *(["--master", master] if master else []))
    if done.returncode != 0:
        raise SystemExit(f"report failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, json.loads((out / "summary.json").read_text())


def figures(label: str, runs: list[tuple[float, dict[str, Any]]]) -> None:
    walls = [wall for wall, _ in runs]
    for n, (wall, summary) in enumerate(runs, 1):
        timings = summary["timings"]
        print(f"{label} #{n}: {wall:.2f} s wall (session {timings['spark_start_s']:.2f} s, aggregation incl. "
              f"session {timings['aggregate_s']:.2f} s), {load()}")
    print(f"{label}: median {statistics.median(walls):.2f} s, min {min(walls):.2f} s over {len(walls)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", type=Path, help="a run's results dir (default: generated records)")
    parser.add_argument("--records", type=int, default=3760, help="generated records (without --results-dir)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--port", type=int, default=15123)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-connect-bench-") as temp:
        work = Path(temp)
        results = args.results_dir
        if results is None:
            from kafka_chaos.results.synthetic import write_synthetic_results

            results = write_synthetic_results(work / "run", args.records, seed=1, records_per_run=args.records).parent
        size = (results / "records.jsonl").stat().st_size if results.is_dir() else results.stat().st_size
        print(f"input: {results} ({size / 1e6:.1f} MB of records), {os.cpu_count()} cores, {load()}")
        local = [report(results, work / f"local-{n}", None) for n in range(args.repeat)]
        figures("cold local report", local)
        state = work / "spark-state"
        up_seconds, up = kafka_chaos("spark", "up", "--port", str(args.port), "--state-dir", str(state))
        try:
            if up.returncode != 0:
                raise SystemExit(f"spark up failed ({up.returncode}): {up.stderr.strip()}")
            url = up.stdout.strip()
            print(f"spark up (start and warm-up, once): {up_seconds:.2f} s, {url}, {load()}")
            connect = [report(results, work / f"connect-{n}", url) for n in range(args.repeat)]
            figures("cold report via Connect", connect)
        finally:
            kafka_chaos("spark", "down", "--state-dir", str(state))
        same = all({k: v for k, v in summary.items() if k not in NOT_RESULTS}
                   == {k: v for k, v in local[0][1].items() if k not in NOT_RESULTS} for _, summary in connect)
        print(f"same summary.json results in both modes: {same}")


if __name__ == "__main__":
    main()

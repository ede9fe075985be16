"""How fast `kafka-chaos report` aggregates: records/s and wall time per input size, with Spark's
start-up measured apart.

    .venv/bin/python benchmarks/aggregate_bench.py [--sizes 100000,1000000,3000000] [--master local[2]]

Records are generated (results.synthetic) into a temp dir, which is removed afterwards; each size
runs the full ETL of the report (parse, classify, every aggregate, Parquet tables) in one shared
Spark session.  Prints one line per figure; no assertions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.aggregate import aggregate  # noqa: E402
from results.spark_session import DEFAULT_DRIVER_MEMORY, start_spark  # noqa: E402
from results.synthetic import write_synthetic_results  # noqa: E402


def jvm_peak_rss_mb(spark) -> float | None:
    """Peak resident memory of the driver JVM (spark-submit execs java, so its pid is the JVM's)."""
    try:
        pid = spark.sparkContext._gateway.proc.pid  # noqa: SLF001 - no public handle on the JVM
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (AttributeError, OSError, ValueError):
        return None
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,3000000", help="comma-separated record counts")
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default=DEFAULT_DRIVER_MEMORY)
    parser.add_argument("--tmp", default=None, help="where to write the generated records (default: system temp)")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]

    work = Path(tempfile.mkdtemp(prefix="aggregate-bench-", dir=args.tmp))
    try:
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)
        started = time.monotonic()
        spark = start_spark(args.master, log_path=work / "spark.log", driver_memory=args.driver_memory)
        session_s = time.monotonic() - started
        started = time.monotonic()
        spark.range(1).count()
        first_job_s = time.monotonic() - started
        print(f"spark start-up: session {session_s:.1f} s + first trivial job {first_job_s:.1f} s "
              f"({spark.sparkContext.master}, driver memory {args.driver_memory})", flush=True)
        for size in sizes:
            data = work / f"n{size}"
            started = time.monotonic()
            path = write_synthetic_results(data, size, seed=size, records_per_run=5_000)
            generate_s = time.monotonic() - started
            megabytes = path.stat().st_size / 1e6
            started = time.monotonic()
            result = aggregate(spark, [path], work / f"out{size}" / "tables")
            wall_s = time.monotonic() - started
            assert result.totals["records"] == size, result.totals
            peak = jvm_peak_rss_mb(spark)
            print(f"{size:>9,} records ({megabytes:,.0f} MB, generated in {generate_s:.1f} s): "
                  f"aggregate wall {wall_s:.1f} s = {size / wall_s:,.0f} records/s; "
                  f"{len(result.pass_rates)} pass-rate rows, {len(result.latency)} latency rows; "
                  f"JVM peak RSS so far {peak:,.0f} MB; load average {os.getloadavg()[0]:.1f}"
                  if peak is not None else
                  f"{size:>9,} records: aggregate wall {wall_s:.1f} s = {size / wall_s:,.0f} records/s",
                  flush=True)
            shutil.rmtree(data)
            shutil.rmtree(work / f"out{size}")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

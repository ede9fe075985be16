"""How fast `kafka-chaos report` is: one run's whole report (a fresh `kafka-chaos report` process,
Spark start-up included) and the aggregation's wall time and records/s per input size — for the
current code and, with ``--before REV``, for an earlier revision measured the same way.

    .venv/bin/python benchmarks/aggregate_bench.py [--sizes 100000,1000000,3000000]
        [--report-records 3500 | --report-dir RESULTS_DIR] [--repeat N] [--before d164377] [--master local[2]]
        [--stages] [--cached [--records-per-run 100000]]

Records are generated (results.synthetic) into a temp dir, removed afterwards.  Each code version
aggregates every size in one Spark session of its own process (``--worker``), started once, so
its start-up is printed apart.  ``--before REV`` extracts REV with ``git archive`` into a temp
dir (the working tree is not touched).  ``--stages`` also times, per size and for the current
code only, reading and parsing alone (docs/report.md, "Why 30 s is out of reach").  ``--cached``
times, instead, whole reports over each size split into runs, with and without the per-file
cache of partial aggregates (results.partials_cache).  Prints one
line per figure; no assertions.  The machine is shared: the load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def jvm_peak_rss_mb(spark: object) -> float | None:
    """Peak resident memory of the driver JVM (spark-submit execs java, so its pid is the JVM's)."""
    try:
        pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]  # noqa: SLF001
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (AttributeError, OSError, ValueError):
        return None
    return None


def jvm_cpu_s(spark: object) -> float | None:
    """CPU seconds (user + system) the driver JVM has used: unlike wall time, barely moved by the
    other processes of a shared machine."""
    try:
        pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]  # noqa: SLF001
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError, IndexError):
        return None


def stage_figures(spark: object, path: Path) -> list[dict[str, object]]:
    """Each stage of the report's Spark query alone, over ``path``, written to Spark's ``noop``
    sink (computed, then dropped): reading the lines, Spark's JSON source with the record schema
    (the faster reader the report does not use: it skips blank lines, which the report counts),
    ``from_json`` over the lines (what the report does) and the one pass's whole query."""
    from kafka_chaos.results import aggregate as A

    session: Any = spark
    lines = A.read_lines(session, [path])
    json_source = session.read.schema(A.record_schema(with_corrupt=True)).options(
        mode="PERMISSIVE", columnNameOfCorruptRecord=A.CORRUPT).json(str(path))
    stages = {
        "reading the lines only (spark.read.text)": lines,
        "Spark's JSON source, explicit schema, every field": json_source.select("*", "_metadata.file_path"),
        "from_json over the lines, every field (the report's parse)": A.parse_lines(lines).select("source", "r.*"),
        "the one pass's whole Spark query (parse, classify, facts, partials)":
            A.partials(A.facts(A.classify(A.parse_lines(lines)))),
    }
    figures: dict[str, dict[str, object]] = {}
    # Twice, the second round's figures kept: the first pays the JIT's warm-up, whichever stage
    # comes first (over 1M records a cold JSON source took 13.4 s, a warm one 7.5 s).
    for stage, frame in [*stages.items(), *stages.items()]:
        started, cpu_before = time.monotonic(), jvm_cpu_s(spark)
        frame.write.format("noop").mode("overwrite").save()
        cpu_after = jvm_cpu_s(spark)
        figures[stage] = {"stage": stage, "wall_s": time.monotonic() - started,
                          "cpu_s": cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None}
    return list(figures.values())


def worker(root: Path, files: list[Path], out: Path, master: str | None, driver_memory: str,
           stages: bool = False) -> None:
    """In a process of its own: ``root``'s aggregation over each file, one Spark session."""
    sys.path.insert(0, str(root))
    from kafka_chaos.results.aggregate import aggregate
    from kafka_chaos.results.spark_session import start_spark

    started = time.monotonic()
    spark = start_spark(master, log_path=out / "spark.log", driver_memory=driver_memory)
    session_s = time.monotonic() - started
    started = time.monotonic()
    spark.range(1).count()
    print(json.dumps({"session_s": session_s, "first_job_s": time.monotonic() - started}), flush=True)
    for path in files:
        for figure in stage_figures(spark, path) if stages else []:
            print(json.dumps({"file": str(path), **figure}), flush=True)
        started, cpu_before = time.monotonic(), jvm_cpu_s(spark)
        result = aggregate(spark, [path], out / path.parent.name / "tables")
        wall_s = time.monotonic() - started
        cpu_after = jvm_cpu_s(spark)
        cpu_s = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        shutil.rmtree(out / path.parent.name, ignore_errors=True)
        print(json.dumps({"file": str(path), "records": result.totals["records"], "wall_s": wall_s,
                          "pass_rate_rows": len(result.pass_rates), "latency_rows": len(result.latency),
                          "peak_mb": jvm_peak_rss_mb(spark), "cpu_s": cpu_s, "load": os.getloadavg()[0]}),
              flush=True)
    spark.stop()


def one_run_report(root: Path, run_dir: Path, out: Path, report_cache: Path,
                   *extra: str) -> tuple[float, dict[str, float]]:
    """Wall time of ``kafka-chaos report RUN_DIR`` in a fresh process of ``root``'s code, and the
    CPU seconds of its process tree: the report's Python process and, apart, the Spark driver JVM
    (``RUSAGE_CHILDREN`` would miss the JVM, which pyspark does not wait for).  ``report_cache``:
    where its per-file partials are kept (never the user's own cache)."""
    import psutil

    env = dict(os.environ, PYTHONPATH=str(root), KAFKA_CHAOS_REPORT_CACHE=str(report_cache))
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kafka_chaos.cli.main", "report", str(run_dir), "--out", str(out), *extra],
                            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    cpu: dict[int, tuple[str, float]] = {}
    tree = psutil.Process(proc.pid)
    while proc.poll() is None and time.monotonic() - started < 1800:
        try:
            members = [tree, *tree.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for member in members:
            try:
                times = member.cpu_times()
                cpu[member.pid] = (member.name(), times.user + times.system)
            except psutil.Error:
                pass
        time.sleep(0.2)
    stderr = proc.communicate(timeout=60)[1]
    wall_s = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"report failed ({proc.returncode}): {stderr.strip()[-500:]}")
    timings = json.loads((out / "summary.json").read_text()).get("timings", {})
    jvm = sum(seconds for name, seconds in cpu.values() if name == "java")
    python = sum(seconds for name, seconds in cpu.values() if name != "java")
    return wall_s, {**timings, "cpu_s": jvm + python, "python_cpu_s": python, "jvm_cpu_s": jvm}


def version_root(revision: str, work: Path) -> Path:
    root = work / f"rev-{revision}"
    root.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,3000000", help="comma-separated record counts ('' for none)")
    parser.add_argument("--report-records", type=int, default=3_500,
                        help="size of the generated run whose whole report is timed (about one conformance run)")
    parser.add_argument("--report-dir", default=None, help="time the report of this results dir instead")
    parser.add_argument("--repeat", type=int, default=1, help="time one run's report this many times per version")
    parser.add_argument("--before", default=None, metavar="REV", help="also measure this git revision")
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--tmp", default=None, help="where to write the generated records (default: system temp)")
    parser.add_argument("--stages", action="store_true",
                        help="also time reading and parsing alone per size (current code)")
    parser.add_argument("--cached", action="store_true",
                        help="instead of the aggregation figures: whole reports (fresh processes, current code) over "
                             "each size split into runs of --records-per-run, without the per-file cache, cold, "
                             "warm, and with one new run of --report-records")
    parser.add_argument("--records-per-run", type=int, default=100_000,
                        help="with --cached: the size of each generated run (one records.jsonl each)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--files", default="", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker), [Path(f) for f in args.files.split(",") if f], Path(args.out), args.master,
               args.driver_memory, args.stages)
        return 0

    sys.path.insert(0, str(REPO))
    from kafka_chaos.results.synthetic import write_synthetic_results

    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    work = Path(tempfile.mkdtemp(prefix="aggregate-bench-", dir=args.tmp))
    try:
        print(f"machine: {os.cpu_count()} cores, {load()} at start; master {args.master or 'local[2]'}, "
              f"driver memory {args.driver_memory}", flush=True)
        versions = [("current", REPO)] + ([(f"before ({args.before})", version_root(args.before, work))]
                                          if args.before else [])
        run_dir: Path | None = Path(args.report_dir) if args.report_dir else work / "one-run"
        if not args.report_dir and args.report_records > 0:
            write_synthetic_results(work / "one-run", args.report_records, seed=1, records_per_run=args.report_records)
        elif not args.report_dir:
            run_dir = None  # --report-records 0: aggregation figures only
        if args.cached:
            for size in sizes:
                cache_figures(work / f"runs-{size}", size, args.records_per_run, args.report_records)
            return 0
        files = []
        for size in sizes:
            started = time.monotonic()
            path = write_synthetic_results(work / f"n{size}", size, seed=size, records_per_run=5_000)
            print(f"generated {size:,} records ({path.stat().st_size / 1e6:,.0f} MB) in "
                  f"{time.monotonic() - started:.1f} s", flush=True)
            files.append(path)
        for _ in range(args.repeat if run_dir is not None else 0):  # versions alternate: the load hits both alike
            for name, root in versions:
                report_figures(name, root, run_dir, work / "report-out")  # type: ignore[arg-type]  # not None here
        for name, root in versions:
            if files:
                aggregation_figures(name, root, files, work / "agg-out", args.master, args.driver_memory,
                                    stages=args.stages and root == REPO)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report_figures(name: str, root: Path, run_dir: Path, out: Path) -> None:
    """One run's report as after a run: its records never reported before (an empty cache)."""
    wall_s, timings = one_run_report(root, run_dir, out, out.parent / "empty-report-cache")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(out.parent / "empty-report-cache", ignore_errors=True)
    spark_s, aggregate_s = timings.get("spark_start_s", float("nan")), timings.get("aggregate_s", float("nan"))
    print(f"[{name}] one run's report ({run_dir}): {wall_s:.1f} s wall, {timings['cpu_s']:.1f} s CPU (Python "
          f"{timings['python_cpu_s']:.1f} s, JVM {timings['jvm_cpu_s']:.1f} s) in a fresh process "
          f"(Spark start {spark_s:.1f} s, aggregate {aggregate_s:.1f} s, the rest {wall_s - spark_s - aggregate_s:.1f} s: "
          f"Python start-up and imports, Spark stop, charts, HTML); {load()}", flush=True)


def cache_figures(runs_dir: Path, size: int, records_per_run: int, new_run_records: int) -> None:
    """Whole reports, each a fresh ``kafka-chaos report`` process, over ``size`` records split into
    runs (one records.jsonl each, as nightly runs accumulate): with ``--no-cache`` (every file
    parsed, nothing kept), cold (every file parsed and its partials stored), warm (every file's
    partials from the cache: no JVM), and after one more run of ``new_run_records`` is added
    (only it parsed: last night's run).  The cache is a temp dir of its own."""
    from kafka_chaos.results.synthetic import write_synthetic_results

    runs = -(-size // records_per_run)
    for i in range(runs):
        write_synthetic_results(runs_dir / f"run-{i:04d}", min(records_per_run, size - i * records_per_run), seed=i,
                                records_per_run=5_000, run_prefix=f"r{i}")
    out, cache = runs_dir.parent / "cache-out", runs_dir.parent / "report-cache"
    for label, extra in (("--no-cache", ("--no-cache",)), ("cold cache", ()), ("warm cache", ())):
        cached_report_figure(f"{size:,} records in {runs} runs, {label}", runs_dir, out, cache, *extra)
    write_synthetic_results(runs_dir / f"run-{runs:04d}", new_run_records, seed=runs, records_per_run=new_run_records,
                            run_prefix=f"r{runs}")
    cached_report_figure(f"{size + new_run_records:,} records, one new run of {new_run_records:,}", runs_dir, out,
                         cache)


def cached_report_figure(label: str, runs_dir: Path, out: Path, cache: Path, *extra: str) -> None:
    wall_s, timings = one_run_report(REPO, runs_dir, out, cache, *extra)
    print(f"[cache] {label}: report {wall_s:.1f} s wall (Spark start {timings.get('spark_start_s', 0):.1f} s, "
          f"aggregate {timings.get('aggregate_s', 0):.1f} s, {timings.get('cached_inputs', 0)} inputs from the cache); "
          f"{load()}", flush=True)


def aggregation_figures(name: str, root: Path, files: list[Path], out: Path, master: str | None,
                        driver_memory: str, stages: bool = False) -> None:
    command = [sys.executable, __file__, "--worker", str(root), "--files", ",".join(map(str, files)),
               "--out", str(out), "--driver-memory", driver_memory, *(["--stages"] if stages else [])]
    if master:
        command += ["--master", master]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            row = json.loads(line)
            if "session_s" in row:
                print(f"[{name}] spark start-up: session {row['session_s']:.1f} s + first trivial job "
                      f"{row['first_job_s']:.1f} s", flush=True)
                continue
            if "stage" in row:
                cpu_s = f", JVM CPU {row['cpu_s']:.1f} s" if row["cpu_s"] is not None else ""
                print(f"[{name}] {Path(row['file']).parent.name} stage: {row['stage']}: {row['wall_s']:.1f} s wall"
                      f"{cpu_s}", flush=True)
                continue
            peak = f"; JVM peak RSS {row['peak_mb']:,.0f} MB" if row["peak_mb"] is not None else ""
            cpu = f" (JVM CPU {row['cpu_s']:.1f} s)" if row["cpu_s"] is not None else ""
            print(f"[{name}] {row['records']:>9,} records: aggregate wall {row['wall_s']:.1f} s{cpu} = "
                  f"{row['records'] / row['wall_s']:,.0f} records/s; {row['pass_rate_rows']} pass-rate "
                  f"rows, {row['latency_rows']} latency rows{peak}; load {row['load']:.1f}", flush=True)
    if proc.returncode:
        print(f"[{name}] worker failed with exit code {proc.returncode}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

"""`run_report`: records.jsonl of one or many runs -> summary.json, Parquet tables, report.html.

Importing this module is cheap (no Spark, no matplotlib): ``kafka-chaos run`` imports it to end
with a report, and the CLI answers bad arguments before any JVM starts.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_chaos.common.errors import UsageError
from kafka_chaos.records.writer import RUN_INFO_FILE
from kafka_chaos.results.baseline import BaselineSources, locate_baseline, side_from_aggregates, window
from kafka_chaos.results.comparison import DEFAULT_RULES, Rule, compare, comparison_document, parse_rules, samples_document
from kafka_chaos.results.comparison import value_counts_from_spark_rows
from kafka_chaos.results.gates import LatencyLimit, gate_failures, parse_latency_limits, parse_min_pass_rate
from kafka_chaos.results.inputs import empty_file_problems, locate_inputs, record_files
from kafka_chaos.results.spark_connect import is_connect_url, parse_connect_url

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_chaos.results.aggregate import Aggregates
    from kafka_chaos.results.partials_cache import PartialsCache

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
HTML_FILE = "report.html"
TABLES_DIR = "tables"
SPARK_LOG_FILE = "spark.log"
PERCENTILE_METHOD = "nearest-rank (pXX = smallest sample with at least XX % of samples at or below it)"


@dataclass(frozen=True)
class ReportSummary:
    out: Path
    html: Path
    summary_json: Path
    totals: Mapping[str, Any]
    pass_rates: tuple[Mapping[str, Any], ...]
    latency: tuple[Mapping[str, Any], ...]
    problems: tuple[str, ...] = ()
    gate_failures: tuple[str, ...] = ()
    regressions: tuple[str, ...] = ()  # flagged by the comparison with --baseline (gating or not)
    spark_start_seconds: float = 0.0
    aggregate_seconds: float = 0.0
    terminal: str = field(default="", repr=False)  # the compact table the CLI prints

    @property
    def ok(self) -> bool:
        return not self.gate_failures

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def default_out(results_dirs: Sequence[str | os.PathLike[str]]) -> Path:
    """``RESULTS_DIR/report`` for one directory; ``./report`` for several."""
    if len(results_dirs) == 1 and Path(results_dirs[0]).is_dir():
        return Path(results_dirs[0]) / "report"
    return Path("report")


def run_report(
    results_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    master: str | None = None,
    min_pass_rate: float | str | None = None,
    max_latency: Iterable[str | LatencyLimit] = (),
    *,
    baseline: Sequence[str | os.PathLike[str]] = (),
    max_regression: Iterable[str | Rule] = (),
    spark: "SparkSession | None" = None,
    use_cache: bool = True,
) -> ReportSummary:
    """Aggregate the records below ``results_dirs`` and write the report into ``out``.

    Raises ``UsageError`` for bad arguments or when no results dir exists; input problems
    (missing dir among several, empty or malformed files, unreadable schema versions) are
    reported, not raised.  ``spark``: an existing session to use (tests); else one is started
    on ``master`` (default local[2]; ``sc://HOST:PORT``: a session of that Spark Connect server,
    :mod:`results.spark_connect`) when some input is not in the per-file cache
    (:mod:`results.partials_cache`; ``use_cache=False``: every file is read, nothing kept), and
    stopped at the end.

    ``baseline``: earlier runs to compare with (:mod:`results.baseline`); the comparison
    (:mod:`results.comparison`) flags regressions by ``max_regression``'s rules, which then also
    gate, or by ``DEFAULT_RULES`` without gating.
    """
    if master is not None and is_connect_url(master):
        parse_connect_url(master)  # a malformed URL is bad input even when every file is cached
    rate_limit = parse_min_pass_rate(min_pass_rate)
    limits = parse_latency_limits(max_latency)
    rules = parse_rules(max_regression)
    if rules and not baseline:
        raise UsageError("--max-regression needs --baseline DIR_OR_SUMMARY to compare with")
    inputs = locate_inputs(results_dirs)
    baseline_sources = locate_baseline(baseline)
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir}: exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    files = record_files(inputs)
    problems = [f"{item.path}: {item.problem}" for item in inputs if item.problem]
    problems += empty_file_problems(files)

    # Empty files hold no records: with nothing else to read, no JVM is started at all.
    with_data = [path for path in files if path.stat().st_size > 0]
    prefetch = _Prefetch(sorted({f.parent for f in files})) if with_data else None
    baseline_files = list(baseline_sources.record_files) if baseline_sources else []
    from kafka_chaos.results.partials_cache import PartialsCache

    cache = PartialsCache() if use_cache else None
    aggregates, baseline_aggregates, spark_seconds = _aggregate(with_data, baseline_files, out_dir, master, spark,
                                                                cache)
    problems += _line_problems(aggregates.inputs)
    failures = gate_failures(aggregates.totals, aggregates.latency, rate_limit, limits)
    comparison = _comparison(aggregates, baseline_aggregates, baseline_sources, rules)
    regressions = comparison["regressions"] if comparison else []
    if rules:
        failures += regressions
    summary = _summary_document(aggregates, files, problems, rate_limit, limits, failures)
    summary["gates"]["max_regression"] = [str(rule) for rule in rules]
    if comparison is not None:
        summary["baseline"] = comparison
    summary["timings"] = {"spark_start_s": round(spark_seconds, 3), "aggregate_s": round(aggregates.seconds, 3),
                          "cached_inputs": aggregates.cached_files}

    summary_path = out_dir / SUMMARY_FILE
    summary_path.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    html_path = out_dir / HTML_FILE
    html_path.write_text(_render_html(summary, _timelines(files, aggregates.failing_checks, prefetch)),
                         encoding="utf-8")
    for problem in problems:  # also in the summary, the HTML and the terminal table
        log.debug("input problem: %s", problem)

    from kafka_chaos.results.terminal import render_terminal

    return ReportSummary(
        out=out_dir,
        html=html_path,
        summary_json=summary_path,
        totals=aggregates.totals,
        pass_rates=tuple(aggregates.pass_rates),
        latency=tuple(aggregates.latency),
        problems=tuple(problems),
        gate_failures=tuple(failures),
        regressions=tuple(regressions),
        spark_start_seconds=spark_seconds,
        aggregate_seconds=aggregates.seconds,
        terminal=render_terminal(summary, str(html_path)),
    )


def _aggregate(files: Sequence[Path], baseline_files: Sequence[Path], out_dir: Path, master: str | None,
               spark: "SparkSession | None",
               cache: "PartialsCache | None") -> tuple["Aggregates", "Aggregates | None", float]:
    """Run the Spark job over this run's files (Parquet tables) and the baseline's (none).  The
    session starts only when some file is not in ``cache`` (an entry that cannot be read back
    counts as missing): no files at all, or only cached ones -> no JVM."""
    from kafka_chaos.results.aggregate import Aggregates, EMPTY_TOTALS, SMALL_INPUT_BYTES, aggregate
    from kafka_chaos.results.spark_session import spark_session

    if not files and not baseline_files:
        return Aggregates(totals=dict(EMPTY_TOTALS)), None, 0.0

    def both(session: "SparkSession | Callable[[], SparkSession]") -> tuple["Aggregates", "Aggregates | None"]:
        mine = aggregate(session, files, out_dir / TABLES_DIR, cache=cache)
        return mine, (aggregate(session, baseline_files, cache=cache) if baseline_files else None)

    if spark is not None:
        return (*both(spark), 0.0)
    # What will be read decides the JVM's flags only (an entry found unreadable later adds a file).
    to_read = [*files, *baseline_files] if cache is None else cache.missing([*files, *baseline_files])
    small = sum(f.stat().st_size for f in to_read) <= SMALL_INPUT_BYTES
    started: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:

        def session() -> "SparkSession":
            if "session" not in started:
                began = time.monotonic()
                started["session"] = stack.enter_context(
                    spark_session(master, log_path=out_dir / SPARK_LOG_FILE, small_input=small))
                started["seconds"] = time.monotonic() - began
            return started["session"]  # type: ignore[no-any-return]

        return (*both(session), started.get("seconds", 0.0))


def _comparison(aggregates: "Aggregates", baseline_aggregates: "Aggregates | None",
                sources: BaselineSources | None, rules: Sequence[Rule]) -> dict[str, Any] | None:
    """summary.json's ``baseline`` section, or None without a baseline."""
    if sources is None:
        return None
    sides = [side for _, side in sources.summaries]
    if baseline_aggregates is not None:
        sides.append(side_from_aggregates(baseline_aggregates.pass_rates, baseline_aggregates.latency_values,
                                          baseline_aggregates.totals))
    base = window(sides)
    new = side_from_aggregates(aggregates.pass_rates, aggregates.latency_values, aggregates.totals)
    result = compare(base, new, rules or DEFAULT_RULES)
    return {**comparison_document(result, sources.names, base), "gating": bool(rules)}


def _line_problems(file_counts: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    for row in file_counts:
        if row["malformed"]:
            problems.append(f"{row['source']}: {row['malformed']:,} malformed line(s) skipped, "
                            f"first: {row['malformed_example']}")
        if row["rejected"]:
            problems.append(f"{row['source']}: {row['rejected']:,} record(s) rejected, "
                            f"first: {row['rejected_example']}")
    return problems


def with_replay_commands(failures: Sequence[Mapping[str, Any]], files: Sequence[Path]) -> list[dict[str, Any]]:
    """Each failing check with the command that replays its scenario iteration (``replay``):
    a scenario a run kept in ``DIR/schedules/`` (schedule files, explore) is replayed from that
    file, named by the path the report was given, so the command runs as printed from here; with
    the options of its run's command that shaped it (``--mode``, ``--kafka-version``,
    ``--transactions``, ``--harness-defaults``, ...: run.json), or, for a run started without a
    command line (``run_scenarios`` called directly), the row's own ``--kafka-version`` and
    ``--harness-defaults`` where it ran a catalogue scenario with the harness's defaults."""
    from kafka_chaos.results.html import replay_command, shaping_options

    kept: dict[str, str] = {}
    runs: dict[str, Mapping[str, Any]] = {}
    for directory in sorted({f.parent for f in files}):
        for path in sorted((directory / "schedules").glob("*.json")):
            kept.setdefault(path.stem, str(path))
        info = _run_info(directory)
        if isinstance(info.get("run_id"), str):
            runs.setdefault(info["run_id"], info)

    def shaping(row: Mapping[str, Any], info: Mapping[str, Any], schedule: str | None) -> list[str]:
        if info.get("command"):
            return shaping_options(info["command"])
        release = ["--kafka-version", str(row["kafka_version"])] if row.get("kafka_version") else []
        return release + (["--harness-defaults"] if info.get("kafka_defaults") is False and schedule is None else [])

    rows = []
    for row in failures:
        schedule = kept.get(str(row.get("scenario")))
        info = runs.get(str(row.get("run_id")), {})
        rows.append({**row, "replay": replay_command(row, schedule, shaping(row, info, schedule))})
    return rows


def _run_info(directory: Path) -> Mapping[str, Any]:
    """A results directory's run.json, or nothing when it has none or it cannot be read."""
    try:
        info = json.loads((directory / RUN_INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _summary_document(aggregates: "Aggregates", files: Sequence[Path], problems: Sequence[str],
                      min_pass_rate: float | None, limits: Sequence[LatencyLimit],
                      failures: Sequence[str]) -> dict[str, Any]:
    counted = {row["source"]: row for row in aggregates.inputs}
    file_rows = [
        counted.get(str(path), {"source": str(path), "valid": 0, "malformed": 0, "rejected": 0, "blank": 0,
                                "malformed_example": None, "rejected_example": None})
        for path in files
    ]
    return {
        "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "percentile_method": PERCENTILE_METHOD,
        "files": file_rows,
        "problems": list(problems),
        "totals": aggregates.totals,
        "pass_rates": aggregates.pass_rates,
        "latency": aggregates.latency,
        "latency_by_partitions": aggregates.latency_by_partitions,
        "latency_by_session_timeout": aggregates.latency_by_session_timeout,
        "latency_by_release": aggregates.latency_by_release,
        "latency_by_mode": aggregates.latency_by_mode,
        "latency_histogram": aggregates.latency_histogram,
        "availability": aggregates.availability,
        "controller": aggregates.controller,
        "transactions": aggregates.transactions,
        "migration_timeline": aggregates.migration_timeline,
        "time_ledger": aggregates.time_ledger,
        "trend_by_day": aggregates.trend_by_day,
        "trend_by_run": aggregates.trend_by_run,
        "failing_checks": with_replay_commands(aggregates.failing_checks, files),
        "failing_checks_total": aggregates.failing_checks_total,
        # The samples of every latency phase, rounded to 3 significant digits and counted: what a
        # later report needs to compare with this one (--baseline this summary.json).
        "latency_samples": samples_document(value_counts_from_spark_rows(aggregates.latency_values)),
        "gates": {
            "min_pass_rate": min_pass_rate,
            "max_latency": [str(limit) for limit in limits],
            "failures": list(failures),
        },
    }


PREFETCH_HISTORY_BYTES = 128 << 20  # more history than this is read after Spark, one file at a time


class _Prefetch:
    """While Spark starts and aggregates (the JVM's work; this process mostly waits on a socket),
    a thread parses the history files the timelines come from — seconds of a one-run report's
    wall time.  Only a bounded amount of history is held."""

    def __init__(self, directories: Sequence[Path]) -> None:
        import threading

        self.directories = directories
        self.histories: list[Any] | None = None
        self.error: Exception | None = None
        size = sum((d / "history.jsonl").stat().st_size for d in directories if (d / "history.jsonl").is_file())
        self._thread = threading.Thread(target=self._run, args=(size <= PREFETCH_HISTORY_BYTES,),
                                        name="report-prefetch", daemon=True)
        self._thread.start()

    def _run(self, histories: bool) -> None:
        try:
            if histories:
                from kafka_chaos.results.timeline import load_histories

                self.histories = load_histories(self.directories)
        except Exception as exc:  # noqa: BLE001 - re-raised where the timelines are chosen
            self.error = exc

    def result(self) -> list[Any] | None:
        """The parsed histories (None: too large, read them after); raises what the thread raised."""
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.histories


def _timelines(files: Sequence[Path], failing: Sequence[Mapping[str, Any]],
               prefetch: _Prefetch | None = None) -> list[tuple[str, str]]:
    """(anchor, SVG) of the timelines the report shows (:mod:`results.timeline`), from the
    ``history.jsonl`` beside each records file; none when there is no history."""
    from kafka_chaos.results import plots
    from kafka_chaos.results.timeline import choose_timelines, timelines

    keys = {(str(r["run_id"]), str(r["scenario"]), int(r["iteration"])) for r in failing}
    try:
        histories = prefetch.result() if prefetch is not None else None
        chosen = (choose_timelines(histories, keys) if histories is not None
                  else timelines(sorted({f.parent for f in files}), keys))
    except (OSError, ValueError) as exc:  # the report goes on without timelines
        log.warning("no timelines: %s", exc)
        return []
    from kafka_chaos.results.html import timeline_anchor

    return [(timeline_anchor(t.run_id, t.scenario, t.iteration), plots.timeline(t)) for t in chosen]


def _render_html(summary: Mapping[str, Any], timelines: Sequence[tuple[str, str]] = ()) -> str:
    from kafka_chaos.records.schema import STALL_S
    from kafka_chaos.results import latency_charts, plots, svg
    from kafka_chaos.results.html import render_html
    from kafka_chaos.results.phases import leader_switch_rows

    images: dict[str, Any] = {
        "timelines": list(timelines),
        # the leader switch's phases only: the clients' have their own chart and tables
        "latency": svg.latency_distributions(leader_switch_rows(summary["latency_histogram"]),
                                             leader_switch_rows(summary["latency"])),
        "leader_switch": latency_charts.leader_switch_panels(summary["latency"]),
        "produce_outage": latency_charts.produce_outage_chart(summary["latency"], STALL_S),
        "trend": plots.pass_rate_over_time(summary["trend_by_day"], summary["trend_by_run"]),
        "heatmap": plots.pass_rate_heatmap(summary["pass_rates"]),
    }
    return render_html(summary, images)

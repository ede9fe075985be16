"""The report's tables, finished in plain Python from the one Spark query's partial aggregates.

:func:`results.aggregate.partials` reduces the records in one pass to *facts* counted per key:
per source file and line status; per run x scenario x check x backend x Kafka version x kind x
outcome x UTC day; per fault x phase x partition count x session timeout x exact latency value;
per fault for the availability and controller measurements; one per failed check.  Every table
the report shows follows from those rows exactly — counts add up, minima, maxima and sums carry
over, and a nearest-rank percentile of a sample is a walk over its distinct values in order — so
this module finishes them without another Spark job (one pass over the input).

Rows are plain dicts, except the latency samples: millions of rows for large inputs, they are
columns (:class:`results.samples.Samples`, numpy).  The rows may come from several files'
partials (:mod:`results.partials_cache`): a key then has a row per file, which every table
adds up (:func:`merge_rows` for the per-fault ones).  The tables come out in the order, with
the columns and (for floats) the IEEE results the earlier per-table Spark queries gave: ``tests/spark/test_golden.py`` holds
this code to the rows those queries wrote, and ``tests/spark/test_crosscheck.py`` to an
independent computation over the records.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafka_chaos.results.samples import Samples, group_sums, grouped, log_buckets, mantissas_exponents, nearest_ranks
from kafka_chaos.records.schema import LATENCY_PHASES
from kafka_chaos.scenarios.model.ledger import KAFKA_DICTATED, PHASES

Row = dict[str, Any]

PERCENT = (("p50", 50), ("p90", 90), ("p99", 99))
LATENCY_STATS = ("p50", "p90", "p99", "max")
Z_95 = 1.959963984540054  # two-sided 95 % normal quantile
PASS_RATE_KEYS = ("scenario", "check", "backend", "kafka_version")
HISTOGRAM_BINS_PER_DECADE = 20
SIGNIFICANT_DIGITS = 3
EPOCH = _dt.date(1970, 1, 1)

# The three percentile tables: their extra grouping key (after fault and phase).
LATENCY_TABLES: Mapping[str, tuple[str, ...]] = {
    "latency": (), "latency_by_partitions": ("partitions",), "latency_by_session_timeout": ("session_timeout_ms",),
    "latency_by_release": ("kafka_version",), "latency_by_mode": ("mode",),
}
FAILURE_COLUMNS = (
    "run_id", "seed", "scenario", "iteration", "check", "backend", "kafka_version", "fault",
    "target", "topic", "partition", "detail", "expected", "observed", "started_at",
)
# A migration step's record columns the timeline keeps, and the row it shows.
TIMELINE_RECORD_COLUMNS = ("run_id", "scenario", "iteration", "fault", "target", "observed", "started_at")
TIMELINE_OBSERVED = ("phase_before", "phase_after", "zk_migration_state", "driver_state", "kraft_controller",
                     "seconds", "write_behind_s")
LINE_STATUSES = ("valid", "malformed", "rejected", "blank")
_OUTCOME_COLUMNS = ("passed", "failed", "unknown", "pass_rate", "ci_low", "ci_high")
_OUTCOMES = "passed:bigint failed:bigint unknown:bigint pass_rate:double ci_low:double ci_high:double"
_STATS = "count:bigint p50:double p90:double p99:double max:double"

# Every table's columns as Spark SQL type names, in order: the Parquet tables' schemas
# (results.aggregate.write_rows), the same a Spark query of each table had.
TABLE_COLUMNS: Mapping[str, str] = {
    "inputs": "source:string valid:bigint malformed:bigint rejected:bigint blank:bigint "
              "malformed_example:string rejected_example:string",
    "totals": "records:bigint checks:bigint measurements:bigint runs:bigint passed:bigint failed:bigint "
              "unknown:bigint first_started_at:double last_finished_at:double pass_rate:double ci_low:double "
              "ci_high:double",
    "pass_rates": f"scenario:string check:string backend:string kafka_version:string {_OUTCOMES}",
    "latency": f"fault:string phase:string {_STATS}",
    "latency_by_partitions": f"fault:string phase:string partitions:int {_STATS}",
    "latency_by_session_timeout": f"fault:string phase:string session_timeout_ms:int {_STATS}",
    "latency_by_release": f"fault:string phase:string kafka_version:string {_STATS}",
    "latency_by_mode": f"fault:string phase:string mode:string {_STATS}",
    "latency_histogram": "fault:string phase:string low_ms:double high_ms:double count:bigint",
    "availability": "fault:string count:bigint produce_mean:double produce_min:double consume_mean:double "
                    "consume_min:double",
    "transactions": "fault:string steps:bigint committed:bigint aborted:bigint failed:bigint unknown:bigint "
                    "failure_rate:double",
    "controller": "fault:string steps:bigint controller_moves:bigint broker_change_events:bigint "
                  "broker_change_mean_ms:double queued_events:bigint queue_mean_ms:double "
                  "controlled_shutdowns:bigint shutdown_mean_ms:double unclean_elections:bigint offline_max:bigint "
                  "under_replicated_max:bigint under_min_isr_max:bigint queue_size_max:bigint",
    "trend_by_day": f"day:date runs:bigint {_OUTCOMES}",
    "trend_by_run": f"run_id:string started_at:double finished_at:double backend:string kafka_version:string "
                    f"seed:bigint scenarios:bigint records:bigint {_OUTCOMES}",
    "migration_timeline": "run_id:string scenario:string iteration:int fault:string target:string "
                          "phase_before:string phase_after:string zk_migration_state:string driver_state:string "
                          "kraft_controller:int seconds:double write_behind_s:double started_at:double",
    "time_ledger": "phase:string kafka_dictated:boolean ledgers:bigint seconds:double mean_s:double share:double",
    "failing_checks": "run_id:string seed:bigint scenario:string iteration:int check:string backend:string "
                      "kafka_version:string fault:string target:string topic:string partition:int detail:string "
                      "expected:string observed:string started_at:double",
}


def columns(table: str) -> list[tuple[str, str]]:
    """``TABLE_COLUMNS[table]`` as (name, Spark SQL type) pairs."""
    return [(name, kind) for name, kind in (item.split(":") for item in TABLE_COLUMNS[table].split())]


# --------------------------------------------------------------------------------- ordering


def nulls_first(value: Any) -> tuple[bool, Any]:
    """Spark's ascending order, nulls first (strings by code point, as Spark's UTF-8 bytes compare)."""
    return (value is not None, value)


def sort_key(values: Iterable[Any]) -> tuple[tuple[bool, Any], ...]:
    return tuple(nulls_first(v) for v in values)


def phase_position(phase: str | None) -> int | None:
    """A phase's place in a leader switch (1-based); unknown phase names go last."""
    if phase is None:
        return None
    return LATENCY_PHASES.index(phase) + 1 if phase in LATENCY_PHASES else len(LATENCY_PHASES) + 1


def _by(keys: Callable[[Row], tuple[Any, ...]], rows: Iterable[Row]) -> dict[tuple[Any, ...], list[Row]]:
    grouped: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        grouped.setdefault(keys(row), []).append(row)
    return grouped


# ------------------------------------------------------------------------------ input lines


def input_counts(facts: Sequence[Row], examples: Mapping[tuple[str, str], str]) -> list[Row]:
    """Per source file: valid / malformed / rejected / blank line counts and one example of each
    problem (``examples``, keyed by (source, status)), by source."""
    counted: dict[str, Counter[str]] = {}
    for fact in facts:
        counted.setdefault(fact["source"], Counter())[fact["status"]] += fact["n"]
    return [{"source": source, **{status: counts[status] for status in LINE_STATUSES},
             "malformed_example": examples.get((source, "malformed")),
             "rejected_example": examples.get((source, "rejected"))}
            for source, counts in sorted(counted.items())]


# ----------------------------------------------------------------------------------- outcomes


def wilson(passed: int, failed: int, z: float = Z_95) -> tuple[float | None, float | None, float | None]:
    """Pass rate = passed / (passed + failed) and its 95 % Wilson score interval (stays inside
    [0, 1], sensible for the small counts of nightly runs); all None when nothing was decided."""
    n = passed + failed
    if n <= 0:
        return None, None, None
    p = passed / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return p, max(0.0, centre - half_width), min(1.0, centre + half_width)


def _outcome(groups: Iterable[Row]) -> list[int]:
    """passed / failed / unknown over the check records of ``groups`` (measurements count none)."""
    counted: Counter[bool | None] = Counter()
    for group in groups:
        if group["kind"] == "check":
            counted[group["passed"]] += group["n"]
    return [counted[True], counted[False], counted[None]]


def _with_rate(counts: list[int]) -> dict[str, Any]:
    return dict(zip(_OUTCOME_COLUMNS, (*counts, *wilson(counts[0], counts[1]))))


def outcome_tables(groups: Sequence[Row]) -> dict[str, list[Row]]:
    """Records counted per run x scenario x check x backend x Kafka version x kind x outcome x UTC
    day (``n``, first start, last finish, smallest seed) -> totals, pass_rates (per scenario x
    check x backend x Kafka version), trend_by_day and trend_by_run.  Pass rates exclude unknown
    results (``passed`` null)."""
    counts = _outcome(groups)
    totals = {"records": sum(g["n"] for g in groups), "checks": sum(g["n"] for g in groups if g["kind"] == "check"),
              "measurements": sum(g["n"] for g in groups if g["kind"] == "measurement"),
              "runs": len({g["run_id"] for g in groups}), **dict(zip(_OUTCOME_COLUMNS[:3], counts)),
              "first_started_at": min((g["started_at"] for g in groups), default=None),
              "last_finished_at": max((g["finished_at"] for g in groups), default=None),
              **dict(zip(_OUTCOME_COLUMNS[3:], wilson(counts[0], counts[1])))}
    checks = [g for g in groups if g["kind"] == "check"]
    rates = [{**dict(zip(PASS_RATE_KEYS, key)), **_with_rate(_outcome(rows))}
             for key, rows in sorted(_by(lambda g: tuple(g[k] for k in PASS_RATE_KEYS), checks).items(),
                                     key=lambda item: sort_key(item[0]))]
    days = [{"day": EPOCH + _dt.timedelta(days=key[0]), "runs": len({g["run_id"] for g in rows}),
             **_with_rate(_outcome(rows))}
            for key, rows in sorted(_by(lambda g: (g["day"],), checks).items(), key=lambda item: sort_key(item[0]))]
    runs = [{"run_id": key[0], "started_at": min(g["started_at"] for g in rows),
             "finished_at": max(g["finished_at"] for g in rows),
             "backend": ",".join(sorted({g["backend"] for g in rows})),
             "kafka_version": ",".join(sorted({g["kafka_version"] for g in rows})),
             "seed": min(g["seed"] for g in rows), "scenarios": len({g["scenario"] for g in rows}),
             "records": sum(g["n"] for g in rows), **_with_rate(_outcome(rows))}
            for key, rows in _by(lambda g: (g["run_id"],), groups).items()]
    runs.sort(key=lambda row: sort_key((row["started_at"], row["run_id"])))
    return {"totals": [totals], "pass_rates": rates, "trend_by_day": days, "trend_by_run": runs}


# ----------------------------------------------------------------------------------- latency


def latency_tables(samples: Samples) -> dict[str, list[Row]]:
    """Samples counted per fault x phase x partitions x session timeout x release x exact value (``ms``,
    ``n``) -> count, p50, p90, p99 and max per fault x phase (``latency``), also per partition
    count, per session timeout and per Kafka release; faults by name, phases in a leader switch's order.

    Built for millions of value rows (3M records): each table is one sort of the columns, a
    running count and a binary search per percentile (:mod:`results.samples`)."""
    tables: dict[str, list[Row]] = {}
    for name, by in LATENCY_TABLES.items():
        keys = ("fault", "phase", *by)
        groups = grouped([samples.codes[k] for k in keys], within=samples.by_value)
        stats: dict[str, list[Any]] = {"count": group_sums(groups, samples.n)[2].tolist()}
        for label, percent in PERCENT:
            stats[label] = nearest_ranks(groups, samples.ms, samples.n, percent).tolist()
        stats["max"] = samples.ms[groups.order][groups.ends - 1].tolist()
        found = [(key, {stat: values[g] for stat, values in stats.items()})
                 for g, key in enumerate(samples.label_rows(keys, groups.order[groups.starts]))]
        found.sort(key=lambda item: (nulls_first(item[0][0]), nulls_first(phase_position(item[0][1])),
                                     *sort_key(item[0][1:])))
        tables[name] = [{**dict(zip(keys, key)), **values} for key, values in found]
    return tables


def latency_histogram(samples: Samples, bins_per_decade: int = HISTOGRAM_BINS_PER_DECADE) -> list[Row]:
    """Counts per fault x phase in log-spaced bins ``[low_ms, high_ms)`` (values under 0.1 ms count as 0.1)."""
    buckets = log_buckets(samples.ms, bins_per_decade)
    groups = grouped([samples.codes["fault"], samples.codes["phase"], buckets])
    counts = group_sums(groups, samples.n)[2].tolist()
    firsts = groups.order[groups.starts]
    rows: list[Row] = [{"fault": fault, "phase": phase, "low_ms": bin_edge(bucket, bins_per_decade),
                        "high_ms": bin_edge(bucket + 1, bins_per_decade), "count": count}
                       for (fault, phase), bucket, count in zip(samples.label_rows(("fault", "phase"), firsts),
                                                                 buckets[firsts].tolist(), counts)]
    rows.sort(key=lambda row: (nulls_first(row["fault"]), nulls_first(phase_position(row["phase"])),
                               nulls_first(row["phase"]), row["low_ms"]))
    return rows


def bin_edge(bucket: int, bins_per_decade: int) -> float:
    """10^(bucket / bins_per_decade), correctly rounded: the same double on every platform (the
    C library's ``pow`` and Java's ``StrictMath.pow`` differ in the last bit for some edges)."""
    with decimal.localcontext() as context:
        context.prec = 40
        return float(decimal.Decimal(10) ** (decimal.Decimal(bucket) / bins_per_decade))


def latency_values(samples: Samples) -> list[Row]:
    """Per fault x phase, how many samples round to each value of 3 significant digits, as
    (``mantissa``, ``exponent``) integers (value = mantissa x 10^exponent; 0 is (0, 0)): the
    compact, mergeable form of the samples summary.json keeps for later baseline comparisons."""
    mantissas, exponents = mantissas_exponents(samples.ms, SIGNIFICANT_DIGITS)
    groups = grouped([samples.codes["fault"], samples.codes["phase"], mantissas, exponents])
    counts = group_sums(groups, samples.n)[2].tolist()
    firsts = groups.order[groups.starts]
    counted = zip(samples.label_rows(("fault", "phase"), firsts), mantissas[firsts].tolist(),
                  exponents[firsts].tolist(), counts)
    return [{"fault": fault, "phase": phase, "mantissa": mantissa, "exponent": exponent, "count": count}
            for (fault, phase), mantissa, exponent, count in sorted(counted)]


# ------------------------------------------------------------------------ per-fault measurements


def merge_rows(rows: Iterable[Row], key: str, summed: Sequence[str] = (), smallest: Sequence[str] = (),
               largest: Sequence[str] = ()) -> list[Row]:
    """Partial rows of several files with the same ``key`` merged into one, as Spark's ``sum`` /
    ``min`` / ``max`` over all their inputs would have: nulls skipped (null when every value
    is), NaN the greatest value (Spark's ordering of doubles).  Other fields: the first row's."""
    merged: dict[Any, Row] = {}
    for row in rows:
        into = merged.get(row[key])
        if into is None:
            merged[row[key]] = dict(row)
            continue
        for name in summed:
            into[name] = _spark_fold(into[name], row[name], lambda a, b: a + b)
        for name in smallest:
            into[name] = _spark_fold(into[name], row[name], lambda a, b: min(a, b, key=_nan_greatest))
        for name in largest:
            into[name] = _spark_fold(into[name], row[name], lambda a, b: max(a, b, key=_nan_greatest))
    return list(merged.values())


def _spark_fold(a: Any, b: Any, combine: Callable[[Any, Any], Any]) -> Any:
    return b if a is None else a if b is None else combine(a, b)


def _nan_greatest(value: Any) -> tuple[bool, Any]:
    nan = isinstance(value, float) and math.isnan(value)
    return nan, 0.0 if nan else value


def _mean(total: float | None, count: float | None) -> float | None:
    return total / count if total is not None and count else None


def availability(facts: Sequence[Row]) -> list[Row]:
    """Per fault: the ``client_availability`` measurements' produce and consume availability —
    samples, mean and minimum of each (a missing value is no sample)."""
    return [{"fault": f["fault"], "count": f["n"],
             "produce_mean": _mean(f["produce_sum"], f["produce_n"]), "produce_min": f["produce_min"],
             "consume_mean": _mean(f["consume_sum"], f["consume_n"]), "consume_min": f["consume_min"]}
            for f in sorted(facts, key=lambda f: nulls_first(f["fault"]))]


def controller(facts: Sequence[Row]) -> list[Row]:
    """Per fault: what the controller's own metrics said over the fault steps (see
    :func:`results.aggregate.facts`): counts summed, mean times as the summed time over the summed
    count, gauges as the largest value seen at a step's end."""
    return [{"fault": f["fault"], "steps": f["n"], "controller_moves": f["moved"],
             "broker_change_events": f["elections"], "broker_change_mean_ms": _mean(f["election_ms"], f["elections"]),
             "queued_events": f["events"], "queue_mean_ms": _mean(f["queue_ms"], f["events"]),
             "controlled_shutdowns": f["shutdowns"], "shutdown_mean_ms": _mean(f["shutdown_ms"], f["shutdowns"]),
             "unclean_elections": f["unclean"], "offline_max": f["offline"], "under_replicated_max": f["urp"],
             "under_min_isr_max": f["under_min_isr"], "queue_size_max": f["queue_size"]}
            for f in sorted(facts, key=lambda f: nulls_first(f["fault"]))]


def transactions(facts: Sequence[Row]) -> list[Row]:
    """Per fault: the transactional workload's attempts that ended in its steps' windows, summed
    per outcome (``txn_availability`` measurements), and the failure rate — those aborted by an
    error and those whose end the client never learnt, over all (the aborts the workload asks for
    are not failures)."""
    rows = []
    for f in sorted(facts, key=lambda f: nulls_first(f["fault"])):
        counts = {name: f[f"txn_{name}"] or 0 for name in ("committed", "aborted", "failed", "unknown")}
        attempts = sum(counts.values())
        rows.append({"fault": f["fault"], "steps": f["n"], **counts,
                     "failure_rate": _mean(counts["failed"] + counts["unknown"], attempts)})
    return rows


# ------------------------------------------------------------------------------ failed checks


def failing_checks(facts: Sequence[Row]) -> list[Row]:
    """Failed checks, newest first, with what a replay needs (run id, seed, scenario, iteration);
    each fact is one failed check's columns as JSON text (``failure``), ``n`` times."""
    rows = []
    for fact in facts:
        parsed = json.loads(fact["failure"])
        rows += [{name: parsed.get(name) for name in FAILURE_COLUMNS}] * fact["n"]

    def newest_first(row: Row) -> tuple[Any, ...]:
        started = row["started_at"]
        return ((started is None, -started if started is not None else 0.0),
                *sort_key(row[k] for k in ("run_id", "scenario", "iteration", "check")))

    rows.sort(key=newest_first)
    return rows


def migration_timeline(facts: Sequence[Row]) -> list[Row]:
    """Every migration step in time order per run, scenario and iteration: the phase before and
    after, the migration and driver states, the KRaft controller in charge, the step's seconds
    and ZooKeeper's lag behind the log (``migration_timeline`` measurements: each fact is one
    record's columns as JSON text, ``step``)."""
    rows = []
    for fact in facts:
        parsed = json.loads(fact["step"])
        observed = json.loads(parsed.get("observed") or "{}") if isinstance(parsed.get("observed"), str) \
            else (parsed.get("observed") or {})
        row = {name: parsed.get(name) for name in ("run_id", "scenario", "iteration", "fault", "target")}
        row.update({name: observed.get(name) for name in TIMELINE_OBSERVED})
        row["started_at"] = parsed.get("started_at")
        rows += [row] * fact["n"]
    rows.sort(key=lambda r: sort_key(r[k] for k in ("run_id", "scenario", "iteration", "started_at")))
    return rows


def time_ledger(facts: Sequence[Row]) -> list[Row]:
    """Where the time went: per time-ledger phase (:mod:`scenarios.model.ledger`, in its order;
    a phase this code does not know last), the seconds over every counted ``time_ledger``
    measurement, how many ledgers spent any, their mean and the phase's share of all the seconds;
    Kafka-dictated phases marked."""
    total = sum(f["seconds"] or 0.0 for f in facts)

    def position(row: Row) -> tuple[int, str]:
        name = row["phase"]
        return (PHASES.index(name) if name in PHASES else len(PHASES), name)

    return [{"phase": f["phase"], "kafka_dictated": f["phase"] in KAFKA_DICTATED, "ledgers": f["n"],
             "seconds": f["seconds"], "mean_s": _mean(f["seconds"], f["n"]),
             "share": f["seconds"] / total if total and f["seconds"] is not None else None}
            for f in sorted(facts, key=position)]

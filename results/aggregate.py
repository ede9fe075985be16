"""Spark ETL of records.jsonl files: extract, pure transforms, load.

* **Extract** — lines are read as text and parsed with ``from_json`` against an explicit schema
  mirroring ``results.schema.Record`` (no inference pass).  ``expected``/``observed`` hold any
  JSON; they are typed as strings, which Spark's JSON parser fills with the value's compact JSON
  text for objects and arrays (and the plain text for scalars).  Every non-blank line ends up
  ``valid``, ``malformed`` (not JSON, a wrongly typed field, a missing required field) or
  ``rejected`` (a ``schema_version`` this code cannot read), counted per file.
* **Transforms** — plain ``DataFrame -> DataFrame`` functions without I/O, tested on small frames.
* **Load** — each aggregate is collected into Python rows (for summary.json / HTML), and those
  rows are written as a Parquet table by pyarrow (:func:`write_rows`), not computed again.

Percentiles are nearest-rank: pXX is the smallest sample with at least XX % of the samples at or
below it (Spark's exact ``percentile_disc``; ``tests/spark`` checks it against a plain-Python
computation).  Pass rates exclude unknown results (``passed`` null) and carry a 95 % Wilson
score interval, which stays inside [0, 1] and is sensible for the small counts of nightly runs.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from results.schema import FIELD_NAMES, LATENCY_PHASES, READABLE_VERSIONS, REQUIRED_FIELDS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
LATENCY_STATS = ("p50", "p90", "p99", "max")
Z_95 = 1.959963984540054  # two-sided 95 % normal quantile
PASS_RATE_KEYS = ("scenario", "check", "backend", "kafka_version")
CORRUPT = "_corrupt"
NO_FAULT = "none"  # fault label of latency samples from records without a fault
EXCERPT_CHARS = 200
HISTOGRAM_BINS_PER_DECADE = 20

# Spark SQL types of Record's fields (DDL names), in Record's order.
RECORD_TYPES: Mapping[str, str] = {
    "run_id": "string", "scenario": "string", "iteration": "int", "seed": "bigint",
    "backend": "string", "kafka_version": "string", "brokers": "int", "partitions": "int",
    "kind": "string", "check": "string", "passed": "boolean", "started_at": "double",
    "finished_at": "double", "fault": "string", "target": "string",
    "expected": "string", "observed": "string",  # any JSON, kept as its JSON text
    "detail": "string", "topic": "string", "partition": "int",
    "latency_ms": "map<string,double>", "timestamps": "map<string,double>",
    "session_timeout_ms": "int", "tick_time_ms": "int", "git_revision": "string",
    "schema_version": "int",
}


def record_schema(with_corrupt: bool = False) -> "StructType":
    """The explicit Spark schema of a record line (plus the corrupt-record column if asked)."""
    from pyspark.sql import types as T

    if tuple(RECORD_TYPES) != FIELD_NAMES:
        raise AssertionError("RECORD_TYPES no longer mirrors results.schema.Record")
    spark_types = {
        "string": T.StringType(), "int": T.IntegerType(), "bigint": T.LongType(),
        "boolean": T.BooleanType(), "double": T.DoubleType(),
        "map<string,double>": T.MapType(T.StringType(), T.DoubleType(), True),
    }
    fields = [T.StructField(name, spark_types[ddl], True) for name, ddl in RECORD_TYPES.items()]
    if with_corrupt:
        fields.append(T.StructField(CORRUPT, T.StringType(), True))
    return T.StructType(fields)


# ---------------------------------------------------------------------------------- extract


def read_lines(spark: "SparkSession", files: Sequence[Path]) -> "DataFrame":
    """Columns ``source`` (the file, as Spark names it: a URI) and ``line``."""
    from pyspark.sql import functions as F

    return spark.read.text([str(f) for f in files]).select(
        F.col("_metadata.file_path").alias("source"), F.col("value").alias("line")
    )


def source_path(uri: str) -> str:
    """Spark's ``file:/a%20b/records.jsonl`` back to ``/a b/records.jsonl``; other URIs unchanged."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else uri


def parse_lines(lines: "DataFrame") -> "DataFrame":
    """Add struct column ``r``: the parsed record, with ``r._corrupt`` set when the line is bad."""
    from pyspark.sql import functions as F

    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    return lines.withColumn("r", F.from_json("line", record_schema(with_corrupt=True), options))


def classify(parsed: "DataFrame") -> "DataFrame":
    """Flatten the record and add ``status`` (valid | malformed | rejected | blank) and ``problem``.

    A readable JSON line with an unknown ``schema_version`` is *rejected* even if its fields do
    not fit version 1's types: a newer layout may change them.
    """
    from pyspark.sql import functions as F

    version = F.col("r.schema_version")
    readable = sorted(READABLE_VERSIONS)
    # concat_ws skips nulls: "" when nothing is missing (cheaper than an array + lambda filter).
    missing = F.concat_ws(", ", *[F.when(F.col(f"r.{name}").isNull(), F.lit(name)) for name in REQUIRED_FIELDS])
    checked = parsed.select(
        "source", "line", "r",
        F.when(F.trim("line") == "", "blank")
        .when(version.isNotNull() & ~version.isin(readable), "rejected")
        .when(F.col(f"r.{CORRUPT}").isNotNull(), "malformed")
        .when(missing != "", "malformed")
        .otherwise("valid").alias("status"),
        missing.alias("missing"),
    )
    status = F.col("status")
    problem = (
        F.when(status == "rejected",
               F.format_string(f"schema_version %d is not readable (readable: {', '.join(map(str, readable))})",
                               version))
        .when(F.col(f"r.{CORRUPT}").isNotNull(),
              "not a JSON object of the record schema (bad JSON or a wrongly typed field)")
        .when(status == "malformed", F.concat(F.lit("missing "), F.col("missing")))
    )
    return checked.select(
        "source",
        "status",
        problem.alias("problem"),
        F.when(status.isin("malformed", "rejected"), F.substring("line", 1, EXCERPT_CHARS)).alias("excerpt"),
        *[F.col(f"r.{name}").alias(name) for name in FIELD_NAMES],
    )


def _ordered(frame: "DataFrame", *keys: "str | Column") -> "DataFrame":
    """``frame`` in one partition, sorted by ``keys``: the same order as ``orderBy`` (same
    comparator, nulls first), without the sampling job a range-partitioned sort starts.  Only for
    the small aggregates the report collects."""
    return frame.coalesce(1).sortWithinPartitions(*keys)


def valid_records(classified: "DataFrame") -> "DataFrame":
    return classified.where(classified.status == "valid").select(*FIELD_NAMES)


def input_counts(classified: "DataFrame") -> "DataFrame":
    """Per source file: valid / malformed / rejected / blank line counts and one example of each problem."""
    from pyspark.sql import functions as F

    def example(kind: str) -> "Column":
        text = F.concat(F.col("problem"), F.lit(": "), F.col("excerpt"))
        return F.first(F.when(F.col("status") == kind, text), ignorenulls=True).alias(f"{kind}_example")

    return (
        classified.groupBy("source")
        .agg(
            *[F.count(F.when(F.col("status") == kind, 1)).alias(kind)
              for kind in ("valid", "malformed", "rejected", "blank")],
            example("malformed"),
            example("rejected"),
        )
    ).transform(lambda counted: _ordered(counted, "source"))


# ------------------------------------------------------------------------------- transforms


def with_pass_rate(counts: "DataFrame", z: float = Z_95) -> "DataFrame":
    """Add ``pass_rate`` = passed / (passed + failed) and its Wilson score interval (``ci_low``,
    ``ci_high``); all three null when nothing was decided."""
    from pyspark.sql import functions as F

    n = F.col("passed") + F.col("failed")
    p = F.col("passed") / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * F.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    decided = n > 0
    return counts.select(
        "*",
        F.when(decided, p).alias("pass_rate"),
        F.when(decided, F.greatest(F.lit(0.0), centre - half_width)).alias("ci_low"),
        F.when(decided, F.least(F.lit(1.0), centre + half_width)).alias("ci_high"),
    )


def _outcome_counts() -> list["Column"]:
    from pyspark.sql import functions as F

    is_check = F.col("kind") == "check"
    return [
        F.count(F.when(is_check & (F.col("passed") == F.lit(True)), 1)).alias("passed"),
        F.count(F.when(is_check & (F.col("passed") == F.lit(False)), 1)).alias("failed"),
        F.count(F.when(is_check & F.col("passed").isNull(), 1)).alias("unknown"),
    ]


def check_records(records: "DataFrame") -> "DataFrame":
    return records.where(records.kind == "check")


def pass_rates(records: "DataFrame") -> "DataFrame":
    """Per scenario x check x backend x Kafka version: passed / failed / unknown and pass rate."""
    counts = check_records(records).groupBy(*PASS_RATE_KEYS).agg(*_outcome_counts())
    return _ordered(with_pass_rate(counts), *PASS_RATE_KEYS)


def totals(records: "DataFrame") -> "DataFrame":
    """One row over everything: record / run counts, check outcomes, overall pass rate."""
    from pyspark.sql import functions as F

    counts = records.agg(
        F.count(F.lit(1)).alias("records"),
        F.count(F.when(F.col("kind") == "check", 1)).alias("checks"),
        F.count(F.when(F.col("kind") == "measurement", 1)).alias("measurements"),
        F.countDistinct("run_id").alias("runs"),
        *_outcome_counts(),
        F.min("started_at").alias("first_started_at"),
        F.max("finished_at").alias("last_finished_at"),
    )
    return with_pass_rate(counts)


def outcome_groups(records: "DataFrame") -> "DataFrame":
    """Records counted per run x scenario x check x backend x Kafka version x kind x outcome x UTC
    day, with the first start, last finish and smallest seed of each group: :func:`totals`,
    :func:`pass_rates`, :func:`trend_by_day` and :func:`trend_by_run` all follow from these rows
    exactly (counts add up, minima and maxima and distinct values carry over), finished in Python
    by :func:`finish_outcomes` — one Spark query instead of four (issue 15 item 5)."""
    from pyspark.sql import functions as F

    day = F.date_from_unix_date(F.floor(F.col("started_at") / 86400).cast("int"))
    return records.groupBy(*_OUTCOME_KEYS, day.alias("day")).agg(
        F.count(F.lit(1)).alias("records"),
        F.min("started_at").alias("started_at"),
        F.max("finished_at").alias("finished_at"),
        F.min("seed").alias("seed"),
    )


_OUTCOME_KEYS = ("run_id", "scenario", "check", "backend", "kafka_version", "kind", "passed")
_OUTCOME_COLUMNS = ("passed", "failed", "unknown", "pass_rate", "ci_low", "ci_high")


def finish_outcomes(groups: Sequence[Any]) -> dict[str, list[Any]]:
    """:func:`outcome_groups`' rows -> the rows of totals, pass_rates, trend_by_day and
    trend_by_run, equal to what those Spark queries give: same columns, same order, and the
    Wilson interval in the same floating-point operations (:func:`wilson`)."""
    from pyspark.sql import Row

    def outcome(rows: Sequence[Any]) -> list[int]:
        checks = [r for r in rows if r["kind"] == "check"]
        return [sum(r["records"] for r in checks if r["passed"] is True),
                sum(r["records"] for r in checks if r["passed"] is False),
                sum(r["records"] for r in checks if r["passed"] is None)]

    def by(keys: Sequence[str], rows: Sequence[Any]) -> dict[tuple[Any, ...], list[Any]]:
        grouped: dict[tuple[Any, ...], list[Any]] = {}
        for row in rows:
            grouped.setdefault(tuple(row[k] for k in keys), []).append(row)
        return grouped

    counts = outcome(groups)
    totals_row = Row("records", "checks", "measurements", "runs", "passed", "failed", "unknown", "first_started_at",
                     "last_finished_at", "pass_rate", "ci_low", "ci_high")
    totals_rows = [totals_row(
        sum(r["records"] for r in groups), sum(r["records"] for r in groups if r["kind"] == "check"),
        sum(r["records"] for r in groups if r["kind"] == "measurement"), len({r["run_id"] for r in groups}),
        *counts, min((r["started_at"] for r in groups), default=None),
        max((r["finished_at"] for r in groups), default=None), *wilson(counts[0], counts[1]))]
    checks = [r for r in groups if r["kind"] == "check"]
    rate_row = Row(*PASS_RATE_KEYS, *_OUTCOME_COLUMNS)
    rates = [rate_row(*key, *(c := outcome(rows)), *wilson(c[0], c[1]))
             for key, rows in sorted(by(PASS_RATE_KEYS, checks).items(), key=lambda item: _sort_key(item[0]))]
    day_row = Row("day", "runs", *_OUTCOME_COLUMNS)
    days = [day_row(key[0], len({r["run_id"] for r in rows}), *(c := outcome(rows)), *wilson(c[0], c[1]))
            for key, rows in sorted(by(("day",), checks).items(), key=lambda item: _sort_key(item[0]))]
    run_row = Row("run_id", "started_at", "finished_at", "backend", "kafka_version", "seed", "scenarios", "records",
                  *_OUTCOME_COLUMNS)
    runs = [run_row(key[0], min(r["started_at"] for r in rows), max(r["finished_at"] for r in rows),
                    ",".join(sorted({r["backend"] for r in rows})), ",".join(sorted({r["kafka_version"] for r in rows})),
                    min(r["seed"] for r in rows), len({r["scenario"] for r in rows}), sum(r["records"] for r in rows),
                    *(c := outcome(rows)), *wilson(c[0], c[1]))
            for key, rows in by(("run_id",), groups).items()]
    runs.sort(key=lambda row: _sort_key((row["started_at"], row["run_id"])))
    return {"totals": totals_rows, "pass_rates": rates, "trend_by_day": days, "trend_by_run": runs}


def wilson(passed: int, failed: int, z: float = Z_95) -> tuple[float | None, float | None, float | None]:
    """:func:`with_pass_rate` in Python, operation for operation (the same IEEE double results):
    pass rate and its Wilson score interval, all None when nothing was decided."""
    n = passed + failed
    if n <= 0:
        return None, None, None
    p = passed / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return p, max(0.0, centre - half_width), min(1.0, centre + half_width)


def _sort_key(values: Sequence[Any]) -> tuple[tuple[bool, Any], ...]:
    """Spark's ascending order, nulls first (strings by code point, as Spark's UTF-8 bytes compare)."""
    return tuple(_nulls_first(v) for v in values)


def outcome_schemas() -> dict[str, "StructType"]:
    """The schemas of :func:`totals`, :func:`pass_rates`, :func:`trend_by_day` and
    :func:`trend_by_run` (their Parquet tables), without asking Spark to plan those queries."""
    from pyspark.sql import types as T

    def fields(spec: str) -> "StructType":
        names = {"s": T.StringType(), "l": T.LongType(), "d": T.DoubleType(), "t": T.DateType()}
        return T.StructType([T.StructField(name, names[kind]) for name, kind in
                             (item.split(":") for item in spec.split())])

    outcomes = "passed:l failed:l unknown:l pass_rate:d ci_low:d ci_high:d"
    return {
        "totals": fields("records:l checks:l measurements:l runs:l passed:l failed:l unknown:l first_started_at:d "
                         "last_finished_at:d pass_rate:d ci_low:d ci_high:d"),
        "pass_rates": fields(f"scenario:s check:s backend:s kafka_version:s {outcomes}"),
        "trend_by_day": fields(f"day:t runs:l {outcomes}"),
        "trend_by_run": fields(f"run_id:s started_at:d finished_at:d backend:s kafka_version:s seed:l scenarios:l "
                               f"records:l {outcomes}"),
    }


def latency_samples(records: "DataFrame") -> "DataFrame":
    """One row per (record, phase) with a measured value: fault, phase, ms, partitions, session timeout."""
    from pyspark.sql import functions as F

    exploded = records.where(F.col("latency_ms").isNotNull()).select(
        F.coalesce("fault", F.lit(NO_FAULT)).alias("fault"),
        "partitions",
        "session_timeout_ms",
        F.explode("latency_ms").alias("phase", "ms"),
    )
    return exploded.where(F.col("ms").isNotNull() & ~F.isnan("ms"))


AVAILABILITY_CHECK = "client_availability"


def availability(records: "DataFrame") -> "DataFrame":
    """Per fault: the produce and consume availability of the ``client_availability``
    measurements (one per partition per fault step; shares of fixed windows with success):
    samples, mean and minimum of each."""
    from pyspark.sql import functions as F

    measured = records.where((F.col("kind") == "measurement") & (F.col("check") == AVAILABILITY_CHECK)).select(
        F.coalesce("fault", F.lit(NO_FAULT)).alias("fault"),
        F.get_json_object("observed", "$.produce_availability").cast("double").alias("produce"),
        F.get_json_object("observed", "$.consume_availability").cast("double").alias("consume"),
    )
    per_fault = measured.groupBy("fault").agg(
        F.count(F.lit(1)).alias("count"),
        F.avg("produce").alias("produce_mean"), F.min("produce").alias("produce_min"),
        F.avg("consume").alias("consume_mean"), F.min("consume").alias("consume_min"),
    )
    return _ordered(per_fault, "fault")


CONTROLLER_CHECK = "controller_metrics"


def controller_metrics(records: "DataFrame") -> "DataFrame":
    """Per fault: what the controller's own metrics said over the fault steps (the
    ``controller_metrics`` measurements, one per fault step, :mod:`scenarios.controller_metrics`:
    JMX timers' running sums differenced between the scrape before the fault and the one when
    the step's measurement closed).  BrokerChange events are the ones ``LeaderElectionRateAndTimeMs``
    times (Kafka 3.9 ``ControllerState.BrokerChange``); mean times are the summed time over the
    summed count; gauges are the largest value seen at a step's end (not a peak: two scrapes)."""
    from pyspark.sql import functions as F

    def number(path: str) -> "Column":
        return F.get_json_object("observed", path).cast("double")

    def whole(path: str) -> "Column":  # counts, and gauges that count partitions or events
        return number(path).cast("long")

    def mean(total: str, count: str) -> "Column":
        return F.when(F.sum(count) > 0, F.sum(total) / F.sum(count))

    measured = records.where((F.col("kind") == "measurement") & (F.col("check") == CONTROLLER_CHECK)).select(
        F.coalesce("fault", F.lit(NO_FAULT)).alias("fault"),
        whole("$.leader_election.count").alias("elections"), number("$.leader_election.total_ms").alias("election_ms"),
        whole("$.event_queue_time.count").alias("events"), number("$.event_queue_time.total_ms").alias("queue_ms"),
        whole("$.controlled_shutdown.count").alias("shutdowns"),
        number("$.controlled_shutdown.total_ms").alias("shutdown_ms"),
        whole("$.unclean_elections.count").alias("unclean"),
        (F.get_json_object("observed", "$.controller_before")
         != F.get_json_object("observed", "$.controller_after")).cast("int").alias("moved"),
        whole("$.offline_partitions.after").alias("offline"), whole("$.under_replicated.after").alias("urp"),
        whole("$.under_min_isr.after").alias("under_min_isr"), whole("$.event_queue_size.after").alias("queue_size"),
    )
    per_fault = measured.groupBy("fault").agg(
        F.count(F.lit(1)).alias("steps"),
        F.sum("moved").alias("controller_moves"),
        F.sum("elections").alias("broker_change_events"), mean("election_ms", "elections").alias("broker_change_mean_ms"),
        F.sum("events").alias("queued_events"), mean("queue_ms", "events").alias("queue_mean_ms"),
        F.sum("shutdowns").alias("controlled_shutdowns"), mean("shutdown_ms", "shutdowns").alias("shutdown_mean_ms"),
        F.sum("unclean").alias("unclean_elections"),
        F.max("offline").alias("offline_max"), F.max("urp").alias("under_replicated_max"),
        F.max("under_min_isr").alias("under_min_isr_max"), F.max("queue_size").alias("queue_size_max"),
    )
    return _ordered(per_fault, "fault")


def _phase_rank() -> "Column":
    """Sort key putting phases in a leader switch's order; unknown phase names go last."""
    from pyspark.sql import functions as F

    position = F.array_position(F.array(*[F.lit(p) for p in LATENCY_PHASES]), F.col("phase"))
    return F.when(position == 0, F.lit(len(LATENCY_PHASES) + 1)).otherwise(position)


def latency_percentiles(samples: "DataFrame", by: Sequence[str] = ()) -> "DataFrame":
    """count, p50, p90, p99 (nearest rank) and max of ``ms`` per fault x phase (x ``by``)."""
    from pyspark.sql import functions as F

    keys = ["fault", "phase", *by]
    stats = samples.groupBy(*keys).agg(
        F.count("ms").alias("count"),
        *[F.expr(f"percentile_disc({fraction}) WITHIN GROUP (ORDER BY ms)").alias(name)
          for name, fraction in PERCENTILES],
        F.max("ms").alias("max"),
    )
    return _ordered(stats, "fault", _phase_rank(), "phase", *by)


# The three percentile tables: their extra grouping key (after fault and phase).
LATENCY_TABLES: Mapping[str, tuple[str, ...]] = {
    "latency": (), "latency_by_partitions": ("partitions",), "latency_by_session_timeout": ("session_timeout_ms",),
}
_LATENCY_KEYS = ("fault", "phase", "partitions", "session_timeout_ms")


def latency_percentiles_grouped(samples: "DataFrame") -> "DataFrame":
    """The three tables of :data:`LATENCY_TABLES` in one query (GROUPING SETS): one shuffle and
    sort of the samples instead of three, and one job; ``_set`` says which table a row belongs
    to (the index in ``LATENCY_TABLES``).  :func:`split_latency_percentiles` makes the tables."""
    from pyspark.sql import functions as F

    sets = [["fault", "phase", *by] for by in LATENCY_TABLES.values()]
    # grouping_id(): a bit per key, set where the key is aggregated away: 0b0011 for (fault, phase),
    # 0b0001 with partitions, 0b0010 with session_timeout_ms.
    ids = {0b0011: 0, 0b0001: 1, 0b0010: 2}
    grouped = samples.groupingSets(sets, *_LATENCY_KEYS).agg(
        F.grouping_id(*_LATENCY_KEYS).alias("_gid"),
        F.count("ms").alias("count"),
        *[F.expr(f"percentile_disc({fraction}) WITHIN GROUP (ORDER BY ms)").alias(name)
          for name, fraction in PERCENTILES],
        F.max("ms").alias("max"),
    )
    table = F.when(F.col("_gid") == F.lit(0b0011), ids[0b0011]).when(
        F.col("_gid") == F.lit(0b0001), ids[0b0001]).otherwise(ids[0b0010])
    return grouped.select(table.alias("_set"), *_LATENCY_KEYS, "count", *[n for n, _ in PERCENTILES], "max")


def split_latency_percentiles(rows: Sequence[Any]) -> dict[str, list[Any]]:
    """:func:`latency_percentiles_grouped`'s rows -> the three tables, each with the columns and
    in the order :func:`latency_percentiles` gives (Spark's ascending sort, nulls first; strings
    compare as Spark's UTF-8 bytes do, by code point)."""
    from pyspark.sql import Row

    tables: dict[str, list[Any]] = {}
    for index, (name, by) in enumerate(LATENCY_TABLES.items()):
        columns = ("fault", "phase", *by, "count", *[n for n, _ in PERCENTILES], "max")
        mine = [row for row in rows if row["_set"] == index]
        mine.sort(key=lambda row: (_nulls_first(row["fault"]), _nulls_first(_phase_position(row["phase"])),
                                   _nulls_first(row["phase"]), *[_nulls_first(row[key]) for key in by]))
        make = Row(*columns)
        tables[name] = [make(*[row[c] for c in columns]) for row in mine]
    return tables


def latency_percentiles_schema(by: Sequence[str]) -> "StructType":
    """The schema :func:`latency_percentiles` gives for the extra keys ``by``."""
    from pyspark.sql import types as T

    keys = [T.StructField("fault", T.StringType()), T.StructField("phase", T.StringType())]
    keys += [T.StructField(key, T.IntegerType()) for key in by]
    stats = [T.StructField("count", T.LongType(), False)]
    stats += [T.StructField(name, T.DoubleType()) for name in LATENCY_STATS]
    return T.StructType(keys + stats)


def _phase_position(phase: str | None) -> int | None:
    """:func:`_phase_rank` in Python."""
    if phase is None:
        return None
    return LATENCY_PHASES.index(phase) + 1 if phase in LATENCY_PHASES else len(LATENCY_PHASES) + 1


def _nulls_first(value: Any) -> tuple[bool, Any]:
    return (value is not None, value)


def latency_histogram(samples: "DataFrame", bins_per_decade: int = HISTOGRAM_BINS_PER_DECADE) -> "DataFrame":
    """Counts per fault x phase in log-spaced bins ``[low_ms, high_ms)`` (values under 0.1 ms count as 0.1)."""
    from pyspark.sql import functions as F

    bucket = F.floor(F.log10(F.greatest(F.col("ms"), F.lit(0.1))) * bins_per_decade).cast("int")
    counted = samples.groupBy("fault", "phase", bucket.alias("bucket")).agg(F.count(F.lit(1)).alias("count"))
    binned = counted.select(
        "fault", "phase",
        F.pow(F.lit(10.0), F.col("bucket") / bins_per_decade).alias("low_ms"),
        F.pow(F.lit(10.0), (F.col("bucket") + 1) / bins_per_decade).alias("high_ms"),
        "count",
    )
    return _ordered(binned, "fault", _phase_rank(), "phase", "low_ms")


def trend_by_day(records: "DataFrame") -> "DataFrame":
    """Check outcomes per UTC day of ``started_at`` (independent of the session time zone)."""
    from pyspark.sql import functions as F

    day = F.date_from_unix_date(F.floor(F.col("started_at") / 86400).cast("int"))
    counts = (
        check_records(records)
        .groupBy(day.alias("day"))
        .agg(F.countDistinct("run_id").alias("runs"), *_outcome_counts())
    )
    return _ordered(with_pass_rate(counts), "day")


def trend_by_run(records: "DataFrame") -> "DataFrame":
    """One row per run: when, where, which seed, how many records, check outcomes."""
    from pyspark.sql import functions as F

    def joined(column: str) -> "Column":
        return F.array_join(F.array_sort(F.collect_set(column)), ",")

    counts = records.groupBy("run_id").agg(
        F.min("started_at").alias("started_at"),
        F.max("finished_at").alias("finished_at"),
        joined("backend").alias("backend"),
        joined("kafka_version").alias("kafka_version"),
        F.min("seed").alias("seed"),
        F.countDistinct("scenario").alias("scenarios"),
        F.count(F.lit(1)).alias("records"),
        *_outcome_counts(),
    )
    return _ordered(with_pass_rate(counts), "started_at", "run_id")


FAILURE_COLUMNS = (
    "run_id", "seed", "scenario", "iteration", "check", "backend", "kafka_version", "fault",
    "target", "topic", "partition", "detail", "expected", "observed", "started_at",
)


def failing_checks(records: "DataFrame") -> "DataFrame":
    """Failed checks, newest first, with what a replay needs (run id, seed, scenario, iteration)."""
    from pyspark.sql import functions as F

    failed = check_records(records).where(F.col("passed") == F.lit(False))
    return failed.select(*FAILURE_COLUMNS).orderBy(
        F.col("started_at").desc(), "run_id", "scenario", "iteration", "check"
    )


# ------------------------------------------------------------------------------------- load


@dataclass
class Aggregates:
    """Everything the report shows, as JSON-ready Python rows."""

    inputs: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    pass_rates: list[dict[str, Any]] = field(default_factory=list)
    latency: list[dict[str, Any]] = field(default_factory=list)
    latency_by_partitions: list[dict[str, Any]] = field(default_factory=list)
    latency_by_session_timeout: list[dict[str, Any]] = field(default_factory=list)
    latency_histogram: list[dict[str, Any]] = field(default_factory=list)
    availability: list[dict[str, Any]] = field(default_factory=list)
    controller: list[dict[str, Any]] = field(default_factory=list)
    trend_by_day: list[dict[str, Any]] = field(default_factory=list)
    trend_by_run: list[dict[str, Any]] = field(default_factory=list)
    failing_checks: list[dict[str, Any]] = field(default_factory=list)
    failing_checks_total: int = 0
    # (fault, phase, mantissa, exponent, count): the samples rounded to 3 significant digits
    latency_values: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


EMPTY_TOTALS: Mapping[str, Any] = {
    "records": 0, "checks": 0, "measurements": 0, "runs": 0, "passed": 0, "failed": 0,
    "unknown": 0, "first_started_at": None, "last_finished_at": None,
    "pass_rate": None, "ci_low": None, "ci_high": None,
}


PARALLEL_JOBS = 4  # concurrent Spark jobs: each small aggregate's driver-side planning overlaps the others'
# Columns only failing checks (and, for ``observed``, the availability measurements) are read
# for: nulled elsewhere in the cached frame, which keeps 3M records' cache a fraction of the text.
_FAILURE_ONLY = ("expected", "detail", "target")
_UNREAD = ("timestamps",)


def slim(classified: "DataFrame") -> "DataFrame":
    """``classified`` with the heavy JSON-text columns kept only on the rows an aggregate reads
    them from (failed checks: expected/observed/detail/target; client_availability and
    controller_metrics measurements: observed) and ``timestamps`` dropped to null: every transform gives the same
    result on it as on ``classified``, from a cache several times smaller."""
    from pyspark.sql import functions as F

    failed_check = (F.col("kind") == "check") & (F.col("passed") == F.lit(False))
    availability_row = (F.col("kind") == "measurement") & F.col("check").isin(AVAILABILITY_CHECK, CONTROLLER_CHECK)

    def column(name: str) -> "Column":
        if name in _FAILURE_ONLY:
            return F.when(failed_check, F.col(name)).alias(name)
        if name == "observed":
            return F.when(failed_check | availability_row, F.col(name)).alias(name)
        if name in _UNREAD:
            return F.lit(None).cast(classified.schema[name].dataType).alias(name)
        return F.col(name)

    return classified.select("source", "status", "problem", "excerpt", *[column(name) for name in FIELD_NAMES])


def latency_value_counts(samples: "DataFrame") -> "DataFrame":
    """Per fault x phase, how many samples round to each value of 3 significant digits, as
    (``mantissa``, ``exponent``) integers (value = mantissa x 10^exponent; 0 is (0, 0)): the
    compact, mergeable form of the samples summary.json keeps for later baseline comparisons
    (:mod:`results.comparison` rebuilds and normalises the values in plain Python)."""
    from pyspark.sql import functions as F

    magnitude = F.floor(F.log10(F.abs(F.col("ms")))).cast("int")
    exponent = F.when(F.col("ms") == 0, F.lit(0)).otherwise(magnitude - (SIGNIFICANT_DIGITS - 1))
    mantissa = F.when(F.col("ms") == 0, F.lit(0)).otherwise(
        F.round(F.col("ms") / F.pow(F.lit(10.0), exponent)).cast("long"))
    return samples.groupBy("fault", "phase", mantissa.alias("mantissa"), exponent.alias("exponent")).agg(
        F.count(F.lit(1)).alias("count"))


SIGNIFICANT_DIGITS = 3
# Up to this much input (one run is ~2.5-3 MB of records.jsonl), the aggregation is all fixed cost:
# Spark's code generation (janino compiling each query's Java) costs more than interpreting a
# few thousand rows.  Not 64 MiB: the synthetic 100k records (66 MB) fell just under it and ran
# interpreted, 28.1 / 32.4 s wall (54 / 62 JVM CPU-s) against 25.2 / 28.8 s (48 / 55) compiled,
# alternating at load 2-3 (issue 15 item 5).
SMALL_INPUT_BYTES = 16 << 20
_INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@contextlib.contextmanager
def _interpreted(spark: "SparkSession", enabled: bool) -> Iterator[None]:
    """Interpreted expressions while the block runs (same results: Spark evaluates the same
    expressions either way), the session's own settings back afterwards."""
    if not enabled:
        yield
        return
    saved: dict[str, str | None] = {key: spark.conf.get(key, None) for key in _INTERPRETED}
    for key, value in _INTERPRETED.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, before in saved.items():
            if before is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, before)


def aggregate(spark: "SparkSession", files: Sequence[Path], tables_dir: Path | None = None,
              failing_limit: int = 500) -> Aggregates:
    """Run the whole ETL over ``files``; write Parquet tables to ``tables_dir`` if given.

    One scan of the input fills a cached, slimmed frame (:func:`slim`) and the per-file counts;
    every other aggregate runs from the cache as concurrent Spark jobs
    (``PARALLEL_JOBS``): on a small input a job's cost is the driver's planning and scheduling,
    which concurrency overlaps; on a large one both cores stay busy.
    """
    started = time.monotonic()
    result = Aggregates(totals=dict(EMPTY_TOTALS))
    if not files:
        return result
    small = sum(f.stat().st_size for f in files) <= SMALL_INPUT_BYTES
    with _interpreted(spark, small):
        return _aggregate(spark, files, tables_dir, failing_limit, started, result)


def _aggregate(spark: "SparkSession", files: Sequence[Path], tables_dir: Path | None, failing_limit: int,
               started: float, result: Aggregates) -> Aggregates:
    from concurrent.futures import ThreadPoolExecutor

    # Spark's compressed columnar cache, filled by the first job (the per-file counts).  Not a
    # localCheckpoint: measured in a fresh JVM on one run's records, checkpointing took 16 s
    # where persist + the first job took 3 s.
    cached = slim(classify(parse_lines(read_lines(spark, files)))).persist()
    try:
        counts = input_counts(cached)
        inputs = counts.collect()
        records = valid_records(cached)
        samples = latency_samples(records)
        failures = failing_checks(records)
        tables: dict[str, "DataFrame"] = {
            "outcome_groups": outcome_groups(records),
            "latency_grouping_sets": latency_percentiles_grouped(samples),
            "latency_histogram": latency_histogram(samples),
            "availability": availability(records),
            "controller": controller_metrics(records),
            "latency_values": latency_value_counts(samples),
            "failing_checks": failures.limit(failing_limit),
        }
        with ThreadPoolExecutor(max_workers=PARALLEL_JOBS, thread_name_prefix="aggregate") as pool:
            futures = {name: pool.submit(frame.collect) for name, frame in tables.items()}
            loaded = {name: future.result() for name, future in futures.items()}
        loaded.update(split_latency_percentiles(loaded.pop("latency_grouping_sets")))
        loaded.update(finish_outcomes(loaded.pop("outcome_groups")))
        failed_total = loaded["totals"][0]["failed"]  # every failed check is one failing_checks row
        if tables_dir is not None:
            schemas = {name: tables[name].schema for name in _TABLES if name in tables}
            schemas.update({name: latency_percentiles_schema(by) for name, by in LATENCY_TABLES.items()})
            schemas.update(outcome_schemas())
            written = {"inputs": (counts.schema, inputs), **{name: (schemas[name], loaded[name]) for name in _TABLES}}
            if failed_total > len(loaded["failing_checks"]):  # not all collected: Spark writes them
                _write(failures, tables_dir / "failing_checks")
            else:
                written["failing_checks"] = (failures.schema, loaded["failing_checks"])
            for name, (schema, rows) in written.items():
                write_rows(rows, schema, tables_dir / name)
    finally:
        cached.unpersist()
    result.inputs = [{**row, "source": source_path(row["source"])} for row in map(_jsonable_row, inputs)]
    jsonable = {name: [_jsonable_row(row) for row in rows] for name, rows in loaded.items()}
    result.totals = jsonable["totals"][0]
    result.pass_rates = jsonable["pass_rates"]
    result.latency = jsonable["latency"]
    result.latency_by_partitions = jsonable["latency_by_partitions"]
    result.latency_by_session_timeout = jsonable["latency_by_session_timeout"]
    result.latency_histogram = jsonable["latency_histogram"]
    result.availability = jsonable["availability"]
    result.controller = jsonable["controller"]
    result.trend_by_day = jsonable["trend_by_day"]
    result.trend_by_run = jsonable["trend_by_run"]
    result.latency_values = jsonable["latency_values"]
    result.failing_checks, result.failing_checks_total = jsonable["failing_checks"], failed_total
    result.seconds = time.monotonic() - started
    log.debug("aggregated %s records from %d file(s) in %.1f s", result.totals.get("records"), len(files),
              result.seconds)
    return result


# The aggregates written as Parquet tables (besides inputs and failing_checks).
_TABLES = ("totals", "pass_rates", "latency", "latency_by_partitions", "latency_by_session_timeout",
           "latency_histogram", "availability", "controller", "trend_by_day", "trend_by_run")
PARQUET_FILE = "part-00000.parquet"


def write_rows(rows: Sequence[Any], schema: "StructType", path: Path) -> None:
    """Collected Spark rows as a Parquet table directory (one file) with ``schema``'s column types,
    written by pyarrow from the driver: readable by ``spark.read.parquet(path)`` like a table Spark
    wrote.  Each table is a few hundred rows at most; through Spark, writing the ten of them cost a
    job each, 2 s in a warm JVM and 6 s in a fresh one (issue 15 item 5)."""
    import shutil

    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    arrow_schema = pa.schema([pa.field(f.name, _arrow_type(f.dataType.simpleString()), nullable=f.nullable)
                              for f in schema.fields])
    columns = {name: [row[name] for row in rows] for name in schema.fieldNames()}
    table = pa.table(columns, schema=arrow_schema)
    if path.exists():  # "overwrite", as Spark's writer does
        shutil.rmtree(path)
    path.mkdir(parents=True)
    pq.write_table(table, path / PARQUET_FILE, compression="snappy")
    (path / "_SUCCESS").touch()


def _arrow_type(spark_type: str) -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "double": pa.float64(),
             "boolean": pa.bool_(), "date": pa.date32()}
    if spark_type not in types:
        raise AssertionError(f"no Arrow type for the Spark type {spark_type}: add it to _arrow_type")
    return types[spark_type]


def _write(frame: "DataFrame", path: Path) -> None:
    frame.coalesce(1).write.mode("overwrite").parquet(str(path))


def _jsonable_row(row: Any) -> dict[str, Any]:
    return {key: _jsonable(value) for key, value in row.asDict(recursive=True).items()}


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value

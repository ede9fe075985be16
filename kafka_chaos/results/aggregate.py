"""Spark ETL of records.jsonl files: extract, one pass to partial aggregates, load.

* **Extract** — lines are read as text and parsed with ``from_json`` against an explicit schema
  mirroring ``records.schema.Record`` (no inference pass).  ``expected``/``observed`` hold any
  JSON; they are typed as strings, which Spark's JSON parser fills with the value's compact JSON
  text for objects and arrays (and the plain text for scalars).  Every non-blank line ends up
  ``valid``, ``malformed`` (not JSON, a wrongly typed field, a missing required field) or
  ``rejected`` (a ``schema_version`` this code cannot read), counted per file.
* **One pass** — every line becomes the *facts* the report's tables count (:func:`facts`), and
  one aggregation counts them per key (:func:`partials`): one Spark query, one scan of the input,
  whose result (a few thousand rows for one run) is collected as Arrow.
* **Load** — :mod:`results.tables` finishes every table in Python from those rows; the tables
  go to summary.json / HTML and are written as Parquet by pyarrow (:func:`write_rows`).
* **Kept** — each file's share of the partials (:func:`split_by_file`) can be kept between
  reports (:mod:`results.partials_cache`): a later report reads only the files it has not seen.

Percentiles are nearest-rank (:func:`results.samples.nearest_ranks`), exact: pXX is the smallest
sample with at least XX % of the samples at or below it.  Pass rates exclude unknown results
(``passed`` null) and carry a 95 % Wilson score interval.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.records.schema import FIELD_NAMES, READABLE_VERSIONS, REQUIRED_FIELDS
from kafka_chaos.results.partials_cache import FilePartials, PartialsCache, merged
from kafka_chaos.results.samples import Samples
from kafka_chaos.results.tables import FAILURE_COLUMNS, TIMELINE_RECORD_COLUMNS
from kafka_chaos.scenarios.checks.time_ledger import TIME_LEDGER
from kafka_chaos.scenarios.model.ledger import COUNTED_SCOPES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

CORRUPT = "_corrupt"
EXCERPT_CHARS = 200

# Spark SQL types of Record's fields (DDL names), in Record's order.
RECORD_TYPES: Mapping[str, str] = {
    "run_id": "string", "scenario": "string", "iteration": "int", "seed": "bigint",
    "backend": "string", "kafka_version": "string", "brokers": "int", "partitions": "int",
    "kind": "string", "check": "string", "passed": "boolean", "started_at": "double",
    "finished_at": "double", "fault": "string", "target": "string",
    "expected": "string", "observed": "string",  # any JSON, kept as its JSON text
    "detail": "string", "topic": "string", "partition": "int",
    "latency_ms": "map<string,double>", "timestamps": "map<string,double>",
    "session_timeout_ms": "int", "tick_time_ms": "int", "git_revision": "string", "mode": "string",
    "schema_version": "int",
}


def record_schema(with_corrupt: bool = False) -> "StructType":
    """The explicit Spark schema of a record line (plus the corrupt-record column if asked)."""
    from pyspark.sql import types as T

    if tuple(RECORD_TYPES) != FIELD_NAMES:
        raise AssertionError("RECORD_TYPES no longer mirrors records.schema.Record")
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
    not fit version 1's types: a newer layout may change them.  Written as SQL text, as the one
    pass is: one call into the JVM per column instead of one per function.
    """
    readable = ", ".join(map(str, sorted(READABLE_VERSIONS)))
    # concat_ws skips nulls: "" when nothing is missing (cheaper than an array + lambda filter).
    missing = "concat_ws(', ', " + ", ".join(f"CASE WHEN r.`{name}` IS NULL THEN '{name}' END"
                                             for name in REQUIRED_FIELDS) + ")"
    status = (f"CASE WHEN trim(line) = '' THEN 'blank' "
              f"WHEN r.schema_version IS NOT NULL AND NOT r.schema_version IN ({readable}) THEN 'rejected' "
              f"WHEN r.`{CORRUPT}` IS NOT NULL THEN 'malformed' WHEN {missing} != '' THEN 'malformed' "
              f"ELSE 'valid' END")
    checked = parsed.selectExpr("source", "line", "r", f"{status} AS status", f"{missing} AS missing")
    problem = (f"CASE WHEN status = 'rejected' "
               f"THEN format_string('schema_version %d is not readable (readable: {readable})', r.schema_version) "
               f"WHEN r.`{CORRUPT}` IS NOT NULL "
               f"THEN 'not a JSON object of the record schema (bad JSON or a wrongly typed field)' "
               f"WHEN status = 'malformed' THEN concat('missing ', missing) END")
    return checked.selectExpr(
        "source", "status", f"{problem} AS problem",
        f"CASE WHEN status IN ('malformed', 'rejected') THEN substring(line, 1, {EXCERPT_CHARS}) END AS excerpt",
        *[f"r.`{name}` AS `{name}`" for name in FIELD_NAMES],
    )


# ------------------------------------------------------------------------------ the one pass

NO_FAULT = "none"  # the fault label of measurements from records without a fault
AVAILABILITY_CHECK = "client_availability"
TXN_CHECK = "txn_availability"
CONTROLLER_CHECK = "controller_metrics"
TIMELINE_CHECK = "migration_timeline"

# What one fact carries besides its table: a key part per table (null in the other tables'
# facts) and the values its table aggregates.  Struct parts keep a fact narrow: an absent part is
# one null, not a null per field.  Every aggregated value is numeric, so Spark's hash aggregation
# (fixed-width buffers) applies: a string buffer (``first``, ``min`` of text) would force a
# sort-based aggregation: 2.5 s instead of 1.7 s on one run's records in a warm JVM.
_FACT_PARTS: Mapping[str, str] = {
    "input": "struct<source:string,status:string>",
    "outcome": "struct<run_id:string,scenario:string,check:string,backend:string,kafka_version:string,"
               "kind:string,passed:boolean,day:int>",
    "sample": "struct<fault:string,phase:string,partitions:int,session_timeout_ms:int,kafka_version:string,"
              "mode:string,ms:double>",
    "fault": "string",  # the availability and controller tables' key
    "failure": "string",  # a failed check's columns (tables.FAILURE_COLUMNS) as JSON text: one fact each
    "step": "string",  # a migration step's columns (tables.TIMELINE_COLUMNS) as JSON text: one fact each
    "phase": "string",  # the time-ledger table's key
    "times": "struct<started_at:double,finished_at:double,seed:bigint>",
    "availability": "struct<produce:double,consume:double>",
    "transactions": "struct<committed:bigint,aborted:bigint,failed:bigint,unknown:bigint>",
    "controller": "struct<elections:bigint,election_ms:double,events:bigint,queue_ms:double,shutdowns:bigint,"
                  "shutdown_ms:double,unclean:bigint,moved:int,offline:bigint,urp:bigint,under_min_isr:bigint,"
                  "queue_size:bigint>",
    "time": "struct<seconds:double>",
}
FILE_ID = "file_id"
FACT_KEYS = ("table", "input", "outcome", "sample", "fault", "failure", "step", "phase")
OUTCOME_KEYS = ("run_id", "scenario", "check", "backend", "kafka_version", "kind", "passed", "day")
_SUMMED = ("elections", "election_ms", "events", "queue_ms", "shutdowns", "shutdown_ms", "unclean", "moved")
_LARGEST = ("offline", "urp", "under_min_isr", "queue_size")


def _fact(table: str, **parts: str) -> str:
    """One fact, as SQL: ``table`` and the given parts, every other part a typed null."""
    fields = ", ".join(f"'{name}', {parts.get(name, f'CAST(NULL AS {kind})')}" for name, kind in _FACT_PARTS.items())
    return f"named_struct('table', '{table}', {fields})"


def _struct(**fields: str) -> str:
    return "named_struct(" + ", ".join(f"'{name}', {value}" for name, value in fields.items()) + ")"


def _columns(*names: str) -> str:
    return _struct(**{name: f"`{name}`" for name in names})


def _observed(path: str, kind: str = "DOUBLE") -> str:
    """A number at ``path`` in the record's ``observed`` JSON."""
    number = f"CAST(get_json_object(observed, '{path}') AS DOUBLE)"
    return number if kind == "DOUBLE" else f"CAST({number} AS {kind})"


def _controller_values() -> str:
    """A ``controller_metrics`` measurement's figures (:mod:`scenarios.history.controller_metrics`: JMX
    timers' running sums differenced between the scrape before the fault and the one when the
    step's measurement closed).  BrokerChange events are the ones ``LeaderElectionRateAndTimeMs``
    times (Kafka 3.9 ``ControllerState.BrokerChange``); counts, and gauges that count partitions
    or events, are whole numbers."""
    moved = "CAST(get_json_object(observed, '$.controller_before') != get_json_object(observed, '$.controller_after') AS INT)"
    return _struct(
        elections=_observed("$.leader_election.count", "BIGINT"), election_ms=_observed("$.leader_election.total_ms"),
        events=_observed("$.event_queue_time.count", "BIGINT"), queue_ms=_observed("$.event_queue_time.total_ms"),
        shutdowns=_observed("$.controlled_shutdown.count", "BIGINT"),
        shutdown_ms=_observed("$.controlled_shutdown.total_ms"), unclean=_observed("$.unclean_elections.count", "BIGINT"),
        moved=moved, offline=_observed("$.offline_partitions.after", "BIGINT"),
        urp=_observed("$.under_replicated.after", "BIGINT"), under_min_isr=_observed("$.under_min_isr.after", "BIGINT"),
        queue_size=_observed("$.event_queue_size.after", "BIGINT"),
    )


def facts(classified: "DataFrame") -> "DataFrame":
    """Every line of ``classified`` as the facts the report's tables count (one row each):

    * ``input`` — every line: its source file and status;
    * ``outcome`` — every valid record: run, scenario, check, backend, Kafka version, kind,
      outcome and UTC day of ``started_at``, with its start, finish and seed;
    * ``latency`` — one per measured phase of a valid record's ``latency_ms`` (null and NaN are
      no measurement): fault (``none`` without one), phase, partitions, session timeout, value;
    * ``availability`` / ``controller`` — the ``client_availability`` / ``controller_metrics``
      measurements' figures per fault;
    * ``transactions`` — the ``txn_availability`` measurements' attempts per outcome, per fault;
    * ``failing`` — a failed check (``kind == "check"`` and ``passed`` false), whole;
    * ``timeline`` — a migration step's ``migration_timeline`` measurement, whole;
    * ``time`` — one per phase of a ``time_ledger`` measurement whose scope is counted
      (:data:`scenarios.model.ledger.COUNTED_SCOPES`: a topic creation's breaks down its
      iteration's ``create_topics``): phase, seconds.

    One SQL expression (an array of facts per line, ``inline`` makes them rows): one call into
    the JVM where the same built from Column objects took over a thousand.
    Every fact carries its file's ``file_id`` (a 64-bit hash of the source), so the partials
    split by file (:func:`split_by_file`) without a string per row.
    """
    valid = "status = 'valid'"
    fault = f"coalesce(fault, '{NO_FAULT}')"
    measurement = f"{valid} AND kind = 'measurement'"
    day = "CAST(floor(started_at / 86400) AS INT)"
    once = [
        _fact("input", input=_columns("source", "status")),
        f"CASE WHEN {valid} THEN " + _fact("outcome", outcome=_struct(
            **{name: f"`{name}`" for name in OUTCOME_KEYS[:-1]}, day=day),
            times=_columns("started_at", "finished_at", "seed")) + " END",
        f"CASE WHEN {measurement} AND `check` = '{AVAILABILITY_CHECK}' THEN " + _fact(
            "availability", fault=fault, availability=_struct(produce=_observed("$.produce_availability"),
                                                              consume=_observed("$.consume_availability"))) + " END",
        f"CASE WHEN {measurement} AND `check` = '{CONTROLLER_CHECK}' THEN "
        + _fact("controller", fault=fault, controller=_controller_values()) + " END",
        f"CASE WHEN {measurement} AND `check` = '{TXN_CHECK}' THEN " + _fact(
            "transactions", fault=fault,
            transactions=_struct(**{name: _observed(f"$.{name}", "BIGINT") for name in TXN_OUTCOMES})) + " END",
        f"CASE WHEN {valid} AND kind = 'check' AND passed = false THEN "
        + _fact("failing", failure=f"to_json(struct({', '.join(f'`{c}`' for c in FAILURE_COLUMNS)}))") + " END",
        f"CASE WHEN {measurement} AND `check` = '{TIMELINE_CHECK}' THEN "
        + _fact("timeline", step=f"to_json(struct({', '.join(f'`{c}`' for c in TIMELINE_RECORD_COLUMNS)}))") + " END",
    ]
    sample = _struct(fault=fault, phase="entry.key", partitions="partitions", session_timeout_ms="session_timeout_ms",
                     kafka_version="kafka_version", mode="coalesce(mode, 'zookeeper')",
                     ms="entry.value")
    fact_type = "struct<table:string," + ",".join(f"{name}:{kind}" for name, kind in _FACT_PARTS.items()) + ">"
    no_facts = f"CAST(array() AS array<{fact_type}>)"
    samples = (f"CASE WHEN {valid} AND latency_ms IS NOT NULL THEN transform(map_entries(map_filter(latency_ms, "
               f"(phase, ms) -> ms IS NOT NULL AND NOT isnan(ms))), entry -> {_fact('latency', sample=sample)}) "
               f"ELSE {no_facts} END")
    counted = ", ".join(f"'{scope}'" for scope in COUNTED_SCOPES)
    phases = "from_json(get_json_object(observed, '$.phases'), 'map<string,double>')"
    ledger = (f"CASE WHEN {measurement} AND `check` = '{TIME_LEDGER}' AND get_json_object(observed, '$.scope') "
              f"IN ({counted}) AND {phases} IS NOT NULL THEN transform(map_entries({phases}), entry -> "
              f"{_fact('time', phase='entry.key', time=_struct(seconds='entry.value'))}) ELSE {no_facts} END")
    return classified.selectExpr(f"xxhash64(source) AS {FILE_ID}",
                                 f"inline(concat(filter(array({', '.join(once)}), one -> one IS NOT NULL), {samples}, "
                                 f"{ledger}))")


_AVAILABILITY_VALUES = tuple(f"{name}_{label}" for name in ("produce", "consume") for label in ("sum", "min", "n"))
_AVAILABILITY_SUMMED = tuple(name for name in _AVAILABILITY_VALUES if not name.endswith("_min"))
_AVAILABILITY_SMALLEST = tuple(name for name in _AVAILABILITY_VALUES if name.endswith("_min"))
TXN_OUTCOMES = ("committed", "aborted", "failed", "unknown")  # scenarios.checks.txn_availability's
_TXN_SUMMED = tuple(f"txn_{name}" for name in TXN_OUTCOMES)
# What a non-latency partial row carries besides its table and count, as JSON (``rest``).
REST_FIELDS = ("input", "outcome", "fault", "failure", "step", "phase", "started_at", "finished_at", "seed",
               *_AVAILABILITY_VALUES, *_SUMMED, *_LARGEST, "seconds", *_TXN_SUMMED)


def partials(facts_frame: "DataFrame") -> "DataFrame":
    """The facts counted per file and key (``n``) with their values aggregated: each table's
    partial aggregate, which :mod:`results.tables` finishes in Python.

    The rows leave Spark narrow: ``file_id``, ``table``, ``sample`` (latency rows), ``n``, and for every other
    table's row its key and values as JSON text (``rest``).  Latency rows are most of them (2.4M
    for 3M records), and in Arrow a column costs every row its slot, null or not: with the two
    dozen value columns beside them, 3M records' partials did not fit the 2 GB driver."""
    from pyspark.sql import functions as F

    availability = [f"{kind}(availability.{name}) AS {name}_{label}" for name in ("produce", "consume")
                    for kind, label in (("sum", "sum"), ("min", "min"), ("count", "n"))]
    aggregated = facts_frame.groupBy(FILE_ID, *FACT_KEYS).agg(*[F.expr(text) for text in (
        "count(1) AS n", "min(times.started_at) AS started_at", "max(times.finished_at) AS finished_at",
        "min(times.seed) AS seed", *availability,
        *[f"sum(controller.{name}) AS {name}" for name in _SUMMED],
        *[f"max(controller.{name}) AS {name}" for name in _LARGEST], "sum(time.seconds) AS seconds",
        *[f"sum(transactions.{name}) AS txn_{name}" for name in TXN_OUTCOMES])])
    rest = "to_json(named_struct(" + ", ".join(f"'{name}', {name}" for name in REST_FIELDS) + "))"
    return aggregated.selectExpr(FILE_ID, "table", "sample", "n",
                                 f"CASE WHEN table = 'latency' THEN NULL ELSE {rest} END AS rest")


def problem_examples(classified: "DataFrame") -> "DataFrame":
    """One malformed and one rejected line per source file, with what is wrong with it: a query of
    its own, run only when there are such lines (an example is text, which the hash aggregation of
    :func:`partials` cannot carry)."""
    from pyspark.sql import functions as F

    bad = classified.where(F.col("status").isin("malformed", "rejected"))
    text = F.concat(F.col("problem"), F.lit(": "), F.col("excerpt"))
    return bad.groupBy("source", "status").agg(F.first(text, ignorenulls=True).alias("example"))


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
    latency_by_release: list[dict[str, Any]] = field(default_factory=list)
    latency_by_mode: list[dict[str, Any]] = field(default_factory=list)
    migration_timeline: list[dict[str, Any]] = field(default_factory=list)
    time_ledger: list[dict[str, Any]] = field(default_factory=list)
    latency_histogram: list[dict[str, Any]] = field(default_factory=list)
    availability: list[dict[str, Any]] = field(default_factory=list)
    transactions: list[dict[str, Any]] = field(default_factory=list)
    controller: list[dict[str, Any]] = field(default_factory=list)
    trend_by_day: list[dict[str, Any]] = field(default_factory=list)
    trend_by_run: list[dict[str, Any]] = field(default_factory=list)
    failing_checks: list[dict[str, Any]] = field(default_factory=list)
    failing_checks_total: int = 0
    # (fault, phase, mantissa, exponent, count): the samples rounded to 3 significant digits
    latency_values: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    cached_files: int = 0  # input files whose partials came from the cache (not read)


EMPTY_TOTALS: Mapping[str, Any] = {
    "records": 0, "checks": 0, "measurements": 0, "runs": 0, "passed": 0, "failed": 0,
    "unknown": 0, "first_started_at": None, "last_finished_at": None,
    "pass_rate": None, "ci_low": None, "ci_high": None,
}

# Up to this much input (one run is ~2.5-3 MB of records.jsonl), the aggregation is all fixed cost:
# Spark's code generation (janino compiling each query's Java) costs more than interpreting a
# few thousand rows, and the query runs as one task in one stage (no shuffle).  Not 64 MiB: the
# synthetic 100k records (66 MB) ran faster compiled.
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


def aggregate(spark: "SparkSession | Callable[[], SparkSession] | None", files: Sequence[Path],
              tables_dir: Path | None = None, failing_limit: int = 500, cache: PartialsCache | None = None) -> Aggregates:
    """Run the whole ETL over ``files``; write Parquet tables to ``tables_dir`` if given.

    One Spark query reads, parses and classifies every line and reduces it to partial aggregates
    (:func:`facts`, :func:`partials`), collected as Arrow; :mod:`results.tables` finishes every
    table from them.  A second, small query runs only when some lines are malformed or rejected
    (:func:`problem_examples`).  With ``cache``, the files it holds are not read at all: their
    partials come from it, the others' are stored in it (:mod:`results.partials_cache`).
    ``spark``: a session, or a function that starts one, called only when some file has to be
    read (whether one has is known only once the cache's entries were read back); None when
    every file is known to be cached.
    """
    started = time.monotonic()
    result = Aggregates(totals=dict(EMPTY_TOTALS))
    if not files:
        return result
    loaded = cache.load_many(files) if cache is not None else {}
    parts = list(loaded.values())
    fresh = [path for path in files if path not in loaded]
    if fresh:
        read_keys = {path: cache.key(path) for path in fresh} if cache is not None else {}
        computed = _spark_partials(_session(spark), fresh)
        parts.append(computed)
        if cache is not None:
            for path, partials in split_by_file(computed, fresh).items():
                cache.store(path, partials, read_keys[path])
    _load(result, finish_tables(merged(parts)), tables_dir, failing_limit)
    result.cached_files = len(files) - len(fresh)
    result.seconds = time.monotonic() - started
    log.debug("aggregated %s records from %d file(s) (%d cached) in %.1f s", result.totals.get("records"),
              len(files), result.cached_files, result.seconds)
    return result


def _session(spark: "SparkSession | Callable[[], SparkSession] | None") -> "SparkSession":
    if spark is None:
        raise AssertionError("aggregate: uncached files need a Spark session")
    # Not isinstance(spark, SparkSession): a Spark Connect session is of another class.
    return spark() if callable(spark) else spark


def _spark_partials(spark: "SparkSession", files: Sequence[Path]) -> FilePartials:
    """The one pass over ``files``: their partials and problem examples; a failed Spark job as
    one HarnessError line."""
    small = sum(f.stat().st_size for f in files) <= SMALL_INPUT_BYTES
    with _interpreted(spark, small), _spill_dir(not small) as spill:
        classified = classify(parse_lines(read_lines(spark, files)))
        try:
            # One partition: the aggregation needs no shuffle, and the whole query is one task.
            return collect_partials(classified.coalesce(1) if small else classified, spill)
        except Exception as exc:  # noqa: BLE001 - py4j/pyspark raise many kinds; the user needs one line
            reason = next((line.strip() for line in str(exc).splitlines() if "Exception:" in line or "Error:" in line),
                          (str(exc).strip().splitlines() or [type(exc).__name__])[0])
            raise HarnessError(f"the Spark aggregation of {len(files)} file(s) failed: {reason}"
                               f"{_remote_hint(spark, reason)}") from exc


WARM_UP_RECORDS = 500


def warm_up(spark: "SparkSession", scratch: Path | None = None) -> None:
    """Run the one pass once over a few generated records: a server that keeps running
    (``kafka-chaos spark up``) then answers the first report with classes loaded and code
    compiled — its first query cold took 7 s of a one-run report, later ones 1.3 s.  ``scratch``:
    a directory the server reads too (its executors run on this machine), where the records are
    written to a file and read as a report reads its inputs (file listing and text scan warmed up
    as well); without it, the records travel with the query."""
    from kafka_chaos.results.synthetic import synthetic_lines, write_synthetic_results

    if scratch is not None:
        _spark_partials(spark, [write_synthetic_results(scratch, WARM_UP_RECORDS, records_per_run=WARM_UP_RECORDS)])
        return
    rows = [("file:/kafka-chaos-warm-up/records.jsonl", line.rstrip("\n"))
            for line in synthetic_lines(WARM_UP_RECORDS, seed=0, records_per_run=WARM_UP_RECORDS)]
    with _interpreted(spark, True):  # as a one-run report's query runs (SMALL_INPUT_BYTES)
        collect_partials(classify(parse_lines(spark.createDataFrame(rows, "source string, line string"))).coalesce(1))


def _remote_hint(spark: "SparkSession", reason: str) -> str:
    from kafka_chaos.results.spark_connect import is_connect_session

    if "PATH_NOT_FOUND" in reason and is_connect_session(spark):
        return " (a Spark Connect server reads the results dirs at the paths given here: run it on this machine " \
               "or on a file system it shares)"
    return ""


@contextlib.contextmanager
def _spill_dir(wanted: bool) -> Iterator[Path | None]:
    if not wanted:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-partials-") as spill:
        yield Path(spill) / "partials"


def collect_partials(classified: "DataFrame", spill: Path | None = None) -> FilePartials:
    """``classified``'s partial aggregates (:func:`partials`) as Arrow, with one example of each
    problem per file when some lines are malformed or rejected.

    ``spill``: Spark's tasks write the partials there as Parquet, and pyarrow reads them back,
    instead of collecting them through the driver.  For large inputs: 3M records in 30 files
    make some 2.4M partial rows, and collected as Arrow they ran the 2 GB driver out of heap in
    the task-result getter, after which pyspark's ``toArrow`` waits forever (measured here)."""
    frame = partials(facts(classified))
    if spill is None:
        found = frame.toArrow()
    else:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        frame.write.mode("overwrite").parquet(str(spill))
        found = pq.read_table(spill).replace_schema_metadata(None)
    examples: dict[tuple[str, str], str] = {}
    if any(line["status"] in ("malformed", "rejected") for line in _inputs(found)):
        examples = {(r["source"], r["status"]): r["example"] for r in problem_examples(classified).collect()}
    return FilePartials(found, examples)


def aggregate_tables(classified: "DataFrame") -> dict[str, list[dict[str, Any]]]:
    """Every table of the report (:data:`results.tables.TABLE_COLUMNS`) over ``classified``'s
    lines, failing checks all of them, newest first."""
    return finish_tables(collect_partials(classified))


def finish_tables(found: FilePartials) -> dict[str, list[dict[str, Any]]]:
    """Every table of the report from partial aggregates: one file's or several files' together
    (a key may then have a row per file; the per-fault tables merge theirs first)."""
    from kafka_chaos.results import tables

    table = found.table
    by_table = {name: _rows(table, name) for name in ("outcome", "availability", "controller", "failing", "timeline",
                                                      "time", "transactions")}
    # JSON leaves out null fields: a record without a verdict has no "passed"
    outcomes = [{**dict.fromkeys(OUTCOME_KEYS), **row["outcome"], **{k: row[k] for k in ("n", "started_at",
                                                                                         "finished_at", "seed")}}
                for row in by_table["outcome"]]
    availability = tables.merge_rows(by_table["availability"], "fault", summed=("n", *_AVAILABILITY_SUMMED),
                                     smallest=_AVAILABILITY_SMALLEST)
    controller = tables.merge_rows(by_table["controller"], "fault", summed=("n", *_SUMMED), largest=_LARGEST)
    transactions = tables.merge_rows(by_table["transactions"], "fault", summed=("n", *_TXN_SUMMED))
    samples = _samples(table)
    return {
        "inputs": tables.input_counts(_inputs(table), found.examples),
        **tables.outcome_tables(outcomes),
        **tables.latency_tables(samples),
        "latency_histogram": tables.latency_histogram(samples),
        "latency_values": tables.latency_values(samples),
        "availability": tables.availability(availability),
        "controller": tables.controller(controller),
        "transactions": tables.transactions(transactions),
        "failing_checks": tables.failing_checks(by_table["failing"]),
        "migration_timeline": tables.migration_timeline(by_table["timeline"]),
        "time_ledger": tables.time_ledger(tables.merge_rows(by_table["time"], "phase", summed=("n", "seconds"))),
    }


def _inputs(found: Any) -> list[dict[str, Any]]:
    """The input facts' rows: source, status and line count, one per file and status."""
    return [{**row["input"], "n": row["n"]} for row in _rows(found, "input")]


def split_by_file(found: FilePartials, files: Sequence[Path]) -> dict[Path, FilePartials]:
    """``found`` (the partials of ``files``) as each file's own, for the files whose rows can be
    told apart: every line yields an ``input`` fact, which names the file of its ``file_id``.
    A file whose id two sources share (a 64-bit hash collision) or whose Spark URI does not map
    back to one of ``files`` is left out (it is simply not cached)."""
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    sources: dict[int, set[str]] = {}
    inputs = found.table.filter(pc.equal(found.table["table"], "input"))
    for file_id, rest in zip(inputs.column(FILE_ID).to_pylist(), inputs.column("rest").to_pylist()):
        sources.setdefault(file_id, set()).add(json.loads(rest)["input"]["source"])
    by_path = {os.path.abspath(path): path for path in files}
    ordered = found.table.take(pc.sort_indices(found.table[FILE_ID]))
    split: dict[Path, FilePartials] = {}
    offset = 0
    for counted in pc.value_counts(ordered[FILE_ID]).to_pylist():
        file_id, count = counted["values"], counted["counts"]
        rows = ordered.slice(offset, count)
        offset += count
        uris = sources.get(file_id, set())
        path = by_path.get(os.path.abspath(source_path(next(iter(uris))))) if len(uris) == 1 else None
        if path is not None:
            uri = next(iter(uris))
            split[path] = FilePartials(rows, {key: text for key, text in found.examples.items() if key[0] == uri})
    return split


def _rows(found: Any, table: str) -> list[dict[str, Any]]:
    """The partial rows of one table other than latency (a few thousand, failing checks aside) as
    dicts of :data:`REST_FIELDS` and ``n``."""
    import pyarrow.compute as pc

    chosen = found.filter(pc.equal(found["table"], table))
    return [{**dict.fromkeys(REST_FIELDS), **_numbers(json.loads(rest)), "n": n}
            for rest, n in zip(chosen.column("rest").to_pylist(), chosen.column("n").to_pylist())]


def _numbers(values: dict[str, Any]) -> dict[str, Any]:
    """Spark's JSON writes a NaN or infinite double as a string: the aggregated values back to floats."""
    return {key: float(value) if key in _NUMERIC and isinstance(value, str) else value
            for key, value in values.items()}


_NUMERIC = frozenset(REST_FIELDS[REST_FIELDS.index("started_at"):])


def _samples(found: Any) -> Samples:
    """The latency facts' rows — some 2.4M for 3M records — as columns (:mod:`results.samples`)."""
    import pyarrow.compute as pc

    latency = found.filter(pc.equal(found["table"], "latency"))
    return Samples.from_arrow(latency.column("sample").combine_chunks(), latency.column("n").combine_chunks())


def _load(result: Aggregates, found: Mapping[str, list[dict[str, Any]]], tables_dir: Path | None,
          failing_limit: int) -> None:
    """``found`` into ``result`` (JSON-ready, at most ``failing_limit`` failing checks) and, with
    ``tables_dir``, every table as Parquet (all failing checks)."""
    from kafka_chaos.results.tables import TABLE_COLUMNS, columns

    if tables_dir is not None:
        for name in TABLE_COLUMNS:
            write_rows(found[name], columns(name), tables_dir / name)
    jsonable = {name: [_jsonable_row(row) for row in rows] for name, rows in found.items()}
    result.inputs = [{**row, "source": source_path(row["source"])} for row in jsonable["inputs"]]
    result.totals = jsonable["totals"][0]
    for name in ("pass_rates", "latency", "latency_by_partitions", "latency_by_session_timeout", "latency_by_release",
                 "latency_by_mode", "migration_timeline", "time_ledger",
                 "latency_histogram",
                 "availability", "controller", "transactions", "trend_by_day", "trend_by_run", "latency_values"):
        setattr(result, name, jsonable[name])
    result.failing_checks = jsonable["failing_checks"][:failing_limit]
    result.failing_checks_total = len(found["failing_checks"])


PARQUET_FILE = "part-00000.parquet"


def write_rows(rows: Sequence[Mapping[str, Any]], column_types: Sequence[tuple[str, str]], path: Path) -> None:
    """Rows as a Parquet table directory (one file) with the given (name, Spark SQL type) columns,
    written by pyarrow: readable by ``spark.read.parquet(path)`` like a table Spark wrote.  Each
    table is a few hundred rows at most (failing checks aside); through Spark, writing the ten of
    them cost a job each, 2 s in a warm JVM and 6 s in a fresh one."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow_schema = pa.schema([pa.field(name, _arrow_type(kind)) for name, kind in column_types])
    table = pa.table({name: [row[name] for row in rows] for name, _ in column_types}, schema=arrow_schema)
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


_PLAIN = frozenset({str, int, bool, type(None)})


def _jsonable_row(row: Mapping[str, Any]) -> dict[str, Any]:
    # Most values are plain (tens of thousands of rows for large inputs): no call for them.
    return {key: value if type(value) in _PLAIN else _jsonable(value) for key, value in row.items()}


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

"""The pure transforms of results.aggregate on small DataFrames."""

from __future__ import annotations

import datetime as dt
import json

from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from results import aggregate as A
from results.schema import FIELD_NAMES
from tests.spark.helpers import DAY, T0, record, records_frame


def lines_frame(spark, lines, source="file:/r/records.jsonl"):
    return spark.createDataFrame([(source, line) for line in lines], "source string, line string")


def test_classify_sorts_every_kind_of_line(spark):
    good = record(expected={"leader": 2, "isr": [2, 3]}, observed="text").to_json()
    missing = json.loads(good)
    del missing["scenario"], missing["seed"]
    wrong_type = json.loads(good) | {"partitions": "six"}
    newer_with_other_types = json.loads(good) | {"schema_version": 2, "partitions": "six"}
    lines = [good, "   ", "not json", "[1, 2]", json.dumps(missing), json.dumps(wrong_type),
             json.dumps(newer_with_other_types), good[:50]]
    classified = A.classify(A.parse_lines(lines_frame(spark, lines)))
    bad_json = "not a JSON object of the record schema (bad JSON or a wrongly typed field)"
    assertDataFrameEqual(
        classified.select("status", "problem"),
        [Row(status="valid", problem=None), Row(status="blank", problem=None),
         Row(status="malformed", problem=bad_json), Row(status="malformed", problem=bad_json),
         Row(status="malformed", problem="missing scenario, seed"), Row(status="malformed", problem=bad_json),
         Row(status="rejected", problem="schema_version 2 is not readable (readable: 1)"),
         Row(status="malformed", problem=bad_json)],
        checkRowOrder=True,
    )


def test_valid_records_keep_arbitrary_json_as_its_text(spark):
    original = record(expected={"leader": 2, "isr": [2, 3]}, observed=[1, {"a": None}], detail="d")
    valid = A.valid_records(A.classify(A.parse_lines(lines_frame(spark, [original.to_json()]))))
    assert tuple(valid.columns) == FIELD_NAMES
    [row] = valid.collect()
    assert json.loads(row.expected) == {"leader": 2, "isr": [2, 3]}
    assert json.loads(row.observed) == [1, {"a": None}]
    assert row.expected == '{"isr":[2,3],"leader":2}'  # compact, in the line's key order
    assert row.passed is True and row.detail == "d" and row.seed == 7


def test_input_counts_per_file_with_examples(spark):
    good = record().to_json()
    lines = lines_frame(spark, [good, good, "oops", json.dumps(json.loads(good) | {"schema_version": 0})], "file:/a")
    lines = lines.union(lines_frame(spark, [good, ""], "file:/b"))
    counts = A.input_counts(A.classify(A.parse_lines(lines)))
    expected_rejected = 'schema_version 0 is not readable (readable: 1): {"backend"'
    rows = counts.collect()
    assert [(r.source, r.valid, r.malformed, r.rejected, r.blank) for r in rows] == [
        ("file:/a", 2, 1, 1, 0), ("file:/b", 1, 0, 0, 1)]
    assert rows[0].malformed_example.endswith(": oops")
    assert rows[0].rejected_example.startswith(expected_rejected)
    assert rows[1].malformed_example is None


def test_source_path_turns_spark_uris_back_into_paths():
    assert A.source_path("file:/tmp/a%20b/records.jsonl") == "/tmp/a b/records.jsonl"
    assert A.source_path("file:///tmp/x") == "/tmp/x"
    assert A.source_path("hdfs://nn/x") == "hdfs://nn/x"


def test_with_pass_rate_is_the_wilson_interval(spark):
    counts = spark.createDataFrame([(8, 2), (0, 0), (5, 0)], "passed long, failed long")
    # Reference values of the Wilson score interval (z = 1.96): 8/10 -> [0.4902, 0.9433],
    # 5/5 -> [0.5655, 1.0].
    assertDataFrameEqual(
        A.with_pass_rate(counts),
        [Row(passed=8, failed=2, pass_rate=0.8, ci_low=0.49016, ci_high=0.94332),
         Row(passed=0, failed=0, pass_rate=None, ci_low=None, ci_high=None),
         Row(passed=5, failed=0, pass_rate=1.0, ci_low=0.56551, ci_high=1.0)],
        rtol=1e-4,
    )


def test_pass_rates_count_unknown_apart_and_ignore_measurements(spark):
    frame = records_frame(spark, [
        record(passed=True), record(passed=True), record(passed=False), record(passed=None),
        record(kind="measurement", check="oracle_leader", passed=None),
        record(backend="containers", passed=False),
        record(check="oracle_isr", passed=None),
    ])
    assertDataFrameEqual(
        A.pass_rates(frame),
        [Row(scenario="kill", check="oracle_isr", backend="local", kafka_version="3.9.2",
             passed=0, failed=0, unknown=1, pass_rate=None, ci_low=None, ci_high=None),
         Row(scenario="kill", check="oracle_leader", backend="containers", kafka_version="3.9.2",
             passed=0, failed=1, unknown=0, pass_rate=0.0, ci_low=0.0, ci_high=0.79346),
         Row(scenario="kill", check="oracle_leader", backend="local", kafka_version="3.9.2",
             passed=2, failed=1, unknown=1, pass_rate=2 / 3, ci_low=0.20765, ci_high=0.93851)],
        checkRowOrder=True, rtol=1e-4,
    )


def test_latency_samples_drop_missing_phases_and_label_no_fault(spark):
    frame = records_frame(spark, [
        record(kind="measurement", check="latency", latency_ms={"detection": None, "election": 12.5}),
        record(kind="measurement", check="latency", fault=None, partitions=9, session_timeout_ms=6000,
               latency_ms={"client_gap": 40.0}),
        record(latency_ms=None),
    ])
    assertDataFrameEqual(
        A.latency_samples(frame),
        [Row(fault="hard_kill", partitions=3, session_timeout_ms=None, phase="election", ms=12.5),
         Row(fault="none", partitions=9, session_timeout_ms=6000, phase="client_gap", ms=40.0)],
    )


def test_latency_percentiles_are_nearest_rank(spark):
    samples = spark.createDataFrame(
        [("hard_kill", "election", 3 if v <= 5 else 6, float(v)) for v in (7, 1, 10, 4, 2, 9, 3, 8, 6, 5)]
        + [("hard_kill", "detection", 3, 100.0), ("controlled_shutdown", "election", 3, 2.0)],
        "fault string, phase string, partitions int, ms double")
    assertDataFrameEqual(
        A.latency_percentiles(samples),
        [Row(fault="controlled_shutdown", phase="election", count=1, p50=2.0, p90=2.0, p99=2.0, max=2.0),
         Row(fault="hard_kill", phase="detection", count=1, p50=100.0, p90=100.0, p99=100.0, max=100.0),
         Row(fault="hard_kill", phase="election", count=10, p50=5.0, p90=9.0, p99=10.0, max=10.0)],
        checkRowOrder=True,  # faults by name, phases in a leader switch's order
    )
    by_partitions = A.latency_percentiles(samples.where("phase = 'election' and fault = 'hard_kill'"),
                                          ["partitions"])
    assertDataFrameEqual(
        by_partitions,
        [Row(fault="hard_kill", phase="election", partitions=3, count=5, p50=3.0, p90=5.0, p99=5.0, max=5.0),
         Row(fault="hard_kill", phase="election", partitions=6, count=5, p50=8.0, p90=10.0, p99=10.0, max=10.0)],
        checkRowOrder=True,
    )


def test_latency_histogram_uses_log_bins(spark):
    samples = spark.createDataFrame([("f", "election", v) for v in (1.0, 1.05, 10.0, 0.0)],
                                    "fault string, phase string, ms double")
    rows = A.latency_histogram(samples, bins_per_decade=10).collect()
    assert [(round(r.low_ms, 4), round(r.high_ms, 4), r["count"]) for r in rows] == [
        (0.1, 0.1259, 1), (1.0, 1.2589, 2), (10.0, 12.5893, 1)]


def test_trend_by_day_uses_utc_days(spark):
    frame = records_frame(spark, [
        record(run_id="a", started_at=T0 - 1, passed=False),  # 2025-12-31T23:59:59Z
        record(run_id="a", started_at=T0, passed=True),
        record(run_id="b", started_at=T0 + DAY - 0.001, passed=None),
        record(run_id="b", started_at=T0 + DAY, passed=True, kind="measurement"),  # not a check
    ])
    assertDataFrameEqual(
        A.trend_by_day(frame).select("day", "runs", "passed", "failed", "unknown", "pass_rate"),
        [Row(day=dt.date(2025, 12, 31), runs=1, passed=0, failed=1, unknown=0, pass_rate=0.0),
         Row(day=dt.date(2026, 1, 1), runs=2, passed=1, failed=0, unknown=1, pass_rate=1.0)],
        checkRowOrder=True,
    )


def test_trend_by_run(spark):
    frame = records_frame(spark, [
        record(run_id="late", started_at=T0 + 100, finished_at=T0 + 150, seed=2, passed=False),
        record(run_id="early", started_at=T0 + 5, finished_at=T0 + 20, backend="containers", scenario="a"),
        record(run_id="early", started_at=T0, finished_at=T0 + 9, scenario="b", kind="measurement", passed=None),
    ])
    assertDataFrameEqual(
        A.trend_by_run(frame).drop("ci_low", "ci_high"),
        [Row(run_id="early", started_at=T0, finished_at=T0 + 20, backend="containers,local",
             kafka_version="3.9.2", seed=7, scenarios=2, records=2, passed=1, failed=0, unknown=0, pass_rate=1.0),
         Row(run_id="late", started_at=T0 + 100, finished_at=T0 + 150, backend="local",
             kafka_version="3.9.2", seed=2, scenarios=1, records=1, passed=0, failed=1, unknown=0, pass_rate=0.0)],
        checkRowOrder=True,
    )


def test_failing_checks_newest_first_with_replay_keys(spark):
    frame = records_frame(spark, [
        record(iteration=1, passed=False, started_at=T0 + 1, detail="old", expected={"leader": 2}, observed={"leader": 1}),
        record(iteration=2, passed=False, started_at=T0 + 2, detail="new", target="broker 2"),
        record(iteration=3, passed=None, started_at=T0 + 3),
        record(iteration=4, passed=False, kind="measurement", started_at=T0 + 4),
    ])
    rows = A.failing_checks(frame).collect()
    assert tuple(rows[0].asDict()) == A.FAILURE_COLUMNS
    assert [(r.iteration, r.detail, r.seed, r.run_id) for r in rows] == [(2, "new", 7, "r1"), (1, "old", 7, "r1")]
    assert json.loads(rows[1].observed) == {"leader": 1}


def test_the_grouping_sets_query_gives_the_three_percentile_tables(spark):
    """One GROUPING SETS query, split in Python, equals the three latency_percentiles queries —
    rows, order and columns — with null keys and phases outside a leader switch's order."""
    samples = spark.createDataFrame(
        [("hard_kill", "election", 3 if v <= 5 else None, 6000 if v % 2 else None, float(v)) for v in range(1, 11)]
        + [("hard_kill", "zz_custom", 3, 6000, 1.0), ("hard_kill", "detection", 9, None, 100.0),
           ("controlled_shutdown", "election", 3, 6000, 2.0), ("a", "client_gap", None, None, 7.0)],
        "fault string, phase string, partitions int, session_timeout_ms int, ms double")
    tables = A.split_latency_percentiles(A.latency_percentiles_grouped(samples).collect())
    assert list(tables) == list(A.LATENCY_TABLES)
    for name, by in A.LATENCY_TABLES.items():
        expected = A.latency_percentiles(samples, list(by))
        assert [r.asDict() for r in tables[name]] == [r.asDict() for r in expected.collect()], name
        assert A.latency_percentiles_schema(by).fieldNames() == expected.columns
        assert [f.dataType for f in A.latency_percentiles_schema(by).fields] == [f.dataType for f in expected.schema]


def test_the_outcome_groups_finished_in_python_equal_the_four_spark_queries(spark):
    """totals, pass_rates, trend_by_day and trend_by_run from one grouped query equal the Spark
    queries that define them: rows, order, columns, types and every float bit for bit (the
    Wilson interval included); also with no record at all."""
    frame = records_frame(spark, [
        record(run_id="late", started_at=T0 + 100, finished_at=T0 + 150, seed=2, passed=False),
        record(run_id="early", started_at=T0 + 5, finished_at=T0 + 20, backend="containers", scenario="a"),
        record(run_id="early", started_at=T0, finished_at=T0 + 9, scenario="b", kind="measurement", passed=None),
        record(run_id="early", started_at=T0 - 1, passed=None, check="oracle_isr"),
        record(run_id="b", started_at=T0 + DAY, passed=True, kafka_version="3.9.1"),
        *[record(run_id="many", started_at=T0 + 3 * DAY + i, passed=i % 7 != 0, check=f"c{i % 3}") for i in range(50)],
    ])
    empty = records_frame(spark, [])
    for records in (frame, empty):
        finished = A.finish_outcomes(A.outcome_groups(records).collect())
        schemas = A.outcome_schemas()
        for name, query in (("totals", A.totals), ("pass_rates", A.pass_rates), ("trend_by_day", A.trend_by_day),
                            ("trend_by_run", A.trend_by_run)):
            expected = query(records)
            assert [r.asDict() for r in finished[name]] == [r.asDict() for r in expected.collect()], name
            assert [(f.name, f.dataType) for f in schemas[name].fields] == [
                (f.name, f.dataType) for f in expected.schema.fields], name
    assert A.wilson(0, 0) == (None, None, None)

"""kafka_chaos.results.aggregate's extract and its one pass on small inputs: every table, from records."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from kafka_chaos.results import aggregate as A
from kafka_chaos.records.schema import FIELD_NAMES
from kafka_chaos.results.tables import FAILURE_COLUMNS
from tests.spark.helpers import DAY, T0, record, tables_of


def lines_frame(spark, lines, source="file:/r/records.jsonl"):
    return spark.createDataFrame([(source, line) for line in lines], "source string, line string")


def test_classify_sorts_every_kind_of_line(spark):
    good = record(expected={"leader": 2, "isr": [2, 3]}, observed="text").to_json()
    missing = json.loads(good)
    del missing["scenario"], missing["seed"]
    wrong_type = json.loads(good) | {"partitions": "six"}
    newer_with_other_types = json.loads(good) | {"schema_version": 3, "partitions": "six"}
    lines = [good, "   ", "not json", "[1, 2]", json.dumps(missing), json.dumps(wrong_type),
             json.dumps(newer_with_other_types), good[:50]]
    classified = A.classify(A.parse_lines(lines_frame(spark, lines)))
    bad_json = "not a JSON object of the record schema (bad JSON or a wrongly typed field)"
    assertDataFrameEqual(
        classified.select("status", "problem"),
        [Row(status="valid", problem=None), Row(status="blank", problem=None),
         Row(status="malformed", problem=bad_json), Row(status="malformed", problem=bad_json),
         Row(status="malformed", problem="missing scenario, seed"), Row(status="malformed", problem=bad_json),
         Row(status="rejected", problem="schema_version 3 is not readable (readable: 1, 2)"),
         Row(status="malformed", problem=bad_json)],
        checkRowOrder=True,
    )


def test_valid_records_keep_arbitrary_json_as_its_text(spark):
    original = record(expected={"leader": 2, "isr": [2, 3]}, observed=[1, {"a": None}], detail="d")
    classified = A.classify(A.parse_lines(lines_frame(spark, [original.to_json()])))
    assert tuple(classified.columns) == ("source", "status", "problem", "excerpt", *FIELD_NAMES)
    [row] = classified.collect()
    assert row.status == "valid"
    assert json.loads(row.expected) == {"leader": 2, "isr": [2, 3]}
    assert json.loads(row.observed) == [1, {"a": None}]
    assert row.expected == '{"isr":[2,3],"leader":2}'  # compact, in the line's key order
    assert row.passed is True and row.detail == "d" and row.seed == 7


def test_input_counts_per_file_with_examples(spark):
    good = record().to_json()
    lines = lines_frame(spark, [good, good, "oops", json.dumps(json.loads(good) | {"schema_version": 0})], "file:/a")
    lines = lines.union(lines_frame(spark, [good, ""], "file:/b"))
    rows = A.aggregate_tables(A.classify(A.parse_lines(lines)))["inputs"]
    expected_rejected = 'schema_version 0 is not readable (readable: 1, 2): {"backend"'
    assert [(r["source"], r["valid"], r["malformed"], r["rejected"], r["blank"]) for r in rows] == [
        ("file:/a", 2, 1, 1, 0), ("file:/b", 1, 0, 0, 1)]
    assert rows[0]["malformed_example"].endswith(": oops")
    assert rows[0]["rejected_example"].startswith(expected_rejected)
    assert rows[1]["malformed_example"] is None


def test_source_path_turns_spark_uris_back_into_paths():
    assert A.source_path("file:/tmp/a%20b/records.jsonl") == "/tmp/a b/records.jsonl"
    assert A.source_path("file:///tmp/x") == "/tmp/x"
    assert A.source_path("hdfs://nn/x") == "hdfs://nn/x"


def test_pass_rates_count_unknown_apart_and_ignore_measurements(spark):
    rows = tables_of(spark, [
        record(passed=True), record(passed=True), record(passed=False), record(passed=None),
        record(kind="measurement", check="oracle_leader", passed=None),
        record(backend="containers", passed=False),
        record(check="oracle_isr", passed=None),
    ])["pass_rates"]
    assert [(r["backend"], r["check"], r["passed"], r["failed"], r["unknown"]) for r in rows] == [
        ("local", "oracle_isr", 0, 0, 1), ("containers", "oracle_leader", 0, 1, 0), ("local", "oracle_leader", 2, 1, 1)]
    assert [r["pass_rate"] for r in rows] == [None, 0.0, 2 / 3]
    # Reference values of the Wilson score interval (z = 1.96): 0/1 -> [0, 0.7935], 2/3 -> [0.2077, 0.9385].
    assert [r["ci_low"] for r in rows[1:]] == pytest.approx([0.0, 0.20765], rel=1e-4)
    assert [r["ci_high"] for r in rows[1:]] == pytest.approx([0.79346, 0.93851], rel=1e-4)


def test_latency_samples_drop_missing_phases_and_label_no_fault(spark):
    rows = tables_of(spark, [
        record(kind="measurement", check="latency", latency_ms={"detection": None, "election": 12.5,
                                                                "propagation": float("nan")}),
        record(kind="measurement", check="latency", fault=None, partitions=9, session_timeout_ms=6000,
               latency_ms={"client_gap": 40.0}),
        record(latency_ms=None),
    ])
    assert [(r["fault"], r["phase"], r["partitions"], r["count"], r["max"]) for r in rows["latency_by_partitions"]] == [
        ("hard_kill", "election", 3, 1, 12.5), ("none", "client_gap", 9, 1, 40.0)]
    assert [(r["fault"], r["session_timeout_ms"]) for r in rows["latency_by_session_timeout"]] == [
        ("hard_kill", None), ("none", 6000)]


def test_latency_percentiles_are_nearest_rank(spark):
    samples = [("hard_kill", "election", 3 if v <= 5 else 6, float(v)) for v in (7, 1, 10, 4, 2, 9, 3, 8, 6, 5)]
    samples += [("hard_kill", "detection", 3, 100.0), ("controlled_shutdown", "election", 3, 2.0),
                ("hard_kill", "election", 3, 5.0)]  # the same value twice: counted twice
    rows = tables_of(spark, [record(kind="measurement", check="latency", fault=fault, partitions=partitions,
                                    latency_ms={phase: ms}) for fault, phase, partitions, ms in samples])
    stats = ("fault", "phase", "count", "p50", "p90", "p99", "max")
    assert [tuple(r[k] for k in stats) for r in rows["latency"]] == [  # faults by name, phases in a switch's order
        ("controlled_shutdown", "election", 1, 2.0, 2.0, 2.0, 2.0),
        ("hard_kill", "detection", 1, 100.0, 100.0, 100.0, 100.0),
        ("hard_kill", "election", 11, 5.0, 9.0, 10.0, 10.0)]
    election = [(r["partitions"], r["count"], r["p50"], r["p90"], r["max"]) for r in rows["latency_by_partitions"]
                if r["phase"] == "election" and r["fault"] == "hard_kill"]
    assert election == [(3, 6, 3.0, 5.0, 5.0), (6, 5, 8.0, 10.0, 10.0)]


def test_latency_histogram_uses_log_bins(spark):
    rows = tables_of(spark, [record(kind="measurement", check="latency", fault="f", latency_ms={"election": v})
                             for v in (1.0, 1.05, 10.0, 0.0)])["latency_histogram"]
    assert [(round(r["low_ms"], 4), round(r["high_ms"], 4), r["count"]) for r in rows] == [
        (0.1, 0.1122, 1), (1.0, 1.122, 2), (10.0, 11.2202, 1)]


def test_trend_by_day_uses_utc_days(spark):
    rows = tables_of(spark, [
        record(run_id="a", started_at=T0 - 1, passed=False),  # 2025-12-31T23:59:59Z
        record(run_id="a", started_at=T0, passed=True),
        record(run_id="b", started_at=T0 + DAY - 0.001, passed=None),
        record(run_id="b", started_at=T0 + DAY, passed=True, kind="measurement"),  # not a check
    ])["trend_by_day"]
    assert [(r["day"], r["runs"], r["passed"], r["failed"], r["unknown"], r["pass_rate"]) for r in rows] == [
        (dt.date(2025, 12, 31), 1, 0, 1, 0, 0.0), (dt.date(2026, 1, 1), 2, 1, 0, 1, 1.0)]


def test_trend_by_run(spark):
    rows = tables_of(spark, [
        record(run_id="late", started_at=T0 + 100, finished_at=T0 + 150, seed=2, passed=False),
        record(run_id="early", started_at=T0 + 5, finished_at=T0 + 20, backend="containers", scenario="a"),
        record(run_id="early", started_at=T0, finished_at=T0 + 9, scenario="b", kind="measurement", passed=None),
    ])["trend_by_run"]
    assert [{k: v for k, v in r.items() if k not in ("ci_low", "ci_high")} for r in rows] == [
        dict(run_id="early", started_at=T0, finished_at=T0 + 20, backend="containers,local",
             kafka_version="3.9.2", seed=7, scenarios=2, records=2, passed=1, failed=0, unknown=0, pass_rate=1.0),
        dict(run_id="late", started_at=T0 + 100, finished_at=T0 + 150, backend="local",
             kafka_version="3.9.2", seed=2, scenarios=1, records=1, passed=0, failed=1, unknown=0, pass_rate=0.0)]


def test_failing_checks_newest_first_with_replay_keys(spark):
    rows = tables_of(spark, [
        record(iteration=1, passed=False, started_at=T0 + 1, detail="old", expected={"leader": 2}, observed={"leader": 1}),
        record(iteration=2, passed=False, started_at=T0 + 2, detail="new", target="broker 2"),
        record(iteration=3, passed=None, started_at=T0 + 3),
        record(iteration=4, passed=False, kind="measurement", started_at=T0 + 4),
        record(iteration=0, passed=False, started_at=T0 + 1.5, scenario="b"),
        record(iteration=0, passed=False, started_at=T0 + 1.5, scenario="a"),
    ])["failing_checks"]
    assert tuple(rows[0]) == FAILURE_COLUMNS
    assert [(r["iteration"], r["scenario"], r["detail"], r["seed"], r["run_id"]) for r in rows] == [
        (2, "kill", "new", 7, "r1"), (0, "a", "", 7, "r1"), (0, "b", "", 7, "r1"), (1, "kill", "old", 7, "r1")]
    assert json.loads(rows[3]["observed"]) == {"leader": 1}
    assert rows[0]["started_at"] == T0 + 2 and rows[0]["target"] == "broker 2"


def test_one_query_and_no_shuffle_for_a_small_input(spark, tmp_path):
    """A small input is one Spark job of one stage (no shuffle); a malformed line adds the examples' query."""
    good = record().to_json()
    path = tmp_path / "records.jsonl"
    for lines, jobs in (([good, good], 1), ([good, "oops"], 2)):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tracker = spark.sparkContext.statusTracker()
        group = f"one-pass-{jobs}"
        spark.sparkContext.setJobGroup(group, "counted")
        try:
            A.aggregate(spark, [path])
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        ids = tracker.getJobIdsForGroup(group)
        assert len(ids) == jobs
        assert [len(tracker.getJobInfo(i).stageIds) for i in ids] == [1] * jobs


def test_a_failed_spark_query_is_one_line_of_harness_error(spark, tmp_path, monkeypatch):
    """A job Spark aborts (here as py4j reports it: a Java stack trace in the message) reaches
    the user as one line naming the reason, not a traceback."""
    from kafka_chaos.common.errors import HarnessError

    path = tmp_path / "records.jsonl"
    path.write_text(record().to_json() + "\n", encoding="utf-8")

    def aborted(classified, spill=None):
        raise RuntimeError("An error occurred while calling o58.getResult.\n"
                           ": org.apache.spark.SparkException: Job aborted: Total size of serialized results "
                           "is bigger than spark.driver.maxResultSize (768.0 MiB)\n\tat org.apache.spark.Foo(Foo.scala:1)")

    monkeypatch.setattr(A, "collect_partials", aborted)
    with pytest.raises(HarnessError) as raised:
        A.aggregate(spark, [path])
    message = str(raised.value)
    assert "\n" not in message and message.startswith("the Spark aggregation of 1 file(s) failed: ")
    assert "spark.driver.maxResultSize" in message


def test_the_migration_timeline_lists_each_step_in_order_with_its_phases(spark):
    """``migration_timeline`` measurements (scenarios.checks.migration) become the report's phase
    timeline: one row per step, in time order per scenario, the observed phases carried over; a
    run that migrated nothing has an empty table."""
    def step(fault, at, before, after, state, seconds, lag=None):
        return record(kind="measurement", check="migration_timeline", passed=None, fault=fault, scenario="mig",
                      started_at=at, finished_at=at + seconds, target="brokers 1, 2, 3",
                      observed={"phase_before": before, "phase_after": after, "zk_migration_state": state,
                                "driver_state": "DUAL_WRITE" if state == "MIGRATION" else None,
                                "kraft_controller": 3000 if state == "MIGRATION" else None,
                                "seconds": seconds, "write_behind_s": lag})
    rows = tables_of(spark, [
        step("migration_roll/hybrid", T0 + 20, "pre-migration", "hybrid", "MIGRATION", 7.5, 0.02),
        step("migration_provision", T0, "zookeeper", "pre-migration", "PRE_MIGRATION", 2.5),
        record(check="oracle_leader"),  # not a migration step
    ])["migration_timeline"]
    assert [(r["fault"], r["phase_before"], r["phase_after"], r["zk_migration_state"], r["seconds"],
             r["write_behind_s"], r["kraft_controller"]) for r in rows] == [
        ("migration_provision", "zookeeper", "pre-migration", "PRE_MIGRATION", 2.5, None, None),
        ("migration_roll/hybrid", "pre-migration", "hybrid", "MIGRATION", 7.5, 0.02, 3000)]
    assert tables_of(spark, [record(check="oracle_leader")])["migration_timeline"] == []


def test_where_the_time_went_sums_each_phase_over_the_counted_time_ledgers(spark):
    """``time_ledger`` measurements (scenarios.checks.time_ledger) become the report's "Where the
    time went": per phase in the ledger's order, seconds summed over fault steps and iterations,
    how many ledgers spent any, their mean and share; a topic creation's ledger (a breakdown of
    its iteration's create_topics) is not counted again; no ledgers, no rows."""
    def ledger(scope, phases, fault=None):
        return record(kind="measurement", check="time_ledger", passed=None, fault=fault,
                      observed={"scope": scope, "phases": phases, "seconds": sum(phases.values()),
                                "kafka_dictated_s": phases.get("session_expiry", 0.0)})
    rows = tables_of(spark, [
        ledger("step", {"settle": 1.0, "session_expiry": 6.0, "other": 0.5}, "hard_kill"),
        ledger("step", {"settle": 3.0, "broker_start": 4.0}, "start"),
        ledger("topic_creation", {"inject": 0.5, "converge": 1.5}, "create_topic"),
        ledger("iteration", {"cluster": 10.0, "create_topics": 2.0, "other": 1.5}),
        record(check="oracle_leader"),
    ])["time_ledger"]
    assert [(r["phase"], r["kafka_dictated"], r["ledgers"], r["seconds"], r["mean_s"]) for r in rows] == [
        ("settle", False, 2, 4.0, 2.0), ("broker_start", True, 1, 4.0, 4.0), ("session_expiry", True, 1, 6.0, 6.0),
        ("cluster", False, 1, 10.0, 10.0), ("create_topics", False, 1, 2.0, 2.0), ("other", False, 2, 2.0, 1.0)]
    assert sum(r["share"] for r in rows) == pytest.approx(1.0) and rows[3]["share"] == pytest.approx(10 / 28)
    assert tables_of(spark, [record(check="oracle_leader")])["time_ledger"] == []


def test_transactions_per_fault_sum_the_outcomes_and_their_latency_is_a_phase(spark):
    """``txn_availability`` measurements (scenarios.checks.txn_availability) become the report's
    transactions per fault: outcomes summed over the fault's steps, the failure rate (aborted by an
    error or unknown, over all; the aborts the workload asks for are not failures), and their
    commit latency among the latency phases; no such measurement, no rows."""
    def step(fault, committed, aborted, failed, unknown, commit_p99):
        return record(kind="measurement", check="txn_availability", passed=None, fault=fault,
                      observed={"committed": committed, "aborted": aborted, "failed": failed, "unknown": unknown},
                      latency_ms={"txn_commit_p50": 10.0, "txn_commit_p99": commit_p99, "txn_no_commit": 300.0})
    found = tables_of(spark, [
        step("hard_kill", 8, 2, 3, 1, 5400.0), step("hard_kill", 10, 2, 0, 0, 40.0),
        step("pause", 0, 0, 0, 0, None),
        record(check="oracle_leader"),
    ])
    assert [(r["fault"], r["steps"], r["committed"], r["aborted"], r["failed"], r["unknown"]) for r in
            found["transactions"]] == [("hard_kill", 2, 18, 4, 3, 1), ("pause", 1, 0, 0, 0, 0)]
    assert found["transactions"][0]["failure_rate"] == pytest.approx(4 / 26)
    assert found["transactions"][1]["failure_rate"] is None  # no attempt ended: no rate
    p99 = {(r["fault"], r["count"], r["max"]) for r in found["latency"] if r["phase"] == "txn_commit_p99"}
    assert p99 == {("hard_kill", 2, 5400.0)}
    assert tables_of(spark, [record(check="oracle_leader")])["transactions"] == []

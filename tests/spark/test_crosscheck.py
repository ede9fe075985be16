"""Spark's aggregates equal a plain-Python computation over the same generated records.

Reference definitions, written out independently of results.aggregate:
* pass rate = passed / (passed + failed) over ``kind == "check"`` records, unknown apart;
* pXX = nearest rank: the sorted sample at 1-based rank ceil(XX * n / 100), in integer arithmetic;
* the 95 % Wilson score interval with z = 1.959963984540054.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import pytest

from kafka_chaos.results.aggregate import aggregate
from kafka_chaos.results.synthetic import write_synthetic_results
from kafka_chaos.records.writer import RecordWriter, read_records
from tests.spark.helpers import record

Z = 1.959963984540054
PERCENT = {"p50": 50, "p90": 90, "p99": 99}


def nearest_rank(values, percent):
    ordered = sorted(values)
    rank = max(1, -(-percent * len(ordered) // 100))
    return ordered[rank - 1]


def wilson(passed, n):
    p = passed / n
    denominator = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.fixture(scope="module")
def generated(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("crosscheck")
    # Two runs dirs, 12 runs over four days; odd sizes so no percentile rank is a round number.
    write_synthetic_results(root / "a", 7_001, seed=11, records_per_run=700, run_prefix="a")
    write_synthetic_results(root / "b", 1_999, seed=12, records_per_run=650, run_prefix="b")
    with open(root / "b" / "records.jsonl", "a", encoding="utf-8") as out:
        out.write("{not json\n")
        out.write(json.dumps({"schema_version": 0, "run_id": "old"}) + "\n")
    # a KRaft run (schema version 2's mode) beside the ZooKeeper-mode ones (no mode: version 1)
    with RecordWriter(root / "k") as writer:
        for i in range(41):
            writer.write(record(run_id="kraft", iteration=i, kind="measurement", check="latency", passed=None,
                                mode="kraft", latency_ms={"detection": 4000.0 + 37 * i, "election": 4000.0 + 37 * i,
                                                          "client_gap": 100.0 + i}))
    files = [root / "a" / "records.jsonl", root / "b" / "records.jsonl", root / "k" / "records.jsonl"]
    records = [r for f in files for r in read_records(f).records]
    return aggregate(spark, files), records


def test_totals_and_bad_lines(generated):
    result, records = generated
    checks = [r for r in records if r.kind == "check"]
    outcome = Counter(r.passed for r in checks)
    totals = result.totals
    assert (totals["records"], totals["checks"], totals["runs"]) == (
        len(records), len(checks), len({r.run_id for r in records}))
    assert (totals["passed"], totals["failed"], totals["unknown"]) == (outcome[True], outcome[False], outcome[None])
    assert totals["pass_rate"] == outcome[True] / (outcome[True] + outcome[False])
    assert [(f["valid"], f["malformed"], f["rejected"]) for f in result.inputs] == [(7_001, 0, 0), (1_999, 1, 1),
                                                                                    (41, 0, 0)]


def test_pass_rates_per_scenario_check_backend_version(generated):
    result, records = generated
    expected = defaultdict(Counter)
    for r in records:
        if r.kind == "check":
            expected[(r.scenario, r.check, r.backend, r.kafka_version)][r.passed] += 1
    assert len(result.pass_rates) == len(expected) > 20
    for row in result.pass_rates:
        counts = expected[(row["scenario"], row["check"], row["backend"], row["kafka_version"])]
        assert (row["passed"], row["failed"], row["unknown"]) == (counts[True], counts[False], counts[None])
        decided = counts[True] + counts[False]
        assert row["pass_rate"] == counts[True] / decided
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson(counts[True], decided), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("table, extra_key", [
    ("latency", None), ("latency_by_partitions", "partitions"), ("latency_by_session_timeout", "session_timeout_ms"),
    ("latency_by_release", "kafka_version"), ("latency_by_mode", "mode"),
])
def test_latency_percentiles_equal_exact_nearest_rank(generated, table, extra_key):
    result, records = generated
    samples = defaultdict(list)
    for r in records:
        for phase, value in (r.latency_ms or {}).items():
            if value is not None:
                # a record without a mode is a ZooKeeper-mode one (schema version 1)
                extra = () if extra_key is None else (getattr(r, extra_key),)
                if extra_key == "mode":
                    extra = (r.mode or "zookeeper",)
                key = (r.fault or "none", phase) + extra
                samples[key].append(value)
    rows = getattr(result, table)
    assert len(rows) == len(samples)
    for row in rows:
        key = (row["fault"], row["phase"]) + ((row[extra_key],) if extra_key else ())
        values = samples[key]
        assert row["count"] == len(values)
        assert row["max"] == max(values)
        for name, percent in PERCENT.items():
            assert row[name] == nearest_rank(values, percent), (key, name)


def test_trends_and_failures(generated):
    result, records = generated
    by_day = defaultdict(Counter)
    by_run = defaultdict(Counter)
    for r in records:
        counts = by_run[r.run_id]  # a run of measurements only (the KRaft one) is a row too
        if r.kind == "check":
            by_day[int(r.started_at // 86_400)][r.passed] += 1
            counts[r.passed] += 1
    assert [(row["passed"], row["failed"], row["unknown"]) for row in result.trend_by_day] == [
        (c[True], c[False], c[None]) for _, c in sorted(by_day.items())]
    assert {row["run_id"]: (row["passed"], row["failed"]) for row in result.trend_by_run} == {
        run: (c[True], c[False]) for run, c in by_run.items()}
    failed = Counter((r.run_id, r.scenario, r.iteration, r.check)
                     for r in records if r.kind == "check" and r.passed is False)
    assert result.failing_checks_total == sum(failed.values())
    shown = Counter((f["run_id"], f["scenario"], f["iteration"], f["check"]) for f in result.failing_checks)
    assert not shown - failed and sum(shown.values()) == min(sum(failed.values()), 500)
    newest_first = [f["started_at"] for f in result.failing_checks]
    assert newest_first == sorted(newest_first, reverse=True)
    assert newest_first[-1] >= sorted((r.started_at for r in records if r.kind == "check" and r.passed is False),
                                      reverse=True)[len(newest_first) - 1]

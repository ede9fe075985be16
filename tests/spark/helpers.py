"""Small record DataFrames for the transform tests."""

from __future__ import annotations

import json
from dataclasses import asdict

from kafka_chaos.results.aggregate import record_schema
from kafka_chaos.records.schema import FIELD_NAMES, Record

DAY = 86_400.0
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def record(**overrides) -> Record:
    values = dict(run_id="r1", scenario="kill", iteration=0, seed=7, backend="local", kafka_version="3.9.2",
                  brokers=3, partitions=3, kind="check", check="oracle_leader", passed=True,
                  started_at=T0, finished_at=T0 + 10, fault="hard_kill")
    values.update(overrides)
    return Record(**values)


def records_frame(spark, records):
    """A DataFrame of records as the extract step leaves them (expected/observed as JSON text)."""
    rows = []
    for item in records:
        data = asdict(item)
        for key in ("expected", "observed"):
            if data[key] is not None:
                data[key] = json.dumps(data[key], separators=(",", ":"))
        rows.append(tuple(data[name] for name in FIELD_NAMES))
    return spark.createDataFrame(rows, record_schema())


def tables_of(spark, records):
    """Every report table over ``records`` (a records frame, as valid lines of one file), as the
    one-pass aggregation finishes them."""
    from kafka_chaos.results.aggregate import aggregate_tables

    frame = records_frame(spark, records).selectExpr(
        "'file:/r/records.jsonl' as source", "'valid' as status", "cast(null as string) as problem",
        "cast(null as string) as excerpt", "*")
    return aggregate_tables(frame)

"""The faster aggregation gives exactly what the previous one gave.

``golden/aggregates.json`` was written by the aggregation as it was before the speed-up (commit
d164377: one ``orderBy`` per table, one job after another, the whole records cached) over the
input :func:`golden_input` builds — generated runs plus every awkward line the parser knows
(malformed, rejected, blank, NaN latency, failures with JSON expected/observed, unknowns).  The
current code must reproduce every row, in order, value for value (sums of doubles to 12 significant
digits: they are added per file, then across files) — since the tables are finished in Python
from one query's partial aggregates (results.tables), and from cached per-file partials, too.
Changed on purpose twice: the histogram's bin edges are 10^(k/20) correctly rounded (results.tables.bin_edge) where Spark's
``pow`` differed from it in the last bit (same bins, same counts); and the generated
``client_availability`` records carry ``produce_outage`` since the producer's outage is measured:
its rows were added to the latency tables, every other row kept as it was (the availability means
too, equal to 12 digits).  Regenerate the file only when an aggregate's meaning changes on purpose,
and check that its diff is what you meant:

    .venv/bin/python -m tests.spark.test_golden  # writes tests/spark/golden/aggregates.json
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

from kafka_chaos.results.aggregate import Aggregates, aggregate
from kafka_chaos.results.partials_cache import PartialsCache
from kafka_chaos.results.synthetic import write_synthetic_results
from kafka_chaos.records.writer import RecordWriter
from tests.spark.helpers import record

GOLDEN = Path(__file__).with_name("golden") / "aggregates.json"
# Not in the golden file: added since, or not a result.
NEW_FIELDS = ("latency_values", "controller", "seconds", "cached_files", "latency_by_release", "latency_by_mode",
              "migration_timeline", "time_ledger", "transactions")


def golden_input(root: Path) -> list[Path]:
    first = write_synthetic_results(root / "a", 2_000, seed=11, records_per_run=700)
    with RecordWriter(root / "b") as writer:
        writer.write(record(run_id="manual", passed=False, detail="leader 3, expected 2",
                            expected={"leader": 2, "isr": [2, 3]}, observed={"leader": 3, "isr": [3]}))
        writer.write(record(run_id="manual", check="oracle_isr", passed=None, fault=None, detail="timed out"))
        writer.write(record(run_id="manual", kind="measurement", check="latency", passed=None,
                            latency_ms={"detection": 0.0, "election": 999.6, "propagation": None,
                                        "first_produce": float("nan"), "client_gap": 12.35}))
        writer.write(record(run_id="manual", kind="measurement", check="client_availability", passed=None,
                            observed={"produce_availability": 0.5, "consume_availability": 1.0},
                            latency_ms={"unavailable": 1500.0, "e2e_p50": 3.0}))
    second = root / "b" / "records.jsonl"
    with open(second, "a", encoding="utf-8") as out:
        out.write("\n   \n")
        out.write('{"schema_version": 1, "run_id": "cut')
        out.write("\n" + json.dumps({"schema_version": 99, "run_id": "future"}) + "\n")
        out.write(json.dumps({"schema_version": 1, "run_id": "typed", "iteration": "one"}) + "\n")
    write_synthetic_results(root / "c", 1_500, seed=12, records_per_run=500, run_prefix="other")
    return [first, second, root / "c" / "records.jsonl"]


def comparable(result: Aggregates, root: Path) -> dict[str, Any]:
    """The aggregates as JSON data, file paths relative to ``root``."""
    document = {k: v for k, v in dataclasses.asdict(result).items() if k not in NEW_FIELDS}
    for row in document["inputs"]:
        row["source"] = str(Path(row["source"]).relative_to(root))
    return json.loads(json.dumps(document, sort_keys=True))


def assert_golden(result: Aggregates, root: Path) -> None:
    """Every table of ``result`` (its inputs' paths relative to ``root``) as the golden file has it."""
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = comparable(result, root)
    assert sorted(actual) == sorted(expected)
    for key in expected:  # one table at a time: a failure names the table
        assert same(actual[key], expected[key]), key


def test_the_aggregates_are_the_ones_the_previous_code_gave(spark, tmp_path):
    assert_golden(aggregate(spark, golden_input(tmp_path), tmp_path / "tables"), tmp_path)


def same(actual: Any, expected: Any) -> bool:
    """Equal, floats to 12 significant digits: a sum of doubles (availability's means) depends on
    the order of its additions, and the partials are summed per file, then across files."""
    if isinstance(expected, float) and isinstance(actual, float):
        return math.isclose(actual, expected, rel_tol=1e-12)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(actual) == len(expected) and all(map(same, actual, expected))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return actual.keys() == expected.keys() and all(same(actual[k], expected[k]) for k in expected)
    return bool(actual == expected)


def test_the_large_input_way_gives_the_same_aggregates(spark, tmp_path, monkeypatch):
    """Past SMALL_INPUT_BYTES the query is compiled, runs in several tasks, and its partials go
    through Parquet files instead of the driver (results.aggregate.collect_partials)."""
    import kafka_chaos.results.aggregate as A

    monkeypatch.setattr(A, "SMALL_INPUT_BYTES", 0)
    assert_golden(aggregate(spark, golden_input(tmp_path), tmp_path / "tables"), tmp_path)


def test_partials_from_the_cache_give_the_same_aggregates(spark, tmp_path):
    """Each file's partials kept by one report and merged by the next (results.partials_cache)
    give every table as the one pass over all the files does: with one file cached and two read,
    and with all three cached and no Spark session at all."""
    files = golden_input(tmp_path / "in")
    cache = PartialsCache(tmp_path / "cache")
    aggregate(spark, files[:1], cache=cache)
    mixed = aggregate(spark, files, tmp_path / "mixed", cache=cache)
    warm = aggregate(None, files, tmp_path / "warm", cache=cache)
    assert (mixed.cached_files, warm.cached_files) == (1, 3)
    assert_golden(mixed, tmp_path / "in")
    assert_golden(warm, tmp_path / "in")


def test_a_file_changed_since_it_was_cached_is_read_again(spark, tmp_path):
    files = golden_input(tmp_path / "in")
    cache = PartialsCache(tmp_path / "cache")
    before = aggregate(spark, files, cache=cache)
    with open(files[2], "a", encoding="utf-8") as out:
        out.write("\n")
    after = aggregate(spark, files, cache=cache)
    assert after.cached_files == 2
    blank = {Path(row["source"]).parent.name: row["blank"] for row in after.inputs}
    assert blank["c"] == 1 + {Path(row["source"]).parent.name: row["blank"] for row in before.inputs}["c"]


def _write_golden() -> None:  # pragma: no cover - run by hand
    import tempfile

    from kafka_chaos.results.spark_session import start_spark

    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        spark = start_spark(None, log_path=root / "spark.log")
        try:
            result = aggregate(spark, golden_input(root / "in"), root / "tables")
        finally:
            spark.stop()
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(comparable(result, root / "in"), indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    _write_golden()

"""kafka_chaos.results.tables: the report's tables finished from partial aggregates, against plain definitions
computed from the individual samples and records."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal, localcontext

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.results import tables as T
from kafka_chaos.results.comparison import round_significant, value_counts_from_spark_rows

FAULTS = st.sampled_from(["hard_kill", "controlled_shutdown", "none"])
PHASES = st.sampled_from(["detection", "election", "client_gap", "zz_custom"])
MS = st.integers(min_value=0, max_value=200_000).map(lambda tenths: tenths / 10)  # records keep 0.1 ms
SAMPLE = st.tuples(FAULTS, PHASES, st.sampled_from([None, 3, 6]), st.sampled_from([None, 6000]),
                   st.sampled_from(["3.9.2", "2.4.1", ""]), st.sampled_from(["zookeeper", "kraft"]), MS)


def partial_rows(samples, split):
    """Samples as the one pass counts them: per key and exact value, sometimes split over two
    rows (as two tasks' partial counts may be)."""
    counted = {}
    for sample in samples:
        counted[sample] = counted.get(sample, 0) + 1
    rows = []
    for (fault, phase, partitions, session, release, mode, ms), n in counted.items():
        parts = [n // 2, n - n // 2] if split and n > 1 else [n]
        rows += [dict(fault=fault, phase=phase, partitions=partitions, session_timeout_ms=session,
                      kafka_version=release, mode=mode, ms=ms, n=part) for part in parts]
    return rows


def nearest_rank_of(values, percent):
    ordered = sorted(values)
    return ordered[max(1, -(-percent * len(ordered) // 100)) - 1]


@given(st.lists(SAMPLE, min_size=1, max_size=60), st.booleans())
def test_percentiles_from_value_counts_are_the_samples_nearest_ranks(samples, split):
    tables = T.latency_tables(T.Samples.from_rows(partial_rows(samples, split)))
    for name, by in T.LATENCY_TABLES.items():
        keys = ("fault", "phase", *by)
        index = {"fault": 0, "phase": 1, "partitions": 2, "session_timeout_ms": 3, "kafka_version": 4, "mode": 5}
        groups = {}
        for sample in samples:
            groups.setdefault(tuple(sample[index[k]] for k in keys), []).append(sample[6])
        assert len(tables[name]) == len(groups)
        for row in tables[name]:
            values = groups[tuple(row[k] for k in keys)]
            assert row["count"] == len(values) and row["max"] == max(values)
            assert [row[p] for p, _ in T.PERCENT] == [nearest_rank_of(values, pct) for _, pct in T.PERCENT]


def test_latency_rows_go_by_fault_then_a_leader_switchs_phase_order_then_the_key_nulls_first():
    rows = partial_rows([("b", "client_gap", 3, None, "3.9.2", "zookeeper", 1.0), ("b", "zz_custom", 3, None, "3.9.2", "zookeeper", 1.0),
                         ("b", "detection", 6, None, "3.9.2", "zookeeper", 1.0), ("b", "detection", None, None, "3.9.2", "zookeeper", 2.0),
                         ("a", "election", 3, None, "3.9.2", "zookeeper", 5.0)], split=False)
    ordered = T.latency_tables(T.Samples.from_rows(rows))["latency_by_partitions"]
    assert [(r["fault"], r["phase"], r["partitions"]) for r in ordered] == [
        ("a", "election", 3), ("b", "detection", None), ("b", "detection", 6), ("b", "client_gap", 3),
        ("b", "zz_custom", 3)]


def test_nearest_rank_on_known_values():
    from kafka_chaos.results.samples import grouped, nearest_ranks

    ms, counts = np.array([1.0, 2.0, 3.0, 10.0]), np.array([5, 3, 1, 1], dtype=np.int64)  # ten samples
    one_group = grouped([np.zeros(4, dtype=np.int64)], within=np.arange(4, dtype=np.int64))
    assert [nearest_ranks(one_group, ms, counts, pct)[0] for pct in (1, 50, 51, 80, 81, 90, 91, 99, 100)] == [
        1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 10.0, 10.0, 10.0]


def test_histogram_bins_are_log_spaced_and_their_edges_correctly_rounded():
    values = (0.0, 0.05, 1.0, 1.1, 10.0)
    rows = T.latency_histogram(T.Samples.from_rows(partial_rows([("f", "election", None, None, "3.9.2", "zookeeper", v) for v in values],
                                                                split=False)))
    assert [(r["low_ms"], r["count"]) for r in rows] == [(0.1, 2), (1.0, 2), (10.0, 1)]
    for k in range(-20, 120):
        with localcontext() as context:
            context.prec = 60
            exact = Decimal(10) ** (Decimal(k) / 20)
        edge = T.bin_edge(k, 20)
        below, above = math.nextafter(edge, 0), math.nextafter(edge, math.inf)
        assert abs(Decimal(edge) - exact) <= min(abs(Decimal(below) - exact), abs(Decimal(above) - exact)), k
        assert T.bin_edge(k + 1, 20) > edge


def test_latency_values_round_to_three_significant_digits_half_up():
    values = [0.0, 999.6, 1000.4, 1234.5, 0.001, -3.5, 12.35, 123456.7]
    rows = T.latency_values(T.Samples.from_rows(partial_rows([("f", "election", None, None, "3.9.2", "zookeeper", v) for v in values],
                                                            split=True)))
    sample = value_counts_from_spark_rows(rows)[("f", "election")]
    assert dict(zip(sample.values, sample.counts)) == {
        0.0: 1, 1000.0: 2, 1230.0: 1, 0.001: 1, -3.5: 1, 12.3: 1, 123000.0: 1}
    assert all(round_significant(v) in sample.values for v in values)


def test_availability_and_controller_means_weigh_by_count_and_none_is_no_sample():
    facts = [dict(fault="b", n=2, produce_sum=1.5, produce_min=0.5, produce_n=2, consume_sum=None,
                  consume_min=None, consume_n=0),
             dict(fault="a", n=1, produce_sum=1.0, produce_min=1.0, produce_n=1, consume_sum=0.25, consume_min=0.25,
                  consume_n=1)]
    assert T.availability(facts) == [
        dict(fault="a", count=1, produce_mean=1.0, produce_min=1.0, consume_mean=0.25, consume_min=0.25),
        dict(fault="b", count=2, produce_mean=0.75, produce_min=0.5, consume_mean=None, consume_min=None)]
    controller = dict(fault="a", n=3, moved=1, elections=4, election_ms=600.0, events=0, queue_ms=0.0, shutdowns=None,
                      shutdown_ms=None, unclean=0, offline=2, urp=5, under_min_isr=0, queue_size=1)
    [row] = T.controller([controller])
    assert (row["steps"], row["broker_change_mean_ms"], row["queue_mean_ms"], row["shutdown_mean_ms"]) == (
        3, 150.0, None, None)


def test_failing_checks_newest_first_then_by_replay_keys_and_repeated_n_times():
    def failure(started, scenario, n=1, **more):
        return {"failure": json.dumps({"run_id": "r", "scenario": scenario, "iteration": 0, "check": "c",
                                       **({"started_at": started} if started is not None else {}), **more}), "n": n}

    rows = T.failing_checks([failure(1.0, "a"), failure(None, "z"), failure(2.0, "b", n=2, detail="x"),
                             failure(1.0, "0")])
    assert [(r["started_at"], r["scenario"]) for r in rows] == [
        (2.0, "b"), (2.0, "b"), (1.0, "0"), (1.0, "a"), (None, "z")]  # a missing start last, as Spark's desc
    assert tuple(rows[0]) == T.FAILURE_COLUMNS and rows[0]["detail"] == "x" and rows[2]["target"] is None


def test_input_counts_fill_every_status_and_go_by_source():
    facts = [dict(source="file:/b", status="valid", n=3), dict(source="file:/a", status="blank", n=1),
             dict(source="file:/a", status="malformed", n=2)]
    assert T.input_counts(facts, {("file:/a", "malformed"): "bad: x"}) == [
        dict(source="file:/a", valid=0, malformed=2, rejected=0, blank=1, malformed_example="bad: x",
             rejected_example=None),
        dict(source="file:/b", valid=3, malformed=0, rejected=0, blank=0, malformed_example=None,
             rejected_example=None)]


OUTCOME = st.fixed_dictionaries({
    "run_id": st.sampled_from(["r1", "r2"]), "scenario": st.sampled_from(["s", "t"]),
    "check": st.sampled_from(["c", "d"]), "backend": st.sampled_from(["local", "containers"]),
    "kafka_version": st.just("3.9.2"), "kind": st.sampled_from(["check", "measurement"]),
    "passed": st.sampled_from([True, False, None]), "started_at": st.integers(0, 5 * 86_400).map(float),
    "seed": st.integers(0, 3)})


@given(st.lists(OUTCOME, max_size=40))
def test_outcome_tables_from_groups_equal_the_counts_over_the_records(records):
    groups = {}
    for r in records:
        key = (*(r[k] for k in ("run_id", "scenario", "check", "backend", "kafka_version", "kind", "passed")),
               math.floor(r["started_at"] / 86_400))
        g = groups.setdefault(key, dict(zip(("run_id", "scenario", "check", "backend", "kafka_version", "kind",
                                             "passed", "day"), key), n=0, started_at=math.inf,
                                        finished_at=-math.inf, seed=1 << 62))
        g["n"] += 1
        g["started_at"] = min(g["started_at"], r["started_at"])
        g["finished_at"] = max(g["finished_at"], r["started_at"] + 1)
        g["seed"] = min(g["seed"], r["seed"])
    found = T.outcome_tables(list(groups.values()))
    checks = [r for r in records if r["kind"] == "check"]
    [totals] = found["totals"]
    assert (totals["records"], totals["checks"], totals["runs"]) == (
        len(records), len(checks), len({r["run_id"] for r in records}))
    assert (totals["passed"], totals["failed"], totals["unknown"]) == tuple(
        sum(1 for r in checks if r["passed"] is outcome) for outcome in (True, False, None))
    for row in found["pass_rates"]:
        mine = [r for r in checks if all(r[k] == row[k] for k in T.PASS_RATE_KEYS)]
        assert (row["passed"], row["failed"]) == (sum(r["passed"] is True for r in mine),
                                                 sum(r["passed"] is False for r in mine))
    assert sum(row["passed"] + row["failed"] + row["unknown"] for row in found["trend_by_day"]) == len(checks)
    assert [row["day"] for row in found["trend_by_day"]] == sorted(
        {dt.date(1970, 1, 1) + dt.timedelta(days=math.floor(r["started_at"] / 86_400)) for r in checks})
    assert [row["run_id"] for row in found["trend_by_run"]] == sorted(
        {r["run_id"] for r in records}, key=lambda run: (min(r["started_at"] for r in records if r["run_id"] == run), run))


def test_wilson_interval_on_reference_values():
    assert T.wilson(0, 0) == (None, None, None)
    rate, low, high = T.wilson(8, 2)  # 8/10 -> [0.4902, 0.9433] (z = 1.96)
    assert (rate, round(low, 4), round(high, 4)) == (0.8, 0.4902, 0.9433)
    assert T.wilson(5, 0)[2] == 1.0


# -------------------------------------------------------------- merging per-file partial rows

VALUE = st.one_of(st.none(), st.integers(-50, 50).map(float), st.just(float("nan")))


def spark_sum(values):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def spark_min(values):
    present = [v for v in values if v is not None]
    numbers = [v for v in present if not math.isnan(v)]
    return min(numbers) if numbers else (float("nan") if present else None)


def spark_max(values):
    present = [v for v in values if v is not None]
    return float("nan") if any(math.isnan(v) for v in present) else max(present, default=None)


def same_value(a, b):
    return (a is None and b is None) or (a is not None and b is not None and (a == b or (math.isnan(a) and math.isnan(b))))


@given(st.lists(st.tuples(FAULTS, st.integers(1, 3), VALUE, VALUE), min_size=1, max_size=40),
       st.lists(st.integers(0, 39), max_size=5))
def test_merged_partial_rows_are_the_aggregates_over_every_file(facts, cuts):
    """Facts cut into files at arbitrary points, aggregated per file and fault as Spark does, then
    merged (results.tables.merge_rows): the aggregates of all the facts at once, per fault."""
    bounds = sorted({0, len(facts), *(c for c in cuts if c < len(facts))})
    files = [facts[a:b] for a, b in zip(bounds, bounds[1:])]

    def aggregated(chunk):
        by_fault = {}
        for fault, n, low, high in chunk:
            by_fault.setdefault(fault, []).append((n, low, high))
        return [{"fault": fault, "n": sum(n for n, _, _ in rows), "low": spark_min([v for _, v, _ in rows]),
                 "high": spark_max([v for _, _, v in rows]), "total": spark_sum([v for _, v, _ in rows]),
                 "other": "kept"}
                for fault, rows in by_fault.items()]

    merged = T.merge_rows([row for chunk in files for row in aggregated(chunk)], "fault",
                          summed=("n", "total"), smallest=("low",), largest=("high",))
    whole = {row["fault"]: row for row in aggregated(facts)}
    assert sorted(row["fault"] for row in merged) == sorted(whole)
    for row in merged:
        expected = whole[row["fault"]]
        assert row["n"] == expected["n"] and row["other"] == "kept"
        assert all(same_value(row[k], expected[k]) for k in ("low", "high", "total")), (row, expected)


def test_time_ledger_rows_go_in_the_ledgers_phase_order_with_mean_and_share():
    """Per phase (scenarios.model.ledger order, an unknown phase last): seconds, ledgers, mean,
    share of all the seconds; Kafka-dictated phases marked."""
    facts = [dict(phase="other", n=4, seconds=2.0), dict(phase="session_expiry", n=2, seconds=12.0),
             dict(phase="nap", n=1, seconds=1.0), dict(phase="settle", n=5, seconds=5.0)]
    rows = T.time_ledger(facts)
    assert [(r["phase"], r["kafka_dictated"], r["ledgers"], r["seconds"], r["mean_s"], r["share"]) for r in rows] == [
        ("settle", False, 5, 5.0, 1.0, 0.25), ("session_expiry", True, 2, 12.0, 6.0, 0.6),
        ("other", False, 4, 2.0, 0.5, 0.1), ("nap", False, 1, 1.0, 1.0, 0.05)]
    assert T.time_ledger([]) == []
    assert [name for name, _ in T.columns("time_ledger")] == list(rows[0])

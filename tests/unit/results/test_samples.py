"""kafka_chaos.results.samples: the vectorised latency kernels give what the per-value definitions give,
bit for bit (numpy's log10 is not C's: values at a decade or bin boundary are the hard cases)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.results import tables as T
from kafka_chaos.results.comparison import mantissa_exponent
from kafka_chaos.results.samples import Samples, log_buckets, mantissas_exponents

# Latencies as records hold them (0.1 ms steps), any double, and the boundaries: powers of ten,
# histogram edges, halves at the third significant digit, and their neighbours one ulp away.
BOUNDARIES = [10.0 ** k for k in range(-4, 8)] + [T.bin_edge(k, 20) for k in range(-20, 140)] + \
             [d * 10.0 ** k + 0.5 * 10.0 ** k for d in (100, 123, 999) for k in range(-4, 5)]
NEAR = st.sampled_from(BOUNDARIES).flatmap(lambda v: st.sampled_from(
    [v, math.nextafter(v, 0), math.nextafter(v, math.inf), -v]))
VALUES = st.one_of(st.integers(0, 10**7).map(lambda tenths: tenths / 10), NEAR,
                   st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)
                   .filter(lambda v: v == 0 or abs(v) > 1e-12))  # not a latency: 10**e underflows (both ways)


@given(st.lists(VALUES, min_size=1, max_size=200))
def test_mantissas_and_exponents_are_the_per_value_rounding(values):
    mantissas, exponents = mantissas_exponents(np.array(values, dtype=np.float64), 3)
    assert list(zip(mantissas.tolist(), exponents.tolist())) == [mantissa_exponent(v, 3) for v in values]


@given(st.lists(VALUES, min_size=1, max_size=200), st.sampled_from([10, 20]))
def test_histogram_buckets_are_the_per_value_floor_of_log10(values, bins_per_decade):
    buckets = log_buckets(np.array(values, dtype=np.float64), bins_per_decade)
    assert buckets.tolist() == [math.floor(math.log10(max(v, 0.1)) * bins_per_decade) for v in values]


ROWS = st.lists(st.tuples(st.sampled_from(["hard_kill", "none"]), st.sampled_from(["election", "client_gap"]),
                          st.sampled_from([None, 3]), st.sampled_from([None, 6000]), st.sampled_from(["3.9.2", "2.4.1"]),
                          st.sampled_from(["zookeeper", "kraft"]), VALUES, st.integers(1, 5)),
                max_size=60)


@given(ROWS)
def test_histogram_and_rounded_values_count_every_sample_once(rows):
    dicts = [dict(fault=f, phase=p, partitions=k, session_timeout_ms=s, kafka_version=v, mode=m, ms=ms, n=n)
             for f, p, k, s, v, m, ms, n in rows]
    samples = Samples.from_rows(dicts)
    histogram = Counter()
    rounded = Counter()
    for row in dicts:
        bucket = math.floor(math.log10(max(row["ms"], 0.1)) * 20)
        histogram[(row["fault"], row["phase"], T.bin_edge(bucket, 20))] += row["n"]
        rounded[(row["fault"], row["phase"], *mantissa_exponent(row["ms"], 3))] += row["n"]
    assert {(r["fault"], r["phase"], r["low_ms"]): r["count"] for r in T.latency_histogram(samples)} == histogram
    values = T.latency_values(samples)
    assert [(r["fault"], r["phase"], r["mantissa"], r["exponent"]) for r in values] == sorted(rounded)
    assert {(r["fault"], r["phase"], r["mantissa"], r["exponent"]): r["count"] for r in values} == rounded


@given(ROWS)
def test_samples_from_arrow_are_the_samples_from_rows(rows):
    dicts = [dict(fault=f, phase=p, partitions=k, session_timeout_ms=s, kafka_version=v, mode=m, ms=ms, n=n)
             for f, p, k, s, v, m, ms, n in rows]
    keys = ("fault", "phase", "partitions", "session_timeout_ms", "kafka_version", "mode", "ms")
    struct = pa.array([{k: d[k] for k in keys} for d in dicts],
                      pa.struct([("fault", pa.string()), ("phase", pa.string()), ("partitions", pa.int32()),
                                 ("session_timeout_ms", pa.int32()), ("kafka_version", pa.string()),
                                 ("mode", pa.string()), ("ms", pa.float64())]))
    from_arrow = Samples.from_arrow(struct, pa.array([d["n"] for d in dicts], pa.int64()))
    assert T.latency_tables(from_arrow) == T.latency_tables(Samples.from_rows(dicts))
    assert T.latency_values(from_arrow) == T.latency_values(Samples.from_rows(dicts))


def test_no_samples_make_empty_tables():
    empty = Samples.from_rows([])
    assert T.latency_tables(empty) == {name: [] for name in T.LATENCY_TABLES}
    assert T.latency_histogram(empty) == [] and T.latency_values(empty) == []


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 2), st.integers(0, 9)), min_size=1, max_size=50),
       st.booleans())
def test_grouping_keeps_equal_keys_together_in_key_order_and_the_given_order_within(rows, wide):
    """Both ways of grouping (one mixed-radix key, or lexsort when its width would overflow)."""
    from kafka_chaos.results.samples import grouped

    scale = 1 << 40 if wide else 1  # two keys 2^40 wide: past 2^62, the lexsort way
    first = np.array([a * scale for a, _, _ in rows], dtype=np.int64)
    second = np.array([b * scale for _, b, _ in rows], dtype=np.int64)
    within = np.argsort(np.array([c for _, _, c in rows]), kind="stable").astype(np.int64)
    groups = grouped([first, second], within=within)
    expected = sorted(range(len(rows)), key=lambda i: (rows[i][0], rows[i][1], rows[i][2], i))
    assert groups.order.tolist() == expected
    keys = [(rows[i][0], rows[i][1]) for i in expected]
    assert groups.starts.tolist() == [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
    assert groups.ends.tolist() == groups.starts.tolist()[1:] + [len(rows)]

"""Latency samples as columns: the one pass's latency partials, vectorised with numpy.

For 3M records the one pass yields some 2.4M latency rows (fault x phase x partitions x session
timeout x exact value, counted); as Python dicts, finishing the percentile, histogram and
rounded-value tables from them took longer than Spark's whole query.  Here
each key column is integer codes into its distinct values (None among them), values and counts
are arrays, and a table is one sort, one cumulative sum and a binary search per percentile.

The results are the ones the per-row definitions give, bit for bit: the decimal exponent of a
value and a histogram bin come from numpy's ``log10``, which may differ from C's in the last
bit, so every value within a hair of a boundary is decided again by :func:`math.log10`, as
:func:`results.comparison.mantissa_exponent` and the histogram always decided it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from kafka_chaos.results.comparison import mantissa_exponent

SAMPLE_KEY = ("fault", "phase", "partitions", "session_timeout_ms", "kafka_version", "mode")
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
# A value whose log10 (times the bins per decade) lies this close to a whole number is decided
# again in Python: numpy's and C's log10 agree to a few ulps (~1e-15 relative), never to 1e-9.
_BOUNDARY = 1e-9


@dataclass(frozen=True)
class Samples:
    """Latency samples counted per key and exact value: ``codes[k][i]`` indexes ``labels[k]``,
    the distinct values of key column ``k``; row ``i`` is ``n[i]`` samples of ``ms[i]``."""

    labels: Mapping[str, tuple[Any, ...]]
    codes: Mapping[str, Ints]
    ms: Floats
    n: Ints

    def __len__(self) -> int:
        return len(self.ms)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> "Samples":
        """From dicts with the :data:`SAMPLE_KEY` fields, ``ms`` and ``n``."""
        labels: dict[str, tuple[Any, ...]] = {}
        codes: dict[str, Ints] = {}
        for name in SAMPLE_KEY:
            index: dict[Any, int] = {}
            codes[name] = np.array([index.setdefault(row[name], len(index)) for row in rows], dtype=np.int64)
            labels[name] = tuple(index)
        return cls(labels, codes, np.array([row["ms"] for row in rows], dtype=np.float64),
                   np.array([row["n"] for row in rows], dtype=np.int64))

    @classmethod
    def from_arrow(cls, sample: Any, n: Any) -> "Samples":
        """From an Arrow struct array of the :data:`SAMPLE_KEY` fields and ``ms``, and the counts."""
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        columns = dict(zip((field.name for field in sample.type), sample.flatten()))
        labels: dict[str, tuple[Any, ...]] = {}
        codes: dict[str, Ints] = {}
        for name in SAMPLE_KEY:
            encoded = pc.dictionary_encode(columns[name], null_encoding="encode")
            codes[name] = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            labels[name] = tuple(encoded.dictionary.to_pylist())
        ms = columns["ms"].cast(pa.float64()).to_numpy(zero_copy_only=False)
        return cls(labels, codes, ms, np.asarray(n.to_numpy(zero_copy_only=False), dtype=np.int64))

    @cached_property
    def by_value(self) -> Ints:
        """The rows in ascending order of value (stable): what every percentile table sorts by."""
        order: Ints = np.argsort(self.ms, kind="stable").astype(np.int64)
        return order

    def label_rows(self, keys: Sequence[str], rows: Ints) -> list[tuple[Any, ...]]:
        """The key values of the given rows."""
        columns = [[self.labels[key][code] for code in self.codes[key][rows].tolist()] for key in keys]
        return list(zip(*columns))


@dataclass(frozen=True)
class Groups:
    """Rows sorted so that equal keys are adjacent (``order``) and each group's first and
    one-past-last position in that order."""

    order: Ints
    starts: Ints
    ends: Ints


def grouped(keys: Sequence[Ints], within: Ints | None = None) -> Groups:
    """Group rows by the integer key columns (the first the primary); ``within``: an order of
    all rows (a permutation) that each group keeps, e.g. :attr:`Samples.by_value`.

    The keys become one mixed-radix integer, and one stable argsort of it orders the rows:
    several times faster than ``np.lexsort`` over the columns."""
    count = len(keys[0]) if keys else 0
    if count == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(empty, empty, empty)
    composite = np.zeros(count, dtype=np.int64)
    width = 1
    for key in keys:
        low, span = int(key.min()), int(key.max()) - int(key.min()) + 1
        width *= span
        if width >= 1 << 62:  # cannot happen with the report's keys; kept correct regardless
            base = np.arange(count, dtype=np.int64) if within is None else within
            order = base[np.lexsort(list(reversed([key[base] for key in keys])))].astype(np.int64)
            return _groups_of(order, [key[order] for key in keys], count)
        composite = composite * span + (key - low)
    order = np.arange(count, dtype=np.int64) if within is None else within
    order = order[np.argsort(composite[order], kind="stable")]
    return _groups_of(order, [composite[order]], count)


def _groups_of(order: Ints, ordered_keys: Sequence[Ints], count: int) -> Groups:
    changed = np.zeros(count, dtype=bool)
    changed[0] = True
    for ordered in ordered_keys:
        changed[1:] |= ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(changed).astype(np.int64)
    return Groups(order, starts, np.append(starts[1:], count).astype(np.int64))


def group_sums(groups: Groups, n: Ints) -> tuple[Ints, Ints, Ints]:
    """The running sum of ``n`` in the groups' order, the sum before each group, each group's sum."""
    running = np.cumsum(n[groups.order])
    before = np.where(groups.starts > 0, running[groups.starts - 1], 0)
    return running, before, running[groups.ends - 1] - before


def nearest_ranks(groups: Groups, ms: Floats, n: Ints, percent: int) -> Floats:
    """pXX per group of (value, count) rows sorted by value within the group: the smallest value
    with at least XX % of the group's samples at or below it (rank ceil(XX * total / 100), in
    integer arithmetic; what Spark's ``percentile_disc`` gives)."""
    running, before, totals = group_sums(groups, n)
    rank = np.maximum(1, (percent * totals + 99) // 100)
    return ms[groups.order][np.searchsorted(running, before + rank, side="left")]


def log_buckets(ms: Floats, bins_per_decade: int) -> Ints:
    """``floor(log10(max(ms, 0.1)) * bins_per_decade)`` per value, as :func:`math.log10` gives it."""
    distinct, back = np.unique(ms, return_inverse=True)
    scaled = np.log10(np.maximum(distinct, 0.1)) * bins_per_decade
    buckets = np.floor(scaled)
    for i in np.flatnonzero(~np.isfinite(scaled) | (np.abs(scaled - np.rint(scaled)) < _BOUNDARY)).tolist():
        buckets[i] = math.floor(math.log10(max(float(distinct[i]), 0.1)) * bins_per_decade)
    per_row: Ints = buckets.astype(np.int64)[back.reshape(-1)]
    return per_row


def mantissas_exponents(ms: Floats, digits: int) -> tuple[Ints, Ints]:
    """:func:`results.comparison.mantissa_exponent` of every value, vectorised: each value
    rounded half away from zero (on its exact decimal expansion) to ``digits`` significant
    digits, as (mantissa, exponent) integers, normalised; (0, 0) for 0."""
    distinct, back = np.unique(ms, return_inverse=True)
    magnitude = np.abs(distinct)
    logs = np.log10(np.where(magnitude == 0, 1.0, magnitude))
    exponent = np.floor(logs)
    mantissa = np.zeros(len(distinct), dtype=np.int64)
    exact = np.isfinite(logs) & (np.abs(logs - np.rint(logs)) >= _BOUNDARY) & (magnitude != 0)
    exponent = np.where(exact, exponent, 0).astype(np.int64) - (digits - 1)
    powers, at = np.unique(exponent, return_inverse=True)
    scaled = distinct / np.array([10.0 ** int(power) for power in powers.tolist()])[at.reshape(-1)]
    whole = np.floor(np.abs(scaled))
    # Half up on the exact value: |scaled| - floor(|scaled|) is exact (Sterbenz), so is the test.
    rounded = whole.astype(np.int64) + (np.abs(scaled) - whole >= 0.5)
    mantissa = np.where(exact, np.where(scaled < 0, -rounded, rounded), 0)
    while True:  # 999.6 -> 1000 -> (100, e + 1), as comparison._normalised
        carry = exact & (np.abs(mantissa) >= 10**digits) & (mantissa % 10 == 0)
        if not carry.any():
            break
        mantissa = np.where(carry, mantissa // 10, mantissa)
        exponent = np.where(carry, exponent + 1, exponent)
    for i in np.flatnonzero(~exact).tolist():  # zero, near a power of ten, or not finite
        mantissa[i], exponent[i] = mantissa_exponent(float(distinct[i]), digits)
    flat = back.reshape(-1)
    return mantissa[flat], exponent[flat]

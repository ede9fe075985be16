"""Comparing a report with a baseline (an earlier run or window of runs): pure functions.

Two stated tests (docs/baselines.md says the same in prose):

* **Latency, per (fault, phase)**: the one-sided Mann–Whitney U test of "this run's samples are
  stochastically greater (slower) than the baseline's", asymptotic method: normal approximation
  with the tie correction and a continuity correction of 0.5 — exactly what
  ``scipy.stats.mannwhitneyu(new, base, alternative="greater", method="asymptotic")`` computes
  (``tests/unit/results/test_comparison.py`` checks it against scipy).  It is a rank test: it
  needs no distribution shape and a few outliers do not dominate it.  A latency rule
  ``FAULT:PHASE:STAT=PCT%[,p<ALPHA]`` flags a regression when the statistic (p50, p90, p99 or
  max, nearest rank) grew by more than PCT % **and** p < ALPHA (default 0.01): the size of the
  change is what a user cares about, the test keeps noise from small samples from tripping it.
* **Pass rate, per (scenario, check)**: the Wilson score interval of passed / decided checks at
  a confidence level (default 95 %) on each side; a regression is a new interval lying entirely
  below the baseline's (new upper bound < baseline lower bound).  Non-overlapping 95 % intervals
  is a conservative test (roughly p < 0.006 for equal counts): with the hundreds of (scenario,
  check) pairs of a suite, a looser one would flag noise in every nightly run.

Samples are kept (in ``summary.json``, so a later report can compare with it) as the counts of
their values **rounded to 3 significant digits** (0.05–0.5 % of the value, far below the
variation of a leader switch): bounded in size whatever the number of runs, and mergeable, so a
window of baselines is the sum of its parts.  Both sides' percentiles and the test are computed
on these rounded values; rounding only adds ties, which the tie correction accounts for.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from statistics import NormalDist
from typing import Any

from kafka_chaos.common.errors import UsageError
from kafka_chaos.records.schema import LATENCY_PHASES

SIGNIFICANT_DIGITS = 3
DEFAULT_ALPHA = 0.01
DEFAULT_CONFIDENCE = 0.95
STATS = ("p50", "p90", "p99", "max")
_FRACTIONS = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "max": 1.0}
ANY = "*"


# ------------------------------------------------------------------------------ the samples


def rounded_value(mantissa: int, exponent: int) -> float:
    """mantissa x 10^exponent as the double nearest the decimal (``12.3``, not 12.300000000000001)."""
    return float(mantissa * 10**exponent) if exponent >= 0 else mantissa / 10 ** (-exponent)


def round_significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits, half away from zero — the rounding
    summary.json's samples went through (``results.tables.latency_values``; ``ROUND`` in Spark SQL
    rounds the same way)."""
    mantissa, exponent = mantissa_exponent(value, digits)
    return rounded_value(mantissa, exponent)


def mantissa_exponent(value: float, digits: int = SIGNIFICANT_DIGITS) -> tuple[int, int]:
    """``value`` rounded to ``digits`` significant digits as (mantissa, exponent) integers,
    normalised (:func:`_normalised`); (0, 0) for 0."""
    if value == 0:
        return 0, 0
    exponent = math.floor(math.log10(abs(value))) - (digits - 1)
    scaled = value / 10.0**exponent
    # Half up on the exact decimal expansion, as Spark's ROUND (BigDecimal(scaled).setScale(0, HALF_UP))
    # which summary.json's samples were rounded with before the report finished them in Python.
    mantissa = int(Decimal(scaled).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return _normalised(mantissa, exponent, digits)


def _normalised(mantissa: int, exponent: int, digits: int = SIGNIFICANT_DIGITS) -> tuple[int, int]:
    """999.6 rounds to mantissa 1000: the same value as (100, e + 1), which it must merge with."""
    while abs(mantissa) >= 10**digits and mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    return mantissa, exponent


@dataclass(frozen=True)
class ValueCounts:
    """A sample as its distinct values, ascending, and how often each occurs."""

    values: tuple[float, ...] = ()
    counts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.values) != len(self.counts):
            raise ValueError("values and counts differ in length")
        if any(b <= a for a, b in zip(self.values, self.values[1:])):
            raise ValueError("values must be strictly ascending")
        if any(c <= 0 for c in self.counts):
            raise ValueError("counts must be positive")

    @property
    def n(self) -> int:
        return sum(self.counts)

    @classmethod
    def of(cls, samples: Iterable[float]) -> "ValueCounts":
        """The exact values of ``samples`` (no rounding)."""
        counted = Counter(float(s) for s in samples)
        ordered = sorted(counted)
        return cls(tuple(ordered), tuple(counted[v] for v in ordered))

    @classmethod
    def rounded(cls, samples: Iterable[float]) -> "ValueCounts":
        """``samples`` rounded to 3 significant digits, as summary.json keeps them."""
        return cls.of(round_significant(s) for s in samples)

    def merged(self, other: "ValueCounts") -> "ValueCounts":
        counted: Counter[float] = Counter(dict(zip(self.values, self.counts)))
        counted.update(dict(zip(other.values, other.counts)))
        ordered = sorted(counted)
        return ValueCounts(tuple(ordered), tuple(counted[v] for v in ordered))

    def stat(self, name: str) -> float | None:
        """p50 / p90 / p99 (nearest rank: the smallest value with at least XX % of the samples at
        or below it, as the report's percentiles) or max; None for an empty sample."""
        if not self.values:
            return None
        rank = max(1, math.ceil(_FRACTIONS[name] * self.n - 1e-9))
        seen = 0
        for value, count in zip(self.values, self.counts):
            seen += count
            if seen >= rank:
                return value
        return self.values[-1]


def value_counts_from_spark_rows(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], ValueCounts]:
    """``results.tables.latency_values`` rows -> a sample per (fault, phase)."""
    grouped: dict[tuple[str, str], Counter[float]] = {}
    for row in rows:
        mantissa, exponent = _normalised(int(row["mantissa"]), int(row["exponent"]))
        grouped.setdefault((str(row["fault"]), str(row["phase"])), Counter())[
            rounded_value(mantissa, exponent)] += int(row["count"])
    return {key: ValueCounts(tuple(sorted(c)), tuple(c[v] for v in sorted(c))) for key, c in grouped.items()}


def _phase_order(key: tuple[str, str]) -> tuple[str, int, str]:
    fault, phase = key
    return fault, (LATENCY_PHASES.index(phase) if phase in LATENCY_PHASES else len(LATENCY_PHASES)), phase


def samples_document(samples: Mapping[tuple[str, str], ValueCounts]) -> list[dict[str, Any]]:
    """summary.json's ``latency_samples``: one row per fault x phase, in the report's order."""
    return [{"fault": fault, "phase": phase, "count": s.n, "values": list(s.values), "counts": list(s.counts)}
            for (fault, phase), s in sorted(samples.items(), key=lambda item: _phase_order(item[0]))]


def samples_from_document(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], ValueCounts]:
    return {(str(r["fault"]), str(r["phase"])): ValueCounts(tuple(float(v) for v in r["values"]),
                                                            tuple(int(c) for c in r["counts"]))
            for r in rows}


# ------------------------------------------------------------------------------- the tests


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the new sample: pairs (new, base) with new > base, ties counting 1/2
    z: float
    p_greater: float  # one-sided p-value of "new is stochastically greater than base"


def mann_whitney_greater(new: ValueCounts, base: ValueCounts) -> MannWhitney:
    """One-sided Mann–Whitney U test, normal approximation with tie and continuity correction.

    Ranks are computed on the merged distinct values (mid-ranks for ties) in exact integer
    arithmetic, so millions of samples cost one pass over their distinct values.  With no
    variance at all (every sample equal) there is no evidence of a shift: p = 1.
    """
    n1, n2 = new.n, base.n
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    mine, theirs = dict(zip(new.values, new.counts)), dict(zip(base.values, base.counts))
    twice_rank_sum = 0  # 2 x the rank sum of the new sample (mid-ranks are half-integers)
    tie_term = 0  # sum of t^3 - t over groups of equal values
    below = 0
    for value in sorted(set(mine) | set(theirs)):
        a, t = mine.get(value, 0), mine.get(value, 0) + theirs.get(value, 0)
        twice_rank_sum += a * (2 * below + t + 1)
        tie_term += t**3 - t
        below += t
    u = twice_rank_sum / 2 - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    numerator = u - n1 * n2 / 2 - 0.5
    if variance <= 0:
        z = -math.inf if numerator < 0 else (math.inf if numerator > 0 else 0.0)
    else:
        z = numerator / math.sqrt(variance)
    p = 0.5 * math.erfc(z / math.sqrt(2)) if math.isfinite(z) else (0.0 if z > 0 else 1.0)
    return MannWhitney(u, z, min(1.0, max(0.0, p)))


def z_for(confidence: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def wilson_interval(passed: int, decided: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float] | None:
    """Wilson score interval of passed / decided (the formula ``results.tables.wilson``
    uses, with z for ``confidence``), clamped to [0, 1]; None when nothing was decided."""
    if decided <= 0:
        return None
    z = z_for(confidence)
    p = passed / decided
    denominator = 1 + z * z / decided
    centre = (p + z * z / (2 * decided)) / denominator
    half = z * math.sqrt(p * (1 - p) / decided + z * z / (4 * decided * decided)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


# ------------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class PassRateRule:
    """``pass_rate[:ci=C]``: a (scenario, check) whose new Wilson interval lies entirely below
    the baseline's regressed."""

    confidence: float = DEFAULT_CONFIDENCE

    def __str__(self) -> str:
        return "pass_rate" if self.confidence == DEFAULT_CONFIDENCE else f"pass_rate:ci={self.confidence:g}"


@dataclass(frozen=True)
class LatencyRule:
    """``FAULT:PHASE:STAT=PCT%[,p<ALPHA]``: STAT grew by more than PCT % and the one-sided
    Mann–Whitney p-value is under ALPHA."""

    fault: str
    phase: str
    stat: str
    max_growth: float  # a fraction: 0.2 for 20 %
    alpha: float = DEFAULT_ALPHA

    def __str__(self) -> str:
        return f"{self.fault}:{self.phase}:{self.stat}={100 * self.max_growth:g}%,p<{self.alpha:g}"

    def covers(self, fault: str, phase: str) -> bool:
        return self.fault in (ANY, fault) and self.phase in (ANY, phase)


Rule = PassRateRule | LatencyRule
DEFAULT_RULES: tuple[Rule, ...] = (PassRateRule(), LatencyRule(ANY, ANY, "p50", 0.0))

_PASS_RATE = re.compile(r"^pass_rate(?::ci=(?P<ci>[^,\s]+))?$")
_LATENCY = re.compile(r"^(?:(?P<fault>[^:=\s]+):(?P<phase>[^:=\s]+):)?(?P<stat>[^:=\s]+)=\+?(?P<pct>[^%,\s]+)%"
                      r"(?:,p<(?P<alpha>[^,\s]+))?$")
RULE_HELP = ("pass_rate[:ci=0.95] or [FAULT:PHASE:]STAT=PCT%[,p<ALPHA], e.g. 'hard_kill:election:p99=20%,p<0.01' "
             "(FAULT, PHASE may be '*'; STAT: p50, p90, p99, max; ALPHA default 0.01)")


def parse_rule(text: str) -> Rule:
    """One ``--max-regression`` value; UsageError (one line) when it is not one."""
    spec = text.strip().replace(" ", "")
    bad = f"--max-regression {text!r}"
    if match := _PASS_RATE.match(spec):
        confidence = _number(match["ci"], bad, "ci") if match["ci"] else DEFAULT_CONFIDENCE
        if not 0.5 <= confidence < 1:
            raise UsageError(f"{bad}: ci must be a confidence level in [0.5, 1), e.g. 0.95")
        return PassRateRule(confidence)
    match = _LATENCY.match(spec)
    if not match:
        raise UsageError(f"{bad}: expected {RULE_HELP}")
    fault, phase, stat = match["fault"] or ANY, match["phase"] or ANY, match["stat"].lower()
    if phase != ANY and phase not in LATENCY_PHASES:
        raise UsageError(f"{bad}: unknown phase {phase!r} (phases: {', '.join(LATENCY_PHASES)})")
    if stat not in STATS:
        raise UsageError(f"{bad}: unknown statistic {stat!r} (one of {', '.join(STATS)})")
    growth = _number(match["pct"], bad, "the growth") / 100
    if growth < 0:
        raise UsageError(f"{bad}: the growth must be a non-negative percentage")
    alpha = _number(match["alpha"], bad, "p") if match["alpha"] else DEFAULT_ALPHA
    if not 0 < alpha <= 0.5:
        raise UsageError(f"{bad}: p must be a significance level in (0, 0.5], e.g. 0.01")
    return LatencyRule(fault, phase, stat, growth, alpha)


def parse_rules(items: Iterable[str | Rule]) -> tuple[Rule, ...]:
    return tuple(item if isinstance(item, (PassRateRule, LatencyRule)) else parse_rule(item) for item in items)


def _number(text: str, bad: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{bad}: {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"{bad}: {what} must be finite")
    return value


# --------------------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Side:
    """What one side of a comparison holds: check outcomes per (scenario, check) and latency
    samples per (fault, phase)."""

    outcomes: Mapping[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (passed, failed)
    samples: Mapping[tuple[str, str], ValueCounts] = field(default_factory=dict)
    runs: int = 0
    records: int = 0

    def merged(self, other: "Side") -> "Side":
        outcomes = dict(self.outcomes)
        for key, (passed, failed) in other.outcomes.items():
            mine = outcomes.get(key, (0, 0))
            outcomes[key] = (mine[0] + passed, mine[1] + failed)
        samples = dict(self.samples)
        for key, sample in other.samples.items():
            samples[key] = samples[key].merged(sample) if key in samples else sample
        return Side(outcomes, samples, self.runs + other.runs, self.records + other.records)


def outcomes_from_pass_rates(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    """summary.json ``pass_rates`` rows (per scenario x check x backend x Kafka version) summed
    per (scenario, check)."""
    summed: dict[tuple[str, str], tuple[int, int]] = {}
    for row in rows:
        key = (str(row["scenario"]), str(row["check"]))
        passed, failed = summed.get(key, (0, 0))
        summed[key] = (passed + int(row.get("passed") or 0), failed + int(row.get("failed") or 0))
    return summed


@dataclass(frozen=True)
class LatencyComparison:
    fault: str
    phase: str
    base: Mapping[str, float | None]  # n and STATS of the baseline
    new: Mapping[str, float | None]
    p_greater: float | None  # None when a side has no samples
    regressions: tuple[str, ...] = ()  # the rules it breaks, as text

    def growth(self, stat: str) -> float | None:
        return relative_growth(self.base.get(stat), self.new.get(stat))


@dataclass(frozen=True)
class PassRateComparison:
    scenario: str
    check: str
    base: tuple[int, int]  # passed, decided
    new: tuple[int, int]
    base_interval: tuple[float, float] | None
    new_interval: tuple[float, float] | None
    regressions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    rules: tuple[Rule, ...]
    latency: tuple[LatencyComparison, ...]
    pass_rates: tuple[PassRateComparison, ...]
    problems: tuple[str, ...]  # a rule with nothing to compare: a gate must not pass silently

    @property
    def regressions(self) -> list[str]:
        """One line per regression (and per rule that had nothing to compare)."""
        lines = [line for c in self.pass_rates for line in c.regressions]
        lines += [line for c in self.latency for line in c.regressions]
        return lines + list(self.problems)


def relative_growth(base: float | None, new: float | None) -> float | None:
    if base is None or new is None:
        return None
    if base == 0:
        return 0.0 if new <= 0 else math.inf
    return (new - base) / abs(base)


def _stats(sample: ValueCounts | None) -> dict[str, float | None]:
    if sample is None:
        return {"n": 0, **{name: None for name in STATS}}
    return {"n": sample.n, **{name: sample.stat(name) for name in STATS}}


def compare(base: Side, new: Side, rules: Sequence[Rule] = DEFAULT_RULES) -> Comparison:
    """Every (fault, phase) and (scenario, check) of either side, tested where both have data;
    ``regressions`` says which rules each breaks."""
    latency_rules = [r for r in rules if isinstance(r, LatencyRule)]
    rate_rules = [r for r in rules if isinstance(r, PassRateRule)]
    latency = tuple(_compare_latency(key, base.samples.get(key), new.samples.get(key), latency_rules)
                    for key in sorted(set(base.samples) | set(new.samples), key=_phase_order))
    rates = tuple(_compare_pass_rate(key, base.outcomes.get(key, (0, 0)), new.outcomes.get(key, (0, 0)), rate_rules)
                  for key in sorted(set(base.outcomes) | set(new.outcomes)))
    problems = [_nothing_compared(rule, base, new) for rule in latency_rules]
    if rate_rules and not any(c.base[1] and c.new[1] for c in rates):
        problems += [f"--max-regression {rule}: no (scenario, check) with decided checks on both sides"
                     for rule in rate_rules]
    return Comparison(tuple(rules), latency, rates, tuple(p for p in problems if p))


def _nothing_compared(rule: LatencyRule, base: Side, new: Side) -> str | None:
    both = [key for key in set(base.samples) & set(new.samples) if rule.covers(*key)]
    if both:
        return None
    return (f"--max-regression {rule}: no {rule.phase if rule.phase != ANY else ''} latency samples for "
            f"fault {rule.fault!r} on both sides (baseline: {_keys(base.samples)}; this run: {_keys(new.samples)})"
            ).replace("no  latency", "no latency")


def _keys(samples: Mapping[tuple[str, str], ValueCounts]) -> str:
    return ", ".join(f"{f}:{p}" for f, p in sorted(samples, key=_phase_order)[:8]) + (
        ", …" if len(samples) > 8 else "") if samples else "none"


def _compare_latency(key: tuple[str, str], base: ValueCounts | None, new: ValueCounts | None,
                     rules: Sequence[LatencyRule]) -> LatencyComparison:
    fault, phase = key
    base_stats, new_stats = _stats(base), _stats(new)
    if base is None or new is None:
        return LatencyComparison(fault, phase, base_stats, new_stats, None)
    p = mann_whitney_greater(new, base).p_greater
    broken = []
    for rule in rules:
        if not rule.covers(fault, phase):
            continue
        growth = relative_growth(base_stats[rule.stat], new_stats[rule.stat])
        if growth is not None and growth > rule.max_growth and p < rule.alpha:
            broken.append(f"--max-regression {rule}: {fault} {phase} {rule.stat} {_ms(base_stats[rule.stat])} → "
                          f"{_ms(new_stats[rule.stat])} ms ({_percent(growth)}), Mann–Whitney U one-sided "
                          f"p={p:.2g} (n {base.n} → {new.n})")
    return LatencyComparison(fault, phase, base_stats, new_stats, p, tuple(broken))


def _compare_pass_rate(key: tuple[str, str], base: tuple[int, int], new: tuple[int, int],
                       rules: Sequence[PassRateRule]) -> PassRateComparison:
    scenario, check = key
    base_decided, new_decided = (base[0], base[0] + base[1]), (new[0], new[0] + new[1])
    base_ci, new_ci = wilson_interval(*base_decided), wilson_interval(*new_decided)
    broken = []
    for rule in rules:
        low_high_base = wilson_interval(*base_decided, rule.confidence)
        low_high_new = wilson_interval(*new_decided, rule.confidence)
        if low_high_base and low_high_new and low_high_new[1] < low_high_base[0]:
            broken.append(f"--max-regression {rule}: {scenario} {check} pass rate "
                          f"{_rate(*base_decided)} → {_rate(*new_decided)}, {100 * rule.confidence:g} % Wilson "
                          f"intervals {_interval(low_high_base)} → {_interval(low_high_new)} do not overlap")
    return PassRateComparison(scenario, check, base_decided, new_decided, base_ci, new_ci, tuple(broken))


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def _percent(growth: float) -> str:
    return "from 0" if math.isinf(growth) else f"{100 * growth:+.1f} %"


def _rate(passed: int, decided: int) -> str:
    return f"{100 * passed / decided:.1f} % ({passed}/{decided})" if decided else "– (0 decided)"


def _interval(interval: tuple[float, float]) -> str:
    return f"[{100 * interval[0]:.1f}, {100 * interval[1]:.1f}] %"


def comparison_document(comparison: Comparison, sources: Sequence[str], base: Side) -> dict[str, Any]:
    """summary.json's ``baseline`` section (also what the HTML and terminal render)."""
    return {
        "sources": list(sources),
        "runs": base.runs,
        "records": base.records,
        "rules": [str(rule) for rule in comparison.rules],
        "test": {"latency": "Mann–Whitney U, one-sided (this run slower), normal approximation with tie and "
                            "continuity correction, on values rounded to 3 significant digits",
                 "pass_rate": "Wilson score intervals; regression = this run's interval entirely below the "
                              "baseline's"},
        "regressions": comparison.regressions,
        "latency": [{"fault": c.fault, "phase": c.phase,
                     **{f"base_{k}": v for k, v in c.base.items()}, **{f"new_{k}": v for k, v in c.new.items()},
                     "p50_growth": _finite(c.growth("p50")), "p99_growth": _finite(c.growth("p99")),
                     "p_greater": c.p_greater, "regressed": bool(c.regressions)} for c in comparison.latency],
        "pass_rates": [{"scenario": c.scenario, "check": c.check,
                        "base_passed": c.base[0], "base_decided": c.base[1],
                        "new_passed": c.new[0], "new_decided": c.new[1],
                        "base_rate": c.base[0] / c.base[1] if c.base[1] else None,
                        "new_rate": c.new[0] / c.new[1] if c.new[1] else None,
                        "base_ci_low": c.base_interval[0] if c.base_interval else None,
                        "base_ci_high": c.base_interval[1] if c.base_interval else None,
                        "new_ci_low": c.new_interval[0] if c.new_interval else None,
                        "new_ci_high": c.new_interval[1] if c.new_interval else None,
                        "regressed": bool(c.regressions)} for c in comparison.pass_rates],
    }


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None

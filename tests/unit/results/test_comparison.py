"""kafka_chaos.results.comparison: the baseline statistics (tables and Hypothesis properties)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kafka_chaos.common.errors import UsageError
from kafka_chaos.results.comparison import (DEFAULT_RULES, LatencyRule, PassRateRule, Side, ValueCounts, compare,
                                comparison_document, mann_whitney_greater, outcomes_from_pass_rates, parse_rule,
                                round_significant, samples_document, samples_from_document,
                                value_counts_from_spark_rows, wilson_interval)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
latencies = st.lists(st.integers(min_value=1, max_value=400).map(lambda v: v * 2.5), min_size=1, max_size=60)


# --------------------------------------------------------------------------- Mann-Whitney U


def test_mann_whitney_textbook_values():
    # No ties: U counts the pairs (new, base) with new > base.  new = [4, 5, 6], base = [1, 2, 3]:
    # U = 9, mu = 4.5, sigma^2 = 3*3*7/12 = 5.25, z = (9 - 4.5 - 0.5) / sqrt(5.25).
    result = mann_whitney_greater(ValueCounts.of([4, 5, 6]), ValueCounts.of([1, 2, 3]))
    assert result.u == 9
    assert result.z == pytest.approx(4 / math.sqrt(5.25))
    assert result.p_greater == pytest.approx(0.5 * math.erfc(result.z / math.sqrt(2)))
    # Ties count 1/2 and shrink the variance: new = [1, 2, 2], base = [2, 3]: pairs new > base: 0,
    # ties: two 2s x one 2 = 2 -> U = 1.  Tie groups: {2: 3} -> t^3 - t = 24; N = 5.
    tied = mann_whitney_greater(ValueCounts.of([1, 2, 2]), ValueCounts.of([2, 3]))
    assert tied.u == 1
    variance = 3 * 2 / 12 * ((5 + 1) - 24 / (5 * 4))
    assert tied.z == pytest.approx((1 - 3 - 0.5) / math.sqrt(variance))


def test_mann_whitney_without_variance_is_no_evidence():
    assert mann_whitney_greater(ValueCounts.of([7.0] * 5), ValueCounts.of([7.0] * 9)).p_greater == 1.0
    with pytest.raises(ValueError):
        mann_whitney_greater(ValueCounts(), ValueCounts.of([1.0]))


@SETTINGS
@given(latencies, latencies)
def test_mann_whitney_is_scipys_asymptotic_test(new, base):
    scipy_stats = pytest.importorskip("scipy.stats")
    assume(len(set(new + base)) > 1)
    expected = scipy_stats.mannwhitneyu(new, base, alternative="greater", method="asymptotic")
    result = mann_whitney_greater(ValueCounts.of(new), ValueCounts.of(base))
    assert result.u == pytest.approx(expected.statistic, abs=1e-9)
    assert result.p_greater == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-15)


@SETTINGS
@given(latencies)
def test_identical_samples_never_regress(sample):
    values = ValueCounts.of(sample)
    assert mann_whitney_greater(values, values).p_greater >= 0.5
    side = Side(samples={("hard_kill", "election"): values}, outcomes={("s", "c"): (len(sample), 1)})
    for rules in (DEFAULT_RULES, (LatencyRule("*", "*", "p99", 0.0, 0.5), PassRateRule(0.5))):
        assert compare(side, side, rules).regressions == []


@SETTINGS
@given(st.lists(st.floats(min_value=100, max_value=200), min_size=12, max_size=60),
       st.floats(min_value=1.0, max_value=5.0))
def test_a_sample_shifted_past_the_other_regresses(base, factor):
    """Every new sample slower than every baseline one, by more than the allowed growth."""
    shifted = [v * (1 + factor) + 100 for v in base]
    rule = LatencyRule("*", "*", "p99", 0.2, 0.01)
    side_base = Side(samples={("hard_kill", "election"): ValueCounts.of(base)})
    side_new = Side(samples={("hard_kill", "election"): ValueCounts.of(shifted)})
    regressions = compare(side_base, side_new, (rule,)).regressions
    assert len(regressions) == 1 and "hard_kill election p99" in regressions[0]
    assert compare(side_new, side_base, (rule,)).regressions == []  # faster is never a regression


@SETTINGS
@given(latencies, latencies, latencies)
def test_more_slow_samples_never_make_p_larger(new, base, extra):
    """Adding samples slower than everything to the new side is more evidence of a slowdown."""
    slow = [max(new + base) + 1 + v for v in extra]
    before = mann_whitney_greater(ValueCounts.of(new), ValueCounts.of(base)).p_greater
    after = mann_whitney_greater(ValueCounts.of(new + slow), ValueCounts.of(base)).p_greater
    assert after <= before + 1e-12


def test_a_small_slowdown_is_not_significant_with_few_samples():
    base = Side(samples={("f", "election"): ValueCounts.of([100, 110, 120])})
    new = Side(samples={("f", "election"): ValueCounts.of([130, 140, 150])})
    assert compare(base, new, (LatencyRule("*", "*", "p50", 0.1, 0.01),)).regressions == []  # p = 0.04
    assert compare(base, new, (LatencyRule("*", "*", "p50", 0.1, 0.05),)).regressions != []
    assert compare(base, new, (LatencyRule("*", "*", "p50", 0.5, 0.05),)).regressions == []  # +27 % < 50 %


# ---------------------------------------------------------------------------------- samples


@pytest.mark.parametrize("value, rounded", [
    (0.0, 0.0), (1234.5, 1230.0), (999.6, 1000.0), (0.012345, 0.0123), (12.25, 12.3), (-12.25, -12.3),
    (12.35, 12.3),  # 12.35 is 12.3499999... as a double: below the half, as in Spark's ROUND
    (7.0, 7.0), (100000.0, 100000.0), (6543.21, 6540.0), (1005.0, 1010.0),
])
def test_round_significant(value, rounded):
    assert round_significant(value) == rounded


def test_nearest_rank_stats_and_merging():
    sample = ValueCounts.of([10, 20, 20, 30, 40, 50, 60, 70, 80, 100])
    assert (sample.stat("p50"), sample.stat("p90"), sample.stat("p99"), sample.stat("max")) == (40, 80, 100, 100)
    assert ValueCounts.of([1, 2]).merged(ValueCounts.of([2, 3])) == ValueCounts((1.0, 2.0, 3.0), (1, 2, 1))
    assert ValueCounts().stat("p50") is None


def test_spark_rows_are_normalised_and_the_document_round_trips():
    rows = [{"fault": "hard_kill", "phase": "election", "mantissa": 1000, "exponent": 0, "count": 2},
            {"fault": "hard_kill", "phase": "election", "mantissa": 100, "exponent": 1, "count": 1},
            {"fault": "hard_kill", "phase": "election", "mantissa": 123, "exponent": -1, "count": 4},
            {"fault": "hard_kill", "phase": "detection", "mantissa": 0, "exponent": 0, "count": 1}]
    samples = value_counts_from_spark_rows(rows)
    assert samples[("hard_kill", "election")] == ValueCounts((12.3, 1000.0), (4, 3))
    document = samples_document(samples)
    assert [r["phase"] for r in document] == ["detection", "election"]  # a leader switch's order
    assert samples_from_document(document) == samples


# ---------------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize("passed, decided, low, high", [
    (10, 10, 0.7225, 1.0), (0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (95, 100, 0.8882, 0.9785),
])
def test_wilson_interval_table(passed, decided, low, high):
    interval = wilson_interval(passed, decided)
    assert interval is not None
    assert interval == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize("base, new, regressed", [
    ((20, 0), (0, 20), True), ((20, 0), (15, 5), False), ((100, 0), (80, 20), True), ((3, 0), (0, 3), False),
    ((0, 20), (20, 0), False), ((5, 5), (5, 5), False),
])
def test_pass_rate_regression_is_an_interval_entirely_below(base, new, regressed):
    comparison = compare(Side(outcomes={("s", "c"): base}), Side(outcomes={("s", "c"): new}), (PassRateRule(),))
    assert bool(comparison.regressions) is regressed
    assert comparison.pass_rates[0].regressions == tuple(comparison.regressions)


@SETTINGS
@given(st.integers(0, 200), st.integers(0, 200))
def test_identical_pass_counts_never_regress(passed, failed):
    assume(passed + failed > 0)
    side = Side(outcomes={("s", "c"): (passed, failed)})
    assert compare(side, side, (PassRateRule(0.5),)).regressions == []


def test_outcomes_sum_backends_and_versions():
    rows = [{"scenario": "s", "check": "c", "backend": "local", "passed": 3, "failed": 1},
            {"scenario": "s", "check": "c", "backend": "containers", "passed": 2, "failed": None}]
    assert outcomes_from_pass_rates(rows) == {("s", "c"): (5, 1)}


# ---------------------------------------------------------------------------------- rules


def test_parse_rules():
    assert parse_rule("pass_rate") == PassRateRule(0.95)
    assert parse_rule("pass_rate:ci=0.99") == PassRateRule(0.99)
    assert parse_rule("hard_kill:election:p99=20%,p<0.01") == LatencyRule("hard_kill", "election", "p99", 0.2, 0.01)
    assert parse_rule("p99=+20%") == LatencyRule("*", "*", "p99", 0.2, 0.01)
    assert parse_rule("*:client_gap:MAX=5%, p<0.05") == LatencyRule("*", "client_gap", "max", 0.05, 0.05)
    assert str(parse_rule("hard_kill:election:p99=20%")) == "hard_kill:election:p99=20%,p<0.01"
    assert str(parse_rule("pass_rate")) == "pass_rate"


@pytest.mark.parametrize("text, message", [
    ("p99=20", "expected pass_rate"),
    ("hard_kill:elect:p99=20%", "unknown phase 'elect'"),
    ("p95=20%", "unknown statistic 'p95'"),
    ("p99=-5%", "non-negative"),
    ("p99=fast%", "not a number"),
    ("p99=20%,p<0", "significance level"),
    ("p99=20%,p<0.9", "significance level"),
    ("pass_rate:ci=1", "confidence level"),
    ("pass_rate:ci=x", "not a number"),
])
def test_bad_rules_are_one_clear_line(text, message):
    with pytest.raises(UsageError, match=message) as raised:
        parse_rule(text)
    assert "\n" not in str(raised.value)


def test_a_rule_with_nothing_to_compare_fails_rather_than_passes():
    base = Side(samples={("hard_kill", "election"): ValueCounts.of([1, 2])}, outcomes={("s", "c"): (1, 0)})
    new = Side(samples={("controlled_shutdown", "election"): ValueCounts.of([1, 2])})
    problems = compare(base, new, (LatencyRule("hard_kill", "election", "p99", 0.2), PassRateRule())).regressions
    assert len(problems) == 2
    assert "no election latency samples for fault 'hard_kill' on both sides" in problems[0]
    assert "no (scenario, check) with decided checks on both sides" in problems[1]


def test_the_document_says_what_was_compared():
    base = Side(samples={("f", "election"): ValueCounts.of(range(1, 40))}, outcomes={("s", "c"): (20, 0)}, runs=2,
                records=100)
    new = Side(samples={("f", "election"): ValueCounts.of(range(100, 140))}, outcomes={("s", "c"): (0, 20)})
    document = comparison_document(compare(base, new, (LatencyRule("*", "*", "p50", 0.2), PassRateRule())),
                                   ["old/records.jsonl"], base)
    assert (document["runs"], document["records"], document["sources"]) == (2, 100, ["old/records.jsonl"])
    assert len(document["regressions"]) == 2
    assert document["latency"][0]["regressed"] and document["latency"][0]["p50_growth"] > 2
    assert {"base_rate": 1.0, "new_rate": 0.0, "regressed": True}.items() <= document["pass_rates"][0].items()

"""kafka_chaos.results.gates: parsing the CLI's limits and deciding the CI gate."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.errors import UsageError
from kafka_chaos.results.gates import (LatencyLimit, gate_failures, latency_failures, parse_latency_limit,
                           parse_min_pass_rate, pass_rate_failure)

LATENCY = [
    {"fault": "hard_kill", "phase": "election", "count": 10, "p50": 40.0, "p90": 90.0, "p99": 120.0, "max": 150.0},
    {"fault": "controlled_shutdown", "phase": "election", "count": 5, "p50": 5.0, "p90": 9.0, "p99": 9.5, "max": 9.9},
]


def test_parse_latency_limit():
    assert parse_latency_limit("hard_kill:election:P99=500") == LatencyLimit("hard_kill", "election", "p99", 500.0)
    assert parse_latency_limit("*:client_gap:max=1e3").limit_ms == 1000.0
    assert str(parse_latency_limit("hard_kill:election:p50=12.5")) == "hard_kill:election:p50=12.5"


@pytest.mark.parametrize("text, message", [
    ("hard_kill:election:p99", "FAULT:PHASE:STAT=MS"),
    ("hard_kill:elect:p99=5", "unknown phase 'elect'"),
    ("hard_kill:election:p95=5", "unknown statistic 'p95'"),
    ("hard_kill:election:p99=fast", "not a number"),
    ("hard_kill:election:p99=-1", "non-negative"),
    ("hard_kill:election:p99=nan", "non-negative"),
])
def test_bad_latency_limits_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=message):
        parse_latency_limit(text)


@pytest.mark.parametrize("value", ["1.5", "-0.1", "ninety", "nan"])
def test_bad_min_pass_rate(value):
    with pytest.raises(UsageError, match="between 0 and 1"):
        parse_min_pass_rate(value)


def test_min_pass_rate_gate():
    assert pass_rate_failure({"passed": 95, "failed": 5}, 0.95) is None
    message = pass_rate_failure({"passed": 94, "failed": 6, "unknown": 50}, 0.95)
    assert "94.00% (94/100 decided checks)" in message and "0.95" in message
    assert "undefined" in pass_rate_failure({"passed": 0, "failed": 0, "unknown": 3}, 0.5)
    assert pass_rate_failure({"passed": 0, "failed": 9}, None) is None


def test_latency_gate_names_the_exceeded_limit():
    assert latency_failures(LATENCY, [LatencyLimit("hard_kill", "election", "p99", 120.0)]) == []
    [message] = latency_failures(LATENCY, [LatencyLimit("hard_kill", "election", "p99", 100.0)])
    assert "hard_kill election p99 is 120 ms" in message and "limit 100 ms" in message


def test_wildcard_fault_checks_every_fault():
    failures = latency_failures(LATENCY, [LatencyLimit("*", "election", "max", 9.0)])
    assert len(failures) == 2


def test_limit_without_samples_fails_and_lists_known_faults():
    [message] = latency_failures(LATENCY, [LatencyLimit("hard_kil", "election", "p99", 1e9)])
    assert "no election samples for fault 'hard_kil'" in message and "controlled_shutdown, hard_kill" in message


def test_gate_failures_combines_both():
    limits = [LatencyLimit("hard_kill", "election", "max", 1.0)]
    assert len(gate_failures({"passed": 1, "failed": 1}, LATENCY, 0.9, limits)) == 2
    assert gate_failures({"passed": 1, "failed": 0}, LATENCY, None, ()) == []

"""When a step waits for the ZooKeeper controller's scheduled leader-imbalance check
(scenarios.model.imbalance_checks): a table, and the property that no scheduled check falls in
a step's first LOOKAHEAD_S seconds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.scenarios.model.imbalance_checks import (
    FIRST_CHECK_DELAY_S,
    LOOKAHEAD_S,
    MARGIN_S,
    next_check_at,
    wait_before_step,
)

ON = {"auto.leader.rebalance.enable": "true"}
T = 1_000_000.0  # the election


@pytest.mark.parametrize(("config", "elected_at", "now", "wait"), [
    (ON, T, T + 100.0, 0.0),  # the next check is at T + 305: far off
    (ON, T, T + 290.0, 305.0 + MARGIN_S - 290.0),  # 15 s before it: wait past it
    (ON, T, T + 306.0, 305.0 + MARGIN_S - 306.0),  # it ran a second ago: wait out the margin
    (ON, T, T + 305.0 + MARGIN_S + 1, 0.0),  # past the margin: the next one is 300 s away
    (ON, T, T + 2.0, FIRST_CHECK_DELAY_S + MARGIN_S - 2.0),  # the first check, 5 s after the election
    ({}, T, T + 290.0, 305.0 + MARGIN_S - 290.0),  # Kafka's default is on
    ({"auto.leader.rebalance.enable": "false"}, T, T + 290.0, 0.0),
    (ON, None, T + 290.0, 0.0),  # no election time (KRaft, an old snapshot)
    ({**ON, "leader.imbalance.check.interval.seconds": "3"}, T, T + 290.0, 0.0),  # scenarios name these
    ({**ON, "leader.imbalance.check.interval.seconds": "60"}, T, T + 50.0, 65.0 + MARGIN_S - 50.0),
    ({**ON, "leader.imbalance.check.interval.seconds": "600"}, T, T + 290.0, 0.0),
])
def test_how_long_a_step_waits(config, elected_at, now, wait) -> None:
    assert wait_before_step(config, elected_at, now) == pytest.approx(wait)


@given(st.floats(0, 20_000), st.sampled_from([60.0, 300.0, 900.0]))
def test_no_scheduled_check_falls_in_a_steps_first_seconds(since_election: float, interval: float) -> None:
    config = {**ON, "leader.imbalance.check.interval.seconds": str(interval)}
    start = T + since_election + wait_before_step(config, T, T + since_election)
    checks = [T + FIRST_CHECK_DELAY_S + k * interval for k in range(int(since_election // interval) + 3)]
    assert not [c for c in checks if start - MARGIN_S + 1e-6 < c < start + LOOKAHEAD_S]


def test_the_next_check_counts_from_the_election() -> None:
    assert next_check_at(T, T, 300.0) == T + FIRST_CHECK_DELAY_S
    assert next_check_at(T, T + 1000.0, 300.0) == T + FIRST_CHECK_DELAY_S + 1200.0

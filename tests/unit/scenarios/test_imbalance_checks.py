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
    first_check_delay_s,
    next_check_at,
    periodic_kraft_balance,
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


# KRaft from 4.0: the periodic task "electPreferred", one interval after the activation (counted
# from the epoch's LEADER_CHANGE) and every interval after; 3.x KRaft and a migration: no time known.
@pytest.mark.parametrize(("mode", "release", "config", "delay"), [
    ("zookeeper", "3.9.2", ON, FIRST_CHECK_DELAY_S),
    ("zookeeper", "2.4.1", ON, FIRST_CHECK_DELAY_S),
    ("kraft", "4.4.0", ON, 300.0),
    ("kraft", "4.0.0", {**ON, "leader.imbalance.check.interval.seconds": "60"}, 60.0),
    ("kraft", "3.9.2", ON, None),  # armed by the write that first left a leader off its first replica
    ("kraft", "3.6.2", ON, None),
    ("kraft", "not-a-release", ON, None),
    ("migration", "3.9.2", ON, None),
])
def test_when_the_first_scheduled_check_comes(mode, release, config, delay) -> None:
    assert first_check_delay_s(mode, release, config) == delay


@pytest.mark.parametrize(("release", "periodic"), [("4.0.0", True), ("4.4.0", True), ("3.9.2", False), ("x", False)])
def test_which_kraft_releases_balance_on_a_period(release: str, periodic: bool) -> None:
    assert periodic_kraft_balance(release) is periodic


@pytest.mark.parametrize(("config", "now", "wait"), [
    (ON, T + 2.0, 0.0),  # a fresh 4.x controller: the first balance is 300 s away, not 5 s
    (ON, T + 290.0, 300.0 + MARGIN_S - 290.0),
    (ON, T + 301.0, 300.0 + MARGIN_S - 301.0),
    (ON, T + 590.0, 600.0 + MARGIN_S - 590.0),
    (ON, T + 400.0, 0.0),
    ({**ON, "leader.imbalance.check.interval.seconds": "60"}, T + 50.0, 60.0 + MARGIN_S - 50.0),
    ({**ON, "leader.imbalance.check.interval.seconds": "60"}, T + 100.0, 120.0 + MARGIN_S - 100.0),
    ({**ON, "leader.imbalance.check.interval.seconds": "30"}, T + 25.0, 0.0),  # scenarios name these
    ({"auto.leader.rebalance.enable": "false"}, T + 290.0, 0.0),
])
def test_how_long_a_kraft_4x_step_waits(config, now, wait) -> None:
    first = first_check_delay_s("kraft", "4.4.0", config)
    assert wait_before_step(config, T, now, first_delay_s=first) == pytest.approx(wait)


def test_no_time_known_no_wait() -> None:
    assert wait_before_step(ON, T, T + 299.0, first_delay_s=None) == 0.0


@given(st.floats(0, 20_000), st.sampled_from([60.0, 300.0, 900.0]))
def test_no_kraft_balance_falls_in_a_steps_first_seconds(since_epoch: float, interval: float) -> None:
    config = {**ON, "leader.imbalance.check.interval.seconds": str(interval)}
    first = first_check_delay_s("kraft", "4.4.0", config)
    start = T + since_epoch + wait_before_step(config, T, T + since_epoch, first_delay_s=first)
    balances = [T + k * interval for k in range(1, int(since_epoch // interval) + 3)]
    assert not [b for b in balances if start - MARGIN_S + 1e-6 < b < start + LOOKAHEAD_S]


@pytest.mark.parametrize(("config", "due", "now", "wait"), [
    (ON, T + 310.0, T + 290.0, 310.0 + MARGIN_S - 290.0),  # a 3.x KRaft balance armed by a write at T + 10
    (ON, T + 310.0, T + 200.0, 0.0),
    (ON, None, T + 290.0, 0.0),  # none armed: every leader on its first replica
    ({"auto.leader.rebalance.enable": "false"}, T + 310.0, T + 290.0, 0.0),
    ({**ON, "leader.imbalance.check.interval.seconds": "3"}, T + 10.0, T + 9.0, 0.0),  # scenarios name these
])
def test_how_long_a_step_waits_for_a_known_due_time(config, due, now, wait) -> None:
    from kafka_chaos.scenarios.model.imbalance_checks import wait_for_due

    assert wait_for_due(config, due, now) == pytest.approx(wait)

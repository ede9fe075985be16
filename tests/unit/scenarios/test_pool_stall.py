"""The pool gives up restoring a cluster whose ZooKeeper state stopped changing (StallWatch)."""

from __future__ import annotations

import pytest

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.run.pool import StallWatch, stall_timeout_for


def snapshot(live: dict[int, int], controller: int | None = 1) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers=live, controller=controller, controller_epoch=1, partitions={},
                      topic_configs={}, pending_reassignment=False)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_state_that_keeps_changing_is_waited_for_and_a_healthy_one_ends_the_wait() -> None:
    clock = Clock()
    watch = StallWatch(lambda s: len(s.live_brokers) == 3, 20.0, clock)
    for epoch in range(10):  # a broker re-registering every 15 s: progress, never a stall
        clock.now += 15.0
        assert watch(snapshot({1: 10, 2: 20 + epoch})) is False
    assert watch(snapshot({1: 10, 2: 30, 3: 40})) is True


def test_the_same_unhealthy_state_for_the_stall_time_gives_up_with_one_line() -> None:
    clock = Clock()
    watch = StallWatch(lambda s: False, 20.0, clock)
    assert watch(snapshot({1: 10})) is False
    clock.now = 19.9
    assert watch(snapshot({1: 10})) is False
    clock.now = 20.0
    with pytest.raises(HarnessError, match="nothing changed for 20 s"):
        watch(snapshot({1: 10}))


def test_a_controller_change_is_progress() -> None:
    clock = Clock()
    watch = StallWatch(lambda s: False, 20.0, clock)
    watch(snapshot({1: 10}, controller=1))
    clock.now = 19.0
    watch(snapshot({1: 10}, controller=None))
    clock.now = 38.0
    assert watch(snapshot({1: 10}, controller=None)) is False


@pytest.mark.parametrize("settings, floor, expected", [
    ({}, 20.0, 35.0),  # Kafka's default controller.socket.timeout.ms, 30 s, plus the margin
    ({"controller.socket.timeout.ms": "60000"}, 20.0, 65.0),
    ({"controller.socket.timeout.ms": "5000"}, 20.0, 20.0),  # never below the floor
    ({"controller.socket.timeout.ms": "5000"}, 3.0, 10.0),
])
def test_a_restore_outwaits_the_controller_socket_timeout(settings, floor, expected) -> None:
    """A leader whose AlterPartition the old controller dropped on its session expiry retries at
    the new one only after controller.socket.timeout.ms: the stall window must outlast it."""
    assert stall_timeout_for(settings, floor) == expected

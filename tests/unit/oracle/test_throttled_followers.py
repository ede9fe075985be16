"""A follower its topic throttles (follower.replication.throttled.replicas) may or may not catch up
within a step: the ZooKeeper model lists both outcomes (oracle.interleavings), and the harness
counts a reassignment waiting for such a follower as settled (scenarios.model.snapshots)."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import Reassign, TopicConfigChange, apply_event_alternatives
from kafka_chaos.oracle.config import follower_throttled, throttled_followers
from kafka_chaos.scenarios.model.snapshots import is_settled, reassignments_stalled
from tests.unit.oracle.builders import T0, cluster, lit, part

THROTTLED = {"follower.replication.throttled.replicas": "0:3,1:2"}


@pytest.mark.parametrize("value, partition, expected", [
    ("0:3,1:2", 0, frozenset({3})), ("0:3,1:2", 1, frozenset({2})), ("0:3, 0:1", 0, frozenset({1, 3})),
    ("*", 5, None), (" * ", 0, None), ("", 0, frozenset()), ("0:x,1", 0, frozenset()),
])
def test_which_followers_a_topic_throttles(value: str, partition: int, expected: frozenset[int] | None) -> None:
    assert throttled_followers({"follower.replication.throttled.replicas": value}, partition) == expected


def test_a_follower_is_throttled_only_when_named_or_all_are() -> None:
    assert follower_throttled(THROTTLED, 0, 3) and not follower_throttled(THROTTLED, 0, 2)
    assert follower_throttled({"follower.replication.throttled.replicas": "*"}, 7, 1)
    assert not follower_throttled({}, 0, 3)


def _alternatives(topic_config: dict[str, str]) -> list[tuple[str, tuple[object, ...], tuple[int, ...]]]:
    before = cluster((1, 2, 3), {"t": {0: part((1, 2), 1, (1, 2))}}, topic_config={"t": topic_config})
    return [(label, lit(after.partition(T0)), after.partition(T0).adding_replicas)
            for label, after, _ in apply_event_alternatives(before, Reassign("t", 0, (1, 2, 3)))]


def test_a_reassignment_onto_a_throttled_follower_may_complete_or_stay_pending() -> None:
    assert _alternatives(THROTTLED) == [
        ("reassign", ([1, 2, 3], 1, [1, 2, 3], 2, 0), ()),  # caught up: phase A then B, one bump each
        ("reassign, throttled followers behind", ([1, 2, 3], 1, [1, 2], 1, 0), (3,)),  # phase A only
    ]


def test_without_a_throttle_only_the_follower_catching_up_is_predicted() -> None:
    assert [label for label, _, _ in _alternatives({})] == ["reassign"]
    assert [label for label, _, _ in _alternatives({"follower.replication.throttled.replicas": "0:2"})] == ["reassign"]


def test_a_config_change_that_adds_the_throttle_considers_it() -> None:
    lagging = cluster((1, 2, 3), {"t": {0: part((1, 2, 3), 1, (1, 2))}})
    labels = [label for label, _, _ in apply_event_alternatives(lagging, TopicConfigChange("t", THROTTLED))]
    assert labels == ["topic_config_change", "topic_config_change, throttled followers behind"]


def _zk(isr: tuple[int, ...], adding: tuple[int, ...], config: dict[str, str], mode: str = "zookeeper") -> ZkSnapshot:
    state = PartitionZkState("t", 0, (1, 2, 3), 1, 1, isr, 1, 0, 1, adding_replicas=adding)
    return ZkSnapshot(taken_at=0.0, live_brokers={1: 1, 2: 2, 3: 3}, controller=1, controller_epoch=1,
                      partitions={("t", 0): state}, topic_configs={"t": config}, pending_reassignment=False,
                      mode=mode)


def test_a_reassignment_waiting_for_a_throttled_follower_is_settled_in_zookeeper_mode_only() -> None:
    assert is_settled(_zk((1, 2), (3,), THROTTLED), ["t"]) and reassignments_stalled(_zk((1, 2), (3,), THROTTLED))
    assert not is_settled(_zk((1, 2), (3,), {}), ["t"])  # not throttled: it will catch up
    assert not is_settled(_zk((1, 2), (3,), {"follower.replication.throttled.replicas": "0:2"}), ["t"])
    assert not is_settled(_zk((1, 2), (3,), THROTTLED, mode="kraft"), ["t"])  # the KRaft model has no such alternative
    assert is_settled(_zk((1, 2), (), THROTTLED), ["t"])  # a throttled follower out of the ISR, no reassignment

"""ZooKeeper znode formats, on bytes shaped like what Kafka 3.9 writes (ZkData.scala)."""

from __future__ import annotations

import json

import pytest

from kafka_chaos.harness import zkpaths
from kafka_chaos.harness.errors import UsageError
from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot, partition_zk_state
from kafka_chaos.harness.zkpaths import LeaderIsrState, TopicAssignment, ZnodeFormatError

TOPIC_ZNODE = (b'{"partitions":{"0":[3,1,2],"1":[1,2,3],"10":[2,3,1]},"topic_id":"eXvbBOQOSb2yPSpx0Gf1Jw",'
               b'"adding_replicas":{},"removing_replicas":{},"version":3}')
STATE_ZNODE = b'{"controller_epoch":1,"leader":3,"version":1,"leader_epoch":0,"isr":[3,1,2]}'
UNCLEAN_STATE_ZNODE = (b'{"controller_epoch":2,"leader":2,"version":1,"leader_epoch":4,"isr":[2],'
                       b'"leader_recovery_state":1}')
CONTROLLER_ZNODE = b'{"version":2,"brokerid":2,"timestamp":"1718000000000","kraftControllerEpoch":-1}'


def test_paths() -> None:
    assert zkpaths.broker_path(3) == "/brokers/ids/3"
    assert zkpaths.topic_path("orders") == "/brokers/topics/orders"
    assert zkpaths.partition_state_path("orders", 7) == "/brokers/topics/orders/partitions/7/state"
    assert zkpaths.topic_config_path("orders") == "/config/topics/orders"
    assert zkpaths.config_change_sequence_prefix() == "/config/changes/config_change_"


def test_topic_assignment_keeps_ar_order_and_numeric_partitions() -> None:
    assignment = zkpaths.parse_topic_assignment(TOPIC_ZNODE, "orders")
    assert assignment.topic_id == "eXvbBOQOSb2yPSpx0Gf1Jw"
    assert assignment.partitions == {0: (3, 1, 2), 1: (1, 2, 3), 10: (2, 3, 1)}
    assert assignment.adding_replicas == {} and assignment.removing_replicas == {}


def test_topic_assignment_during_reassignment() -> None:
    data = (b'{"version":3,"topic_id":"x","partitions":{"0":[4,1,2,3]},'
            b'"adding_replicas":{"0":[4]},"removing_replicas":{"0":[3]}}')
    assignment = zkpaths.parse_topic_assignment(data, "t")
    assert assignment.partitions[0] == (4, 1, 2, 3)
    assert assignment.adding_replicas == {0: (4,)}
    assert assignment.removing_replicas == {0: (3,)}


def test_old_topic_znode_without_id_or_reassignment_fields() -> None:
    assignment = zkpaths.parse_topic_assignment(b'{"version":1,"partitions":{"0":[1]}}', "old")
    assert assignment.topic_id is None
    assert assignment.partitions == {0: (1,)}
    assert assignment.adding_replicas == {}


def test_partition_state() -> None:
    assert zkpaths.parse_partition_state(STATE_ZNODE) == LeaderIsrState(
        leader=3, leader_epoch=0, isr=(3, 1, 2), controller_epoch=1, leader_recovery_state=0)


def test_partition_state_after_unclean_election_carries_recovery_state() -> None:
    state = zkpaths.parse_partition_state(UNCLEAN_STATE_ZNODE)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), 1)


def test_leaderless_partition_state() -> None:
    data = b'{"controller_epoch":3,"leader":-1,"version":1,"leader_epoch":7,"isr":[1]}'
    state = zkpaths.parse_partition_state(data)
    assert (state.leader, state.isr, state.leader_epoch) == (-1, (1,), 7)


@pytest.mark.parametrize("data, message", [
    (None, "no data"),
    (b"not json", "not JSON"),
    (b"[1,2]", "expected a JSON object"),
    (b'{"leader":1,"leader_epoch":0,"controller_epoch":1}', "'isr'"),
    (b'{"leader":"1","leader_epoch":0,"controller_epoch":1,"isr":[1]}', "leader"),
    (b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[true]}', "isr"),
])
def test_bad_partition_state_is_named(data: bytes | None, message: str) -> None:
    with pytest.raises(ZnodeFormatError, match=message) as info:
        zkpaths.parse_partition_state(data, "/brokers/topics/t/partitions/0/state")
    assert "/brokers/topics/t/partitions/0/state" in str(info.value)


def test_bad_topic_znode_partition_key() -> None:
    with pytest.raises(ZnodeFormatError, match="'x' is not a number"):
        zkpaths.parse_topic_assignment(b'{"version":3,"partitions":{"x":[1]}}', "t")


def test_controller_and_epoch() -> None:
    assert zkpaths.parse_controller(CONTROLLER_ZNODE) == 2
    assert zkpaths.parse_controller_epoch(b"17") == 17
    with pytest.raises(ZnodeFormatError, match="controller_epoch"):
        zkpaths.parse_controller_epoch(b"seventeen")
    with pytest.raises(ZnodeFormatError, match="brokerid"):
        zkpaths.parse_controller(b'{"version":2}')


def test_topic_config() -> None:
    data = b'{"version":1,"config":{"unclean.leader.election.enable":"true","min.insync.replicas":"2"}}'
    assert zkpaths.parse_topic_config(data, "t") == {
        "unclean.leader.election.enable": "true", "min.insync.replicas": "2"}
    assert zkpaths.parse_topic_config(b"", "t") == {}
    assert zkpaths.parse_topic_config(b'{"version":1,"config":{}}', "t") == {}


def test_reassignment_encoding_matches_kafka_format() -> None:
    data = zkpaths.encode_reassignment([("t", 0, [4, 5, 6]), ("t", 1, (2, 1))])
    assert data == (b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]},'
                    b'{"topic":"t","partition":1,"replicas":[2,1]}]}')


@pytest.mark.parametrize("moves, message", [
    ([], "no partitions"),
    ([("t", 0, [])], "empty"),
    ([("t", 0, [1, 1])], "duplicate"),
    ([("t", 0, [1]), ("t", 0, [2])], "listed twice"),
    ([("t", 0, [-1])], "negative"),
])
def test_reassignment_refuses_what_the_controller_would_stall_on(moves: list, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        zkpaths.encode_reassignment(moves)


def test_preferred_election_encoding() -> None:
    data = zkpaths.encode_preferred_election([("t", 0), ("u", 2), ("t", 0)])
    assert json.loads(data) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0}, {"topic": "u", "partition": 2}]}
    with pytest.raises(UsageError):
        zkpaths.encode_preferred_election([])


def test_topic_config_and_change_notification_encoding() -> None:
    config = {"unclean.leader.election.enable": "true"}
    assert zkpaths.encode_topic_config(config) == (
        b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}')
    assert zkpaths.parse_topic_config(zkpaths.encode_topic_config(config)) == config
    assert zkpaths.encode_config_change(zkpaths.topic_entity_path("orders")) == (
        b'{"version":2,"entity_path":"topics/orders"}')
    with pytest.raises(UsageError, match="strings"):
        zkpaths.encode_topic_config({"min.insync.replicas": 2})  # type: ignore[dict-item]


def test_partition_without_state_znode_reads_leaderless() -> None:
    assignment = TopicAssignment(topic_id="x", partitions={0: (1, 2)})
    state = partition_zk_state("t", 0, assignment, None, 5)
    assert state == PartitionZkState(topic="t", partition=0, replicas=(1, 2), leader=-1,
                                     leader_epoch=-1, isr=(), controller_epoch=-1,
                                     leader_recovery_state=0, version=-1)


def test_partition_joins_assignment_and_state() -> None:
    assignment = zkpaths.parse_topic_assignment(
        b'{"version":3,"partitions":{"0":[4,1,2,3]},"adding_replicas":{"0":[4]},'
        b'"removing_replicas":{"0":[3]}}', "t")
    state = partition_zk_state("t", 0, assignment, zkpaths.parse_partition_state(STATE_ZNODE), 4)
    assert (state.replicas, state.leader, state.isr, state.version) == ((4, 1, 2, 3), 3, (3, 1, 2), 4)
    assert (state.adding_replicas, state.removing_replicas) == ((4,), (3,))


def test_snapshot_lookup_and_rendering() -> None:
    assignment = zkpaths.parse_topic_assignment(TOPIC_ZNODE, "orders")
    state = partition_zk_state("orders", 0, assignment, zkpaths.parse_partition_state(STATE_ZNODE), 2)
    snap = ZkSnapshot(taken_at=0.0, live_brokers={1: 25, 3: 40}, controller=1, controller_epoch=2,
                      partitions={("orders", 0): state}, topic_configs={"orders": {"a": "b"}},
                      pending_reassignment=True)
    assert snap.partition("orders", 0) is state
    with pytest.raises(LookupError, match="orders-1"):
        snap.partition("orders", 1)
    line = snap.summary()
    assert "\n" not in line
    assert "controller=1 (epoch 2)" in line and "live brokers=[1,3]" in line
    assert "orders-0: replicas=[3, 1, 2] leader=3 epoch=0 isr=[3, 1, 2] v2" in line
    text = snap.render()
    assert "1 (epoch 25), 3 (epoch 40)" in text and "config orders: a=b" in text


@pytest.mark.parametrize(("data", "elected_at"), [
    (b'{"version":1,"brokerid":3,"timestamp":"1795880143414"}', 1795880143.414),
    (b'{"version":2,"brokerid":3,"timestamp":"1795880143414","kraftControllerEpoch":-1}', 1795880143.414),
    (b'{"version":1,"brokerid":3}', None),  # no timestamp: unknown, not an error
    (b'{"version":1,"brokerid":3,"timestamp":"soon"}', None),
])
def test_when_the_controller_was_elected(data: bytes, elected_at) -> None:
    assert zkpaths.parse_controller_elected_at(data) == (None if elected_at is None else pytest.approx(elected_at))

"""Typed ZooKeeper events, snapshots and their JSON round trips; the event log's queries (no processes)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.harness import zkpaths
from kafka_chaos.harness.zkadmin import merge_config
from kafka_chaos.harness.zkevents import (
    ADMIN_ZNODE_KINDS,
    EVENT_KINDS,
    AdminZnodeChanged,
    BrokerGone,
    BrokerRegistered,
    ControllerChanged,
    EventFormatError,
    EventLog,
    PartitionStateDeleted,
    PartitionStateWritten,
    TopicAssignmentChanged,
    TopicConfigChanged,
    TopicDeleted,
    ZkEvent,
    event_from_dict,
    event_to_dict,
)
from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot

stamps = st.floats(min_value=0, max_value=4e9, allow_nan=False)
ids = st.integers(min_value=-1, max_value=2**31 - 1)
names = st.text(min_size=1, max_size=12)
brokers = st.lists(st.integers(0, 9), max_size=4).map(tuple)
replica_maps = st.dictionaries(st.integers(0, 50), brokers, max_size=4)

events: st.SearchStrategy[ZkEvent] = st.one_of(
    st.builds(BrokerRegistered, at=stamps, broker_id=ids),
    st.builds(BrokerGone, at=stamps, broker_id=ids),
    st.builds(ControllerChanged, at=stamps, controller=st.none() | ids),
    st.builds(PartitionStateWritten, at=stamps, topic=names, partition=ids, leader=ids,
              leader_epoch=ids, isr=brokers, controller_epoch=ids, leader_recovery_state=st.integers(0, 1),
              version=ids),
    st.builds(PartitionStateDeleted, at=stamps, topic=names, partition=ids),
    st.builds(TopicAssignmentChanged, at=stamps, topic=names, partitions=replica_maps,
              adding_replicas=replica_maps, removing_replicas=replica_maps, version=ids),
    st.builds(TopicDeleted, at=stamps, topic=names),
    st.builds(TopicConfigChanged, at=stamps, topic=names, config=st.dictionaries(names, st.text(max_size=8))),
    st.builds(AdminZnodeChanged, at=stamps, znode=st.sampled_from(sorted(ADMIN_ZNODE_KINDS)), pending=st.booleans()),
)


def through_json(d: dict[str, Any]) -> Any:
    return json.loads(json.dumps(d))


@given(events)
def test_every_event_survives_a_json_round_trip(event: ZkEvent) -> None:
    stored = through_json(event_to_dict(event))
    assert stored["kind"] == event.kind
    assert event_from_dict(stored) == event


def test_every_kind_has_a_class_and_the_old_kind_strings_stay() -> None:
    assert {"broker_registered", "broker_gone", "controller_changed", "partition_state", "topic_assignment",
            "topic_config", "reassignment", "preferred_election"} <= EVENT_KINDS
    admin = AdminZnodeChanged(at=1.0, znode=zkpaths.REASSIGN_PARTITIONS, pending=True)
    assert admin.kind == "reassignment" and admin.topic is None and admin.broker_id is None
    assert ControllerChanged(at=1.0, controller=2).broker_id == 2
    state = PartitionStateWritten(at=1.0, topic="t", partition=0, leader=1, leader_epoch=0, isr=(1,),
                                  controller_epoch=1, leader_recovery_state=0, version=0)
    assert (state.kind, state.topic, state.partition, state.broker_id) == ("partition_state", "t", 0, None)


@pytest.mark.parametrize("bad, match", [
    ({"kind": "nope", "at": 1.0}, "unknown ZooKeeper event kind 'nope'"),
    ({"at": 1.0}, "unknown ZooKeeper event kind None"),
    ({"kind": "broker_gone", "at": 1.0}, "damaged broker_gone event"),
    ({"kind": "reassignment", "at": 1.0, "znode": "/admin/preferred_replica_election", "pending": True},
     "tagged 'reassignment' is a preferred_election event"),
    ({"kind": "reassignment", "at": 1.0, "znode": "/admin/reassign_partitions", "pending": "yes"},
     "pending must be true or false"),
])
def test_a_damaged_event_is_refused_naming_what_is_wrong(bad: dict[str, Any], match: str) -> None:
    with pytest.raises(EventFormatError, match=match):
        event_from_dict(bad)


partition_states = st.builds(
    PartitionZkState, topic=names, partition=st.integers(0, 50), replicas=brokers, leader=ids,
    leader_epoch=ids, isr=brokers, controller_epoch=ids, leader_recovery_state=st.integers(0, 1),
    version=ids, adding_replicas=brokers, removing_replicas=brokers)


@st.composite
def snapshots(draw: st.DrawFn) -> ZkSnapshot:
    parts = draw(st.lists(partition_states, max_size=6, unique_by=lambda p: (p.topic, p.partition)))
    topics = sorted({p.topic for p in parts})
    return ZkSnapshot(
        taken_at=draw(stamps),
        live_brokers=draw(st.dictionaries(st.integers(0, 9), st.integers(0, 2**62), max_size=5)),
        controller=draw(st.none() | st.integers(0, 9)),
        controller_epoch=draw(st.none() | ids),
        partitions={(p.topic, p.partition): p for p in parts},
        topic_configs={t: draw(st.dictionaries(names, st.text(max_size=8), max_size=3)) for t in topics},
        pending_reassignment=draw(st.booleans()),
        pending_preferred_election=draw(st.booleans()),
        topic_ids={t: draw(st.none() | st.text(min_size=1, max_size=22)) for t in topics},
    )


@given(snapshots())
def test_every_snapshot_survives_a_json_round_trip(snap: ZkSnapshot) -> None:
    assert ZkSnapshot.from_dict(through_json(snap.to_dict())) == snap


@given(partition_states)
def test_every_partition_state_survives_a_json_round_trip(state: PartitionZkState) -> None:
    assert PartitionZkState.from_dict(through_json(state.to_dict())) == state


def test_a_snapshot_with_a_non_boolean_flag_is_refused() -> None:
    stored = ZkSnapshot(taken_at=1.0, live_brokers={}, controller=None, controller_epoch=None, partitions={},
                        topic_configs={}, pending_reassignment=False).to_dict()
    stored["pending_reassignment"] = "false"
    with pytest.raises(ValueError, match="true or false"):
        ZkSnapshot.from_dict(stored)


def state_at(at: float, partition: int, leader: int) -> PartitionStateWritten:
    return PartitionStateWritten(at=at, topic="t", partition=partition, leader=leader, leader_epoch=1,
                                 isr=(leader,), controller_epoch=1, leader_recovery_state=0, version=1)


def test_the_event_log_answers_by_stamp_not_by_arrival_and_forgets_the_oldest() -> None:
    log = EventLog(max_events=4)
    for event in [BrokerGone(at=5.0, broker_id=1), state_at(6.0, 0, 2), BrokerGone(at=4.0, broker_id=2),
                  state_at(7.0, 1, 3)]:
        log.append(event)
    assert [e.at for e in log.since(4.5)] == [5.0, 6.0, 7.0]
    first = log.first("broker_gone", after=0.0)
    assert first is not None and first.broker_id == 2  # stamped first, recorded later
    assert log.first("broker_gone", after=0.0, broker_id=1) == BrokerGone(at=5.0, broker_id=1)
    assert log.first("partition_state", after=0.0, partition=1) == state_at(7.0, 1, 3)
    only_leader_2 = log.first("partition_state", after=0.0,
                              where=lambda e: isinstance(e, PartitionStateWritten) and e.leader == 2)
    assert only_leader_2 == state_at(6.0, 0, 2)
    log.append(TopicDeleted(at=8.0, topic="t"))
    assert len(log) == 4 and log.first("broker_gone", after=0.0, broker_id=1) is None


def test_config_changes_merge_and_none_removes() -> None:
    assert merge_config({"a": "1", "b": "2"}, {"b": None, "c": "3", "absent": None}) == {"a": "1", "c": "3"}

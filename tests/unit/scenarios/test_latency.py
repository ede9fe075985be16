"""Latency arithmetic over recorded timestamps."""

from __future__ import annotations

from kafka_chaos.harness.zkevents import BrokerGone, PartitionStateWritten
from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.checks.latency import LatencyBreakdown, breakdown, detection_at, election_at, median, propagation_at

T0 = 1000.0


def state(at: float, topic: str, partition: int, leader: int, isr: tuple[int, ...] = ()) -> PartitionStateWritten:
    return PartitionStateWritten(at=at, topic=topic, partition=partition, leader=leader, leader_epoch=1,
                                 isr=isr or ((leader,) if leader >= 0 else ()), controller_epoch=1,
                                 leader_recovery_state=0, version=1)


EVENTS = [
    BrokerGone(at=999.0, broker_id=1),  # before the fault: ignored
    BrokerGone(at=1006.2, broker_id=1),
    state(1006.25, "t", 0, leader=2),
    state(1006.26, "t", 1, leader=-1),
    state(1006.30, "t", 1, leader=3),
    BrokerGone(at=1007.0, broker_id=3),
]


def test_detection_is_the_target_znode_leaving() -> None:
    assert detection_at(EVENTS, [1], T0) == 1006.2
    assert detection_at(EVENTS, [1, 3], T0) == 1007.0  # the last of several
    assert detection_at(EVENTS, [2], T0) is None
    assert detection_at(EVENTS, [], T0) is None


def test_election_is_the_first_write_naming_the_new_leader() -> None:
    assert election_at(EVENTS, "t", 0, 2, T0) == 1006.25
    assert election_at(EVENTS, "t", 1, 3, T0) == 1006.30
    assert election_at(EVENTS, "t", 1, 2, T0) is None


def test_propagation_waits_for_every_broker() -> None:
    sightings = [(1006.0, 2, 1), (1006.4, 2, 2), (1006.5, 3, 1), (1006.7, 3, 2), (1006.9, 2, 2)]
    assert propagation_at(sightings, [2, 3], 2, T0) == 1006.7
    assert propagation_at(sightings, [2, 3, 4], 2, T0) is None
    assert propagation_at(sightings, [2], 2, 1006.5) == 1006.9


def test_breakdown_in_ms_with_raw_timestamps() -> None:
    acks = [Ack(0, i, f"k{i}", t) for i, t in enumerate([999.5, 999.9, 1006.8, 1007.0])] + [Ack(1, 0, "x", 1003.0)]
    b = breakdown(T0, detection=1006.2, election=1006.25, propagation=1006.7, acks=acks, partition=0)
    assert b.ms() == {"detection": 6200.0, "election": 6250.0, "propagation": 6700.0, "first_produce": 6800.0,
                      "client_gap": 6900.0}
    assert b.timestamps()["gap_start"] == 999.9 and b.timestamps()["gap_end"] == 1006.8
    assert b.timestamps()["fault"] == T0


def test_breakdown_without_election_or_resumed_produce() -> None:
    acks = [Ack(0, 0, "a", 999.0)]
    b = breakdown(T0, detection=None, election=None, propagation=None, acks=acks, partition=0, window_end=1010.0)
    assert b.ms() == {"detection": None, "election": None, "propagation": None, "first_produce": None,
                      "client_gap": None}
    assert b.timestamps() == {"fault": T0}


def test_recomputable_from_timestamps() -> None:
    b = LatencyBreakdown(T0, detection_at=1001.5, election_at=1001.6)
    raw = b.timestamps()
    assert round((raw["election"] - raw["fault"]) * 1000, 1) == b.ms()["election"]


def test_median() -> None:
    assert median([3.0, None, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0]) == 2.5
    assert median([None]) is None

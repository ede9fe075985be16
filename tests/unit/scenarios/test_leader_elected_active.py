"""The leader_elected_active invariant (scenarios.checks.leaders): a KRaft controller elects only
brokers the metadata log holds active at the record -- fed from the KRaft image's own replay of the
records (harness.kraft.image sets ``leader_active``), so the table starts from log records."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.kraft.image import MetadataImage
from kafka_chaos.harness.zkevents import PartitionStateWritten, event_from_dict, event_to_dict
from kafka_chaos.scenarios.checks.leaders import check_leaders_elected_active
from tests.unit.harness.test_kraft_elr import change_v2, partition_v2
from tests.unit.harness.test_kraft_log import (
    LEADER_CHANGE_KEY,
    batch,
    change,
    entries,
    leader_change,
    register_broker,
    registration_change,
    topic,
)

CREATED = [leader_change(3000, (3000,))]


def writes_after(setup: list[bytes], step: list[list[bytes]]) -> tuple[dict[tuple[str, int], int], list[PartitionStateWritten]]:
    """The leaders before the step and the step's partition writes, as the runner has them."""
    image = MetadataImage()
    image.apply_all(entries(batch(0, CREATED, control_key=LEADER_CHANGE_KEY), batch(1, setup)))
    before = {key: p.leader for key, p in image.snapshot(None, 0.0).partitions.items()}
    events = []
    for i, records in enumerate(step):
        events += image.apply_all(entries(batch(10 + i, records)))
    return before, [e for e in events if isinstance(e, PartitionStateWritten)]


UP = [register_broker(b, 10 + b, fenced=False) for b in (1, 2, 3)]
T = [topic("t"), partition_v2(0, (1, 2, 3), (1, 2, 3), 1)]

ROWS = [
    # handleBrokerUnfenced: the BrokerRegistrationChangeRecord before the elections (3.9.0 lines 1339-1350)
    pytest.param(UP[:2] + [register_broker(3, 13)] + [topic("t"), partition_v2(0, (3, 1), (3,), -1)],
                 [[registration_change(3, 13, fenced=-1), change(0, leader=3)]], True, id="elected by its unfence"),
    # controlled shutdown of the leader: another ISR member takes over
    pytest.param(UP + T, [[registration_change(1, 11, shutdown=1), change(0, leader=2, isr=(2, 3))]], True,
                 id="controlled shutdown moves the leader to an active broker"),
    # an ISR change under a leader in controlled shutdown keeps the leader: no election
    pytest.param(UP + [topic("t"), partition_v2(0, (1,), (1,), 1)],
                 [[registration_change(1, 11, shutdown=1)], [change(0, isr=(1,))]], True,
                 id="a write that keeps a leader shutting down is no election"),
    # KAFKA-19522 (4.0.x, ELR on): broker 3 re-registers after a SIGKILL, fenced, and its own
    # registration elects it as the last known leader (PartitionChangeBuilder 4.0.0 lines 315-318)
    pytest.param(UP[:2] + [register_broker(3, 13, fenced=False), topic("t"),
                           partition_v2(0, (3, 1), (), -1, elr=(), lke=(3,))],
                 [[register_broker(3, 23), change_v2(0, leader=3, isr=(3,), elr=(), lke=())]], False,
                 id="KAFKA-19522: elected at its registration while fenced"),
    # 4.1.0: no election at the registration; the unfence elects it
    pytest.param(UP[:2] + [register_broker(3, 13, fenced=False), topic("t"),
                           partition_v2(0, (3, 1), (), -1, elr=(), lke=(3,))],
                 [[register_broker(3, 23)], [registration_change(3, 23, fenced=-1),
                                             change_v2(0, leader=3, isr=(3,), elr=(), lke=())]], True,
                 id="4.1.0: elected after its unfence"),
    # a broker fenced, then named leader by a later record
    pytest.param(UP + T, [[registration_change(2, 12, fenced=1)], [change(0, leader=2)]], False,
                 id="a fenced broker elected"),
]


@pytest.mark.parametrize("setup, step, verdict", ROWS)
def test_leader_elected_active(setup: list[bytes], step: list[list[bytes]], verdict: bool) -> None:
    before, writes = writes_after(setup, step)
    results = check_leaders_elected_active(before, writes)
    assert [r.passed for r in results] == [verdict]
    if not verdict:
        assert results[0].topic == "t" and results[0].partition == 0 and "while fenced or shutting down" in results[0].detail


def test_no_verdict_without_known_activity_and_the_flag_round_trips() -> None:
    """ZooKeeper-mode writes (and histories written before the flag) carry no activity: no verdict.
    The flag survives the history's JSON; an event without it reads back as unknown."""
    zk = PartitionStateWritten(at=1.0, topic="t", partition=0, leader=2, leader_epoch=3, isr=(2,),
                               controller_epoch=1, leader_recovery_state=0, version=4)
    assert check_leaders_elected_active({("t", 0): 1}, [zk]) == []
    assert "leader_active" not in event_to_dict(zk) and event_from_dict(event_to_dict(zk)) == zk
    kraft = PartitionStateWritten(at=1.0, topic="t", partition=0, leader=2, leader_epoch=3, isr=(2,),
                                  controller_epoch=1, leader_recovery_state=0, version=4, leader_active=False)
    assert event_from_dict(event_to_dict(kraft)) == kraft
    # a broker the log never registered (an image started past it) is unknown, not inactive
    before, writes = writes_after([topic("t"), partition_v2(0, (7,), (7,), 7)], [[change(0, isr=(7,))]])
    assert [w.leader_active for w in writes] == [None]

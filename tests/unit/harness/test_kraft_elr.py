"""Kafka 4.x's KIP-966 fields in the metadata log: a partition's eligible leader replicas (ELR)
and last known ELR decoded from PartitionRecord / PartitionChangeRecord version 2 and cleared by a
ClearElrRecord, whose replay bumps the partition epoch (ReplicationControlManager.removeTopicElrs,
4.1.0 lines 603-618) -- so the image's partition epoch keeps up with the controller's."""

from __future__ import annotations

import struct

import pytest

from kafka_chaos.harness.kraft.image import MetadataImage
from kafka_chaos.harness.kraft.records import (
    NO_LEADER_CHANGE,
    ElrCleared,
    FeatureLevel,
    PartitionChanged,
    PartitionCreated,
    decode_record_value,
    uuid_to_bytes,
)
from kafka_chaos.harness.zkevents import PartitionStateWritten

from tests.unit.harness.test_kraft_log import (
    ASSIGNED,
    LEADER_CHANGE_KEY,
    TOPIC_ID,
    batch,
    cstr,
    dirs,
    entries,
    frame,
    ints,
    leader_change,
    register_broker,
    tagged,
    topic,
)

OTHER_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def partition_v2(p: int, replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, *,
                 elr: tuple[int, ...] | None = None, lke: tuple[int, ...] | None = None, topic_id: str = TOPIC_ID,
                 partition_epoch: int = 0) -> bytes:
    body = struct.pack(">i", p) + uuid_to_bytes(topic_id) + ints(replicas) + ints(isr) + ints(()) + ints(())
    body += struct.pack(">iii", leader, 0, partition_epoch) + dirs((ASSIGNED,) * len(replicas))
    fields = {tag: ints(v) for tag, v in ((1, elr), (2, lke)) if v is not None}
    return frame(3, 2, body + tagged(fields))


def change_v2(p: int, *, isr: tuple[int, ...] | None = None, leader: int = NO_LEADER_CHANGE,
              elr: tuple[int, ...] | None = None, lke: tuple[int, ...] | None = None) -> bytes:
    fields = {tag: ints(v) for tag, v in ((0, isr), (6, elr), (7, lke)) if v is not None}
    if leader != NO_LEADER_CHANGE:
        fields[1] = struct.pack(">i", leader)
    return frame(5, 2, struct.pack(">i", p) + uuid_to_bytes(TOPIC_ID) + tagged(fields))


def clear_elr(topic_name: str) -> bytes:
    return frame(28, 0, cstr(topic_name) + tagged({}))


def test_elr_fields_and_clear_elr_decode() -> None:
    created = decode_record_value(partition_v2(0, (1, 2, 3), (), -1, elr=(3,), lke=(3,)))
    assert isinstance(created, PartitionCreated) and (created.elr, created.last_known_elr, created.isr) == ((3,), (3,), ())
    plain = decode_record_value(partition_v2(0, (1, 2), (1, 2), 1))
    assert isinstance(plain, PartitionCreated) and (plain.elr, plain.last_known_elr) == ((), ())
    changed = decode_record_value(change_v2(0, isr=(), leader=-1, elr=(3,), lke=(3,)))
    assert isinstance(changed, PartitionChanged)
    assert (changed.isr, changed.leader, changed.elr, changed.last_known_elr) == ((), -1, (3,), (3,))
    unchanged = decode_record_value(change_v2(0, isr=(1,)))
    assert isinstance(unchanged, PartitionChanged) and (unchanged.elr, unchanged.last_known_elr) == (None, None)
    assert decode_record_value(clear_elr("t")) == ElrCleared("t")
    assert decode_record_value(clear_elr("")) == ElrCleared("")


# (what the log says after t-0 [1,2,3] and u-0 [1,2,3] were created with ISR [1,2,3] at partition
#  epoch 0, the partition epochs after, how many partition events the last record made)
ROWS = [
    # 4.1+: the last ISR member fenced: ISR [] written, ELR and LKE [3] (PartitionChangeBuilder 4.1.0
    # lines 445-453, 538-569, 495-506); then min.insync.replicas changed on t: ClearElr("t")
    pytest.param([change_v2(0, isr=(), leader=-1, elr=(3,), lke=(3,)), clear_elr("t")], {"t": 2, "u": 0}, 1,
                 id="topic cleared: +1 where it had an ELR"),
    pytest.param([change_v2(0, isr=(), leader=-1, elr=(3,), lke=(3,)), clear_elr("")], {"t": 2, "u": 0}, 1,
                 id="every topic cleared: only partitions with an ELR or LKE change"),
    pytest.param([change_v2(0, isr=(), leader=-1, elr=(3,), lke=(3,)), clear_elr("u")], {"t": 1, "u": 0}, 0,
                 id="another topic cleared: nothing"),
    pytest.param([change_v2(0, leader=3, isr=(3,), elr=(), lke=()), clear_elr("t")], {"t": 1, "u": 0}, 0,
                 id="emptied by a change first: nothing left to clear"),
    pytest.param([clear_elr("nope")], {"t": 0, "u": 0}, 0, id="an unknown topic: nothing"),
]


@pytest.mark.parametrize("records, epochs, last_events", ROWS)
def test_clear_elr_bumps_the_partition_epoch_of_partitions_with_an_elr(records: list[bytes], epochs: dict[str, int],
                                                                      last_events: int) -> None:
    created = [partition_v2(0, (1, 2, 3), (1, 2, 3), 1), partition_v2(0, (1, 2, 3), (1, 2, 3), 1, topic_id=OTHER_ID)]
    image = MetadataImage()
    image.apply_all(entries(
        batch(0, [leader_change(3000, (3000,))], control_key=LEADER_CHANGE_KEY),
        batch(1, [register_broker(b, 10 + b, fenced=False) for b in (1, 2, 3)] + [topic("t"), topic("u", OTHER_ID)]
              + created)))
    for i, value in enumerate(records[:-1]):
        image.apply_all(entries(batch(10 + i, [value])))
    events = image.apply_all(entries(batch(20, [records[-1]])))
    snap = image.snapshot(None, 0.0)
    assert {t: snap.partition(t, 0).version for t in ("t", "u")} == epochs
    assert len([e for e in events if isinstance(e, PartitionStateWritten)]) == last_events
    t0 = image.partitions[(TOPIC_ID, 0)]
    if last_events:  # leader, ISR and leader epoch kept; ELR and LKE gone
        assert (t0.leader, t0.isr, t0.elr, t0.last_known_elr) == (-1, (), (), ())


def test_an_empty_isr_is_shown_as_kafka_4_1_writes_it() -> None:
    image = MetadataImage()
    image.apply_all(entries(
        batch(0, [leader_change(3000, (3000,))], control_key=LEADER_CHANGE_KEY),
        batch(1, [register_broker(3, 13, fenced=False), topic("t"), partition_v2(0, (3,), (3,), 3)]),
        batch(5, [change_v2(0, isr=(), leader=-1, elr=(3,), lke=(3,))])))
    p = image.snapshot(None, 0.0).partition("t", 0)
    assert (p.leader, p.isr, p.leader_epoch, p.version) == (-1, (), 1, 1)
    assert image.partitions[(TOPIC_ID, 0)].elr == (3,)


def feature_level(name: str, level: int) -> bytes:
    return frame(12, 0, cstr(name) + struct.pack(">h", level) + tagged({}))


@pytest.mark.parametrize("levels", [
    {"metadata.version": 25, "eligible.leader.replicas.version": 0},  # 4.0's defaults: ELR off
    {"metadata.version": 33, "eligible.leader.replicas.version": 1},  # 4.4.0's (its controller's log)
    {"metadata.version": 21},  # 3.9: no ELR feature
])
def test_finalized_feature_levels_are_kept(levels: dict[str, int]) -> None:
    image = MetadataImage()
    image.apply_all(entries(batch(0, [feature_level(n, v) for n, v in levels.items()])))
    assert image.features == levels
    assert decode_record_value(feature_level("kraft.version", 0)) == FeatureLevel("kraft.version", 0)

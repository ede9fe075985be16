"""The KRaft metadata log decoder and its replay (harness.kraft): bytes written the way Kafka 3.9
writes them (v2 record batches, MetadataRecordSerde frames, flexible message encoding), read
back; PartitionRegistration.merge's epoch rules; the ZkSnapshot and events the replay shows.
The decoder is also checked against Kafka's own DumpLogSegments on a real cluster's log
(tests/integration/test_kraft.py)."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_chaos.harness.kraft.image import MetadataImage
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.harness.kraft.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChanged,
    LeaderChange,
    LogEntry,
    MetadataLogError,
    PartitionChanged,
    PartitionCreated,
    RegisterBroker,
    TopicCreated,
    kafka_uuid,
    random_cluster_id,
    read_batches,
    uuid_to_bytes,
)
from kafka_chaos.harness.zkevents import BrokerGone, BrokerRegistered, ControllerChanged, PartitionStateWritten

TOPIC_ID = kafka_uuid(uuid.UUID(int=7).bytes)


# --- an encoder, after the generated ApiMessage write() of 3.9 -------------------------------------

def uvarint(n: int) -> bytes:
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def cstr(s: str | None) -> bytes:
    return uvarint(0) if s is None else uvarint(len(s.encode()) + 1) + s.encode()


def ints(values: tuple[int, ...] | None) -> bytes:
    return uvarint(0) if values is None else uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def tagged(fields: dict[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in sorted(fields.items()))


def frame(api_key: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def register_broker(broker: int, epoch: int, fenced: bool = True, version: int = 3) -> bytes:
    endpoint = cstr("PLAINTEXT") + cstr("127.0.0.1") + struct.pack(">Hh", 9092, 0) + tagged({})
    feature = cstr("metadata.version") + struct.pack(">hh", 1, 21) + tagged({})
    body = struct.pack(">i", broker) + (b"\x00" if version >= 2 else b"") + uuid.UUID(int=broker).bytes
    body += struct.pack(">q", epoch) + uvarint(2) + endpoint + uvarint(2) + feature + cstr(None)
    body += (b"\x01" if fenced else b"\x00") + (b"\x00" if version >= 1 else b"") + tagged({0: uvarint(1)})
    return frame(0, version, body)


def topic(name: str, topic_id: str = TOPIC_ID) -> bytes:
    return frame(2, 0, cstr(name) + uuid_to_bytes(topic_id) + tagged({}))


ASSIGNED = bytes(range(1, 17))  # a log directory's id
MIGRATING = bytes(16)  # DirectoryId.MIGRATING: what the ZooKeeper migration writes


def dirs(directories: tuple[bytes, ...]) -> bytes:
    return uvarint(len(directories) + 1) + b"".join(directories)


def partition(p: int, replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, *, leader_epoch: int = 0,
              partition_epoch: int = 0, version: int = 1, directory: bytes = ASSIGNED) -> bytes:
    body = struct.pack(">i", p) + uuid_to_bytes(TOPIC_ID) + ints(replicas) + ints(isr) + ints(()) + ints(())
    body += struct.pack(">iii", leader, leader_epoch, partition_epoch)
    if version >= 1:
        body += dirs((directory,) * len(replicas))
    return frame(3, version, body + tagged({}))


def change(p: int, *, isr: tuple[int, ...] | None = None, leader: int = NO_LEADER_CHANGE, recovery: int = -1,
           directories: tuple[bytes, ...] | None = None) -> bytes:
    fields = {}
    if directories is not None:
        fields[8] = dirs(directories)
    if isr is not None:
        fields[0] = ints(isr)
    if leader != NO_LEADER_CHANGE:
        fields[1] = struct.pack(">i", leader)
    if recovery != -1:
        fields[5] = struct.pack(">b", recovery)
    return frame(5, 1 if directories is not None else 0, struct.pack(">i", p) + uuid_to_bytes(TOPIC_ID) + tagged(fields))


def registration_change(broker: int, epoch: int, *, fenced: int = 0, shutdown: int = 0) -> bytes:
    fields = {}
    if fenced:
        fields[0] = struct.pack(">b", fenced)
    if shutdown:
        fields[1] = struct.pack(">b", shutdown)
    return frame(17, 1, struct.pack(">iq", broker, epoch) + tagged(fields))


def noop() -> bytes:
    return frame(20, 0, tagged({}))


def record(value: bytes, offset_delta: int, key: bytes | None = None) -> bytes:
    body = b"\x00" + varint(0) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(len(value)) + value + varint(0)
    return varint(len(body)) + body


def batch(base_offset: int, values: list[bytes], *, epoch: int = 1, timestamp_ms: int = 1_700_000_000_000,
          control_key: bytes | None = None) -> bytes:
    records = b"".join(record(v, i, control_key) for i, v in enumerate(values))
    attributes = 0x20 if control_key is not None else 0
    after_length = struct.pack(">ibIhiqqqhii", epoch, 2, 0, attributes, len(values) - 1, timestamp_ms, timestamp_ms,
                               -1, -1, -1, len(values)) + records
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def leader_change(leader: int, voters: tuple[int, ...], version: int = 0) -> bytes:
    def voter(v: int) -> bytes:
        return struct.pack(">i", v) + (bytes(16) if version >= 1 else b"") + tagged({})
    return struct.pack(">hi", version, leader) + uvarint(len(voters) + 1) + b"".join(map(voter, voters)) + uvarint(1) + tagged({})


LEADER_CHANGE_KEY = struct.pack(">hh", 0, 2)


def log_of(*batches: bytes) -> bytes:
    return b"".join(batches)


# --- decoding ---------------------------------------------------------------------------------------

def test_each_record_kind_decodes_with_its_fields() -> None:
    data = log_of(
        batch(0, [leader_change(3000, (3000,))], control_key=LEADER_CHANGE_KEY),
        batch(1, [register_broker(1, 7), register_broker(2, 8, version=1), noop()]),
        batch(4, [topic("t"), partition(0, (1, 2), (1, 2), 1), change(0, isr=(1,))], timestamp_ms=1_700_000_001_500),
        batch(7, [registration_change(2, 8, fenced=1), change(0, leader=1, recovery=1)]),
    )
    read = read_batches(data)
    assert read.end_position == len(data) and read.next_offset == 9
    records = [e.record for e in read.entries]
    assert records == [
        LeaderChange(3000, (3000,)),
        RegisterBroker(1, 7, True, False), RegisterBroker(2, 8, True, False),
        TopicCreated("t", TOPIC_ID),
        PartitionCreated(TOPIC_ID, 0, (1, 2), (1, 2), (), (), 1, 0, 0, 0, (False, False)),
        PartitionChanged(TOPIC_ID, 0, (1,), NO_LEADER_CHANGE, None, None, None, -1),
        BrokerRegistrationChanged(2, 8, 1, 0),
        PartitionChanged(TOPIC_ID, 0, None, 1, None, None, None, 1),
    ]  # the NoOpRecord is skipped
    assert [e.offset for e in read.entries] == [0, 1, 2, 4, 5, 6, 7, 8]
    assert read.entries[3].at == 1_700_000_001.5


def test_a_batch_being_written_is_left_for_the_next_read() -> None:
    whole = batch(0, [register_broker(1, 7)])
    data = whole + batch(1, [register_broker(2, 8)])[:30]
    read = read_batches(data)
    assert len(read.entries) == 1 and read.end_position == len(whole)
    assert read_batches(data, read.end_position).entries == ()


def test_what_is_not_a_metadata_log_is_one_clear_error() -> None:
    bad_magic = bytearray(batch(0, [noop()]))
    bad_magic[16] = 1
    with pytest.raises(MetadataLogError, match="magic 1"):
        read_batches(bytes(bad_magic))
    compressed = bytearray(batch(0, [noop()]))
    compressed[22] = 1  # attributes' low byte: gzip
    with pytest.raises(MetadataLogError, match="compressed"):
        read_batches(bytes(compressed))
    with pytest.raises(MetadataLogError, match="frame version 0"):
        read_batches(batch(0, [uvarint(0) + uvarint(20) + uvarint(0)]))


def test_cluster_ids_are_kafkas_base64_uuids() -> None:
    for _ in range(50):
        text = random_cluster_id()
        assert len(text) == 22 and not text.startswith("-") and len(uuid_to_bytes(text)) == 16
    assert kafka_uuid(uuid_to_bytes(TOPIC_ID)) == TOPIC_ID


@settings(max_examples=200, deadline=None)
@given(replicas=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=6, unique=True),
       isr=st.one_of(st.none(), st.lists(st.integers(0, 2**31 - 1), max_size=6)),
       leader=st.integers(-2, 2**31 - 1), recovery=st.sampled_from((-1, 0, 1)), p=st.integers(0, 2**31 - 1))
def test_partition_records_round_trip(replicas, isr, leader, recovery, p) -> None:
    created = read_batches(batch(0, [partition(p, tuple(replicas), tuple(replicas), replicas[0])])).entries[0].record
    assert created == PartitionCreated(TOPIC_ID, p, tuple(replicas), tuple(replicas), (), (), replicas[0], 0, 0, 0,
                                       (False,) * len(replicas))
    changed = read_batches(batch(0, [change(p, isr=None if isr is None else tuple(isr), leader=leader,
                                             recovery=recovery)])).entries[0].record
    assert changed == PartitionChanged(TOPIC_ID, p, None if isr is None else tuple(isr), leader, None, None, None,
                                       recovery)


# --- replay -----------------------------------------------------------------------------------------

def entries(*batches: bytes) -> tuple[LogEntry, ...]:
    return read_batches(log_of(*batches)).entries


def test_replay_follows_partition_registration_merge() -> None:
    """Leader epoch +1 only when a change names a leader (the same one included: how
    PartitionChangeBuilder bumps it); partition epoch +1 on every change; recovery -1 keeps it."""
    image = MetadataImage()
    image.apply_all(entries(
        batch(0, [leader_change(3000, (3000,))], control_key=LEADER_CHANGE_KEY),
        batch(1, [register_broker(1, 7, fenced=False), register_broker(2, 8, fenced=False), topic("t"),
                  partition(0, (1, 2), (1, 2), 1)]),
        batch(5, [change(0, isr=(1,))]),  # ISR shrink: partition epoch only
        batch(6, [change(0, leader=1)]),  # same leader named: leader epoch bump
        batch(7, [change(0, leader=2, isr=(2,), recovery=1)]),
        batch(8, [change(0, isr=(2, 1), recovery=0)]),
    ))
    snap = image.snapshot(None, 0.0)
    p = snap.partition("t", 0)
    assert (p.leader, p.isr, p.leader_epoch, p.version, p.leader_recovery_state) == (2, (2, 1), 2, 4, 0)
    assert snap.mode == "kraft" and snap.controller == 3000 and snap.controller_epoch == 1
    assert dict(snap.live_brokers) == {1: 7, 2: 8} and snap.topic_ids == {"t": TOPIC_ID}


def test_live_brokers_are_the_active_ones_and_changes_are_events() -> None:
    image = MetadataImage()
    events = image.apply_all(entries(
        batch(0, [leader_change(3001, (3000, 3001, 3002))], epoch=4, control_key=LEADER_CHANGE_KEY),
        batch(1, [register_broker(1, 7), register_broker(2, 8)], epoch=4),
        batch(3, [registration_change(1, 7, fenced=-1), registration_change(2, 8, fenced=-1)], epoch=4),
        batch(5, [topic("t"), partition(0, (1, 2), (1, 2), 1)], epoch=4),
        batch(7, [registration_change(1, 7, shutdown=1), change(0, leader=2, isr=(2,))], epoch=4,
              timestamp_ms=1_700_000_009_000),
    ))
    assert [type(e) for e in events] == [ControllerChanged, BrokerRegistered, BrokerRegistered,
                                         PartitionStateWritten, BrokerGone, PartitionStateWritten]
    gone = events[4]
    assert isinstance(gone, BrokerGone) and gone.broker_id == 1 and gone.at == 1_700_000_009.0
    snap = image.snapshot(frozenset({"t"}), 0.0)
    assert set(snap.live_brokers) == {2}  # in controlled shutdown: not active
    assert snap.controller_epoch == 4 and snap.partition("t", 0).controller_epoch == 4


def test_a_migrated_partition_shows_its_unassigned_directories_until_each_is_assigned() -> None:
    """ZkTopicMigrationClient writes DirectoryId.MIGRATING for every replica; a KRaft broker's
    AssignReplicasToDirs is a PartitionChangeRecord with Directories only (tag 8): partition
    epoch +1, leader epoch unchanged."""
    image = MetadataImage()
    image.apply_all(entries(batch(0, [topic("t"), partition(0, (1, 2), (1, 2), 1, leader_epoch=3, partition_epoch=6,
                                                            directory=MIGRATING)])))
    assert image.snapshot(None, 0.0).partitions[("t", 0)].unassigned_dirs == (1, 2)
    image.apply_all(entries(batch(2, [change(0, directories=(ASSIGNED, MIGRATING))])))
    state = image.snapshot(None, 0.0).partitions[("t", 0)]
    assert (state.unassigned_dirs, state.leader_epoch, state.version) == ((2,), 3, 7)
    assert ZkSnapshot.from_dict(image.snapshot(None, 0.0).to_dict()).partitions[("t", 0)].unassigned_dirs == (2,)
    # no directories at all (version 0, or an empty list) reads as every replica MIGRATING
    # (PartitionRegistration.defaultToMigrating), as does a change of replicas that keeps them so
    image = MetadataImage()
    image.apply_all(entries(batch(0, [topic("t"), partition(0, (1, 2), (1, 2), 1, version=0)])))
    assert image.snapshot(None, 0.0).partitions[("t", 0)].unassigned_dirs == (1, 2)


def test_entries_already_replayed_are_ignored() -> None:
    image = MetadataImage()
    log = entries(batch(0, [register_broker(1, 7, fenced=False), topic("t"), partition(0, (1,), (1,), 1)]),
                  batch(3, [change(0, isr=(1,))]))
    image.apply_all(log)
    assert image.apply_all(log) == [] and image.snapshot(None, 0).partition("t", 0).version == 1


# --- the observer over several voters' logs ------------------------------------------------------

def write_log(root, name: str, *batches: bytes):
    from pathlib import Path

    directory = Path(root) / name / "__cluster_metadata-0"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "00000000000000000000.log").write_bytes(log_of(*batches))
    return Path(root) / name


def test_a_quorum_leader_counts_once_a_majority_of_voters_have_its_epoch(tmp_path) -> None:
    """explore --seed 30020: after all three voters restarted, 3001 won epoch 7, wrote its
    LEADER_CHANGE and resigned before any follower took it; it was nobody's leader."""
    from kafka_chaos.harness.kraft.observer import KraftObserver

    common = [batch(0, [leader_change(3000, (3000, 3001, 3002))], epoch=6, control_key=LEADER_CHANGE_KEY),
              batch(1, [register_broker(1, 7, fenced=False)], epoch=6)]
    elected = batch(2, [leader_change(3001, (3000, 3001, 3002))], epoch=7, control_key=LEADER_CHANGE_KEY)
    dirs = [write_log(tmp_path, "c3000", *common), write_log(tmp_path, "c3001", *common, elected),
            write_log(tmp_path, "c3002", *common)]
    with KraftObserver(dirs, topics=[]) as observer:
        snap = observer.snapshot()
    assert (snap.controller, snap.controller_epoch) == (None, 7) and set(snap.live_brokers) == {1}
    assert snap.controller_elected_at is None  # no controller's election to time balances from yet
    write_log(tmp_path, "c3002", *common, elected)  # a follower took it: committed
    with KraftObserver(dirs, topics=[]) as observer:
        assert (observer.snapshot().controller, observer.snapshot().controller_epoch) == (3001, 7)
    with KraftObserver(dirs[:1], topics=[]) as alone:  # a quorum of one: its own log decides
        assert alone.snapshot().controller == 3000


def test_records_a_later_leader_overwrote_are_replayed_anew(tmp_path) -> None:
    """explore --mode migration --seed 31001: epoch 10's leader appended records the quorum never
    committed, every voter restarted, and epoch 11's leader wrote its LEADER_CHANGE at the same
    offset; the observer had replayed the overwritten record and never saw the new leader."""
    import time

    from kafka_chaos.harness.kraft.observer import KraftObserver

    common = [batch(0, [leader_change(3002, (3002,))], epoch=10, control_key=LEADER_CHANGE_KEY),
              batch(1, [register_broker(1, 7, fenced=False)], epoch=10)]
    uncommitted = batch(2, [register_broker(2, 8, fenced=False)], epoch=10)
    directory = write_log(tmp_path, "c3002", *common, uncommitted)
    with KraftObserver([directory], topics=[], poll_interval=0.01) as observer:
        assert set(observer.snapshot().live_brokers) == {1, 2}
        time.sleep(0.05)
        write_log(tmp_path, "c3002", *common, batch(2, [leader_change(3000, (3002,))], epoch=11,
                                                     control_key=LEADER_CHANGE_KEY),
                  batch(3, [register_broker(3, 9, fenced=False)], epoch=11))
        snap = observer.wait_until(lambda s: s.controller_epoch == 11, timeout=5.0, description="epoch 11")
    assert (snap.controller, set(snap.live_brokers)) == (3000, {1, 3})


def test_a_paused_leaders_uncommitted_noop_does_not_hide_the_next_leader(tmp_path) -> None:
    """run --suite migration --seed 7: active controller 3000 (epoch 1) was paused with a
    NoOpRecord at offset 58 its followers never fetched; 3001 won epoch 3 and wrote its
    LEADER_CHANGE at offset 58. The NoOp decodes to no record, so compared by decoded records
    the two logs looked alike and the observer showed 3000 in epoch 1 until the step gave up."""
    import time

    from kafka_chaos.harness.kraft.observer import KraftObserver

    voters = (3000, 3001, 3002)
    common = [batch(0, [leader_change(3000, voters)], epoch=1, control_key=LEADER_CHANGE_KEY),
              batch(1, [register_broker(1, 7, fenced=False)], epoch=1)]
    dirs = [write_log(tmp_path, "c3000", *common, batch(2, [noop()], epoch=1)),
            write_log(tmp_path, "c3001", *common), write_log(tmp_path, "c3002", *common)]
    with KraftObserver(dirs, topics=[], poll_interval=0.01) as observer:
        assert (observer.snapshot().controller, observer.snapshot().controller_epoch) == (3000, 1)
        time.sleep(0.05)
        elected = batch(2, [leader_change(3001, voters)], epoch=3, control_key=LEADER_CHANGE_KEY)
        for name in ("c3001", "c3002"):
            write_log(tmp_path, name, *common, elected)
        snap = observer.wait_until(lambda s: s.controller_epoch == 3, timeout=5.0, description="epoch 3")
    assert snap.controller == 3001 and set(snap.live_brokers) == {1}


def test_kraft_node_properties_by_role_and_release() -> None:
    from kafka_chaos.common.errors import UsageError
    from kafka_chaos.harness.config import ClusterConfig, kraft_node_properties

    config = ClusterConfig(brokers=3, mode="kraft", controllers=3)
    assert config.controller_ids() == [3000, 3001, 3002]
    assert ClusterConfig(brokers=3, mode="kraft", ids=(2999, 3000, 3004)).controller_ids() == [3005]
    voters = {3000: "127.0.0.1:1"}
    controller = kraft_node_properties(config, 3000, voters=voters, address="127.0.0.1:1", log_dir="/d")
    broker = kraft_node_properties(config, 1, voters=voters, address="127.0.0.1:9", log_dir="/d")
    assert (controller["process.roles"], broker["process.roles"]) == ("controller", "broker")
    assert "advertised.listeners" not in controller and broker["inter.broker.listener.name"] == "PLAINTEXT"
    assert not any(k.startswith("zookeeper.") for k in broker)
    assert broker["broker.session.timeout.ms"] == "6000"  # matched to ZooKeeper mode's test session
    for unmodelled in ("3.5.2", "3.4.1"):
        with pytest.raises(UsageError, match=r"runs Kafka 3\.6\.x, 3\.7\.x, 3\.8\.x and 3\.9\.x"):
            kraft_node_properties(config, 1, voters=voters, address="127.0.0.1:9", log_dir="/d",
                                  kafka_version=unmodelled)
    for modelled in ("3.7.2", "3.8.1"):
        assert kraft_node_properties(config, 1, voters=voters, address="127.0.0.1:9", log_dir="/d",
                                     kafka_version=modelled)["process.roles"] == "broker"
    assert kraft_node_properties(config, 1, voters=voters, address="127.0.0.1:9", log_dir="/d",
                                 kafka_version="3.6.1")["controller.quorum.voters"] == "3000@127.0.0.1:1"
    with pytest.raises(UsageError, match="--mode kraft has no ZooKeeper ensemble"):
        ClusterConfig(mode="kraft", zookeepers=3)


def test_the_kraft_release_lines_are_the_models() -> None:
    from kafka_chaos.harness.config import KRAFT_RELEASE_LINES
    from kafka_chaos.oracle.kraft.interleavings import MODELLED_LINES

    assert KRAFT_RELEASE_LINES == tuple(line for line in MODELLED_LINES if line < (4, 0))  # 4.x: KRaft only


def test_the_epochs_leader_change_times_the_controllers_election() -> None:
    """A 4.x controller's periodic balances count from its epoch's LEADER_CHANGE append time
    (scenarios.model.imbalance_checks): the snapshot's ``controller_elected_at``, the latest
    epoch's, and it survives the history's JSON."""
    image = MetadataImage()
    image.apply_all(entries(
        batch(0, [leader_change(3000, (3000,))], epoch=4, control_key=LEADER_CHANGE_KEY, timestamp_ms=1_700_000_001_000),
        batch(1, [register_broker(1, 7, fenced=False)], epoch=4, timestamp_ms=1_700_000_002_000),
        batch(2, [leader_change(3001, (3000, 3001))], epoch=5, control_key=LEADER_CHANGE_KEY,
              timestamp_ms=1_700_000_050_500),
        batch(3, [register_broker(2, 8, fenced=False)], epoch=5, timestamp_ms=1_700_000_060_000),
    ))
    snap = image.snapshot(None, 0.0)
    assert (snap.controller, snap.controller_elected_at) == (3001, 1_700_000_050.5)
    assert ZkSnapshot.from_dict(snap.to_dict()).controller_elected_at == 1_700_000_050.5
    assert MetadataImage().snapshot(None, 0.0).controller_elected_at is None


def test_the_observer_supplies_the_entries_its_image_holds(tmp_path) -> None:
    """What a 3.x controller's balance replay reads (scenarios.model.kraft_balances): the replayed
    entries with their append times, from a position on (only what came since), all of them
    again once a later leader overwrote the log and the image was replayed anew. The observer
    keeps no copy of its own: it hands out the log its image was fed from."""
    import time

    from kafka_chaos.harness.kraft.observer import KraftObserver

    first = [batch(0, [leader_change(3000, (3000,))], epoch=1, control_key=LEADER_CHANGE_KEY),
             batch(1, [register_broker(1, 7, fenced=False)], epoch=1, timestamp_ms=1_700_000_005_000)]
    directory = write_log(tmp_path, "c3000", *first)
    with KraftObserver([directory], topics=[], poll_interval=0.01) as observer:
        whole = observer.metadata_log_since(None)
        assert [(e.offset, e.at) for e in whole.entries] == [(0, 1_700_000_000.0), (1, 1_700_000_005.0)]
        assert whole.anew and whole.position.offset == 2
        assert observer.metadata_log_since(whole.position).entries == ()  # nothing new
        grown = [*first, batch(2, [register_broker(2, 8, fenced=False)], epoch=1, timestamp_ms=1_700_000_009_000)]
        write_log(tmp_path, "c3000", *grown)
        observer.wait_until(lambda s: 2 in s.live_brokers, timeout=5.0, description="broker 2")
        since = observer.metadata_log_since(whole.position)
        assert [(e.offset, e.at) for e in since.entries] == [(2, 1_700_000_009.0)] and not since.anew
        assert since.position.offset == 3
        # epoch 2's leader overwrote offset 2 (never committed): the image replayed anew
        time.sleep(0.05)
        write_log(tmp_path, "c3000", *first, batch(2, [leader_change(3000, (3000,))], epoch=2,
                                                   control_key=LEADER_CHANGE_KEY, timestamp_ms=1_700_000_010_000))
        observer.wait_until(lambda s: s.controller_epoch == 2, timeout=5.0, description="epoch 2")
        again = observer.metadata_log_since(since.position)
    assert again.anew and [(e.offset, e.epoch) for e in again.entries] == [(0, 1), (1, 1), (2, 2)]

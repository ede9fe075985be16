"""The KRaft metadata log (``__cluster_metadata-0``) decoded from its segment files.

Why the log and not an API: the controller's decisions -- leader, ISR, leader epoch and partition
epoch, fencing -- are exactly the records it commits, in order and stamped with the active
controller's clock; no Admin API answers the partition epoch. The records are read the way
Kafka writes them, pure bytes in, values out:

* segments hold v2 record batches (``DefaultRecordBatch``: baseOffset, length, partitionLeaderEpoch,
  magic, crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producer id/epoch, base
  sequence, record count), the metadata log uncompressed (``KafkaRaftClient`` appends with
  ``CompressionType.NONE`` in 3.9);
* each data record's value is ``MetadataRecordSerde``'s frame (``AbstractApiMessageSerde.read``,
  3.9): unsigned varint frame version (1), api key, record version, then the record in Kafka's
  flexible message encoding (compact arrays and strings, tagged fields);
* control batches (attribute bit 5) hold ``ControlRecordType`` keys; LEADER_CHANGE (2) values are
  ``LeaderChangeMessage`` (clients/.../message/LeaderChangeMessage.json): who leads the quorum
  from that batch's ``partitionLeaderEpoch`` on.

Only the fields the harness uses are kept; unknown records are skipped by their api key (every
record is length-delimited), unknown tagged fields by their size.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Callable, TypeAlias

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")  # DefaultRecordBatch, 61 bytes
CONTROL_BIT = 0x20
COMPRESSION_MASK = 0x07
FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
LEADER_CHANGE = 2  # ControlRecordType.LEADER_CHANGE
# DirectoryId.MIGRATING (Uuid(0, 0): what the migration gives every replica) and
# DirectoryId.UNASSIGNED (Uuid(0, 1)): a replica whose log directory the controller does not know
# yet (server-common DirectoryId.java 3.9 lines 33-38); the broker assigns it once it runs as a
# KRaft broker (ReplicaManager.maybeUpdateTopicAssignment → AssignReplicasToDirs).
UNASSIGNED_DIRECTORIES = frozenset({bytes(16), bytes(15) + b"\x01"})
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader's default: "the leader didn't change"


class MetadataLogError(ValueError):
    """Bytes that are not a metadata log as Kafka 3.9 writes it."""


class _Reader:
    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data, self.pos, self.end = data, pos, len(data) if end is None else end

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise MetadataLogError(f"truncated: {n} bytes wanted at {self.pos}, {self.end - self.pos} left")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def uint16(self) -> int:
        return int(struct.unpack(">H", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def boolean(self) -> bool:
        return self.take(1) != b"\x00"

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise MetadataLogError("varint too long")

    def varint(self) -> int:  # zigzag
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def uuid(self) -> str:
        return kafka_uuid(self.take(16))

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode("utf-8")

    def compact_int32s(self) -> tuple[int, ...] | None:
        n = self.uvarint()
        return None if n == 0 else tuple(self.int32() for _ in range(n - 1))

    def compact_unassigned(self) -> tuple[bool, ...] | None:
        """A compact ``[]uuid`` of log directories, read as "not yet assigned" per entry."""
        n = self.uvarint()
        return None if n == 0 else tuple(self.take(16) in UNASSIGNED_DIRECTORIES for _ in range(n - 1))

    def compact_array(self, element: Callable[[_Reader], object]) -> None:
        """Skip a compact array of structs (each ends with its own tagged fields)."""
        n = self.uvarint()
        for _ in range(max(0, n - 1)):
            element(self)

    def tagged(self, handlers: dict[int, Callable[[_Reader], None]] | None = None) -> None:
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            end = self.pos + size
            handler = (handlers or {}).get(tag)
            if handler is not None:
                handler(_Reader(self.data, self.pos, end))
            self.pos = end


def kafka_uuid(raw: bytes) -> str:
    """``org.apache.kafka.common.Uuid.toString``: URL-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_to_bytes(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def random_cluster_id() -> str:
    """``Uuid.randomUuid().toString()``: Kafka skips ids whose string starts with '-' (they read
    as command-line options) and the reserved zero/one ids."""
    while True:
        text = kafka_uuid(uuid.uuid4().bytes)
        if not text.startswith("-"):
            return text


# ---------------------------------------------------------------- the records kept

@dataclass(frozen=True)
class RegisterBroker:  # RegisterBrokerRecord, api key 0, versions 0-3
    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool


@dataclass(frozen=True)
class UnregisterBroker:  # api key 1
    broker_id: int
    epoch: int


@dataclass(frozen=True)
class TopicCreated:  # TopicRecord, api key 2
    name: str
    topic_id: str


@dataclass(frozen=True)
class PartitionCreated:  # PartitionRecord, api key 3, versions 0-2
    topic_id: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing: tuple[int, ...]
    adding: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    # per replica, whether its directory is unassigned (MIGRATING/UNASSIGNED); () before version 1
    unassigned_dirs: tuple[bool, ...] = ()
    # KIP-966 (version 2+, metadata version 4.0-IV1+): EligibleLeaderReplicas (tag 1) and
    # LastKnownElr (tag 2), empty when absent (PartitionRecord.json 4.1.0)
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True)
class ConfigChanged:  # ConfigRecord, api key 4
    resource_type: int  # ConfigResource.Type: 2 TOPIC, 4 BROKER
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class PartitionChanged:  # PartitionChangeRecord, api key 5, versions 0-2; None: unchanged
    topic_id: str
    partition: int
    isr: tuple[int, ...] | None
    leader: int  # NO_LEADER_CHANGE when unchanged
    replicas: tuple[int, ...] | None
    removing: tuple[int, ...] | None
    adding: tuple[int, ...] | None
    leader_recovery_state: int  # -1 when unchanged
    unassigned_dirs: tuple[bool, ...] | None = None  # Directories (tag 8), None when unchanged
    # KIP-966 (version 2+): EligibleLeaderReplicas (tag 6), LastKnownElr (tag 7), None when
    # unchanged (PartitionChangeRecord.json 4.1.0)
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True)
class FenceBroker:  # api key 7
    broker_id: int
    epoch: int


@dataclass(frozen=True)
class UnfenceBroker:  # api key 8
    broker_id: int
    epoch: int


@dataclass(frozen=True)
class TopicRemoved:  # RemoveTopicRecord, api key 9
    topic_id: str


@dataclass(frozen=True)
class BrokerRegistrationChanged:  # api key 17, versions 0-2
    broker_id: int
    epoch: int
    fenced: int  # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
    in_controlled_shutdown: int  # BrokerRegistrationInControlledShutdownChange: 1 yes, 0 none


@dataclass(frozen=True)
class ZkMigrationStateChanged:  # ZkMigrationStateRecord, api key 21, version 0
    # ZkMigrationState.java 3.9: NONE 0, MIGRATION 1, PRE_MIGRATION 2, POST_MIGRATION 3 (3.5
    # swapped 3.4's PreMigration/Migration values, ZkMigrationRecord.json)
    state: int


@dataclass(frozen=True)
class FeatureLevel:  # FeatureLevelRecord, api key 12, version 0 (FeatureLevelRecord.json 4.1.0)
    # a finalized feature: "metadata.version" (its level: 4.0-IV3 is 25, 4.1-IV1 27, 4.4-IV2 33),
    # "eligible.leader.replicas.version" (KIP-966: 1 from 4.1's bootstrap on), "kraft.version", ...
    name: str
    level: int


@dataclass(frozen=True)
class ElrCleared:  # ClearElrRecord, api key 28, version 0 (Kafka 4.0+, KIP-966)
    # ClearElrRecord.json 4.1.0: the topic whose partitions lose their ELR and last known ELR;
    # "" for every topic (ReplicationControlManager.replay(ClearElrRecord), 4.1.0 lines 571-601)
    topic_name: str


@dataclass(frozen=True)
class LeaderChange:  # control record LEADER_CHANGE: LeaderChangeMessage
    leader_id: int
    voters: tuple[int, ...]


MetadataRecord: TypeAlias = (RegisterBroker | UnregisterBroker | TopicCreated | PartitionCreated | ConfigChanged
                             | PartitionChanged | FenceBroker | UnfenceBroker | TopicRemoved
                             | BrokerRegistrationChanged | ZkMigrationStateChanged | FeatureLevel | ElrCleared
                             | LeaderChange)


def _skip_endpoint(r: _Reader) -> None:  # RegisterBrokerRecord.EndPoints element
    r.compact_string(), r.compact_string(), r.uint16(), r.int16()
    r.tagged()


def _skip_feature(r: _Reader) -> None:  # RegisterBrokerRecord.Features element
    r.compact_string(), r.int16(), r.int16()
    r.tagged()


def _register_broker(r: _Reader, version: int) -> RegisterBroker:
    broker_id = r.int32()
    if version >= 2:
        r.boolean()  # IsMigratingZkBroker
    r.uuid()  # IncarnationId
    epoch = r.int64()
    r.compact_array(_skip_endpoint)
    r.compact_array(_skip_feature)
    r.compact_string()  # Rack
    fenced = r.boolean()
    shutting = r.boolean() if version >= 1 else False
    r.tagged()
    return RegisterBroker(broker_id, epoch, fenced, shutting)


def _partition_record(r: _Reader, version: int) -> PartitionCreated:
    partition, topic_id = r.int32(), r.uuid()
    replicas, isr = r.compact_int32s() or (), r.compact_int32s() or ()
    removing, adding = r.compact_int32s() or (), r.compact_int32s() or ()
    leader = r.int32()
    leader_epoch, partition_epoch = r.int32(), r.int32()
    # Directories: []uuid; none (version 0, an empty list) reads as every replica MIGRATING
    # (PartitionRegistration.defaultToMigrating, PartitionRegistration.java 3.9 lines 186-203)
    unassigned = (r.compact_unassigned() or ()) if version >= 1 else ()
    if not unassigned:
        unassigned = (True,) * len(replicas)
    recovery = [0]
    elrs: dict[int, tuple[int, ...]] = {}

    def read_recovery(t: _Reader) -> None:
        recovery[0] = t.int8()

    def read_elr(tag: int) -> Callable[[_Reader], None]:
        return lambda t: elrs.__setitem__(tag, t.compact_int32s() or ())

    r.tagged({0: read_recovery, 1: read_elr(1), 2: read_elr(2)})
    return PartitionCreated(topic_id, partition, replicas, isr, removing, adding, leader, recovery[0],
                            leader_epoch, partition_epoch, unassigned, elrs.get(1, ()), elrs.get(2, ()))


def _partition_change(r: _Reader, version: int) -> PartitionChanged:
    partition, topic_id = r.int32(), r.uuid()
    fields: dict[str, object] = {"isr": None, "leader": NO_LEADER_CHANGE, "replicas": None, "removing": None,
                                 "adding": None, "recovery": -1, "dirs": None, "elr": None, "lke": None}

    def ints(name: str) -> Callable[[_Reader], None]:
        return lambda t: fields.__setitem__(name, t.compact_int32s())

    r.tagged({0: ints("isr"), 1: lambda t: fields.__setitem__("leader", t.int32()), 2: ints("replicas"),
              3: ints("removing"), 4: ints("adding"), 5: lambda t: fields.__setitem__("recovery", t.int8()),
              8: lambda t: fields.__setitem__("dirs", t.compact_unassigned()), 6: ints("elr"), 7: ints("lke")})
    dirs = fields["dirs"]
    return PartitionChanged(topic_id, partition, _opt(fields["isr"]), int(str(fields["leader"])),
                            _opt(fields["replicas"]), _opt(fields["removing"]), _opt(fields["adding"]),
                            int(str(fields["recovery"])), dirs if isinstance(dirs, tuple) else None,
                            _opt(fields["elr"]), _opt(fields["lke"]))


def _opt(value: object) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(v) for v in value)  # type: ignore[attr-defined]


def _registration_change(r: _Reader, version: int) -> BrokerRegistrationChanged:
    broker_id, epoch = r.int32(), r.int64()
    fields = {"fenced": 0, "shutdown": 0}
    r.tagged({0: lambda t: fields.__setitem__("fenced", t.int8()),
              1: lambda t: fields.__setitem__("shutdown", t.int8())})
    return BrokerRegistrationChanged(broker_id, epoch, fields["fenced"], fields["shutdown"])


def _config(r: _Reader, version: int) -> ConfigChanged:
    kind, resource, name, value = r.int8(), r.compact_string() or "", r.compact_string() or "", r.compact_string()
    r.tagged()
    return ConfigChanged(kind, resource, name, value)


def _two(make: Callable[[int, int], MetadataRecord]) -> Callable[[_Reader, int], MetadataRecord]:
    def read(r: _Reader, version: int) -> MetadataRecord:
        return make(r.int32(), r.int64())
    return read


_DECODERS: dict[int, Callable[[_Reader, int], MetadataRecord]] = {
    0: _register_broker,
    1: _two(UnregisterBroker),
    2: lambda r, v: TopicCreated(r.compact_string() or "", r.uuid()),
    3: _partition_record,
    4: _config,
    5: _partition_change,
    7: _two(FenceBroker),
    8: _two(UnfenceBroker),
    9: lambda r, v: TopicRemoved(r.uuid()),
    12: lambda r, v: FeatureLevel(r.compact_string() or "", r.int16()),
    17: _registration_change,
    21: lambda r, v: ZkMigrationStateChanged(r.int8()),
    28: lambda r, v: ElrCleared(r.compact_string() or ""),
}


def decode_record_value(value: bytes) -> MetadataRecord | None:
    """One data record's value (``MetadataRecordSerde``), or None for a kind the harness skips."""
    r = _Reader(value)
    frame = r.uvarint()
    if frame != FRAME_VERSION:
        raise MetadataLogError(f"metadata record frame version {frame}, only {FRAME_VERSION} is known")
    api_key, version = r.uvarint(), r.uvarint()
    decoder = _DECODERS.get(api_key)
    return decoder(r, version) if decoder is not None else None


def _voter(r: _Reader, version: int) -> int:
    voter = r.int32()
    if version >= 1:
        r.take(16)  # VoterDirectoryId
    r.tagged()
    return voter


def decode_leader_change(value: bytes) -> LeaderChange:
    r = _Reader(value)
    version = r.int16()
    leader = r.int32()
    n = r.uvarint()
    voters = tuple(_voter(r, version) for _ in range(max(0, n - 1)))
    return LeaderChange(leader, voters)


# ---------------------------------------------------------------- batches

@dataclass(frozen=True)
class LogEntry:
    """One record with where and when the log has it: ``epoch`` is the quorum epoch (the
    batch's partitionLeaderEpoch), ``at`` the active controller's append time in seconds."""

    offset: int
    epoch: int
    at: float
    record: MetadataRecord


@dataclass(frozen=True)
class BatchSpan:
    """Which offsets one batch holds and its quorum epoch: every batch, those whose records the
    harness skips (a NoOpRecord every ``metadata.max.idle.interval.ms``) included, so a reader
    can tell whose record sits at an offset even where it decodes none."""

    base_offset: int
    last_offset: int
    epoch: int


@dataclass(frozen=True)
class BatchesRead:
    entries: tuple[LogEntry, ...]
    end_position: int  # where the next complete batch starts
    next_offset: int  # the offset after the last batch read (-1: none)
    batches: tuple[BatchSpan, ...] = ()


@dataclass(frozen=True)
class BatchHeader:
    """One complete record batch of a segment (DefaultRecordBatch, magic 2): where it lies and
    what its header says."""

    position: int
    end: int
    base_offset: int
    epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    count: int

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def compressed(self) -> bool:
        return bool(self.attributes & COMPRESSION_MASK)

    def records(self, data: bytes) -> Iterator[RawRecord]:
        """Its ``count`` records, undecoded (an uncompressed batch's)."""
        r = _Reader(data, self.position + BATCH_HEADER.size, self.end)
        for _ in range(self.count):
            yield _raw_record(r, self.base_offset)


@dataclass(frozen=True)
class RawRecord:
    offset: int
    timestamp_delta: int
    key: bytes | None
    value: bytes

    def control_type(self) -> int | None:
        """A control record's type (its key's second int16: ControlRecordType), None if it has none."""
        if self.key is None or len(self.key) < 4:
            return None
        return int(struct.unpack(">h", self.key[2:4])[0])


def batch_headers(data: bytes, position: int = 0) -> Iterator[BatchHeader]:
    """Every complete batch of ``data`` from ``position``, in file order (a segment may end
    mid-batch while it is written: that tail is left for the next read)."""
    while position + BATCH_HEADER.size <= len(data):
        (base_offset, length, epoch, magic, _crc, attributes, last_delta, base_ts, _max_ts, _pid, _pepoch,
         _seq, count) = BATCH_HEADER.unpack_from(data, position)
        end = position + 12 + length
        if length <= 0 or end > len(data):
            return
        if magic != 2:
            raise MetadataLogError(f"record batch magic {magic} at position {position}, expected 2")
        yield BatchHeader(position, end, base_offset, epoch, attributes, last_delta, base_ts, count)
        position = end


def _raw_record(r: _Reader, base_offset: int) -> RawRecord:
    length = r.varint()
    end = r.pos + length
    r.int8()  # attributes
    ts_delta = r.varint()
    offset = base_offset + r.varint()
    key_len = r.varint()
    key = r.take(key_len) if key_len >= 0 else None
    value_len = r.varint()
    value = r.take(value_len) if value_len >= 0 else b""
    r.pos = end  # headers: none in the metadata log
    return RawRecord(offset, ts_delta, key, value)


def read_batches(data: bytes, position: int = 0) -> BatchesRead:
    """Every complete batch of ``data`` from ``position`` (a segment may end mid-batch while
    it is written: that tail is left for the next read)."""
    entries: list[LogEntry] = []
    batches: list[BatchSpan] = []
    next_offset = -1
    for batch in batch_headers(data, position):
        if batch.compressed:
            raise MetadataLogError(f"compressed metadata batch at offset {batch.base_offset}: not supported")
        for raw in batch.records(data):
            entry = _record(raw, batch.epoch, batch.base_timestamp, control=batch.control)
            if entry is not None:
                entries.append(entry)
        next_offset = batch.base_offset + batch.last_offset_delta + 1
        batches.append(BatchSpan(batch.base_offset, next_offset - 1, batch.epoch))
        position = batch.end
    return BatchesRead(tuple(entries), position, next_offset, tuple(batches))


def _record(raw: RawRecord, epoch: int, base_ts: int, *, control: bool) -> LogEntry | None:
    at = (base_ts + raw.timestamp_delta) / 1000.0
    if control:
        if raw.control_type() != LEADER_CHANGE:
            return None
        return LogEntry(raw.offset, epoch, at, decode_leader_change(raw.value))
    record = decode_record_value(raw.value)
    return None if record is None else LogEntry(raw.offset, epoch, at, record)


def iter_records(data: bytes) -> Iterator[LogEntry]:
    yield from read_batches(data).entries

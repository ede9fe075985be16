"""Just enough of the Kafka wire protocol to ask ONE broker for its metadata cache (and to send
the few requests librdkafka has no call for, or cannot aim at one broker: below).

Why not confluent-kafka: librdkafka sends an application metadata request to *any* broker it
is connected to, and it connects to the brokers it learns about — bootstrapped at broker 1,
``AdminClient.list_topics`` was answered by broker 1 only 5 times out of 12 on a 3-broker
cluster.  Comparing each broker's cache with ZooKeeper needs the answer from that broker.

Metadata v7 (``clients/src/main/resources/common/message/MetadataRequest.json`` and
``MetadataResponse.json``, 3.9) is the newest non-flexible version that carries the partition
leader epoch; it also lets us send ``allow_auto_topic_creation = false`` so asking about a
missing topic never creates it.  Pure encode/decode; the socket lives in :mod:`harness.metadata`.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

METADATA_API_KEY = 3
METADATA_VERSION = 7
CLIENT_ID = "kafka-chaos-observer"


class WireFormatError(ValueError):
    """A response that does not parse as Metadata v7."""


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """A size-prefixed request of a non-flexible version (request header v1)."""
    message = struct.pack(">hhi", api_key, version, correlation_id) + _string(CLIENT_ID) + body
    return struct.pack(">i", len(message)) + message


def encode_metadata_request(correlation_id: int, topics: Sequence[str] | None) -> bytes:
    """A size-prefixed MetadataRequest v7 with request header v1; ``None`` asks for all topics."""
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    body += struct.pack(">?", False)  # allow_auto_topic_creation
    return _request(METADATA_API_KEY, METADATA_VERSION, correlation_id, body)


@dataclass(frozen=True)
class WirePartition:
    error_code: int
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True)
class WireTopic:
    error_code: int
    name: str
    is_internal: bool
    partitions: tuple[WirePartition, ...]


@dataclass(frozen=True)
class WireMetadata:
    correlation_id: int
    brokers: Mapping[int, tuple[str, int]]  # node id -> (host, port), as this broker knows them
    cluster_id: str | None
    controller_id: int
    topics: tuple[WireTopic, ...]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _unpack(self, fmt: str) -> tuple[int | bool, ...]:
        size = struct.calcsize(fmt)
        if self._pos + size > len(self._data):
            raise WireFormatError(f"response truncated at byte {self._pos}")
        values = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += size
        return values

    def int8(self) -> int:
        return int(self._unpack(">b")[0])

    def int16(self) -> int:
        return int(self._unpack(">h")[0])

    def int32(self) -> int:
        return int(self._unpack(">i")[0])

    def int64(self) -> int:
        return int(self._unpack(">q")[0])

    def boolean(self) -> bool:
        return bool(self._unpack(">?")[0])

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        if self._pos + length > len(self._data):
            raise WireFormatError(f"response truncated in a string at byte {self._pos}")
        raw = self._data[self._pos:self._pos + length]
        self._pos += length
        return raw.decode("utf-8")

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise WireFormatError(f"null where a string is required at byte {self._pos}")
        return value

    def count(self) -> int:
        n = self.int32()
        return max(n, 0)  # -1 is a null array

    def int32_array(self) -> tuple[int, ...]:
        return tuple(self.int32() for _ in range(self.count()))

    def at_end(self) -> bool:
        return self._pos == len(self._data)


def decode_metadata_response(payload: bytes) -> WireMetadata:
    """Decode a MetadataResponse v7 (response header v0) without its 4-byte size prefix."""
    r = _Reader(payload)
    correlation_id = r.int32()
    r.int32()  # throttle_time_ms
    brokers: dict[int, tuple[str, int]] = {}
    for _ in range(r.count()):
        node_id, host, port = r.int32(), r.string(), r.int32()
        r.nullable_string()  # rack
        brokers[node_id] = (host, port)
    cluster_id = r.nullable_string()
    controller_id = r.int32()
    topics = []
    for _ in range(r.count()):
        error_code, name, is_internal = r.int16(), r.string(), r.boolean()
        partitions = []
        for _ in range(r.count()):
            partitions.append(WirePartition(
                error_code=r.int16(), partition=r.int32(), leader=r.int32(), leader_epoch=r.int32(),
                replicas=r.int32_array(), isr=r.int32_array(), offline_replicas=r.int32_array()))
        topics.append(WireTopic(error_code, name, is_internal, tuple(partitions)))
    if not r.at_end():
        raise WireFormatError("metadata response has trailing bytes (not version 7?)")
    return WireMetadata(correlation_id, brokers, cluster_id, controller_id, tuple(topics))


# --- AlterPartitionReassignments v0 (KIP-455) ------------------------------------------------------
# confluent-kafka has no call for it, and a migrating cluster's KRaft controller reads no
# /admin/reassign_partitions: clients/src/main/resources/common/message/
# AlterPartitionReassignmentsRequest.json and ...Response.json (3.9), version 0, flexible
# (compact strings and arrays, tagged fields), request header v2, response header v1.

ALTER_PARTITION_REASSIGNMENTS_API_KEY = 45


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _compact_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _uvarint(len(raw) + 1) + raw


NO_TAGGED_FIELDS = b"\x00"


def encode_alter_partition_reassignments(correlation_id: int, timeout_ms: int,
                                         moves: Mapping[str, Mapping[int, Sequence[int] | None]]) -> bytes:
    """A size-prefixed AlterPartitionReassignmentsRequest v0: topic -> partition -> target replicas
    (None cancels that partition's reassignment)."""
    header = struct.pack(">hhi", ALTER_PARTITION_REASSIGNMENTS_API_KEY, 0, correlation_id) + _string(CLIENT_ID)
    header += NO_TAGGED_FIELDS
    body = struct.pack(">i", timeout_ms) + _uvarint(len(moves) + 1)
    for topic, partitions in moves.items():
        body += _compact_string(topic) + _uvarint(len(partitions) + 1)
        for partition, replicas in partitions.items():
            body += struct.pack(">i", partition)
            body += _uvarint(0) if replicas is None else (
                _uvarint(len(replicas) + 1) + b"".join(struct.pack(">i", r) for r in replicas))
            body += NO_TAGGED_FIELDS
        body += NO_TAGGED_FIELDS
    body += NO_TAGGED_FIELDS
    message = header + body
    return struct.pack(">i", len(message)) + message


@dataclass(frozen=True)
class ReassignmentAnswer:
    correlation_id: int
    error_code: int  # top level (NOT_CONTROLLER, ...)
    error_message: str | None
    partitions: Mapping[tuple[str, int], tuple[int, str | None]]  # (topic, partition) -> (error code, message)


class _CompactReader(_Reader):
    def uvarint(self) -> int:
        shift = value = 0
        while True:
            (byte,) = self._unpack(">B")
            value |= (int(byte) & 0x7F) << shift
            if not int(byte) & 0x80:
                return value
            shift += 7

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint()
        if n == 0:
            return None
        raw = bytes(self._unpack(f">{n - 1}s")[0]) if n > 1 else b""
        return raw.decode("utf-8")

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            size = self.uvarint()
            self._unpack(f">{size}s")


def decode_alter_partition_reassignments_response(payload: bytes) -> ReassignmentAnswer:
    """An AlterPartitionReassignmentsResponse v0 (response header v1) without its size prefix."""
    r = _CompactReader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()
    r.int32()  # ThrottleTimeMs
    error_code, error_message = r.int16(), r.compact_nullable_string()
    partitions: dict[tuple[str, int], tuple[int, str | None]] = {}
    for _ in range(max(r.uvarint() - 1, 0)):
        topic = r.compact_nullable_string() or ""
        for _ in range(max(r.uvarint() - 1, 0)):
            index, code = r.int32(), r.int16()
            partitions[(topic, index)] = (code, r.compact_nullable_string())
            r.skip_tagged_fields()
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return ReassignmentAnswer(correlation_id, error_code, error_message, partitions)


# --- FindCoordinator v1 and InitProducerId v0: a cluster made ready for clients ----------------------
# clients/src/main/resources/common/message/FindCoordinatorRequest.json / ...Response.json and
# InitProducerIdRequest.json / ...Response.json (3.9): both versions are non-flexible (request
# header v1, response header v0) and answered by every release since 0.11.

FIND_COORDINATOR_API_KEY = 10
INIT_PRODUCER_ID_API_KEY = 22
GROUP_KEY_TYPE = 0


def encode_find_coordinator(correlation_id: int, group: str) -> bytes:
    """A size-prefixed FindCoordinatorRequest v1 for a consumer group's coordinator."""
    return _request(FIND_COORDINATOR_API_KEY, 1, correlation_id, _string(group) + struct.pack(">b", GROUP_KEY_TYPE))


@dataclass(frozen=True)
class WireAnswer:
    """The answer of a request that only says whether it worked (and, where it did, a number:
    the coordinator's node id, the producer id)."""

    correlation_id: int
    error_code: int
    value: int


def decode_find_coordinator_response(payload: bytes) -> WireAnswer:
    """A FindCoordinatorResponse v1 without its size prefix: the coordinator's node id."""
    r = _Reader(payload)
    correlation_id = r.int32()
    r.int32()  # ThrottleTimeMs
    error_code = r.int16()
    r.nullable_string()  # ErrorMessage
    node_id = r.int32()
    r.string(), r.int32()  # Host, Port
    if not r.at_end():
        raise WireFormatError("FindCoordinator response has trailing bytes (not version 1?)")
    return WireAnswer(correlation_id, error_code, node_id)


def encode_init_producer_id(correlation_id: int, transaction_timeout_ms: int = 60_000) -> bytes:
    """A size-prefixed InitProducerIdRequest v0 of an idempotent (not transactional) producer."""
    return _request(INIT_PRODUCER_ID_API_KEY, 0, correlation_id,
                    struct.pack(">hi", -1, transaction_timeout_ms))  # TransactionalId null


@dataclass(frozen=True)
class WireProducerId:
    """An InitProducerId answer: the producer id and epoch handed out (-1 and -1 on an error)."""

    correlation_id: int
    error_code: int
    producer_id: int
    epoch: int


def decode_init_producer_id_response(payload: bytes) -> WireProducerId:
    """An InitProducerIdResponse v0 without its size prefix: the producer id and epoch."""
    if len(payload) != 20:
        raise WireFormatError(f"InitProducerId response of {len(payload)} bytes, expected 20")
    correlation_id, _throttle, error_code, producer_id, epoch = struct.unpack(">iihqh", payload)
    return WireProducerId(correlation_id, error_code, producer_id, epoch)


# --- DescribeLogDirs v1 ------------------------------------------------------------------------------
# What a broker holds on disk, per log directory: clients/src/main/resources/common/message/
# DescribeLogDirsRequest.json and ...Response.json (3.9: versions 0-4, flexible from 2; 2.4: 0-1).
# Version 1 is the newest every release from 2.4 on answers, and Kafka 4.0 drops only version 0
# (KIP-896). The broker answers from its LogManager (``ReplicaManager.describeLogDirs``): every
# log it has loaded, current and future (``IsFutureKey``: an AlterReplicaLogDirs copy), and each
# offline directory with KAFKA_STORAGE_ERROR and no topics.

DESCRIBE_LOG_DIRS_API_KEY = 35
DESCRIBE_LOG_DIRS_VERSION = 1


def encode_describe_log_dirs(correlation_id: int) -> bytes:
    """A size-prefixed DescribeLogDirsRequest v1 for every topic (Topics null)."""
    return _request(DESCRIBE_LOG_DIRS_API_KEY, DESCRIBE_LOG_DIRS_VERSION, correlation_id, struct.pack(">i", -1))


@dataclass(frozen=True)
class WireLogDir:
    """One log directory of a broker: its error code, and the partitions it holds a log of."""

    error_code: int
    path: str
    current: frozenset[tuple[str, int]]
    future: frozenset[tuple[str, int]]


@dataclass(frozen=True)
class WireLogDirs:
    correlation_id: int
    dirs: tuple[WireLogDir, ...]


def decode_describe_log_dirs_response(payload: bytes) -> WireLogDirs:
    """A DescribeLogDirsResponse v1 (response header v0) without its size prefix."""
    r = _Reader(payload)
    correlation_id = r.int32()
    r.int32()  # ThrottleTimeMs
    dirs = []
    for _ in range(r.count()):
        error_code, path = r.int16(), r.string()
        current: set[tuple[str, int]] = set()
        future: set[tuple[str, int]] = set()
        for _ in range(r.count()):
            name = r.string()
            for _ in range(r.count()):
                partition = r.int32()
                r.int64(), r.int64()  # PartitionSize, OffsetLag
                (future if r.boolean() else current).add((name, partition))
        dirs.append(WireLogDir(error_code, path, frozenset(current), frozenset(future)))
    if not r.at_end():
        raise WireFormatError("DescribeLogDirs response has trailing bytes (not version 1?)")
    return WireLogDirs(correlation_id, tuple(dirs))


# --- ListOffsets v1: a leader's high watermark --------------------------------------------------------
# ListOffsetsRequest.json / ...Response.json (3.9; the same in 2.4): version 1 is non-flexible;
# request ReplicaId, Topics [Name, Partitions [PartitionIndex, Timestamp]]; response Topics [Name,
# Partitions [PartitionIndex, ErrorCode, Timestamp, Offset]] (ThrottleTimeMs from v2). Timestamp
# -1 (LATEST) asked by a client (ReplicaId -1) of the leader answers the high watermark
# (``Partition.fetchOffsetForTimestamp``: READ_UNCOMMITTED, v1's only isolation). Every release
# from 0.10.1 to 4.x answers v1 (KIP-896 removed v0 only).

LIST_OFFSETS_API_KEY = 2
LATEST_TIMESTAMP = -1
# EARLIEST (-2) answers the leader's log start offset (``Partition.fetchOffsetForTimestamp``):
# where a DeleteRecords moved it.
EARLIEST_TIMESTAMP = -2


@dataclass(frozen=True)
class WireOffsets:
    correlation_id: int
    offsets: Mapping[tuple[str, int], tuple[int, int]]  # (topic, partition) -> (error code, offset)


def encode_list_offsets(correlation_id: int, partitions: Mapping[str, Sequence[int]],
                        timestamp: int = LATEST_TIMESTAMP) -> bytes:
    """A size-prefixed ListOffsetsRequest v1 asking the latest (or, with ``EARLIEST_TIMESTAMP``,
    the earliest) offset of ``partitions``."""
    body = struct.pack(">ii", -1, len(partitions))
    for topic, numbers in sorted(partitions.items()):
        body += _string(topic) + struct.pack(">i", len(numbers))
        body += b"".join(struct.pack(">iq", p, timestamp) for p in sorted(numbers))
    return _request(LIST_OFFSETS_API_KEY, 1, correlation_id, body)


def decode_list_offsets_response(payload: bytes) -> WireOffsets:
    """A ListOffsetsResponse v1 without its size prefix."""
    r = _Reader(payload)
    correlation_id = r.int32()
    offsets: dict[tuple[str, int], tuple[int, int]] = {}
    for _ in range(r.count()):
        topic = r.string()
        for _ in range(r.count()):
            partition, error_code = r.int32(), r.int16()
            r.int64()  # timestamp
            offsets[(topic, partition)] = (error_code, r.int64())
    if not r.at_end():
        raise WireFormatError("ListOffsets response has trailing bytes (not version 1?)")
    return WireOffsets(correlation_id, offsets)


# --- IncrementalAlterConfigs v0 (KIP-339): a broker's or the cluster-wide default's dynamic config ---
# librdkafka refuses a ConfigResource with an empty name, which is how Kafka names the cluster-wide
# broker default (ConfigResource("", BROKER): /config/brokers/<default>). IncrementalAlterConfigsRequest.json
# / ...Response.json (2.4 and 3.9): version 0 is non-flexible; request Resources [ResourceType int8,
# ResourceName, Configs [Name, ConfigOperation int8 (SET 0, DELETE 1), Value nullable]], ValidateOnly;
# response ThrottleTimeMs, Responses [ErrorCode, ErrorMessage nullable, ResourceType, ResourceName].

INCREMENTAL_ALTER_CONFIGS_API_KEY = 44
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
_SET, _DELETE = 0, 1


def _nullable_string(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else _string(value)


def encode_incremental_alter_configs(correlation_id: int, resource_type: int, name: str,
                                     changes: Mapping[str, str | None]) -> bytes:
    """A size-prefixed IncrementalAlterConfigsRequest v0 of one resource; None deletes a key."""
    body = struct.pack(">i", 1) + struct.pack(">b", resource_type) + _string(name) + struct.pack(">i", len(changes))
    for key, value in sorted(changes.items()):
        body += _string(key) + struct.pack(">b", _DELETE if value is None else _SET) + _nullable_string(value)
    body += struct.pack(">?", False)  # validate_only
    return _request(INCREMENTAL_ALTER_CONFIGS_API_KEY, 0, correlation_id, body)


@dataclass(frozen=True)
class WireConfigAnswer:
    correlation_id: int
    results: tuple[tuple[int, str | None, int, str], ...]  # (error code, message, resource type, name)


def decode_incremental_alter_configs_response(payload: bytes) -> WireConfigAnswer:
    """An IncrementalAlterConfigsResponse v0 without its size prefix."""
    r = _Reader(payload)
    correlation_id = r.int32()
    r.int32()  # throttle_time_ms
    results = []
    for _ in range(r.count()):
        code, message = r.int16(), r.nullable_string()
        resource_type = r.int8()
        results.append((code, message, resource_type, r.string()))
    if not r.at_end():
        raise WireFormatError("IncrementalAlterConfigs response has trailing bytes (not version 0?)")
    return WireConfigAnswer(correlation_id, tuple(results))


# --- DescribeQuorum v0: what one KRaft voter says of the quorum --------------------------------------
# clients/src/main/resources/common/message/DescribeQuorumRequest.json / ...Response.json (3.6:
# versions 0-1, 3.9: 0-2, all flexible: request header v2, response header v1). A voter answers
# only while it is the leader (``KafkaRaftClient.handleDescribeQuorumRequest``: NOT_LEADER_OR_FOLLOWER
# otherwise, 3.6.2 line 1230), with its own id and epoch -- so asking each voter on its own who
# answers is asking which voters believe they lead. Controllers serve it on their controller
# listener (``ControllerApis``: DESCRIBE_QUORUM).

DESCRIBE_QUORUM_API_KEY = 55
METADATA_TOPIC = "__cluster_metadata"


def encode_describe_quorum(correlation_id: int) -> bytes:
    """A size-prefixed DescribeQuorumRequest v0 for ``__cluster_metadata-0``."""
    header = struct.pack(">hhi", DESCRIBE_QUORUM_API_KEY, 0, correlation_id) + _string(CLIENT_ID) + NO_TAGGED_FIELDS
    body = _uvarint(2) + _compact_string(METADATA_TOPIC) + _uvarint(2) + struct.pack(">i", 0) + NO_TAGGED_FIELDS
    body += NO_TAGGED_FIELDS + NO_TAGGED_FIELDS  # the topic's, the request's
    message = header + body
    return struct.pack(">i", len(message)) + message


@dataclass(frozen=True)
class WireQuorum:
    """A DescribeQuorum answer for ``__cluster_metadata-0``: an error (the top level's, else the
    partition's), and from a leader its id, epoch, high watermark and each voter's log end."""

    correlation_id: int
    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[tuple[int, int], ...]  # (replica id, log end offset)


def decode_describe_quorum_response(payload: bytes) -> WireQuorum:
    """A DescribeQuorumResponse v0 (response header v1) without its size prefix."""
    r = _CompactReader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()
    error_code = r.int16()
    found: WireQuorum | None = None
    for _ in range(max(r.uvarint() - 1, 0)):
        topic = r.compact_nullable_string()
        for _ in range(max(r.uvarint() - 1, 0)):
            index, partition_error = r.int32(), r.int16()
            leader_id, leader_epoch, high_watermark = r.int32(), r.int32(), r.int64()
            voters = _replica_states(r)
            _replica_states(r)  # observers
            r.skip_tagged_fields()
            if topic == METADATA_TOPIC and index == 0:
                found = WireQuorum(correlation_id, error_code or partition_error, leader_id, leader_epoch,
                                   high_watermark, voters)
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    if not r.at_end():
        raise WireFormatError("DescribeQuorum response has trailing bytes (not version 0?)")
    if found is None:
        return WireQuorum(correlation_id, error_code, -1, -1, -1, ())
    return found


def _replica_states(r: _CompactReader) -> tuple[tuple[int, int], ...]:
    states = []
    for _ in range(max(r.uvarint() - 1, 0)):
        states.append((r.int32(), r.int64()))
        r.skip_tagged_fields()
    return tuple(states)


# --- DeleteRecords v1: move partitions' log start offsets (kafka-delete-records.sh) --------------------
# clients/src/main/resources/common/message/DeleteRecordsRequest.json / ...Response.json: 2.4.0 has
# versions 0-1 ("Version 1 is the same as version 0"), 3.9 0-2 (flexible from 2); version 1 is the
# newest 2.4.0 answers and Kafka 4.0 keeps it (KIP-896 drops version 0 only). Non-flexible: request
# header v1, response header v0. Request Topics [Name, Partitions [PartitionIndex int32, Offset
# int64]], TimeoutMs int32; response ThrottleTimeMs int32, Topics [Name, Partitions
# [PartitionIndex int32, LowWatermark int64, ErrorCode int16]]. Offset -1 (DeleteRecordsRequest.
# HIGH_WATERMARK) is the partition's high watermark (``Partition.deleteRecordsOnLeader``). Only the
# leader takes it (NOT_LEADER_OR_FOLLOWER elsewhere): the AdminClient sends each leader its own
# partitions (``KafkaAdminClient.deleteRecords``).

DELETE_RECORDS_API_KEY = 21
DELETE_RECORDS_VERSION = 1
HIGH_WATERMARK_OFFSET = -1  # DeleteRecordsRequest.HIGH_WATERMARK


def encode_delete_records(correlation_id: int, offsets: Mapping[str, Mapping[int, int]], timeout_ms: int) -> bytes:
    """A size-prefixed DeleteRecordsRequest v1: topic -> partition -> the offset below which to delete
    (-1: the high watermark), in name and partition order."""
    body = struct.pack(">i", len(offsets))
    for topic, partitions in sorted(offsets.items()):
        body += _string(topic) + struct.pack(">i", len(partitions))
        body += b"".join(struct.pack(">iq", p, offset) for p, offset in sorted(partitions.items()))
    body += struct.pack(">i", timeout_ms)
    return _request(DELETE_RECORDS_API_KEY, DELETE_RECORDS_VERSION, correlation_id, body)


@dataclass(frozen=True)
class WireDeleted:
    """A DeleteRecords answer: (topic, partition) -> (error code, low watermark; -1 with an error)."""

    correlation_id: int
    partitions: Mapping[tuple[str, int], tuple[int, int]]


def decode_delete_records_response(payload: bytes) -> WireDeleted:
    """A DeleteRecordsResponse v1 (response header v0) without its size prefix."""
    r = _Reader(payload)
    correlation_id = r.int32()
    r.int32()  # ThrottleTimeMs
    partitions: dict[tuple[str, int], tuple[int, int]] = {}
    for _ in range(r.count()):
        topic = r.string()
        for _ in range(r.count()):
            index, low_watermark, error_code = r.int32(), r.int64(), r.int16()
            partitions[(topic, index)] = (error_code, low_watermark)
    if not r.at_end():
        raise WireFormatError("DeleteRecords response has trailing bytes (not version 1?)")
    return WireDeleted(correlation_id, partitions)

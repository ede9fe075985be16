"""Metadata v7 request/response bytes (MetadataRequest.json / MetadataResponse.json, Kafka 3.9)."""

from __future__ import annotations

import struct

import pytest

from kafka_chaos.harness.kafka_wire import (
    CLIENT_ID,
    WireFormatError,
    WireAnswer,
    WireLogDir,
    WireLogDirs,
    WirePartition,
    decode_describe_log_dirs_response,
    decode_find_coordinator_response,
    decode_init_producer_id_response,
    WireProducerId,
    WireQuorum,
    decode_describe_quorum_response,
    encode_describe_quorum,
    decode_metadata_response,
    encode_describe_log_dirs,
    encode_find_coordinator,
    encode_init_producer_id,
    encode_metadata_request,
)


def _s(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(value)) + value.encode()


def _ints(values: list[int]) -> bytes:
    return struct.pack(">i", len(values)) + b"".join(struct.pack(">i", v) for v in values)


def _response(correlation_id: int = 7) -> bytes:
    """A v7 response as a 3.9 broker writes it: two brokers, one topic, one leaderless partition."""
    brokers = struct.pack(">i", 2) + b"".join(
        struct.pack(">i", node) + _s("127.0.0.1") + struct.pack(">i", port) + _s(None)
        for node, port in ((1, 9092), (2, 9093)))
    partitions = struct.pack(">i", 2) + (
        struct.pack(">hiii", 0, 0, 2, 3) + _ints([1, 2]) + _ints([2]) + _ints([1])
    ) + (
        struct.pack(">hiii", 5, 1, -1, 4) + _ints([1]) + _ints([1]) + _ints([1])  # LEADER_NOT_AVAILABLE
    )
    topics = struct.pack(">i", 2) + (
        struct.pack(">h", 0) + _s("orders") + struct.pack(">?", False) + partitions
    ) + (
        struct.pack(">h", 3) + _s("missing") + struct.pack(">?", False) + struct.pack(">i", 0)
    )
    return (struct.pack(">ii", correlation_id, 0) + brokers + _s("Xq1ClusterId") + struct.pack(">i", 2)
            + topics)


def test_request_for_named_topics_never_auto_creates() -> None:
    frame = encode_metadata_request(42, ["orders", "t"])
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    expected = (struct.pack(">hhi", 3, 7, 42) + _s(CLIENT_ID)
                + struct.pack(">i", 2) + _s("orders") + _s("t") + b"\x00")
    assert frame[4:] == expected


def test_request_for_all_topics_uses_a_null_array() -> None:
    frame = encode_metadata_request(1, None)
    assert frame[4:] == struct.pack(">hhi", 3, 7, 1) + _s(CLIENT_ID) + struct.pack(">i", -1) + b"\x00"


def test_response_decodes_brokers_controller_and_partitions() -> None:
    metadata = decode_metadata_response(_response())
    assert metadata.correlation_id == 7
    assert metadata.brokers == {1: ("127.0.0.1", 9092), 2: ("127.0.0.1", 9093)}
    assert (metadata.cluster_id, metadata.controller_id) == ("Xq1ClusterId", 2)
    orders, missing = metadata.topics
    assert (orders.name, orders.error_code, orders.is_internal) == ("orders", 0, False)
    assert orders.partitions[0] == WirePartition(error_code=0, partition=0, leader=2, leader_epoch=3,
                                                 replicas=(1, 2), isr=(2,), offline_replicas=(1,))
    assert (orders.partitions[1].error_code, orders.partitions[1].leader) == (5, -1)
    assert (missing.name, missing.error_code, missing.partitions) == ("missing", 3, ())


def test_truncated_response_is_refused() -> None:
    with pytest.raises(WireFormatError, match="truncated"):
        decode_metadata_response(_response()[:-3])


def test_trailing_bytes_mean_another_version() -> None:
    with pytest.raises(WireFormatError, match="trailing"):
        decode_metadata_response(_response() + b"\x00\x00\x00\x00")


# --- AlterPartitionReassignments v0 --------------------------------------------------------------

def test_a_reassignment_request_is_laid_out_as_version_0_says() -> None:
    from kafka_chaos.harness.kafka_wire import encode_alter_partition_reassignments

    frame = encode_alter_partition_reassignments(7, 30000, {"t": {0: [2, 3], 1: None}})
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    client = b"kafka-chaos-observer"
    header = struct.pack(">hhi", 45, 0, 7) + struct.pack(">h", len(client)) + client + b"\x00"
    body = (struct.pack(">i", 30000) + b"\x02" + b"\x02t" + b"\x03"
            + struct.pack(">i", 0) + b"\x03" + struct.pack(">ii", 2, 3) + b"\x00"
            + struct.pack(">i", 1) + b"\x00" + b"\x00"  # replicas null: cancel
            + b"\x00" + b"\x00")
    assert frame[4:] == header + body


def test_a_reassignment_answer_names_each_partition_error() -> None:
    from kafka_chaos.harness.kafka_wire import decode_alter_partition_reassignments_response

    payload = (struct.pack(">i", 7) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00"  # no top-level message
               + b"\x02" + b"\x02t" + b"\x03"
               + struct.pack(">ih", 0, 0) + b"\x00" + b"\x00"
               + struct.pack(">ih", 1, 85) + b"\x05gone" + b"\x00"
               + b"\x00" + b"\x00")
    answer = decode_alter_partition_reassignments_response(payload)
    assert (answer.correlation_id, answer.error_code, answer.error_message) == (7, 0, None)
    assert answer.partitions == {("t", 0): (0, None), ("t", 1): (85, "gone")}


def test_find_coordinator_asks_version_1_for_a_group() -> None:
    frame = encode_find_coordinator(9, "g")
    assert struct.unpack(">i", frame[:4]) == (len(frame) - 4,)
    assert frame[4:] == struct.pack(">hhi", 10, 1, 9) + _s(CLIENT_ID) + _s("g") + b"\x00"  # KeyType 0: group


@pytest.mark.parametrize(("error_code", "node_id", "message"), [
    (0, 3, None),  # the coordinator
    (15, -1, "The coordinator is not available."),  # COORDINATOR_NOT_AVAILABLE: being created
])
def test_find_coordinator_answer_gives_error_and_node(error_code: int, node_id: int, message: str | None) -> None:
    payload = (struct.pack(">iih", 9, 0, error_code) + _s(message) + struct.pack(">i", node_id)
               + _s("127.0.0.1" if node_id >= 0 else "") + struct.pack(">i", 9092 if node_id >= 0 else -1))
    assert decode_find_coordinator_response(payload) == WireAnswer(9, error_code, node_id)


def test_init_producer_id_asks_version_0_without_a_transactional_id() -> None:
    frame = encode_init_producer_id(5, 60_000)
    assert frame[4:] == struct.pack(">hhi", 22, 0, 5) + _s(CLIENT_ID) + _s(None) + struct.pack(">i", 60_000)


@pytest.mark.parametrize(("error_code", "producer_id", "epoch"), [
    (0, 2001, 0),
    (0, 7, 3),
    (14, -1, -1),  # COORDINATOR_LOAD_IN_PROGRESS: the broker waits for a block of ids
])
def test_init_producer_id_answer_gives_error_id_and_epoch(error_code: int, producer_id: int, epoch: int) -> None:
    payload = struct.pack(">iihqh", 5, 0, error_code, producer_id, epoch)
    assert decode_init_producer_id_response(payload) == WireProducerId(5, error_code, producer_id, epoch)


def test_init_producer_id_answer_of_another_version_is_refused() -> None:
    with pytest.raises(WireFormatError):
        decode_init_producer_id_response(struct.pack(">iihqh", 5, 0, 0, 1, 0) + b"\x00")


def test_describe_log_dirs_asks_version_1_for_every_topic() -> None:
    frame = encode_describe_log_dirs(4)
    assert struct.unpack(">i", frame[:4]) == (len(frame) - 4,)
    assert frame[4:] == struct.pack(">hhi", 35, 1, 4) + _s(CLIENT_ID) + struct.pack(">i", -1)  # Topics null


def _log_dirs_response(*dirs: tuple[int, str, list[tuple[str, list[tuple[int, bool]]]]]) -> bytes:
    """A v1 answer as ``ReplicaManager.describeLogDirs`` writes it (sizes and lags arbitrary)."""
    body = struct.pack(">ii", 4, 0) + struct.pack(">i", len(dirs))
    for error_code, path, topics in dirs:
        body += struct.pack(">h", error_code) + _s(path) + struct.pack(">i", len(topics))
        for name, partitions in topics:
            body += _s(name) + struct.pack(">i", len(partitions))
            for index, future in partitions:
                body += struct.pack(">iqq?", index, 1234, 0, future)
    return body


def test_describe_log_dirs_answer_separates_current_future_and_offline_directories() -> None:
    payload = _log_dirs_response(
        (0, "/data/a", [("t", [(0, False), (1, False), (1, True)]), ("__consumer_offsets", [(7, False)])]),
        (56, "/data/b", []))  # KAFKA_STORAGE_ERROR: an offline directory lists nothing
    assert decode_describe_log_dirs_response(payload) == WireLogDirs(4, (
        WireLogDir(0, "/data/a", frozenset({("t", 0), ("t", 1), ("__consumer_offsets", 7)}), frozenset({("t", 1)})),
        WireLogDir(56, "/data/b", frozenset(), frozenset())))


@pytest.mark.parametrize("cut", [3, 11, -1])
def test_describe_log_dirs_answer_cut_short_is_refused(cut: int) -> None:
    payload = _log_dirs_response((0, "/data/a", [("t", [(0, False)])]))
    with pytest.raises(WireFormatError, match="truncated"):
        decode_describe_log_dirs_response(payload[:cut])


def test_describe_log_dirs_answer_of_another_version_is_refused() -> None:
    with pytest.raises(WireFormatError, match="version 1"):
        decode_describe_log_dirs_response(_log_dirs_response((0, "/d", [])) + b"\x00")


def test_list_offsets_asks_version_1_for_the_latest_offset_of_each_partition_as_a_client() -> None:
    from kafka_chaos.harness.kafka_wire import encode_list_offsets

    frame = encode_list_offsets(9, {"t": [1, 0]})
    assert struct.unpack(">i", frame[:4]) == (len(frame) - 4,)
    assert frame[4:] == (struct.pack(">hhi", 2, 1, 9) + _s(CLIENT_ID) + struct.pack(">ii", -1, 1) + _s("t")
                         + struct.pack(">i", 2) + struct.pack(">iq", 0, -1) + struct.pack(">iq", 1, -1))


def test_list_offsets_answers_each_partitions_error_and_offset() -> None:
    from kafka_chaos.harness.kafka_wire import decode_list_offsets_response

    body = struct.pack(">ii", 9, 1) + _s("t") + struct.pack(">i", 2) + struct.pack(">ihqq", 0, 0, -1, 4711) \
        + struct.pack(">ihqq", 1, 6, -1, -1)
    answer = decode_list_offsets_response(body)
    assert (answer.correlation_id, dict(answer.offsets)) == (9, {("t", 0): (0, 4711), ("t", 1): (6, -1)})
    with pytest.raises(WireFormatError):
        decode_list_offsets_response(body + b"\x00")


def test_incremental_alter_configs_sets_and_deletes_the_keys_of_one_resource() -> None:
    from kafka_chaos.harness.kafka_wire import encode_incremental_alter_configs

    frame = encode_incremental_alter_configs(5, 4, "", {"b": None, "a": "1"})
    assert frame[4:] == (struct.pack(">hhi", 44, 0, 5) + _s(CLIENT_ID) + struct.pack(">ib", 1, 4) + _s("")
                         + struct.pack(">i", 2) + _s("a") + struct.pack(">b", 0) + _s("1")
                         + _s("b") + struct.pack(">bh", 1, -1) + struct.pack(">?", False))


def test_incremental_alter_configs_answers_each_resources_error() -> None:
    from kafka_chaos.harness.kafka_wire import decode_incremental_alter_configs_response

    body = struct.pack(">iii", 5, 0, 1) + struct.pack(">h", 42) + _s("bad") + struct.pack(">b", 4) + _s("")
    assert decode_incremental_alter_configs_response(body).results == ((42, "bad", 4, ""),)
    with pytest.raises(WireFormatError):
        decode_incremental_alter_configs_response(body + b"\x00")


def _compact(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def test_describe_quorum_asks_version_0_for_the_metadata_partition() -> None:
    frame = encode_describe_quorum(3)
    assert struct.unpack(">i", frame[:4]) == (len(frame) - 4,)
    assert frame[4:] == (struct.pack(">hhi", 55, 0, 3) + _s(CLIENT_ID) + b"\x00"
                         + b"\x02" + _compact("__cluster_metadata") + b"\x02" + struct.pack(">i", 0) + b"\x00"
                         + b"\x00" + b"\x00")


def _quorum_answer(error: int, partition_error: int, leader: int, epoch: int, voters: list[tuple[int, int]],
                   topic: str = "__cluster_metadata") -> bytes:
    replicas = bytes([len(voters) + 1]) + b"".join(struct.pack(">iq", v, leo) + b"\x00" for v, leo in voters)
    partition = struct.pack(">ihiiq", 0, partition_error, leader, epoch, 99) + replicas + b"\x01" + b"\x00"
    return (struct.pack(">i", 8) + b"\x00" + struct.pack(">h", error)
            + b"\x02" + _compact(topic) + b"\x02" + partition + b"\x00" + b"\x00")


@pytest.mark.parametrize(("payload", "expected"), [
    (_quorum_answer(0, 0, 3001, 7, [(3000, 99), (3001, 99)]), WireQuorum(8, 0, 3001, 7, 99, ((3000, 99), (3001, 99)))),
    (_quorum_answer(0, 6, 0, 0, []), WireQuorum(8, 6, 0, 0, 99, ())),  # not the leader
    (_quorum_answer(0, 0, 3001, 7, [], topic="other"), WireQuorum(8, 0, -1, -1, -1, ())),
])
def test_describe_quorum_answer_gives_the_leader_and_epoch_or_the_error(payload: bytes, expected: WireQuorum) -> None:
    assert decode_describe_quorum_response(payload) == expected


def test_describe_quorum_answer_with_trailing_bytes_is_refused() -> None:
    with pytest.raises(WireFormatError):
        decode_describe_quorum_response(_quorum_answer(0, 0, 1, 1, []) + b"\x00")

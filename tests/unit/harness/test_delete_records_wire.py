"""DeleteRecords v1 bytes, laid out by hand from the Kafka schema (2.4.0's
``clients/src/main/resources/common/message/DeleteRecordsRequest.json`` / ``...Response.json``,
versions 0-1, "Version 1 is the same as version 0", non-flexible): request header v1
(ApiKey int16 21, ApiVersion int16 1, CorrelationId int32, ClientId string), then Topics
[Name string, Partitions [PartitionIndex int32, Offset int64]], TimeoutMs int32; response header
v0 (CorrelationId), then ThrottleTimeMs int32, Topics [Name, Partitions [PartitionIndex int32,
LowWatermark int64, ErrorCode int16]]."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.kafka_wire import (
    EARLIEST_TIMESTAMP,
    WireDeleted,
    WireFormatError,
    decode_delete_records_response,
    encode_delete_records,
    encode_list_offsets,
)

CLIENT = "0014" + "kafka-chaos-observer".encode().hex()  # ClientId: int16 length 20, then its bytes


def _hex(*parts: str) -> bytes:
    return bytes.fromhex("".join(p.replace(" ", "") for p in parts))


REQUESTS = [
    # one topic, the high watermark (-1) of partition 0 and offset 150 of partition 2, 10 s
    ({"t": {2: 150, 0: -1}}, 10_000, 7,
     _hex("0015 0001 00000007", CLIENT,
          "00000001", "0001 74",  # Topics: 1; Name "t"
          "00000002",  # Partitions: 2, in partition order
          "00000000 ffffffffffffffff",
          "00000002 0000000000000096",
          "00002710")),  # TimeoutMs 10000
    # two topics in name order, a 64-bit offset
    ({"b": {1: 2**33}, "a": {0: 0}}, 500, 258,
     _hex("0015 0001 00000102", CLIENT,
          "00000002",
          "0001 61", "00000001", "00000000 0000000000000000",
          "0001 62", "00000001", "00000001 0000000200000000",
          "000001f4")),
]


@pytest.mark.parametrize(("offsets", "timeout_ms", "correlation_id", "body"), REQUESTS)
def test_a_delete_records_request_is_laid_out_as_version_1_says(
        offsets: dict[str, dict[int, int]], timeout_ms: int, correlation_id: int, body: bytes) -> None:
    encoded = encode_delete_records(correlation_id, offsets, timeout_ms)
    assert encoded[:4] == len(body).to_bytes(4, "big") and encoded[4:] == body


ANSWER = _hex("00000007", "00000000",  # CorrelationId 7, ThrottleTimeMs 0
              "00000001", "0001 74", "00000003",
              "00000000 0000000000000078 0000",  # partition 0: low watermark 120
              "00000001 ffffffffffffffff 0006",  # partition 1: NOT_LEADER_OR_FOLLOWER, -1
              "00000002 0000000000000064 0007")  # partition 2: REQUEST_TIMED_OUT, low watermark 100


def test_a_delete_records_answer_gives_each_partitions_error_and_low_watermark() -> None:
    assert decode_delete_records_response(ANSWER) == WireDeleted(
        7, {("t", 0): (0, 120), ("t", 1): (6, -1), ("t", 2): (7, 100)})


def test_an_empty_delete_records_answer_has_no_partitions() -> None:
    assert decode_delete_records_response(_hex("00000009 00000000 00000000")) == WireDeleted(9, {})


@pytest.mark.parametrize("cut", [3, 9, 20, len(ANSWER) - 1])
def test_a_delete_records_answer_cut_short_is_refused(cut: int) -> None:
    with pytest.raises(WireFormatError, match="truncated"):
        decode_delete_records_response(ANSWER[:cut])


def test_a_delete_records_answer_of_another_version_is_refused() -> None:
    """Bytes after the last partition mean another version (2 is flexible: tagged fields)."""
    with pytest.raises(WireFormatError, match="trailing bytes"):
        decode_delete_records_response(ANSWER + b"\x00")


def test_list_offsets_asks_the_earliest_offset_the_log_start_after_a_timed_out_deletion() -> None:
    """ListOffsets v1 (2.4.0 and 3.9 alike): ReplicaId -1, Topics [Name, Partitions [PartitionIndex,
    Timestamp]]; Timestamp -2 (EARLIEST) answers the leader's log start offset."""
    assert encode_list_offsets(5, {"t": [1]}, EARLIEST_TIMESTAMP)[4:] == _hex(
        "0002 0001 00000005", CLIENT, "ffffffff", "00000001", "0001 74", "00000001", "00000001 fffffffffffffffe")

"""harness.replica_logs: segment files read as kafka-dump-log reads them, and the high-watermark
checkpoint (tables over hand-built bytes, and files in a temporary directory)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafka_chaos.harness.replica_logs import (
    Batch,
    ReplicaLogError,
    batches_in,
    parse_high_watermarks,
    read_log,
    read_replica,
    segment_files,
)

V2 = struct.Struct(">qiibIhiqqqhii")  # DefaultRecordBatch's header, 61 bytes


def v2_batch(base: int, count: int, payload: bytes = b"r", epoch: int = 0) -> bytes:
    body = payload * count
    return V2.pack(base, V2.size - 12 + len(body), epoch, 2, 0, 0, count - 1, 0, 0, 1000, 0, 0, count) + body


def legacy_entry(offset: int, magic: int = 1, payload: bytes = b"m") -> bytes:
    rest = struct.pack(">Ib", 7, magic) + b"\x00" + payload  # crc, magic, attributes, ...
    return struct.pack(">qi", offset, len(rest)) + rest


def offsets(data: bytes) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in batches_in(data)]


@pytest.mark.parametrize("data, expected", [
    (b"", []),
    (v2_batch(0, 1), [(0, 0)]),
    (v2_batch(0, 3) + v2_batch(3, 2), [(0, 2), (3, 4)]),
    (v2_batch(10, 1) + v2_batch(11, 1)[:40], [(10, 10)]),  # a batch still being written
    (v2_batch(10, 1) + bytes(100), [(10, 10)]),  # a preallocated segment's zeros
    (legacy_entry(5) + legacy_entry(6, magic=0), [(5, 5), (6, 6)]),  # magic 0 and 1: the last offset
    (legacy_entry(7) + v2_batch(8, 2), [(7, 7), (8, 9)]),  # a log upgraded to magic 2
], ids=["empty", "one", "two", "incomplete tail", "zeros", "legacy", "mixed"])
def test_batches_and_their_offsets(data: bytes, expected: list[tuple[int, int]]) -> None:
    assert offsets(data) == expected


def test_each_batch_keeps_its_bytes_header_included() -> None:
    first, second = v2_batch(0, 2, b"a"), v2_batch(2, 1, b"b")
    assert [b.data for b in batches_in(first + second)] == [first, second]


def test_a_v2_batch_shorter_than_its_header_is_not_a_log() -> None:
    broken = struct.pack(">qiib", 0, 20, 0, 2) + bytes(20)
    with pytest.raises(ReplicaLogError, match="magic 2 batch of 32 bytes"):
        list(batches_in(broken))


@pytest.mark.parametrize("text, expected", [
    ("0\n0\n", {}),
    ("0\n2\nt 0 15\nt-x 12 0\n", {("t", 0): 15, ("t-x", 12): 0}),
])
def test_high_watermark_checkpoint(text: str, expected: dict[tuple[str, int], int]) -> None:
    assert parse_high_watermarks(text) == expected


@pytest.mark.parametrize("text", ["", "1\n0\n", "0\nx\n", "0\n1\nt 0\n", "0\n1\nt p 1\n"])
def test_a_bad_checkpoint_is_one_error(text: str) -> None:
    with pytest.raises(ReplicaLogError):
        parse_high_watermarks(text)


def test_segments_are_read_in_base_offset_order_and_only_log_files(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000010.log").write_bytes(v2_batch(10, 1))
    (part / "00000000000000000002.log").write_bytes(v2_batch(2, 8))
    (part / "00000000000000000000.log.deleted").write_bytes(v2_batch(0, 2))
    (part / "00000000000000000002.index").write_bytes(bytes(8))
    assert [p.name for p in segment_files(part)] == ["00000000000000000002.log", "00000000000000000010.log"]
    assert [(b.base_offset, b.last_offset) for b in read_log(part)] == [(2, 9), (10, 10)]


def test_a_replica_is_found_in_whichever_log_directory_holds_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "u-1").mkdir(parents=True)
    (b / "t-0").mkdir(parents=True)
    (b / "t-0" / "00000000000000000000.log").write_bytes(v2_batch(0, 1))
    (b / "replication-offset-checkpoint").write_text("0\n1\nt 0 1\n")
    replica = read_replica([a, b], "t", 0)
    assert replica is not None and replica.high_watermark == 1
    assert replica.batches == [Batch(0, 0, v2_batch(0, 1))]
    assert read_replica([a], "t", 0) is None
    no_checkpoint = read_replica([a], "u", 1)
    assert no_checkpoint is not None and no_checkpoint.high_watermark is None and no_checkpoint.batches == []


def test_a_directory_this_process_may_not_enter_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Path) -> bool:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "is_dir", refuse)
    with pytest.raises(ReplicaLogError, match="cannot reach .*t-0: Permission denied"):
        read_replica([tmp_path], "t", 0)

"""A replica's log read from its segment files, as ``kafka-dump-log`` reads them, and the high
watermarks its broker last checkpointed.

Why files and not Fetch: a follower answers a consumer's Fetch only from Kafka 2.4 on with a rack
id (``ReplicaManager.fetchMessages``: ``fetchOnlyFromLeader``), and only up to its own high
watermark; the files are what the broker holds, on every release. A partition's log is the
directory ``<topic>-<partition>`` in one of the broker's ``log.dirs``; its segments are the
``<base offset>.log`` files (``LogFileUtils.logFile``), each a sequence of batches:

* magic 2 (``DefaultRecordBatch``): baseOffset int64, batchLength int32, partitionLeaderEpoch
  int32, magic int8 at byte 16, crc, attributes, lastOffsetDelta int32 at byte 23, ...;
* magic 0 and 1 (``LegacyRecord`` in a ``AbstractLegacyRecordBatch``): offset int64 (the last
  offset of a compressed wrapper), size int32, crc, magic int8 at byte 16, ...

Both are ``12 + length`` bytes long. A follower appends the leader's batches as it fetched them
(``UnifiedLog.appendAsFollower``: no offsets or epochs assigned), so two replicas' batches below
the high watermark are byte for byte the same. The tail of the active segment may be a batch
still being written: reading stops at the first incomplete one.

``replication-offset-checkpoint`` (``ReplicaManager.checkpointHighWatermarks``, every
``replica.high.watermark.checkpoint.interval.ms``, 5 s by default) holds each partition's high
watermark as that broker last wrote it: version line ``0``, a count, then ``topic partition
offset`` lines (``CheckpointFile``'s format).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.common.errors import HarnessError

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
LOG_OVERHEAD = 12  # Records.LOG_OVERHEAD: offset and length
MAGIC_AT = 16
LAST_OFFSET_DELTA_AT = 23
V2_HEADER = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
LOG_SUFFIX = ".log"


class ReplicaLogError(HarnessError):
    """A replica's files could not be read or are not a Kafka log (one line)."""


@dataclass(frozen=True)
class Batch:
    """One batch of a segment: its offsets and its bytes (header included)."""

    base_offset: int
    last_offset: int
    data: bytes


def batches_in(data: bytes) -> Iterator[Batch]:
    """The complete batches of one segment's bytes, in order; stops at an incomplete tail (a batch
    being appended, or a preallocated segment's zeros)."""
    pos, end = 0, len(data)
    while pos + LOG_OVERHEAD <= end:
        offset, length = _OFFSET_AND_LENGTH.unpack_from(data, pos)
        size = LOG_OVERHEAD + length
        if length <= 0 or pos + size > end or pos + MAGIC_AT >= end:
            return
        magic = data[pos + MAGIC_AT]
        if magic >= 2:
            if size < V2_HEADER:
                raise ReplicaLogError(f"a magic {magic} batch of {size} bytes at position {pos}")
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(data, pos + LAST_OFFSET_DELTA_AT)
            base, last = offset, offset + delta
        else:  # a legacy message set entry names its last offset only
            base, last = offset, offset
        yield Batch(base, last, data[pos:pos + size])
        pos += size


def segment_files(partition_dir: Path) -> list[Path]:
    """The ``<base offset>.log`` segments of a partition's directory, by base offset (``.deleted``,
    ``.cleaned`` and ``.swap`` files are not the log)."""
    try:
        found = [p for p in partition_dir.iterdir() if p.name.endswith(LOG_SUFFIX) and p.stem.isdigit()]
    except OSError as exc:
        raise ReplicaLogError(f"cannot list {partition_dir}: {exc.strerror or exc}") from exc
    return sorted(found, key=lambda p: int(p.stem))


def read_log(partition_dir: Path) -> list[Batch]:
    """Every complete batch of the partition's log, in offset order. A segment deleted while it is
    read (retention, a truncation) is an error: the caller asks again later."""
    batches: list[Batch] = []
    for segment in segment_files(partition_dir):
        try:
            data = segment.read_bytes()
        except OSError as exc:
            raise ReplicaLogError(f"cannot read {segment}: {exc.strerror or exc}") from exc
        batches.extend(batches_in(data))
    return batches


def parse_high_watermarks(text: str) -> dict[tuple[str, int], int]:
    """``replication-offset-checkpoint``'s entries (``OffsetCheckpointFile.Formatter``)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or lines[0].strip() != "0" or not lines[1].strip().isdigit():
        raise ReplicaLogError("not a version 0 offset checkpoint")
    entries: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        fields = line.split()
        if len(fields) != 3 or not fields[1].isdigit() or not fields[2].lstrip("-").isdigit():
            raise ReplicaLogError(f"bad checkpoint entry {line!r}")
        entries[(fields[0], int(fields[1]))] = int(fields[2])
    return entries


def high_watermarks(log_dir: Path) -> dict[tuple[str, int], int]:
    """The high watermarks the broker last checkpointed in ``log_dir``; none before its first
    checkpoint."""
    path = log_dir / HIGH_WATERMARK_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ReplicaLogError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_high_watermarks(text)


@dataclass(frozen=True)
class ReplicaLog:
    """A replica's batches and the high watermark its broker last checkpointed for it (None when
    it has not yet)."""

    batches: list[Batch]
    high_watermark: int | None


def read_replica(log_dirs: list[Path], topic: str, partition: int) -> ReplicaLog | None:
    """The replica of ``topic``-``partition`` in whichever of a broker's ``log_dirs`` holds it;
    None when none does."""
    for log_dir in log_dirs:
        directory = log_dir / f"{topic}-{partition}"
        try:
            found = directory.is_dir()
        except OSError as exc:  # another user's container root, without root
            raise ReplicaLogError(f"cannot reach {directory}: {exc.strerror or exc}") from exc
        if found:
            watermarks: Mapping[tuple[str, int], int] = high_watermarks(log_dir)
            return ReplicaLog(read_log(directory), watermarks.get((topic, partition)))
    return None

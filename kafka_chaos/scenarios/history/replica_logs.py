"""What the in-sync replicas of each partition held in their logs when a step settled, summed up
so that two replicas' logs compare without storing them.

The compared range of a partition is ``[low, high)``: ``low`` the largest log start among its
replicas (retention runs on each replica by itself) as their files show it — the first batch each
holds: a log start moved by DeleteRecords (``delete_records``) or retention leaves the batches
below it on disk, alike on every replica, until each broker's retention thread deletes their
segments whole, oldest first (``Log.deleteOldSegments``), so whatever is left is a suffix of the
same log — ``high`` the smallest high watermark their
brokers last checkpointed (every offset below it was committed: each in-sync replica must hold it,
the same as the leader). A replica's batches in that range are cut into blocks of
:data:`BLOCK_OFFSETS` offsets by base offset, and each block summed up as a digest of its batches'
offsets and bytes: equal digests, equal logs; the first block that differs says where two logs
part.

Recorded in ``history.jsonl`` (version 8) so the ``replica_logs_agree`` check
(:mod:`scenarios.checks.replica_logs`) is a pure function of the record. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import struct
from itertools import groupby
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from kafka_chaos.harness.replica_logs import Batch

BLOCK_OFFSETS = 1024
_OFFSETS = struct.Struct(">qq")


@dataclass(frozen=True)
class LogBlock:
    """The batches of one replica whose base offset is in ``[start, start + BLOCK_OFFSETS)``."""

    start: int
    batches: int
    first_offset: int
    last_offset: int
    digest: str

    def to_list(self) -> list[Any]:
        return [self.start, self.batches, self.first_offset, self.last_offset, self.digest]

    @classmethod
    def from_list(cls, v: list[Any]) -> LogBlock:
        return cls(int(v[0]), int(v[1]), int(v[2]), int(v[3]), str(v[4]))


# One replica's blocks in the compared range, or why its log could not be read.
ReplicaBlocks = Union[tuple[LogBlock, ...], str]


@dataclass(frozen=True)
class PartitionLogs:
    """The in-sync replicas' logs of one partition over ``[low, high)``; ``leader`` is the one
    the others are compared with."""

    leader: int
    low: int
    high: int
    replicas: Mapping[int, ReplicaBlocks]

    def to_dict(self) -> dict[str, Any]:
        return {"leader": self.leader, "low": self.low, "high": self.high,
                "replicas": {str(b): r if isinstance(r, str) else [x.to_list() for x in r]
                             for b, r in sorted(self.replicas.items())}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PartitionLogs:
        return cls(int(d["leader"]), int(d["low"]), int(d["high"]),
                   {int(b): r if isinstance(r, str) else tuple(LogBlock.from_list(x) for x in r)
                    for b, r in d["replicas"].items()})


def compared_range(starts: Iterable[int], high_watermarks: Iterable[int]) -> tuple[int, int]:
    """``[low, high)``: from the latest log start to the lowest checkpointed high watermark."""
    return max(starts, default=0), min(high_watermarks, default=0)


def _block_of(batch: Batch) -> int:
    return batch.base_offset - batch.base_offset % BLOCK_OFFSETS


def log_blocks(batches: Iterable[Batch], low: int, high: int) -> tuple[LogBlock, ...]:
    """The blocks of the batches wholly inside ``[low, high)``."""
    inside = (b for b in batches if low <= b.base_offset and b.last_offset < high)
    blocks = []
    for start, group in groupby(inside, key=_block_of):
        members = list(group)
        digest = hashlib.blake2b(digest_size=8)
        for batch in members:
            digest.update(_OFFSETS.pack(batch.base_offset, batch.last_offset))
            digest.update(batch.data)
        blocks.append(LogBlock(start, len(members), members[0].base_offset, members[-1].last_offset,
                               digest.hexdigest()))
    return tuple(blocks)


def logs_to_json(logs: Mapping[str, PartitionLogs]) -> dict[str, Any]:
    return {k: v.to_dict() for k, v in sorted(logs.items())}


def logs_from_json(d: Mapping[str, Any]) -> dict[str, PartitionLogs]:
    return {str(k): PartitionLogs.from_dict(v) for k, v in d.items()}

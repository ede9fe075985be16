"""What each broker held on disk when a step settled: the partitions of the scenario's topics it
has a current log of (DescribeLogDirs, :func:`harness.metadata.describe_log_dirs`), and which of
its log directories were offline.

Recorded in ``history.jsonl`` (version 7) so the ``replicas_on_disk`` check
(:mod:`scenarios.checks.disk`) is a pure function of the record. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Union

from kafka_chaos.harness.kafka_wire import WireLogDirs

Replica = tuple[str, int]


@dataclass(frozen=True)
class DiskReplicas:
    """One broker's logs of the watched topics (current logs only: an AlterReplicaLogDirs copy in
    progress is not a replica of its own), and its offline log directories."""

    replicas: frozenset[Replica]
    failed_dirs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"replicas": [[t, p] for t, p in sorted(self.replicas)], "failed_dirs": list(self.failed_dirs)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DiskReplicas:
        return cls(frozenset((str(t), int(p)) for t, p in d["replicas"]), tuple(d["failed_dirs"]))


# A broker's answer, or why there is none (it did not answer DescribeLogDirs).
DiskAnswer = Union[DiskReplicas, str]


def disk_replicas(answer: WireLogDirs, topics: Collection[str]) -> DiskReplicas:
    """The logs of ``topics`` in a DescribeLogDirs answer. A directory with an error code is
    offline (``ReplicaManager.describeLogDirs`` answers KAFKA_STORAGE_ERROR and no topics)."""
    wanted = set(topics)
    held = frozenset(r for d in answer.dirs if d.error_code == 0 for r in d.current if r[0] in wanted)
    return DiskReplicas(held, tuple(sorted(d.path for d in answer.dirs if d.error_code != 0)))


def answer_to_json(answer: DiskAnswer) -> Any:
    return answer if isinstance(answer, str) else answer.to_dict()


def answer_from_json(value: Any) -> DiskAnswer:
    return value if isinstance(value, str) else DiskReplicas.from_dict(value)

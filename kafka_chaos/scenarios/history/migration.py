"""What a step of a migrating cluster stores about the migration (history v5): where the
migration was before the fault and after it, as Kafka said it (the metadata log's
``ZkMigrationStateRecord``, the driver's last state, ``/migration``, ``/controller``:
:class:`harness.migration.status.MigrationStatus`), and, while the KRaft controller writes
ZooKeeper behind its log, both views of the step's partitions once ZooKeeper caught up (or at
the end of the bound), with how long that took."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_chaos.harness.zksnapshot import ZkSnapshot

# ZooKeeper is written behind the log by KRaftMigrationDriver's event queue: milliseconds on an
# idle machine; the bound is what a loaded 2-core machine may take, not a Kafka setting.
WRITE_BEHIND_BOUND_S = 15.0

PartitionView = tuple[int, int, tuple[int, ...], tuple[int, ...]]


def dual_write_view(snapshot: ZkSnapshot, topics: Iterable[str]) -> dict[tuple[str, int], PartitionView]:
    """What the dual-write must carry to ZooKeeper, per partition of ``topics``: leader, leader
    epoch, ISR (as a set: its order is the writer's) and replicas."""
    wanted = set(topics)
    return {k: (p.leader, p.leader_epoch, tuple(sorted(p.isr)), tuple(p.replicas))
            for k, p in snapshot.partitions.items() if k[0] in wanted}


@dataclass(frozen=True)
class MigrationObserved:
    before: Mapping[str, Any]  # MigrationStatus.to_json() just before the fault
    after: Mapping[str, Any]  # ... once the step converged
    zookeeper: ZkSnapshot | None = None  # ZooKeeper's partitions (dual-write phases only)
    kraft: ZkSnapshot | None = None  # the metadata log's, read at the same moment
    write_behind_s: float | None = None  # from convergence until ZooKeeper equalled the log; None: never

    @property
    def dual_writing(self) -> bool:
        """The KRaft controller was in charge and still writing ZooKeeper after the step."""
        return self.after.get("zk_migration_state") == "MIGRATION"

    def to_dict(self) -> dict[str, Any]:
        return {"before": dict(self.before), "after": dict(self.after),
                "zookeeper": None if self.zookeeper is None else self.zookeeper.to_dict(),
                "kraft": None if self.kraft is None else self.kraft.to_dict(),
                "write_behind_s": self.write_behind_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MigrationObserved:
        return cls(dict(d["before"]), dict(d["after"]),
                   None if d.get("zookeeper") is None else ZkSnapshot.from_dict(d["zookeeper"]),
                   None if d.get("kraft") is None else ZkSnapshot.from_dict(d["kraft"]),
                   d.get("write_behind_s"))

"""Admin writes on a migrating cluster go to the controller in charge: ZooKeeper's admin znodes
while the ZooKeeper controller decides, the Admin API once the KRaft controller does (it reads
no admin znodes: ``KRaftMigrationDriver`` copies ZooKeeper once, then only writes it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Protocol

from kafka_chaos.harness.kraft.admin import KraftAdmin
from kafka_chaos.harness.kraft.observer import KraftObserver
from kafka_chaos.harness.migration.observer import MigratingCluster
from kafka_chaos.harness.migration.status import kraft_in_charge
from kafka_chaos.harness.zkadmin import ZkAdmin


class AdminTarget(MigratingCluster, Protocol):
    """What the writer needs: the observer's view of the cluster, and where its brokers are."""

    @property
    def bootstrap_servers(self) -> str: ...


class MigrationAdmin:
    """The :class:`harness.observers.AdminWriter` of a migrating cluster."""

    def __init__(self, cluster: AdminTarget) -> None:
        self._cluster = cluster
        self._zk = ZkAdmin(cluster.zookeeper_connect)

    def __enter__(self) -> MigrationAdmin:
        self._zk.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._zk.__exit__(exc_type, exc, tb)

    def _writer(self) -> ZkAdmin | KraftAdmin:
        dirs = self._cluster.metadata_log_dirs()
        if dirs:
            with KraftObserver(dirs, topics=[]) as observer:
                if kraft_in_charge(observer.zk_migration_state()):
                    return KraftAdmin(self._cluster.bootstrap_servers)
        return self._zk

    def write_reassignment(self, moves: Iterable[tuple[str, int, Sequence[int]]]) -> None:
        self._writer().write_reassignment(moves)

    def write_preferred_election(self, partitions: Iterable[tuple[str, int]]) -> None:
        self._writer().write_preferred_election(partitions)

    def set_topic_config(self, topic: str, config: Mapping[str, str | None], *, replace: bool = False) -> None:
        self._writer().set_topic_config(topic, config, replace=replace)

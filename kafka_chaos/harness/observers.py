"""Which observer and admin writer a cluster is read and driven through: ZooKeeper's
(:class:`harness.observer.ZkObserver`, :class:`harness.zkadmin.ZkAdmin`) or, for a KRaft cluster,
its controllers' metadata log (:class:`harness.kraft.observer.KraftObserver`) and the Admin API
(:class:`harness.kraft.admin.KraftAdmin`). Both observers answer in the same snapshots and events,
so everything above the harness reads either the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from kafka_chaos.harness.cluster import Cluster, implements
from kafka_chaos.harness.zkevents import ZkEvent
from kafka_chaos.harness.zksnapshot import ZkSnapshot


class Observer(Protocol):
    """What the steps, faults and checks read: :class:`harness.observer.ZkObserver`'s surface."""

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    @property
    def session_losses(self) -> int: ...

    def snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot: ...

    def wait_until(self, predicate: Callable[[ZkSnapshot], bool], *, timeout: float,
                   description: str) -> ZkSnapshot: ...

    def wait_broker_gone(self, broker_id: int, timeout: float) -> ZkSnapshot: ...

    def wait_broker_registered(self, broker_id: int, timeout: float, *,
                               newer_than_epoch: int | None = None) -> ZkSnapshot: ...

    def wait_event(self, kind: str, *, after: float, timeout: float, description: str,
                   broker_id: int | None = None, topic: str | None = None, partition: int | None = None,
                   where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent: ...

    def events_since(self, t: float) -> list[ZkEvent]: ...

    def first_event(self, kind: str, *, after: float, broker_id: int | None = None,
                    topic: str | None = None, partition: int | None = None,
                    where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent | None: ...

    def broker_gone_at(self, broker_id: int, after: float) -> float | None: ...


class AdminWriter(Protocol):
    """The admin operations faults start: :class:`harness.zkadmin.ZkAdmin`'s surface."""

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    def write_reassignment(self, moves: Iterable[tuple[str, int, Sequence[int]]]) -> None: ...

    def write_preferred_election(self, partitions: Iterable[tuple[str, int]]) -> None: ...

    def set_topic_config(self, topic: str, config: Mapping[str, str | None], *, replace: bool = False) -> None: ...


@runtime_checkable
class KraftCluster(Protocol):
    """A cluster whose controllers keep a metadata log this process can read."""

    mode: str

    @property
    def bootstrap_servers(self) -> str: ...

    def metadata_log_dirs(self) -> list[Path]: ...


def is_kraft(cluster: object) -> bool:
    return getattr(cluster, "mode", "zookeeper") == "kraft" and implements(cluster, KraftCluster)


def is_migrating(cluster: object) -> bool:
    """A ZooKeeper-mode cluster whose schedule migrates it to KRaft (harness.migration)."""
    return getattr(cluster, "mode", "zookeeper") == "migration"


def open_observer(cluster: Cluster, topics: Sequence[str] | None = None) -> Observer:
    """An unstarted observer of ``cluster`` (enter it): ``topics`` None watches every topic."""
    if is_migrating(cluster):
        from kafka_chaos.harness.migration.observer import MigrationObserver

        return MigrationObserver(cluster, topics)  # type: ignore[arg-type]
    if is_kraft(cluster):
        from kafka_chaos.harness.kraft.observer import KraftObserver

        return KraftObserver(cluster.metadata_log_dirs(), topics=topics)  # type: ignore[attr-defined]
    from kafka_chaos.harness.observer import ZkObserver

    return ZkObserver(cluster.zookeeper_connect, topics=topics)


def open_admin(cluster: Cluster) -> AdminWriter:
    """An unstarted admin writer of ``cluster`` (enter it)."""
    if is_migrating(cluster):
        from kafka_chaos.harness.migration.admin import MigrationAdmin

        return MigrationAdmin(cluster)  # type: ignore[arg-type]
    if is_kraft(cluster):
        from kafka_chaos.harness.kraft.admin import KraftAdmin

        return KraftAdmin(cluster.bootstrap_servers)
    from kafka_chaos.harness.zkadmin import ZkAdmin

    return ZkAdmin(cluster.zookeeper_connect)

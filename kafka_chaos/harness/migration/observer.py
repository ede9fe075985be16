"""Reading a migrating cluster through whichever controller is in charge of it.

Before the metadata copy the ZooKeeper controller decides and ZooKeeper holds the answer
(:class:`harness.observer.ZkObserver`); from the copy on (``ZkMigrationState`` MIGRATION, then
POST_MIGRATION) the KRaft controller decides and its metadata log holds the answer
(:class:`harness.kraft.observer.KraftObserver`), which it writes behind to ZooKeeper while
dual-writing. The authority is re-read at every call from what Kafka wrote (the log's last
``ZkMigrationStateRecord``), so a step that starts under one controller and ends under the other
is observed by the right one at each moment; after a rollback deprovisions the controllers,
ZooKeeper is the authority again.

Both observers stay open, so the dual-write check can compare ZooKeeper with the log
(:meth:`zookeeper_snapshot`, :meth:`kraft_snapshot`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.kraft.observer import KraftObserver
from kafka_chaos.harness.migration.status import kraft_in_charge
from kafka_chaos.harness.observer import BrokerWaits, ConvergenceTimeout, ZkObserver
from kafka_chaos.harness.zkevents import ZkEvent
from kafka_chaos.harness.zksnapshot import ZkSnapshot

log = logging.getLogger(__name__)

POLL_S = 0.1


class MigratingCluster(Protocol):
    """What the observer reads of the cluster: where ZooKeeper is and which metadata logs exist."""

    @property
    def zookeeper_connect(self) -> str: ...

    def metadata_log_dirs(self) -> list[Path]: ...


class MigrationObserver(BrokerWaits):
    """The :class:`harness.observers.Observer` of a migrating cluster."""

    def __init__(self, cluster: MigratingCluster, topics: Sequence[str] | None = None) -> None:
        self._cluster = cluster
        self._topics = topics
        self._zk = ZkObserver(cluster.zookeeper_connect, topics=topics)
        self._kraft: KraftObserver | None = None
        self._kraft_dirs: list[Path] = []
        self._lock = threading.RLock()

    def __enter__(self) -> MigrationObserver:
        self._zk.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._lock:
            if self._kraft is not None:
                self._kraft.stop()
                self._kraft = None
        self._zk.stop()

    # ------------------------------------------------------------------ which controller decides

    def _kraft_observer(self) -> KraftObserver | None:
        """The metadata log's observer, (re)opened when the provisioned controllers change."""
        dirs = self._cluster.metadata_log_dirs()
        with self._lock:
            if dirs != self._kraft_dirs:
                if self._kraft is not None:
                    self._kraft.stop()
                self._kraft, self._kraft_dirs = None, dirs
                if dirs:
                    self._kraft = KraftObserver(dirs, topics=self._topics)
                    self._kraft.start()
            return self._kraft

    def _authority(self) -> ZkObserver | KraftObserver:
        """The metadata log once the KRaft controller decides (:func:`status.kraft_in_charge`), else
        ZooKeeper."""
        kraft = self._kraft_observer()
        return kraft if kraft is not None and kraft_in_charge(kraft.zk_migration_state()) else self._zk

    def zookeeper_snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot:
        return self._zk.snapshot(topics)

    def kraft_snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot | None:
        kraft = self._kraft_observer()
        return kraft.snapshot(topics) if kraft is not None else None

    # ------------------------------------------------------------------ Observer

    @property
    def session_losses(self) -> int:
        return self._zk.session_losses

    def snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot:
        return self._authority().snapshot(topics)

    def wait_until(self, predicate: Callable[[ZkSnapshot], bool], *, timeout: float,
                   description: str) -> ZkSnapshot:
        """The first snapshot of the deciding controller that satisfies ``predicate`` (polled:
        the authority may change while waiting); ConvergenceTimeout after ``timeout``."""
        deadline = time.monotonic() + timeout
        last: ZkSnapshot | None = None
        while True:
            try:
                last = self.snapshot()
                if predicate(last):
                    return last
            except LookupError:
                pass
            except HarnessError as exc:  # ZooKeeper paused, a log being rewritten: try again
                log.debug("migration observer: %s", exc)
            if time.monotonic() >= deadline:
                raise ConvergenceTimeout(description, last, timeout)
            time.sleep(POLL_S)

    def wait_event(self, kind: str, *, after: float, timeout: float, description: str,
                   broker_id: int | None = None, topic: str | None = None, partition: int | None = None,
                   where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent:
        deadline = time.monotonic() + timeout
        while True:
            found = self.first_event(kind, after=after, broker_id=broker_id, topic=topic, partition=partition,
                                     where=where)
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                raise ConvergenceTimeout(description, self.snapshot(), timeout)
            time.sleep(POLL_S)

    def events_since(self, t: float) -> list[ZkEvent]:
        return self._authority().events_since(t)

    def first_event(self, kind: str, *, after: float, broker_id: int | None = None,
                    topic: str | None = None, partition: int | None = None,
                    where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent | None:
        return self._authority().first_event(kind, after=after, broker_id=broker_id, topic=topic,
                                             partition=partition, where=where)

    def broker_gone_at(self, broker_id: int, after: float) -> float | None:
        return self._authority().broker_gone_at(broker_id, after)

"""A migrating cluster's part of a step's observation: the migration's status before the fault and
after convergence, and -- while the KRaft controller writes ZooKeeper behind its metadata log --
both views of the step's partitions once ZooKeeper caught up (bounded), so the dual-write check
compares them (:mod:`scenarios.history.migration`). Nothing here for any other cluster."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.cluster import Cluster, MigrationControl, implements
from kafka_chaos.harness.migration.observer import MigrationObserver
from kafka_chaos.harness.observers import Observer
from kafka_chaos.scenarios.history.migration import WRITE_BEHIND_BOUND_S, MigrationObserved, dual_write_view

log = logging.getLogger(__name__)

POLL_S = 0.1


def migration_status(cluster: Cluster) -> Mapping[str, Any] | None:
    """The migration's status as Kafka says it, or None for a cluster that is not migrating (or
    whose status cannot be read: the step is then recorded without it, never aborted)."""
    if not implements(cluster, MigrationControl):
        return None
    try:
        return cast(MigrationControl, cluster).migration_status().to_json()
    except HarnessError as exc:
        log.warning("reading the migration status: %s", exc)
        return {"error": str(exc)}


def observe_migration(cluster: Cluster, observer: Observer, topics: Sequence[str],
                      before: Mapping[str, Any] | None) -> MigrationObserved | None:
    after = migration_status(cluster)
    if before is None or after is None:
        return None
    if not isinstance(observer, MigrationObserver) or after.get("zk_migration_state") != "MIGRATION":
        return MigrationObserved(before, after)
    started = time.monotonic()
    while True:
        kraft = observer.kraft_snapshot(topics)
        zookeeper = observer.zookeeper_snapshot(topics)
        if kraft is not None and dual_write_view(kraft, topics) == dual_write_view(zookeeper, topics):
            return MigrationObserved(before, after, zookeeper, kraft, time.monotonic() - started)
        if time.monotonic() - started >= WRITE_BEHIND_BOUND_S:
            return MigrationObserved(before, after, zookeeper, kraft, None)
        time.sleep(POLL_S)

"""Admin operations on a KRaft cluster, through the Admin API (a KRaft controller reads no
admin znodes): the same surface as :class:`harness.zkadmin.ZkAdmin`, so faults start a preferred
election or change a topic's config the same way on either mode."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from kafka_chaos.common.errors import HarnessError

log = logging.getLogger(__name__)


class KraftAdmin:
    def __init__(self, bootstrap: str, timeout: float = 15.0) -> None:
        self._bootstrap = bootstrap
        self._timeout = timeout

    def __enter__(self) -> KraftAdmin:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    @property
    def zk_connect(self) -> str:
        raise HarnessError("a KRaft cluster has no ZooKeeper: partitions are added through the Admin API")

    def write_reassignment(self, moves: Iterable[tuple[str, int, Sequence[int]]]) -> None:
        """AlterPartitionReassignments (KIP-455; :func:`harness.metadata.alter_partition_reassignments`);
        the controller's ``ReplicationControlManager.alterPartitionReassignments`` takes it from there."""
        from kafka_chaos.harness.metadata import alter_partition_reassignments

        by_topic: dict[str, dict[int, Sequence[int] | None]] = {}
        for topic, partition, replicas in moves:
            by_topic.setdefault(topic, {})[partition] = list(replicas)
        alter_partition_reassignments(self._bootstrap, by_topic, timeout=self._timeout)
        log.info("reassignment started through the Admin API: %s", by_topic)

    def write_preferred_election(self, partitions: Iterable[tuple[str, int]]) -> None:
        """``electLeaders(PREFERRED)``: the controller's ``ReplicationControlManager.electLeaders``."""
        from kafka_chaos.harness.metadata import elect_leaders

        elect_leaders(self._bootstrap, "preferred", list(partitions), timeout=self._timeout)

    def set_topic_config(self, topic: str, config: Mapping[str, str | None], *, replace: bool = False) -> None:
        """IncrementalAlterConfigs (``replace``: every other override deleted first is not
        supported: say so rather than merge silently)."""
        from kafka_chaos.harness.metadata import alter_topic_config

        if replace:
            raise HarnessError("replacing a topic's whole config is a ZooKeeper-mode write; alter keys instead")
        alter_topic_config(self._bootstrap, topic, dict(config), timeout=self._timeout)
        log.info("topic %s config changed: %s", topic, dict(config))

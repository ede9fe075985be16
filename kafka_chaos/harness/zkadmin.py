"""The few ZooKeeper writes scenarios make, each encoding exactly what Kafka 3.9's own ZK tools
write (see :mod:`harness.zkpaths`): a partition reassignment, a preferred replica election, a
topic config change.

Apart from :class:`harness.observer.ZkObserver` on purpose: watching and waiting never write,
and a fault that writes holds its own session, so closing one never affects the other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness import zkpaths
from kafka_chaos.harness.zkclient import ZkUnavailable, close_bounded, connect

log = logging.getLogger(__name__)


class ZkAdmin:
    """A kazoo session for admin writes.  Use as a context manager (or ``start``/``stop``);
    ``timeout`` bounds connecting, each write's retries, and closing."""

    def __init__(self, zk_connect: str, timeout: float = 10.0) -> None:
        self._zk_connect = zk_connect
        self._timeout = timeout
        self._client: KazooClient | None = None

    def __enter__(self) -> ZkAdmin:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        if self._client is not None:
            raise HarnessError("ZkAdmin already started")
        self._client = connect(self._zk_connect, session_timeout=self._timeout,
                               connect_timeout=self._timeout, command_deadline=self._timeout)

    def stop(self) -> None:
        """Idempotent; returns within about ``timeout`` even when ZooKeeper does not answer."""
        client, self._client = self._client, None
        if client is not None:
            close_bounded(client, self._zk_connect, timeout=self._timeout)

    @property
    def zk_connect(self) -> str:
        return self._zk_connect

    def _require_client(self) -> KazooClient:
        if self._client is None:
            raise HarnessError("ZkAdmin is not started")
        return self._client

    def write_reassignment(self, moves: Iterable[tuple[str, int, Sequence[int]]]) -> None:
        """Start reassignments the way pre-2.4 ``kafka-reassign-partitions --zookeeper`` did:
        create ``/admin/reassign_partitions``; the controller removes entries as they finish
        (KafkaController.processZkPartitionReassignment)."""
        self._create_once(zkpaths.REASSIGN_PARTITIONS, zkpaths.encode_reassignment(moves),
                          "partition reassignment")

    def write_preferred_election(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Create ``/admin/preferred_replica_election``; the controller deletes it when done
        (KafkaController.processReplicaLeaderElection, ZkTriggered)."""
        self._create_once(zkpaths.PREFERRED_REPLICA_ELECTION,
                          zkpaths.encode_preferred_election(partitions), "preferred replica election")

    def set_topic_config(self, topic: str, config: Mapping[str, str | None], *,
                         replace: bool = False) -> None:
        """Change a topic's dynamic config as AdminZkClient.changeTopicConfig does: write
        ``/config/topics/<t>`` then a sequential ``/config/changes/config_change_`` notification
        that makes every broker (and the controller) reload it.

        Keys map to string values; None removes a key.  Without ``replace`` the change is merged
        into the existing overrides (as ``kafka-configs --alter --add-config``).
        """
        client = self._require_client()
        try:
            # AdminZkClient.validateTopicConfig: the topic must exist.
            if client.retry(client.exists, zkpaths.topic_path(topic)) is None:
                raise HarnessError(f"cannot configure topic {topic!r}: it does not exist")
            merged = merge_config({} if replace else self._current_config(client, topic), config)
            self._write_config(client, topic, merged)
        except KazooException as exc:
            raise ZkUnavailable(f"changing config of topic {topic!r} failed: {type(exc).__name__}") from exc
        log.info("topic %s config now %s", topic, merged)

    @staticmethod
    def _current_config(client: KazooClient, topic: str) -> dict[str, str]:
        try:
            data, _ = client.retry(client.get, zkpaths.topic_config_path(topic))
        except NoNodeError:
            return {}
        return zkpaths.parse_topic_config(data, topic)

    @staticmethod
    def _write_config(client: KazooClient, topic: str, config: Mapping[str, str]) -> None:
        path = zkpaths.topic_config_path(topic)
        data = zkpaths.encode_topic_config(config)
        # KafkaZkClient.setOrCreateEntityConfigs: set, else create, else set again.
        try:
            client.retry(client.set, path, data)
        except NoNodeError:
            try:
                client.retry(client.create, path, data, makepath=True)
            except NodeExistsError:
                client.retry(client.set, path, data)
        # KafkaZkClient.createConfigChangeNotification.
        client.retry(client.ensure_path, zkpaths.CONFIG_CHANGES)
        client.retry(client.create, zkpaths.config_change_sequence_prefix(),
                     zkpaths.encode_config_change(zkpaths.topic_entity_path(topic)), sequence=True)

    def _create_once(self, path: str, data: bytes, what: str) -> None:
        """Create an admin znode that the controller deletes when done; refuse if one is pending."""
        client = self._require_client()
        try:
            client.retry(client.create, path, data, makepath=True)
        except NodeExistsError:
            # A retried create whose first attempt got through finds its own bytes there.
            try:
                existing, _ = client.get(path)
            except NoNodeError:
                existing = None
            if existing != data:
                raise HarnessError(f"{what}: {path} already exists (a previous request is still "
                                   f"pending); wait for it to finish first") from None
        except KazooException as exc:
            raise ZkUnavailable(f"{what}: writing {path} failed: {type(exc).__name__}") from exc


def merge_config(current: Mapping[str, str], change: Mapping[str, str | None]) -> dict[str, str]:
    """``current`` with ``change`` applied: a None value removes its key."""
    merged = dict(current)
    for key, value in change.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged

"""The ZooKeeper ensemble controls of the local launcher (:class:`harness.cluster.
ZooKeeperEnsembleControl`), kept apart
from :class:`harness.local.cluster.LocalCluster`, which mixes them in.

Each ZooKeeper server is a JVM of its own (``zookeeper-N``, ``myid`` N); killing or pausing one
is SIGKILL / SIGSTOP of that JVM, a start reuses its data and ports.  Which server leads is read
with ``srvr`` (:mod:`harness.zk_ensemble`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness import zk_ensemble
from kafka_chaos.harness.local.nodes import LocalNode
from kafka_chaos.harness.processes import NodeProcess

if TYPE_CHECKING:
    from kafka_chaos.harness.config import ClusterConfig

log = logging.getLogger(__name__)


class LocalEnsembleControls:
    """ZooKeeper-server faults on local JVMs; needs the attributes below from its host class."""

    config: ClusterConfig
    start_timeout: float
    _zk_ensemble: dict[int, LocalNode]
    _spawn: Callable[[LocalNode], None]
    _running: Callable[[LocalNode, str], tuple[LocalNode, NodeProcess]]

    def zookeeper_servers(self) -> list[int]:
        return sorted(self._zk_ensemble)

    def zookeeper_client_ports(self) -> dict[int, int]:
        return {z: n.port for z, n in sorted(self._zk_ensemble.items())}

    def zookeeper_leader(self) -> int | None:
        """The server that leads now (``srvr``), None while no quorum serves."""
        return zk_ensemble.leader_of(self.zookeeper_client_ports())

    def zookeeper_server_running(self, server_id: int) -> bool:
        return self._zk_server(server_id).running()

    def kill_zookeeper_server(self, server_id: int) -> None:
        node, process = self._running(self._zk_server(server_id), "kill")
        log.info("SIGKILL %s (pid %d)", node.name, process.pid)
        process.kill()

    def pause_zookeeper_server(self, server_id: int) -> None:
        node, process = self._running(self._zk_server(server_id), "pause")
        log.info("SIGSTOP %s (pid %d)", node.name, process.pid)
        process.pause()

    def resume_zookeeper_server(self, server_id: int) -> None:
        node, process = self._running(self._zk_server(server_id), "resume")
        log.info("SIGCONT %s (pid %d)", node.name, process.pid)
        process.resume()

    def start_zookeeper_server(self, server_id: int, *, wait_serving: bool = True) -> None:
        """Start a killed server on its data.  ``wait_serving``: return once it serves (it can
        only when a quorum forms with it; set False while restoring one server of many)."""
        node = self._zk_server(server_id)
        if node.running():
            raise HarnessError(f"{node.name} is already running (pid {node.running_pid()})")
        log.info("starting %s on port %d", node.name, node.port)
        self._spawn(node)
        if wait_serving:
            zk_ensemble.wait_serving(self.zookeeper_client_ports(), [server_id], self.start_timeout)

    def _zk_server(self, server_id: int) -> LocalNode:
        try:
            return self._zk_ensemble[server_id]
        except KeyError:
            raise UsageError(f"unknown ZooKeeper server {server_id}: the servers are "
                             f"{', '.join(map(str, sorted(self._zk_ensemble)))}") from None


def wait_quorum(ports: dict[int, int], running: list[int], timeout: float) -> float:
    """Bounded wait until the running servers serve with one leader; the seconds it took."""
    began = time.monotonic()
    zk_ensemble.wait_serving(ports, running, timeout)
    return time.monotonic() - began

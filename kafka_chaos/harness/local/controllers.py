"""The KRaft controllers' process controls (:class:`harness.cluster.ControllerQuorumControl`) both
local launchers with controllers share: the KRaft cluster's and the migrating cluster's."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.local.nodes import LocalNode, check_alive, signal_node

log = logging.getLogger(__name__)


class LocalControllerControls:
    """Kill, stop, pause, resume and start controllers kept in ``_controllers`` (node id -> node)."""

    _controllers: dict[int, LocalNode]
    _lock: threading.RLock
    stop_timeout: float
    # the launcher's own (declared, not defined: a definition here would shadow LocalCluster's)
    _spawn: Callable[[LocalNode], None]

    def _controller_started(self) -> None:
        """What the launcher does once a controller was started again (a state file)."""

    def kill_controller(self, node_id: int) -> None:
        signal_node(self._controller(node_id), "kill", self.stop_timeout)

    def stop_controller(self, node_id: int) -> None:
        signal_node(self._controller(node_id), "stop", self.stop_timeout)

    def pause_controller(self, node_id: int) -> None:
        signal_node(self._controller(node_id), "pause", self.stop_timeout)

    def resume_controller(self, node_id: int) -> None:
        signal_node(self._controller(node_id), "resume", self.stop_timeout)

    def controller_running(self, node_id: int) -> bool:
        return self._controller(node_id).running()

    def start_controller(self, node_id: int) -> None:
        """Start a killed or stopped controller on its metadata log (returns once it runs: with a
        quorum it catches up on its own)."""
        with self._lock:
            node = self._controller(node_id)
            if node.running():
                raise HarnessError(f"controller {node_id} is already running")
            log.info("starting %s on port %d", node.name, node.port)
            self._spawn(node)
            self._controller_started()
            check_alive([node])

    def _controller(self, node_id: int) -> LocalNode:
        try:
            return self._controllers[node_id]
        except KeyError:
            if not self._controllers:
                raise HarnessError("no KRaft controller is running here (none provisioned, or not started)") from None
            raise UsageError(f"unknown controller id {node_id}: the controllers are "
                             f"{', '.join(map(str, sorted(self._controllers)))}") from None

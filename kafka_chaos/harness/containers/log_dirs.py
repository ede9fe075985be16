"""The containers launcher's :class:`harness.cluster.LogDirFailer`. A broker's ``log.dirs`` are in
its container's filesystem (``/var/lib/kafka/data``, or ``data/a``, ``data/b``); the image has no
shell to run ``mv`` in, so the host reaches them through the running JVM's root,
``/proc/<pid>/root`` (root needed: :func:`log_dir_problem`), and applies :mod:`harness.log_dirs`.

That path exists only while the container runs, so a broker's *last* live directory is not failed
here: Kafka would halt, the container exit, and its directory could not be repaired before the
restart (the local launcher can; with two directories, failing one keeps the broker running)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import ClusterConfig, log_dir_paths
from kafka_chaos.harness.containers.nodes import BROKER_DATA_DIR, container_pid, container_state
from kafka_chaos.harness.log_dirs import LogDirControls

if TYPE_CHECKING:
    from docker.models.containers import Container


def log_dir_problem() -> str | None:
    """Why this host cannot fail a container's log directory, or None."""
    if os.geteuid() != 0:
        return "needs root: the host reaches a container's log directories through /proc/<pid>/root"
    return None


class ContainerLogDirControls(LogDirControls):
    """Needs the attributes below (:class:`harness.containers.cluster.ContainerCluster` has them)."""

    config: ClusterConfig
    _broker: Callable[[int], "Container"]

    def log_dirs(self, broker_id: int) -> list[str]:
        self._broker(broker_id)  # an unknown id is a one-line UsageError
        return log_dir_paths(BROKER_DATA_DIR, self.config.log_dirs)

    def _log_dir_host_paths(self, broker_id: int) -> list[Path]:
        container = self._broker(broker_id)
        if container_state(container) != "running":
            raise HarnessError(f"broker {broker_id}'s container is not running: its log directories "
                               f"are reachable only through a running process")
        root = Path(f"/proc/{container_pid(container)}/root")
        return [root / name.lstrip("/") for name in self.log_dirs(broker_id)]

    def fail_log_dir(self, broker_id: int, index: int) -> None:
        paths = self._log_dir_host_paths(broker_id)
        failed = set(self.failed_log_dirs(broker_id))
        if len(failed | {index}) >= len(paths):
            raise HarnessError(f"broker {broker_id}: failing its last live log directory would halt it and "
                               f"the containers launcher could not repair it (cluster with 2 log dirs: fail one)")
        super().fail_log_dir(broker_id, index)

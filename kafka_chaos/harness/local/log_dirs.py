"""The local launcher's :class:`harness.cluster.LogDirFailer`: a broker's ``log.dirs`` are under
its node directory (``<run_dir>/broker-<id>/data``, or ``data/a``, ``data/b`` with
``ClusterConfig.log_dirs`` = 2), on this host, so a failed directory can be repaired whether the
broker still runs or halted (every directory failed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafka_chaos.harness.config import ClusterConfig, log_dir_paths
from kafka_chaos.harness.local.nodes import LocalNode
from kafka_chaos.harness.log_dirs import LogDirControls


class LocalLogDirControls(LogDirControls):
    """Needs the attributes below (:class:`harness.local.cluster.LocalCluster` has them)."""

    config: ClusterConfig
    _broker: Callable[[int], LocalNode]

    def log_dirs(self, broker_id: int) -> list[str]:
        return log_dir_paths(str(self._broker(broker_id).directory / "data"), self.config.log_dirs)

    def _log_dir_host_paths(self, broker_id: int) -> list[Path]:
        return [Path(p) for p in self.log_dirs(broker_id)]

"""Brokers' data directories on the crash-consistency layer (:mod:`harness.lazyfs`) on the
containers launcher: :class:`harness.cluster.PowerFailer` and :class:`harness.cluster.DiskFaulter`.

The layer runs on the host, as on the local launcher (:class:`harness.local.disks.LazyDisks`: one
FUSE daemon per broker over ``broker-N/data.durable``, mounted on ``broker-N/data`` with
``allow_other``), and the mount point is bind-mounted into the broker's container as its data
directory. Nothing FUSE is inside the container -- no ``/dev/fuse``, no ``SYS_ADMIN``, no Python in
the image -- and the broker's I/O reaches the same daemon a local broker's does. A power failure
is ``docker kill``, then the daemon drops what was not fsynced and a fresh daemon mounts the same
path; the next ``docker start`` binds that path anew (runc sets a container's mounts up at every
start), so the restarted broker sees what survived through the fresh mount.

Only with ``ClusterConfig.filesystem="lazyfs"``; otherwise the data directory stays in the
container's own filesystem, as before. Unmounted after the containers are removed.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import LAZY_FILESYSTEM
from kafka_chaos.harness.containers.nodes import container_state, kill_container
from kafka_chaos.harness.local.disks import DATA, DiskControls, LazyDisks

if TYPE_CHECKING:
    from docker.models.containers import Container

log = logging.getLogger(__name__)


def lazy_data_dir(root: Path, broker_id: int) -> Path:
    """Pure: the host mount point broker ``broker_id``'s container gets as its data directory."""
    return root / f"broker-{broker_id}" / DATA


class ContainerDiskControls(DiskControls):
    """Power failures and disk faults of :class:`harness.containers.cluster.ContainerCluster`'s
    brokers; ``_mount_disks`` before the brokers' containers, ``_unmount_disks`` after they are
    removed."""

    state_dir: Path | None
    _lazy_root: Path | None = None
    _data_without_layer = "in its containers"

    def _broker(self, broker_id: int) -> Container:
        raise NotImplementedError

    def _check_disk_node(self, node_id: int) -> None:
        self._broker(node_id)

    def _killer(self, node_id: int) -> Callable[[], None]:
        container = self._broker(node_id)
        if container_state(container) not in ("running", "paused"):
            raise HarnessError(f"cannot power-fail broker {node_id}: its container is not running")
        return lambda: kill_container(container)

    def _mount_disks(self, broker_ids: Sequence[int]) -> dict[int, str]:
        """Broker id -> the host mount point its container binds as its data directory (none
        unless the config asks for the layer)."""
        if self.config.filesystem != LAZY_FILESYSTEM:
            return {}
        self._check_layer(owned=self.state_dir is None)
        self._lazy_root = Path(tempfile.mkdtemp(prefix="kafka-chaos-lazyfs-"))
        self._lazy_disks = LazyDisks()
        mounts = {}
        for broker_id in broker_ids:
            data = lazy_data_dir(self._lazy_root, broker_id)
            data.mkdir(parents=True)
            self._lazy_disks.mount(broker_id, data.parent)
            mounts[broker_id] = str(data)
        return mounts

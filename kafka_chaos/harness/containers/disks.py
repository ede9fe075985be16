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

The KRaft launcher (:class:`harness.containers.kraft.ContainerKraftCluster`) formats each node's
storage on the host into ``<node>/data`` and puts that directory on the layer
(:meth:`ContainerDiskControls._mount_node_dirs`: what it holds becomes ``data.durable``), for its
controllers as well as its brokers: a quorum leader's power failure kills ``controller-N``.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Mapping, Sequence
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
    """Power failures and disk faults of a containers launcher's nodes (the brokers of
    :class:`harness.containers.cluster.ContainerCluster`; the brokers and controllers of
    :class:`harness.containers.kraft.ContainerKraftCluster`); ``_mount_disks`` or
    ``_mount_node_dirs`` before the nodes' containers, ``_unmount_disks`` after they are removed."""

    state_dir: Path | None
    _lazy_root: Path | None = None
    _data_without_layer = "in its containers"

    def _broker(self, broker_id: int) -> Container:
        raise NotImplementedError

    def _disk_container(self, node_id: int) -> tuple[str, Container]:
        """The node's name (for messages) and container; a broker's unless a launcher has more."""
        return f"broker {node_id}", self._broker(node_id)

    def _check_disk_node(self, node_id: int) -> None:
        self._disk_container(node_id)

    def _killer(self, node_id: int) -> Callable[[], None]:
        name, container = self._disk_container(node_id)
        if container_state(container) not in ("running", "paused"):
            raise HarnessError(f"cannot power-fail {name}: its container is not running")
        return lambda: kill_container(container)

    def _mount_disks(self, broker_ids: Sequence[int]) -> dict[int, str]:
        """Broker id -> the host mount point its container binds as its data directory (none
        unless the config asks for the layer)."""
        if self.config.filesystem != LAZY_FILESYSTEM:
            return {}
        self._check_layer(owned=self.state_dir is None)
        self._lazy_root = Path(tempfile.mkdtemp(prefix="kafka-chaos-lazyfs-"))
        for broker_id in broker_ids:
            lazy_data_dir(self._lazy_root, broker_id).mkdir(parents=True)
        return self._mount_node_dirs({b: lazy_data_dir(self._lazy_root, b).parent for b in broker_ids})

    def _mount_node_dirs(self, node_dirs: Mapping[int, Path]) -> dict[int, str]:
        """Node id -> the host mount point its container binds: each node directory's ``data/``
        (already there, and what it holds -- a formatted KRaft storage -- is durable) on the
        layer. None unless the config asks for the layer."""
        if self.config.filesystem != LAZY_FILESYSTEM:
            return {}
        self._check_layer(owned=self.state_dir is None)
        self._lazy_disks = LazyDisks()
        mounts = {}
        for node_id, node_dir in node_dirs.items():
            self._lazy_disks.mount(node_id, node_dir)
            mounts[node_id] = str(node_dir / DATA)
        return mounts

"""Local nodes' data directories on the crash-consistency layer (:mod:`harness.lazyfs`).

With ``filesystem="lazyfs"`` each broker's (and KRaft controller's) ``data/`` is a mount of the
layer over ``data.durable/`` beside it: ``data.durable`` holds what the node fsynced, the mount
what it wrote. A power failure kills the node and then drops the rest
(:meth:`harness.lazyfs.mount.LazyMount.power_fail`); the node starts again on what survived,
through a fresh mount. Mounted after the node's directory is prepared (a KRaft node's storage
is formatted before: formatting happened long before any power failure a schedule injects) and
before it starts; unmounted after every node is killed and before the run directory is removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.config import LAZY_FILESYSTEM, ClusterConfig
from kafka_chaos.harness.lazyfs.mount import IoRule, LazyMount, PowerFailReport, lazyfs_available
from kafka_chaos.harness.local.nodes import LocalNode

log = logging.getLogger(__name__)

DATA = "data"
DURABLE = "data.durable"
CONTROL = "lazyfs.sock"


def disk_problems() -> dict[Capability, str]:
    """The layer's capabilities this machine cannot provide (no /dev/fuse, not root, no libfuse3)."""
    problem = lazyfs_available()
    return {} if problem is None else {Capability.POWER_FAILURE: problem, Capability.DISK_FAULTS: problem}


class LazyDisks:
    """One mount per node id, over the node's own directory."""

    def __init__(self) -> None:
        self._mounts: dict[int, LazyMount] = {}
        self._directories: dict[int, Path] = {}

    def mount(self, node_id: int, node_dir: Path) -> None:
        """Move what ``data/`` holds (a formatted KRaft storage) to ``data.durable/`` -- it is
        durable -- and mount the layer on ``data/``."""
        data, durable = node_dir / DATA, node_dir / DURABLE
        if durable.exists():
            raise HarnessError(f"{durable} exists: node {node_id} is already on the layer")
        data.rename(durable)
        data.mkdir()
        self._directories[node_id] = node_dir
        self._start(node_id)

    def _start(self, node_id: int) -> None:
        node_dir = self._directories[node_id]
        self._mounts[node_id] = LazyMount.start(node_dir / DURABLE, node_dir / DATA, node_dir / CONTROL)
        log.info("node %d's data directory on the crash-consistency layer (%s)", node_id, node_dir / DATA)

    def _mount_of(self, node_id: int) -> LazyMount:
        mount = self._mounts.get(node_id)
        if mount is None:
            raise HarnessError(f"node {node_id}'s data directory is not on the crash-consistency layer "
                               f"(start the cluster with filesystem {LAZY_FILESYSTEM!r})")
        return mount

    def power_fail(self, node_id: int, kill: Callable[[], None]) -> PowerFailReport:
        """``kill`` the node, then drop its unsynced writes (a fresh mount serves what is left)."""
        mount = self._mount_of(node_id)
        kill()
        report = mount.power_fail()
        log.info("power failure of node %d: %s", node_id, report)
        return report

    def set_rules(self, node_id: int, rules: Sequence[IoRule]) -> None:
        self._mount_of(node_id).set_rules(rules)

    def clear_rules(self) -> None:
        for mount in self._mounts.values():
            mount.clear_rules()

    def stop(self) -> list[str]:
        """Unmount every node's layer (its nodes killed first); the problems, one line each."""
        errors: list[str] = []
        for node_id, mount in list(self._mounts.items()):
            try:
                mount.stop()
            except HarnessError as exc:
                errors.append(f"node {node_id}: {exc}")
        self._mounts.clear()
        return errors


class DiskControls:
    """:class:`harness.cluster.PowerFailer` and :class:`harness.cluster.DiskFaulter` over
    :class:`LazyDisks`, whatever runs the nodes: a launcher says where its data lives without the
    layer (:attr:`_data_without_layer`), how a running node is killed (:meth:`_killer`) and which
    node ids are its (:meth:`_check_disk_node`)."""

    config: ClusterConfig
    _lazy_disks: LazyDisks | None = None
    _data_without_layer: str = "on the host's filesystem"

    def _check_disk_node(self, node_id: int) -> None:
        raise NotImplementedError

    def _killer(self, node_id: int) -> Callable[[], None]:
        """How to kill ``node_id`` now (a HarnessError if it is not running)."""
        raise NotImplementedError

    def _check_layer(self, owned: bool) -> None:
        """The layer's preconditions: a cluster this process owns (its mounts end with it) on a
        machine that can mount it."""
        if not owned:
            raise UsageError(f"filesystem {LAZY_FILESYSTEM!r} needs a cluster this process owns: its mounts end "
                             f"with it (not `cluster up`)")
        problem = lazyfs_available()
        if problem is not None:
            raise UsageError(f"filesystem {LAZY_FILESYSTEM!r}: {problem}")

    def _disks(self) -> LazyDisks:
        if self._lazy_disks is None:
            raise HarnessError(f"this cluster's data directories are {self._data_without_layer}: a power failure "
                               f"or disk fault needs filesystem {LAZY_FILESYSTEM!r}")
        return self._lazy_disks

    def power_fail_node(self, node_id: int) -> PowerFailReport:
        kill = self._killer(node_id)
        return self._disks().power_fail(node_id, kill)

    def disk_fault(self, node_id: int, rules: Sequence[IoRule]) -> None:
        self._check_disk_node(node_id)
        self._disks().set_rules(node_id, rules)

    def clear_disk_faults(self) -> None:
        if self._lazy_disks is not None:
            self._lazy_disks.clear_rules()

    def _unmount_disks(self) -> list[str]:
        """Unmount every node's layer (its nodes gone first); the problems, one line each."""
        disks, self._lazy_disks = self._lazy_disks, None
        return disks.stop() if disks is not None else []


class LocalDiskControls(DiskControls):
    """The local launcher's: needs the attributes below and calls :meth:`_mount_disks` between
    preparing and starting its nodes, :meth:`_unmount_disks` in its teardown."""

    _detached: bool

    def _disk_node(self, node_id: int) -> LocalNode:
        raise NotImplementedError

    def _check_disk_node(self, node_id: int) -> None:
        self._disk_node(node_id)

    def _killer(self, node_id: int) -> Callable[[], None]:
        node = self._disk_node(node_id)
        process = node.process
        if process is None or not process.alive():
            raise HarnessError(f"cannot power-fail {node.name}: it is not running")
        return process.kill

    def _mount_disks(self, nodes: Sequence[tuple[int, LocalNode]]) -> None:
        if self.config.filesystem != LAZY_FILESYSTEM:
            return
        self._check_layer(owned=not self._detached)
        self._lazy_disks = LazyDisks()
        for node_id, node in nodes:
            self._lazy_disks.mount(node_id, node.directory)

"""Nodes' wall clocks on the containers launchers (capability ``CLOCK_CONTROL``): the brokers'
and ZooKeeper servers' of a ZooKeeper-mode cluster, the brokers' and controllers' of a KRaft
one, the way the local launcher fakes them (:mod:`harness.local.clocks`: the same libfaketime,
settings, control file writes and drifts, through :class:`~harness.local.clocks.FileClockControls`).

A cluster started with ``ClusterConfig.fake_clocks`` runs each node's JVM with Debian's
libfaketime preloaded, which the image carries (:mod:`harness.containers.image`: one more
package of its root filesystem, its path in the image's ``FAKETIME_LABEL``). The settings go in
the container's environment rather than in front of its command: the image has no shell and no
``env``, the JVM is the container's first process either way, and ``docker start`` after a kill
or a stop starts it with the same environment. Each node reads its offset from
``faketime.rc`` in a host directory of its own (``broker-N``, ``controller-N``,
``zookeeper-N``) bind-mounted at :data:`CLOCK_DIR`, which the harness replaces by a rename on
the host: libfaketime re-opens the file by its path once its 1 s cache lapses, so through a
mounted *directory* it sees the new file (a mounted single file would stay the old inode). A
write costs what it costs locally -- no Docker call -- so a drift's thread rewrites it every
0.5 s as on the local launcher; ``docker cp`` (put_archive) would cost an API round trip a write
(docs/clocks.md has both measured).

A ZooKeeper server (``QuorumPeerMain``) is faked the same way, as on the local launcher: its
offset stays 0 until a step moves it, so it keeps the host's clock through the brokers' faults.
A KRaft controller is a Kafka JVM like a broker (``kafka.Kafka``), faked the same way, so
docs/schedules/clock_jumps_kraft.json's controller jump runs here too.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.containers.image import faketime_of_image
from kafka_chaos.harness.local.clocks import (
    CONTROL_FILE,
    FileClockControls,
    check_role,
    faketime_environment,
    write_offset,
)

if TYPE_CHECKING:
    import docker

log = logging.getLogger(__name__)

CLOCK_DIR = "/run/kafka-chaos-clock"  # in each node's container, the host's control directory
CONTAINER_CONTROL_FILE = f"{CLOCK_DIR}/{CONTROL_FILE}"
CLOCKS_SUBDIR = "clocks"  # of a detached cluster's state directory


@dataclass(frozen=True)
class NodeClock:
    """How one node's container runs on a fake clock: its environment and its mount."""

    host_dir: str
    environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def volumes(self) -> dict[str, str]:
        return {self.host_dir: CLOCK_DIR}


def node_clock(library: str, host_dir: Path) -> NodeClock:
    """Pure: a node container's clock setup for libfaketime at ``library`` (its path in the
    image) and the control directory ``host_dir`` on this machine."""
    return NodeClock(str(host_dir), faketime_environment(library, CONTAINER_CONTROL_FILE))


def clock_dir(root: Path, role: str, node_id: int) -> Path:
    """Pure: the control directory of ``role`` ``node_id`` under the cluster's ``root``."""
    return root / f"{role}-{node_id}"


def faked_node(role: str, node_id: int, nodes: Mapping[str, Sequence[int]]) -> None:
    """Pure: a one-line UsageError unless ``nodes`` (role -> ids whose clocks this cluster
    fakes) has the node."""
    check_role(role)
    if node_id not in nodes.get(role, ()):
        raise UsageError(f"clock: this cluster has no {role} {node_id}")


class ContainerClockControls(FileClockControls):
    """:class:`harness.cluster.ClockController` for the container launchers: ``_start_clocks``
    (once the image is known) and ``_node_clock`` (before each node's container) lay out
    the control directories when the config asks for fake clocks; ``_clock_nodes`` says whose."""

    config: ClusterConfig
    _clocks_root: Path | None  # the nodes' control directories; None on the host's clock

    def _clock_nodes(self) -> dict[str, list[int]]:
        """Role -> the ids of the nodes whose clocks this cluster fakes."""
        raise NotImplementedError

    def _start_clocks(self, client: docker.DockerClient, image: str, root: Path | None) -> str | None:
        """libfaketime's path in ``image`` when the config asks for fake clocks (else None); the
        control directories go under ``root`` (a fresh temporary directory when None)."""
        if not self.config.fake_clocks:
            return None
        self._clocks_root = root or Path(tempfile.mkdtemp(prefix="kafka-chaos-clocks-"))
        return faketime_of_image(client, image)

    def _node_clock(self, role: str, node_id: int, library: str | None) -> NodeClock | None:
        """The node's clock setup, its offset zero; None without fake clocks."""
        if not self.config.fake_clocks:
            return None
        if library is None or self._clocks_root is None:
            raise HarnessError("fake clocks need libfaketime in the image: a --base-image must carry it "
                               "and name it in its kafka-chaos.faketime label")
        directory = clock_dir(self._clocks_root, role, node_id)
        directory.mkdir(parents=True, exist_ok=True)
        write_offset(directory / CONTROL_FILE, 0.0)
        return node_clock(library, directory)

    def _control_file(self, role: str, node_id: int) -> Path:
        faked_node(role, node_id, self._clock_nodes())
        control = clock_dir(self._clocks_root, role, node_id) / CONTROL_FILE if self._clocks_root else None
        if control is None or not control.exists():
            raise HarnessError(f"{role} {node_id} runs on the host's clock: start the cluster with fake clocks")
        return control

    def _control_files(self) -> list[Path]:
        if self._clocks_root is None:
            return []
        return [clock_dir(self._clocks_root, role, n) / CONTROL_FILE
                for role, ids in self._clock_nodes().items() for n in ids]

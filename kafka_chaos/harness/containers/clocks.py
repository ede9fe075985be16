"""Brokers' wall clocks on the containers launcher (capability ``CLOCK_CONTROL``), the way the
local launcher fakes them (:mod:`harness.local.clocks`: the same libfaketime, settings, control
file writes and drifts, through :class:`~harness.local.clocks.FileClockControls`).

A cluster started with ``ClusterConfig.fake_clocks`` runs each broker's JVM with Debian's
libfaketime preloaded, which the image carries (:mod:`harness.containers.image`: one more
package of its root filesystem, its path in the image's ``FAKETIME_LABEL``). The settings go in
the container's environment rather than in front of its command: the image has no shell and no
``env``, the JVM is the container's first process either way, and ``docker start`` after a kill
or a stop starts it with the same environment. Each broker reads its offset from
``faketime.rc`` in a host directory bind-mounted at :data:`CLOCK_DIR`, which the harness
replaces by a rename on the host: libfaketime re-opens the file by its path once its 1 s cache
lapses, so through a mounted *directory* it sees the new file (a mounted single file would stay
the old inode). A write costs what it costs locally -- no Docker call -- so a drift's thread
rewrites it every 0.5 s as on the local launcher; ``docker cp`` (put_archive) would cost an API
round trip a write (docs/clocks.md has both measured).

ZooKeeper servers run on the host's clock on this launcher: their containers never preload the
library, and a clock fault aimed at one is refused in one line (``--backend local`` fakes them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.local.clocks import (
    CONTROL_FILE,
    FileClockControls,
    check_role,
    faketime_environment,
    write_offset,
)

if TYPE_CHECKING:
    from docker.models.containers import Container

log = logging.getLogger(__name__)

CLOCK_DIR = "/run/kafka-chaos-clock"  # in each broker container, the host's control directory
CONTAINER_CONTROL_FILE = f"{CLOCK_DIR}/{CONTROL_FILE}"
CLOCKS_SUBDIR = "clocks"  # of a detached cluster's state directory


@dataclass(frozen=True)
class BrokerClock:
    """How one broker container runs on a fake clock: its environment and its mount."""

    host_dir: str
    environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def volumes(self) -> dict[str, str]:
        return {self.host_dir: CLOCK_DIR}


def broker_clock(library: str, host_dir: Path) -> BrokerClock:
    """Pure: the broker container's clock setup for libfaketime at ``library`` (its path in the
    image) and the control directory ``host_dir`` on this machine."""
    return BrokerClock(str(host_dir), faketime_environment(library, CONTAINER_CONTROL_FILE))


def clock_dir(root: Path, broker_id: int) -> Path:
    """Pure: broker ``broker_id``'s control directory under the cluster's ``root``."""
    return root / f"broker-{broker_id}"


def refuse_role(role: str) -> None:
    """Only brokers' clocks move here: a one-line UsageError for any other role."""
    check_role(role)
    if role == "zookeeper":
        raise UsageError("clock: the containers launcher fakes brokers' clocks only; its ZooKeeper servers run on "
                         "the host's clock (--backend local moves a ZooKeeper server's clock)")
    if role != "broker":
        raise UsageError(f"clock: the containers launcher fakes brokers' clocks only, not a {role}'s")


class ContainerClockControls(FileClockControls):
    """:class:`harness.cluster.ClockController` for :class:`harness.containers.cluster.ContainerCluster`:
    ``_broker_clock`` (from the cluster's start, before each broker's container) lays out the
    broker's control directory when the config asks for fake clocks."""

    config: ClusterConfig
    _brokers: dict[int, Container]
    _clocks_root: Path | None  # the brokers' control directories; None on the host's clock

    def _broker_clock(self, broker_id: int, library: str | None) -> BrokerClock | None:
        """The broker's clock setup, its offset zero; None without fake clocks."""
        if not self.config.fake_clocks:
            return None
        if library is None or self._clocks_root is None:
            raise HarnessError("fake clocks need libfaketime in the image: a --base-image must carry it "
                               "and name it in its kafka-chaos.faketime label")
        directory = clock_dir(self._clocks_root, broker_id)
        directory.mkdir(parents=True, exist_ok=True)
        write_offset(directory / CONTROL_FILE, 0.0)
        return broker_clock(library, directory)

    def _control_file(self, role: str, node_id: int) -> Path:
        refuse_role(role)
        if node_id not in self.config.broker_ids():
            raise UsageError(f"clock: this cluster has no broker {node_id}")
        control = clock_dir(self._clocks_root, node_id) / CONTROL_FILE if self._clocks_root else None
        if control is None or not control.exists():
            raise HarnessError(f"broker {node_id} runs on the host's clock: start the cluster with fake clocks")
        return control

    def _control_files(self) -> list[Path]:
        if self._clocks_root is None:
            return []
        return [clock_dir(self._clocks_root, b) / CONTROL_FILE for b in self.config.broker_ids()]

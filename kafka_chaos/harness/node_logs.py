"""The brokers' controller and state-change logs, read from a mark on.

:func:`controller_log_files` names the files of a cluster that hold those lines: the local
launcher's per-broker ``controller.log`` and ``state-change.log`` (harness/log4j.properties),
or a container's whole ``docker logs`` dump (containers log everything to stdout), and each
ZooKeeper server's log.
:class:`LogCursor` remembers each file's size at :meth:`LogCursor.mark` and reads what was
appended since (logs only grow: a restarted broker appends to the same files).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

# A directory: a cluster left by an exception (``with cluster: ...`` raising) copies its nodes'
# logs into a subdirectory of it before it is torn down, so whoever triages the failure -- a
# test's report, a user's own pytest suite -- still has them.
FAILED_LOGS_ENV = "KAFKA_CHAOS_FAILED_LOGS"

CONTROLLER_LOGS = ("controller.log", "state-change.log")
# Log4j's ``[%d]`` carries no zone, so every node's JVM runs in UTC on both launchers: the
# harness then reads the timestamps without guessing a zone (the host's offset at parse time
# is wrong across a DST change, and a container's zone depends on its image and environment).
JVM_TIMEZONE_FLAG = "-Duser.timezone=UTC"
MAX_READ_BYTES = 256 * 1024 * 1024  # a 10,000-partition failover logs a few MB; bound it anyway


class HasLogFiles(Protocol):
    """What reading a cluster's logs needs of it (every launcher; ``harness.cluster.Cluster``)."""

    def log_files(self) -> Mapping[str, Path]: ...


def controller_log_files(cluster: HasLogFiles) -> list[Path]:
    """The files holding the brokers' controller and state-change lines, and the ZooKeeper
    servers' logs (they say when a session expired: the start of a hard-killed broker's
    failover)."""
    files: list[Path] = []
    for node, path in cluster.log_files().items():
        path = Path(path)
        if str(node).startswith("zookeeper"):
            files.append(path)
            continue
        if not str(node).startswith("broker-"):
            continue
        split = [path.parent / name for name in CONTROLLER_LOGS if (path.parent / name).is_file()]
        files += split if split else [path]
    return files


class LogCursor:
    """Sizes of a cluster's controller log files at a moment, and the lines appended since."""

    def __init__(self, cluster: HasLogFiles) -> None:
        self._cluster = cluster
        self._sizes: dict[Path, int] = {}

    def mark(self) -> None:
        """Remember where every file ends now (a cluster whose logs cannot be listed, e.g. a
        container gone, marks nothing: later reads then start at the files' beginning)."""
        try:
            self._sizes = {path: _size(path) for path in controller_log_files(self._cluster)}
        except Exception as exc:  # noqa: BLE001 - logs are a measurement, never a reason to stop
            log.warning("listing the controller logs: %s", exc)
            self._sizes = {}

    def lines_since_mark(self) -> list[str]:
        lines: list[str] = []
        for path in controller_log_files(self._cluster):
            lines += _read_from(path, self._sizes.get(path, 0))
        return lines


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(offset if offset <= _size(path) else 0)  # shorter: rewritten, read it whole
            data = f.read(MAX_READ_BYTES)
    except OSError as exc:
        log.debug("reading %s: %s", path, exc)
        return []
    return data.decode("utf-8", "replace").splitlines()


def copy_node_logs(cluster: HasLogFiles, target: Path) -> list[Path]:
    """Every node's log and every broker's controller and state-change logs into ``target``
    (``broker-1.log``, ``broker-1-controller.log``, ``controller-3000.log``, ...); the files
    written. A file gone meanwhile (a container removed) is skipped."""
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for node, path in cluster.log_files().items():
        path = Path(path)
        copies = [(path, target / f"{node}.log")]
        if str(node).startswith("broker-"):
            copies += [(path.parent / name, target / f"{node}-{name}") for name in CONTROLLER_LOGS]
        for source, copy in copies:
            if source.is_file():
                shutil.copyfile(source, copy)
                written.append(copy)
    return written


def keep_failed_logs(cluster: HasLogFiles) -> Path | None:
    """When :data:`FAILED_LOGS_ENV` names a directory: the cluster's logs copied into a new
    ``<it>/<launcher class>-<8 hex digits>`` (a cluster torn down by an exception); never raises."""
    root = os.environ.get(FAILED_LOGS_ENV)
    if not root:
        return None
    name = f"{type(cluster).__name__}-{uuid.uuid4().hex[:8]}"
    target = Path(root) / name
    try:
        copy_node_logs(cluster, target)
    except Exception as exc:  # noqa: BLE001 - logs are a courtesy; the teardown must go on
        log.warning("keeping the logs of %s in %s: %s", name, target, exc)
        return None
    log.info("kept the logs of %s in %s", name, target)
    return target

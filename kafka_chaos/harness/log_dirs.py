"""Failing a broker's log directory for real, the way its running JVM sees it, and repairing it.

``chmod 000`` changes nothing for a JVM that already holds its segments open (and nothing at all
for root); what Kafka notices is a *new* file it cannot create under the directory. So the
directory is moved aside (``<dir>.failed``, same filesystem: a rename, no copy) and a regular file
takes its name. Open segments keep working until the broker's next write of a file under that
path fails: in practice the high-watermark checkpoint (``ReplicaManager.checkpointHighWatermarks``,
every ``replica.high.watermark.checkpoint.interval.ms``, 5 s by default, written only to
directories that hold a partition) -> ``CheckpointFileWithFailureHandler.write`` catches the
IOException ("Not a directory") -> ``LogDirFailureChannel.maybeAddOfflineLogDir`` ->
``ReplicaManager.handleLogDirFailure``: the replicas there go offline and, in ZooKeeper mode, the
broker writes ``/log_dir_event_notification`` for the controller
(``KafkaZkClient.propagateLogDirEvent``); with no live directory left the broker halts
(``LogManager.handleLogDirFailure``: "Shutdown broker because all log dirs ... have failed").
A regular file rather than nothing: a partition created on the directory before the failure is
noticed would otherwise recreate it (``Files.createDirectories``).

Kafka never brings a failed directory back online while running: the repair puts the directory
back and the broker must be restarted (both launchers' ``repair_log_dirs``).

Pure file operations on host paths; the launchers resolve where a broker's directory is
(:mod:`harness.local.log_dirs`, :mod:`harness.containers.log_dirs`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kafka_chaos.common.errors import HarnessError

log = logging.getLogger(__name__)

FAILED_SUFFIX = ".failed"
PLACEHOLDER_TEXT = "kafka-chaos failed this log directory (harness.log_dirs); repair: kafka-chaos restarts the broker\n"


def moved_aside(directory: Path) -> Path:
    return directory.with_name(directory.name + FAILED_SUFFIX)


def is_failed(directory: Path) -> bool:
    """Whether ``directory`` is failed by :func:`fail_directory` (moved aside)."""
    return moved_aside(directory).is_dir()


def fail_directory(directory: Path) -> None:
    """Move ``directory`` aside and put a regular file in its place (see the module docstring)."""
    if is_failed(directory):
        raise HarnessError(f"log directory {directory} is already failed")
    if not directory.is_dir():
        raise HarnessError(f"log directory {directory} does not exist (has the broker started?)")
    aside = moved_aside(directory)
    os.rename(directory, aside)
    directory.write_text(PLACEHOLDER_TEXT)
    log.info("failed log directory %s (moved to %s)", directory, aside)


def repair_directory(directory: Path) -> bool:
    """Undo :func:`fail_directory`; False when it was not failed. Idempotent."""
    aside = moved_aside(directory)
    if not aside.is_dir():
        return False
    if directory.is_dir() and not directory.is_symlink():
        # Recreated meanwhile (cannot happen while the placeholder file stands): keep it aside.
        os.rename(directory, directory.with_name(directory.name + ".recreated"))
    elif directory.exists() or directory.is_symlink():
        directory.unlink()
    os.rename(aside, directory)
    log.info("repaired log directory %s", directory)
    return True


def partition_of(name: str) -> tuple[str, int] | None:
    """``<topic>-<partition>`` of a log directory entry; None for anything else (checkpoint files,
    ``-delete``, ``-future`` and ``-stray`` directories)."""
    topic, sep, number = name.rpartition("-")
    if not sep or not topic or not number.isdigit() or (len(number) > 1 and number.startswith("0")):
        return None
    return topic, int(number)


def partitions_in(directory: Path) -> list[tuple[str, int]]:
    """The partitions whose replica lives in ``directory`` (failed or not), sorted."""
    where = moved_aside(directory) if is_failed(directory) else directory
    try:
        entries = [entry for entry in where.iterdir() if entry.is_dir()]
    except OSError as exc:
        raise HarnessError(f"cannot list log directory {where}: {exc}") from exc
    found = [partition_of(entry.name) for entry in entries]
    return sorted(p for p in found if p is not None)


class LogDirControls:
    """:class:`harness.cluster.LogDirFailer` for a launcher that says where a broker's directories
    are on this host (:meth:`_log_dir_host_paths`); mixed into both launchers."""

    def log_dirs(self, broker_id: int) -> list[str]:
        raise NotImplementedError

    def _log_dir_host_paths(self, broker_id: int) -> list[Path]:
        """Where the broker's directories are seen from this process, in ``log.dirs`` order."""
        raise NotImplementedError

    def replica_log_dirs(self, broker_id: int) -> list[Path]:
        """:class:`harness.cluster.ReplicaLogReader`: the same directories, failed ones included
        (reading a moved-aside directory's old name finds no partition there)."""
        return self._log_dir_host_paths(broker_id)

    def _log_dir(self, broker_id: int, index: int) -> Path:
        paths = self._log_dir_host_paths(broker_id)
        if isinstance(index, bool) or not 0 <= index < len(paths):
            from kafka_chaos.common.errors import UsageError

            raise UsageError(f"broker {broker_id} has log directories 0..{len(paths) - 1} "
                             f"({', '.join(self.log_dirs(broker_id))}), not {index}")
        return paths[index]

    def log_dir_partitions(self, broker_id: int, index: int) -> list[tuple[str, int]]:
        return partitions_in(self._log_dir(broker_id, index))

    def fail_log_dir(self, broker_id: int, index: int) -> None:
        fail_directory(self._log_dir(broker_id, index))

    def failed_log_dirs(self, broker_id: int) -> list[int]:
        return [i for i, path in enumerate(self._log_dir_host_paths(broker_id)) if is_failed(path)]

    def repair_log_dirs(self, broker_id: int) -> list[int]:
        return [i for i, path in enumerate(self._log_dir_host_paths(broker_id)) if repair_directory(path)]

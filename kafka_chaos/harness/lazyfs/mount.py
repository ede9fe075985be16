"""The harness's side of the crash-consistency layer: start a daemon over a backing directory,
command it, power-fail it, unmount it.

A power failure is one call: the daemon freezes (a killed process's dirty mmap pages may still
reach it; from then on every change is refused), takes back in the backing directory everything
not fsynced, and the layer is unmounted and mounted again by a fresh daemon, so that nothing of
the old mount's page cache is served any more.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from ctypes.util import find_library
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.lazyfs.control import connect_path

log = logging.getLogger(__name__)

START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0
COMMAND_TIMEOUT = 60.0  # a power failure rewrites what it takes back: bounded by the unsynced bytes

IoOperation = Literal["read", "write", "fsync"]
IoError = Literal["EIO", "ENOSPC"]


@dataclass(frozen=True)
class IoRule:
    """Every ``op`` on a path (relative to the mount, '/'-separated; ``fnmatch``'s ``*`` also
    matches '/') matching ``path_glob`` first waits ``delay_ms``, then fails with ``error`` if
    set. ``fsync`` covers fsync, fdatasync, msync and a directory's fsync."""

    op: IoOperation
    path_glob: str
    delay_ms: int = 0
    error: IoError | None = None

    def __post_init__(self) -> None:
        if self.op not in ("read", "write", "fsync"):
            raise HarnessError(f"I/O rule: op {self.op!r} is not read, write or fsync")
        if self.error is not None and (self.error not in ("EIO", "ENOSPC") or self.op == "read"):
            raise HarnessError(f"I/O rule: error {self.error!r} on {self.op}: only writes or fsyncs fail, "
                               f"with EIO or ENOSPC")
        if self.delay_ms < 0:
            raise HarnessError(f"I/O rule: negative delay {self.delay_ms} ms")


@dataclass(frozen=True)
class PowerFailReport:
    """What a power failure took back."""

    files_truncated: int  # files whose contents went back to their last fsync
    bytes_dropped: int  # appended bytes cut off plus overwritten bytes restored
    entries_undone: int  # creates, renames, unlinks, mkdirs and rmdirs taken back
    undo_actions: tuple[str, ...]  # "rm PATH" / "mv FROM TO", in the order applied

    def __str__(self) -> str:
        return (f"{self.files_truncated} file(s) back to their last fsync ({self.bytes_dropped} bytes dropped), "
                f"{self.entries_undone} namespace change(s) undone")


def lazyfs_available() -> str | None:
    """None when this machine can run the layer, else the reason in one line."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (a container needs --device /dev/fuse --cap-add SYS_ADMIN)"
    if os.geteuid() != 0:
        return "not root: the layer mounts with allow_other"
    if find_library("fuse3") is None:
        return "libfuse3 missing (apt-get install fuse3)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 missing (apt-get install fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy unusable: {exc}"
    return None


def is_mounted(mount: Path) -> bool:
    target = os.path.realpath(mount)
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) > 1 and _unescape(fields[1]) == target:
                return True
    return False


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape") if "\\" in field else field


class LazyMount:
    """One daemon serving ``mount`` over ``backing``; :meth:`start` it."""

    def __init__(self, backing: Path, mount: Path, control: Path) -> None:
        self.backing = backing
        self.mount = mount
        self.control = control
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, backing: Path, mount: Path, control: Path) -> LazyMount:
        """Mount the layer; returns once the mount and its control socket answer."""
        problem = lazyfs_available()
        if problem is not None:
            raise HarnessError(f"crash-consistency layer: {problem}")
        layer = cls(backing, mount, control)
        layer._launch()
        return layer

    @property
    def log_path(self) -> Path:
        return self.control.with_suffix(".log")

    def _launch(self) -> None:
        if is_mounted(self.mount):
            raise HarnessError(f"{self.mount} is already a mount point")
        command = [sys.executable, "-m", "kafka_chaos.harness.lazyfs.daemon", "--backing", str(self.backing),
                   "--mount", str(self.mount), "--control", str(self.control)]
        with open(self.log_path, "ab") as output:
            # Its own session: a Ctrl-C of the harness must not kill it before the broker on it.
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(self._answers, timeout=START_TIMEOUT, interval=0.05,
                       description=f"the crash-consistency layer on {self.mount}",
                       retry_on=(OSError,))
        except WaitTimeout:
            self.stop()
            raise

    def _answers(self) -> bool:
        process = self._process
        if process is not None and process.poll() is not None:
            raise _DaemonDied(f"the crash-consistency daemon on {self.mount} exited with status "
                              f"{process.returncode} (see {self.log_path})")
        if not is_mounted(self.mount):
            return False
        self._command({"command": "ping"}, timeout=1.0)
        return True

    def _command(self, request: dict[str, Any], timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            connection.connect(connect_path(str(self.control)))
            connection.sendall(json.dumps(request).encode() + b"\n")
            with connection.makefile("rb") as stream:
                line = stream.readline()
        if not line:
            raise HarnessError(f"the crash-consistency daemon on {self.mount} closed its control socket")
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok", False):
            raise HarnessError(f"the crash-consistency daemon on {self.mount}: {answer.get('error')}")
        return answer

    def power_fail(self) -> PowerFailReport:
        """Drop everything not fsynced, then serve what is left from a fresh mount. The
        processes using the mount must be dead (their files are closed by the unmount)."""
        answer = self._command({"command": "power_fail"})
        self._unmount_and_reap()
        self._launch()
        return PowerFailReport(files_truncated=int(answer["files_truncated"]),
                               bytes_dropped=int(answer["bytes_dropped"]),
                               entries_undone=int(answer["entries_undone"]),
                               undo_actions=tuple(str(action) for action in answer["undo_actions"]))

    def set_rules(self, rules: Sequence[IoRule]) -> None:
        """Replace the I/O rules."""
        self._command({"command": "set_rules", "rules": [asdict(rule) for rule in rules]})

    def clear_rules(self) -> None:
        self._command({"command": "clear_rules"})

    def stats(self) -> dict[str, int | bool]:
        """The daemon's counters: reads, writes, bytes_written, fsyncs, directory_fsyncs, delayed,
        failed, refused_frozen, purged, dirty_files, pending_namespace_operations, frozen, rules."""
        return {key: value for key, value in self._command({"command": "stats"}).items()
                if isinstance(value, (int, bool))}

    def stop(self) -> None:
        """Unmount and end the daemon (what was not fsynced stays: a clean shutdown). Idempotent."""
        self._unmount_and_reap()

    def _unmount_and_reap(self) -> None:
        process, self._process = self._process, None
        if is_mounted(self.mount):
            self._unmount()
        if process is None:
            return
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            log.warning("the crash-consistency daemon on %s did not exit after its unmount: killing it", self.mount)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT)
        if is_mounted(self.mount):  # a killed daemon leaves a dead mount ("Transport endpoint ...")
            self._fusermount("-uz")

    def _unmount(self) -> None:
        if self._fusermount("-u"):
            return
        log.warning("%s busy: detaching it lazily", self.mount)
        if not self._fusermount("-uz"):
            raise HarnessError(f"cannot unmount the crash-consistency layer on {self.mount} (see {self.log_path})")

    def _fusermount(self, option: str) -> bool:
        result = subprocess.run(["fusermount3", option, str(self.mount)], capture_output=True, text=True,
                                timeout=STOP_TIMEOUT, check=False)
        if result.returncode != 0:
            log.info("fusermount3 %s %s: %s", option, self.mount, result.stderr.strip())
        return result.returncode == 0

    def __enter__(self) -> LazyMount:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


class _DaemonDied(HarnessError):
    """Not retried by the start's wait."""

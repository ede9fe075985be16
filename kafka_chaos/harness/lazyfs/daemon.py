"""The crash-consistency layer's FUSE daemon: a passthrough filesystem over a backing directory
that keeps the undo information of :mod:`.journal` and answers a control socket.

Run as its own process (the broker's I/O must not wait on the harness's GIL)::

    python -m kafka_chaos.harness.lazyfs.daemon --backing DIR --mount DIR --control SOCK

The control socket takes one JSON object a line, ``{"command": ...}``, and answers one:
``ping``, ``stats``, ``set_rules`` (``"rules": [{"op", "path_glob", "delay_ms", "error"}]``),
``clear_rules``, ``power_fail`` (freeze, apply the undo actions to the backing directory, answer
what was dropped; the mount stays frozen -- every change refused with EIO -- until it is
unmounted, because the kernel may still write back dirty mmap pages of a killed process).
"""

from __future__ import annotations

import argparse
import errno
import fnmatch
import json
import logging
import os
import shutil
import socket
import stat
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import mfusepy

from kafka_chaos.harness.lazyfs.control import connect_path
from kafka_chaos.harness.lazyfs.journal import (ContentUndo, Journal, MoveEntry, NamespaceUndo, PowerFailPlan,
                                                 rebased)

log = logging.getLogger(__name__)

TRASH = ".lazyfs-trash"
"""Removed entries wait here (hidden from the mount) until their removal is durable."""

ERRORS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC}
OPERATIONS = ("read", "write", "fsync")


@dataclass(frozen=True)
class Rule:
    op: str
    path_glob: str
    delay_ms: int
    error: str | None


@dataclass
class Handle:
    ino: int
    path: str  # relative to the root, as opened (renames of it are followed)


@dataclass
class Counters:
    reads: int = 0
    writes: int = 0
    bytes_written: int = 0
    fsyncs: int = 0
    directory_fsyncs: int = 0
    delayed: int = 0
    failed: int = 0
    refused_frozen: int = 0
    purged: int = 0


def relative(path: str) -> str:
    return path.strip("/")


class LazyOperations(mfusepy.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self, backing: str) -> None:
        self.root = os.path.realpath(backing)
        self.trash = os.path.join(self.root, TRASH)
        self.journal = Journal()
        self._mutex = threading.RLock()
        self.handles: dict[int, Handle] = {}
        self.directories: dict[int, str] = {}  # open directory handles: their paths
        self._opened_directories = 0
        self.rules: tuple[Rule, ...] = ()
        self.frozen = False
        self.counters = Counters()
        self._parked = 0
        self._empty_trash()

    # -- helpers ------------------------------------------------------------------------------

    def _empty_trash(self) -> None:
        """What a previous run left parked was removed then: a clean unmount makes it final."""
        shutil.rmtree(self.trash, ignore_errors=True)
        os.makedirs(self.trash, exist_ok=True)

    def _backing(self, path: str) -> str:
        rel = relative(path)
        if rel == TRASH or rel.startswith(TRASH + "/"):
            raise mfusepy.FuseOSError(errno.ENOENT)
        return os.path.join(self.root, rel)

    def _check_not_frozen(self) -> None:
        if self.frozen:
            self.counters.refused_frozen += 1
            raise mfusepy.FuseOSError(errno.EIO)

    def _obey_rules(self, op: str, rel: str) -> None:
        for rule in self.rules:
            if rule.op != op or not fnmatch.fnmatchcase(rel, rule.path_glob):
                continue
            if rule.delay_ms > 0:
                self.counters.delayed += 1
                time.sleep(rule.delay_ms / 1000)
            if rule.error is not None:
                self.counters.failed += 1
                raise mfusepy.FuseOSError(ERRORS[rule.error])

    def _path_of(self, path: str | None, fh: int | None) -> str:
        if path is not None:
            return relative(path)
        handle = self.handles.get(fh) if fh is not None else None
        return handle.path if handle is not None else ""

    def _park(self, backing_path: str) -> str:
        """Move an entry to the trash; its name there relative to the root."""
        self._parked += 1
        parked = f"{TRASH}/{self._parked}"
        os.rename(backing_path, os.path.join(self.root, parked))
        return parked

    def _purge(self, parked: list[str]) -> None:
        for rel in parked:
            path = os.path.join(self.root, rel)
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(path, ignore_errors=True)
            else:
                self.journal.forget(info.st_ino)
                os.unlink(path)
            self.counters.purged += 1

    def _save_originals(self, fd: int, ino: int, start: int, end: int, size: int) -> None:
        for first, last in self.journal.before_change(ino, start, end, size):
            self.journal.keep_original(ino, first, os.pread(fd, last - first, first))

    def _follow_rename(self, old: str, new: str) -> None:
        for handle in self.handles.values():
            handle.path = rebased(handle.path, old, new)
        for fh, path in self.directories.items():
            self.directories[fh] = rebased(path, old, new)

    # -- FUSE operations ----------------------------------------------------------------------

    def init_with_config(self, conn_info: Any, config_3: Any) -> None:
        if config_3 is not None:
            # Operations on an unlinked open file come with no path: Kafka deletes a segment
            # (LogSegment.deleteIfExists) while a fetch may still read it.
            config_3.nullpath_ok = 1
            config_3.hard_remove = 1
            config_3.use_ino = 1

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        info = os.fstat(fh) if fh is not None else os.lstat(self._backing(path or "/"))
        return {key: getattr(info, key) for key in (
            "st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_blksize")} | {
            "st_atime": info.st_atime_ns, "st_mtime": info.st_mtime_ns, "st_ctime": info.st_ctime_ns}

    def opendir(self, path: str) -> int:
        self._backing(path)
        with self._mutex:
            self._opened_directories += 1
            self.directories[self._opened_directories] = relative(path)
            return self._opened_directories

    def readdir(self, path: str | None, fh: int) -> list[str | tuple[str, dict[str, int], int]]:
        rel = relative(path) if path is not None else self.directories[fh]
        entries: list[str | tuple[str, dict[str, int], int]] = [".", ".."]
        with os.scandir(self._backing(rel)) as listing:
            for entry in listing:
                if rel == "" and entry.name == TRASH:
                    continue
                # With use_ino the inode number must come along: readdir(3) skips entries of inode 0.
                entries.append((entry.name, {"st_ino": entry.inode(), "st_mode": _file_type(entry)}, 0))
        return entries

    def releasedir(self, path: str | None, fh: int) -> int:
        self.directories.pop(fh, None)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        info = os.statvfs(self.root)
        return {key: getattr(info, key) for key in (
            "f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail",
            "f_flag", "f_namemax")}

    def readlink(self, path: str) -> str:
        return os.readlink(self._backing(path))

    def chmod(self, path: str | None, mode: int) -> int:
        if path is not None:
            os.chmod(self._backing(path), mode)
        return 0

    def chown(self, path: str | None, uid: int, gid: int) -> int:
        if path is not None:
            os.chown(self._backing(path), uid, gid, follow_symlinks=False)
        return 0

    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        if path is not None and times is not None:
            os.utime(self._backing(path), ns=times, follow_symlinks=False)
        elif path is not None:
            os.utime(self._backing(path), follow_symlinks=False)
        return 0

    def open(self, path: str, flags: int) -> int:
        backing = self._backing(path)
        writing = flags & os.O_ACCMODE != os.O_RDONLY
        if writing:
            self._check_not_frozen()
        # Read access too, to keep what a write overwrites; O_APPEND off, the kernel gives offsets.
        fd = os.open(backing, (os.O_RDWR if writing else os.O_RDONLY) | (flags & os.O_NOFOLLOW))
        self.handles[fd] = Handle(os.fstat(fd).st_ino, relative(path))
        if flags & os.O_TRUNC:
            self._truncate_fd(fd, 0)
        return fd

    def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
        backing = self._backing(path)
        with self._mutex:
            self._check_not_frozen()
            existed = os.path.lexists(backing)
            fd = os.open(backing, os.O_RDWR | os.O_CREAT | (flags & os.O_EXCL), mode)
            ino = os.fstat(fd).st_ino
            self.handles[fd] = Handle(ino, relative(path))
            if not existed:
                self.journal.forget(ino)
                self.journal.created(relative(path))
            elif flags & os.O_TRUNC:
                self._truncate_fd(fd, 0)
        return fd

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        self._obey_rules("read", self._path_of(path, fh))
        self.counters.reads += 1
        return os.pread(fh, size, offset)

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        self._obey_rules("write", self._path_of(path, fh))
        with self._mutex:
            self._check_not_frozen()
            size = os.fstat(fh).st_size
            self._save_originals(fh, self.handles[fh].ino, offset, offset + len(data), size)
            written = os.pwrite(fh, data, offset)
            self.counters.writes += 1
            self.counters.bytes_written += written
        return written

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        self._check_not_frozen()
        if fh is not None:
            self._truncate_fd(fh, length)
            return 0
        fd = os.open(self._backing(path or "/"), os.O_RDWR)
        try:
            self._truncate_fd(fd, length)
        finally:
            os.close(fd)
        return 0

    def _truncate_fd(self, fd: int, length: int) -> None:
        with self._mutex:
            self._check_not_frozen()
            info = os.fstat(fd)
            self._save_originals(fd, info.st_ino, length, max(length, info.st_size), info.st_size)
            os.ftruncate(fd, length)

    def flush(self, path: str | None, fh: int) -> int:
        return 0

    def release(self, path: str | None, fh: int) -> int:
        self.handles.pop(fh, None)
        os.close(fh)
        return 0

    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self._obey_rules("fsync", self._path_of(path, fh))
        with self._mutex:
            self._check_not_frozen()
            self.counters.fsyncs += 1
            self.journal.file_synced(self.handles[fh].ino)
        return 0

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        rel = relative(path) if path is not None else self.directories.get(fh, "")
        self._obey_rules("fsync", rel)
        with self._mutex:
            self._check_not_frozen()
            self.counters.directory_fsyncs += 1
            self._purge(self.journal.directory_synced(rel))
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        backing = self._backing(path)
        with self._mutex:
            self._check_not_frozen()
            os.mkdir(backing, mode)
            self.journal.made_directory(relative(path))
        return 0

    def unlink(self, path: str) -> int:
        backing = self._backing(path)
        with self._mutex:
            self._check_not_frozen()
            if stat.S_ISDIR(os.lstat(backing).st_mode):
                raise mfusepy.FuseOSError(errno.EISDIR)
            self.journal.unlinked(relative(path), self._park(backing))
        return 0

    def rmdir(self, path: str) -> int:
        backing = self._backing(path)
        with self._mutex:
            self._check_not_frozen()
            if not stat.S_ISDIR(os.lstat(backing).st_mode):
                raise mfusepy.FuseOSError(errno.ENOTDIR)
            if os.listdir(backing):
                raise mfusepy.FuseOSError(errno.ENOTEMPTY)
            self.journal.removed_directory(relative(path), self._park(backing))
        return 0

    def rename(self, old: str, new: str) -> int:
        source, destination = self._backing(old), self._backing(new)
        old_rel, new_rel = relative(old), relative(new)
        if old_rel == new_rel:
            return 0
        with self._mutex:
            self._check_not_frozen()
            source_is_dir = stat.S_ISDIR(os.lstat(source).st_mode)
            replaced = None
            if os.path.lexists(destination):
                destination_is_dir = stat.S_ISDIR(os.lstat(destination).st_mode)
                if destination_is_dir and not source_is_dir:
                    raise mfusepy.FuseOSError(errno.EISDIR)
                if source_is_dir and not destination_is_dir:
                    raise mfusepy.FuseOSError(errno.ENOTDIR)
                if destination_is_dir and os.listdir(destination):
                    raise mfusepy.FuseOSError(errno.ENOTEMPTY)
                replaced = self._park(destination)
            os.rename(source, destination)
            self.journal.renamed(old_rel, new_rel, replaced)
            self._follow_rename(old_rel, new_rel)
        return 0

    # -- control ------------------------------------------------------------------------------

    def set_rules(self, rules: list[dict[str, Any]]) -> None:
        parsed = []
        for rule in rules:
            op, error = rule["op"], rule.get("error")
            if op not in OPERATIONS or (error is not None and error not in ERRORS):
                raise ValueError(f"bad rule {rule!r}")
            parsed.append(Rule(op, str(rule["path_glob"]), int(rule.get("delay_ms", 0)), error))
        self.rules = tuple(parsed)

    def stats(self) -> dict[str, Any]:
        with self._mutex:
            return {
                "reads": self.counters.reads, "writes": self.counters.writes,
                "bytes_written": self.counters.bytes_written, "fsyncs": self.counters.fsyncs,
                "directory_fsyncs": self.counters.directory_fsyncs, "delayed": self.counters.delayed,
                "failed": self.counters.failed, "refused_frozen": self.counters.refused_frozen,
                "purged": self.counters.purged, "dirty_files": len(self.journal.dirty_inodes()),
                "pending_namespace_operations": len(self.journal.pending_operations()),
                "frozen": self.frozen, "rules": len(self.rules),
            }

    def power_fail(self) -> dict[str, Any]:
        """Freeze, then take back everything not durable in the backing directory."""
        with self._mutex:
            self.frozen = True
            plan = self.journal.power_fail()
            report = apply_plan(self.root, plan)
            shutil.rmtree(self.trash, ignore_errors=True)
            os.makedirs(self.trash, exist_ok=True)
        log.info("power failure: %s", report)
        return report


def _file_type(entry: os.DirEntry[str]) -> int:
    if entry.is_symlink():
        return stat.S_IFLNK
    return stat.S_IFDIR if entry.is_dir(follow_symlinks=False) else stat.S_IFREG


def inodes_under(root: str) -> dict[int, str]:
    """Every regular file under ``root`` (the trash included) by inode number."""
    found: dict[int, str] = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                found[info.st_ino] = path
    return found


def apply_plan(root: str, plan: PowerFailPlan) -> dict[str, Any]:
    """Apply a power failure's undo actions to the backing directory; what they dropped."""
    located = inodes_under(root) if plan.contents else {}
    files_truncated = 0
    bytes_dropped = 0
    for undo in plan.contents:
        path = located.get(undo.ino)
        if path is None:
            continue  # purged since: nothing of it survives
        dropped = _undo_content(path, undo)
        files_truncated += 1
        bytes_dropped += dropped
    undone = [_undo_entry(root, action) for action in plan.namespace]
    return {"files_truncated": files_truncated, "bytes_dropped": bytes_dropped,
            "entries_undone": sum(undone), "undo_actions": [_describe(action) for action in plan.namespace]}


def _undo_content(path: str, undo: ContentUndo) -> int:
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        os.ftruncate(fd, undo.size)
        for offset, data in undo.regions:
            os.pwrite(fd, data, offset)
        return max(0, size - undo.size) + sum(len(data) for _, data in undo.regions)
    finally:
        os.close(fd)


def _undo_entry(root: str, action: NamespaceUndo) -> bool:
    """Apply one namespace undo; False (and a warning) when it cannot be: the rest still is."""
    try:
        return _try_undo_entry(root, action)
    except OSError as exc:
        log.warning("power failure: cannot %s: %s", _describe(action), exc)
        return False


def _try_undo_entry(root: str, action: NamespaceUndo) -> bool:
    if isinstance(action, MoveEntry):
        source = os.path.join(root, action.source)
        if not os.path.lexists(source):
            log.warning("power failure: %s to move back is missing", action.source)
            return False
        os.rename(source, os.path.join(root, action.destination))
        return True
    path = os.path.join(root, action.path)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    else:
        log.warning("power failure: %s to remove is missing", action.path)
        return False
    return True


def _describe(action: NamespaceUndo) -> str:
    if isinstance(action, MoveEntry):
        return f"mv {action.source} {action.destination}"
    return f"rm {action.path}"


class PassFileHandles(mfusepy.FUSE):  # type: ignore[misc]
    """mfusepy drops the file handle of a libfuse3 truncate; an unlinked open file (no path)
    needs it."""

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        fh = fip.contents.fh if fip else None
        decoded = None if path is None else path.decode(self.encoding, self.errors)
        return int(self.operations.truncate(decoded, length, fh))


def serve_control(operations: LazyOperations, control: str) -> socket.socket:
    """Answer the control socket on a daemon thread."""
    if os.path.lexists(control):
        os.unlink(control)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(connect_path(control))
    server.listen(8)
    threading.Thread(target=_accept, args=(operations, server), name="lazyfs-control", daemon=True).start()
    return server


def _accept(operations: LazyOperations, server: socket.socket) -> None:
    while True:
        connection, _ = server.accept()
        threading.Thread(target=_converse, args=(operations, connection), daemon=True).start()


def _converse(operations: LazyOperations, connection: socket.socket) -> None:
    with connection, connection.makefile("rwb") as stream:
        for line in stream:
            try:
                answer = {"ok": True} | _answer(operations, json.loads(line))
            except Exception as exc:  # the caller gets it as one line
                log.exception("control command failed")
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            stream.write(json.dumps(answer).encode() + b"\n")
            stream.flush()


def _answer(operations: LazyOperations, request: dict[str, Any]) -> dict[str, Any]:
    command = request.get("command")
    if command == "ping":
        return {"pid": os.getpid()}
    if command == "stats":
        return operations.stats()
    if command == "set_rules":
        operations.set_rules(list(request["rules"]))
        return {}
    if command == "clear_rules":
        operations.set_rules([])
        return {}
    if command == "power_fail":
        return operations.power_fail()
    raise ValueError(f"unknown command {command!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backing", required=True, help="the directory holding what is durable")
    parser.add_argument("--mount", required=True, help="where the layer is mounted")
    parser.add_argument("--control", required=True, help="the control socket's path")
    parser.add_argument("--debug", action="store_true", help="libfuse's debug output")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s lazyfs %(levelname)s %(message)s")
    for directory in (args.backing, args.mount):
        if not os.path.isdir(directory):
            print(f"lazyfs: {directory} is not a directory", file=sys.stderr)
            return 2
    operations = LazyOperations(args.backing)
    server = serve_control(operations, args.control)
    try:
        PassFileHandles(operations, args.mount, foreground=True, allow_other=True, default_permissions=True,
                        fsname="lazyfs", subtype="lazyfs", debug=args.debug)
    finally:
        server.close()
        if os.path.lexists(args.control):
            os.unlink(args.control)
    # Unmounted: what waits in the trash is removed for good, and a broker started on the backing
    # directory itself must not find a directory that is no partition (LogManager.loadLog).
    shutil.rmtree(operations.trash, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a power failure takes back: the pure bookkeeping of the crash-consistency layer (no I/O).

Two kinds of undo information, each cleared by the fsync that makes its change durable:

* contents, per inode: the file's size at its first change since its last fsync/fdatasync and
  the original bytes of any region below that size that was overwritten or truncated away.
  Kafka appends (``FileRecords.append``), so this is usually only "truncate back to size S".
  ``fdatasync`` clears it like ``fsync``: on Linux it also persists the size a read needs.
* the namespace, as a list of pending operations (create, mkdir, rename, unlink, rmdir), each
  made durable by an fsync of one directory: the parent of the entry it creates or removes, for
  a rename the destination's parent (``ext4_sync_file`` commits the journal transaction holding
  the rename, and the destination entry is what a reader looks up). An operation made durable
  also makes durable every earlier pending operation it depends on -- one touching the same
  path, an ancestor or a descendant of it (a create in a directory made earlier, a rename of a
  file created earlier) -- as one journal commit on ext4 carries every earlier metadata change.
  So the pending operations never depend on a durable one, and undoing them newest first
  always finds the paths each one left.

Removed entries are not removed: the layer parks them in a trash directory (an open file keeps
working), to be moved back on a power failure or purged once their removal is durable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Path = str
"""A path relative to the layer's root, '/'-separated, no leading '/'; the root is ''."""


def parent_of(path: Path) -> Path:
    return path.rpartition("/")[0]


def related(first: Path, second: Path) -> bool:
    """The same path, or one inside the other."""
    return first == second or second.startswith(first + "/") or first.startswith(second + "/")


def rebased(path: Path, old: Path, new: Path) -> Path:
    """``path`` after a rename of ``old`` to ``new`` (unchanged when not inside ``old``)."""
    if path == old:
        return new
    if path.startswith(old + "/"):
        return new + path[len(old):]
    return path


@dataclass(frozen=True)
class ContentUndo:
    """Truncate inode ``ino`` to ``size``, then write back each ``(offset, original bytes)``."""

    ino: int
    size: int
    regions: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True)
class RemoveEntry:
    """Remove ``path`` (a file, or a directory with whatever it holds): the undo of a create or mkdir."""

    path: Path


@dataclass(frozen=True)
class MoveEntry:
    """Rename ``source`` to ``destination``: the undo of a rename, or an unlink/rmdir moved back
    from the trash."""

    source: Path
    destination: Path


NamespaceUndo = RemoveEntry | MoveEntry
OperationKind = Literal["create", "mkdir", "rename", "unlink", "rmdir"]


@dataclass(frozen=True)
class PowerFailPlan:
    """What to apply to the backing directory, in order: every content undo (located by inode),
    then the namespace undos (newest operation first)."""

    contents: tuple[ContentUndo, ...]
    namespace: tuple[NamespaceUndo, ...]


@dataclass
class _PendingOperation:
    kind: OperationKind
    directory: Path  # the directory whose fsync makes it durable (follows renames of it)
    paths: tuple[Path, ...]  # what it touched, for the dependencies
    undo: tuple[NamespaceUndo, ...]  # applied in this order
    parked: tuple[Path, ...]  # trash entries to purge once it is durable


@dataclass
class _ContentRecord:
    size: int
    regions: list[tuple[int, bytes]] = field(default_factory=list)  # sorted, disjoint

    def unsaved(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` with no saved original yet."""
        gaps: list[tuple[int, int]] = []
        cursor = start
        for offset, data in self.regions:
            region_end = offset + len(data)
            if region_end <= cursor:
                continue
            if offset >= end:
                break
            if offset > cursor:
                gaps.append((cursor, offset))
            cursor = max(cursor, region_end)
        if cursor < end:
            gaps.append((cursor, end))
        return gaps


class Journal:
    """The undo information of one layer. Not thread-safe: the daemon serializes its calls."""

    def __init__(self) -> None:
        self._contents: dict[int, _ContentRecord] = {}
        self._pending: list[_PendingOperation] = []

    # -- contents -----------------------------------------------------------------------------

    def before_change(self, ino: int, start: int, end: int, current_size: int) -> list[tuple[int, int]]:
        """Inode ``ino`` (now ``current_size`` bytes long) is about to change in ``[start, end)``
        (a write, or a truncate to ``start`` with ``end`` its current size); the ranges
        ``(start, end)`` whose original bytes the caller must read now and hand to
        :meth:`keep_original` before changing them."""
        record = self._contents.get(ino)
        if record is None:
            record = self._contents[ino] = _ContentRecord(size=current_size)
        # Below ``current_size`` every byte of [0, record.size) not saved yet is still the
        # original: every change there saves it first, a truncate saves what it cuts.
        limit = min(end, record.size, current_size)
        return record.unsaved(start, limit) if start < limit else []

    def keep_original(self, ino: int, offset: int, data: bytes) -> None:
        record = self._contents[ino]
        record.regions.append((offset, data))
        record.regions.sort(key=lambda region: region[0])

    def file_synced(self, ino: int) -> None:
        """fsync or fdatasync of the inode: its contents are durable."""
        self._contents.pop(ino, None)

    def forget(self, ino: int) -> None:
        """The inode is gone for good (purged from the trash, or a new file took its number)."""
        self._contents.pop(ino, None)

    def dirty_inodes(self) -> list[int]:
        return sorted(self._contents)

    # -- namespace ----------------------------------------------------------------------------

    def created(self, path: Path) -> None:
        self._record("create", parent_of(path), (path,), (RemoveEntry(path),), ())

    def made_directory(self, path: Path) -> None:
        self._record("mkdir", parent_of(path), (path,), (RemoveEntry(path),), ())

    def unlinked(self, path: Path, parked: Path) -> None:
        """``path`` was moved to the trash as ``parked`` instead of being removed."""
        self._record("unlink", parent_of(path), (path, parked), (MoveEntry(parked, path),), (parked,))

    def removed_directory(self, path: Path, parked: Path) -> None:
        self._record("rmdir", parent_of(path), (path, parked), (MoveEntry(parked, path),), (parked,))

    def renamed(self, source: Path, destination: Path, replaced_parked: Path | None) -> None:
        """``source`` renamed to ``destination``; what ``destination`` named before was moved to
        the trash as ``replaced_parked`` first."""
        for operation in self._pending:
            operation.directory = rebased(operation.directory, source, destination)
        undo: tuple[NamespaceUndo, ...] = (MoveEntry(destination, source),)
        paths: tuple[Path, ...] = (source, destination)
        parked: tuple[Path, ...] = ()
        if replaced_parked is not None:
            undo += (MoveEntry(replaced_parked, destination),)
            paths += (replaced_parked,)
            parked = (replaced_parked,)
        self._record("rename", parent_of(destination), paths, undo, parked)

    def directory_synced(self, directory: Path) -> list[Path]:
        """fsync of ``directory``: its pending operations (and every earlier one they depend on)
        are durable. The trash entries now to purge for real."""
        durable = [operation.directory == directory for operation in self._pending]
        for later in reversed(range(len(self._pending))):
            if not durable[later]:
                continue
            for earlier in range(later):
                if not durable[earlier] and _depends(self._pending[later], self._pending[earlier]):
                    durable[earlier] = True
        purged = [path for operation, made in zip(self._pending, durable) if made for path in operation.parked]
        self._pending = [operation for operation, made in zip(self._pending, durable) if not made]
        return purged

    def pending_operations(self) -> list[OperationKind]:
        return [operation.kind for operation in self._pending]

    # -- power failure ------------------------------------------------------------------------

    def power_fail(self) -> PowerFailPlan:
        """Everything not durable, as undo actions; the journal is empty afterwards."""
        contents = tuple(ContentUndo(ino, record.size, tuple(record.regions))
                         for ino, record in sorted(self._contents.items()))
        namespace = tuple(undo for operation in reversed(self._pending) for undo in operation.undo)
        self._contents.clear()
        self._pending.clear()
        return PowerFailPlan(contents, namespace)

    def _record(self, kind: OperationKind, directory: Path, paths: tuple[Path, ...],
                undo: tuple[NamespaceUndo, ...], parked: tuple[Path, ...]) -> None:
        self._pending.append(_PendingOperation(kind, directory, paths, undo, parked))


def _depends(later: _PendingOperation, earlier: _PendingOperation) -> bool:
    return any(related(first, second) for first in later.paths for second in earlier.paths)

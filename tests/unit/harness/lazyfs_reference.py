"""A small reference model of what survives a power failure, for the crash-consistency layer's
tests (test_lazyfs_journal.py against the pure journal, test_lazyfs_mount.py against a real mount).

It keeps what is live and what is durable as plain dicts and never undoes anything: a file's
durable contents are its contents at its last fsync; namespace operations wait in a list until
an fsync of their directory makes them (and the earlier ones they depend on) durable, and are
then replayed, in their order, on the durable namespace. A power failure makes the live state
the durable one.

Operations are tuples; :func:`operations` draws sequences of them with Hypothesis. Operations
that the live state does not allow (writing a missing file, rmdir of a full directory) are
skipped by :meth:`Model.allows`, and the system under test is only given the allowed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

DIRECTORIES = ("", "d", "e", "d/f")
FILES = tuple(f"{directory}/{name}".lstrip("/") for directory in DIRECTORIES for name in ("a", "b"))
INITIAL_DIRECTORIES = frozenset({"", "d"})
INITIAL_FILES = {"d/a": b"initial contents"}

Operation = tuple[Any, ...]


def parent_of(path: str) -> str:
    return path.rpartition("/")[0]


def inside(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor + "/")


def related(first: str, second: str) -> bool:
    return inside(first, second) or inside(second, first)


def moved(path: str, source: str, destination: str) -> str:
    return destination + path[len(source):] if inside(path, source) else path


def written(data: bytes, offset: int, chunk: bytes) -> bytes:
    padded = data + bytes(max(0, offset - len(data)))
    return padded[:offset] + chunk + padded[offset + len(chunk):]


def chunk_for(step: int, length: int) -> bytes:
    """Recognizable bytes for the step'th operation."""
    return bytes((step * 7 + index) % 251 + 1 for index in range(length))


@dataclass
class Namespace:
    directories: set[str]
    files: dict[str, int]  # path -> inode

    def copy(self) -> Namespace:
        return Namespace(set(self.directories), dict(self.files))

    def exists(self, path: str) -> bool:
        return path in self.directories or path in self.files

    def children(self, directory: str) -> list[str]:
        return [path for path in (*self.directories, *self.files) if path and parent_of(path) == directory]

    def apply(self, operation: Operation) -> None:
        kind = operation[0]
        if kind == "create":
            self.files[operation[1]] = operation[2]
        elif kind == "mkdir":
            self.directories.add(operation[1])
        elif kind == "unlink":
            del self.files[operation[1]]
        elif kind == "rmdir":
            self.directories.discard(operation[1])
        elif kind == "rename":
            source, destination = operation[1], operation[2]
            self.files.pop(destination, None)
            self.directories.discard(destination)
            self.files = {moved(path, source, destination): ino for path, ino in self.files.items()}
            self.directories = {moved(path, source, destination) for path in self.directories}


@dataclass
class Pending:
    operation: Operation
    directory: str
    paths: tuple[str, ...]


@dataclass
class Model:
    live: Namespace = field(default_factory=lambda: Namespace(set(INITIAL_DIRECTORIES), {}))
    durable: Namespace = field(default_factory=lambda: Namespace(set(INITIAL_DIRECTORIES), {}))
    data: dict[int, bytes] = field(default_factory=dict)
    durable_data: dict[int, bytes] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)
    handles: list[int] = field(default_factory=list)  # inodes of files opened by "open"
    next_ino: int = 1

    @classmethod
    def initial(cls) -> Model:
        model = cls()
        for path, contents in INITIAL_FILES.items():
            ino = model._new_inode()
            model.live.files[path] = model.durable.files[path] = ino
            model.data[ino] = model.durable_data[ino] = contents
        return model

    def _new_inode(self) -> int:
        self.next_ino += 1
        return self.next_ino - 1

    # -- which operations the live state allows ---------------------------------------------

    def allows(self, operation: Operation) -> bool:
        kind, live = operation[0], self.live
        if kind in ("create", "mkdir"):
            return parent_of(operation[1]) in live.directories and not live.exists(operation[1])
        if kind == "mmap_write":  # a mapping neither extends the file nor maps an empty one
            return operation[1] in live.files and operation[2] + operation[3] <= len(
                self.data[live.files[operation[1]]])
        if kind in ("write", "truncate", "fsync", "open", "unlink"):
            return operation[1] in live.files
        if kind in ("write_handle", "fsync_handle"):
            return operation[1] < len(self.handles)
        if kind == "fsyncdir":
            return operation[1] in live.directories
        if kind == "rmdir":
            return operation[1] in live.directories and operation[1] != "" and not live.children(operation[1])
        if kind == "rename":
            return self._allows_rename(operation[1], operation[2])
        return kind == "power_fail"

    def _allows_rename(self, source: str, destination: str) -> bool:
        live = self.live
        if not live.exists(source) or source == "" or source == destination:
            return False
        if parent_of(destination) not in live.directories or inside(destination, source):
            return False
        if not live.exists(destination):
            return True
        if (source in live.directories) != (destination in live.directories):
            return False
        return destination in live.files or not live.children(destination)

    # -- applying them ------------------------------------------------------------------------

    def apply(self, operation: Operation) -> None:
        kind = operation[0]
        if kind in ("write", "truncate", "fsync", "mmap_write"):
            self._apply_content(kind, self.live.files[operation[1]], operation[2:])
        elif kind in ("write_handle", "fsync_handle"):
            self._apply_content(kind.removesuffix("_handle"), self.handles[operation[1]], operation[2:])
        elif kind == "open":
            self.handles.append(self.live.files[operation[1]])
        elif kind == "fsyncdir":
            self._sync_directory(operation[1])
        elif kind == "power_fail":
            self.power_fail()
        else:
            self._apply_namespace(operation)

    def _apply_content(self, kind: str, ino: int, arguments: tuple[Any, ...]) -> None:
        if kind in ("write", "mmap_write"):
            offset, length, step = arguments
            self.data[ino] = written(self.data[ino], offset, chunk_for(step, length))
        elif kind == "truncate":
            length = arguments[0]
            self.data[ino] = self.data[ino][:length] + bytes(max(0, length - len(self.data[ino])))
        if kind in ("fsync", "mmap_write"):  # mmap_write: the mapping's msync(MS_SYNC)
            self.durable_data[ino] = self.data[ino]

    def _apply_namespace(self, operation: Operation) -> None:
        kind, path = operation[0], operation[1]
        if kind == "create":
            ino = self._new_inode()
            self.data[ino] = self.durable_data[ino] = b""
            operation = ("create", path, ino)
        if kind == "rename":
            destination = operation[2]
            for pending in self.pending:
                pending.directory = moved(pending.directory, path, destination)
            self.pending.append(Pending(operation, parent_of(destination), (path, destination)))
        else:
            self.pending.append(Pending(operation, parent_of(path), (path,)))
        self.live.apply(operation)

    def _sync_directory(self, directory: str) -> None:
        durable = [pending.directory == directory for pending in self.pending]
        for later in reversed(range(len(self.pending))):
            for earlier in range(later):
                if durable[later] and any(related(first, second) for first in self.pending[later].paths
                                          for second in self.pending[earlier].paths):
                    durable[earlier] = True
        for pending, made in zip(self.pending, durable):
            if made:
                self.durable.apply(pending.operation)
        self.pending = [pending for pending, made in zip(self.pending, durable) if not made]

    def power_fail(self) -> None:
        self.live = self.durable.copy()
        self.data = dict(self.durable_data)
        self.pending = []
        self.handles = []

    # -- what a reader sees -------------------------------------------------------------------

    def tree(self) -> tuple[frozenset[str], dict[str, bytes]]:
        """The live directories and each live file's contents."""
        return frozenset(self.live.directories), {path: self.data[ino] for path, ino in self.live.files.items()}


KINDS = ("create", "mkdir", "write", "truncate", "fsync", "open", "write_handle", "fsync_handle", "fsyncdir",
         "rename", "unlink", "rmdir")


def candidate(model: Model, kinds: tuple[str, ...]) -> st.SearchStrategy[Operation]:
    """An operation on what ``model`` holds now (most of them allowed)."""
    live = model.live
    files = st.sampled_from(sorted(live.files) or FILES)
    directories = st.sampled_from(sorted(live.directories))
    fresh = st.sampled_from([path for path in FILES + DIRECTORIES[1:] if not live.exists(path)] or FILES)
    entries = st.sampled_from(sorted(live.files) + sorted(live.directories - {""}) or FILES)
    handles = st.integers(0, max(0, len(model.handles) - 1))
    offsets, lengths, steps = st.integers(0, 40), st.integers(1, 24), st.integers(0, 1000)
    by_kind: dict[str, st.SearchStrategy[Operation]] = {
        "create": st.tuples(st.just("create"), fresh),
        "mkdir": st.tuples(st.just("mkdir"), fresh),
        "write": st.tuples(st.just("write"), files, offsets, lengths, steps),
        "mmap_write": st.tuples(st.just("mmap_write"), files, st.integers(0, 16), st.integers(1, 8), steps),
        "truncate": st.tuples(st.just("truncate"), files, st.integers(0, 48)),
        "fsync": st.tuples(st.just("fsync"), files),
        "open": st.tuples(st.just("open"), files),
        "write_handle": st.tuples(st.just("write_handle"), handles, offsets, lengths, steps),
        "fsync_handle": st.tuples(st.just("fsync_handle"), handles),
        "fsyncdir": st.tuples(st.just("fsyncdir"), directories),
        "rename": st.tuples(st.just("rename"), entries, st.one_of(fresh, entries)),
        "unlink": st.tuples(st.just("unlink"), files),
        "rmdir": st.tuples(st.just("rmdir"), directories),
        "power_fail": st.just(("power_fail",)),
    }
    return st.sampled_from(kinds).flatmap(lambda kind: by_kind[kind])


def draw_operations(data: st.DataObject, model: Model, count: int, kinds: tuple[str, ...] = KINDS) -> list[Operation]:
    """Draw ``count`` candidates one by one from what ``model`` holds; apply and return the
    allowed ones."""
    kept = []
    for _ in range(count):
        operation = data.draw(candidate(model, kinds))
        if model.allows(operation):
            model.apply(operation)
            kept.append(operation)
    return kept


def allowed(model: Model, sequence: list[Operation]) -> list[Operation]:
    """Run ``sequence`` on ``model``, keeping (and returning) only the operations it allows."""
    kept = []
    for operation in sequence:
        if model.allows(operation):
            model.apply(operation)
            kept.append(operation)
    return kept

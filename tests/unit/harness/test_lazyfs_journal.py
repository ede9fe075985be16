"""The crash-consistency layer's bookkeeping (harness.lazyfs.journal), driven the way the daemon
drives it over an in-memory backing directory: tables of sequences and what survives a power
failure, and a Hypothesis property against the reference model (lazyfs_reference.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_chaos.harness.lazyfs.journal import ContentUndo, Journal, MoveEntry, PowerFailPlan, RemoveEntry
from tests.unit.harness.lazyfs_reference import (
    INITIAL_DIRECTORIES, INITIAL_FILES, KINDS, Model, Operation, allowed, chunk_for, draw_operations, inside, moved,
    written,
)

TRASH = ".trash"


@dataclass
class SimulatedLayer:
    """The daemon's use of the journal, over dicts instead of a backing directory."""

    directories: set[str] = field(default_factory=lambda: set(INITIAL_DIRECTORIES) | {TRASH})
    files: dict[str, int] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)
    journal: Journal = field(default_factory=Journal)
    handles: list[int] = field(default_factory=list)
    next_ino: int = 1000
    parked: int = 0

    @classmethod
    def initial(cls) -> SimulatedLayer:
        layer = cls()
        for path, contents in INITIAL_FILES.items():
            layer.files[path] = layer._new_inode()
            layer.data[layer.files[path]] = contents
        return layer

    def _new_inode(self) -> int:
        self.next_ino += 1
        return self.next_ino

    def _park(self, path: str) -> str:
        self.parked += 1
        parked = f"{TRASH}/{self.parked}"
        self._move(path, parked)
        return parked

    def _move(self, source: str, destination: str) -> None:
        self.files = {moved(path, source, destination): ino for path, ino in self.files.items()}
        self.directories = {moved(path, source, destination) for path in self.directories}

    def _remove(self, path: str) -> None:
        self.files = {name: ino for name, ino in self.files.items() if not inside(name, path)}
        self.directories = {name for name in self.directories if not inside(name, path)}

    def write(self, ino: int, offset: int, chunk: bytes) -> None:
        data = self.data[ino]
        for start, end in self.journal.before_change(ino, offset, offset + len(chunk), len(data)):
            self.journal.keep_original(ino, start, data[start:end])
        self.data[ino] = written(data, offset, chunk)

    def truncate(self, ino: int, length: int) -> None:
        data = self.data[ino]
        for start, end in self.journal.before_change(ino, length, max(length, len(data)), len(data)):
            self.journal.keep_original(ino, start, data[start:end])
        self.data[ino] = data[:length] + bytes(max(0, length - len(data)))

    def apply(self, operation: Operation) -> None:
        kind = operation[0]
        if kind == "create":
            ino = self.files[operation[1]] = self._new_inode()
            self.data[ino] = b""
            self.journal.forget(ino)
            self.journal.created(operation[1])
        elif kind == "mkdir":
            self.directories.add(operation[1])
            self.journal.made_directory(operation[1])
        elif kind in ("write", "write_handle"):
            ino = self.files[operation[1]] if kind == "write" else self.handles[operation[1]]
            self.write(ino, operation[2], chunk_for(operation[4], operation[3]))
        elif kind == "truncate":
            self.truncate(self.files[operation[1]], operation[2])
        elif kind in ("fsync", "fsync_handle"):
            self.journal.file_synced(self.files[operation[1]] if kind == "fsync" else self.handles[operation[1]])
        elif kind == "open":
            self.handles.append(self.files[operation[1]])
        elif kind == "fsyncdir":
            for parked in self.journal.directory_synced(operation[1]):
                if parked in self.files:
                    self.journal.forget(self.files[parked])
                self._remove(parked)
        elif kind == "unlink":
            self.journal.unlinked(operation[1], self._park(operation[1]))
        elif kind == "rmdir":
            self.journal.removed_directory(operation[1], self._park(operation[1]))
        elif kind == "rename":
            source, destination = operation[1], operation[2]
            replaced = self._park(destination) if destination in self.files or destination in self.directories else None
            self._move(source, destination)
            self.journal.renamed(source, destination, replaced)
        elif kind == "power_fail":
            self.power_fail()

    def power_fail(self) -> PowerFailPlan:
        plan = self.journal.power_fail()
        by_inode = {ino: path for path, ino in self.files.items()}
        for undo in plan.contents:
            if undo.ino in by_inode:
                data = self.data[undo.ino][:undo.size]
                data += bytes(undo.size - len(data))
                for offset, original in undo.regions:
                    data = written(data, offset, original)
                self.data[undo.ino] = data
        for action in plan.namespace:
            if isinstance(action, MoveEntry):
                self._remove(action.destination)
                self._move(action.source, action.destination)
            else:
                self._remove(action.path)
        self._remove(TRASH)
        self.directories.add(TRASH)
        self.handles = []
        return plan

    def tree(self) -> tuple[frozenset[str], dict[str, bytes]]:
        directories = frozenset(path for path in self.directories if not inside(path, TRASH))
        return directories, {path: self.data[ino] for path, ino in self.files.items() if not inside(path, TRASH)}


def survivors(sequence: list[Operation]) -> tuple[frozenset[str], dict[str, bytes]]:
    layer = SimulatedLayer.initial()
    for operation in sequence:
        layer.apply(operation)
    layer.power_fail()
    return layer.tree()


W = ("write", "d/a", 0, 4, 1)  # overwrite the start of the initial file
BASE_DIRECTORIES = frozenset(INITIAL_DIRECTORIES)


@pytest.mark.parametrize(("sequence", "directories", "files"), [
    # contents
    ([("write", "d/a", 16, 8, 1)], BASE_DIRECTORIES, {"d/a": b"initial contents"}),
    ([("write", "d/a", 16, 8, 1), ("fsync", "d/a")], BASE_DIRECTORIES,
     {"d/a": b"initial contents" + chunk_for(1, 8)}),
    ([W], BASE_DIRECTORIES, {"d/a": b"initial contents"}),
    ([W, ("fsync", "d/a"), ("write", "d/a", 2, 4, 2)], BASE_DIRECTORIES,
     {"d/a": chunk_for(1, 4) + b"ial contents"}),
    ([("truncate", "d/a", 3), ("write", "d/a", 10, 2, 3)], BASE_DIRECTORIES, {"d/a": b"initial contents"}),
    ([("truncate", "d/a", 3), ("fsync", "d/a"), ("write", "d/a", 10, 2, 3)], BASE_DIRECTORIES, {"d/a": b"ini"}),
    # a new file: its entry needs the directory's fsync, its contents the file's
    ([("create", "d/b"), ("write", "d/b", 0, 5, 1), ("fsync", "d/b")], BASE_DIRECTORIES, {"d/a": b"initial contents"}),
    ([("create", "d/b"), ("write", "d/b", 0, 5, 1), ("fsyncdir", "d")], BASE_DIRECTORIES,
     {"d/a": b"initial contents", "d/b": b""}),
    ([("create", "d/b"), ("write", "d/b", 0, 5, 1), ("fsync", "d/b"), ("fsyncdir", "d")], BASE_DIRECTORIES,
     {"d/a": b"initial contents", "d/b": chunk_for(1, 5)}),
    # rename over an existing file (Kafka's checkpoint files: write tmp, fsync, rename, fsync dir)
    ([("create", "d/b"), ("write", "d/b", 0, 3, 1), ("fsync", "d/b"), ("rename", "d/b", "d/a")], BASE_DIRECTORIES,
     {"d/a": b"initial contents"}),
    ([("create", "d/b"), ("write", "d/b", 0, 3, 1), ("fsync", "d/b"), ("rename", "d/b", "d/a"),
      ("fsyncdir", "d")], BASE_DIRECTORIES, {"d/a": chunk_for(1, 3)}),
    # a rename is made durable by its destination's directory, and makes the create before it durable
    ([("mkdir", "e"), ("fsyncdir", ""), ("create", "d/b"), ("rename", "d/b", "e/b"), ("fsyncdir", "d")],
     BASE_DIRECTORIES | {"e"}, {"d/a": b"initial contents", "d/b": b""}),
    ([("mkdir", "e"), ("fsyncdir", ""), ("create", "d/b"), ("rename", "d/b", "e/b"), ("fsyncdir", "e")],
     BASE_DIRECTORIES | {"e"}, {"d/a": b"initial contents", "e/b": b""}),
    # unlink of an open file: writes to it still count, and come back with it
    ([("open", "d/a"), ("unlink", "d/a"), ("write_handle", 0, 0, 4, 1), ("fsync_handle", 0)], BASE_DIRECTORIES,
     {"d/a": chunk_for(1, 4) + b"ial contents"}),
    ([("open", "d/a"), ("unlink", "d/a"), ("fsyncdir", "d"), ("write_handle", 0, 0, 4, 1)], BASE_DIRECTORIES, {}),
    # directories
    ([("mkdir", "e"), ("create", "e/a")], BASE_DIRECTORIES, {"d/a": b"initial contents"}),
    # Kafka never fsyncs the log directory after creating a partition's (LogManager.getOrCreateLog),
    # only the partition's own (LocalLog.flush): that fsync brings the mkdir with it, as on ext4
    ([("mkdir", "e"), ("create", "e/a"), ("fsyncdir", "e")], BASE_DIRECTORIES | {"e"},
     {"d/a": b"initial contents", "e/a": b""}),
    ([("mkdir", "e"), ("create", "e/a"), ("fsyncdir", "e"), ("fsyncdir", "")], BASE_DIRECTORIES | {"e"},
     {"d/a": b"initial contents", "e/a": b""}),
    ([("mkdir", "e"), ("fsyncdir", ""), ("rmdir", "e")], BASE_DIRECTORIES | {"e"}, {"d/a": b"initial contents"}),
    ([("mkdir", "e"), ("fsyncdir", ""), ("rmdir", "e"), ("fsyncdir", "")], BASE_DIRECTORIES,
     {"d/a": b"initial contents"}),
    # a directory renamed (Kafka's topic deletion: topic-0 -> topic-0.<id>-delete): not durable
    # without its parent's fsync, and the files created in it before come back under the old name
    ([("create", "d/b"), ("fsyncdir", "d"), ("rename", "d", "e")], BASE_DIRECTORIES,
     {"d/a": b"initial contents", "d/b": b""}),
    ([("create", "d/b"), ("rename", "d", "e"), ("fsyncdir", "")], {"", "e"}, {"e/a": b"initial contents", "e/b": b""}),
    # an fsync of the renamed directory makes what was created in it under its old name durable
    ([("create", "d/b"), ("rename", "d", "e"), ("fsyncdir", "e")], BASE_DIRECTORIES,
     {"d/a": b"initial contents", "d/b": b""}),
])
def test_what_survives_a_power_failure(sequence: list[Operation], directories: frozenset[str],
                                       files: dict[str, bytes]) -> None:
    model = Model.initial()
    assert allowed(model, list(sequence)) == sequence, "the table's sequence must be valid"
    assert survivors(sequence) == (directories, files)


def test_an_append_only_file_is_undone_by_one_truncate() -> None:
    journal = Journal()
    for offset in range(100, 400, 100):
        assert journal.before_change(7, offset, offset + 100, offset) == []
    assert journal.power_fail() == PowerFailPlan((ContentUndo(7, 100, ()),), ())


def test_overwritten_bytes_are_read_once_the_first_time() -> None:
    journal = Journal()
    assert journal.before_change(7, 10, 30, 100) == [(10, 30)]
    journal.keep_original(7, 10, bytes(20))
    assert journal.before_change(7, 0, 40, 100) == [(0, 10), (30, 40)]


def test_a_truncate_keeps_what_it_cuts_below_the_durable_size() -> None:
    journal = Journal()
    assert journal.before_change(7, 50, 200, 200) == [(50, 200)]
    journal.keep_original(7, 50, bytes(150))
    assert journal.before_change(7, 20, 60, 50) == [(20, 50)]


def test_a_durable_unlink_purges_its_parked_file_and_an_undone_one_moves_it_back() -> None:
    journal = Journal()
    journal.unlinked("d/x", ".trash/1")
    journal.unlinked("e/x", ".trash/2")
    assert journal.directory_synced("d") == [".trash/1"]
    assert journal.power_fail().namespace == (MoveEntry(".trash/2", "e/x"),)


def test_undo_is_newest_first_and_a_rename_restores_what_it_replaced() -> None:
    journal = Journal()
    journal.created("d/tmp")
    journal.renamed("d/tmp", "d/cp", ".trash/1")
    assert journal.power_fail().namespace == (
        MoveEntry("d/cp", "d/tmp"), MoveEntry(".trash/1", "d/cp"), RemoveEntry("d/tmp"))
    assert journal.pending_operations() == []


@settings(max_examples=120, deadline=None)
@given(st.data(), st.integers(1, 40))
def test_the_layer_keeps_what_the_reference_model_keeps(data: st.DataObject, count: int) -> None:
    model = Model.initial()
    layer = SimulatedLayer.initial()
    for operation in draw_operations(data, model, count, KINDS + ("power_fail",)):
        layer.apply(operation)
    assert layer.tree() == model.tree()
    model.power_fail()
    layer.power_fail()
    assert layer.tree() == model.tree()

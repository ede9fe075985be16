"""The crash-consistency layer on a real FUSE mount (harness.lazyfs.mount and its daemon): the
reference model's sequences (lazyfs_reference.py) through real syscalls -- os.write, os.fsync,
os.rename, mmap with msync -- then a power failure, and what the fresh mount serves compared
with what the model keeps; I/O rules seen through syscalls. Skipped, with the reason, where the
layer cannot run (no /dev/fuse, not root, no libfuse3)."""

from __future__ import annotations

import errno
import json
import mmap
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.lazyfs.mount import IoRule, LazyMount, lazyfs_available
from tests.unit.harness.lazyfs_reference import (
    INITIAL_FILES, KINDS, Model, Operation, chunk_for, draw_operations,
)

UNAVAILABLE = lazyfs_available()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"crash-consistency layer: {UNAVAILABLE}")


def prepare_backing(backing: Path) -> None:
    for path, contents in INITIAL_FILES.items():
        (backing / path).parent.mkdir(parents=True, exist_ok=True)
        (backing / path).write_bytes(contents)


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LazyMount]:
    """One mount for the module; each test starts from the initial tree (see ``fresh``)."""
    root = tmp_path_factory.mktemp("lazyfs")
    (root / "backing").mkdir()
    (root / "mount").mkdir()
    prepare_backing(root / "backing")
    with LazyMount.start(root / "backing", root / "mount", root / "control.sock") as mounted:
        yield mounted


def fresh(layer: LazyMount) -> None:
    """Back to the initial tree: remove everything through the mount, make it durable."""
    layer.clear_rules()
    for entry in sorted(layer.mount.rglob("*"), key=lambda path: -len(path.parts)):
        if entry.is_dir():
            entry.rmdir()
        else:
            entry.unlink()
    prepare_backing(layer.mount)
    for directory in (layer.mount, layer.mount / "d"):
        sync_directory(directory)
    for path in INITIAL_FILES:
        descriptor = os.open(layer.mount / path, os.O_RDONLY)
        os.fsync(descriptor)
        os.close(descriptor)


def sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def tree(root: Path) -> tuple[frozenset[str], dict[str, bytes]]:
    directories = {""}
    files = {}
    for directory, subdirectories, names in os.walk(root):
        relative = os.path.relpath(directory, root)
        relative = "" if relative == "." else relative
        subdirectories[:] = [name for name in subdirectories if name != ".lazyfs-trash"]
        for name in subdirectories:
            directories.add(f"{relative}/{name}".lstrip("/"))
        for name in names:
            files[f"{relative}/{name}".lstrip("/")] = Path(directory, name).read_bytes()
    return frozenset(directories), files


class Syscalls:
    """Applies the model's operations to the mount."""

    def __init__(self, layer: LazyMount) -> None:
        self.layer = layer
        self.mount = layer.mount
        self.handles: list[int] = []

    def apply(self, operation: Operation) -> None:
        kind = operation[0]
        path = self.mount / operation[1] if len(operation) > 1 and isinstance(operation[1], str) else self.mount
        if kind == "create":
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        elif kind == "mkdir":
            path.mkdir()
        elif kind in ("write", "write_handle"):
            offset, length, step = operation[2:]
            if kind == "write":
                with open(path, "r+b") as file:
                    os.pwrite(file.fileno(), chunk_for(step, length), offset)
            else:
                os.pwrite(self.handles[operation[1]], chunk_for(step, length), offset)
        elif kind == "mmap_write":
            offset, length, step = operation[2:]
            with open(path, "r+b") as file, mmap.mmap(file.fileno(), 0) as mapping:
                mapping[offset:offset + length] = chunk_for(step, length)
                mapping.flush()  # msync(MS_SYNC): WRITE then FSYNC on the layer
        elif kind == "truncate":
            os.truncate(path, operation[2])
        elif kind == "fsync":
            with open(path, "rb") as file:
                os.fsync(file.fileno())
        elif kind == "fsync_handle":
            os.fsync(self.handles[operation[1]])
        elif kind == "open":
            self.handles.append(os.open(path, os.O_RDWR))
        elif kind == "fsyncdir":
            sync_directory(path)
        elif kind == "rename":
            os.rename(path, self.mount / operation[2])
        elif kind == "unlink":
            path.unlink()
        elif kind == "rmdir":
            path.rmdir()
        elif kind == "power_fail":
            self.close()
            self.layer.power_fail()
        else:
            raise AssertionError(f"unknown operation {operation}")

    def close(self) -> None:
        for handle in self.handles:
            os.close(handle)
        self.handles = []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.integers(1, 25))
def test_a_power_failure_keeps_what_the_reference_model_keeps(layer: LazyMount, data: st.DataObject,
                                                               count: int) -> None:
    fresh(layer)
    model = Model.initial()
    syscalls = Syscalls(layer)
    try:
        for operation in draw_operations(data, model, count, KINDS + ("mmap_write", "power_fail")):
            syscalls.apply(operation)
        assert tree(layer.mount) == model.tree()
    finally:
        syscalls.close()
    report = layer.power_fail()
    model.power_fail()
    assert tree(layer.mount) == model.tree(), report
    assert tree(layer.backing) == model.tree()


def test_appends_to_an_unlinked_open_segment_vanish_with_its_unlink(layer: LazyMount) -> None:
    """Kafka's segment deletion (LogSegment.deleteIfExists): rename to .deleted, unlink, while a
    reader still holds it."""
    fresh(layer)
    segment = layer.mount / "d" / "00000000000000000000.log"
    segment.write_bytes(b"batch-1")
    descriptor = os.open(segment, os.O_RDWR)
    try:
        os.fsync(descriptor)
        sync_directory(layer.mount / "d")
        segment.rename(segment.with_suffix(".log.deleted"))
        segment.with_suffix(".log.deleted").unlink()
        os.pwrite(descriptor, b"batch-2", 7)
        assert os.pread(descriptor, 14, 0) == b"batch-1batch-2"
    finally:
        os.close(descriptor)
    report = layer.power_fail()
    assert (segment.read_bytes(), report.files_truncated, report.entries_undone) == (b"batch-1", 1, 2)


def test_a_delay_rule_slows_only_what_it_matches(layer: LazyMount) -> None:
    fresh(layer)
    layer.set_rules([IoRule("write", "d/*.log", delay_ms=5), IoRule("fsync", "*", delay_ms=5)])
    before = layer.stats()["delayed"]
    (layer.mount / "d" / "x.log").write_bytes(b"slow")
    (layer.mount / "d" / "x.index").write_bytes(b"fast")
    with open(layer.mount / "d" / "x.index", "rb") as file:
        os.fsync(file.fileno())
    assert layer.stats()["delayed"] - before == 2


@pytest.mark.parametrize(("rule", "expected"), [
    (IoRule("write", "d/*", error="EIO"), errno.EIO),
    (IoRule("write", "d/a", error="ENOSPC"), errno.ENOSPC),
])
def test_a_failing_write_changes_nothing(layer: LazyMount, rule: IoRule, expected: int) -> None:
    fresh(layer)
    layer.set_rules([rule])
    with open(layer.mount / "d" / "a", "r+b", buffering=0) as file:
        with pytest.raises(OSError) as failure:
            file.write(b"lost")
    assert failure.value.errno == expected
    layer.clear_rules()
    assert (layer.mount / "d" / "a").read_bytes() == INITIAL_FILES["d/a"]


def test_a_failing_fsync_leaves_the_write_undurable(layer: LazyMount) -> None:
    fresh(layer)
    layer.set_rules([IoRule("fsync", "d/a", error="EIO")])
    with open(layer.mount / "d" / "a", "ab", buffering=0) as file:
        file.write(b" and more")
        with pytest.raises(OSError) as failure:
            os.fsync(file.fileno())
    assert failure.value.errno == errno.EIO
    layer.power_fail()
    assert (layer.mount / "d" / "a").read_bytes() == INITIAL_FILES["d/a"]


def test_a_rule_names_an_operation_and_an_error_the_layer_knows() -> None:
    with pytest.raises(HarnessError):
        IoRule("read", "*", error="EIO")
    with pytest.raises(HarnessError):
        IoRule("fsync", "*", delay_ms=-1)


def test_stop_is_idempotent_and_unmounts(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "m").mkdir()
    mounted = LazyMount.start(tmp_path / "b", tmp_path / "m", tmp_path / "c.sock")
    (tmp_path / "m" / "kept").write_bytes(b"x")
    mounted.stop()
    mounted.stop()
    assert os.listdir(tmp_path / "m") == []
    assert (tmp_path / "b" / "kept").read_bytes() == b"x"


def test_a_control_socket_path_longer_than_a_socket_address_works(tmp_path: Path) -> None:
    """A node's directory under a pytest run's temporary directory is deep."""
    deep = tmp_path / ("n" * 60) / ("m" * 60)
    (deep / "b").mkdir(parents=True)
    (deep / "m").mkdir()
    assert len(str(deep / "control.sock")) > 108
    with LazyMount.start(deep / "b", deep / "m", deep / "control.sock") as mounted:
        (deep / "m" / "x").write_bytes(b"unsynced")
        assert mounted.power_fail().undo_actions == ("rm x",)
    assert os.listdir(deep / "b") == []


def test_opening_a_durable_file_with_o_trunc_is_undone(layer: LazyMount) -> None:
    fresh(layer)
    (layer.mount / "d" / "a").write_bytes(b"new")  # open(O_WRONLY | O_TRUNC) of an existing file
    layer.power_fail()
    assert (layer.mount / "d" / "a").read_bytes() == INITIAL_FILES["d/a"]


def test_after_the_freeze_a_write_from_a_descriptor_still_open_is_refused(tmp_path: Path) -> None:
    """What the kernel writes back for a killed process after the power failure must not land."""
    (tmp_path / "b").mkdir()
    (tmp_path / "m").mkdir()
    with LazyMount.start(tmp_path / "b", tmp_path / "m", tmp_path / "c.sock") as mounted:
        descriptor = os.open(tmp_path / "m" / "late", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            sync_directory(tmp_path / "m")
            with socket.socket(socket.AF_UNIX) as control:  # the daemon's own command: no remount
                control.connect(str(tmp_path / "c.sock"))
                control.sendall(b'{"command": "power_fail"}\n')
                assert json.loads(control.makefile("rb").readline())["ok"]
            with pytest.raises(OSError) as refused:
                os.pwrite(descriptor, b"too late", 0)
        finally:
            os.close(descriptor)
        assert refused.value.errno == errno.EIO
        assert mounted.stats()["refused_frozen"] >= 1
    assert (tmp_path / "b" / "late").read_bytes() == b""

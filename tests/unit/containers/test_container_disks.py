"""The containers launcher's crash-consistency layer (harness.containers.disks): which brokers get
a host mount as their data directory, and the one-line refusals, without Docker or FUSE."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafka_chaos.harness.local.disks
from kafka_chaos.harness.config import LAZY_FILESYSTEM, ClusterConfig
from kafka_chaos.harness.containers.disks import ContainerDiskControls, lazy_data_dir
from kafka_chaos.harness.errors import HarnessError, UsageError


class _Cluster(ContainerDiskControls):
    def __init__(self, filesystem: str | None = None, state_dir: Path | None = None) -> None:
        self.config = ClusterConfig(brokers=3, **({"filesystem": filesystem} if filesystem else {}))
        self.state_dir = state_dir

    def _broker(self, broker_id: int):  # type: ignore[no-untyped-def]
        if broker_id not in self.config.broker_ids():
            raise UsageError(f"unknown broker id {broker_id}")
        return None


def test_each_brokers_mount_point_is_its_own_data_dir(tmp_path: Path) -> None:
    assert lazy_data_dir(tmp_path, 2) == tmp_path / "broker-2" / "data"
    assert len({lazy_data_dir(tmp_path, b) for b in (1, 2, 3)}) == 3


def test_without_the_layer_no_mount_and_the_faults_say_why() -> None:
    plain = _Cluster()
    assert plain._mount_disks([1, 2, 3]) == {}
    with pytest.raises(HarnessError, match=f"needs filesystem '{LAZY_FILESYSTEM}'"):
        plain.disk_fault(1, [])
    plain.clear_disk_faults()  # nothing to clear
    assert plain._unmount_disks() == []


@pytest.mark.parametrize("state_dir, problem, refused", [
    (Path("/tmp/state"), None, "needs a cluster this process owns"),
    (None, "no /dev/fuse", "no /dev/fuse"),
])
def test_the_layer_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, state_dir: Path | None,
                                          problem: str | None, refused: str) -> None:
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: problem)  # both launchers' layer

    with pytest.raises(UsageError, match=refused):
        _Cluster(LAZY_FILESYSTEM, state_dir)._mount_disks([1])

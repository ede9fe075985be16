"""The containers launcher's crash-consistency layer (harness.containers.disks): which brokers get
a host mount as their data directory, and the one-line refusals, without Docker or FUSE; on the
KRaft launcher (harness.containers.kraft) controllers as well as brokers, each node's formatted
data directory the mount its container binds and the observer reads, which container a power
failure kills, and the unmount after the containers are removed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

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


# --- the KRaft launcher (harness.containers.kraft): controllers on the layer as well as brokers ---

C1, C2, C3 = 3000, 3001, 3002  # ClusterConfig's controller ids beside brokers 1-3


class _Layer:
    """Stands in for harness.local.disks.LazyDisks: records what is mounted and unmounted."""

    calls: list[tuple[str, object]]

    def __init__(self) -> None:
        self.mounted: dict[int, Path] = {}

    def mount(self, node_id: int, node_dir: Path) -> None:
        assert (node_dir / "data").is_dir(), "the layer goes over a data directory that exists (formatted)"
        self.mounted[node_id] = node_dir
        _Layer.calls.append(("mount", node_id))

    def stop(self) -> list[str]:
        _Layer.calls.append(("unmount", sorted(self.mounted)))
        return []


def _kraft_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filesystem: str = LAZY_FILESYSTEM):  # type: ignore[no-untyped-def]
    import kafka_chaos.harness.containers.disks as disks
    import kafka_chaos.harness.containers.kraft as kraft
    from kafka_chaos.harness.distribution import KafkaDistribution

    _Layer.calls = []
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: None)
    monkeypatch.setattr(disks, "LazyDisks", _Layer)
    monkeypatch.setattr(disks, "container_state", lambda c: c.status)
    monkeypatch.setattr(disks, "kill_container", lambda c: _Layer.calls.append(("docker kill", c.name)))
    cluster = kraft.ContainerKraftCluster(
        ClusterConfig(brokers=3, mode="kraft", controllers=3, filesystem=filesystem),
        KafkaDistribution("3.9.2", tmp_path / "libs", "test"))
    cluster._run_dir = tmp_path
    nodes = {n: SimpleNamespace(name=cluster._alias(n), status="running") for n in (C1, C2, C3, 1, 2, 3)}
    cluster._controllers = {c: nodes[c] for c in (C1, C2, C3)}
    cluster._brokers = {b: nodes[b] for b in (1, 2, 3)}
    for name in [*(f"controller-{c}" for c in (C1, C2, C3)), *(f"broker-{b}" for b in (1, 2, 3))]:
        cluster._data_dir(name).mkdir(parents=True)  # as _format_storage leaves them
    return cluster


def test_every_kraft_nodes_formatted_data_dir_is_its_mount_and_what_the_observer_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _kraft_cluster(tmp_path, monkeypatch)
    mounts = cluster._mount_node_dirs({n: tmp_path / cluster._alias(n) for n in (C1, C2, C3, 1, 2, 3)})
    assert mounts == {C1: f"{tmp_path}/controller-3000/data", C2: f"{tmp_path}/controller-3001/data",
                      C3: f"{tmp_path}/controller-3002/data", 1: f"{tmp_path}/broker-1/data",
                      2: f"{tmp_path}/broker-2/data", 3: f"{tmp_path}/broker-3/data"}
    # the observer reads the controllers' metadata logs, and the replica-log check the brokers',
    # through the mounts (what the nodes wrote, fsynced or not)
    assert [str(d) for d in cluster.metadata_log_dirs()] == [mounts[c] for c in (C1, C2, C3)]
    assert [str(d) for b in (1, 2, 3) for d in cluster.replica_log_dirs(b)] == [mounts[b] for b in (1, 2, 3)]


def test_without_the_layer_a_kraft_cluster_mounts_nothing_and_its_faults_say_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _kraft_cluster(tmp_path, monkeypatch, filesystem="plain")
    assert cluster._mount_node_dirs({1: tmp_path / "broker-1"}) == {}
    with pytest.raises(HarnessError, match="plain host directories: a power failure or disk fault needs "
                                           f"filesystem '{LAZY_FILESYSTEM}'"):
        cluster.power_fail_node(C1)
    assert _Layer.calls == []


@pytest.mark.parametrize("node, status, killed, refused", [
    (C2, "running", "controller-3001", None),  # a quorum leader's power failure kills its controller
    (C1, "paused", "controller-3000", None),
    (2, "running", "broker-2", None),
    (C3, "exited", None, "cannot power-fail controller-3002: its container is not running"),
    (3, "exited", None, "cannot power-fail broker-3: its container is not running"),
    (7, "running", None, "unknown broker id 7"),
])
def test_a_kraft_power_failure_kills_the_nodes_container_then_drops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, node: int, status: str, killed: str | None,
        refused: str | None) -> None:
    cluster = _kraft_cluster(tmp_path, monkeypatch)
    cluster._mount_node_dirs({n: tmp_path / cluster._alias(n) for n in (C1, C2, C3, 1, 2, 3)})
    dropped: list[int] = []
    cluster._lazy_disks.power_fail = lambda n, kill: (kill(), dropped.append(n))  # type: ignore[union-attr]
    if node in cluster._node_ids():
        cluster._node(node).status = status
    if refused is not None:
        with pytest.raises((HarnessError, UsageError), match=refused):
            cluster.power_fail_node(node)
        assert dropped == [] and ("docker kill", killed) not in _Layer.calls
        return
    cluster.power_fail_node(node)
    assert _Layer.calls[-1] == ("docker kill", killed) and dropped == [node]


def test_a_kraft_cluster_unmounts_after_its_containers_are_removed_and_before_its_run_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.prune as prune

    cluster = _kraft_cluster(tmp_path, monkeypatch)
    cluster._mount_node_dirs({n: tmp_path / cluster._alias(n) for n in (C1, C2, C3, 1, 2, 3)})
    cluster._client = SimpleNamespace(close=lambda: _Layer.calls.append(("close", None)))
    monkeypatch.setattr(prune, "remove_run", lambda client, run_id: _Layer.calls.append(
        ("remove containers", tmp_path.exists())))
    _Layer.calls = []
    cluster.destroy()
    cluster.destroy()  # idempotent
    assert _Layer.calls == [("remove containers", True), ("close", None), ("unmount", [1, 2, 3, C1, C2, C3])]
    assert not tmp_path.exists()

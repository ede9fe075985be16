"""The containers launcher's clock faults (harness.containers.clocks) and libfaketime in its image
(harness.containers.image): the pure parts and the control files on a stand-in cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.containers.clocks import (
    CLOCK_DIR,
    ContainerClockControls,
    clock_dir,
    faked_node,
    node_clock,
)
from kafka_chaos.harness.containers.cluster import ContainerCluster
from kafka_chaos.harness.containers.image import faketime_in_rootfs
from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.harness.local.clocks import CONTROL_FILE, faked_command

LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def test_a_node_container_gets_the_local_launchers_settings_and_its_directory_mounted() -> None:
    clock = node_clock(LIBRARY, Path("/tmp/run/clocks/broker-2"))
    assert clock.environment == {
        "LD_PRELOAD": LIBRARY,
        "FAKETIME_TIMESTAMP_FILE": f"{CLOCK_DIR}/{CONTROL_FILE}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
        "FAKETIME_CACHE_DURATION": "1",
    }
    assert clock.volumes == {"/tmp/run/clocks/broker-2": CLOCK_DIR}
    # the same settings the local launcher puts in front of a node's command
    local = faked_command(["java"], Path(LIBRARY), Path(f"{CLOCK_DIR}/{CONTROL_FILE}"))
    assert local == ["/usr/bin/env", *(f"{k}={v}" for k, v in clock.environment.items()), "java"]


ZOOKEEPER_MODE = {"broker": [1, 2, 3], "zookeeper": [1]}
ENSEMBLE = {"broker": [1, 2, 3], "zookeeper": [1, 2, 3]}
KRAFT = {"broker": [1, 2, 3], "controller": [3000]}


@pytest.mark.parametrize("nodes, role, node_id, refused", [
    (ZOOKEEPER_MODE, "broker", 2, None),
    (ZOOKEEPER_MODE, "broker", 4, "this cluster has no broker 4"),
    (ZOOKEEPER_MODE, "zookeeper", 1, None),
    (ZOOKEEPER_MODE, "zookeeper", 2, "this cluster has no zookeeper 2"),
    (ENSEMBLE, "zookeeper", 3, None),
    (ZOOKEEPER_MODE, "controller", 3000, "this cluster has no controller 3000"),
    (KRAFT, "controller", 3000, None),
    (KRAFT, "broker", 3, None),
    (KRAFT, "zookeeper", 1, "this cluster has no zookeeper 1"),
    (KRAFT, "client", 1, "role must be one of broker, controller, zookeeper"),
])
def test_only_the_clusters_own_nodes_clocks_move_on_containers(nodes: dict[str, list[int]], role: str, node_id: int,
                                                     refused: str | None) -> None:
    if refused is None:
        faked_node(role, node_id, nodes)
    else:
        with pytest.raises(UsageError, match=refused):
            faked_node(role, node_id, nodes)


@pytest.mark.parametrize("layout, found", [
    (["usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"], "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
    (["usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
      "usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1"], "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"),
    (["usr/lib/x86_64-linux-gnu/libc.so.6"], None),
])
def test_libfaketime_is_found_under_the_multiarch_directory(tmp_path: Path, layout: list[str],
                                                            found: str | None) -> None:
    for name in layout:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    if found is None:
        with pytest.raises(HarnessError, match="libfaketime unpacked without"):
            faketime_in_rootfs(tmp_path)
    else:
        assert faketime_in_rootfs(tmp_path) == found


class _Cluster(ContainerClockControls):
    """The mixin over a ZooKeeper-mode 3-broker cluster's config and clock directories, no Docker;
    its nodes the real cluster's (``ContainerCluster._clock_nodes``)."""

    def __init__(self, root: Path | None, fake: bool) -> None:
        self.config = ClusterConfig(brokers=3, fake_clocks=fake)
        self._clocks_root = root

    _clock_nodes = ContainerCluster._clock_nodes


def test_fake_clocks_write_each_nodes_file_and_the_heal_zeroes_them(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path, fake=True)
    clocks = {b: cluster._node_clock("broker", b, LIBRARY) for b in (1, 2, 3)}
    assert {b: c.host_dir for b, c in clocks.items() if c} == {b: str(tmp_path / f"broker-{b}") for b in (1, 2, 3)}
    zookeeper = cluster._node_clock("zookeeper", 1, LIBRARY)
    assert zookeeper is not None and zookeeper.volumes == {str(tmp_path / "zookeeper-1"): CLOCK_DIR}
    files = {(r, n): clock_dir(tmp_path, r, n) / CONTROL_FILE for r, n in
             [("broker", 1), ("broker", 2), ("broker", 3), ("zookeeper", 1)]}
    cluster.set_clock("broker", 2, offset_s=60)
    assert {k: f.read_text() for k, f in files.items()} == {  # ZooKeeper's left alone by a broker's
        ("broker", 1): "+0.000\n", ("broker", 2): "+60.000\n", ("broker", 3): "+0.000\n", ("zookeeper", 1): "+0.000\n"}
    with pytest.raises(UsageError, match="no broker 4"):
        cluster.set_clock("broker", 4, offset_s=5)
    with pytest.raises(UsageError, match="no zookeeper 2"):
        cluster.set_clock("zookeeper", 2, offset_s=5)
    cluster.set_clock("zookeeper", 1, offset_s=60)
    assert files["zookeeper", 1].read_text() == "+60.000\n"
    cluster.set_clock("broker", 3, rate=1.5)
    cluster.heal_clocks()  # stops the drift before zeroing
    assert {f.read_text() for f in files.values()} == {"+0.000\n"}


def test_without_fake_clocks_nothing_is_laid_out_and_a_clock_fault_says_why(tmp_path: Path) -> None:
    plain = _Cluster(None, fake=False)
    assert plain._node_clock("broker", 1, LIBRARY) is None
    with pytest.raises(HarnessError, match="broker 1 runs on the host's clock"):
        plain.set_clock("broker", 1, offset_s=5)
    plain.heal_clocks()  # nothing to heal


def test_an_image_without_libfaketime_refuses_fake_clocks_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="--base-image must carry it"):
        _Cluster(tmp_path, fake=True)._node_clock("broker", 1, None)

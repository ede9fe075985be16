"""Capabilities: which optional protocol gives which, and what each backend lacks (no processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.harness.backends import NAMESPACE_RULES, missing_capabilities
from kafka_chaos.harness.cluster import (
    CAPABILITY_PROTOCOLS,
    BrokerControl,
    Capability,
    NetworkPartitioner,
    ZooKeeperControl,
    capabilities_of,
)
from kafka_chaos.harness.errors import HarnessError, UsageError


class _Partitioner:
    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None: ...

    def heal_network(self) -> None: ...


class _HalfBrokerControl:
    def kill_broker(self, broker_id: int) -> None: ...


def test_every_capability_has_one_protocol() -> None:
    assert set(CAPABILITY_PROTOCOLS) == set(Capability)
    assert CAPABILITY_PROTOCOLS[Capability.NETWORK_PARTITION] is NetworkPartitioner
    assert CAPABILITY_PROTOCOLS[Capability.BROKER_CONTROL] is BrokerControl
    assert CAPABILITY_PROTOCOLS[Capability.ZOOKEEPER_CONTROL] is ZooKeeperControl
    assert Capability.NETWORK_PARTITION == "network_partition"  # a StrEnum: stored as plain text


def test_capabilities_need_every_member_of_the_protocol() -> None:
    assert capabilities_of(_Partitioner()) == {Capability.NETWORK_PARTITION}
    assert capabilities_of(_HalfBrokerControl()) == frozenset()
    assert capabilities_of(object()) == frozenset()


def test_the_local_backend_lacks_partitions_only_without_the_means(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.cluster
    import kafka_chaos.harness.local.clocks
    import kafka_chaos.harness.local.disks

    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: "needs root (iptables on loopback)")
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: "no /dev/fuse")
    monkeypatch.setattr(kafka_chaos.harness.local.clocks, "libfaketime_path", lambda: None)
    missing = missing_capabilities("local")
    assert list(missing) == [Capability.NETWORK_PARTITION, Capability.ZOOKEEPER_LINK_PARTITION,
                             Capability.NETWORK_DEGRADE, Capability.CONTROLLER_QUORUM, Capability.ZK_MIGRATION,
                             Capability.QUORUM_LINK_PARTITION, Capability.CLOCK_CONTROL, Capability.POWER_FAILURE,
                             Capability.DISK_FAULTS]
    assert missing[Capability.POWER_FAILURE] == missing[Capability.DISK_FAULTS] == "no /dev/fuse"
    assert "libfaketime" in missing[Capability.CLOCK_CONTROL]
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: None)
    monkeypatch.setattr(kafka_chaos.harness.local.clocks, "libfaketime_path", lambda: Path("libfaketime.so.1"))
    reason = missing[Capability.NETWORK_PARTITION]
    assert reason == "needs root (iptables on loopback)" and "\n" not in reason
    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: None)
    assert list(missing_capabilities("local")) == [Capability.CONTROLLER_QUORUM, Capability.ZK_MIGRATION,
                                                   Capability.QUORUM_LINK_PARTITION]


def test_a_kraft_cluster_has_broker_and_quorum_controls_replica_logs_and_quorum_links_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.network
    import kafka_chaos.harness.local.clocks
    import kafka_chaos.harness.local.disks
    import kafka_chaos.harness.local.kraft

    monkeypatch.setattr(kafka_chaos.harness.local.kraft, "partition_problem", lambda: None)  # as on a root host
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: None)  # with /dev/fuse
    monkeypatch.setattr(kafka_chaos.harness.local.clocks, "libfaketime_path", lambda: Path("libfaketime.so.1"))
    monkeypatch.setattr(kafka_chaos.harness.containers.network, "check_partition_tools", lambda: None)
    missing = missing_capabilities("local", "kraft")
    have = {Capability.BROKER_CONTROL, Capability.CONTROLLER_QUORUM, Capability.REPLICA_LOGS,
            Capability.QUORUM_LINK_PARTITION}
    # libfaketime on local JVMs, the crash-consistency layer under local data directories, failed
    # log directories (JBOD, KIP-858: harness.local.log_dirs)
    assert set(Capability) - set(missing) == have | {Capability.CLOCK_CONTROL, Capability.POWER_FAILURE,
                                                     Capability.DISK_FAULTS, Capability.LOG_DIR_FAILURE}
    assert "local launcher" in missing_capabilities("containers", "kraft")[Capability.LOG_DIR_FAILURE]
    assert missing[Capability.ZOOKEEPER_ENSEMBLE] == "a KRaft cluster has no ZooKeeper"
    assert "cut_links" in missing[Capability.NETWORK_PARTITION]
    # libfaketime in the image, preloaded in the brokers' and controllers' containers; the host's
    # layer bind-mounted as every node's data directory
    assert set(Capability) - set(missing_capabilities("containers", "kraft")) == have | {
        Capability.CLOCK_CONTROL, Capability.POWER_FAILURE, Capability.DISK_FAULTS}


def test_kraft_quorum_links_are_missing_with_the_hosts_reason_on_either_launcher(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.network
    import kafka_chaos.harness.local.kraft

    def no_nsenter() -> None:
        raise HarnessError("network partitions need nsenter on the host")

    monkeypatch.setattr(kafka_chaos.harness.local.kraft, "partition_problem", lambda: "needs root (iptables on loopback)")
    monkeypatch.setattr(kafka_chaos.harness.containers.network, "check_partition_tools", no_nsenter)
    local, containers = missing_capabilities("local", "kraft"), missing_capabilities("containers", "kraft")
    assert local[Capability.QUORUM_LINK_PARTITION] == "needs root (iptables on loopback)"
    assert containers[Capability.QUORUM_LINK_PARTITION] == "network partitions need nsenter on the host"
    assert Capability.CONTROLLER_QUORUM not in local and Capability.CONTROLLER_QUORUM not in containers


def test_quorum_links_need_a_kraft_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.cluster

    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: None)
    for backend, mode in [("local", "zookeeper"), ("local", "migration"), ("containers", "zookeeper")]:
        reason = missing_capabilities(backend, mode)[Capability.QUORUM_LINK_PARTITION]
        assert reason == "cuts between KRaft controllers and brokers need a KRaft cluster (--mode kraft)"


def test_a_migrating_cluster_adds_the_migration_and_its_controllers_to_zookeeper_mode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.cluster

    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: None)
    assert list(missing_capabilities("local", "migration")) == [Capability.QUORUM_LINK_PARTITION]
    assert "local launcher" in missing_capabilities("local")[Capability.ZK_MIGRATION]


def test_a_declared_capability_the_host_cannot_provide_is_not_had() -> None:
    class _HostBound(_Partitioner):
        @staticmethod
        def capability_problems() -> dict[Capability, str]:
            return {Capability.NETWORK_PARTITION: "no iptables"}

    assert capabilities_of(_HostBound()) == frozenset()
    assert capabilities_of(_HostBound) == frozenset()


def test_an_unknown_backend_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown backend"):
        missing_capabilities("kubernetes")


def test_containers_have_the_ensemble_and_link_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.network

    monkeypatch.setattr(kafka_chaos.harness.containers.network, "check_partition_tools", lambda: None)
    missing = missing_capabilities("containers")
    assert not set(missing) & {Capability.ZOOKEEPER_ENSEMBLE, Capability.ZOOKEEPER_LINK_PARTITION,
                               Capability.NETWORK_DEGRADE, Capability.NETWORK_PARTITION}


def test_containers_without_root_lack_every_namespace_rule_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.network

    def no_root() -> None:
        raise HarnessError("network partitions need root on the host")

    monkeypatch.setattr(kafka_chaos.harness.containers.network, "check_partition_tools", no_root)
    missing = missing_capabilities("containers")
    zookeeper_mode = NAMESPACE_RULES - {Capability.QUORUM_LINK_PARTITION}  # a KRaft cluster's
    assert {c: missing[c] for c in zookeeper_mode} == {c: "network partitions need root on the host"
                                                       for c in zookeeper_mode}
    assert missing_capabilities("containers", "kraft")[Capability.QUORUM_LINK_PARTITION] == \
        "network partitions need root on the host"
    assert Capability.ZOOKEEPER_ENSEMBLE not in missing  # an ensemble needs no root


def test_containers_fake_clocks_with_the_images_libfaketime_not_the_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.clocks

    monkeypatch.setattr(kafka_chaos.harness.local.clocks, "libfaketime_path", lambda: None)
    assert Capability.CLOCK_CONTROL not in missing_capabilities("containers")
    assert Capability.CLOCK_CONTROL not in missing_capabilities("containers", "kraft")
    assert "apt-get install libfaketime" in missing_capabilities("local")[Capability.CLOCK_CONTROL]


def test_containers_put_data_on_the_hosts_layer_when_the_host_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.disks

    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: None)
    assert not {Capability.POWER_FAILURE, Capability.DISK_FAULTS} & set(missing_capabilities("containers"))
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: "no /dev/fuse")
    for mode in ("zookeeper", "kraft"):
        missing = missing_capabilities("containers", mode)
        assert missing[Capability.POWER_FAILURE] == missing[Capability.DISK_FAULTS] == "no /dev/fuse"
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: None)
    assert not {Capability.POWER_FAILURE, Capability.DISK_FAULTS} & set(missing_capabilities("containers", "kraft"))

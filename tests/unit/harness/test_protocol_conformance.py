"""Static protocol conformance of both launchers (after testcontainers-python's
``tests/core/test_protocol_compliance.py``): every member each protocol declares is on the
launcher class, as the same kind of member, with a compatible signature and the same types;
and the capabilities a launcher declares are exactly those of the protocols it implements.

Nothing is started: the classes are inspected.  (mypy checks the same statically, through
``harness.backends._conformance``; this test fails with a readable message instead.)
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_chaos.harness.cluster import (
    ReplicaLogReader,
    ClockController,
    CAPABILITY_PROTOCOLS,
    DiskFaulter,
    PowerFailer,
    BrokerControl,
    Capability,
    Cluster,
    LinkDelayer,
    LogDirFailer,
    NetworkDegrader,
    NetworkPartitioner,
    ControllerQuorumControl,
    MigrationControl,
    QuorumLinkPartitioner,
    ReleaseRoller,
    ZooKeeperEnsembleControl,
    ZooKeeperLinkPartitioner,
    ZooKeeperControl,
    capabilities_of,
    protocol_members,
)
from kafka_chaos.harness.containers.cluster import ContainerCluster
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.local.migration import LocalMigrationCluster
from kafka_chaos.harness.local.kraft import LocalKraftCluster
from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

# What each launcher claims (module docstrings, README): the test holds them to it.
CLAIMS: dict[type, set[type]] = {
    LocalCluster: {Cluster, BrokerControl, ZooKeeperControl, NetworkPartitioner, ZooKeeperEnsembleControl,
                   ZooKeeperLinkPartitioner, NetworkDegrader, LogDirFailer, LinkDelayer, ReleaseRoller, ReplicaLogReader,
                   ClockController, PowerFailer, DiskFaulter},
    ContainerCluster: {Cluster, BrokerControl, ZooKeeperControl, NetworkPartitioner, ZooKeeperEnsembleControl,
                       ZooKeeperLinkPartitioner, NetworkDegrader, LogDirFailer, ReplicaLogReader, ClockController,
                       PowerFailer, DiskFaulter},
    # a ZooKeeper-mode local cluster plus the migration and, once provisioned, its controllers
    LocalMigrationCluster: {Cluster, BrokerControl, ZooKeeperControl, NetworkPartitioner, ZooKeeperEnsembleControl,
                            ZooKeeperLinkPartitioner, NetworkDegrader, LogDirFailer, LinkDelayer, ReleaseRoller,
                            MigrationControl, ControllerQuorumControl, ReplicaLogReader, ClockController, PowerFailer,
                            DiskFaulter},
    LocalKraftCluster: {Cluster, BrokerControl, ControllerQuorumControl, ReplicaLogReader, QuorumLinkPartitioner,
                        ClockController, PowerFailer, DiskFaulter, LogDirFailer},
    ContainerKraftCluster: {Cluster, BrokerControl, ControllerQuorumControl, ReplicaLogReader, QuorumLinkPartitioner,
                            ClockController, PowerFailer, DiskFaulter},
}
PROTOCOLS = [Cluster, BrokerControl, ZooKeeperControl, NetworkPartitioner, ZooKeeperEnsembleControl,
             ZooKeeperLinkPartitioner, NetworkDegrader, LogDirFailer, LinkDelayer, ReleaseRoller, MigrationControl,
             ControllerQuorumControl, ReplicaLogReader, QuorumLinkPartitioner, ClockController, PowerFailer, DiskFaulter]
CASES = [(launcher, protocol) for launcher, claimed in CLAIMS.items() for protocol in sorted(claimed, key=str)]


def _ids(case: tuple[type, type]) -> str:
    return f"{case[0].__name__}-{case[1].__name__}"


def _static(cls: type, name: str) -> object:
    return inspect.getattr_static(cls, name)


def _hints(func: Callable[..., object]) -> dict[str, object]:
    return typing.get_type_hints(func)


def check_method(launcher: type, protocol: type, name: str) -> None:
    declared, implemented = _static(protocol, name), _static(launcher, name)
    assert inspect.isfunction(implemented), f"{launcher.__name__}.{name} must be a method"
    assert inspect.isfunction(declared)
    want, got = inspect.signature(declared), inspect.signature(implemented)
    wanted_params = list(want.parameters.values())
    got_params = {p.name: p for p in got.parameters.values()}
    for param in wanted_params:
        assert param.name in got_params, f"{launcher.__name__}.{name} lacks parameter {param.name!r}"
        mine = got_params[param.name]
        assert mine.kind == param.kind, f"{launcher.__name__}.{name}({param.name}): {mine.kind} != {param.kind}"
        assert mine.default == param.default, f"{launcher.__name__}.{name}({param.name}) default differs"
    extra = [p for p in got.parameters.values() if p.name not in want.parameters]
    assert all(p.default is not inspect.Parameter.empty for p in extra), \
        f"{launcher.__name__}.{name} has required parameters the protocol does not: {extra}"
    wanted_types, got_types = _hints(declared), _hints(implemented)
    for key, hint in wanted_types.items():
        assert got_types.get(key) == hint, f"{launcher.__name__}.{name}: {key} is {got_types.get(key)}, not {hint}"


def check_attribute(launcher: type, protocol: type, name: str) -> None:
    declared = inspect.getattr_static(protocol, name, None)
    implemented = inspect.getattr_static(launcher, name, None)
    assert implemented is not None, f"{launcher.__name__} lacks {name}"
    if isinstance(declared, property):  # a read-only attribute: a property or a plain value
        assert declared.fget is not None
        want = _hints(declared.fget)["return"]
        if isinstance(implemented, property):
            assert implemented.fget is not None and _hints(implemented.fget)["return"] == want, name
        else:
            assert isinstance(implemented, want), name  # type: ignore[arg-type]
    else:  # annotated only, e.g. ``backend: str``: a class-level value of that type
        want = typing.get_type_hints(protocol)[name]
        assert isinstance(implemented, want), f"{launcher.__name__}.{name} = {implemented!r} is no {want}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_every_protocol_member_is_implemented_compatibly(case: tuple[type, type]) -> None:
    launcher, protocol = case
    for name in sorted(protocol_members(protocol)):
        if inspect.isfunction(inspect.getattr_static(protocol, name, None)):
            check_method(launcher, protocol, name)
        else:
            check_attribute(launcher, protocol, name)


@pytest.mark.parametrize("launcher", list(CLAIMS), ids=lambda c: c.__name__)
def test_capabilities_are_those_of_the_claimed_protocols(launcher: type, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.cluster
    import kafka_chaos.harness.containers.network
    import kafka_chaos.harness.local.cluster
    import kafka_chaos.harness.local.clocks
    import kafka_chaos.harness.local.disks
    import kafka_chaos.harness.local.kraft

    # as on a root host with iptables and nsenter
    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: None)
    monkeypatch.setattr(kafka_chaos.harness.local.kraft, "partition_problem", lambda: None)
    monkeypatch.setattr(kafka_chaos.harness.containers.network, "check_partition_tools", lambda: None)
    monkeypatch.setattr(kafka_chaos.harness.containers.cluster, "log_dir_problem", lambda: None)
    monkeypatch.setattr(kafka_chaos.harness.local.disks, "lazyfs_available", lambda: None)  # and /dev/fuse
    monkeypatch.setattr(kafka_chaos.harness.local.clocks, "libfaketime_path", lambda: Path("libfaketime.so.1"))
    claimed = {c for c, protocol in CAPABILITY_PROTOCOLS.items() if protocol in CLAIMS[launcher]}
    assert capabilities_of(launcher) == claimed
    unclaimed = [p for p in PROTOCOLS if p not in CLAIMS[launcher]]
    # a member a claimed protocol declares too (heal_network) says nothing of the unclaimed one
    shared = {n for p in CLAIMS[launcher] for n in protocol_members(p)}
    for protocol in unclaimed:  # not half-implemented either
        present = [n for n in protocol_members(protocol) - shared
                   if inspect.getattr_static(launcher, n, None) is not None]
        assert present == [], f"{launcher.__name__} has {present} of {protocol.__name__} but does not claim it"


def test_the_local_launcher_cuts_networks_only_where_the_host_can(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.cluster

    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: "needs root")
    assert Capability.NETWORK_PARTITION not in capabilities_of(LocalCluster)
    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem", lambda: None)
    assert Capability.NETWORK_PARTITION in capabilities_of(LocalCluster)
    assert Capability.NETWORK_PARTITION in capabilities_of(ContainerCluster)


def test_a_launcher_missing_a_method_or_with_an_incompatible_one_is_caught() -> None:
    class Broken(LocalCluster):
        def kill_broker(self, broker_id: str) -> None:  # type: ignore[override]
            ...

    with pytest.raises(AssertionError, match="kill_broker: broker_id"):
        check_method(Broken, BrokerControl, "kill_broker")

    class Narrower(LocalCluster):
        def start_broker(self, broker_id: int, really: bool) -> None:  # type: ignore[override]
            ...

    with pytest.raises(AssertionError, match="required parameters"):
        check_method(Narrower, BrokerControl, "start_broker")


def test_the_containers_launcher_fails_log_dirs_only_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # It reaches a container's directories through /proc/<pid>/root (harness.containers.log_dirs).
    import kafka_chaos.harness.containers.cluster

    monkeypatch.setattr(kafka_chaos.harness.containers.cluster, "log_dir_problem", lambda: "needs root")
    assert Capability.LOG_DIR_FAILURE not in capabilities_of(ContainerCluster)
    assert Capability.BROKER_CONTROL in capabilities_of(ContainerCluster)


def test_the_migrating_cluster_starts_nodes_as_the_zookeeper_mode_cluster_does() -> None:
    """The controllers' mixin only declares ``_spawn``: a definition there would shadow the
    launcher's own (it did once, and every migrating cluster failed to start)."""
    from kafka_chaos.harness.local.controllers import LocalControllerControls
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    assert "_spawn" not in vars(LocalControllerControls)
    assert LocalMigrationCluster._spawn is LocalCluster._spawn
    assert LocalKraftCluster._spawn is vars(LocalKraftCluster)["_spawn"]

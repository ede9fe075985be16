"""``--backend local|containers|auto``: which launcher runs a cluster.

``auto`` means containers when a Docker engine answers, else local JVMs.  ``open_cluster``
returns an *unstarted* cluster; use it as a context manager (``with open_cluster(...) as c:``),
which starts it, cleans up when starting fails, and destroys it on exit.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, capabilities_of, capability_problems

if TYPE_CHECKING:
    from kafka_chaos.harness.cluster import (
        BrokerControl,
        ChaosCluster,
        Cluster,
        ControllerQuorumControl,
        DiskFaulter,
        LinkDelayer,
        LogDirFailer,
        NetworkDegrader,
        NetworkPartitioner,
        PowerFailer,
        ZooKeeperControl,
        ZooKeeperEnsembleControl,
        MigrationControl,
        QuorumLinkPartitioner,
        ReleaseRoller,
        ZooKeeperLinkPartitioner,
    )
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.cluster import ContainerCluster
    from kafka_chaos.harness.distribution import KafkaDistribution
    from kafka_chaos.harness.local.cluster import LocalCluster
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.local.kraft import LocalKraftCluster
    from kafka_chaos.harness.local.migration import LocalMigrationCluster

    def _conformance(local: LocalCluster, containers: ContainerCluster, kraft: LocalKraftCluster,
                     kraft_containers: ContainerKraftCluster, migrating: LocalMigrationCluster) -> None:
        """Never runs: mypy checks here that each launcher satisfies the protocols it claims
        (tests/unit/harness/test_protocol_conformance.py checks the same at run time)."""
        claims: tuple[Cluster, BrokerControl, ZooKeeperControl, NetworkPartitioner] = (local, local, local, local)
        more: tuple[Cluster, BrokerControl, ZooKeeperControl, NetworkPartitioner] = (
            containers, containers, containers, containers)
        ensemble: tuple[ZooKeeperEnsembleControl, ZooKeeperLinkPartitioner, NetworkDegrader, LinkDelayer] = (
            local, local, local, local)
        on_containers: tuple[ZooKeeperEnsembleControl, ZooKeeperLinkPartitioner, NetworkDegrader] = (
            containers, containers, containers)
        del on_containers
        log_dirs: tuple[LogDirFailer, LogDirFailer] = (local, containers)
        rolls: ReleaseRoller = local
        on_kraft: tuple[ChaosCluster, ControllerQuorumControl, ChaosCluster, ControllerQuorumControl] = (
            kraft, kraft, kraft_containers, kraft_containers)
        kraft_links: tuple[QuorumLinkPartitioner, QuorumLinkPartitioner] = (kraft, kraft_containers)
        kraft_disks: tuple[PowerFailer, DiskFaulter, PowerFailer, DiskFaulter] = (
            kraft, kraft, kraft_containers, kraft_containers)
        del on_kraft, kraft_links, kraft_disks
        on_migration: tuple[ChaosCluster, MigrationControl, ControllerQuorumControl] = (migrating, migrating, migrating)
        del on_migration
        del claims, more, ensemble, log_dirs, rolls

log = logging.getLogger(__name__)

BACKENDS = ("local", "containers", "auto")
# The cluster modes each launcher starts: a migrating cluster rolls its brokers between class
# paths (harness.local.migration), which only the local launcher can.
LAUNCHER_MODES: Mapping[str, frozenset[str]] = MappingProxyType({
    "local": frozenset({"zookeeper", "kraft", "migration"}),
    "containers": frozenset({"zookeeper", "kraft"}),
})


def resolve_backend(backend: str) -> str:
    """``local`` or ``containers``; ``auto`` asks the Docker engine (a ping, well under a second)."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    from kafka_chaos.harness.containers.image import docker_available

    chosen = "containers" if docker_available() else "local"
    log.info("--backend auto: %s", "a Docker engine answers, using containers" if chosen == "containers"
             else "no Docker engine answers, using local JVMs")
    return chosen


def open_cluster(backend: str, config: "ClusterConfig", distribution: "KafkaDistribution",
                 base_image: str | None = None) -> "LocalCluster | ContainerCluster | LocalKraftCluster | ContainerKraftCluster":
    chosen = resolve_backend(backend)
    if config.mode not in LAUNCHER_MODES[chosen]:
        raise UsageError(f"--mode {config.mode} runs on the local launcher (--backend local)")
    if config.mode == "migration":
        from kafka_chaos.harness.local.migration import LocalMigrationCluster

        return LocalMigrationCluster(config, distribution)
    if config.mode == "kraft":
        if chosen == "containers" and config.features:
            raise UsageError("feature levels at format time (a schedule's cluster.features) run on the local "
                             "launcher only so far (--backend local)")
        if chosen == "containers":
            from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

            return ContainerKraftCluster(config, distribution, base_image=base_image)
        from kafka_chaos.harness.local.kraft import LocalKraftCluster

        return LocalKraftCluster(config, distribution)
    if chosen == "local":
        if base_image is not None and backend == "local":
            raise UsageError("--base-image applies to --backend containers only")
        from kafka_chaos.harness.local.cluster import LocalCluster

        return LocalCluster(config, distribution)
    from kafka_chaos.harness.containers.cluster import ContainerCluster

    return ContainerCluster(config, distribution, base_image=base_image)


def open_bench_cluster(backend: str, config: "ClusterConfig", distribution: "KafkaDistribution", *,
                       start_timeout: float, stop_timeout: float,
                       log4j_extra: str = "") -> "LocalCluster | ContainerCluster":
    """An unstarted cluster (``backend``: "local", "containers" or "auto") whose brokers log to
    files this process reads — the local run dir, or on containers a host directory mounted as
    each broker's log dir (``ContainerCluster(broker_log_files=True)``) — so the benchmarks read
    ``controller.log``, ``state-change.log`` (:mod:`harness.node_logs`) and whatever
    ``log4j_extra`` adds (a request log) the same way on both.  ``stop_timeout``: seconds a
    SIGTERMed broker gets before SIGKILL."""
    if resolve_backend(backend) == "containers":
        from kafka_chaos.harness.containers.cluster import ContainerCluster

        return ContainerCluster(config, distribution, start_timeout=start_timeout, stop_timeout=stop_timeout,
                                broker_log_files=True, log4j_extra=log4j_extra)
    from kafka_chaos.harness.local.cluster import LocalCluster

    return LocalCluster(config, distribution, start_timeout=start_timeout, stop_timeout=stop_timeout,
                        log4j_extra=log4j_extra)


def missing_capabilities(backend: str, mode: str = "zookeeper") -> Mapping[Capability, str]:
    """The capabilities clusters of ``backend`` ("local", "containers", "auto") will lack, each
    with a one-line reason (for "left out because ..." messages).  Asks no cluster: the launcher
    classes declare their capabilities; partitions also need root and ``iptables`` on this machine
    (the local launcher says so through ``capability_problems``, the containers one also needs
    ``nsenter``)."""
    chosen = resolve_backend(backend)
    launcher = _launcher_class(chosen, mode)
    declared = capabilities_of(launcher)
    problems = capability_problems(launcher)
    missing: dict[Capability, str] = {}
    for capability in Capability:
        if capability not in declared:
            missing[capability] = problems.get(capability) or (
                _why_missing_on_kraft(capability) if mode == "kraft" else _why_missing(capability, chosen))
    if chosen == "containers":
        from kafka_chaos.harness.containers.network import check_partition_tools

        try:
            check_partition_tools()  # cuts and degradations are rules inside the containers' namespaces
        except HarnessError as exc:
            for capability in NAMESPACE_RULES & declared:
                missing[capability] = str(exc)
    return MappingProxyType(missing)


def undeclared_capabilities(chosen: str, mode: str) -> Mapping[Capability, str]:
    """The capabilities the launcher of ``mode`` clusters on ``chosen`` ("local" or
    "containers") does not declare, each with a one-line reason: what it can never do, whatever
    this machine has (:func:`missing_capabilities` adds what this machine lacks)."""
    launcher = _launcher_class(chosen, mode)
    declared = capabilities_of(launcher) | frozenset(capability_problems(launcher))
    return MappingProxyType({
        capability: _why_missing_on_kraft(capability) if mode == "kraft" else _why_missing(capability, chosen)
        for capability in Capability if capability not in declared})


# What the containers launcher does with iptables/tc inside a container's network namespace.
NAMESPACE_RULES = frozenset({Capability.NETWORK_PARTITION, Capability.ZOOKEEPER_LINK_PARTITION,
                             Capability.NETWORK_DEGRADE, Capability.QUORUM_LINK_PARTITION})


def _launcher_class(chosen: str, mode: str = "zookeeper") -> type:
    if mode == "migration" and chosen == "local":
        from kafka_chaos.harness.local.migration import LocalMigrationCluster

        return LocalMigrationCluster
    if mode == "kraft" and chosen == "containers":
        from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

        return ContainerKraftCluster
    if mode == "kraft":
        from kafka_chaos.harness.local.kraft import LocalKraftCluster

        return LocalKraftCluster
    if chosen == "local":
        from kafka_chaos.harness.local.cluster import LocalCluster

        return LocalCluster
    from kafka_chaos.harness.containers.cluster import ContainerCluster

    return ContainerCluster


# Power failures and disk faults have no entry here: every launcher, in every mode, puts its data
# directories on the crash-consistency layer on the host (containers bind-mount it:
# harness.containers.disks); only a host without the means lacks them (capability_problems).


def _why_missing_on_kraft(capability: Capability) -> str:
    if capability.value.startswith("zookeeper"):
        return "a KRaft cluster has no ZooKeeper"
    if capability is Capability.NETWORK_PARTITION:
        return ("a KRaft cluster cuts links between node ids instead (quorum_link_partition: "
                "QuorumLinkPartitioner.cut_links)")
    if capability is Capability.LOG_DIR_FAILURE:
        return ("failed log directories on KRaft need the local launcher (the containers KRaft launcher gives each "
                "broker one data directory, which it cannot repair once the broker halted)")
    return f"the KRaft launchers have no {capability.value} capability yet"


def _why_missing(capability: Capability, chosen: str) -> str:
    if capability is Capability.NETWORK_DEGRADE:
        return (f"needs root with iptables and tc: lossy and rate-limited links are made on loopback "
                f"(local) or inside the containers' namespaces; the {chosen} launcher has no such fault")
    if capability in (Capability.ZOOKEEPER_ENSEMBLE, Capability.ZOOKEEPER_LINK_PARTITION):
        return f"the {chosen} launcher runs one ZooKeeper server only"
    if capability is Capability.LINK_DELAY:
        return (f"delayed links need the local launcher's link proxies (harness.link_proxy; no netem "
                f"here); the {chosen} launcher has none")
    if capability is Capability.BROKER_RELEASES:
        return (f"rolling a broker to another release needs the local launcher (one class path per broker); "
                f"the {chosen} launcher builds one image per release")
    if capability is Capability.CONTROLLER_QUORUM:
        return "controller quorum faults need a KRaft cluster (--mode kraft) or a migrating one (--mode migration)"
    if capability is Capability.ZK_MIGRATION:
        return f"the migration needs a migrating cluster (--mode migration) on the local launcher, not {chosen}"
    if capability is Capability.QUORUM_LINK_PARTITION:
        return "cuts between KRaft controllers and brokers need a KRaft cluster (--mode kraft)"
    if capability is Capability.NETWORK_PARTITION:
        return (f"needs --backend containers: network partitions need a broker in its own network "
                f"namespace, and the {chosen} launcher runs them on the host's")
    return f"the {chosen} launcher has no {capability.value} capability"


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--base-image`` for subcommands that start clusters."""
    parser.add_argument("--backend", choices=BACKENDS, default="local",
                        help="where brokers run: local JVMs, Docker containers, or auto "
                             "(containers when a Docker engine answers) [default: local]")
    parser.add_argument("--base-image", metavar="IMAGE", default=None,
                        help="containers backend: a local JRE image with java on its PATH to build "
                             "the Kafka image on, instead of the JRE assembled from Debian packages")

"""Class-data-sharing archives that halve a local broker's start-up CPU.

A Kafka broker loads ~6,000 classes (Scala, Netty, Jackson) at start; on a 2-core machine
starting several brokers at once, class loading and verification is most of the start-up time.
A dynamic AppCDS archive (JDK 13+, ``-XX:ArchiveClassesAtExit``) holds those classes already
parsed and verified; measured here, a broker's CPU to readiness fell from ~2.5 s to ~1.3 s.

The archives are made once per (java binary, classpath) by :func:`build_archives` — a
one-broker cluster started with ``-XX:ArchiveClassesAtExit`` and stopped cleanly, which is when
the JVM writes them — from ``kafka-chaos fetch-kafka`` (so ``scripts/setup.sh`` makes them). A
ZooKeeper-mode release gets a broker and a ZooKeeper archive (its KRaft nodes use the broker's);
a KRaft-only one (4.x) a broker archive, dumped by the broker of a one-controller KRaft cluster.
:func:`harness.local.cds_paths.archive_options` adds ``-XX:SharedArchiveFile`` only when a matching
archive exists; a JVM that cannot use an archive warns on stdout and runs without it, so a
stale one is harmless.

Where the archives live is :mod:`harness.local.cds_paths`, which the local launcher reads; this module
starts a :class:`harness.local.cluster.LocalCluster` to make them, so the two do not import each other.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from kafka_chaos.harness.local.cds_paths import ROLES, archive_options, archive_path
from kafka_chaos.harness.config import ClusterConfig, kraft_only
from kafka_chaos.harness.distribution import KafkaDistribution, java_executable
from kafka_chaos.harness.errors import HarnessError
from kafka_chaos.harness.local.cluster import LocalCluster

__all__ = ["ROLES", "archive_options", "archive_path", "build_archives"]

log = logging.getLogger(__name__)


def build_archives(distribution: KafkaDistribution) -> list[Path]:
    """Make the release's archives unless they exist; returns their paths, or none.

    Never fatal: the archives only speed start-up up, so a build that fails for any reason
    (another JVM, a JVM flag from the environment, a full disk) logs one warning and returns
    ``[]``; :func:`archive_options` then finds no archive and the nodes start without one."""
    try:
        return _build_archives(distribution)
    except (HarnessError, OSError) as exc:
        log.warning("no class-data-sharing archives (%s); the brokers start without them", _one_line(exc))
        return []


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500] or type(exc).__name__


def _build_archives(distribution: KafkaDistribution) -> list[Path]:
    java = java_executable()
    # A KRaft-only release (4.x, KIP-833) has no ZooKeeper, and its controllers use the brokers'
    # archive (harness.local.kraft): one archive, dumped by a KRaft broker.
    roles = ("broker",) if kraft_only(distribution.version) else ROLES
    finals = {role: archive_path(distribution, role, java) for role in roles}
    if all(p.is_file() for p in finals.values()):
        return list(finals.values())
    directory = next(iter(finals.values())).parent
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel set-ups share the cache
        if all(p.is_file() for p in finals.values()):
            return list(finals.values())
        partial = {role: p.with_suffix(f".{os.getpid()}.partial") for role, p in finals.items()}
        log.info("building class-data-sharing archives for Kafka %s in %s (one 1-broker cluster start)",
                 distribution.version, directory)
        dump = {role: [f"-XX:ArchiveClassesAtExit={partial[role]}"] for role in roles}
        try:
            if kraft_only(distribution.version):
                _dump_from_a_kraft_broker(distribution, dump)
            else:
                _dump_from_a_zookeeper_mode_cluster(distribution, dump)
            for role in roles:
                if not partial[role].is_file() or partial[role].stat().st_size == 0:
                    log.warning("no %s archive was written; starting without class-data sharing", role)
                    return []
                partial[role].replace(finals[role])
        finally:
            for p in partial.values():
                p.unlink(missing_ok=True)
    log.info("class-data-sharing archives ready: %s", ", ".join(str(p) for p in finals.values()))
    return list(finals.values())


# metrics=False in both: a JVM dumping an archive refuses a Java agent ("Must enable
# AllowArchivingWithJavaAgent in order to run Java agent during CDS dumping"), while a JVM *using*
# one accepts it, so the brokers keep their JMX exporter agent. The diagnostic
# -XX:+AllowArchivingWithJavaAgent would let the dump run, but it archives classes as an agent may
# have transformed them and is not for production use; the exporter's own few classes are not
# worth it. The JVM writes the archive when it exits normally: SIGTERM, not SIGKILL.

def _dump_from_a_zookeeper_mode_cluster(distribution: KafkaDistribution, dump: dict[str, list[str]]) -> None:
    cluster = LocalCluster(ClusterConfig(brokers=1), distribution, class_data_sharing=False, metrics=False,
                           node_jvm_options=dump)
    with cluster:
        cluster.stop_broker(cluster.broker_ids[0])
        cluster.stop_zookeeper()


def _dump_from_a_kraft_broker(distribution: KafkaDistribution, dump: dict[str, list[str]]) -> None:
    """One controller and one broker; the broker dumps as it stops (a controlled shutdown, the
    controller still up), the controller (no flag) is killed with the cluster."""
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    cluster = LocalKraftCluster(ClusterConfig(brokers=1, mode="kraft", controllers=1), distribution,
                                class_data_sharing=False, metrics=False, node_jvm_options=dump)
    with cluster:
        cluster.stop_broker(cluster.broker_ids[0])

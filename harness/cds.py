"""Class-data-sharing archives that halve a local broker's start-up CPU.

A Kafka broker loads ~6,000 classes (Scala, Netty, Jackson) at start; on a 2-core machine
starting several brokers at once, class loading and verification is most of the start-up time.
A dynamic AppCDS archive (JDK 13+, ``-XX:ArchiveClassesAtExit``) holds those classes already
parsed and verified; measured here, a broker's CPU to readiness fell from ~2.5 s to ~1.3 s.

The archives are made once per (java binary, classpath) by :func:`build_archives` — a
one-broker cluster started with ``-XX:ArchiveClassesAtExit`` and stopped cleanly, which is when
the JVM writes them — from ``kafka-chaos fetch-kafka`` (so ``scripts/setup.sh`` makes them).
:func:`archive_options` adds ``-XX:SharedArchiveFile`` only when a matching archive exists; a
JVM that cannot use an archive warns on stdout and runs without it, so a stale one is harmless.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
from pathlib import Path

from harness.distribution import KafkaDistribution, cache_root, java_executable

log = logging.getLogger(__name__)

ROLES = ("broker", "zookeeper")


def _key(distribution: KafkaDistribution, java: str) -> str:
    real = os.path.realpath(java)
    st = os.stat(real)
    text = "\0".join([real, str(st.st_size), str(st.st_mtime_ns), distribution.classpath])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def archive_path(distribution: KafkaDistribution, role: str, java: str | None = None) -> Path:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    java = java or java_executable()
    return cache_root() / "cds" / f"kafka-{distribution.version}-{_key(distribution, java)}-{role}.jsa"


def archive_options(distribution: KafkaDistribution, role: str, java: str | None = None) -> list[str]:
    """``-XX:SharedArchiveFile=...`` when this JVM and classpath have an archive, else nothing."""
    path = archive_path(distribution, role, java)
    return [f"-XX:SharedArchiveFile={path}"] if path.is_file() else []


def build_archives(distribution: KafkaDistribution) -> list[Path]:
    """Make the broker and ZooKeeper archives unless they exist; returns their paths."""
    from harness.config import ClusterConfig
    from harness.local import LocalCluster

    java = java_executable()
    finals = {role: archive_path(distribution, role, java) for role in ROLES}
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
        cluster = LocalCluster(ClusterConfig(brokers=1), distribution, class_data_sharing=False,
                               node_jvm_options={role: [f"-XX:ArchiveClassesAtExit={partial[role]}"]
                                                 for role in ROLES})
        try:
            with cluster:
                # The JVM writes the archive when it exits normally: SIGTERM, not SIGKILL.
                cluster.stop_broker(cluster.broker_ids[0])
                cluster.stop_zookeeper()
            for role in ROLES:
                if not partial[role].is_file() or partial[role].stat().st_size == 0:
                    log.warning("no %s archive was written; starting without class-data sharing", role)
                    return []
                partial[role].replace(finals[role])
        finally:
            for p in partial.values():
                p.unlink(missing_ok=True)
    log.info("class-data-sharing archives ready: %s", ", ".join(str(p) for p in finals.values()))
    return list(finals.values())

"""Where the class-data-sharing archives of :mod:`harness.local.cds` live, and the JVM flag that
uses one (read by the local launcher at every start; no launcher imported here)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kafka_chaos.harness.distribution import KafkaDistribution, cache_root, java_executable

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

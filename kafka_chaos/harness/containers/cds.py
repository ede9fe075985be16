"""Class-data-sharing archives for the containers' JVMs, as :mod:`harness.local.cds` makes them for
local ones: a third image layer, ``kafka-chaos-kafka:<tag>-cds``, holds a dynamic AppCDS archive
per role under ``/opt/kafka/cds/``.

A broker container took 7–8 s from ``docker start`` to its registration, most of it loading and
verifying Kafka's ~6,000 classes on a shared 2-core machine; with the archive a 3-broker
container cluster starts in 7.5–8.8 s instead of 11.7–12.6 s (measured side by side here, load
about 7).  Every restart in a scenario gains the same.

An archive must come from the very JVM and class path that use it, so it is made *in* the
image: a one-broker container cluster runs with ``-XX:ArchiveClassesAtExit`` and is stopped
cleanly (the JVM writes the archive when it exits normally), the files are copied out of the
stopped containers and added on top of the Kafka image.  The JMX exporter agent is left out of
that run: a JVM dumping an archive refuses a Java agent, and one *using* an archive accepts it.
The archive is used with ``-Xshare:auto`` (the default), so one that does not match is only a
warning in the container's log and the JVM starts without it.

This module starts a :class:`~harness.containers.cluster.ContainerCluster` to make the archives;
the cluster imports it only when it starts, so the two do not import each other at load time.
"""

from __future__ import annotations

import fcntl
import io
import logging
import tarfile
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.harness.containers.image import CDS_IMAGE_ROLE, IMAGE_LABEL, image_exists
from kafka_chaos.harness.containers.nodes import CDS_DIR, archive_name
from kafka_chaos.harness.distribution import cache_root
from kafka_chaos.harness.errors import HarnessError

if TYPE_CHECKING:
    import docker

    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import KafkaDistribution

log = logging.getLogger(__name__)

_DUMP_PATH = "/tmp/kafka-chaos-archive.jsa"  # inside each builder container (one role per container)


def cds_image_tag(kafka_image: str) -> str:
    """The archive layer's tag: the Kafka image's own, plus ``-cds`` (it is made from it alone)."""
    repository, _, tag = kafka_image.rpartition(":")
    return f"{repository}:{tag}-cds"


def ensure_cds_image(distribution: "KafkaDistribution", kafka_image: str, config: "ClusterConfig", *,
                     base_image: str | None = None, client: "docker.DockerClient") -> str | None:
    """The Kafka image with its class-data archives, built once (about 15 s: one 1-broker cluster
    start and stop); None, with a warning, when they could not be made — containers then start
    from ``kafka_image`` without them."""
    tag = cds_image_tag(kafka_image)
    if image_exists(client, tag):
        return tag
    lock_path = cache_root() / "cds" / ".containers.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs starting at once build it once
        if image_exists(client, tag):
            return tag
        started = time.monotonic()
        log.info("building %s: class-data archives from a 1-broker container cluster", tag)
        try:
            archives = _dump_archives(distribution, config, base_image)
            _build_layer(client, kafka_image, tag, archives, distribution.version)
        except HarnessError as exc:
            log.warning("no class-data archives for the containers (%s); they start without", exc)
            return None
        log.info("%s built in %.1f s", tag, time.monotonic() - started)
    return tag


def _dump_archives(distribution: "KafkaDistribution", config: "ClusterConfig",
                   base_image: str | None) -> dict[str, bytes]:
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.cluster import ContainerCluster
    from kafka_chaos.harness.containers.nodes import broker_alias, zookeeper_alias

    dumping = ClusterConfig(brokers=1, broker_heap=config.broker_heap, zookeeper_heap=config.zookeeper_heap,
                            jvm_options=(*config.jvm_options, f"-XX:ArchiveClassesAtExit={_DUMP_PATH}"))
    with ContainerCluster(dumping, distribution, base_image=base_image, class_data_sharing=False,
                          metrics=False) as cluster:
        broker = cluster.broker_ids[0]
        nodes = cluster.node_containers()
        containers = {"broker": nodes[broker_alias(broker)], "zookeeper": nodes[zookeeper_alias(1, 1)]}
        cluster.stop_broker(broker)  # SIGTERM: the JVM writes its archive as it exits
        cluster.stop_zookeeper()
        return {role: _read_file(container, _DUMP_PATH) for role, container in containers.items()}


def _read_file(container: "docker.models.containers.Container", path: str) -> bytes:
    import docker

    try:
        stream, _ = container.get_archive(path)
    except docker.errors.NotFound:
        raise HarnessError(f"{container.name} wrote no archive at {path}") from None
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        member = tar.extractfile(tar.getmembers()[0])
        data = member.read() if member is not None else b""
    if not data:
        raise HarnessError(f"{container.name} wrote an empty archive")
    return data


def _build_layer(client: "docker.DockerClient", kafka_image: str, tag: str, archives: dict[str, bytes],
                 kafka_version: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-cds-") as context:
        ctx = Path(context)
        for role, data in archives.items():
            (ctx / archive_name(role)).write_bytes(data)
        names = " ".join(archive_name(role) for role in sorted(archives))
        (ctx / "Dockerfile").write_text(f"FROM {kafka_image}\nCOPY {names} {CDS_DIR}/\n")
        try:
            client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, pull=False,
                                labels={IMAGE_LABEL: CDS_IMAGE_ROLE, "kafka-chaos.kafka-version": kafka_version})
        except Exception as exc:  # docker.errors.BuildError carries the build log
            raise HarnessError(f"building {tag} failed: {exc}") from exc

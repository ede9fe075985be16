"""The image: built with no registry, reused by tag, runs java without a shell; --base-image."""

from __future__ import annotations

import io

import pytest

from kafka_chaos.harness.errors import HarnessError


def _run(client, image: str, *command: str) -> str:  # type: ignore[no-untyped-def]
    return client.containers.run(image, list(command), remove=True, stdout=True, stderr=True).decode()


def test_the_image_runs_kafka_from_the_distribution_jars(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.containers.image import docker_client, ensure_kafka_image

    client = docker_client()
    assert "openjdk version \"17" in _run(client, kafka_image, "java", "-version")
    version = _run(client, kafka_image, "java", "-cp", "/opt/kafka/libs/*", "kafka.Kafka", "--version")
    assert kafka_distribution.version in version.splitlines()[-1]
    again = ensure_kafka_image(kafka_distribution, client=client)
    assert again.reused and again.tag == kafka_image
    assert kafka_image.startswith(f"kafka-chaos-kafka:{kafka_distribution.version}-")


def test_the_class_data_layer_serves_both_roles_and_is_reused(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.cds import cds_image_tag, ensure_cds_image
    from kafka_chaos.harness.containers.image import CDS_IMAGE_ROLE, IMAGE_LABEL, docker_client
    from kafka_chaos.harness.containers.nodes import archive_options

    client = docker_client()
    tag = ensure_cds_image(kafka_distribution, kafka_image, ClusterConfig(), client=client)
    assert tag == cds_image_tag(kafka_image) and client.images.get(tag).labels[IMAGE_LABEL] == CDS_IMAGE_ROLE
    # -Xshare:on fails the JVM when the archive cannot be mapped (Xshare:auto, as the nodes run,
    # would only warn): each role's archive matches the image's JVM and class path.
    for role, main in (("broker", "kafka.Kafka"), ("zookeeper", "org.apache.zookeeper.Version")):
        out = _run(client, tag, "java", "-Xshare:on", *archive_options(role, True), "-Xlog:cds=info",
                   "-cp", "/opt/kafka/libs/*", main, *(["--version"] if role == "broker" else []))
        assert "Mapped dynamic region" in out, out[-500:]
    client.close()


def test_base_image_builds_the_kafka_layer_on_the_given_jre(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.containers.image import IMAGE_LABEL, docker_client, ensure_jre_image, ensure_kafka_image
    from kafka_chaos.harness.containers.labels import new_run_id

    client = docker_client()
    # Stand-in for a pulled JRE image (no registry here): our JRE plus a label, so its id
    # differs (tags follow content: the very same base would give the very same Kafka tag).
    base = f"kafka-chaos-test-base:{new_run_id()}"
    dockerfile = io.BytesIO(f"FROM {ensure_jre_image(client).tag}\nLABEL purpose={base}\n".encode())
    client.images.build(fileobj=dockerfile, tag=base, rm=True, pull=False)
    built = None
    try:
        built = ensure_kafka_image(kafka_distribution, base_image=base, client=client)
        assert not built.reused and built.tag != kafka_image
        assert client.images.get(built.tag).labels[IMAGE_LABEL] == "kafka"
        assert "openjdk version" in _run(client, built.tag, "java", "-version")
    finally:
        if built is not None and built.tag != kafka_image:
            client.images.remove(built.tag)
        client.images.remove(base)


def test_a_base_image_that_is_not_present_is_a_one_line_error(docker_engine: None, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.containers.image import ensure_kafka_image

    with pytest.raises(HarnessError, match="not present locally"):
        ensure_kafka_image(kafka_distribution, base_image="kafka-chaos-no-such-image:1")

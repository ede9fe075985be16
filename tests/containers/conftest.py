"""Container tests need a Docker engine.  Without one they skip, saying why — except when
``KAFKA_CHAOS_REQUIRE_DOCKER=1`` (CI sets it in .ci/run): there a skip would hide a broken
set-up, so they fail instead."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

REQUIRE_DOCKER_ENV = "KAFKA_CHAOS_REQUIRE_DOCKER"


def docker_problem() -> str | None:
    """None when a Docker engine answers, else why not (one line)."""
    from harness.containers.image import docker_client
    from harness.errors import HarnessError

    try:
        docker_client().close()
    except HarnessError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def docker_engine() -> None:
    problem = docker_problem()
    if problem is None:
        return
    if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
        pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but {problem}", pytrace=False)
    pytest.skip(f"no Docker engine: {problem}")


@pytest.fixture(scope="session")
def kafka_distribution():  # type: ignore[no-untyped-def]
    from harness.distribution import resolve_distribution

    return resolve_distribution()


@pytest.fixture(scope="session")
def kafka_image(docker_engine: None, kafka_distribution) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Build (or reuse) the image once per session, so no test's timeout pays for it."""
    from harness.containers.image import ensure_kafka_image

    yield ensure_kafka_image(kafka_distribution).tag


def assert_nothing_left(run_id: str) -> None:
    """No container, network or volume with the run's label remains."""
    from harness.containers.image import docker_client
    from harness.containers.prune import labelled_objects

    client = docker_client()
    try:
        left = {kind: [getattr(o, "name", o) for o in objs]
                for kind, objs in labelled_objects(client, run_id).items() if objs}
    finally:
        client.close()
    assert not left, f"run {run_id} left Docker objects behind: {left}"

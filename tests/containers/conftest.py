"""Container tests need a Docker engine.  Without one they skip, saying why — except when
``KAFKA_CHAOS_REQUIRE_DOCKER=1`` (CI sets it in .ci/run): there a skip would hide a broken
set-up, so they fail instead."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REQUIRE_DOCKER_ENV = "KAFKA_CHAOS_REQUIRE_DOCKER"


def docker_problem() -> str | None:
    """None when a Docker engine answers, else why not (one line)."""
    from kafka_chaos.harness.containers.image import docker_client
    from kafka_chaos.harness.errors import HarnessError

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
    from kafka_chaos.harness.distribution import resolve_distribution

    return resolve_distribution()


@pytest.fixture(scope="session")
def kafka_image(docker_engine: None, kafka_distribution) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Build (or reuse) the image and its class-data layer once per session, so no test's
    timeout pays for them; yields the Kafka image's tag."""
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.cds import ensure_cds_image
    from kafka_chaos.harness.containers.image import docker_client, ensure_kafka_image

    tag = ensure_kafka_image(kafka_distribution).tag
    client = docker_client()
    try:
        ensure_cds_image(kafka_distribution, tag, ClusterConfig(), client=client)
    finally:
        client.close()
    yield tag


def assert_nothing_left(run_id: str) -> None:
    """No container, network or volume with the run's label remains."""
    from kafka_chaos.harness.containers.image import docker_client
    from kafka_chaos.harness.containers.prune import labelled_objects

    client = docker_client()
    try:
        left = {kind: [getattr(o, "name", o) for o in objs]
                for kind, objs in labelled_objects(client, run_id).items() if objs}
    finally:
        client.close()
    assert not left, f"run {run_id} left Docker objects behind: {left}"


SMOKE_SCENARIOS = ("leader_hard_kill", "controller_kill", "controlled_shutdown_leader",
                   "preferred_election_after_restart", "reassign_leader_off")
# The partition scenarios of the test command, on one cluster (both need a short
# replica.lag.time.max.ms); broker_isolated_from_everyone needs the default cluster, the smoke
# scenarios', and runs with them in the nightly (a cut from everyone is also test_partitions');
# leader_cut_from_zookeeper, a second cut from ZooKeeper, runs on its own in the nightly.
PARTITION_SCENARIOS = ("follower_cut_from_leader", "controller_cut_from_zookeeper")
NIGHTLY_SCENARIOS = (*SMOKE_SCENARIOS, "broker_isolated_from_everyone")


@dataclass(frozen=True)
class SuiteRun:
    rc: int
    results: Path
    records: list[Any]
    cluster_runs: list[str]  # the run id of every cluster the run started


def run_on_containers(scenarios: tuple[str, ...], results: Path) -> SuiteRun:
    """One `kafka-chaos run --backend containers` of ``scenarios``, noting the run id of every
    cluster it starts (so a test can check that nothing of each is left)."""
    import kafka_chaos.harness.containers.cluster as cluster_module
    from kafka_chaos.cli.main import main
    from kafka_chaos.records.writer import read_records

    made: list[str] = []
    original = cluster_module.new_run_id

    def recording() -> str:
        made.append(original())
        return made[-1]

    cluster_module.new_run_id = recording  # session scope: no monkeypatch fixture here
    try:
        # --harness-defaults: no waits for the controller's imbalance checks (the test command's budget).
        argv = ["run", "--backend", "containers", "--seed", "11", "--no-report", "--results", str(results),
                "--harness-defaults"]
        for name in scenarios:
            argv += ["--scenario", name]
        rc = main(argv)
    finally:
        cluster_module.new_run_id = original
    return SuiteRun(rc, results, read_records(results).records, made)


@pytest.fixture(scope="session")
def containers_run(kafka_image: str, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """One `kafka-chaos run --backend containers` of the partition scenarios, shared by the
    tests that check it (tests/containers/test_partition_scenarios.py): they cut links inside
    the containers' network namespaces, which only this launcher does without root."""
    return run_on_containers(PARTITION_SCENARIOS, tmp_path_factory.mktemp("containers-run") / "results")


@pytest.fixture(scope="session")
def containers_smoke_run(kafka_image: str, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """The smoke suite's scenarios and the cut from everyone through `kafka-chaos run --backend
    containers`, on one cluster: matrix cells, for the nightly tests only (the test command runs
    the smoke scenarios on the local launcher, tests/integration/test_smoke_suite.py, and cuts a
    broker from everyone on containers in tests/containers/test_partitions.py; docs/nightly.md)."""
    return run_on_containers(NIGHTLY_SCENARIOS, tmp_path_factory.mktemp("containers-smoke-run") / "results")

"""The class-data-sharing archives of :mod:`harness.local.cds`, from an empty cache, as a new user's
set-up makes them: built, then used by a broker that runs with its real JVM options (the JMX
exporter agent included); and a build that fails leaves set-up and the cluster working (the
failure path, ``nightly``: docs/nightly.md; that a node without an archive starts without the
flag is unit-tested).

Each test points ``KAFKA_CHAOS_CACHE`` at an empty directory, so nothing built earlier on this
machine can hide a broken build.  One 1-broker cluster at a time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.local.cds import ROLES, archive_path, build_archives
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import CACHE_ENV, KafkaDistribution, resolve_distribution
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.metrics import MetricsEndpoint, scrape_one

TIMEOUT = 120.0  # generous bound for a busy shared 2-core machine; never a speed assertion
# A JVM flag from the environment that every JVM honours: with it a JVM runs fine but cannot
# dump an archive ("DynamicDumpSharedSpaces is unsupported when base CDS archive is not loaded").
NO_SHARING = "-Xshare:off"


@pytest.fixture(scope="module")
def distribution() -> KafkaDistribution:
    return resolve_distribution()


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv(CACHE_ENV, str(cache))
    return cache


def mapped_files(pid: int) -> set[str]:
    """The files a process has mapped: a JVM maps the archive it uses, and not one it rejected."""
    with open(f"/proc/{pid}/maps") as maps:
        return {line.split(maxsplit=5)[5].strip() for line in maps if len(line.split(maxsplit=5)) == 6}


def test_archives_built_in_an_empty_cache_serve_a_broker_that_runs_its_agent(
        distribution: KafkaDistribution, empty_cache: Path) -> None:
    archives = build_archives(distribution)
    assert sorted(archives) == sorted(archive_path(distribution, role) for role in ROLES)
    assert all(p.is_file() and p.stat().st_size > 0 and p.is_relative_to(empty_cache) for p in archives)
    with LocalCluster(ClusterConfig(brokers=1), distribution, start_timeout=TIMEOUT) as cluster:
        broker = cluster.broker_ids[0]
        pid = cluster.broker_pid(broker)
        assert pid is not None and cluster.zookeeper_pid is not None
        assert str(archive_path(distribution, "broker")) in mapped_files(pid)
        assert str(archive_path(distribution, "zookeeper")) in mapped_files(cluster.zookeeper_pid)
        port = cluster.endpoint(broker).metrics_port
        assert port is not None, "the broker runs without its JMX exporter agent"
        values = wait_until(lambda: scrape_one(MetricsEndpoint(broker, "127.0.0.1", port)), timeout=TIMEOUT,
                            interval=0.5, description="the broker's JMX exporter to answer")
        assert any(name.startswith("kafka_controller") for name in values), sorted(values)[:10]


@pytest.mark.nightly
def test_a_failing_archive_build_warns_and_leaves_set_up_and_the_cluster_working(
        distribution: KafkaDistribution, empty_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", NO_SHARING)
    # Set-up's own command, as scripts/setup.sh runs it: exit 0 and one warning.
    done = subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", "fetch-kafka"], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "no class-data-sharing archives" in line]
    assert len(warnings) == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not any((empty_cache / "cds").glob("*.jsa"))
    with LocalCluster(ClusterConfig(brokers=1), distribution, start_timeout=TIMEOUT) as cluster:
        pid = cluster.broker_pid(cluster.broker_ids[0])
        assert pid is not None and not any(name.endswith(".jsa") for name in mapped_files(pid))


@pytest.mark.nightly
def test_a_kraft_only_release_gets_a_broker_archive_that_its_controllers_and_brokers_map(empty_cache: Path) -> None:
    """Kafka 4.4.0 (no ZooKeeper: KIP-833): one archive, dumped by a KRaft broker, which a 1-controller,
    1-broker cluster's two nodes then both map (a ``nightly`` cell: about 20 s)."""
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    release = resolve_distribution("4.4.0")
    archives = build_archives(release)
    assert archives == [archive_path(release, "broker")] and archives[0].stat().st_size > 0
    config = ClusterConfig(brokers=1, mode="kraft", controllers=1)
    with LocalKraftCluster(config, release, start_timeout=TIMEOUT) as cluster:
        pids = [cluster.endpoint(cluster.broker_ids[0]).pid, *(cluster.controller_pid(c) for c in cluster.controller_ids)]
        assert all(pid is not None and str(archives[0]) in mapped_files(pid) for pid in pids), pids

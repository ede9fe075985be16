"""The cluster contract (harness.cluster) checked the same way on both launchers.

One 3-broker cluster per launcher (module scope; pytest finishes one parameter before starting
the next, so never two clusters at once).  The containers variant needs a Docker engine (see
conftest.py); the local one always runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_chaos.harness.backends import open_cluster
from kafka_chaos.harness.cluster import BrokerControl, Capability, Cluster, NetworkPartitioner, ZooKeeperControl, capabilities_of
from kafka_chaos.harness.config import (
    REPLICA_LAG_TIME_MAX_MS,
    ZOOKEEPER_SESSION_TIMEOUT_MS,
    ClusterConfig,
    shared_broker_settings,
    tick_time_ms,
)
from kafka_chaos.harness.errors import UsageError
from kafka_chaos.harness.metadata import fetch_metadata
from kafka_chaos.harness.observer import ConvergenceTimeout, ZkObserver
from tests.containers.conftest import assert_nothing_left

CONFIG = ClusterConfig(brokers=3, cluster_overrides={REPLICA_LAG_TIME_MAX_MS: "10000"})


@pytest.fixture(scope="module", params=["local", "containers"])
def cluster(request: pytest.FixtureRequest, kafka_distribution) -> Iterator[Cluster]:  # type: ignore[no-untyped-def]
    if request.param == "containers":
        request.getfixturevalue("kafka_image")  # skips (or fails in CI) without Docker
    with open_cluster(request.param, CONFIG, kafka_distribution) as started:
        yield started
    if request.param == "containers":
        assert_nothing_left(started.run_id)  # type: ignore[attr-defined]


@pytest.fixture
def observer(cluster: Cluster) -> Iterator[ZkObserver]:
    with ZkObserver(cluster.zookeeper_connect, topics=[]) as obs:
        yield obs


def expiry_bound(cluster: Cluster) -> float:
    """Session timeout + two ticks + the ping that may have just happened, with a margin."""
    return int(cluster.broker_settings()[ZOOKEEPER_SESSION_TIMEOUT_MS]) / 1000 + 2 * tick_time_ms(CONFIG) / 1000 + 10


def controls(cluster: Cluster) -> BrokerControl:
    assert isinstance(cluster, BrokerControl)
    return cluster


def a_non_controller(observer: ZkObserver, cluster: Cluster) -> int:
    controller = observer.snapshot().controller
    return next(b for b in reversed(cluster.broker_ids) if b != controller)


def test_implements_the_protocols(cluster: Cluster, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(cluster, Cluster) and isinstance(cluster, BrokerControl)
    assert cluster.kafka_version == kafka_distribution.version
    assert cluster.broker_ids == [1, 2, 3]
    # Both launchers cut and degrade the network (containers: rules in each broker's namespace;
    # local: iptables on loopback, as root), run ZooKeeper ensembles, fail log directories, fake
    # clocks (libfaketime: on the host, or in the image for the brokers' containers) and put data
    # on the crash-consistency layer (a FUSE mount on the host; containers bind-mount it: power
    # failures, disk faults); only the local one delays links (its userspace link proxies: this
    # kernel has no netem) and rolls a broker to another release (one class path per broker;
    # containers: one image each).
    # Neither ZooKeeper-mode cluster has KRaft controllers (tests/containers/test_kraft_on_containers.py),
    # so no links between them to cut either (tests/integration/test_kraft_links.py), nor migrates
    # (the local launcher's migrating cluster does: tests/integration/test_migration.py).
    assert isinstance(cluster, NetworkPartitioner)
    local_only = {Capability.LINK_DELAY, Capability.BROKER_RELEASES}
    both = set(Capability) - local_only - {Capability.CONTROLLER_QUORUM, Capability.ZK_MIGRATION,
                                           Capability.QUORUM_LINK_PARTITION}
    from kafka_chaos.harness.cluster import capability_problems

    lacking = set(capability_problems(cluster))  # without root: no cuts, no containers' log dirs
    expected = both | (local_only if cluster.backend == "local" else set())
    assert capabilities_of(cluster) == expected - lacking


def test_a_paused_zookeeper_answers_nothing_until_resumed(cluster: Cluster, observer: ZkObserver) -> None:
    assert isinstance(cluster, ZooKeeperControl)
    cluster.pause_zookeeper()
    try:
        assert cluster.zookeeper_paused()
        with pytest.raises(ConvergenceTimeout, match="last read failed"):
            observer.wait_until(lambda s: True, timeout=1.5, description="any snapshot")
    finally:
        cluster.resume_zookeeper()
    assert not cluster.zookeeper_paused()
    assert set(observer.wait_until(lambda s: len(s.live_brokers) == 3, timeout=expiry_bound(cluster),
                                   description="3 brokers after the pause").live_brokers) == {1, 2, 3}


def test_every_broker_is_reachable_at_its_advertised_endpoint(cluster: Cluster, observer: ZkObserver) -> None:
    snapshot = observer.snapshot()
    assert set(snapshot.live_brokers) == {1, 2, 3}
    assert snapshot.controller in snapshot.live_brokers
    endpoints = {b: cluster.endpoint(b) for b in cluster.broker_ids}
    assert cluster.bootstrap_servers.split(",") == [endpoints[b].bootstrap for b in cluster.broker_ids]
    for broker_id, endpoint in endpoints.items():
        assert endpoint.broker_id == broker_id and endpoint.host == "127.0.0.1"
        # Each broker, asked on its own address, advertises exactly these client addresses.
        metadata = fetch_metadata(endpoint.bootstrap, topics=[])
        assert dict(metadata.brokers) == {b: ("127.0.0.1", e.port) for b, e in endpoints.items()}
        assert metadata.controller_id == snapshot.controller


def test_brokers_run_with_the_shared_settings(cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    settings = cluster.broker_settings()
    assert settings == shared_broker_settings(CONFIG)  # the same layering on both launchers
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.BROKER, "2")
    live = client.describe_configs([resource])[resource].result(timeout=15)
    for name in (ZOOKEEPER_SESSION_TIMEOUT_MS, REPLICA_LAG_TIME_MAX_MS):
        assert live[name].value == settings[name], name


def test_log_files_hold_each_node_log(cluster: Cluster) -> None:
    files = cluster.log_files()
    assert set(files) == {"zookeeper", "broker-1", "broker-2", "broker-3"}
    assert "binding to port" in files["zookeeper"].read_text(errors="replace")
    for broker_id in cluster.broker_ids:
        assert f"[KafkaServer id={broker_id}] started" in files[f"broker-{broker_id}"].read_text(errors="replace")


def test_kill_leaves_the_registration_and_a_start_right_after_waits_for_its_expiry(
        cluster: Cluster, observer: ZkObserver) -> None:
    """One session expiry for both halves of the contract: a SIGKILLed broker's registration
    stays (ZooKeeper closes a session only on an explicit close or its expiry), and a start right
    after the kill waits until ZooKeeper has expired it (a start before that fails with
    NODEEXISTS), then registers with a new broker epoch."""
    victim = a_non_controller(observer, cluster)
    old_epoch = observer.snapshot().live_brokers[victim]
    session_s = int(cluster.broker_settings()[ZOOKEEPER_SESSION_TIMEOUT_MS]) / 1000
    killed_at = time.monotonic()  # before the kill: the process dies after it
    controls(cluster).kill_broker(victim)
    assert not controls(cluster).broker_running(victim)
    assert observer.snapshot().live_brokers.get(victim) == old_epoch, "the dead broker's registration stays"
    controls(cluster).start_broker(victim)  # must not fail with NODEEXISTS
    waited = time.monotonic() - killed_at
    assert controls(cluster).broker_running(victim)
    assert observer.snapshot().live_brokers[victim] > old_epoch
    # The start waited out the old session: its last ping was at most a third of the session
    # before the kill (ZooKeeper's ClientCnxn pings after readTimeout / 2 = session / 3 idle), and
    # ZooKeeper expires a session no sooner than a session after its last ping (expiry in
    # [2T/3, T + tick]: docs/failover-scaling.md).
    assert waited >= 2 * session_s / 3 - 0.25, f"started {waited:.1f} s after the kill"


def test_stop_is_a_controlled_shutdown(cluster: Cluster, observer: ZkObserver) -> None:
    victim = a_non_controller(observer, cluster)
    since = observer.snapshot().taken_at
    controls(cluster).stop_broker(victim)
    assert not controls(cluster).broker_running(victim)
    # A clean exit closes the ZooKeeper session: the registration is gone without any expiry.
    assert victim not in observer.snapshot().live_brokers or observer.wait_broker_gone(victim, 5)
    log = cluster.log_files()[f"broker-{victim}"].read_text(errors="replace")
    assert "Controlled shutdown request returned successfully" in log
    controls(cluster).start_broker(victim)
    assert observer.broker_registered_at(victim, since) is not None


def test_pause_keeps_the_process_and_resume_continues_it(cluster: Cluster, observer: ZkObserver) -> None:
    victim = a_non_controller(observer, cluster)
    controls(cluster).pause_broker(victim)
    try:
        assert controls(cluster).broker_running(victim)
        assert controls(cluster).broker_paused(victim)
    finally:
        controls(cluster).resume_broker(victim)
    assert not controls(cluster).broker_paused(victim)
    observer.wait_broker_registered(victim, expiry_bound(cluster))
    assert fetch_metadata(cluster.endpoint(victim).bootstrap, topics=[], timeout=10).brokers


def test_every_broker_exports_the_controller_metrics_and_a_paused_one_is_absent(
        cluster: Cluster, observer: ZkObserver) -> None:
    """The JMX exporter agent (harness.jmx_exporter) on every broker, scraped by harness.metrics:
    one active controller among them; a SIGSTOPped / docker-paused broker misses the bounded
    scrape instead of stalling it."""
    from kafka_chaos.harness.metrics import endpoints_of, scrape_brokers
    from kafka_chaos.scenarios.history.controller_metrics import MEASURED, active_controller

    endpoints = endpoints_of(cluster)
    assert sorted(endpoints) == cluster.broker_ids
    _, values = scrape_brokers(endpoints, timeout=10.0)
    assert sorted(values) == cluster.broker_ids
    for prefix, kind in MEASURED.values():
        assert all(f"{prefix}_{'value' if kind == 'gauge' else 'count'}" in v for v in values.values()), prefix
    assert active_controller(values) == observer.snapshot().controller
    victim = a_non_controller(observer, cluster)
    controls(cluster).pause_broker(victim)
    try:
        _, during = scrape_brokers(endpoints, timeout=1.0)
    finally:
        controls(cluster).resume_broker(victim)
    assert sorted(during) == [b for b in cluster.broker_ids if b != victim]
    observer.wait_broker_registered(victim, expiry_bound(cluster))


def test_unknown_broker_ids_are_refused(cluster: Cluster) -> None:
    with pytest.raises(UsageError, match="unknown broker id 99"):
        cluster.endpoint(99)
    with pytest.raises(UsageError, match="unknown broker id 99"):
        controls(cluster).kill_broker(99)

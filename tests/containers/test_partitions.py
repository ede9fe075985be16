"""Network partitions on the containers launcher, checked at the harness level against what
ZooKeeper and the brokers show (the scenarios built on them live in scenarios/).  The cluster has
KIP-291's control-plane listener: the cuts select peers by address, so they cover it too."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.config import REPLICA_LAG_TIME_MAX_MS, ClusterConfig, tick_time_ms
from kafka_chaos.harness.metadata import MetadataError, broker_view, create_topic, fetch_metadata
from kafka_chaos.harness.observer import ZkObserver
from tests.containers.conftest import assert_nothing_left

# A follower leaves the ISR after 3 s without fetching (Partition.getOutOfSyncReplicas).
CONFIG = ClusterConfig(brokers=3, cluster_overrides={REPLICA_LAG_TIME_MAX_MS: "3000"}, control_plane_listener=True)
TOPIC = "partitioned"


@pytest.fixture(scope="module")
def cluster(kafka_image: str, kafka_distribution):  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.containers.cluster import ContainerCluster

    with ContainerCluster(CONFIG, kafka_distribution) as started:
        yield started
    assert_nothing_left(started.run_id)


@pytest.fixture
def observer(cluster) -> Iterator[ZkObserver]:  # type: ignore[no-untyped-def]
    with ZkObserver(cluster.zookeeper_connect, topics=[TOPIC]) as obs:
        yield obs
    cluster.heal_network()  # whatever a failing test left cut


@pytest.fixture
def roles(cluster, observer: ZkObserver) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Leader and follower of TOPIC-0 that are not the controller: the leader's AlterPartition
    goes to the controller, so cutting the controller would stall the ISR change itself."""
    snapshot = observer.snapshot()
    controller = snapshot.controller
    leader, follower = [b for b in cluster.broker_ids if b != controller]
    if not snapshot.has_topic(TOPIC):
        create_topic(cluster.bootstrap_servers, TOPIC, {0: [leader, follower, controller]})
    state = observer.wait_until(lambda s: len(s.partition(TOPIC, 0).isr) == 3, timeout=60,
                                description=f"{TOPIC}-0 to have a full ISR")
    return {"controller": controller, "leader": state.partition(TOPIC, 0).leader,
            "follower": next(r for r in state.partition(TOPIC, 0).replicas
                             if r not in (controller, state.partition(TOPIC, 0).leader))}


def expiry_bound(cluster) -> float:  # type: ignore[no-untyped-def]
    return cluster.session_timeout_s() + 2 * tick_time_ms(CONFIG) / 1000 + 10


# nightly (the budget): the test command cuts the controller from ZooKeeper only and a follower from
# its peers through the runner on this launcher (tests/containers/test_partition_scenarios.py)
@pytest.mark.nightly
def test_cut_from_zookeeper_only_expires_the_session_but_keeps_serving(cluster, observer, roles) -> None:  # type: ignore[no-untyped-def]
    victim = roles["follower"]
    old_epoch = observer.snapshot().live_brokers[victim]
    cluster.isolate(victim, from_zookeeper=True, from_brokers=False)
    observer.wait_broker_gone(victim, expiry_bound(cluster))
    assert cluster.broker_running(victim)  # the process lives on ...
    assert fetch_metadata(cluster.endpoint(victim).bootstrap, topics=[]).brokers  # ... and answers clients
    cluster.heal_network()
    # Kafka re-creates its session and re-registers (KafkaZkClient's session expiry handler).
    observer.wait_broker_registered(victim, expiry_bound(cluster), newer_than_epoch=old_epoch)


@pytest.mark.nightly
def test_follower_cut_from_its_peers_leaves_the_isr_and_returns_after_heal(cluster, observer, roles) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import Producer

    follower = roles["follower"]
    # A follower whose log end equals the leader's counts as caught up however long it is
    # silent, so the leader needs new records to notice the lag.
    stop = threading.Event()
    failures: list[BaseException] = []

    def produce() -> None:
        try:
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1",
                                 "message.timeout.ms": 5000})
            while not stop.wait(0.1):
                producer.produce(TOPIC, b"tick", partition=0)
                producer.poll(0)
            producer.flush(5)
        except BaseException as exc:  # re-raised in the test thread
            failures.append(exc)

    producer_thread = threading.Thread(target=produce, name="ticks", daemon=True)
    producer_thread.start()
    try:
        cluster.isolate(follower, from_zookeeper=False, from_brokers=True)
        observer.wait_until(lambda s: follower not in s.partition(TOPIC, 0).isr, timeout=60,
                            description=f"follower {follower} to leave the ISR of {TOPIC}-0")
        assert follower in observer.snapshot().live_brokers  # still registered: ZK was not cut
        cluster.heal_network()
        observer.wait_until(lambda s: follower in s.partition(TOPIC, 0).isr, timeout=60,
                            description=f"follower {follower} to rejoin the ISR of {TOPIC}-0")
    finally:
        stop.set()
        producer_thread.join(timeout=15)
    assert not failures, failures


def test_cut_from_clients_only_hides_the_broker_from_the_host(cluster, observer, roles) -> None:  # type: ignore[no-untyped-def]
    victim = roles["leader"]
    cluster.isolate(victim, from_zookeeper=False, from_brokers=False, from_clients=True)
    with pytest.raises(MetadataError):
        broker_view(cluster.endpoint(victim).bootstrap, [TOPIC], timeout=2)
    assert victim in observer.snapshot().live_brokers  # the cluster still sees it
    cluster.heal_network()
    cluster.heal_network()  # idempotent
    assert (TOPIC, 0) in broker_view(cluster.endpoint(victim).bootstrap, [TOPIC], timeout=5)


def test_cut_from_everyone_loses_leadership(cluster, observer, roles) -> None:  # type: ignore[no-untyped-def]
    leader = roles["leader"]
    cluster.isolate(leader, from_zookeeper=True, from_brokers=True)
    observer.wait_until(lambda s: s.partition(TOPIC, 0).leader != leader and leader not in s.live_brokers,
                        timeout=expiry_bound(cluster), description=f"{TOPIC}-0 to elect a leader other than {leader}")
    cluster.heal_network()
    observer.wait_until(lambda s: leader in s.live_brokers and leader in s.partition(TOPIC, 0).isr,
                        timeout=60, description=f"broker {leader} to come back into the ISR")


def test_the_controllers_requests_arrive_on_control_plane_and_a_peer_cut_holds_them_back(cluster, observer) -> None:  # type: ignore[no-untyped-def]
    """The controller's connection to every other broker is to its CONTROL_PLANE port (9093 in
    the broker's namespace, from the controller's address: ControllerChannelManager.addNewBroker);
    the controller cut from its peers (by address) sends a new topic's LeaderAndIsr in vain — the
    peer creates no log for it — until healed.  ~5 s on the module's cluster."""
    from kafka_chaos.harness.containers.network import established_connections
    from kafka_chaos.harness.containers.nodes import BROKER_DATA_DIR, CONTROL_PLANE_PORT, container_pid

    controller = observer.snapshot().controller
    peers = [b for b in cluster.broker_ids if b != controller]
    controller_address = cluster._address(cluster._broker(controller))
    pids = {peer: container_pid(cluster._broker(peer)) for peer in peers}
    wait_until(lambda: all(established_connections(pids[p], CONTROL_PLANE_PORT) == {controller_address}
                           for p in peers), timeout=60, interval=0.2,
               description=f"controller {controller}'s connections on every peer's CONTROL_PLANE port")
    peer, topic = peers[0], "control-plane-cut"
    partition_log = f"/proc/{pids[peer]}/root{BROKER_DATA_DIR}/{topic}-0"
    cluster.isolate(controller, from_zookeeper=False, from_brokers=True)
    try:  # through the controller's client link, not cut; it writes the topic to ZooKeeper itself
        create_topic(cluster.endpoint(controller).bootstrap, topic, {0: [peer]})
        with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as topic_observer:
            topic_observer.wait_until(lambda s: s.has_topic(topic) and s.partition(topic, 0).leader == peer,
                                      timeout=60, description=f"the controller to elect {peer} for {topic}-0")
        time.sleep(2.0)  # uncut, the LeaderAndIsr that follows the election arrives within milliseconds
        assert not os.path.exists(partition_log), "the LeaderAndIsr went through the cut"
    finally:
        cluster.heal_network()
    wait_until(lambda: os.path.exists(partition_log), timeout=60, interval=0.2,
               description=f"broker {peer} to create {topic}-0 once healed")

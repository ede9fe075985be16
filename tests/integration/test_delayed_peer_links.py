"""Delayed peer and client links on the local launcher (root + iptables' nat table): a real
2-broker cluster with link proxies, whose peer and client connections nat rules redirect through
the proxy from the start.  With the follower's peer links delayed D each way an ``acks=all``
produce to a partition it follows waits for its fetch round trips (≥ 2D), with the leader's
client links delayed it waits for its own round trip (≥ 2D); healed, both are fast again.
~25 s of cluster time; the network suite's follower_link_delayed* scenarios check the ISR
threshold.  The cluster has KIP-291's control-plane listener: the controller's connections to its
peer's CONTROL_PLANE port go through links of their own, delayed with the peer links."""

from __future__ import annotations

import statistics
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.local.network import our_chains, redirect_problem

pytestmark = pytest.mark.skipif(redirect_problem() is not None, reason=str(redirect_problem()))

DELAY_MS = 250.0
SENDS = 5
TIMEOUT = 60.0  # a bound for a busy shared machine, never a speed assertion


def produce_latencies_ms(producer: Producer, topic: str) -> list[float]:
    """One acks=all record at a time: send, wait for its acknowledgement."""
    latencies = []
    for i in range(SENDS):
        began = time.monotonic()
        failures: list[object] = []
        producer.produce(topic, value=str(i).encode(), partition=0,
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
        assert producer.flush(TIMEOUT) == 0 and not failures, failures
        latencies.append((time.monotonic() - began) * 1000)
    return latencies


def test_delayed_peer_and_client_links_slow_acks_all_and_heal_restores_them() -> None:
    cluster = LocalCluster(ClusterConfig(brokers=2, link_proxies=True, control_plane_listener=True),
                           resolve_distribution())
    with cluster:
        chain = f"KCHAOS-{cluster.zookeeper_connect.rsplit(':', 1)[1]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("d", num_partitions=1, replica_assignment=[[1, 2]])])["d"].result(TIMEOUT)
        assert cluster._link_proxies is not None
        proxy = cluster._link_proxies.control
        # Only the controller opens connections to a CONTROL_PLANE port, one per live broker but itself.
        planes = {s.name: s.connections for s in proxy.status() if s.name.endswith("/control-plane")}
        assert sorted(n for n, c in planes.items() if c) in (["broker-1->broker-2/control-plane"],
                                                              ["broker-2->broker-1/control-plane"]), planes
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                             "enable.idempotence": True})
        wait_until(lambda: bool(produce_latencies_ms(producer, "d")), timeout=TIMEOUT, interval=0.5,
                   description="topic d writable")
        before = statistics.median(produce_latencies_ms(producer, "d"))
        cluster.delay_links(2, delay_ms=DELAY_MS, to_zookeeper=False, to_brokers=True)
        peers_delayed = statistics.median(produce_latencies_ms(producer, "d"))
        delayed = {s.name for s in proxy.status() if s.upstream.delay_ms == DELAY_MS == s.downstream.delay_ms}
        assert {"broker-1->broker-2/control-plane", "broker-2->broker-1/control-plane"} <= delayed
        cluster.heal_network()
        time.sleep(DELAY_MS / 1000)  # bytes already in flight keep their delivery time
        healed = statistics.median(produce_latencies_ms(producer, "d"))
        cluster.delay_links(1, delay_ms=DELAY_MS, to_zookeeper=False, to_clients=True)
        clients_delayed = statistics.median(produce_latencies_ms(producer, "d"))
        cluster.heal_network()
        producer.flush(TIMEOUT)
        print(f"acks=all median ms: before {before:.0f}, follower's peer links +{DELAY_MS:g} ms "
              f"{peers_delayed:.0f}, healed {healed:.0f}, leader's client links {clients_delayed:.0f}")
        assert before < DELAY_MS and healed < DELAY_MS
        assert peers_delayed >= 2 * DELAY_MS * 0.9, "the follower's fetch round trip gates acks=all"
        assert clients_delayed >= 2 * DELAY_MS * 0.9, "the request and its response are each delayed"
        assert chain in our_chains()
    assert chain not in our_chains(), "destroy removes the nat chain with the others"


def test_a_killed_runs_nat_chain_is_removed_with_the_other_stale_chains() -> None:
    """What a SIGKILLed run of a proxied cluster leaves: its nat chain, hooked at OUTPUT; no
    ZooKeeper listens on the port it is named after (no cluster needed, < 1 s)."""
    import subprocess

    from kafka_chaos.harness.local.network import remove_stale_chains
    from kafka_chaos.harness.nodes import free_ports

    [unused] = free_ports(1)
    stale = f"KCHAOS-{unused}"
    subprocess.run(["iptables", "-w", "-t", "nat", "-N", stale], check=True)
    subprocess.run(["iptables", "-w", "-t", "nat", "-I", "OUTPUT", "1", "-j", stale], check=True)
    assert stale in our_chains()
    assert stale in remove_stale_chains()
    listing = subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True, text=True).stdout
    assert stale not in listing, "unhooked and deleted"

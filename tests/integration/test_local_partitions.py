"""Network partitions on the local launcher (root + iptables): a real 2-broker cluster whose
broker 2 is cut from ZooKeeper and healed, and the loopback firewall's clean-up (a stale chain
of a killed run removed at start, ours removed at destroy).

The four partition scenarios of the catalogue run on this launcher in the conformance suite
(``bash scripts/main.sh``); this test checks the mechanism on its own, in ~30 s. A matrix cell,
``nightly`` (docs/nightly.md): the test command cuts a broker from ZooKeeper on the containers
launcher (tests/containers/test_partitions.py, iptables in the broker's namespace) and on this
launcher through its link proxies (tests/integration/test_link_proxies.py), and this launcher's
iptables chains on loopback cut peers (tests/integration/test_local_cluster.py) and are removed
when stale or at destroy (tests/integration/test_delayed_peer_links.py).
"""

from __future__ import annotations

import subprocess
import time

import pytest

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.local.network import our_chains, partition_problem
from kafka_chaos.harness.nodes import free_ports
from kafka_chaos.harness.zkclient import close_bounded, connect

pytestmark = [pytest.mark.nightly,
              pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))]

TIMEOUT = 60.0  # a bound for a busy shared machine, never a speed assertion


def registered(zk_connect: str) -> set[int]:
    client = connect(zk_connect, session_timeout=10, connect_timeout=10, command_deadline=10)
    try:
        return {int(b) for b in client.get_children("/brokers/ids")}
    finally:
        close_bounded(client, zk_connect, timeout=5)


def test_a_broker_cut_from_zookeeper_loses_its_session_and_healed_registers_again() -> None:
    [unused] = free_ports(1)
    stale = f"KCHAOS-{unused}"  # what a SIGKILLed run leaves: no ZooKeeper listens on its port
    for table in ("mangle", "filter"):
        subprocess.run(["iptables", "-w", "-t", table, "-N", stale], check=True)
    cluster = LocalCluster(ClusterConfig(brokers=2), resolve_distribution())
    with cluster:
        chains = our_chains()
        assert stale not in chains, "the stale chain is removed at start"
        ours = f"KCHAOS-{cluster.zookeeper_connect.rsplit(':', 1)[1]}"
        assert ours in chains
        assert registered(cluster.zookeeper_connect) == {1, 2}
        cut_at = time.monotonic()
        cluster.isolate(2, from_zookeeper=True, from_brokers=False)
        wait_until(lambda: registered(cluster.zookeeper_connect) == {1}, timeout=TIMEOUT, interval=0.2,
                   description="broker 2's session to expire while it is cut from ZooKeeper")
        expired_after = time.monotonic() - cut_at
        assert expired_after >= 0.5 * cluster.session_timeout_s(), "expired by the cut, not before it"
        assert cluster.broker_running(2), "a cut broker keeps running"
        cluster.heal_network()
        wait_until(lambda: registered(cluster.zookeeper_connect) == {1, 2}, timeout=TIMEOUT, interval=0.2,
                   description="broker 2 to register again once healed")
    assert ours not in our_chains(), "destroy removes the firewall"

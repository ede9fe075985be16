"""Cuts between KRaft nodes on the local launcher (root + iptables): a real 3.9.2 cluster of 3
controllers and 3 brokers whose quorum leader is cut from the two other voters with ``cut_links``.

What the controllers' metadata logs show: the two others elect a leader of a later epoch (their
logs carry its LEADER_CHANGE; the cut one's does not, it still ends in its own epoch), while the
harness still reaches the cut controller. The cut one, having resigned (check-quorum, 3.7.0+:
KAFKA-15489), stands as a candidate in epochs past the new leader's (its ``quorum-state`` file:
its Vote requests are dropped); once healed, its higher epoch forces another election (no pre-vote
before 4.0, KIP-996) that it cannot win with its shorter log, and its own log shows the quorum's
current leader and epoch -- it fetched from that leader: it follows again. Every node runs with
the group id of its port (the loopback firewall's marks), and destroy removes the chains.

A matrix cell, ``nightly`` (docs/nightly.md): about 40 s, and the test command is near its budget.
"""

from __future__ import annotations

import logging

import psutil
import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.kraft import LocalKraftCluster
from kafka_chaos.harness.local.network import node_mark, our_chains, partition_problem
from tests.integration.kraft_cut_proof import describe, prove_leader_cut

pytestmark = [pytest.mark.nightly,
              pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))]

log = logging.getLogger(__name__)

RELEASE = "3.9.2"
CONFIG = ClusterConfig(brokers=3, mode="kraft", controllers=3)


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_a_quorum_leader_cut_from_the_other_voters_is_replaced_and_follows_once_healed() -> None:
    with LocalKraftCluster(CONFIG, resolve_distribution(RELEASE)) as cluster:
        voters = cluster.controller_ids
        chain = f"KCHAOS-{port_of(cluster.controller_address(voters[0]))}"
        assert chain in our_chains(), "the firewall is installed with the cluster"
        for c in voters:  # every node, controllers and brokers, runs with its port's group
            pid = cluster.controller_pid(c)
            assert pid is not None and psutil.Process(pid).gids().real == node_mark(port_of(cluster.controller_address(c)))
        for b in cluster.broker_ids:
            endpoint = cluster.endpoint(b)
            assert endpoint.pid is not None and psutil.Process(endpoint.pid).gids().real == node_mark(endpoint.port)
        own_dirs = dict(zip(voters, cluster.metadata_log_dirs()))

        with cluster.observer(topics=[]) as quorum:
            proof = prove_leader_cut(cluster, quorum, own_dirs)
        assert all(cluster.controller_running(c) for c in voters)
        log.info("%s", describe(proof))
    assert chain not in our_chains(), "destroy removes the firewall"

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

import json
import logging
import socket
from pathlib import Path

import psutil
import pytest

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.kraft.observer import KraftObserver
from kafka_chaos.harness.local.kraft import LocalKraftCluster
from kafka_chaos.harness.local.network import node_mark, our_chains, partition_problem
from kafka_chaos.harness.zksnapshot import ZkSnapshot

pytestmark = [pytest.mark.nightly,
              pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))]

log = logging.getLogger(__name__)

RELEASE = "3.9.2"
CONFIG = ClusterConfig(brokers=3, mode="kraft", controllers=3)
TIMEOUT = 60.0  # a bound for a busy shared machine, never a speed assertion


def own_view(metadata_dir: Path) -> ZkSnapshot:
    """What one controller's own metadata log says: the last leader it holds a LEADER_CHANGE of."""
    with KraftObserver([metadata_dir], topics=[]) as observer:
        return observer.snapshot()


def quorum_state_epoch(metadata_dir: Path) -> int:
    """The epoch a voter stands in now, from its ``quorum-state`` file (``FileQuorumStateStore``:
    ``leaderEpoch``), which it rewrites at every epoch it enters -- as a candidate too."""
    state = json.loads((metadata_dir / "__cluster_metadata-0" / "quorum-state").read_text())
    return int(state["leaderEpoch"])


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
            before = quorum.wait_until(lambda s: s.controller is not None, timeout=TIMEOUT,
                                       description="a quorum leader")
            leader, epoch = before.controller, before.controller_epoch
            assert leader is not None and epoch is not None
            others = [c for c in voters if c != leader]

            cluster.cut_links(leader, others)
            elected = quorum.wait_until(
                lambda s: s.controller in others and (s.controller_epoch or -1) > epoch, timeout=TIMEOUT,
                description=f"voters {others} to elect a leader of an epoch above {epoch} without {leader}")
            for other in others:
                theirs = own_view(own_dirs[other])
                assert (theirs.controller_epoch or -1) >= (elected.controller_epoch or -1), (other, theirs)
            mine = own_view(own_dirs[leader])
            assert mine.controller_epoch == epoch, f"the cut voter's log took no later epoch: {mine.controller_epoch}"
            # the harness keeps its links to the cut node (connections no node opened are never cut)
            with socket.create_connection(("127.0.0.1", port_of(cluster.controller_address(leader))), timeout=5):
                pass
            new_epoch = elected.controller_epoch or -1
            standing = wait_until(lambda: quorum_state_epoch(own_dirs[leader]), timeout=TIMEOUT, interval=0.5,
                                  retry_on=(OSError, ValueError, KeyError), accept=lambda e: e > new_epoch,
                                  description=f"the cut voter {leader} to stand in an epoch past {new_epoch}")
            assert own_view(own_dirs[leader]).controller_epoch == epoch, "still no later epoch in its log"

            cluster.heal_network()

            def follows() -> tuple[int | None, int | None, int | None, int | None]:
                mine, now = own_view(own_dirs[leader]), quorum.snapshot()
                return mine.controller, mine.controller_epoch, now.controller, now.controller_epoch

            def caught_up(view: tuple[int | None, int | None, int | None, int | None]) -> bool:
                own_leader, own_epoch, quorum_leader, quorum_epoch = view
                return (quorum_leader is not None and (own_leader, own_epoch) == (quorum_leader, quorum_epoch)
                        and (quorum_epoch or -1) > standing)

            healed = wait_until(follows, timeout=TIMEOUT, interval=0.5, accept=caught_up,
                                description=f"voter {leader}'s own log to show the quorum's leader and epoch")
        assert all(cluster.controller_running(c) for c in voters)
        log.info("leader %d (epoch %d) cut from %s: %s elected at epoch %s, %d standing in epoch %d; healed, "
                 "%d follows %s at epoch %s", leader, epoch, others, elected.controller, elected.controller_epoch,
                 leader, standing, leader, healed[2], healed[3])
    assert chain not in our_chains(), "destroy removes the firewall"

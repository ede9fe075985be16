"""Cuts between KRaft nodes on the containers launcher (root, iptables, nsenter): the proof of
tests/integration/test_kraft_links.py on a 3.9.2 cluster of 3 controllers and 3 brokers in
containers -- the quorum leader cut from the two other voters by DROP rules in its own namespace;
the two others elect a leader of a later epoch (their metadata logs, read from the host, carry
it; the cut one's does not) while the harness still reaches the cut controller's published
CONTROLLER listener; the cut one stands as a candidate in later epochs; healed, its own log shows
the quorum's leader and epoch: it follows again. Nothing is left afterwards."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

from tests.containers.conftest import assert_nothing_left

log = logging.getLogger(__name__)

TIMEOUT = 60.0  # a bound for a busy shared machine, never a speed assertion


def _own_view(metadata_dir: Path):  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.kraft.observer import KraftObserver

    with KraftObserver([metadata_dir], topics=[]) as observer:
        return observer.snapshot()


def _quorum_state_epoch(metadata_dir: Path) -> int:
    return int(json.loads((metadata_dir / "__cluster_metadata-0" / "quorum-state").read_text())["leaderEpoch"])


# The KRaft × containers cell of the quorum-link matrix: the local launcher's proof is nightly too.
@pytest.mark.nightly
def test_a_quorum_leader_cut_in_its_namespace_is_replaced_and_follows_once_healed(  # type: ignore[no-untyped-def]
        kafka_image: str, kafka_distribution) -> None:
    from kafka_chaos.common.waits import wait_until
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.containers.network import partition_tools_problem

    problem = partition_tools_problem()
    if problem is not None:
        pytest.skip(problem)
    cluster = ContainerKraftCluster(ClusterConfig(brokers=3, mode="kraft", controllers=3), kafka_distribution)
    with cluster:
        voters = cluster.controller_ids
        own_dirs = dict(zip(voters, cluster.metadata_log_dirs()))
        with cluster.observer(topics=[]) as quorum:
            before = quorum.wait_until(lambda s: s.controller is not None, timeout=TIMEOUT, description="a quorum leader")
            leader, epoch = before.controller, before.controller_epoch
            assert leader is not None and epoch is not None
            others = [c for c in voters if c != leader]

            cluster.cut_links(leader, others)
            elected = quorum.wait_until(
                lambda s: s.controller in others and (s.controller_epoch or -1) > epoch, timeout=TIMEOUT,
                description=f"voters {others} to elect a leader of an epoch above {epoch} without {leader}")
            assert _own_view(own_dirs[leader]).controller_epoch == epoch, "the cut voter's log took no later epoch"
            host, port = cluster.controller_address(leader).rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=5):  # the harness keeps its link
                pass
            new_epoch = elected.controller_epoch or -1
            standing = wait_until(lambda: _quorum_state_epoch(own_dirs[leader]), timeout=TIMEOUT, interval=0.5,
                                  retry_on=(OSError, ValueError, KeyError), accept=lambda e: e > new_epoch,
                                  description=f"the cut voter {leader} to stand in an epoch past {new_epoch}")

            cluster.heal_network()

            def follows() -> tuple[int | None, int | None, int | None, int | None]:
                mine, now = _own_view(own_dirs[leader]), quorum.snapshot()
                return mine.controller, mine.controller_epoch, now.controller, now.controller_epoch

            def caught_up(view: tuple[int | None, int | None, int | None, int | None]) -> bool:
                own_leader, own_epoch, quorum_leader, quorum_epoch = view
                return (quorum_leader is not None and (own_leader, own_epoch) == (quorum_leader, quorum_epoch)
                        and (quorum_epoch or -1) > standing)

            healed = wait_until(follows, timeout=TIMEOUT, interval=0.5, accept=caught_up,
                                description=f"voter {leader}'s own log to show the quorum's leader and epoch")
        log.info("containers: leader %d (epoch %d) cut from %s: %s elected at epoch %s, %d standing in epoch %d; "
                 "healed, %d follows %s at epoch %s", leader, epoch, others, elected.controller,
                 elected.controller_epoch, leader, standing, leader, healed[2], healed[3])
    assert_nothing_left(cluster.run_id)

"""Cuts between KRaft nodes on the containers launcher (root, iptables, nsenter): the proof of
tests/integration/test_kraft_links.py on a 3.9.2 cluster of 3 controllers and 3 brokers in
containers -- the quorum leader cut from the two other voters by DROP rules in its own namespace;
the two others elect a leader of a later epoch (their metadata logs, read from the host, carry
it; the cut one's does not) while the harness still reaches the cut controller's published
CONTROLLER listener; the cut one stands as a candidate in later epochs; healed, its own log shows
the quorum's leader and epoch: it follows again. Nothing is left afterwards."""

from __future__ import annotations

import logging

import pytest

from tests.containers.conftest import assert_nothing_left
from tests.integration.kraft_cut_proof import describe, prove_leader_cut

log = logging.getLogger(__name__)


# The KRaft × containers cell of the quorum-link matrix: the local launcher's proof is nightly too.
@pytest.mark.nightly
def test_a_quorum_leader_cut_in_its_namespace_is_replaced_and_follows_once_healed(  # type: ignore[no-untyped-def]
        kafka_image: str, kafka_distribution) -> None:
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
            proof = prove_leader_cut(cluster, quorum, own_dirs)
        log.info("containers: %s", describe(proof))
    assert_nothing_left(cluster.run_id)

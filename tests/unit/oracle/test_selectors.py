"""``PartitionLeaderElectionAlgorithms``: the cases of Kafka 3.9's
``PartitionLeaderElectionAlgorithmsTest.scala`` plus AR-order cases."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle.selectors import (
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)


@pytest.mark.parametrize(
    "name, assignment, isr, live, unclean, expected",
    [
        # ported from PartitionLeaderElectionAlgorithmsTest.scala
        ("testOfflinePartitionLeaderElection", [2, 4], [2, 4], {4}, False, 4),
        ("testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled", [2, 4], [2], {4}, False, None),
        ("testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled", [2, 4], [2], {4}, True, 4),
        # AR order wins over ISR order
        ("ar_order_not_isr_order", [3, 1, 2], [2, 1, 3], {1, 2, 3}, False, 3),
        ("first_live_isr_member_in_ar_order", [3, 1, 2], [2, 1], {1, 2}, False, 1),
        ("clean_preferred_even_when_unclean_enabled", [1, 2, 3], [3], {2, 3}, True, 3),
        ("unclean_takes_first_live_in_ar_order", [1, 2, 3], [1], {3, 2}, True, 2),
        ("nothing_live", [1, 2], [1], set(), True, None),
    ],
)
def test_offline_partition_leader_election(name, assignment, isr, live, unclean, expected):
    assert offline_partition_leader_election(assignment, isr, live, unclean) == expected


@pytest.mark.parametrize(
    "name, reassignment, isr, live, expected",
    [
        ("testReassignPartitionLeaderElection", [2, 4], [2, 4], {4}, 4),
        ("testReassignPartitionLeaderElectionWithNoLiveIsr", [2, 4], [2], set(), None),
        ("testReassignPartitionLeaderElectionWithEmptyIsr", [2, 4], [], {2}, None),
        ("target_order", [6, 5, 4], [1, 4, 5, 6], {1, 4, 5, 6}, 6),
        ("old_replica_never_chosen", [4, 5], [1], {1, 4, 5}, None),
    ],
)
def test_reassign_partition_leader_election(name, reassignment, isr, live, expected):
    assert reassign_partition_leader_election(reassignment, isr, live) == expected


@pytest.mark.parametrize(
    "name, assignment, isr, live, expected",
    [
        ("testPreferredReplicaPartitionLeaderElection", [2, 4], [2, 4], {2, 4}, 2),
        ("testPreferredReplicaPartitionLeaderElectionPreferredReplicaInIsrNotLive", [2, 4], [2], set(), None),
        ("testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrLive", [2, 4], [4], {2, 4}, None),
        ("testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrNotLive", [2, 4], [], set(), None),
        ("never_falls_back_to_second", [2, 4], [4], {4}, None),
    ],
)
def test_preferred_replica_partition_leader_election(name, assignment, isr, live, expected):
    assert preferred_replica_partition_leader_election(assignment, isr, live) == expected


@pytest.mark.parametrize(
    "name, assignment, isr, live, shutting_down, expected",
    [
        ("testControlledShutdownPartitionLeaderElection", [2, 4], [2, 4], {2, 4}, {2}, 4),
        ("testControlledShutdownPartitionLeaderElectionLastIsrShuttingDown", [2, 4], [2], {2, 4}, {2}, None),
        ("testControlledShutdownPartitionLeaderElectionAllIsrSimultaneouslyShutdown", [2, 4], [2, 4], {2, 4}, {2, 4}, None),
        ("ar_order", [1, 3, 2], [1, 2, 3], {1, 2, 3}, {1}, 3),
        ("dead_isr_member_skipped", [1, 2, 3], [1, 2, 3], {1, 3}, {1}, 3),
    ],
)
def test_controlled_shutdown_partition_leader_election(name, assignment, isr, live, shutting_down, expected):
    assert controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down) == expected

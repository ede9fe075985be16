"""An admin election request the controller never answers: one naming a partition without a state
znode (``processReplicaLeaderElection`` throws on ``partitionLeadershipInfo(tp).get`` before any
election; the oracle's ``request_failed``). The fault then expects no answer instead of aborting
the scenario (found by `kafka-chaos explore --seed 27003`: an unclean election of a topic whose
partition added onto a dead broker had no state)."""

from __future__ import annotations

import pytest

from oracle import ClusterState, PartitionPhase, PartitionState, TopicPartition, TopicState
from scenarios.faults.admin import _unanswerable


def state(phase_of_1: PartitionPhase, deleting: bool = False) -> ClusterState:
    parts = {0: PartitionState(replicas=(1,), leader=1, isr=(1,), leader_epoch=0),
             1: PartitionState(replicas=(2,), leader=-1, isr=(), leader_epoch=-1, phase=phase_of_1)}
    return ClusterState(frozenset({1}), {"t": TopicState(parts)},
                        topics_being_deleted=frozenset({"t"}) if deleting else frozenset())


@pytest.mark.parametrize(("phase", "asked", "deleting", "unanswered"), [
    (PartitionPhase.NEW, (0, 1), False, True),  # a partition without state among those asked
    (PartitionPhase.NEW, (0,), False, False),  # not asked for it
    (PartitionPhase.OFFLINE, (0, 1), False, False),  # leaderless, but with a state znode
    (PartitionPhase.NEW, (0, 1), True, False),  # queued for deletion: answered INVALID_TOPIC first
])
def test_a_request_naming_a_partition_without_state_gets_no_answer(phase, asked, deleting, unanswered) -> None:
    partitions = tuple(TopicPartition("t", p) for p in asked)
    assert _unanswerable(state(phase, deleting), partitions) is unanswered

"""Admin requests Kafka does not answer in time, which a fault then expects instead of aborting
the scenario (both found by `kafka-chaos explore --seed 27003`): an election request naming a
partition without a state znode (``processReplicaLeaderElection`` throws on
``partitionLeadershipInfo(tp).get`` before any election: the oracle's ``request_failed``), and
partitions added while an old partition of the topic is leaderless."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import ClusterState, PartitionPhase, PartitionState, TopicPartition, TopicState
from kafka_chaos.scenarios.faults.admin import _unanswerable


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


@pytest.mark.parametrize(("leader_of_0", "live", "unanswered"), [
    (1, {1, 2}, False),  # every old partition led: Kafka answers once the new one has a leader
    (-1, {2}, True),  # an old partition leaderless: DelayedCreatePartitions waits for it too
    (1, {2}, True),  # its leader znode names a dead broker
])
def test_partitions_added_while_an_old_one_is_leaderless_get_no_answer(leader_of_0, live, unanswered) -> None:
    """ZkAdminManager.createPartitions waits for a leader in every partition of the topic, old
    ones included (found by `kafka-chaos explore --seed 27003`)."""
    from kafka_chaos.scenarios.faults.topics import AddPartitionsFault
    from kafka_chaos.scenarios.model.targets import Target

    parts = {0: PartitionState(replicas=(1,), leader=leader_of_0, isr=(1,), leader_epoch=1)}
    before = ClusterState(frozenset(live), {"d": TopicState(parts)})
    fault = AddPartitionsFault(Target((), "d-1 -> [2]"), "d", ((1, (2,)),), "admin")
    fault.prepare(None, before)  # type: ignore[arg-type] - reads only the state
    assert fault._leaderless_before is unanswered

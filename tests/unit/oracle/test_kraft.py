"""The KRaft controller model (``kafka_chaos.oracle.kraft``): a table per rule, each row naming the
Kafka 3.9 source it comes from (apache/kafka branch 3.9, c821449fb7c1; ``metadata/src/main/java/
org/apache/kafka/controller/`` unless said otherwise), and Hypothesis properties over random KRaft
states and events."""

from __future__ import annotations

import dataclasses
import os
from itertools import permutations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_chaos.oracle import (
    AddPartitions,
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ClusterState,
    ControlledShutdown,
    ControllerFailover,
    CreateTopic,
    DeleteTopic,
    LogDirFailure,
    Mode,
    Outcome,
    PartitionState,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    TopicPartition,
    TopicState,
    UncleanElection,
    apply_event,
    predict,
    settled,
)
from kafka_chaos.oracle.jsonio import OracleInputError, parse_request, render_prediction, render_state
from kafka_chaos.oracle.kraft import builder
from kafka_chaos.oracle.kraft.interleavings import _event_plans
from kafka_chaos.oracle.state import NO_LEADER, RECOVERED, RECOVERING, PartitionPhase

UNCLEAN = "unclean.leader.election.enable"
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
CONTROLLER = 3000  # a process.roles=controller node


def kp(replicas, leader, isr, le=0, pe=0, *, recovery=RECOVERED, adding=(), removing=()) -> PartitionState:
    return PartitionState(tuple(replicas), leader, tuple(isr), le, recovery, adding_replicas=tuple(adding),
                          removing_replicas=tuple(removing), partition_epoch=pe)


def kraft(active, parts, *, topic_config=None, config=None, offline=None) -> ClusterState:
    return ClusterState(
        live_brokers=frozenset(active),
        topics={"t": TopicState(dict(parts), topic_config or {})},
        controller=CONTROLLER,
        config={"auto.leader.rebalance.enable": "true", **(config or {})},
        offline_replicas=offline or {},
        mode=Mode.KRAFT,
    )


def regs(state: ClusterState) -> dict[int, tuple]:
    """partition -> (replicas, leader, ISR, leader epoch, partition epoch, recovery)"""
    return {tp.partition: (p.replicas, p.leader, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state)
            for tp, p in state.partitions() if tp.topic == "t"}


def acceptable_of(*brokers: int):
    return lambda r: r in brokers


# --- PartitionChangeBuilder / PartitionRegistration.merge ---------------------------------------

BUILDER_ROWS = [
    # (partition, acceptable, targets, expected (leader, isr, leader epoch, partition epoch, recovery) or None)
    # electAnyLeader lines 268-279: the current leader still valid -> no leader change; the ISR
    # shrink is written (lines 461-469) without a leader-epoch bump at MV 3.9-IV0 (lines 396-409)
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), (1, 3), dict(target_isr=(1, 3)), (1, (1, 3), 4, 11, RECOVERED)),
    # ... below 3.6-IV0 the shrink writes the same leader: leader epoch +1 (lines 410-422, KAFKA-15021)
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), (1, 3), dict(target_isr=(1, 3), bump_leader_epoch_on_isr_shrink=True),
     (1, (1, 3), 5, 11, RECOVERED)),
    # electAnyLeader lines 274-279: the first valid replica in assignment order, not ISR order
    (kp((3, 2, 1), 1, (1, 2, 3), 4, 10), (2, 3), dict(target_isr=(2, 3)), (3, (2, 3), 5, 11, RECOVERED)),
    # build lines 461-463: an empty target ISR is never written (ELR off): leader -1, ISR [1] kept
    (kp((1, 2), 1, (1,), 4, 10), (2,), dict(target_isr=()), (NO_LEADER, (1,), 5, 11, RECOVERED)),
    # electAnyLeader lines 285-292 + tryElection 356-366: unclean -> ISR [leader], RECOVERING
    (kp((1, 2), 1, (1,), 4, 10), (2,), dict(target_isr=(), election=builder.Election.UNCLEAN),
     (2, (2,), 5, 11, RECOVERING)),
    # tryElection lines 361-362: RECOVERING only where the metadata version supports it (3.2-IV0)
    (kp((1, 2), 1, (1,), 4, 10), (2,), dict(target_isr=(), election=builder.Election.UNCLEAN,
                                           leader_recovery_supported=False), (2, (2,), 5, 11, RECOVERED)),
    # changeRecordIsNoOp lines 54-64: nothing to change -> no record
    (kp((1, 2), 1, (1, 2), 4, 10), (1, 2), dict(), None),
    # leaderless, ISR [3], nobody acceptable: no record (electAnyLeader returns NO_LEADER == leader)
    (kp((1, 2, 3), NO_LEADER, (3,), 4, 10), (1, 2), dict(), None),
    # electPreferredLeader lines 239-243: the first replica when valid
    (kp((1, 2, 3), 2, (2, 3, 1), 4, 10), (1, 2, 3), dict(election=builder.Election.PREFERRED),
     (1, (2, 3, 1), 5, 11, RECOVERED)),
    # electPreferredLeader lines 245-248: else the current leader stays -> no record
    (kp((1, 2, 3), 2, (2, 3), 4, 10), (2, 3), dict(election=builder.Election.PREFERRED), None),
    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded lines 378-388: a shrunk replica set
    # writes the same leader (leader epoch +1), though the ISR shrink alone would not (MV 3.9-IV0)
    (kp((3, 1, 2), 1, (1, 2, 3), 4, 10), (1, 2, 3), dict(target_replicas=(1, 2), target_isr=(1, 2)),
     (1, (1, 2), 5, 11, RECOVERED)),
    # AlterPartition: leader's ISR expansion with RECOVERED clears RECOVERING (lines 477-479)
    (kp((1, 2), 1, (1,), 4, 10, recovery=RECOVERING), (1, 2),
     dict(target_isr=(1, 2), target_leader_recovery_state=RECOVERED), (1, (1, 2), 4, 11, RECOVERED)),
]


@pytest.mark.parametrize("p, acceptable, targets, expected", BUILDER_ROWS)
def test_partition_change_builder(p, acceptable, targets, expected) -> None:
    result = builder.change(p, acceptable_of(*acceptable), **targets)
    if expected is None:
        assert result is None
        return
    assert result is not None
    q, _ = result
    assert (q.leader, q.isr, q.leader_epoch, q.partition_epoch, q.leader_recovery_state) == expected


def test_completing_a_reassignment_in_the_builder() -> None:
    # completeReassignmentIfNeeded lines 425-444 / PartitionReassignmentReplicas.maybeCompleteReassignment
    # lines 97-126: the ISR holding every target replica completes it; a removed leader is replaced
    # by the first target replica in the ISR (electAnyLeader), leader epoch +1
    p = kp((4, 5, 1, 2, 3), 1, (1, 2, 3, 4), 4, 12, adding=(4, 5), removing=(1, 2, 3))
    q, _ = builder.change(p, acceptable_of(1, 2, 3, 4, 5), target_isr=(1, 2, 3, 4, 5),
                          target_leader_recovery_state=RECOVERED)
    assert (q.replicas, q.leader, q.isr, q.leader_epoch, q.partition_epoch) == ((4, 5), 4, (4, 5), 5, 13)
    assert (q.adding_replicas, q.removing_replicas) == ((), ())


def test_merge_bumps_the_partition_epoch_for_every_record_and_keeps_none() -> None:
    # PartitionRegistration.merge (metadata/.../PartitionRegistration.java lines 241-280)
    p = kp((1, 2), 1, (1, 2), 4, 7)
    assert builder.merge(p, builder.ChangeRecord(isr=(1,))).partition_epoch == 8
    assert builder.merge(p, builder.ChangeRecord(leader=1)).leader_epoch == 5  # the same leader still bumps
    unknown = dataclasses.replace(p, partition_epoch=None)
    assert builder.merge(unknown, builder.ChangeRecord(isr=(1,))).partition_epoch is None


# --- the handlers, through predict() ------------------------------------------------------------

THREE = {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10), 1: kp((2, 3, 1), 2, (2, 3, 1), 0, 0)}

HANDLER_ROWS = [
    # (state, event, expected regs {partition: (replicas, leader, isr, le, pe, recovery)}) of the main alternative
    # handleBrokerFenced lines 1288-1305 -> generateLeaderAndIsrUpdates lines 1891-1958: the leader's
    # partition elects 2 (leader epoch +1); a follower leaves the ISR (partition epoch only)
    (kraft({1, 2, 3}, THREE), BrokerFailure((1,)),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 0, 1, 0)}),
    # a fence of a broker in no ISR changes nothing (partitionsWithBrokerInIsr, BrokersToIsrs.java 286-288)
    (kraft({1, 2, 3, 4}, THREE), BrokerFailure((4,)),
     {0: ((1, 2, 3), 1, (1, 2, 3), 4, 10, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # the last ISR member fenced: leader -1, ISR stays [it] (PartitionChangeBuilder.build lines 461-463)
    (kraft({1, 2}, {0: kp((1, 2), 1, (1,), 3, 5)}), BrokerFailure((1,)), {0: ((1, 2), -1, (1,), 4, 6, 0)}),
    # ... unless the topic allows unclean election (generateLeaderAndIsrUpdates lines 1940-1942):
    # 2 leads with ISR [2], RECOVERING (tryElection 356-366)
    (kraft({1, 2}, {0: kp((1, 2), 1, (1,), 3, 5)}, topic_config={UNCLEAN: "true"}), BrokerFailure((1,)),
     {0: ((1, 2), 2, (2,), 4, 6, 1)}),
    # ... Boolean.parseBoolean does not trim (ConfigurationControlManager.java 511-518): " true" is off
    (kraft({1, 2}, {0: kp((1, 2), 1, (1,), 3, 5)}, topic_config={UNCLEAN: " true"}), BrokerFailure((1,)),
     {0: ((1, 2), -1, (1,), 4, 6, 0)}),
    # handleBrokerInControlledShutdown lines 1364-1374: the same removal as a fence
    (kraft({1, 2, 3}, THREE), ControlledShutdown(1),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 0, 1, 0)}),
    # an RF=1 partition led by the shutting-down broker goes leaderless, ISR [it]
    (kraft({1, 2}, {0: kp((1,), 1, (1,), 2, 2)}), ControlledShutdown(1), {0: ((1,), -1, (1,), 3, 3, 0)}),
    # handleBrokerUnfenced lines 1339-1351: a leaderless partition whose ISR holds it elects it; the
    # other active replicas rejoin through AlterPartition (alterPartition lines 1008-1120): +1 each
    (kraft({1, 2}, {0: kp((1, 2, 3), NO_LEADER, (3,), 4, 10)}), BrokerStartup((3,)),
     {0: ((1, 2, 3), 3, (3, 1, 2), 5, 13, 0)}),
    # a broker cut from the controllers (fault broker_controller_cut) is fenced as a killed one is (the
    # first row); healed, its first heartbeat (wantFence false, a metadata offset past its registration
    # record) is granted UNFENCED at once (BrokerHeartbeatManager.calculateNextBrokerState, 3.9.2 lines
    # 542-563) -> handleBrokerUnfenced: it takes no leadership back and rejoins both ISRs, +1 each
    (kraft({2, 3}, {0: kp((1, 2, 3), 2, (2, 3), 5, 11), 1: kp((2, 3, 1), 2, (2, 3), 0, 1)}), BrokerStartup((1,)),
     {0: ((1, 2, 3), 2, (2, 3, 1), 5, 12, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 2, 0)}),
    # ... a returning broker outside the ISR of a leaderless partition elects nobody
    (kraft({2}, {0: kp((1, 2, 3), NO_LEADER, (3,), 4, 10)}), BrokerStartup((1,)),
     {0: ((1, 2, 3), -1, (3,), 4, 10, 0)}),
    # ... and nothing else: leadership is not given back (that is the rebalance's)
    (kraft({2, 3}, {0: kp((1, 2, 3), 2, (2, 3), 5, 11)}), BrokerStartup((1,)),
     {0: ((1, 2, 3), 2, (2, 3, 1), 5, 12, 0)}),
    # maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader lines 1638-1671: every imbalanced
    # partition whose first replica is valid, no per-broker percentage
    (kraft({1, 2, 3}, {0: kp((1, 2, 3), 2, (2, 3, 1), 5, 12), 1: kp((2, 3, 1), 2, (2, 3, 1))}), AutoRebalance(),
     {0: ((1, 2, 3), 1, (2, 3, 1), 6, 13, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # ... never scheduled with auto.leader.rebalance.enable=false (ControllerServer.scala 232-236)
    (kraft({1, 2, 3}, {0: kp((1, 2, 3), 2, (2, 3, 1), 5, 12)}, config={"auto.leader.rebalance.enable": "false"}),
     AutoRebalance(), {0: ((1, 2, 3), 2, (2, 3, 1), 5, 12, 0)}),
    # changePartitionReassignment lines 2100-2130: a reorder completes at once, leader kept, no bump
    (kraft({1, 2, 3}, THREE), Reassign("t", 0, (3, 2, 1)),
     {0: ((3, 2, 1), 1, (1, 2, 3), 4, 11, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # ... [1,2,3] -> [4,5,1]: record 1 (replicas, adding, removing: pe 11), 4 joins (12), 5 joins and
    # completes (13): replicas [4,5,1], ISR [1,4,5], leader 1 kept, shrunk set -> leader epoch +1
    (kraft({1, 2, 3, 4, 5}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10)}), Reassign("t", 0, (4, 5, 1)),
     {0: ((4, 5, 1), 1, (1, 4, 5), 5, 13, 0)}),
    # ... the leader removed: [1,2] -> [3,2]: record 1 (pe 11), 3 joins and completes (pe 12): ISR
    # [2,3], the removed leader 1 replaced by the first target replica in the ISR, 3 (leader epoch +1)
    (kraft({1, 2, 3}, {0: kp((1, 2), 1, (1, 2), 4, 10)}), Reassign("t", 0, (3, 2)),
     {0: ((3, 2), 3, (2, 3), 5, 12, 0)}),
    # ... a target replica down: in progress, removing ascending (TreeSet), leader epoch unchanged
    (kraft({1, 2, 3, 4}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10)}), Reassign("t", 0, (4, 5, 1)),
     {0: ((4, 5, 1, 2, 3), 1, (1, 2, 3, 4), 4, 12, 0)}),
    # electLeader lines 1485-1533 (admin PREFERRED)
    (kraft({1, 2, 3}, {0: kp((1, 2, 3), 2, (2, 3, 1), 5, 12)}), PreferredElection((T0,)),
     {0: ((1, 2, 3), 1, (2, 3, 1), 6, 13, 0)}),
    # admin UNCLEAN: no ISR member active -> first active replica, ISR [it], RECOVERING, then 2 rejoins
    # (the leader's AlterPartition carries RECOVERED)
    (kraft({1, 2}, {0: kp((1, 2, 3), NO_LEADER, (3,), 4, 10)}), UncleanElection((T0,)),
     {0: ((1, 2, 3), 1, (1, 2), 5, 12, 0)}),
    # LogDirFailure: handleDirectoriesOffline lines 1402-1427: the partitions on the failed dir only
    (kraft({1, 2, 3}, THREE), LogDirFailure(1, (T0,)),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # ControllerFailover: ClusterControlManager.activate lines 322-327 -- nothing changes
    (kraft({1, 2, 3}, THREE), ControllerFailover(3001),
     {0: ((1, 2, 3), 1, (1, 2, 3), 4, 10, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # TopicConfigChange enabling unclean: nothing at the change (incrementalAlterConfigs only writes
    # ConfigRecords, QuorumController.java 2140-2157)
    (kraft({1, 2}, {0: kp((1, 2, 3), NO_LEADER, (3,), 4, 10)}), TopicConfigChange("t", {UNCLEAN: "true"}),
     {0: ((1, 2, 3), -1, (3,), 4, 10, 0)}),
]


@pytest.mark.parametrize("state, event, expected", HANDLER_ROWS)
def test_handler_rows(state, event, expected) -> None:
    assert regs(predict(state, [event]).state) == expected


def test_a_broker_cut_from_the_controllers_then_healed_is_a_fence_then_an_unfence() -> None:
    """The whole ``broker_controller_cut`` episode, one step each: the session expiry fences it
    (maybeFenceOneStaleBroker, 3.9.2 lines 1633-1646), the heal unfences it; the partition it alone
    was in sync for is leaderless meanwhile and led by it again (handleBrokerUnfenced, 3.9.2 lines
    1370-1382: partitionsWithNoLeader with it as brokerToAdd)."""
    state = kraft({1, 2, 3}, {**THREE, 2: kp((1, 2), 1, (1,), 2, 2)})
    cut = predict(state, [BrokerFailure((1,))]).state
    assert regs(cut) == {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 0, 1, 0),
                         2: ((1, 2), -1, (1,), 3, 3, 0)}
    assert cut.live_brokers == {2, 3}
    healed = predict(cut, [BrokerStartup((1,))]).state
    assert regs(healed) == {0: ((1, 2, 3), 2, (2, 3, 1), 5, 12, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 2, 0),
                            2: ((1, 2), 1, (1, 2), 4, 5, 0)}
    assert healed.live_brokers == {1, 2, 3}


# cancelPartitionReassignment (ReplicationControlManager.java 3.9.2 lines 2067-2097) with
# PartitionReassignmentRevert (lines 33-70, the same in 3.6.2): (state, expected regs of t-0, its
# adding and removing replicas after, outcome)
CANCEL_ROWS = [
    # [1,2] -> [3,1] stalled on 3 (fenced): replicas [3,1,2], adding [3], removing [2]. The revert:
    # replicas minus adding [1,2], ISR minus adding [1,2]; the leader stays, the replica set lost 3
    # (same leader written: leader epoch +1), partition epoch +1
    (kraft({1, 2}, {0: kp((3, 1, 2), 1, (1, 2), 4, 11, adding=(3,), removing=(2,))}),
     ((1, 2), 1, (1, 2), 5, 12, 0), Outcome.UNCHANGED),
    # ... [2,1] -> [3,1] reverts to [1,2], not [2,1]: originalReplicas keeps the reassignment's order
    # (target ++ removing, minus adding), so the preferred replica becomes 1; 2 still leads
    (kraft({1, 2}, {0: kp((3, 1, 2), 2, (2, 1), 4, 11, adding=(3,), removing=(2,))}),
     ((1, 2), 2, (2, 1), 5, 12, 0), Outcome.UNCHANGED),
    # [1,2] -> [3,4] with 3 caught up and 4 fenced: 3 leaves the ISR and the replicas
    (kraft({1, 2, 3}, {0: kp((3, 4, 1, 2), 1, (1, 2, 3), 4, 12, adding=(3, 4), removing=(1, 2))}),
     ((1, 2), 1, (1, 2), 5, 13, 0), Outcome.UNCHANGED),
    # ... the leader an adding replica (1 was fenced meanwhile): not in the reverted ISR [2], so the
    # first reverted replica in it and active leads -- 2 (electAnyLeader)
    (kraft({2, 3}, {0: kp((3, 4, 1, 2), 3, (3, 2), 5, 14, adding=(3, 4), removing=(1, 2))}),
     ((1, 2), 2, (2,), 6, 15, 0), Outcome.ELECTED),
    # only adding replicas in sync: the revert would be unclean (ISR = [first replica]); the topic's
    # unclean leader election is off -> INVALID_REPLICA_ASSIGNMENT, nothing written
    (kraft({3}, {0: kp((3, 1), 3, (3,), 2, 6, adding=(3,), removing=(1,))}),
     ((3, 1), 3, (3,), 2, 6, 0), Outcome.REQUEST_FAILED),
    # ... on: the revert is written with ISR [1] and 1 leads -- counted unclean (its ISR was made up),
    # though the builder, seeing 1 in the target ISR, marks no recovery
    (kraft({1, 3}, {0: kp((3, 1), 3, (3,), 2, 6, adding=(3,), removing=(1,))}, topic_config={UNCLEAN: "true"}),
     ((1,), 1, (1,), 3, 7, 0), Outcome.UNCLEAN_ELECTED),
    # ... and with 1 fenced too, no acceptable replica: the revert is written leaderless, ISR [1] --
    # the cancellation takes the partition offline until 1 is back
    (kraft({3}, {0: kp((3, 1), 3, (3,), 2, 6, adding=(3,), removing=(1,))}, topic_config={UNCLEAN: "true"}),
     ((1,), -1, (1,), 3, 7, 0), Outcome.NO_REPLICA_ONLINE),
    # no reassignment in progress: NO_REASSIGNMENT_IN_PROGRESS, nothing written
    (kraft({1, 2, 3}, THREE), ((1, 2, 3), 1, (1, 2, 3), 4, 10, 0), Outcome.REQUEST_FAILED),
]


@pytest.mark.parametrize("state, expected, outcome", CANCEL_ROWS)
def test_cancelling_a_reassignment_reverts_it(state, expected, outcome) -> None:
    prediction = predict(state, [CancelReassignment("t", 0)])
    p = prediction.state.partition(T0)
    assert (p.replicas, p.leader, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == expected
    before = state.partition(T0)
    refused = outcome is Outcome.REQUEST_FAILED  # nothing written: the reassignment goes on
    assert (p.adding_replicas, p.removing_replicas) == (
        (before.adding_replicas, before.removing_replicas) if refused else ((), ()))
    assert [o.outcome for o in prediction.outcomes if o.partition == 0] == [outcome]


def test_a_cancellation_is_a_kraft_event() -> None:
    zookeeper = ClusterState(live_brokers=frozenset({1, 2}), controller=1, topics={"t": TopicState(
        {0: PartitionState((3, 1, 2), 1, (1, 2), 4, adding_replicas=(3,), removing_replicas=(2,))})})
    with pytest.raises(ValueError, match="CancelReassignment is a KRaft event"):
        predict(zookeeper, [CancelReassignment("t", 0)])
    request = {"brokers": [1, 2], "topics": {"t": {"partitions": {"0": {"replicas": [1, 2], "leader": 1, "isr": [1, 2]}}}},
               "events": [{"type": "cancel_reassignment", "topic": "t", "partition": 0}]}
    with pytest.raises(OracleInputError, match="cancel_reassignment is a KRaft event"):
        parse_request(request)
    state, events = parse_request({**request, "mode": "kraft"})
    assert events == [CancelReassignment("t", 0)] and state.mode is Mode.KRAFT


def test_metadata_version_below_3_6_bumps_the_leader_epoch_on_every_isr_shrink() -> None:
    # MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink (server-common MetadataVersion.java 331-333)
    state = kraft({1, 2, 3}, THREE, config={"metadata.version": "3.5-IV2"})
    assert regs(predict(state, [BrokerFailure((1,))]).state)[1] == ((2, 3, 1), 2, (2, 3), 1, 1, 0)


def test_unclean_config_acts_at_the_periodic_check() -> None:
    # maybeElectUncleanLeaders lines 1684-1720, every unclean.leader.election.interval.ms
    state = kraft({1, 2}, {0: kp((1, 2, 3), NO_LEADER, (3,), 4, 10)})
    alternatives = predict(state, [TopicConfigChange("t", {UNCLEAN: "true"})]).alternatives
    assert [a.label for a in alternatives] == ["before the unclean election check", "after the unclean election check"]
    assert regs(alternatives[1].state)[0] == ((1, 2, 3), 1, (1, 2), 5, 12, 0)
    assert [o.outcome for o in alternatives[1].outcomes] == [Outcome.UNCLEAN_ELECTED]


def test_create_topic_and_add_partitions() -> None:
    # createTopic lines 670-714 / buildPartitionRegistration 817-830: ISR = active replicas, leader the
    # first of them, epochs 0; all replicas inactive -> the topic is refused (no NewPartition)
    state = kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))})
    after = predict(state, [CreateTopic("u", {0: (3, 2, 1), 1: (1, 3)})])
    assert after.state.partition("u", 0) == kp((3, 2, 1), 2, (2, 1), 0, 0)
    assert after.state.partition("u", 1) == kp((1, 3), 1, (1,), 0, 0)
    refused = predict(state, [CreateTopic("v", {0: (3, 4)})])
    assert "v" not in refused.state.topics
    assert [o.outcome for o in refused.outcomes] == [Outcome.REQUEST_FAILED]
    # createPartitions lines 1746-1840: the same; another replication factor is refused
    grown = predict(state, [AddPartitions("t", {1: (2, 3)})]).state
    assert grown.partition("t", 1) == kp((2, 3), 2, (2,), 0, 0)
    wrong_rf = predict(state, [AddPartitions("t", {1: (2,)})])
    assert not wrong_rf.state.has_partition(T1)
    assert [o.outcome for o in wrong_rf.outcomes] == [Outcome.REQUEST_FAILED]


def test_delete_topic_is_immediate() -> None:
    # deleteTopic lines 953-969: RemoveTopicRecord whatever the replicas' brokers
    state = kraft({1}, {0: kp((1, 2), 1, (1,), 0, 0)})
    assert "t" not in predict(state, [DeleteTopic("t")]).state.topics
    refused = kraft({1}, {0: kp((1, 2), 1, (1,), 0, 0)}, config={"delete.topic.enable": "false"})
    assert "t" in predict(refused, [DeleteTopic("t")]).state.topics


def test_admin_election_outcomes() -> None:
    state = kraft({1, 2}, {0: kp((1, 2), 1, (1, 2)), 1: kp((3, 2), NO_LEADER, (3,), 2, 2)})
    outcomes = {o.partition: o.outcome for o in predict(state, [PreferredElection((T0, T1))]).outcomes}
    assert outcomes == {0: Outcome.ELECTION_NOT_NEEDED, 1: Outcome.PREFERRED_LEADER_NOT_AVAILABLE}
    outcomes = {o.partition: o.outcome for o in predict(state, [UncleanElection((T0, T1))]).outcomes}
    assert outcomes == {0: Outcome.ELECTION_NOT_NEEDED, 1: Outcome.UNCLEAN_ELECTED}


def test_a_failed_log_directory_keeps_its_replicas_from_leading() -> None:
    state = kraft({1, 2, 3}, THREE)
    after = predict(state, [LogDirFailure(1, (T0,)), BrokerFailure((2, 3)), BrokerStartup((2, 3))])
    # LeaderAcceptor (lines 2343-2365): 1 cannot lead t-0 again, nor rejoin its ISR
    for alternative in after.alternatives:
        assert 1 not in alternative.state.partition(T0).isr
    assert after.state.offline_replicas == {1: frozenset({T0})}


# --- interleavings ------------------------------------------------------------------------------

def test_every_order_of_fences_is_a_plan() -> None:
    # maybeFenceOneStaleBroker lines 1602-1614: one broker per controller event, oldest contact first
    state = kraft({1, 2, 3}, THREE)
    labels = [plan.label for plan in _event_plans(state, BrokerFailure((1, 2, 3)))]
    for order in permutations((1, 2, 3)):
        assert "fenced " + " then ".join(map(str, order)) in labels


def test_fence_orders_leave_different_states() -> None:
    state = kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10)})
    alternatives = predict(state, [BrokerFailure((1, 2))]).alternatives
    assert {a.label: regs(a.state)[0] for a in alternatives} == {
        "fenced 1 then 2": ((1, 2, 3), 3, (3,), 6, 12, 0),
        "fenced 2 then 1": ((1, 2, 3), 3, (3,), 5, 12, 0),
    }
    # the broker fenced last is the one the ISR keeps
    everyone = predict(state, [BrokerFailure((1, 2, 3))]).alternatives
    assert {a.state.partition(T0).isr for a in everyone} == {(1,), (2,), (3,)}


def test_zookeeper_mode_refuses_kraft_only_things() -> None:
    zk = ClusterState(frozenset({1}), {"t": TopicState({0: PartitionState((1,), 1, (1,), 0)})}, controller=1)
    with pytest.raises(ValueError, match="KRaft event"):
        predict(zk, [ControllerFailover(2)])
    with pytest.raises(ValueError, match="partition_epoch"):
        ClusterState(frozenset({1}), {"t": TopicState({0: kp((1,), 1, (1,))})})
    # a KRaft controller is a controller node: no need to be a live broker
    assert kraft({1}, {0: kp((1,), 1, (1,))}).controller == CONTROLLER
    with pytest.raises(ValueError, match="NewPartition"):
        kraft({1}, {0: PartitionState((1,), NO_LEADER, (), 0, phase=PartitionPhase.NEW, partition_epoch=0)})


def test_predict_mode_argument_switches_the_model() -> None:
    zk = ClusterState(frozenset({1, 2}), {"t": TopicState({0: PartitionState((1, 2), 1, (1, 2), 4)})})
    as_kraft = predict(zk, [BrokerFailure((2,))], mode="kraft")
    assert as_kraft.state.mode is Mode.KRAFT
    assert as_kraft.state.partition(T0).leader_epoch == 4  # ZooKeeper mode writes 5 (OfflineReplica)
    assert predict(zk, [BrokerFailure((2,))]).state.partition(T0).leader_epoch == 5


def test_settled_bumps_the_partition_epoch_per_rejoining_follower() -> None:
    state = kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1,), 4, 10)})
    assert regs(settled(state))[0] == ((1, 2, 3), 1, (1, 2, 3), 4, 12, 0)


# --- the predict JSON contract ------------------------------------------------------------------

def test_json_kraft_request_round_trips() -> None:
    request = {
        "mode": "kraft",
        "brokers": [1, 2, 3],
        "controller": 3000,
        "topics": {"t": {"partitions": {"0": {"replicas": [1, 2, 3], "leader": 1, "isr": [1, 2, 3],
                                              "leader_epoch": 4, "partition_epoch": 10}}}},
        "events": [{"type": "broker_failure", "brokers": [1]}, {"type": "controller_failover", "controller": 3001},
                   {"type": "controller_failover"}],
    }
    state, events = parse_request(request)
    assert state.mode is Mode.KRAFT and events[1] == ControllerFailover(3001) and events[2] == ControllerFailover()
    answer = render_prediction(predict(state, events))
    assert answer["mode"] == "kraft" and answer["controller"] is None
    assert answer["topics"]["t"]["partitions"]["0"]["partition_epoch"] == 11
    fed_back, _ = parse_request({k: v for k, v in answer.items() if k != "alternatives"})
    assert render_state(fed_back) == render_state(predict(state, events).state)


def test_json_zookeeper_answers_keep_their_shape() -> None:
    state, events = parse_request({"brokers": [1, 2], "controller": 1, "topics": {"t": {"partitions": {
        "0": {"replicas": [1, 2], "leader": 1, "isr": [1, 2]}}}}})
    rendered = render_state(state)
    assert "mode" not in rendered and "partition_epoch" not in rendered["topics"]["t"]["partitions"]["0"]


def _elr_request(mode: str, release: str, partition: dict) -> dict:
    return {"mode": mode, "kafka_version": release, "brokers": [1, 2],
            "topics": {"t": {"partitions": {"0": {"replicas": [1, 2], "leader": 1, "isr": [1], **partition}}}}}


def test_json_4x_answers_show_eligible_leader_replicas_and_feed_back() -> None:
    """An empty ISR with its ELR (KIP-966) is a 4.1+ answer; fed back as a request it parses, and
    on 4.0 (ELR off by default) it does once the feature is finalized in config."""
    request = {"mode": "kraft", "kafka_version": "4.4.0", "brokers": [1, 2, 3], "config": {"min.insync.replicas": "2"},
               "topics": {"t": {"partitions": {"0": {"replicas": [1, 2], "leader": 1, "isr": [1, 2],
                                                     "partition_epoch": 0}}}},
               "events": [{"type": "broker_failure", "brokers": [2]}, {"type": "broker_failure", "brokers": [1]}]}
    state, events = parse_request(request)
    answer = render_prediction(predict(state, events))
    p = answer["topics"]["t"]["partitions"]["0"]
    assert (p["leader"], p["isr"], sorted(p["elr"]), p["last_known_elr"]) == (-1, [], [1, 2], [1])
    fed_back, _ = parse_request({k: v for k, v in answer.items() if k not in ("alternatives", "outcomes")})
    assert fed_back.partition("t", 0) == predict(state, events).state.partition("t", 0)
    on_4_0 = {**request, "kafka_version": "4.0.2", "events": [],
              "topics": {"t": {"partitions": {"0": {k: p[k] for k in ("replicas", "leader", "isr", "elr")}}}}}
    with pytest.raises(OracleInputError):
        parse_request(on_4_0)
    state_4_0, _ = parse_request({**on_4_0, "config": {"eligible.leader.replicas.version": "1"}})
    assert state_4_0.partition("t", 0).elr == tuple(p["elr"])
    # 3.x answers keep their shape: no ELR fields
    three = render_prediction(predict(*parse_request({**request, "kafka_version": "3.9.2"})))
    assert "elr" not in three["topics"]["t"]["partitions"]["0"]


@pytest.mark.parametrize("request_, field", [
    ({"brokers": [1], "events": [{"type": "controller_failover"}]}, "events.0.type"),
    ({"brokers": [1], "topics": {"t": {"partitions": {"0": {"replicas": [1], "leader": 1, "isr": [1],
                                                          "partition_epoch": 3}}}}}, "topics.t.partitions.0.partition_epoch"),
    ({"mode": "kraft", "brokers": [1], "topics": {"t": {"partitions": {"0": {"replicas": [1]}}}}},
     "topics.t.partitions.0.isr"),
    ({"mode": "raft", "brokers": [1]}, "mode"),
    # a hard restart's registration-before-fence plan is the KRaft model's only
    ({"brokers": [1], "events": [{"type": "broker_failure", "brokers": [1], "restarting": True}]},
     "events.0.restarting"),
    ({"mode": "kraft", "brokers": [1], "events": [{"type": "broker_failure", "brokers": [1], "restarting": "yes"}]},
     "events.0.restarting"),
    ({"mode": "kraft", "kafka_version": "3.5.2", "brokers": [1]}, "kafka_version"),
    ({"kafka_version": "4.0.0", "brokers": [1]}, "kafka_version"),  # 4.x has no ZooKeeper mode
    # eligible leader replicas: a KRaft controller's with the ELR feature (4.1+ by default)
    (_elr_request("zookeeper", "3.9.2", {"elr": [2]}), "topics.t.partitions.0.elr"),
    (_elr_request("kraft", "3.9.2", {"elr": [2]}), "topics.t.partitions.0.elr"),
    (_elr_request("kraft", "4.0.2", {"last_known_elr": [1]}), "topics.t.partitions.0.last_known_elr"),
    (_elr_request("kraft", "4.4.0", {"elr": [1]}), "topics.t.partitions.0.elr"),  # in the ISR
    (_elr_request("kraft", "4.4.0", {"elr": [3]}), "topics.t.partitions.0.elr"),  # not a replica
    (_elr_request("kraft", "4.0.2", {"isr": [], "leader": -1}), "topics.t.partitions.0.isr"),  # ELR off on 4.0
])
def test_json_refusals(request_, field) -> None:
    with pytest.raises(OracleInputError) as error:
        parse_request(request_)
    assert error.value.field == field


# --- properties ---------------------------------------------------------------------------------

BROKERS = (1, 2, 3, 4)
SETTINGS = settings(max_examples=int(os.environ.get("ORACLE_HYPOTHESIS_EXAMPLES", "120")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
BOOL = st.sampled_from(["true", "false"])


@st.composite
def kraft_partitions(draw, active: frozenset[int]) -> PartitionState:
    rf = draw(st.integers(1, 3))
    replicas = tuple(draw(st.permutations(BROKERS))[:rf])
    live = [r for r in replicas if r in active]
    dead = [r for r in replicas if r not in active]
    le, pe = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    if live and (not dead or draw(st.booleans())):
        leader = draw(st.sampled_from(live))
        isr = (leader,) + tuple(r for r in draw(st.permutations(live)) if r != leader)
        return kp(replicas, leader, isr, le, le + pe)
    # leaderless: no active ISR member; the fence kept the last member, a fenced broker
    return kp(replicas, NO_LEADER, (draw(st.sampled_from(dead)),), le, le + pe)


@st.composite
def kraft_states(draw) -> ClusterState:
    active = frozenset(draw(st.lists(st.sampled_from(BROKERS), unique=True, min_size=1)))
    topics = {}
    for t in range(draw(st.integers(1, 2))):
        parts = {i: draw(kraft_partitions(active)) for i in range(draw(st.integers(1, 3)))}
        topics[f"t{t}"] = TopicState(parts, {UNCLEAN: draw(BOOL)})
    state = ClusterState(active, topics, controller=draw(st.one_of(st.none(), st.just(CONTROLLER))),
                         config={"auto.leader.rebalance.enable": draw(BOOL)}, mode=Mode.KRAFT)
    return settled(state)


@st.composite
def kraft_events(draw, state: ClusterState):
    brokers = st.lists(st.sampled_from(BROKERS), unique=True, min_size=1, max_size=3).map(tuple)
    tps = [tp for tp, _ in state.partitions()]
    kinds = ["failure", "failure", "shutdown", "startup", "startup", "rebalance", "create", "failover"]
    if tps:
        kinds += ["reassign", "preferred", "unclean", "config", "delete", "add", "logdir", "cancel"]
    kind = draw(st.sampled_from(kinds))
    if kind == "failure":
        return BrokerFailure(draw(brokers))
    if kind == "shutdown":
        return ControlledShutdown(draw(st.sampled_from(BROKERS)))
    if kind == "startup":
        return BrokerStartup(draw(brokers))
    if kind == "rebalance":
        return AutoRebalance()
    if kind == "failover":
        return ControllerFailover(draw(st.one_of(st.none(), st.integers(3000, 3002))))
    if kind == "create":
        name = next(f"c{i}" for i in range(len(state.topics) + 1) if f"c{i}" not in state.topics)
        replicas = {i: tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))]) for i in range(2)}
        return CreateTopic(name, replicas, {UNCLEAN: draw(BOOL)})
    some = st.lists(st.sampled_from(tps), min_size=1, max_size=3, unique=True).map(tuple)
    if kind == "reassign":
        tp = draw(st.sampled_from(tps))
        return Reassign(tp.topic, tp.partition, tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))]))
    if kind == "cancel":  # often nothing in progress: refused (a reassign before it leaves one stalled)
        tp = draw(st.sampled_from(tps))
        return CancelReassignment(tp.topic, tp.partition)
    if kind == "preferred":
        return PreferredElection(draw(some))
    if kind == "unclean":
        return UncleanElection(draw(some))
    if kind == "logdir":
        broker = draw(st.sampled_from(BROKERS))
        hosted = [tp for tp, p in state.partitions() if broker in p.replicas]
        return LogDirFailure(broker, tuple(draw(st.lists(st.sampled_from(hosted), unique=True))) if hosted else ())
    topic = draw(st.sampled_from(sorted(state.topics)))
    if kind == "delete":
        return DeleteTopic(topic)
    if kind == "add":
        count = len(state.topics[topic].partitions)
        return AddPartitions(topic, {count: tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))])})
    return TopicConfigChange(topic, {UNCLEAN: draw(BOOL)})


def check_kraft_invariants(before: ClusterState, after: ClusterState) -> None:
    for tp, p in after.partitions():
        assert p.isr, (tp, p)  # ELR off: an empty ISR is never written
        assert set(p.isr) <= set(p.replicas), (tp, p)
        assert p.leader == NO_LEADER or p.leader in p.isr, (tp, p)
        assert p.leader == NO_LEADER or p.leader in after.live_brokers, (tp, p)
        assert p.phase is (PartitionPhase.OFFLINE if p.leader == NO_LEADER else PartitionPhase.ONLINE)
        if not before.has_partition(tp):
            continue
        was = before.partition(tp)
        assert p.leader_epoch >= was.leader_epoch, (tp, was, p)
        if p == was:
            continue
        # every PartitionChangeRecord bumps the partition epoch; the leader epoch never more
        assert p.partition_epoch > was.partition_epoch, (tp, was, p)
        assert p.partition_epoch - was.partition_epoch >= p.leader_epoch - was.leader_epoch, (tp, was, p)
        if p.leader != was.leader:
            assert p.leader_epoch > was.leader_epoch, (tp, was, p)


@SETTINGS
@given(st.data())
def test_kraft_invariants_hold_on_every_alternative(data) -> None:
    walk_checking_invariants(data, data.draw(kraft_states()))


def walk_checking_invariants(data, state: ClusterState, refusal=lambda event: None) -> None:
    """One to three drawn events from ``state``, one drawn alternative after another, every
    alternative distinct and checked; an event ``refusal`` answers with a message for must be
    refused with it, which ends the walk."""
    for _ in range(data.draw(st.integers(1, 3))):
        event = data.draw(kraft_events(state))
        refused = refusal(event)
        if refused is not None:
            with pytest.raises(ValueError, match=refused):
                predict(state, [event])
            return
        alternatives = predict(state, [event]).alternatives
        keys = [regs_all(a.state) for a in alternatives]
        assert len(keys) == len(set(keys))  # alternatives are distinct
        for alternative in alternatives:
            check_kraft_invariants(state, alternative.state)
        state = data.draw(st.sampled_from([a.state for a in alternatives]))


def regs_all(state: ClusterState) -> tuple:
    return (tuple(state.partitions()), state.live_brokers, state.controller,
            tuple(sorted((t, tuple(sorted(ts.config.items()))) for t, ts in state.topics.items())),
            tuple(sorted((b, tuple(sorted(tps))) for b, tps in state.offline_replicas.items())))


@SETTINGS
@given(st.data())
def test_fencing_a_broker_in_no_isr_changes_nothing(data) -> None:
    state = data.draw(kraft_states())
    outside = [b for b in BROKERS if b in state.live_brokers and all(b not in p.isr for _, p in state.partitions())]
    if not outside:
        return
    broker = data.draw(st.sampled_from(outside))
    after = apply_event(state, BrokerFailure((broker,)))[0]
    assert dict(after.partitions()) == dict(state.partitions())
    assert after.live_brokers == state.live_brokers - {broker}


@SETTINGS
@given(st.data())
def test_every_permutation_of_fencing_is_listed(data) -> None:
    state = data.draw(kraft_states())
    dying = tuple(sorted(data.draw(st.lists(st.sampled_from(sorted(state.live_brokers)), unique=True, min_size=1,
                                            max_size=3))))
    labels = [plan.label for plan in _event_plans(state, BrokerFailure(dying))]
    for order in permutations(dying):
        assert "fenced " + " then ".join(map(str, order)) in labels
    # and each order's result is one of the alternatives
    alternatives = {regs_all(a.state) for a in predict(state, [BrokerFailure(dying)]).alternatives}
    for order in permutations(dying):
        sequential = state
        for broker in order:
            sequential = apply_event(sequential, BrokerFailure((broker,)))[0]
        assert regs_all(sequential) in alternatives


@SETTINGS
@given(st.data())
def test_controller_failover_changes_nothing_but_the_controller(data) -> None:
    state = data.draw(kraft_states())
    after = apply_event(state, ControllerFailover(3001))[0]
    assert after.controller == 3001
    assert dataclasses.replace(after, controller=state.controller) == state

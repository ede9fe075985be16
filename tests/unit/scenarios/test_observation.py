"""From a ZooKeeper snapshot to the oracle's input, the settled precondition and convergence."""

from __future__ import annotations

from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import BrokerFailure, PartitionPhase, predict
from kafka_chaos.scenarios.model.snapshots import cluster_state_of, is_settled, matches_prediction, mismatches, unsettled


def zk(t, p, replicas, leader, isr, epoch=0, version=1):
    return PartitionZkState(t, p, tuple(replicas), leader, epoch, tuple(isr), 1, 0, version)


def snap(partitions, live=(1, 2, 3), controller=1, configs=None):
    return ZkSnapshot(taken_at=0.0, live_brokers={b: 100 + b for b in live}, controller=controller,
                      controller_epoch=1, partitions={(s.topic, s.partition): s for s in partitions},
                      topic_configs=configs or {}, pending_reassignment=False)


SETTLED = snap([zk("t", 0, (1, 2), 1, (1, 2), 3), zk("t", 1, (2, 3), 2, (2, 3)), zk("u", 0, (3,), 3, (3,))])


def test_cluster_state_of_keeps_named_topics_and_config() -> None:
    s = snap(SETTLED.partitions.values(), configs={"t": {"unclean.leader.election.enable": "true"}})
    cs = cluster_state_of(s, ["t"], {"unclean.leader.election.enable": "false"})
    assert set(cs.topics) == {"t"}
    assert cs.topics["t"].config["unclean.leader.election.enable"] == "true"
    assert cs.partition("t", 0).leader_epoch == 3 and cs.controller == 1
    assert cs.live_brokers == {1, 2, 3}


def test_phases_and_dead_controller() -> None:
    s = snap([zk("t", 0, (1, 2), -1, (1,), 4), zk("t", 1, (2, 3), -1, (), version=-1)], live=(2, 3), controller=1)
    cs = cluster_state_of(s, None, {})
    assert cs.partition("t", 0).phase is PartitionPhase.OFFLINE
    assert cs.partition("t", 1).phase is PartitionPhase.NEW
    assert cs.controller is None  # /controller of a dead broker lingers until its session expires


def test_settled() -> None:
    assert is_settled(SETTLED, None)
    lagging = snap([zk("t", 0, (1, 2), 1, (1,))])
    assert unsettled(lagging, None) == ["t-0 ISR [1] lacks live [2]"]
    leaderless = snap([zk("t", 0, (1, 2), -1, (1,))], live=(2, 3))
    assert is_settled(leaderless, None)  # leaderless partitions are legal and settled
    assert not is_settled(snap(SETTLED.partitions.values(), controller=None), None)
    # a dead leader left in ZooKeeper: in motion while a controller may act, settled when no
    # broker is live (a total outage: no controller is left to write)
    stale = [zk("t", 0, (1, 2), 1, (1, 2), 3)]
    assert unsettled(snap(stale, live=(2,), controller=2), None) == ["t-0 leader 1 is not live"]
    assert is_settled(snap(stale, live=(), controller=None), None)


def test_matches_prediction() -> None:
    before = cluster_state_of(SETTLED, ["t", "u"], {})
    predicted = predict(before, [BrokerFailure((1,))]).state
    after = snap([zk("t", 0, (1, 2), 2, (2,), 4), zk("t", 1, (2, 3), 2, (3, 2)), zk("u", 0, (3,), 3, (3,))],
                 live=(2, 3), controller=2)
    assert matches_prediction(after, predicted, ["t", "u"])
    assert mismatches(SETTLED, predicted, ["t"]) == ["live brokers [1, 2, 3] != [2, 3]", "t-0 leader 1 != 2",
                                                     "t-0 ISR [1, 2] != [2]"]


def test_a_state_is_not_reached_before_a_controller_is_elected() -> None:
    """Found by `kafka-chaos explore --seed 7`: the hard-killed controller led no partition of
    the topics, so they matched the moment its session expired, before a survivor won the
    election, and single_controller read no /controller."""
    before = cluster_state_of(SETTLED, ["u"], {})
    predicted = predict(before, [BrokerFailure((1,))]).state
    after = [zk("u", 0, (3,), 3, (3,))]
    assert mismatches(snap(after, live=(2, 3), controller=None), predicted, ["u"]) == ["no live controller"]
    assert mismatches(snap(after, live=(2, 3), controller=1), predicted, ["u"]) == ["no live controller"]  # lingering
    assert matches_prediction(snap(after, live=(2, 3), controller=3), predicted, ["u"])


def _moving(replicas, isr, removing=(), adding=(), live=(1, 3)):
    from dataclasses import replace

    ps = replace(zk("t", 0, replicas, isr[0], isr, 4), adding_replicas=tuple(adding), removing_replicas=tuple(removing))
    return replace(snap([ps], live=live), pending_reassignment=True)


def test_a_reassignment_waiting_for_a_down_target_replica_is_settled_one_that_can_finish_is_not() -> None:
    """KAFKA-15665's fixed behaviour: [1, 2, 3] -> [1, 2] with 2 down waits for 2 (nothing moves
    until it starts), so the step after it may begin; with 2 live it is still running."""
    stalled = _moving((1, 2, 3), (1, 3), removing=(3,))
    assert unsettled(stalled, None) == []
    running = _moving((1, 2, 3), (1, 3), removing=(3,), live=(1, 2, 3))
    assert unsettled(running, None) == ["reassignment pending", "t-0 is being reassigned", "t-0 ISR [1, 3] lacks live [2]"]
    removed_down = _moving((1, 2, 3), (1, 2), removing=(3,), live=(1, 2))  # only the removed replica is down
    assert "reassignment pending" in unsettled(removed_down, None)
    adding_down = _moving((1, 3, 2), (1, 3), adding=(2,))
    assert unsettled(adding_down, None) == []


def test_a_predicted_pending_reassignment_is_no_mismatch() -> None:
    from kafka_chaos.oracle import ClusterState, PartitionState, TopicState

    stalled = _moving((1, 2, 3), (1, 3), removing=(3,))
    pending = ClusterState(frozenset({1, 3}), {"t": TopicState({0: PartitionState((1, 2, 3), 1, (1, 3), 4,
                                                                                   removing_replicas=(3,))})}, controller=1)
    done = ClusterState(frozenset({1, 3}), {"t": TopicState({0: PartitionState((1, 2), 1, (1,), 4)})}, controller=1)
    assert mismatches(stalled, pending, ["t"]) == []
    assert mismatches(stalled, done, ["t"]) == ["reassignment pending", "t-0 ISR [1, 3] != [1]",
                                               "t-0 replicas [1, 2, 3] != [1, 2]"]

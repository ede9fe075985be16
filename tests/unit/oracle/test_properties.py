"""Hypothesis property tests: random cluster states and random event sequences keep the
invariants the real controller keeps."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_chaos.oracle import (
    AddPartitions,
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    ClusterState,
    ControlledShutdown,
    CreateTopic,
    DeleteTopic,
    LogDirFailure,
    Outcome,
    PartitionState,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    TopicPartition,
    TopicState,
    UncleanElection,
    apply_event,
    settled,
)
from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle import election
from kafka_chaos.oracle.state import NO_LEADER, PartitionPhase

BROKERS = (1, 2, 3, 4)
# ORACLE_HYPOTHESIS_EXAMPLES=5000 for a deeper hunt; the default keeps the suite well under a minute.
SETTINGS = settings(max_examples=int(os.environ.get("ORACLE_HYPOTHESIS_EXAMPLES", "120")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
BOOL = st.sampled_from(["true", "false"])


@st.composite
def partition_states(draw, live: frozenset[int]) -> PartitionState:
    rf = draw(st.integers(1, 3))
    replicas = tuple(draw(st.permutations(BROKERS))[:rf])
    live_replicas = [r for r in replicas if r in live]
    dead = [r for r in replicas if r not in live]
    # settled states only: a partition without a leader has no live ISR member, and a NewPartition
    # no live replica (otherwise the controller would already have elected / initialised it)
    kinds = (["leaderless", "new"] if len(dead) == len(replicas) else []) + (["led"] if live_replicas else []) + (
        ["leaderless"] if dead else [])
    kind = draw(st.sampled_from(kinds))
    epoch = draw(st.integers(0, 5))
    if kind == "new":
        return PartitionState(replicas, NO_LEADER, (), 0, phase=PartitionPhase.NEW)
    if kind == "led":
        leader = draw(st.sampled_from(live_replicas))
        followers = draw(st.lists(st.sampled_from(live_replicas), unique=True))
        isr = (leader,) + tuple(f for f in followers if f != leader)
        recovery = draw(st.sampled_from([0, 1])) if len(isr) == 1 else 0
        return PartitionState(replicas, leader, isr, epoch, recovery)
    # leaderless: the controller kept the last ISR member, a dead broker
    return PartitionState(replicas, NO_LEADER, (draw(st.sampled_from(dead)),), epoch, phase=PartitionPhase.OFFLINE)


@st.composite
def cluster_states(draw) -> ClusterState:
    live = frozenset(draw(st.lists(st.sampled_from(BROKERS), unique=True, min_size=1)))
    topics = {}
    for t in range(draw(st.integers(1, 2))):
        partitions = {i: draw(partition_states(live)) for i in range(draw(st.integers(1, 3)))}
        topics[f"t{t}"] = TopicState(partitions, {cfg.UNCLEAN_LEADER_ELECTION_ENABLE: draw(BOOL)})
    controller = draw(st.one_of(st.none(), st.sampled_from(sorted(live))))
    config = {
        cfg.AUTO_LEADER_REBALANCE_ENABLE: draw(BOOL),
        cfg.LEADER_IMBALANCE_PER_BROKER_PERCENTAGE: str(draw(st.sampled_from([0, 10, 50]))),
    }
    return settled(ClusterState(live, topics, controller, config))


def _partitions(state: ClusterState) -> list[TopicPartition]:
    return [tp for tp, _ in state.partitions()]


@st.composite
def events_for(draw, state: ClusterState):
    brokers = st.lists(st.sampled_from(BROKERS), unique=True, min_size=1, max_size=3).map(tuple)
    if not state.topics:  # every topic deleted
        kind = draw(st.sampled_from(["failure", "shutdown", "startup", "rebalance", "create"]))
    else:
        kind = draw(st.sampled_from(
            ["failure", "failure", "shutdown", "startup", "startup", "reassign", "preferred", "unclean", "rebalance",
             "create", "config", "delete", "add", "logdir"]))
    tps = st.lists(st.sampled_from(_partitions(state) or [TopicPartition("none", 0)]), min_size=1, max_size=3,
                   unique=True).map(tuple)
    if kind == "failure":
        return BrokerFailure(draw(brokers))
    if kind == "shutdown":
        return ControlledShutdown(draw(st.sampled_from(BROKERS)))
    if kind == "startup":
        return BrokerStartup(draw(brokers))
    if kind == "reassign":
        tp = draw(st.sampled_from(_partitions(state)))
        target = tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))])
        return Reassign(tp.topic, tp.partition, target)
    if kind == "preferred":
        return PreferredElection(draw(tps))
    if kind == "unclean":
        return UncleanElection(draw(tps))
    if kind == "rebalance":
        return AutoRebalance()
    if kind == "create":
        name = next(f"c{i}" for i in range(len(state.topics) + 1) if f"c{i}" not in state.topics)
        replicas = {i: tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))]) for i in range(2)}
        return CreateTopic(name, replicas, {cfg.UNCLEAN_LEADER_ELECTION_ENABLE: draw(BOOL)})
    if kind == "logdir" and state.live_brokers:
        broker = draw(st.sampled_from(sorted(state.live_brokers)))
        hosted = [tp for tp, p in state.partitions() if broker in p.replicas]
        return LogDirFailure(broker, tuple(draw(st.lists(st.sampled_from(hosted), unique=True))) if hosted else ())
    topic = draw(st.sampled_from(sorted(state.topics)))
    if kind == "delete":
        return DeleteTopic(topic)
    if kind == "add":
        first = max(state.topics[topic].partitions) + 1
        return AddPartitions(topic, {first: tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))])})
    return TopicConfigChange(topic, {cfg.UNCLEAN_LEADER_ELECTION_ENABLE: draw(BOOL)})


def check_invariants(before: ClusterState, event, after: ClusterState, outcomes) -> None:
    controller_exists = bool(after.live_brokers)
    for tp, p in after.partitions():
        assert p.leader == NO_LEADER or p.leader in p.isr, (tp, p)
        assert set(p.isr) <= set(p.replicas), (tp, p)
        if controller_exists and tp.topic not in after.topics_being_deleted:
            # (a queued topic is left out of every election and OfflineReplica: one queued behind a
            # reassignment keeps a dead leader, as in Kafka)
            assert p.leader == NO_LEADER or p.leader in after.live_brokers, (tp, p)
        emptied_by_reassign = not p.isr and (
            isinstance(event, Reassign) or (before.has_partition(tp) and not before.partition(tp).isr))
        if p.leader_recovery_state == 1 and not emptied_by_reassign:
            # (exception: the reassignment that drops every ISR member, see below, and what follows it)
            assert len(p.isr) == 1, (tp, p)
        if not before.has_partition(tp):
            continue
        old = before.partition(tp)
        assert p.leader_epoch >= old.leader_epoch, (tp, old, p)
        if old.isr and not (isinstance(event, Reassign) and not set(old.isr) & set(p.replicas)):
            # (exception: a reassignment that drops every ISR member; Kafka then keeps the last one
            # in the ISR although it is no longer a replica, which a PartitionState cannot hold)
            assert p.isr, (tp, old, p)
        if isinstance(event, PreferredElection) and old.has_leader_and_isr:
            # (a NewPartition named in an election is initialised instead: doHandleStateChanges)
            assert p.isr == old.isr, (tp, old, p)
    for topic in after.topics_being_deleted:
        partitions = after.topics[topic].partitions
        # a queued topic waits only for an offline replica (or a reassignment in progress) ...
        assert any(
            not after.is_replica_online(r, TopicPartition(topic, n)) for n, p in partitions.items() for r in p.replicas
        ) or any(p.is_being_reassigned for p in partitions.values()), (topic, after)
        for n, p in partitions.items():
            tp = TopicPartition(topic, n)
            # ... and none of its partitions gets a new leader, but for the leader move of a
            # reassignment that completes (KafkaController.maybeCompleteReassignment ->
            # moveReassignedPartitionLeaderIfRequired does not look at the deletion queue)
            if before.has_partition(tp) and not before.partition(tp).is_being_reassigned:
                assert p.leader in (NO_LEADER, before.partition(tp).leader), (tp, before.partition(tp), p)
    for topic in set(before.topics) - set(after.topics):
        # only a deletion removes a topic, and only once every replica was online
        assert isinstance(event, DeleteTopic) or topic in before.topics_being_deleted, (topic, event)
        old = before.topics[topic].partitions
        assert all(r in after.live_brokers for p in old.values() for r in p.replicas), (topic, event, after)
    for broker, tps in after.offline_replicas.items():
        for tp in tps:
            if tp.topic in after.topics_being_deleted:
                continue  # left out of elections and OfflineReplica (onReplicasBecomeOffline)
            p = after.partition(tp)
            assert p.leader != broker, (broker, tp, p)  # a replica on a failed directory never leads
            assert broker not in p.isr or p.isr == (broker,), (broker, tp, p)  # unless the last ISR member
    by_tp = {(o.topic, o.partition): o.outcome for o in outcomes}
    assert len(by_tp) == len(outcomes)  # one outcome per partition per event
    for (topic, number), outcome in by_tp.items():
        p = after.partition(topic, number)
        if outcome in (Outcome.ELECTED, Outcome.UNCLEAN_ELECTED):
            assert p.leader in after.live_brokers
        if outcome is Outcome.NO_REPLICA_ONLINE:
            assert p.leader == NO_LEADER or p.leader not in after.live_brokers
        if outcome is Outcome.UNCLEAN_ELECTED and not isinstance(event, UncleanElection):
            assert cfg.unclean_leader_election_enabled(after.config, after.topics[topic].config)
        tp = TopicPartition(topic, number)
        if (
            outcome is Outcome.ELECTED
            and isinstance(event, (BrokerFailure, ControlledShutdown, PreferredElection, UncleanElection))
            and before.has_partition(tp)
            and before.partition(tp).has_leader_and_isr
            and not before.partition(tp).is_being_reassigned
        ):
            # clean elections pick from the ISR (these events add no replica to an ISR first)
            assert p.leader in before.partition(tp).isr, (event, before.partition(tp), p)


@SETTINGS
@given(st.data())
def test_event_sequences_keep_invariants(data):
    state = data.draw(cluster_states())
    for _ in range(data.draw(st.integers(1, 6))):
        event = data.draw(events_for(state))
        after, outcomes = apply_event(state, event)
        check_invariants(state, event, after, outcomes)
        assert apply_event(state, event) == (after, outcomes)  # deterministic, input untouched
        state = after


@SETTINGS
@given(st.data())
def test_preferred_election_never_changes_isr_or_replicas(data):
    state = data.draw(cluster_states())
    tps = data.draw(st.lists(st.sampled_from(_partitions(state)), min_size=1, unique=True))
    after, outcomes = apply_event(state, PreferredElection(tuple(tps)))
    for tp, p in after.partitions():
        old = state.partition(tp)
        assert (p.isr, p.replicas) == (old.isr, old.replicas)
        if p.leader != old.leader:
            assert p.leader == p.replicas[0] and p.leader_epoch == old.leader_epoch + 1
    assert sorted((o.topic, o.partition) for o in outcomes) == sorted((tp.topic, tp.partition) for tp in tps)


@SETTINGS
@given(
    replicas=st.permutations(BROKERS).map(lambda r: tuple(r[:3])),
    isr_size=st.integers(1, 3),
    live=st.frozensets(st.sampled_from(BROKERS)),
    unclean=st.booleans(),
)
def test_clean_elections_never_pick_outside_isr(replicas, isr_size, live, unclean):
    p = PartitionState(replicas, replicas[0], replicas[:isr_size], 3)
    offline = election.leader_for_offline(p, live, unclean)
    if offline.new_state is not None:
        leader = offline.new_state.leader
        assert (leader in p.isr) is not offline.unclean
        assert offline.new_state.leader_epoch == 4
        if not offline.unclean:
            assert set(offline.new_state.isr) <= set(p.isr) & live
    for result in (
        election.leader_for_preferred_replica(p, live),
        election.leader_for_controlled_shutdown(p, live | {replicas[0]}, {replicas[0]}),
        election.leader_for_reassign(p, live),
    ):
        if result.new_state is not None:
            assert result.new_state.leader in p.isr and result.new_state.leader in live | {replicas[0]}
            assert not result.unclean

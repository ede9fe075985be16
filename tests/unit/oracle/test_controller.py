"""Every event handler, table-driven: (state before, event) -> partition t-0 after, its outcome."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import (
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    ControlledShutdown,
    CreateTopic,
    Outcome,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    TopicPartition,
    UncleanElection,
    apply_event,
    predict,
)
from tests.unit.oracle.builders import NEW, OFFLINE, ONLINE, T0, cluster, lit, new_part, one, part, run

UNCLEAN_ON = {"t": {"unclean.leader.election.enable": "true"}}
E, U, N = Outcome.ELECTED, Outcome.UNCHANGED, Outcome.NO_REPLICA_ONLINE

BROKER_FAILURE = [
    # (name, live, partition, failed, controller, topic_config, expected t-0, outcome)
    ("leader dies, next live ISR member in AR order", {1, 2, 3}, part([1, 2, 3], 1, [1, 3, 2], 4), [1], 2, None,
     ([1, 2, 3], 2, [3, 2], 5, 0), E),
    ("follower in ISR dies: ISR shrinks, +1", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), [2], 1, None,
     ([1, 2, 3], 1, [1, 3], 5, 0), U),
    ("follower outside ISR dies: no write", {1, 2, 3}, part([1, 2, 3], 1, [1, 3], 4), [2], 1, None,
     ([1, 2, 3], 1, [1, 3], 4, 0), U),
    ("last ISR member dies, unclean off: leaderless, ISR kept", {1, 2, 3}, part([1, 2], 1, [1], 4), [1], 3, None,
     ([1, 2], -1, [1], 5, 0), N),
    ("last ISR member dies, unclean on: first live replica, RECOVERING", {1, 2, 3}, part([1, 2, 3], 1, [1], 4), [1], 3,
     UNCLEAN_ON, ([1, 2, 3], 2, [2, 3], 5, 0), Outcome.UNCLEAN_ELECTED),
    ("two ISR members in one event: removal in broker-id order keeps the larger", {1, 2, 3},
     part([1, 2, 3], 1, [1, 2], 4), [2, 1], 3, None, ([1, 2, 3], -1, [2], 6, 0), N),
    ("controller dies: removal then election, +2", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), [1], 1, None,
     ([1, 2, 3], 2, [2, 3], 6, 0), E),
    ("controller dies as a follower: removal +1 only", {1, 2, 3}, part([1, 2, 3], 2, [2, 1, 3], 4), [1], 1, None,
     ([1, 2, 3], 2, [2, 3], 5, 0), U),
    ("broker already dead: nothing", {2, 3}, part([1, 2, 3], 2, [2, 3], 4), [1], 2, None,
     ([1, 2, 3], 2, [2, 3], 4, 0), U),
]


@pytest.mark.parametrize("name, live, p, failed, controller, topic_config, expected, outcome", BROKER_FAILURE)
def test_broker_failure(name, live, p, failed, controller, topic_config, expected, outcome):
    after, got, state = run(one(live, p, controller=controller, topic_config=topic_config), BrokerFailure(tuple(failed)))
    assert lit(after) == expected
    assert got is outcome
    assert state.live_brokers == frozenset(live) - set(failed)


def test_unclean_leader_keeps_recovering_while_alone():
    state = one({1, 2}, part([1, 2], 1, [1], 4), controller=2, topic_config=UNCLEAN_ON)
    after, outcome, _ = run(state, BrokerFailure((1,)))
    assert lit(after) == ([1, 2], 2, [2], 5, 1)
    assert outcome is Outcome.UNCLEAN_ELECTED


def test_controller_failure_forgets_the_controller_and_bumps_offline_partitions():
    state = cluster(
        {1, 2},
        {"t": {0: part([1, 2], 1, [1, 2], 4)}, "dead": {0: part([3], -1, [3], 2)}},
        controller=1,
    )
    after, outcomes = apply_event(state, BrokerFailure((1,)))
    assert after.controller is None
    assert lit(after.partition("dead", 0)) == ([3], -1, [3], 3, 0)  # +1 on every failover
    assert {(o.topic, o.outcome) for o in outcomes} == {("t", E), ("dead", N)}
    # a non-controller failure leaves the offline partition alone
    after, _ = apply_event(state, BrokerFailure((2,)))
    assert lit(after.partition("dead", 0)) == ([3], -1, [3], 2, 0)
    assert after.controller == 1


def test_failover_runs_auto_rebalance_when_enabled():
    p = part([2, 1], 1, [1, 2], 1)
    enabled = one({1, 2, 3}, p, controller=3, config={"auto.leader.rebalance.enable": "true"})
    after, _, state = run(enabled, BrokerFailure((3,)))
    assert lit(after) == ([2, 1], 1, [1, 2], 1, 0) and state.rebalance_check_due  # 5 s later, not yet
    assert lit(predict(enabled, [BrokerFailure((3,))]).state.partition(T0)) == ([2, 1], 2, [1, 2], 2, 0)
    assert not predict(enabled, [BrokerFailure((3,))]).state.rebalance_check_due
    disabled = one({1, 2, 3}, p, controller=3)
    after, _, state = run(disabled, BrokerFailure((3,)))
    assert lit(after) == ([2, 1], 1, [1, 2], 1, 0) and not state.rebalance_check_due
    assert lit(predict(disabled, [BrokerFailure((3,))]).state.partition(T0)) == ([2, 1], 1, [1, 2], 1, 0)


@pytest.mark.parametrize(("rebalance", "expected"), [
    # removal written before the election (+2), then the check 5 s after the failover finds the
    # paused controller registered again and in the ISR: its preferred partition goes back (+1)
    ("true", ([3, 1], 3, [1, 3], 7, 0)),
    ("false", ([3, 1], 1, [1, 3], 6, 0)),
])
def test_a_failovers_imbalance_check_sees_the_paused_controller_back(rebalance: str, expected) -> None:
    paused = one({1, 2, 3}, part([3, 1], 3, [3, 1], 4), controller=3, config={"auto.leader.rebalance.enable": rebalance})
    prediction = predict(paused, [BrokerFailure((3,)), BrokerStartup((3,))])
    assert lit(prediction.state.partition(T0)) == expected


def test_last_broker_dies_nobody_writes():
    after, outcome, state = run(one({1}, part([1, 2], 1, [1], 4), controller=1), BrokerFailure((1,)))
    assert lit(after) == ([1, 2], 1, [1], 4, 0)
    assert after.phase is OFFLINE and outcome is N
    assert state.live_brokers == frozenset() and state.controller is None


CONTROLLED_SHUTDOWN = [
    ("leader moves to next ISR member; exit writes nothing more", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), 1, 3,
     None, ([1, 2, 3], 2, [2, 3], 5, 0), E),
    ("follower leaves the ISR", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), 2, 3, None, ([1, 2, 3], 1, [1, 3], 5, 0), U),
    ("RF=1 untouched until exit, then leaderless", {1, 2}, part([1], 1, [1], 4), 1, 2, None, ([1], -1, [1], 5, 0), N),
    ("no other ISR member: stays until exit", {1, 2}, part([1, 2], 1, [1], 4), 1, 2, None, ([1, 2], -1, [1], 5, 0), N),
    ("the controller shuts down", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), 1, 1, None, ([1, 2, 3], 2, [2, 3], 5, 0), E),
    ("controlled shutdown disabled: a plain exit", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), 1, 3,
     {"controlled.shutdown.enable": "false"}, ([1, 2, 3], 2, [2, 3], 5, 0), E),
    ("already gone", {2, 3}, part([1, 2, 3], 2, [2, 3], 4), 1, 3, None, ([1, 2, 3], 2, [2, 3], 4, 0), U),
]


@pytest.mark.parametrize("name, live, p, broker, controller, config, expected, outcome", CONTROLLED_SHUTDOWN)
def test_controlled_shutdown(name, live, p, broker, controller, config, expected, outcome):
    after, got, state = run(one(live, p, controller=controller, config=config), ControlledShutdown(broker))
    assert lit(after) == expected
    assert got is outcome
    assert broker not in state.live_brokers
    assert state.controller == (None if controller == broker else controller)


CONTROLLED_SHUTDOWN_RETRIES = [
    # (name, partition t-1 besides t-0 = leaderless [2, 3] with ISR [2] at epoch 4,
    #  expected t-0 epoch after, expected t-1 after) -- ControllerContext.partitionLeadersOnBroker
    #  (ControllerContext.scala 3.9 lines 486-492) counts only RF > 1 partitions as remaining.
    ("RF=1 partition led by 2 does not count: one request, then the exit", part([2], 2, [2], 0), 6,
     ([2], -1, [2], 1, 0)),
    ("RF>1 partition with no other ISR member stays led by 2: 3 requests, then the exit",
     part([2, 3], 2, [2], 0), 8, ([2, 3], -1, [2], 1, 0)),
    ("RF>1 partition moved away at the first request: one request", part([2, 3], 2, [2, 3], 0), 6,
     ([2, 3], 3, [3], 1, 0)),
]


@pytest.mark.parametrize("name, other, t0_epoch, t1", CONTROLLED_SHUTDOWN_RETRIES)
def test_controlled_shutdown_retries_rewrite_a_leaderless_isr(name, other, t0_epoch, t1):
    # leader -1 with ISR [2]: each ControlledShutdownRequest's OfflineReplica rewrites it (+1), and the
    # exit's removal once more; the number of requests is decided by partitionLeadersOnBroker.
    state = cluster({2, 3}, {"t": {0: part([2, 3], -1, [2], 4), 1: other}}, controller=3)
    after, _ = apply_event(state, ControlledShutdown(2))
    assert lit(after.partition("t", 0)) == ([2, 3], -1, [2], t0_epoch, 0)
    assert lit(after.partition("t", 1)) == t1


BROKER_STARTUP = [
    ("offline partition: its last ISR member comes back", {3}, part([1, 2], -1, [1], 5), [1], None,
     ([1, 2], 1, [1], 6, 0), E),
    ("leadership is not given back; the broker rejoins the ISR", {2, 3}, part([1, 2, 3], 2, [2, 3], 5), [1], None,
     ([1, 2, 3], 2, [2, 3, 1], 5, 0), U),
    ("a replica outside the ISR cannot lead (unclean off)", {3}, part([1, 2], -1, [1], 5), [2], None,
     ([1, 2], -1, [1], 5, 0), N),
    ("... but can with unclean on", {3}, part([1, 2], -1, [1], 5), [2], UNCLEAN_ON, ([1, 2], 2, [2], 6, 1),
     Outcome.UNCLEAN_ELECTED),
    ("unclean leader, others rejoin: recovered", {3}, part([1, 2, 3], -1, [1], 5), [2], UNCLEAN_ON,
     ([1, 2, 3], 2, [2, 3], 6, 0), Outcome.UNCLEAN_ELECTED),
    ("from an empty cluster: new controller removes, then elects (+2)", set(), part([1, 2], 1, [1, 2], 3), [2], None,
     ([1, 2], 2, [2], 5, 0), E),
]


@pytest.mark.parametrize("name, live, p, started, topic_config, expected, outcome", BROKER_STARTUP)
def test_broker_startup(name, live, p, started, topic_config, expected, outcome):
    controller = min(live) if live else None
    after, got, state = run(one(live, p, controller=controller, topic_config=topic_config), BrokerStartup(tuple(started)))
    assert lit(after) == expected
    assert got is outcome
    assert state.live_brokers == frozenset(live) | set(started)


def test_startup_initialises_new_partitions_and_names_a_lone_controller():
    after, outcome, state = run(one(set(), new_part([1, 2])), BrokerStartup((1,)))
    assert lit(after) == ([1, 2], 1, [1], 0, 0) and after.phase is ONLINE
    assert outcome is E and state.controller == 1
    after, outcome, state = run(one({3}, new_part([1, 2]), controller=3), BrokerStartup((4,)))
    assert after.phase is NEW and outcome is N


REASSIGN = [
    ("reorder only: completes at once, epoch +1, leader stays", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), [3, 2, 1],
     ([3, 2, 1], 1, [1, 2, 3], 5, 0), U),
    ("shrink away from the leader: reassign election then removal", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), [2, 3],
     ([2, 3], 2, [2, 3], 6, 0), E),
    ("leader stays in the target: phase A +1, B +1, one removal +1", {1, 2, 3, 4}, part([1, 2, 3], 1, [1, 2, 3], 4),
     [1, 2, 4], ([1, 2, 4], 1, [1, 2, 4], 7, 0), U),
    ("new first replica does not take over", {1, 2, 3, 4}, part([1, 2, 3], 1, [1, 2, 3], 4), [4, 1, 2, 3],
     ([4, 1, 2, 3], 1, [1, 2, 3, 4], 6, 0), U),
    ("dead target: stalls in phase A", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), [1, 2, 4],
     ([1, 2, 4, 3], 1, [1, 2, 3], 5, 0), U),
]


@pytest.mark.parametrize("name, live, p, target, expected, outcome", REASSIGN)
def test_reassign(name, live, p, target, expected, outcome):
    after, got, _ = run(one(live, p, controller=min(live)), Reassign("t", 0, tuple(target)))
    assert lit(after) == expected
    assert got is outcome


def test_stalled_reassignment_records_adding_and_removing_and_resumes_on_startup():
    state = one({1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), controller=1)
    stalled, _, state = run(state, Reassign("t", 0, (1, 2, 4)))
    assert (stalled.adding_replicas, stalled.removing_replicas) == ((4,), (3,))
    after, outcome, _ = run(state, BrokerStartup((4,)))
    # resume: phase A again (+1), 4 catches up, phase B (+1), 3 removed (+1)
    assert lit(after) == ([1, 2, 4], 1, [1, 2, 4], 8, 0)
    assert (after.adding_replicas, after.removing_replicas) == ((), ())
    assert outcome is U


PREFERRED = [
    ("AR.head live and in ISR", {1, 2, 3}, part([1, 2, 3], 2, [2, 3, 1], 4), ([1, 2, 3], 1, [2, 3, 1], 5, 0), E),
    ("already the preferred leader", {1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 4), ([1, 2, 3], 1, [1, 2, 3], 4, 0),
     Outcome.ELECTION_NOT_NEEDED),
    ("AR.head dead", {2, 3}, part([1, 2, 3], 2, [2, 3], 4), ([1, 2, 3], 2, [2, 3], 4, 0),
     Outcome.PREFERRED_LEADER_NOT_AVAILABLE),
    ("AR.head live but out of sync", {1, 2, 3}, part([1, 2, 3], 2, [2, 3], 4), ([1, 2, 3], 2, [2, 3, 1], 4, 0),
     Outcome.PREFERRED_LEADER_NOT_AVAILABLE),
]


@pytest.mark.parametrize("name, live, p, expected, outcome", PREFERRED)
def test_preferred_election(name, live, p, expected, outcome):
    after, got, _ = run(one(live, p, controller=min(live)), PreferredElection((T0,)))
    assert lit(after) == expected
    assert got is outcome


UNCLEAN = [
    ("leader live: not needed", {1, 2}, part([1, 2], 1, [1, 2], 4), ([1, 2], 1, [1, 2], 4, 0), Outcome.ELECTION_NOT_NEEDED),
    ("leaderless: first live replica, ISR [it], RECOVERING", {2}, part([1, 2], -1, [1], 4), ([1, 2], 2, [2], 5, 1),
     Outcome.UNCLEAN_ELECTED),
    ("others live rejoin and clear RECOVERING", {2, 3}, part([1, 2, 3], -1, [1], 4), ([1, 2, 3], 2, [2, 3], 5, 0),
     Outcome.UNCLEAN_ELECTED),
    ("a live ISR member is preferred (clean)", {2, 3}, part([1, 2, 3], -1, [3], 4), ([1, 2, 3], 3, [3, 2], 5, 0), E),
    ("nothing live", {5}, part([1, 2], -1, [1], 4), ([1, 2], -1, [1], 4, 0), N),
]


@pytest.mark.parametrize("name, live, p, expected, outcome", UNCLEAN)
def test_unclean_election(name, live, p, expected, outcome):
    after, got, _ = run(one(live, p, controller=min(live)), UncleanElection((T0,)))
    assert lit(after) == expected
    assert got is outcome


def _preferred_by(leaders: list[int], broker: int = 1) -> dict[int, object]:
    """Partitions whose preferred replica is ``broker``, led as given."""
    return {i: part([broker, 2], leader, [1, 2], 3) for i, leader in enumerate(leaders)}


@pytest.mark.parametrize(
    "percentage, leaders, moved",
    [
        ("10", [1] * 9 + [2], 0),  # 10% is not strictly greater than 10%
        ("10", [1] * 8 + [2, 2], 2),  # 20% > 10%: both move back
        ("50", [1, 2], 0),
        ("50", [1, 2, 2], 2),
        (None, [2], 1),  # default 10%
    ],
)
def test_auto_rebalance_threshold(percentage, leaders, moved):
    config = {} if percentage is None else {"leader.imbalance.per.broker.percentage": percentage}
    state = cluster({1, 2}, {"t": _preferred_by(leaders)}, controller=1, config=config)
    after, outcomes = apply_event(state, AutoRebalance())
    assert sum(1 for _, p in after.partitions() if p.leader == 1) - leaders.count(1) == moved
    assert len(outcomes) == moved and all(o.outcome is E for o in outcomes)
    assert all(p.leader_epoch == (4 if leaders[tp.partition] != 1 and moved else 3) for tp, p in after.partitions())


def test_auto_rebalance_skips_partitions_whose_preferred_replica_cannot_lead():
    state = cluster({1, 2, 3}, {"t": {0: part([1, 2], 2, [2], 3), 1: part([1, 3], 3, [3, 1], 3)}}, controller=2)
    # settle first: 1 rejoins t-0's ISR; then both move
    after, _ = apply_event(state, AutoRebalance())
    assert (after.partition("t", 0).leader, after.partition("t", 1).leader) == (2, 1)


CREATE = [
    ("all live", {1, 2, 3}, [2, 3, 1], ([2, 3, 1], 2, [2, 3, 1], 0, 0), ONLINE, E),
    ("first replica dead", {1, 3}, [2, 3, 1], ([2, 3, 1], 3, [3, 1], 0, 0), ONLINE, E),
    ("no replica live: NewPartition", {4}, [2, 3, 1], ([2, 3, 1], -1, [], 0, 0), NEW, N),
]


@pytest.mark.parametrize("name, live, replicas, expected, phase, outcome", CREATE)
def test_create_topic(name, live, replicas, expected, phase, outcome):
    state = cluster(live, {}, controller=min(live))
    after, outcomes = apply_event(state, CreateTopic("t", {0: tuple(replicas)}, {"retention.ms": "1000"}))
    p = after.partition(T0)
    assert lit(p) == expected and p.phase is phase
    assert [o.outcome for o in outcomes] == [outcome]
    assert dict(after.topics["t"].config) == {"retention.ms": "1000"}


@pytest.mark.parametrize(
    "change, expected, outcome",
    [
        ({"unclean.leader.election.enable": "true"}, ([1, 2], 2, [2], 5, 1), Outcome.UNCLEAN_ELECTED),
        ({"unclean.leader.election.enable": "TRUE"}, ([1, 2], 2, [2], 5, 1), Outcome.UNCLEAN_ELECTED),
        ({"unclean.leader.election.enable": "false"}, ([1, 2], -1, [1], 4, 0), N),
        ({"retention.ms": "5"}, ([1, 2], -1, [1], 4, 0), N),
    ],
)
def test_topic_config_change(change, expected, outcome):
    after, got, state = run(one({2}, part([1, 2], -1, [1], 4), controller=2), TopicConfigChange("t", change))
    assert lit(after) == expected
    assert got is outcome
    assert all(state.topics["t"].config[k] == v for k, v in change.items())


def test_topic_config_change_deletes_with_none_and_ignores_broker_default():
    state = one({2}, part([1, 2], -1, [1], 4), controller=2, topic_config=UNCLEAN_ON,
                config={"unclean.leader.election.enable": "false"})
    after, _, new_state = run(state, TopicConfigChange("t", {"unclean.leader.election.enable": None}))
    assert "unclean.leader.election.enable" not in new_state.topics["t"].config
    assert after.leader == -1


def test_unknown_partition_is_rejected():
    with pytest.raises(ValueError):
        apply_event(one({1}, part([1], 1, [1])), PreferredElection((TopicPartition("nope", 0),)))


def test_reassignment_without_a_controller_is_recorded_only():
    state = one(set(), part([1, 2, 3], 1, [1, 2], 4))
    pending, _, state = run(state, Reassign("t", 0, (2, 1)))
    assert lit(pending) == ([2, 1, 3], 1, [1, 2], 4, 0)
    assert (pending.adding_replicas, pending.removing_replicas) == ((), (3,))
    after, _, _ = run(state, BrokerStartup((1, 2)))
    # the new controller resumes it: 3 dropped; the leader stays (in the target and live)
    assert lit(after) == ([2, 1], 1, [1, 2], 5, 0)

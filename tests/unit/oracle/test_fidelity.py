"""Table tests for where Kafka 3.9 diverges from the seed documents, each row a rule read from the
Kafka 3.9 source (branch 3.9, commit c821449fb7c1; line numbers in ``oracle/README.md``)."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import (
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
from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle.scala_order import hash_map_order
from tests.unit.oracle.builders import NEW, ONLINE, cluster, lit, new_part, one, part, run

N, U, E = Outcome.NO_REPLICA_ONLINE, Outcome.UNCHANGED, Outcome.ELECTED

# --- item 1: ISR removal order is the Scala HashMap order of the broker ids --------------------

ONE_EVENT_REMOVALS = [
    # (name, live, partition, dead in one BrokerChange, controller, expected t-0)
    ("ids 4,5: 5 removed first, 4 kept (the real-cluster observation)", {4, 5, 6}, part([4, 5], 4, [4, 5], 0),
     (4, 5), 6, ([4, 5], -1, [4], 2, 0)),
    ("ids 5,4 in AR order: same, the order is the set's", {4, 5, 6}, part([5, 4], 5, [5, 4], 0),
     (4, 5), 6, ([5, 4], -1, [4], 2, 0)),
    ("ids 1,2: ascending happens to hold", {1, 2, 3}, part([1, 2], 1, [1, 2], 0), (1, 2), 3, ([1, 2], -1, [2], 2, 0)),
    ("ids 3,4,5: 5, 3, 4 -> 4 kept", {3, 4, 5, 6}, part([3, 4, 5], 3, [3, 4, 5], 0), (3, 4, 5), 6,
     ([3, 4, 5], -1, [4], 3, 0)),
    ("ids 0..10 but 11: 4 is visited last", set(range(12)), part(range(11), 0, range(11), 0), tuple(range(11)), 11,
     (list(range(11)), -1, [4], 11, 0)),
    ("ids 1001,1002 (generated ids)", {1001, 1002, 1003}, part([1001, 1002], 1001, [1001, 1002], 0), (1001, 1002),
     1003, ([1001, 1002], -1, [hash_map_order((1001, 1002))[-1]], 2, 0)),
]


@pytest.mark.parametrize("name, live, p, dead, controller, expected", ONE_EVENT_REMOVALS)
def test_removals_in_one_broker_change_follow_the_hash_map_order(name, live, p, dead, controller, expected):
    after, outcome, _ = run(one(live, p, controller=controller), BrokerFailure(dead))
    assert lit(after) == expected
    assert outcome is N


def test_failover_removals_follow_the_hash_map_order():
    # The controller 6 dies with 4 and 5: replicaStateMachine.startup() removes 5 then 4 (one
    # handleStateChanges call), keeping [4]; then the election finds nobody (+0).
    state = cluster({4, 5, 6, 7}, {"t": {0: part([4, 5], 4, [4, 5], 0)}}, controller=6)
    after, _ = apply_event(state, BrokerFailure((4, 5, 6)))
    assert lit(after.partition("t", 0)) == ([4, 5], -1, [4], 2, 0)
    # ... and when 4 returns it leads (5 would not: not in the ISR)
    back, _ = apply_event(after, BrokerStartup((5,)))
    assert back.partition("t", 0).leader == -1
    back, _ = apply_event(after, BrokerStartup((4,)))
    assert back.partition("t", 0).leader == 4


# --- item 2: controlled-shutdown retries count RF > 1 partitions only ----------------------------

@pytest.mark.parametrize(
    "retries, rf1_led, rf2_stuck, leaderless_epoch",
    [
        # (max retries, an RF=1 partition led by 1, an RF=2 partition 1 leads with ISR [1], epoch of
        #  the leaderless partition [1, 2] ISR [1] after: one +1 per request, one for the exit)
        ("3", True, False, 7),
        ("3", False, True, 9),
        ("5", False, True, 11),
        ("1", True, True, 7),
        ("0", False, True, 6),  # no request at all, just the exit
    ],
)
def test_controlled_shutdown_requests(retries, rf1_led, rf2_stuck, leaderless_epoch):
    partitions = {0: part([1, 2], -1, [1], 5)}
    if rf1_led:
        partitions[1] = part([1], 1, [1], 0)
    if rf2_stuck:
        partitions[2] = part([1, 2], 1, [1], 0)
    state = cluster({1, 2}, {"t": partitions}, controller=2, config={"controlled.shutdown.max.retries": retries})
    after, _ = apply_event(state, ControlledShutdown(1))
    assert lit(after.partition("t", 0))[3] == leaderless_epoch


# --- item 3: admin elections naming a partition without leadership information -----------------

def _with_new_partition() -> object:
    # t-0 online and not led by its preferred replica; t-1 created while its replicas were down
    return cluster({1, 2}, {"t": {0: part([1, 2], 2, [2, 1], 4), 1: new_part([3, 4])}}, controller=2)


@pytest.mark.parametrize("event_type", [PreferredElection, UncleanElection])
def test_admin_election_naming_a_partition_without_state_fails_as_a_whole(event_type):
    state = _with_new_partition()
    tps = (TopicPartition("t", 0), TopicPartition("t", 1))
    after, outcomes = apply_event(state, event_type(tps))
    assert [o.outcome for o in outcomes] == [Outcome.REQUEST_FAILED, Outcome.REQUEST_FAILED]
    assert after.partition("t", 0) == state.partition("t", 0)  # not elected although it could be
    assert after.partition("t", 1).phase is NEW


def test_the_same_election_without_that_partition_elects():
    after, outcomes = apply_event(_with_new_partition(), PreferredElection((TopicPartition("t", 0),)))
    assert [o.outcome for o in outcomes] == [E]
    assert lit(after.partition("t", 0)) == ([1, 2], 1, [2, 1], 5, 0)


# --- item 4: reassignment of a partition without leadership information --------------------------

def test_reassigning_a_partition_without_state_records_it_and_a_target_startup_resumes_it():
    state = cluster({1}, {"t": {0: new_part([2, 3])}}, controller=1)
    recorded, outcome, state = run(state, Reassign("t", 0, (3, 4)))
    # updateCurrentReassignment writes RS = TRS ++ (ORS - TRS); updateLeaderEpoch then throws
    assert lit(recorded) == ([3, 4, 2], -1, [], 0, 0) and recorded.phase is NEW
    assert (recorded.adding_replicas, recorded.removing_replicas) == ((4,), (2,))
    assert outcome is N
    # 2 (only in the origin) starts: initialised over RS ([2] leads), not resumed (target lacks 2)
    only_origin, _, _ = run(state, BrokerStartup((2,)))
    assert lit(only_origin) == ([3, 4, 2], 2, [2], 0, 0)
    assert only_origin.is_being_reassigned
    # 3 and 4 start: initialised over RS (3 leads, ISR [3, 4]), then resumed: complete at once
    # (phase B: leader 3 stays, +1; 2 not in the ISR: no removal write)
    resumed, _, _ = run(state, BrokerStartup((3, 4)))
    assert lit(resumed) == ([3, 4], 3, [3, 4], 1, 0)
    assert not resumed.is_being_reassigned


def test_a_target_startup_that_cannot_complete_runs_phase_a():
    state = cluster({1}, {"t": {0: new_part([2, 3])}}, controller=1)
    _, _, state = run(state, Reassign("t", 0, (3, 4)))
    after, _, _ = run(state, BrokerStartup((3,)))  # 4 still down: initialised, then phase A +1
    assert lit(after) == ([3, 4, 2], 3, [3], 1, 0)
    assert (after.adding_replicas, after.removing_replicas) == ((4,), (2,))


def test_failover_with_a_stateless_reassigning_partition_stops_before_resuming_and_rebalancing():
    # initializePartitionReassignments throws for the stateless partition: no resume of the other
    # reassignment (its stalled phase A is not re-run) and no auto-rebalance.
    stuck = part([3, 4, 7], -1, [], 0, phase=NEW, adding=[4], removing=[7])  # no replica live
    other = part([1, 5, 2], 2, [2, 1], 4, adding=[5], removing=[])
    unbalanced = part([1, 2], 2, [2, 1], 3)
    state = cluster({1, 2, 6}, {"t": {0: stuck, 1: other, 2: unbalanced}}, controller=6,
                    config={"auto.leader.rebalance.enable": "true"})
    after = predict(state, [BrokerFailure((6,))]).state
    assert lit(after.partition("t", 1)) == ([1, 5, 2], 2, [2, 1], 4, 0)
    assert after.partition("t", 2).leader == 2
    # without the stateless one, the same failover resumes (phase A, +1) and, its check 5 s
    # later (ClusterState.rebalance_check_due), rebalances (+1)
    state = cluster({1, 2, 6}, {"t": {1: other, 2: unbalanced}}, controller=6,
                    config={"auto.leader.rebalance.enable": "true"})
    after = predict(state, [BrokerFailure((6,))]).state
    assert lit(after.partition("t", 1)) == ([1, 5, 2], 1, [2, 1], 6, 0)
    assert after.partition("t", 2).leader == 1


# --- item 6: value parsing of unclean.leader.election.enable --------------------------------------

@pytest.mark.parametrize(
    "value, log_config, trigger",
    [
        ("true", True, True),
        ("TRUE", True, True),
        (" true", True, False),  # ConfigDef trims; Scala's toBoolean does not
        ("true ", True, False),
        (" True ", True, False),
        ("false", False, False),
        (" false ", False, False),
        ("yes", False, False),
        (True, True, True),
    ],
)
def test_unclean_value_parsing(value, log_config, trigger):
    assert cfg.unclean_leader_election_enabled({}, {"unclean.leader.election.enable": value}) is log_config
    assert cfg.topic_override_enables_unclean({"unclean.leader.election.enable": value}) is trigger


def test_an_override_with_spaces_elects_nothing_now_but_at_the_next_broker_change():
    state = one({2, 3}, part([1, 2], -1, [1], 4), controller=3)
    after, outcome, state = run(state, TopicConfigChange("t", {"unclean.leader.election.enable": " true"}))
    assert lit(after) == ([1, 2], -1, [1], 4, 0) and outcome is N  # no TopicUncleanLeaderElectionEnable
    # any later BrokerChange runs triggerOnlinePartitionStateChange, whose LogConfig reads it as true
    after, outcome, _ = run(state, BrokerStartup((5,)))
    assert lit(after) == ([1, 2], 2, [2], 5, 1) and outcome is Outcome.UNCLEAN_ELECTED


def test_create_topic_then_unknown_controller_failure_lists_the_failover():
    # Item 6, "a later failure of the unknown controller": a failover also runs the auto-rebalance.
    state = cluster({1, 2, 3}, {"t": {0: part([1, 2], 2, [2, 1], 4)}}, config={"auto.leader.rebalance.enable": "true"})
    prediction = predict(state, [BrokerFailure((3,))])
    leaders = [alt.state.partition("t", 0).leader for alt in prediction.alternatives]
    assert leaders == [2, 1]  # 3 a plain broker: nothing moves; 3 the controller: rebalance to 1
    assert prediction.alternatives[1].label == "controller 3 among them: one BrokerChange {3}"

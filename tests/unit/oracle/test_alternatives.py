"""Events whose processing order Kafka does not fix: ``predict`` lists one
alternative per distinct settled state a legal order leaves, the main prediction first."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import (
    Alternative,
    BrokerFailure,
    BrokerStartup,
    ControlledShutdown,
    Prediction,
    Reassign,
    apply_event,
    apply_event_alternatives,
    predict,
)
from kafka_chaos.oracle.interleavings import MAX_UNORDERED_BROKERS, _broker_orders, _failure_orders, ordered_set_partitions
from tests.unit.oracle.builders import cluster, lit, new_part, one, part

UNCLEAN_ON = {"t": {"unclean.leader.election.enable": "true"}}


def table(prediction: Prediction, partition: int = 0) -> list[tuple[str, tuple]]:
    return [(alt.label, lit(alt.state.partition("t", partition))) for alt in prediction.alternatives]


@pytest.mark.parametrize("k, count", [(0, 1), (1, 1), (2, 3), (3, 13), (4, 75)])
def test_ordered_set_partitions_are_the_fubini_numbers(k, count):
    orders = ordered_set_partitions(range(1, k + 1))
    assert len(orders) == count == len(set(orders))
    for blocks in orders:
        assert sorted(b for block in blocks for b in block) == list(range(1, k + 1))
        assert all(list(block) == sorted(block) and block for block in blocks)


def test_orders_list_one_event_first_then_fewest_events():
    assert ordered_set_partitions([3, 2]) == [((2, 3),), ((2,), (3,)), ((3,), (2,))]


def test_beyond_the_cap_three_orders():
    brokers = list(range(1, MAX_UNORDERED_BROKERS + 2))
    assert _broker_orders(brokers) == [
        (tuple(brokers),), tuple((b,) for b in brokers), tuple((b,) for b in reversed(brokers))]
    assert len(_failure_orders(tuple(brokers), 1)) == 3


def test_a_dead_controller_sees_nothing_so_its_block_comes_first():
    assert _failure_orders((1, 2, 3), 1) == [
        ((1, 2, 3),), ((1, 2), (3,)), ((1, 3), (2,)), ((1,), (2, 3)), ((1,), (2,), (3,)), ((1,), (3,), (2,))]


def test_issue_item_1_two_isr_members_die_together_with_ids_4_and_5():
    # One BrokerChange removes 5 then 4 (HashMap order) and keeps [4]; 4 first then 5 keeps [5].
    state = one({4, 5, 6}, part([4, 5], 4, [4, 5], 3), controller=6)
    assert table(predict(state, [BrokerFailure((4, 5))])) == [
        ("one BrokerChange {4,5}", ([4, 5], -1, [4], 5, 0)),
        ("BrokerChange {4} then {5}", ([4, 5], -1, [5], 5, 0)),
        # "{5} then {4}" leaves the same state as one BrokerChange: listed once
    ]


def test_issue_item_5_leader_and_follower_die_in_one_or_two_events():
    state = one({1, 2, 3, 4, 5, 6}, part([2, 3, 1], 2, [2, 3, 1], 7), controller=4)
    assert table(predict(state, [BrokerFailure((2, 3))])) == [
        ("one BrokerChange {2,3}", ([2, 3, 1], 1, [1], 8, 0)),
        ("BrokerChange {2} then {3}", ([2, 3, 1], 1, [1], 9, 0)),
    ]


def test_the_main_prediction_is_the_first_alternative_and_equals_apply_event():
    state = one({1, 2, 3, 4}, part([2, 3, 1], 2, [2, 3, 1], 7), controller=4)
    prediction = predict(state, [BrokerFailure((2, 3))])
    main = prediction.alternatives[0]
    assert isinstance(main, Alternative)
    assert (main.state, main.outcomes, main.steps) == (prediction.state, prediction.outcomes, prediction.steps)
    assert (prediction.state, prediction.outcomes) == apply_event(state, BrokerFailure((2, 3)))
    states = [alt.state for alt in prediction.alternatives]
    assert all(a != b for i, a in enumerate(states) for b in states[i + 1:])  # deduplicated


def test_a_prediction_always_lists_at_least_itself():
    state = one({1, 2}, part([1, 2], 1, [1, 2], 0), controller=2)
    prediction = predict(state, [Reassign("t", 0, (2, 1))])
    assert [alt.label for alt in prediction.alternatives] == ["as given"]
    built = Prediction(state=prediction.state, outcomes=prediction.outcomes, steps=prediction.steps)
    assert built.alternatives[0].state == prediction.state
    assert predict(state, []).alternatives[0].state == state


def test_known_dead_controller_orders_that_meet_in_one_state_are_listed_once():
    # {2,3} at once: failover removes 2 (-1, [3,1]) and 3 ([1]) then elects 1: +3.
    # {2} first: failover removes 2 and elects 3 (+2), then 3 dies: 1 leads (+1): the same state.
    state = cluster({1, 2, 3, 4}, {"t": {0: part([2, 3, 1], 2, [2, 3, 1], 7)}}, controller=2)
    prediction = predict(state, [BrokerFailure((2, 3))])
    assert table(prediction) == [("as given", ([2, 3, 1], 1, [1], 10, 0))]
    assert prediction.state.controller is None


def test_unknown_controller_may_be_one_of_the_dead():
    state = one({1, 2, 3, 4}, part([2, 3, 1], 2, [2, 3, 1], 7))
    labels = [alt.label for alt in predict(state, [BrokerFailure((2, 3))]).alternatives]
    assert labels[:2] == ["one BrokerChange {2,3}", "BrokerChange {2} then {3}"]
    # the dead controller's failover removes the dead leader before electing: +2 and more
    assert any(label.startswith("controller 2 among them") for label in labels)
    epochs = {alt.state.partition("t", 0).leader_epoch for alt in predict(state, [BrokerFailure((2, 3))]).alternatives}
    assert epochs == {8, 9, 10}


def test_followers_rejoining_between_events_is_a_separate_alternative():
    # A settled state that still lets a BrokerChange elect uncleanly: the override " true" enables
    # unclean in the LogConfig (ConfigDef trims) but sent no trigger (toBoolean does not trim), so
    # t-0 stays leaderless with ISR [1] (1 dead) although 2 and 3 live.  Any BrokerChange elects.
    state = one({2, 3, 4}, part([1, 2, 3], -1, [1], 4), controller=3,
                topic_config={"t": {"unclean.leader.election.enable": " true"}})
    assert table(predict(state, [BrokerFailure((2, 4))])) == [
        # one event: 2 is dead, so 3 is elected uncleanly: RECOVERING
        ("one BrokerChange {2,4}", ([1, 2, 3], 3, [3], 5, 1)),
        # {4} first elects 2 uncleanly; then 2 dies: 3 elected uncleanly again (+2) ...
        ("BrokerChange {4} then {2}", ([1, 2, 3], 3, [3], 6, 1)),
        # ... unless 3 rejoined 2's ISR in between: then the election is clean and recovered
        ("BrokerChange {4} then {2}, followers rejoining in between", ([1, 2, 3], 3, [3], 6, 0)),
    ]


def test_brokers_starting_together_may_register_in_either_order():
    state = cluster({6}, {"t": {0: new_part([4, 5])}}, controller=6)
    assert table(predict(state, [BrokerStartup((4, 5))])) == [
        ("one BrokerChange {4,5}", ([4, 5], 4, [4, 5], 0, 0)),
        ("BrokerChange {5} then {4}", ([4, 5], 5, [5, 4], 0, 0)),
    ]


def test_brokers_starting_an_empty_cluster():
    # The first to register becomes controller and fails over; with unclean on, who comes first leads.
    state = cluster(set(), {"t": {0: part([1, 2], -1, [1], 3)}}, topic_config=UNCLEAN_ON)
    prediction = predict(state, [BrokerStartup((1, 2))])
    assert table(prediction) == [
        ("one BrokerChange {1,2}", ([1, 2], 1, [1, 2], 4, 0)),
        # same partition state, but the controller is known to be 1
        ("BrokerChange {1} then {2}", ([1, 2], 1, [1, 2], 4, 0)),
        # 2 alone fails over: removal write for dead 1 (+1, ISR [1] kept), unclean election of 2 (+1)
        ("BrokerChange {2} then {1}", ([1, 2], 2, [2, 1], 5, 0)),
    ]
    assert [alt.state.controller for alt in prediction.alternatives] == [None, 1, 2]


def test_controlled_shutdown_of_a_broker_that_may_be_the_unknown_controller():
    # Leaderless partition with ISR [3] on a third broker: a failover rewrites it (+1), a plain exit does not.
    state = cluster({1, 2}, {"t": {0: part([1, 2], 1, [1, 2], 0)}, "u": {0: part([3], -1, [3], 5)}})
    prediction = predict(state, [ControlledShutdown(1)])
    assert [alt.label for alt in prediction.alternatives] == [
        "controlled shutdown of 1", "controlled shutdown of 1, the controller"]
    assert [lit(alt.state.partition("u", 0))[3] for alt in prediction.alternatives] == [5, 6]
    known = cluster({1, 2}, {"t": {0: part([1, 2], 1, [1, 2], 0)}}, controller=2)
    assert len(predict(known, [ControlledShutdown(1)]).alternatives) == 1


def test_several_events_branch_and_label_by_event():
    state = one({4, 5, 6}, part([4, 5], 4, [4, 5], 3), controller=6)
    prediction = predict(state, [BrokerFailure((4, 5)), BrokerStartup((4, 5))])
    labels = [alt.label for alt in prediction.alternatives]
    # event 1 has one outcome per branch here (4 leads iff its ISR is [4]): no label of its own
    assert labels == ["event 0: one BrokerChange {4,5}", "event 0: BrokerChange {4} then {5}"]
    assert all(len(alt.steps) == 2 for alt in prediction.alternatives)
    # ISR [4] comes back with 4 leading; ISR [5] with 5 leading
    leaders = {alt.state.partition("t", 0).leader for alt in prediction.alternatives}
    assert leaders == {4, 5}


def test_apply_event_alternatives_first_is_apply_event():
    state = one({4, 5, 6}, part([4, 5], 4, [4, 5], 3), controller=6)
    alternatives = apply_event_alternatives(state, BrokerFailure((4, 5)), 3)
    assert alternatives[0][1:] == apply_event(state, BrokerFailure((4, 5)), 3)
    assert all(o.event_index == 3 for _, _, outcomes in alternatives for o in outcomes)


def test_many_brokers_stay_bounded():
    brokers = set(range(1, 10))
    state = cluster(brokers, {"t": {p: part([p, p % 9 + 1], p, [p, p % 9 + 1], 0) for p in range(1, 10)}},
                    controller=9)
    prediction = predict(state, [BrokerFailure(tuple(range(1, 7)))])
    assert 1 <= len(prediction.alternatives) <= 3


# --- properties over random settled states -------------------------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.unit.oracle.test_properties import SETTINGS, check_invariants, cluster_states, events_for  # noqa: E402


@st.composite
def state_and_event(draw):
    state = draw(cluster_states())
    return state, draw(events_for(state))


@SETTINGS
@given(state_and_event())
def test_every_alternative_is_a_legal_distinct_state_and_the_first_is_apply_event(case):
    state, event = case
    alternatives = apply_event_alternatives(state, event)
    assert alternatives[0][1:] == apply_event(state, event)
    states = [after for _, after, _ in alternatives]
    assert all(a != b for i, a in enumerate(states) for b in states[i + 1:])
    for _, after, outcomes in alternatives:
        check_invariants(state, event, after, outcomes)
    # bounded: 2 x Fubini(3) orders, times (3 + 1) when the controller is unknown
    assert len(alternatives) <= 2 * 13 * 4
    prediction = predict(state, [event])
    if not any(after.rebalance_check_due for after in states):
        assert [alt.state for alt in prediction.alternatives] == states
    else:  # a failover's imbalance check runs after the step's last event, here this one
        assert not any(alt.state.rebalance_check_due for alt in prediction.alternatives)
        assert len(prediction.alternatives) <= len(states)


def test_matching_finds_the_alternative_an_observation_equals():
    state = one({4, 5, 6}, part([4, 5], 4, [4, 5], 3), controller=6)
    prediction = predict(state, [BrokerFailure((4, 5))])
    second = prediction.alternatives[1]
    assert prediction.matching(second.state) is second
    assert prediction.matching(prediction.state) is prediction.alternatives[0]
    assert prediction.matching(state) is None


def test_nothing_changes_when_no_named_broker_is_live():
    state = one({4, 5, 6}, part([4, 5], 4, [4, 5], 3), controller=6)
    prediction = predict(state, [BrokerFailure((7,))])
    assert [alt.label for alt in prediction.alternatives] == ["as given"]
    assert apply_event_alternatives(state, BrokerFailure((7,)))[0][0] == "no BrokerChange"
    assert prediction.state == state

"""The seeds' worked examples and questions, answered the Kafka 3.9 way (see oracle/README.md)."""

from __future__ import annotations

from kafka_chaos.oracle import BrokerFailure, BrokerStartup, Outcome, PreferredElection, Reassign, predict
from tests.unit.oracle.builders import T0, lit, one, part

UNCLEAN_ON = {"t": {"unclean.leader.election.enable": "true"}}


def test_oar_123_to_rar_456_table():
    """002 "onPartitionReassignment" / KafkaController.onPartitionReassignment's comment table.
    Broker 6 starts late so the in-between state can be seen."""
    state = one({1, 2, 3, 4, 5}, part([1, 2, 3], 1, [1, 2, 3], 0), controller=1)
    prediction = predict(state, [Reassign("t", 0, (4, 5, 6)), BrokerStartup((6,))])
    waiting, done = (step.partition(T0) for step in prediction.steps)
    # A1/A2: RS = TRS ++ (ORS - TRS) in that order (the seed's {1,2,3,4,5,6} is a set), epoch +1;
    # the live new replicas caught up and joined the ISR, 6 is still missing.
    assert lit(waiting) == ([4, 5, 6, 1, 2, 3], 1, [1, 2, 3, 4, 5], 1, 0)
    assert (waiting.adding_replicas, waiting.removing_replicas) == ((4, 5, 6), (1, 2, 3))
    # 6 starts: reassignment resumed (A again, +1), 6 joins, phase B: leader 4 (+1), 1, 2, 3 leave
    # the ISR one write each (+3), AR = {4,5,6}.
    assert lit(done) == ([4, 5, 6], 4, [4, 5, 6], 6, 0)
    assert (done.adding_replicas, done.removing_replicas) == ((), ())


def test_oar_to_rar_all_live_epoch_arithmetic():
    state = one({1, 2, 3, 4, 5, 6}, part([1, 2, 3], 1, [1, 2, 3], 0), controller=1)
    after = predict(state, [Reassign("t", 0, (4, 5, 6))]).state.partition(T0)
    assert lit(after) == ([4, 5, 6], 4, [4, 5, 6], 5, 0)  # A +1, B3 +1, B4 +3


def _all_down_in_order(topic_config=None):
    """RF 3, unclean as given; brokers 3, 2, 1 fail one after another (separate events)."""
    state = one({1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 0), controller=1, topic_config=topic_config)
    return predict(state, [BrokerFailure((3,)), BrokerFailure((2,)), BrokerFailure((1,))]).state


def test_all_replicas_down_the_last_isr_member_is_remembered():
    """003 Q4: ISR shrinks to the last survivor, which stays in the ISR with leader -1."""
    down = _all_down_in_order()
    assert lit(down.partition(T0)) == ([1, 2, 3], 1, [1], 2, 0)  # no controller left: nothing written
    assert down.live_brokers == frozenset()


def test_brokers_come_back_one_by_one_unclean_off():
    """003 Q3/Q4 with unclean off: only the last ISR member can lead; it leads whenever it returns."""
    down = _all_down_in_order()
    prediction = predict(down, [BrokerStartup((3,)), BrokerStartup((2,)), BrokerStartup((1,))])
    leaders = [step.partition(T0).leader for step in prediction.steps]
    assert leaders == [-1, -1, 1]
    assert [o.outcome for o in prediction.outcomes] == [Outcome.NO_REPLICA_ONLINE] * 2 + [Outcome.ELECTED]
    assert lit(prediction.state.partition(T0)) == ([1, 2, 3], 1, [1, 2, 3], 4, 0)


def test_brokers_come_back_one_by_one_unclean_on():
    """003 Q4 with unclean on: whoever comes back first leads (data loss), RECOVERING until others join."""
    down = _all_down_in_order(UNCLEAN_ON)
    prediction = predict(down, [BrokerStartup((3,)), BrokerStartup((2,)), BrokerStartup((1,))])
    first, second, third = (step.partition(T0) for step in prediction.steps)
    assert lit(first) == ([1, 2, 3], 3, [3], 4, 1)
    assert lit(second) == ([1, 2, 3], 3, [3, 2], 4, 0)
    assert lit(third) == ([1, 2, 3], 3, [3, 2, 1], 4, 0)
    assert prediction.outcomes[0].outcome is Outcome.UNCLEAN_ELECTED


def test_restart_does_not_return_leadership_preferred_election_does():
    """003 Q5: the restarted broker rejoins the ISR only; a preferred election gives it back."""
    state = one({1, 2, 3}, part([1, 2, 3], 1, [1, 2, 3], 0), controller=2)
    prediction = predict(state, [BrokerFailure((1,)), BrokerStartup((1,)), PreferredElection((T0,))])
    failed, back, preferred = (step.partition(T0) for step in prediction.steps)
    assert lit(failed) == ([1, 2, 3], 2, [2, 3], 1, 0)
    assert lit(back) == ([1, 2, 3], 2, [2, 3, 1], 1, 0)
    assert lit(preferred) == ([1, 2, 3], 1, [2, 3, 1], 2, 0)


def test_offline_replica_outside_isr_cannot_lead_without_unclean():
    """003 Q3: all replicas offline, a replica that was out of the ISR starts first."""
    state = one({9}, part([1, 2], -1, [1], 3), controller=9)
    assert predict(state, [BrokerStartup((2,))]).state.partition(T0).leader == -1
    state = one({9}, part([1, 2], -1, [1], 3), controller=9, topic_config=UNCLEAN_ON)
    assert predict(state, [BrokerStartup((2,))]).state.partition(T0).leader == 2

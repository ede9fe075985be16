"""Table tests: topic deletion (TopicDeletionManager), partition growth (processPartitionModifications)
and failed log directories (processLogDirEventNotification / replicasOnOfflineDirs), Kafka 3.9.

Epochs are worked by hand from the Scala (see the docstrings of ``WorkingController.resume_deletions``,
``add_partitions`` and ``on_log_dir_failure``); ``groupBy`` over brokers {1, 2} visits 1 then 2."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kafka_chaos.oracle import (
    AddPartitions,
    BrokerFailure,
    BrokerStartup,
    ClusterState,
    ControlledShutdown,
    DeleteTopic,
    LogDirFailure,
    Outcome,
    PreferredElection,
    Reassign,
    TopicPartition,
    apply_event,
    predict,
)
from kafka_chaos.oracle.jsonio import OracleInputError, parse_request, render_state
from tests.unit.oracle.builders import NEW, ONLINE, cluster, new_part, part

T0 = TopicPartition("t", 0)


def _z(p):
    """What the state znode and the topic znode show (the phase is controller memory)."""
    return (p.replicas, p.leader, p.isr, p.leader_epoch, p.leader_recovery_state)


def _queued(state: ClusterState, topic: str = "t") -> ClusterState:
    """``state`` with ``topic`` under /admin/delete_topics, as the runner would read it from ZooKeeper."""
    return ClusterState(state.live_brokers, state.topics, state.controller, state.config, frozenset({topic}))


# --- topic deletion ---------------------------------------------------------------------------


def test_delete_with_every_replica_online_removes_the_topic_and_its_config():
    state = cluster([1, 2, 3], {"t": {0: part([1, 2, 3], 1, [1, 2, 3], 4)}, "u": {0: part([2], 2, [2])}},
                    controller=1, topic_config={"t": {"retention.ms": "1"}})
    after, outcomes = apply_event(state, DeleteTopic("t"))
    assert set(after.topics) == {"u"} and not after.topics_being_deleted
    assert after.partition("u", 0) == state.partition("u", 0)
    assert outcomes == ()  # a deleted partition has no outcome


def test_delete_with_a_replica_down_waits_and_the_online_replicas_leave_the_isr_in_groupby_order():
    # OfflineReplica for 1 (leader -> -1, ISR [2], +1) then 2 (last member kept, +1); 3 is
    # ReplicaDeletionIneligible and, retried after the StopReplica answers, not in the ISR: no write.
    state = cluster([1, 2], {"t": {0: part([1, 2, 3], 1, [1, 2], 3)}}, controller=1)
    after, outcomes = apply_event(state, DeleteTopic("t"))
    assert after.topics_being_deleted == {"t"}
    p = after.partition(T0)
    assert (p.leader, p.isr, p.leader_epoch, p.replicas) == (-1, (2,), 5, (1, 2, 3))
    assert [o.outcome for o in outcomes] == [Outcome.NO_REPLICA_ONLINE]


def test_deletion_completes_when_the_down_replica_returns():
    state = cluster([1, 2], {"t": {0: part([1, 2, 3], 1, [1, 2], 3), 1: part([3, 1], 1, [1], 7)}}, controller=1)
    prediction = predict(state, [DeleteTopic("t"), BrokerStartup((3,))])
    pending, done = prediction.steps
    assert pending.topics_being_deleted == {"t"} and set(pending.topics["t"].partitions) == {0, 1}
    assert pending.partition("t", 1).leader == -1 and pending.partition("t", 1).leader_epoch == 8
    assert "t" not in done.topics and not done.topics_being_deleted
    assert len(prediction.alternatives) == 1


def test_the_last_isr_member_down_is_rewritten_by_the_retry():
    # ISR [3] with 3 down: the online replicas 1, 2 are not in the ISR (no write); the retry of
    # ReplicaDeletionIneligible -> OfflineReplica removes 3: last member kept, +1.
    state = cluster([1, 2], {"t": {0: part([1, 2, 3], -1, [3], 6)}}, controller=1)
    p = apply_event(state, DeleteTopic("t"))[0].partition(T0)
    assert (p.leader, p.isr, p.leader_epoch) == (-1, (3,), 7)


def test_every_replica_down_nothing_is_written_until_one_returns():
    state = cluster([1], {"t": {0: part([2, 3], -1, [2], 2)}}, controller=1)
    after = apply_event(state, DeleteTopic("t"))[0]
    assert _z(after.partition(T0)) == _z(state.partition(T0)) and after.topics_being_deleted == {"t"}
    still = apply_event(after, BrokerStartup((2,)))[0]  # 3 still down: 2 deleted, retry removes nothing new
    assert still.topics_being_deleted == {"t"} and still.partition(T0).leader == -1
    assert "t" not in apply_event(still, BrokerStartup((3,)))[0].topics


def test_delete_topic_disabled_drops_the_request():
    state = cluster([1, 2], {"t": {0: part([1, 2], 1, [1, 2])}}, controller=1, config={"delete.topic.enable": "false"})
    after = apply_event(state, DeleteTopic("t"))[0]
    assert after.topics == state.topics and not after.topics_being_deleted


def test_queued_topics_are_left_out_of_elections_failures_and_controlled_shutdown():
    state = _queued(cluster([1, 2], {"t": {0: part([1, 2, 3], -1, [2], 5)}, "u": {0: part([1, 2], 1, [1, 2])}},
                            controller=1))
    # onReplicasBecomeOffline: no OfflineReplica for queued topics, no election for them
    failed = apply_event(state, BrokerFailure((2,)))[0]
    assert _z(failed.partition(T0)) == _z(state.partition(T0))
    assert failed.partition("u", 0).isr == (1,)
    # doControlledShutdown skips them (KafkaController.scala lines 1385-1390)
    shut = apply_event(state, ControlledShutdown(2))[0]
    assert _z(shut.partition(T0)) == _z(state.partition(T0))
    # an admin election answers INVALID_TOPIC_EXCEPTION for them: nothing written
    after, outcomes = apply_event(state, PreferredElection((T0,)))
    assert _z(after.partition(T0)) == _z(state.partition(T0)) and outcomes[0].outcome is Outcome.NO_REPLICA_ONLINE
    # a reassignment answers UNKNOWN_TOPIC_OR_PARTITION (maybeTriggerPartitionReassignment)
    assert _z(apply_event(state, Reassign("t", 0, (1, 2)))[0].partition(T0)) == _z(state.partition(T0))


def test_a_failover_deletes_a_queued_topic_whose_replicas_are_all_online():
    state = _queued(cluster([1, 2, 3], {"t": {0: part([2, 3], -1, [2], 5)}, "u": {0: part([1, 2], 1, [1, 2])}},
                            controller=1))
    after = apply_event(state, BrokerFailure((1,)))[0]
    assert "t" not in after.topics and after.controller is None


def test_a_topic_being_reassigned_waits_for_the_reassignment():
    state = cluster([1, 2], {"t": {0: part([3, 1], 1, [1], 2, adding=[3], removing=[1])}}, controller=1)
    queued = apply_event(state, DeleteTopic("t"))[0]
    assert queued.topics_being_deleted == {"t"} and _z(queued.partition(T0)) == _z(state.partition(T0))


# --- partition growth ---------------------------------------------------------------------------


def test_added_partitions_with_replicas_online_are_initialised_at_epoch_0():
    state = cluster([1, 2, 3], {"t": {0: part([1, 2], 1, [1, 2], 3)}}, controller=1)
    after, outcomes = apply_event(state, AddPartitions("t", {1: (3, 1), 2: (2,)}))
    assert after.partition("t", 1) == part([3, 1], 3, [3, 1], 0)
    assert after.partition("t", 2) == part([2], 2, [2], 0)
    assert [(o.partition, o.outcome) for o in outcomes] == [(1, Outcome.ELECTED), (2, Outcome.ELECTED)]


def test_an_added_partition_whose_replicas_are_all_down_stays_new_until_one_starts():
    state = cluster([1], {"t": {0: part([1], 1, [1])}}, controller=1)
    after, outcomes = apply_event(state, AddPartitions("t", {1: (2, 3)}))
    assert after.partition("t", 1) == new_part([2, 3]) and after.partition("t", 1).phase is NEW
    assert outcomes[0].outcome is Outcome.NO_REPLICA_ONLINE
    started = apply_event(after, BrokerStartup((3,)))[0]
    assert started.partition("t", 1) == part([2, 3], 3, [3], 0, phase=ONLINE)


def test_partitions_added_to_a_queued_topic_are_restored_away():
    state = _queued(cluster([1], {"t": {0: part([1, 2], -1, [1], 4)}}, controller=1))
    assert set(apply_event(state, AddPartitions("t", {1: (1,)}))[0].topics["t"].partitions) == {0}


def test_adding_an_existing_partition_is_refused():
    state = cluster([1], {"t": {0: part([1], 1, [1])}}, controller=1)
    with pytest.raises(ValueError, match="already exists"):
        apply_event(state, AddPartitions("t", {0: (1,)}))


# --- failed log directories ----------------------------------------------------------------------


def test_a_leaders_directory_fails_the_isr_elects_without_it():
    state = cluster([1, 2, 3], {"t": {0: part([1, 2, 3], 1, [1, 2, 3], 4), 1: part([2, 1], 2, [2, 1], 9)}},
                    controller=1)
    after, outcomes = apply_event(state, LogDirFailure(1, (T0,)))
    # offline election: first online replica of AR in the ISR, ISR = online members (+1); 1 not in it
    # any more, so its OfflineReplica writes nothing
    assert after.partition(T0) == part([1, 2, 3], 2, [2, 3], 5)
    assert after.partition("t", 1) == state.partition("t", 1)  # on another directory
    assert after.offline_replicas == {1: frozenset({T0})}
    assert [(o.partition, o.outcome) for o in outcomes] == [(0, Outcome.ELECTED)]


def test_a_followers_directory_fails_it_leaves_the_isr_and_cannot_rejoin():
    state = cluster([1, 2, 3], {"t": {0: part([1, 2, 3], 1, [1, 2, 3], 4)}}, controller=1)
    after = apply_event(state, LogDirFailure(3, (T0,)))[0]
    assert after.partition(T0) == part([1, 2, 3], 1, [1, 2], 5)
    # a preferred election cannot bring leadership to it, the leader's failure skips it
    moved = apply_event(after, BrokerFailure((1,)))[0]
    assert moved.partition(T0).leader == 2 and moved.partition(T0).isr == (2,)


def test_the_only_replica_on_a_failed_directory_leaves_the_partition_offline():
    state = cluster([1, 2], {"t": {0: part([1], 1, [1], 2)}}, controller=1)
    after = apply_event(state, LogDirFailure(1, (T0,)))[0]
    assert (after.partition(T0).leader, after.partition(T0).isr, after.partition(T0).leader_epoch) == (-1, (1,), 3)


def test_a_restart_clears_the_brokers_offline_directories():
    # onBrokerFailure/onBrokerStartup remove replicasOnOfflineDirs(broker) (lines 574, 637)
    state = cluster([1, 2], {"t": {0: part([1, 2], 2, [2], 5)}}, controller=1)
    broken = apply_event(state, LogDirFailure(1, (T0,)))[0]
    assert broken.offline_replicas == {1: frozenset({T0})} and broken.partition(T0).isr == (2,)
    gone = apply_event(broken, BrokerFailure((1,)))[0]
    assert gone.offline_replicas == {}
    back = apply_event(gone, BrokerStartup((1,)))[0]
    assert set(back.partition(T0).isr) == {1, 2}


# --- the predict contract ----------------------------------------------------------------------


def test_predict_json_round_trips_the_new_state_fields():
    request = {
        "brokers": [1, 2], "controller": 1,
        "topics": {"t": {"partitions": {"0": {"replicas": [1, 2, 3], "leader": -1, "isr": [2], "leader_epoch": 5}}},
                   "u": {"partitions": {"0": {"replicas": [1, 2], "leader": 2, "isr": [2], "leader_epoch": 1}}}},
        "topics_being_deleted": ["t"],
        "offline_replicas": {"1": [{"topic": "u", "partition": 0}]},
        "events": [{"type": "add_partitions", "topic": "u", "replicas": {"1": [2]}},
                   {"type": "log_dir_failure", "broker": 2, "partitions": [{"topic": "u", "partition": 1}]},
                   {"type": "delete_topic", "topic": "u"}],
    }
    state, events = parse_request(json.loads(json.dumps(request)))
    assert state.topics_being_deleted == {"t"} and state.offline_replicas == {1: frozenset({TopicPartition("u", 0)})}
    assert [e.KIND for e in events] == ["add_partitions", "log_dir_failure", "delete_topic"]
    rendered = render_state(state)
    assert parse_request({**rendered, "events": []})[0] == state


@pytest.mark.parametrize("patch, field", [
    ({"topics_being_deleted": ["nope"]}, "topics_being_deleted.0"),
    ({"topics_being_deleted": "t"}, "topics_being_deleted"),
    ({"offline_replicas": {"3": [{"topic": "t", "partition": 0}]}}, "offline_replicas.3"),
    ({"offline_replicas": {"01": []}}, "offline_replicas.01"),
    ({"offline_replicas": {"2": [{"topic": "t", "partition": 0}]}}, "offline_replicas.2.0"),
    ({"events": [{"type": "add_partitions", "topic": "t", "replicas": {"0": [1]}}]}, "events.0.replicas.0"),
    ({"events": [{"type": "delete_topic", "topic": "x"}]}, "events.0.topic"),
    ({"events": [{"type": "log_dir_failure", "broker": 1}]}, "events.0.partitions"),
])
def test_predict_json_refuses_bad_new_fields(patch, field):
    request = {"brokers": [1, 2], "topics": {"t": {"partitions": {"0": {"replicas": [1], "leader": 1, "isr": [1]}}}},
               **patch}
    with pytest.raises(OracleInputError) as err:
        parse_request(request)
    assert err.value.field == field


def test_one_startup_resumes_every_queued_topic_with_a_replica_on_it():
    state = cluster([1, 2], {"a": {0: part([1, 3], 1, [1], 2)}, "b": {0: part([3, 2], 2, [2], 4)},
                             "c": {0: part([1, 4], 1, [1], 0)}}, controller=1)
    queued = predict(state, [DeleteTopic("a"), DeleteTopic("b"), DeleteTopic("c")]).state
    assert queued.topics_being_deleted == {"a", "b", "c"}
    after = apply_event(queued, BrokerStartup((3,)))[0]
    assert set(after.topics) == {"c"} and after.topics_being_deleted == {"c"}  # c waits for broker 4


# --- deleted replicas stay deleted through their broker's restart (controller memory) ----------
# Found by `kafka-chaos explore --seed 27003` (schedule 19): t queued for deletion while broker 8
# is down, so t-1 = [8, 6] keeps its ISR [8] and waits; broker 6's replicas were deleted when 6
# came back. A restart of 6 (controlled shutdown, then start) writes nothing for t: the deleted
# replicas stay ReplicaDeletionSuccessful (no OfflineReplica, OnlineReplica or ReplicaDeletionIneligible
# may follow it, ReplicaStateMachine.scala 3.9 lines 463-486), so onBrokerStartup's
# resumeDeletionForTopics finds nothing to delete again and no failed replica to retry: the dead
# replica's ISR removal is not written once more.
DELETION_WAITING = _queued(cluster([6, 9], {"t": {0: part([6, 9], -1, [9], 4), 1: part([8, 6], -1, [8], 4)}},
                                   controller=9))


def test_a_restart_of_a_broker_whose_replicas_were_deleted_writes_nothing_for_the_topic():
    after = predict(DELETION_WAITING, [ControlledShutdown(6), BrokerStartup((6,))]).state
    assert [_z(after.partition(TopicPartition("t", p))) for p in (0, 1)] == [
        _z(DELETION_WAITING.partition(TopicPartition("t", p))) for p in (0, 1)]
    assert after.topics_being_deleted == {"t"}


def test_the_controller_remembers_deleted_replicas_across_events_and_forgets_them_on_failover():
    down, _ = apply_event(DELETION_WAITING, ControlledShutdown(6))
    down, _ = apply_event(down, BrokerFailure((6,)))  # the broker exits after its controlled shutdown
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert down.deleted_offline_replicas == {(t0, 6), (t1, 6)}
    back, _ = apply_event(down, BrokerStartup((6,)))
    assert _z(back.partition(t1)) == _z(DELETION_WAITING.partition(t1))  # nothing deleted again, no retry
    # observed from ZooKeeper alone (no memory), the same start deletes 6's replicas and retries 8's
    forgotten = ClusterState(down.live_brokers, down.topics, down.controller, down.config, down.topics_being_deleted)
    retried, _ = apply_event(forgotten, BrokerStartup((6,)))
    assert retried.partition(t1).leader_epoch == 5
    # a new controller does not know what its predecessor deleted; with no broker left, no one does
    with_3 = ClusterState(down.live_brokers | {3}, down.topics, down.controller, down.config, down.topics_being_deleted,
                          deleted_offline_replicas=down.deleted_offline_replicas)
    assert apply_event(with_3, BrokerFailure((9,)))[0].deleted_offline_replicas == frozenset()
    assert apply_event(down, BrokerFailure((9,)))[0].deleted_offline_replicas == frozenset()


def test_a_failover_that_finds_a_deletion_ineligible_forgets_its_deleted_replicas_and_the_resume_rewrites_them():
    """explore-27010-20 (seed 27010, 3 brokers [3, 9, 10]): d queued by controller 10 while 9 was
    cut off; 3's replica of d-0 was deleted (ISR removal written, epoch 4). Controller 10 killed:
    3 takes over and finds d ineligible (9 offline), its replica states start without
    ReplicaDeletionSuccessful. 10 starts again: resumeDeletionForTopics → onPartitionDeletion takes
    every online replica not yet deleted offline — 3's of d-0 too — and writes both ISR removals
    (observed: d-0 4 → 5, d-1 3 → 4)."""
    d0, d1 = TopicPartition("d", 0), TopicPartition("d", 1)
    queued = _queued(cluster([3, 10], {"d": {0: part([3, 9], -1, [3], 4), 1: part([9, 10], -1, [10], 2)}},
                             controller=10), "d")
    failed_over, _ = apply_event(queued, BrokerFailure((10,)))
    assert failed_over.deletions_forgotten == {"d"}
    failed_over = dataclasses.replace(failed_over, controller=3)  # who won the election: observed
    assert (failed_over.partition(d0).leader_epoch, failed_over.partition(d1).leader_epoch) == (4, 3)
    back, _ = apply_event(failed_over, BrokerStartup((10,)))
    assert (back.partition(d0).leader_epoch, back.partition(d1).leader_epoch) == (5, 4)
    assert back.deletions_forgotten == frozenset()
    # Without the failover the controller remembers 3's replica deleted: only d-1 is written.
    same, _ = apply_event(dataclasses.replace(failed_over, deletions_forgotten=frozenset()), BrokerStartup((10,)))
    assert (same.partition(d0).leader_epoch, same.partition(d1).leader_epoch) == (4, 4)
    with pytest.raises(ValueError, match="not being deleted"):
        dataclasses.replace(queued, deletions_forgotten=frozenset({"t"}))

"""Rules that changed between Kafka releases (oracle/README.md, "Releases"): the same event on the
same state, predicted for each release, as that release's controller source says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.oracle import AutoRebalance, BrokerFailure, ClusterState, Outcome, Release, TopicPartition, apply_event, predict
from kafka_chaos.oracle.config import leader_recovery_supported
from kafka_chaos.oracle.controller import WorkingController
from kafka_chaos.oracle.release import NEWEST, ProtocolVersion, protocol_version
from tests.unit.oracle.builders import cluster, lit, one, part, run

RELEASES = ["2.4.1", "2.5.1", "2.6.3", "2.7.2", "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2",
            "3.7.2", "3.8.1", "3.9.2"]


def on(release: str, state: ClusterState) -> ClusterState:
    return replace(state, release=Release.parse(release))


# --- the release and the protocol version ------------------------------------------------------

@pytest.mark.parametrize("text, release", [("3.9.2", Release(3, 9, 2)), ("2.4.1", Release(2, 4, 1)),
                                           ("3.4", Release(3, 4, 0)), (" 2.8.2 ", Release(2, 8, 2))])
def test_release_parses(text: str, release: Release) -> None:
    assert Release.parse(text) == release
    assert str(release) in text or str(release) == "3.4.0"


@pytest.mark.parametrize("text", ["3", "3.9.2.1", "latest", "3.x.1", ""])
def test_a_release_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Release.parse(text)


@pytest.mark.parametrize("configured, release, expected", [
    (None, "3.9.2", ProtocolVersion(3, 9, 0, 99)),   # the release's own newest IV
    (None, "2.4.1", ProtocolVersion(2, 4, 0, 99)),
    ("3.1", "3.9.2", ProtocolVersion(3, 1, 0, 99)),  # "X.Y" is X.Y's newest IV (MetadataVersion.fromVersionString)
    ("3.2-IV0", "3.9.2", ProtocolVersion(3, 2, 0, 0)),
    ("2.7-IV1", "2.8.2", ProtocolVersion(2, 7, 0, 1)),
    ("0.10.2-IV0", "2.4.1", ProtocolVersion(0, 10, 2, 0)),
    ("0.10.2", "2.4.1", ProtocolVersion(0, 10, 2, 99)),
    ("nonsense", "3.4.1", ProtocolVersion(3, 4, 0, 99)),  # Kafka would not have started: the release's own
])
def test_protocol_version(configured: str | None, release: str, expected: ProtocolVersion) -> None:
    config = {} if configured is None else {"inter.broker.protocol.version": configured}
    assert protocol_version(config, Release.parse(release)) == expected


# --- KIP-704 leader recovery (3.2, IBP >= 3.2-IV0) ------------------------------------------------

@pytest.mark.parametrize("release", RELEASES)
def test_unclean_election_writes_recovering_from_3_2_on(release: str) -> None:
    # ZkPartitionStateMachine.isLeaderRecoverySupported (3.2.0+): IBP >= 3.2-IV0; before 3.2
    # Election.leaderForOffline has no recovery state at all (Election.scala 2.4.1 vs 3.2.0).
    state = on(release, one({1, 2}, part([1, 2], 1, [1], 4), controller=2,
                            topic_config={"t": {"unclean.leader.election.enable": "true"}}))
    after, outcome, _ = run(state, BrokerFailure((1,)))
    recovering = 1 if Release.parse(release).at_least(3, 2) else 0
    assert lit(after) == ([1, 2], 2, [2], 5, recovering)
    assert outcome is Outcome.UNCLEAN_ELECTED


@pytest.mark.parametrize("ibp, recovering", [("3.1", False), ("3.1-IV0", False), ("3.2-IV0", True), ("3.2", True),
                                             ("3.9-IV0", True), ("2.8", False), ("0.10.2", False)])
def test_an_older_protocol_version_on_3_9_writes_no_recovery_state(ibp: str, recovering: bool) -> None:
    assert leader_recovery_supported({"inter.broker.protocol.version": ibp}, NEWEST) is recovering


# --- auto-rebalance: KAFKA-9866 (2.6) and KAFKA-10149 (3.4) -------------------------------------

def _imbalanced(adding: tuple[int, ...] = ()) -> ClusterState:
    """t-0 prefers 1 but 2 leads it; u-0 is being reassigned (adding replicas) when ``adding``."""
    topics = {"t": {0: part([1, 2], 2, [2, 1], 3)}, "u": {0: part([2, 3, *adding], 2, [2, 3], 1, adding=adding)}}
    return cluster({1, 2, 3}, topics, controller=3, config={"leader.imbalance.per.broker.percentage": "0"})


@pytest.mark.parametrize("release", RELEASES)
def test_auto_rebalance_waits_for_reassignments_before_3_4(release: str) -> None:
    # KafkaController.checkAndTriggerAutoLeaderRebalance: "partitionsBeingReassigned.isEmpty" is a
    # candidate condition in 3.3.2 and gone in 3.4.1 (KAFKA-10149).
    after, outcomes = apply_event(on(release, _imbalanced(adding=(4,))), AutoRebalance())
    moved = Release.parse(release).at_least(3, 4)
    assert after.partition("t", 0).leader == (1 if moved else 2)
    assert [o.outcome for o in outcomes if o.topic == "t"] == ([Outcome.ELECTED] if moved else [])


@pytest.mark.parametrize("release", RELEASES)
def test_auto_rebalance_without_reassignments_moves_on_every_release(release: str) -> None:
    after, _ = apply_event(on(release, _imbalanced()), AutoRebalance())
    assert after.partition("t", 0).leader == 1


@pytest.mark.parametrize("release, candidate", [("2.4.1", True), ("2.5.1", True), ("2.6.3", False), ("3.9.2", False)])
def test_a_live_preferred_replica_outside_the_isr_is_a_candidate_before_2_6(release: str, candidate: bool) -> None:
    # 2.5.1: candidates filter on isReplicaOnline(leaderBroker, tp); 2.6.0 on
    # canPreferredReplicaBeLeader (live and in the ISR), KAFKA-9866. Before, the election fails
    # (leaderForPreferredReplica) and writes nothing: the state is the same either way.
    state = on(release, cluster({1, 2}, {"t": {0: part([1, 2], 2, [2], 3)}}, controller=2))
    controller = WorkingController(state)
    assert controller.auto_rebalance_candidate(TopicPartition("t", 0), 1) is candidate
    assert controller.handle_online_state_changes([TopicPartition("t", 0)] if candidate else [], _preferred()) == (
        {TopicPartition("t", 0): False} if candidate else {})


def _preferred():  # type: ignore[no-untyped-def]
    from kafka_chaos.oracle.controller import Strategy

    return Strategy.PREFERRED


# --- predict takes the release ------------------------------------------------------------------

def test_predict_takes_the_release_and_carries_it_through_every_state() -> None:
    state = one({1, 2}, part([1, 2], 1, [1], 4), controller=2, topic_config={"t": {"unclean.leader.election.enable": "true"}})
    old = predict(state, [BrokerFailure((1,))], release=Release(3, 1, 2))
    new = predict(state, [BrokerFailure((1,))])
    assert old.state.release == Release(3, 1, 2) and new.state.release == NEWEST
    assert (old.state.partition("t", 0).leader_recovery_state, new.state.partition("t", 0).leader_recovery_state) == (0, 1)

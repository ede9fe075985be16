"""The KRaft model on Kafka 3.6.x (3.7.x and 3.8.x: ``test_kraft_releases_3_7_3_8.py``): a table per rule that differs from 3.9, each row naming the
3.6.1 source (``git show 3.6.1:<path>``) and the 3.9 source (branch 3.9, c821449fb7c1), files under
``metadata/src/main/java/org/apache/kafka/controller/`` unless said otherwise; the refusals; and
Hypothesis properties over 3.6 releases.  3.6.0 and 3.6.2 have the same controller package as
3.6.1 (``git diff --stat 3.6.0 3.6.2 -- metadata/src/main/java/org/apache/kafka/controller`` is
empty); where they differ elsewhere the rows say so."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.oracle import (
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ClusterState,
    ControlledShutdown,
    LogDirFailure,
    Outcome,
    PartitionState,
    Reassign,
    TopicConfigChange,
    TopicState,
    UncleanElection,
    predict,
)
from kafka_chaos.oracle.jsonio import OracleInputError, parse_request
from kafka_chaos.oracle.kraft import builder, migration
from kafka_chaos.oracle.kraft import config as kcfg
from kafka_chaos.oracle.kraft.interleavings import MODELLED_LINES, _event_plans
from kafka_chaos.oracle.release import ProtocolVersion, Release
from kafka_chaos.oracle.state import NO_LEADER
from tests.unit.oracle.test_kraft import (
    SETTINGS,
    T0,
    UNCLEAN,
    acceptable_of,
    kp,
    kraft,
    kraft_events,
    kraft_states,
    regs,
    walk_checking_invariants,
)

R360, R361, R362, R381, R392 = Release(3, 6, 0), Release(3, 6, 1), Release(3, 6, 2), Release(3, 8, 1), Release(3, 9, 2)
MIGRATION = "zookeeper.metadata.migration.enable"
ZK_BROKERS = "oracle.migrating.zk.brokers"
MIG = {MIGRATION: "true"}


def at(state: ClusterState, release: Release, **config: str) -> ClusterState:
    return dataclasses.replace(state, release=release, config={**state.config, **config})


def after(state: ClusterState, event: object) -> dict[int, tuple]:
    return regs(predict(state, [event]).state)  # type: ignore[list-item]


# --- releases and metadata versions --------------------------------------------------------------

def test_3_6_to_3_9_are_modelled_and_3_5_and_earlier_are_refused() -> None:
    # 3.7.x and 3.8.x: tests/unit/oracle/test_kraft_releases_3_7_3_8.py
    assert MODELLED_LINES == ((3, 6), (3, 7), (3, 8), (3, 9), (4, 0), (4, 1), (4, 2), (4, 3), (4, 4))
    state = kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))})
    for release in (Release(3, 5, 2), Release(3, 4, 1), Release(2, 8, 2), Release(4, 5, 0)):
        with pytest.raises(ValueError, match=r"covers Kafka 3\.6\.x, 3\.7\.x, 3\.8\.x, 3\.9\.x and 4\.0\.x-4\.4\.x; "
                                             r"release .* is not modelled"):
            predict(at(state, release), [BrokerFailure((2,))])
    for release in (R360, R361, R362, Release(3, 7, 2), R381, R392):
        assert predict(at(state, release), [BrokerFailure((2,))]).state.partition(T0).isr == (1,)


def test_json_refuses_3_5_and_takes_3_6() -> None:
    with pytest.raises(OracleInputError) as error:
        parse_request({"mode": "kraft", "kafka_version": "3.5.2", "brokers": [1]})
    assert error.value.field == "kafka_version" and "3.6.x, 3.7.x, 3.8.x, 3.9.x and 4.0.x-4.4.x" in str(error.value)
    state, _ = parse_request({"mode": "kraft", "kafka_version": "3.6.1", "brokers": [1]})
    assert state.release == R361


METADATA_VERSION_ROWS = [
    # (release, config value, expected MV)
    # 3.6.x has no LATEST_PRODUCTION: kafka-storage format uses MetadataVersion.latest() (StorageTool.scala
    # 3.6.1 line 148) = IBP_3_6_IV2, the last constant (MetadataVersion.java 3.6.1 lines 186, 499-501)
    (R360, None, ProtocolVersion(3, 6, 0, 2)),
    (R361, None, ProtocolVersion(3, 6, 0, 2)),
    (R362, None, ProtocolVersion(3, 6, 0, 2)),
    # 3.7.x LATEST_PRODUCTION = IBP_3_7_IV4 (3.7.0 line 231), 3.8.x IBP_3_8_IV0 (3.8.0 line 239)
    (Release(3, 7, 1), None, ProtocolVersion(3, 7, 0, 4)),
    (R381, None, ProtocolVersion(3, 8, 0, 0)),
    # 3.9 LATEST_PRODUCTION = IBP_3_9_IV0 (3.9 line 247)
    (R392, None, ProtocolVersion(3, 9, 0, 0)),
    # the migration's MV equals the ZK brokers' IBP, e.g. 3.6-IV2 on 3.6.1
    (R361, "3.6-IV2", ProtocolVersion(3, 6, 0, 2)),
    (R361, "3.5-IV2", ProtocolVersion(3, 5, 0, 2)),
]


@pytest.mark.parametrize("release, value, expected", METADATA_VERSION_ROWS)
def test_metadata_version_default(release, value, expected) -> None:
    config = {} if value is None else {"metadata.version": value}
    assert kcfg.metadata_version(config, release) == expected


@pytest.mark.parametrize("value", ["3.7-IV2", "3.6-IV3", "3.9-IV0", "4.0-IV0"])
def test_a_metadata_version_3_6_does_not_know_is_refused(value) -> None:
    # MetadataVersion.java 3.6.1: the enum ends at IBP_3_6_IV2 (line 186)
    state = at(kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))}), R361, **{"metadata.version": value})
    with pytest.raises(ValueError, match="unknown to Kafka 3.6.1"):
        predict(state, [BrokerFailure((2,))])
    # "3.6" names 3.6's newest IV, which 3.6 knows
    predict(at(state, R361, **{"metadata.version": "3.6"}), [BrokerFailure((2,))])
    if value != "4.0-IV0":  # 3.9.x knows 4.0-IV0, which supports ELR: refused (test_kraft_releases_3_7_3_8.py)
        predict(at(state, R392), [BrokerFailure((2,))])


# --- 1. the ISR-shrink bump on the target ISR (KAFKA-16624, 3.8.0) --------------------------------

BUILDER_ROWS = [
    # (release flag, bump on, partition, target ISR, expected (leader, isr, le, pe) or None)
    # 3.6.1 PartitionChangeBuilder.java 289-301, called at 333 before the ISR is set (335-338): an
    # empty target ISR is a shrink; the record sets leader -1 again (merge: leader epoch +1)
    (True, True, kp((1, 2), NO_LEADER, (1,), 4, 9), (), (NO_LEADER, (1,), 5, 10)),
    # 3.9 396-423, called at 471 after the ISR (461-469, an empty ISR not written): no ISR field, no bump
    (False, True, kp((1, 2), NO_LEADER, (1,), 4, 9), (), None),
    # without the bump (MV >= 3.6-IV0, no migration) neither writes anything
    (True, False, kp((1, 2), NO_LEADER, (1,), 4, 9), (), None),
    # a non-empty shrink: both bump once (3.6.1 line 296; 3.9 lines 414-421)
    (True, True, kp((1, 2, 3), 1, (1, 2, 3), 4, 9), (1, 3), (1, (1, 3), 5, 10)),
    (False, True, kp((1, 2, 3), 1, (1, 2, 3), 4, 9), (1, 3), (1, (1, 3), 5, 10)),
    # an expansion never bumps (3.6.1 comment lines 281-284)
    (True, True, kp((1, 2, 3), 1, (1, 3), 4, 9), (1, 3, 2), (1, (1, 3, 2), 4, 10)),
]


@pytest.mark.parametrize("reads_target, bump, p, target, expected", BUILDER_ROWS)
def test_isr_shrink_bump_reads_the_target_isr_before_3_8(reads_target, bump, p, target, expected) -> None:
    result = builder.change(p, acceptable_of(1, 2, 3), target_isr=target, bump_leader_epoch_on_isr_shrink=bump,
                            isr_shrink_bump_reads_target_isr=reads_target)
    got = None if result is None else (result[0].leader, result[0].isr, result[0].leader_epoch,
                                       result[0].partition_epoch)
    assert got == expected


@pytest.mark.parametrize("release, expected", [(R360, True), (R361, True), (R362, True), (Release(3, 7, 1), True),
                                               (Release(3, 8, 0), False), (R392, False)])
def test_isr_shrink_bump_key(release, expected) -> None:
    # KAFKA-16624, commit a3f24149905: first in 3.8.0
    assert kcfg.isr_shrink_bump_reads_target_isr(release) is expected


CONTROLLED_SHUTDOWN_ROWS = [
    # (release, config, expected t-0 after ControlledShutdown(1): (replicas, leader, isr, le, pe, recovery))
    # handleBrokerInControlledShutdown (3.6.1 lines 1300-1310): leader 1 leaves, ISR [1] kept (-1, +1 / +1);
    # then SHUTDOWN_NOW -> handleBrokerFenced (3.6.1 lines 1226-1243, 1436-1437): target ISR [] -> in
    # migration mode (3.6.1 line 291, zkMigrationEnabled) the useless record: +1 / +1 again
    (R361, MIG, ((1,), NO_LEADER, (1,), 6, 12, 0)),
    (R360, MIG, ((1,), NO_LEADER, (1,), 6, 12, 0)),
    (R362, MIG, ((1,), NO_LEADER, (1,), 6, 12, 0)),
    # 3.9: triggerLeaderEpochBumpForIsrShrinkIfNeeded reads record.isr() (lines 414-417): no record
    (R392, MIG, ((1,), NO_LEADER, (1,), 5, 11, 0)),
    # MV below 3.6-IV0 bumps on every shrink too (MetadataVersion.java 3.6.1 lines 274-276)
    (R361, {"metadata.version": "3.5-IV2"}, ((1,), NO_LEADER, (1,), 6, 12, 0)),
    (R392, {"metadata.version": "3.5-IV2"}, ((1,), NO_LEADER, (1,), 5, 11, 0)),
    # no bump at all (3.6-IV2, no migration): the same in both
    (R361, {}, ((1,), NO_LEADER, (1,), 5, 11, 0)),
    # controlled.shutdown.enable=false (KafkaServer.scala 3.6.1 line 846): the fence alone, one pass
    (R361, {**MIG, "controlled.shutdown.enable": "false"}, ((1,), NO_LEADER, (1,), 5, 11, 0)),
]


@pytest.mark.parametrize("release, config, expected", CONTROLLED_SHUTDOWN_ROWS)
def test_controlled_shutdown_of_the_last_isr_member(release, config, expected) -> None:
    state = at(kraft({1, 2}, {0: kp((1,), 1, (1,), 4, 10), 1: kp((1, 2), 2, (2, 1), 3, 7)}), release, **config)
    result = after(state, ControlledShutdown(1))
    assert result[0] == expected
    # a partition it follows: one record either way (+1 leader epoch only with the bump)
    assert result[1][:3] == ((1, 2), 2, (2,)) and result[1][4] == 8


# --- 2. unclean.leader.election.enable is not read before 3.9 (KAFKA-12670) ----------------------

def test_unclean_config_is_ignored_before_3_9() -> None:
    # ConfigurationControlManager.java 3.6.1 lines 478-480: return false; 3.9 lines 511-518 parse it
    state = kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1,), 4, 9)}, topic_config={UNCLEAN: "true"})
    # generateLeaderAndIsrUpdates (3.6.1 lines 1759-1761; 3.9 lines 1941-1943): UNCLEAN only in 3.9
    # (then 3 rejoins the unclean leader 2)
    assert after(at(state, R392), BrokerFailure((1,)))[0][:4] == ((1, 2, 3), 2, (2, 3), 5)
    assert after(at(state, R361), BrokerFailure((1,)))[0][:4] == ((1, 2, 3), NO_LEADER, (1,), 5)
    assert kcfg.unclean_leader_election_enabled({}, {UNCLEAN: "true"}, R381) is False
    assert kcfg.unclean_leader_election_enabled({}, {UNCLEAN: "true"}, Release(3, 9, 0)) is True


def test_topic_config_change_has_no_periodic_unclean_check_before_3_9() -> None:
    # maybeElectUncleanLeaders: absent in 3.6.1, 3.9 lines 1684-1720 (QuorumController 1406-1443)
    state = kraft({2, 3}, {0: kp((1, 2, 3), NO_LEADER, (1,), 4, 9)})
    change = TopicConfigChange("t", {UNCLEAN: "true"})
    assert [p.label for p in _event_plans(at(state, R392), change)] == [
        "before the unclean election check", "after the unclean election check"]
    assert len(_event_plans(at(state, R361), change)) == 1
    alternatives = predict(at(state, R361), [change]).alternatives
    assert len(alternatives) == 1 and regs(alternatives[0].state)[0][1] == NO_LEADER
    assert {regs(a.state)[0][1] for a in predict(at(state, R392), [change]).alternatives} == {NO_LEADER, 2}


def test_admin_unclean_election_works_on_3_6() -> None:
    # electLeader with ElectionType.UNCLEAN (3.6.1 lines 1385-1411): the builder is UNCLEAN whatever the config
    state = at(kraft({2, 3}, {0: kp((1, 2, 3), NO_LEADER, (1,), 4, 9)}), R361)
    prediction = predict(state, [UncleanElection((T0,))])
    assert regs(prediction.state)[0][:4] == ((1, 2, 3), 2, (2, 3), 5)
    assert prediction.outcomes[0].outcome is Outcome.UNCLEAN_ELECTED


# --- 3. reassignment completion (KAFKA-15665, 3.8.0) ----------------------------------------------

REASSIGNMENT_ROWS = [
    # (release, target, expected t-0: (replicas, leader, isr, le, pe, recovery), adding, removing)
    # replicas [1,2,3], leader 1, ISR [1,3], broker 2 fenced.  [1,2,3] -> [1,2,4]: removing [3], adding [4].
    # 3.6.1 PartitionReassignmentReplicas.java 123-125: done once 4 is in the ISR (2 need not be):
    # start (+0/+1), 4 joins and completes (replica set shrinks: +1/+1)
    (R361, (1, 2, 4), (((1, 2, 4), 1, (1, 4), 5, 11, 0), (), ())),
    (R362, (1, 2, 4), (((1, 2, 4), 1, (1, 4), 5, 11, 0), (), ())),
    # 3.9 lines 97-126 (containsAll(newTargetReplicas)): waits for 2 as well; 4 joins (+0/+1)
    (R392, (1, 2, 4), (((1, 2, 4, 3), 1, (1, 3, 4), 4, 11, 0), (4,), (3,))),
    # [1,2,3] -> [1,2]: removing [3], nothing added. 3.6.1: ISR minus removing = [1], non-empty -> done
    # at once (changePartitionReassignment 3.6.1 lines 1910-1940): +1/+1
    (R361, (1, 2), (((1, 2), 1, (1,), 5, 10, 0), (), ())),
    # 3.9: [1,2] is not in ISR [1]: only the removing list is written (+0/+1), done when 2 is back
    (R392, (1, 2), (((1, 2, 3), 1, (1, 3), 4, 10, 0), (), (3,))),
    # the same in both: a reassignment that adds replicas does not bump the leader epoch at its start
    # (3.6.1 lines 293-295 and 3.9 lines 378-388 both bump only for a shrinking replica set); 6 is
    # not running, so it stays started (+0/+1)
    (R361, (1, 2, 3, 6), (((1, 2, 3, 6), 1, (1, 3), 4, 10, 0), (6,), ())),
    (R392, (1, 2, 3, 6), (((1, 2, 3, 6), 1, (1, 3), 4, 10, 0), (6,), ())),
    # ... and both complete it with one bump when the replica set shrinks: 2 leaves, 4 and 5 join
    (R361, (1, 3, 4, 5), (((1, 3, 4, 5), 1, (1, 3, 4, 5), 5, 12, 0), (), ())),
    (R392, (1, 3, 4, 5), (((1, 3, 4, 5), 1, (1, 3, 4, 5), 5, 12, 0), (), ())),
]


@pytest.mark.parametrize("release, target, expected", REASSIGNMENT_ROWS)
def test_reassignment_completion(release, target, expected) -> None:
    state = at(kraft({1, 3, 4, 5}, {0: kp((1, 2, 3), 1, (1, 3), 4, 9)}), release)
    p = predict(state, [Reassign("t", 0, target)]).state.partition(T0)
    assert ((p.replicas, p.leader, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state),
            p.adding_replicas, p.removing_replicas) == expected


@pytest.mark.parametrize("release, expected", [
    # 3.6.2: uncleanLeaderElectionEnabledForTopic is false whatever the topic says
    # (ConfigurationControlManager.java 3.6.1 lines 478-480), so an unclean revert is refused
    # (cancelPartitionReassignment 3.6.2 lines 1850-1862): INVALID_REPLICA_ASSIGNMENT, nothing written
    (R362, (((3, 1), 3, (3,), 2, 6, 0), Outcome.REQUEST_FAILED)),
    # 3.9.2 reads the topic's setting: the revert is written with ISR [1]; 1 being fenced, leaderless
    (R392, (((1,), -1, (1,), 3, 7, 0), Outcome.NO_REPLICA_ONLINE)),
])
def test_an_unclean_revert_needs_the_topics_unclean_election_from_3_9(release, expected) -> None:
    state = at(kraft({3}, {0: kp((3, 1), 3, (3,), 2, 6, adding=(3,), removing=(1,))},
                     topic_config={UNCLEAN: "true"}), release)
    prediction = predict(state, [CancelReassignment("t", 0)])
    p = prediction.state.partition(T0)
    assert ((p.replicas, p.leader, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state),
            prediction.outcomes[0].outcome) == expected


@pytest.mark.parametrize("release", [R362, R392])
def test_a_clean_revert_is_the_same_in_3_6_and_3_9(release) -> None:
    # the same PartitionReassignmentRevert and builder targets in both (3.6.2 lines 1863-1876 with
    # clusterControl::isActive, 3.9.2 lines 2080-2096 with a LeaderAcceptor)
    state = at(kraft({1, 2}, {0: kp((3, 1, 2), 2, (2, 1), 4, 11, adding=(3,), removing=(2,))}), release)
    assert after(state, CancelReassignment("t", 0)) == {0: ((1, 2), 2, (2, 1), 5, 12, 0)}


def test_reassignment_completion_in_the_builder() -> None:
    # in progress: replicas [1,2,4,3], adding [4], removing [3]; ISR [1,3] + 4 -> [1,3,4]; 2 not in it
    p = kp((1, 2, 4, 3), 1, (1, 3), 4, 10, adding=(4,), removing=(3,))
    old = builder.build(p, acceptable_of(1, 3, 4), target_isr=(1, 3, 4), reassignment_completes_when_adding_in_isr=True)
    new = builder.build(p, acceptable_of(1, 3, 4), target_isr=(1, 3, 4))
    assert old is not None and (old.replicas, old.isr, old.adding_replicas, old.removing_replicas) == (
        (1, 2, 4), (1, 4), (), ())
    assert old.leader == 1  # the replica set shrank: same leader written, leader epoch +1
    assert new is not None and (new.replicas, new.isr, new.adding_replicas, new.leader) == (None, (1, 3, 4), None, None)


# --- 4. no directories before 3.7 ----------------------------------------------------------------

def test_log_dir_failure_of_a_kraft_broker_is_refused_on_3_6() -> None:
    state = at(kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))}), R361)
    with pytest.raises(ValueError, match="never learns of a failed directory before 3.7"):
        predict(state, [LogDirFailure(2, (T0,))])


def test_unassigned_directories_are_refused_on_3_6() -> None:
    # PartitionRegistration.java 3.6.1 lines 159-188: no directories; MIGRATING ones are 3.7+
    part = dataclasses.replace(kp((1, 2), 1, (1, 2), 1, 3), unassigned_dirs=(2,))
    state = at(kraft({1, 2}, {0: part}, config={**MIG, ZK_BROKERS: "2"}), R361)
    with pytest.raises(ValueError, match="no directories"):
        predict(state, [BrokerFailure((1,))])
    # 3.9: the AssignReplicasToDirs of a migrated broker's first KRaft start (+1 partition epoch)
    down = at(kraft({1}, {0: dataclasses.replace(kp((1, 2), 1, (1,), 1, 3), unassigned_dirs=(2,))},
                    config={**MIG, ZK_BROKERS: "2"}), R392)
    assert regs(predict(down, [BrokerStartup((2,), kraft_brokers=(2,))]).state)[0][4] == 5


def test_a_zookeeper_broker_started_as_kraft_on_3_6_writes_no_directory_record() -> None:
    state = at(kraft({1}, {0: kp((1, 2), 1, (1,), 1, 3)}, config={**MIG, ZK_BROKERS: "2"}), R361)
    # only the ISR rejoin (+1): no handleAssignReplicasToDirs before 3.7
    assert regs(predict(state, [BrokerStartup((2,), kraft_brokers=(2,))]).state)[0] == (
        (1, 2), 1, (1, 2), 1, 4, 0)


# --- 5. a migrating ZooKeeper broker's failed log directory ----------------------------------------

@pytest.mark.parametrize("release", [R360, R361, R362, R392])
def test_zookeeper_broker_log_dir_failure_halts_it(release) -> None:
    # 3.6.1: one log dir in migration mode (KafkaConfig.scala 2376) -> LogManager.scala 214-219 halts;
    # 3.9: ReplicaManager.scala 2507-2511 halts. Either way its session expires: a fence.
    state = at(kraft({1, 2}, {0: kp((1, 2), 2, (2, 1), 3, 7)}, config={**MIG, ZK_BROKERS: "1,2"}), release)
    assert after(state, LogDirFailure(2, (T0,))) == after(state, BrokerFailure((2,)))
    assert after(state, LogDirFailure(2, (T0,)))[0][:3] == ((1, 2), 1, (1,))


# --- 6. KAFKA-16121 is the ZooKeeper broker's, not the controller's ----------------------------------

def hybrid(release: Release, leader: int = 1, **extra: str) -> ClusterState:
    return at(kraft({1, 2, 3}, {0: kp((1, 2), leader, (leader, 3 - leader), 2, 5)},
                    config={**MIG, ZK_BROKERS: "1,2,3", **extra}), release)


REASSIGN_ROWS = [
    # (target, expected t-0 (replicas, leader, isr, le, pe, recovery)): the controller package is
    # the same in 3.6.0-3.6.2 (commit 7486223d9e3 fixed ReplicaManager.scala only), so 3.6.1 is
    # predicted as the controller decides: adding 3 bumps nothing (PartitionChangeBuilder.java
    # 3.6.1 lines 293-295) and completes once 3 joins; a shrink to [1] completes at once with a bump.
    ((1, 2, 3), ((1, 2, 3), 1, (1, 2, 3), 2, 7, 0)),
    ((2, 1), ((2, 1), 1, (1, 2), 2, 6, 0)),
    ((1,), ((1,), 1, (1,), 3, 6, 0)),
]


@pytest.mark.parametrize("release", [R360, R361, R362, R392])
@pytest.mark.parametrize("target, expected", REASSIGN_ROWS)
def test_a_reassignment_in_hybrid_is_predicted_as_the_controller_decides_it(release, target, expected) -> None:
    # Up to 3.6.1 the ZooKeeper leader ignores the same-epoch LeaderAndIsr (ReplicaManager.scala
    # 3.6.1 line 1821) and the reassignment stalls: a broker bug the oracle check finds, not a rule.
    assert after(hybrid(release), Reassign("t", 0, target))[0] == expected


def test_topics_queued_for_deletion_are_migrated_only_by_3_6_0() -> None:
    # ZkTopicMigrationClient.scala 3.6.0 lines 50-51 vs 3.6.1 lines 50-60 (KAFKA-15605)
    assert migration.topics_queued_for_deletion_migrated(R360)
    assert not migration.topics_queued_for_deletion_migrated(R361)
    assert not migration.topics_queued_for_deletion_migrated(R392)


# --- properties ----------------------------------------------------------------------------------

RELEASES_3_6 = st.sampled_from([R360, R361, R362])


def _without_unclean(state: ClusterState) -> ClusterState:
    topics = {t: TopicState(ts.partitions, {k: v for k, v in ts.config.items() if k != UNCLEAN})
              for t, ts in state.topics.items()}
    return dataclasses.replace(state, topics=topics)


def _partitions(state: ClusterState) -> tuple:
    return tuple(state.partitions()), state.live_brokers


@SETTINGS
@given(st.data())
def test_invariants_hold_on_3_6(data) -> None:
    state = at(data.draw(kraft_states()), data.draw(RELEASES_3_6),
               **data.draw(st.sampled_from([{}, MIG, {"metadata.version": "3.5-IV2"}])))
    walk_checking_invariants(data, state, lambda event: "before 3.7" if isinstance(event, LogDirFailure) else None)


@SETTINGS
@given(st.data())
def test_before_3_9_the_unclean_setting_changes_nothing(data) -> None:
    # ConfigurationControlManager.java 3.6.1 lines 478-480
    state = at(data.draw(kraft_states()), data.draw(st.sampled_from([R361, R362])))
    event = data.draw(kraft_events(state))
    if isinstance(event, LogDirFailure):
        return
    plain = predict(_without_unclean(state), [event])
    configured = predict(state, [event])
    assert [_partitions(a.state) for a in configured.alternatives] == [_partitions(a.state) for a in plain.alternatives]
    assert configured.outcomes == plain.outcomes


@SETTINGS
@given(st.data())
def test_on_3_6_migration_mode_adds_records_only_at_a_controlled_shutdown(data) -> None:
    # 3.6.1 line 291 (zkMigrationEnabled) with line 296 (the target ISR): besides leader epochs, migration
    # mode changes only leaderless partitions whose ISR was just the broker shutting down (+1/+1)
    plain = at(data.draw(kraft_states()), data.draw(RELEASES_3_6))
    event = data.draw(kraft_events(plain))
    if isinstance(event, LogDirFailure):
        return
    migrating = at(plain, plain.release, **MIG)
    plain_plans, migrating_plans = _event_plans(plain, event), _event_plans(migrating, event)
    assert [p.label for p in plain_plans] == [p.label for p in migrating_plans]
    a, b = predict(plain, [event]).state, predict(migrating, [event]).state
    for tp, p in a.partitions():
        q = b.partition(tp)
        if isinstance(event, ControlledShutdown) and event.broker in plain.live_brokers \
                and p.leader == NO_LEADER and p.isr == (event.broker,) and plain.has_partition(tp):
            assert q.partition_epoch == p.partition_epoch + 1, (tp, p, q)
            q = dataclasses.replace(q, partition_epoch=p.partition_epoch)
        assert dataclasses.replace(q, leader_epoch=p.leader_epoch) == p, (tp, p, q)
        assert q.leader_epoch >= p.leader_epoch


def test_partition_state_fields_used_here_exist() -> None:
    # guards the dataclasses.replace calls above against a renamed field
    names = {f.name for f in dataclasses.fields(PartitionState)}
    assert {"unassigned_dirs", "partition_epoch", "leader_epoch"} <= names

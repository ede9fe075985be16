"""The KRaft model on Kafka 3.7.x and 3.8.x (issue 45): one table per release-keyed rule, a row
per release from 3.6.2 to 3.9.2, each through ``predict`` where the rule shows in a prediction --
so a rule keyed to the wrong release fails a row.  Sources: the released ``kafka-metadata``,
``kafka-server-common`` and ``kafka_2.13`` sources jars of 3.6.2, 3.7.2, 3.8.1 and 3.9.0 from Maven
Central (the mirror's branches ``3.7`` and ``3.8`` hold the same controller package as 3.7.2 and
3.8.1; ``git diff 3.7.0 3.7.1`` / ``3.8.0 3.8`` of the controller package change no partition
decision), files under ``metadata/.../controller/`` unless said otherwise."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_chaos.oracle import (
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ControlledShutdown,
    LogDirFailure,
    Outcome,
    Reassign,
    TopicConfigChange,
    predict,
)
from kafka_chaos.oracle.jsonio import parse_request
from kafka_chaos.oracle.kraft import config as kcfg
from kafka_chaos.oracle.kraft.interleavings import MODELLED_LINES, MODELLED_TEXT, _event_plans
from kafka_chaos.oracle.release import ProtocolVersion, Release
from kafka_chaos.oracle.state import NO_LEADER
from tests.unit.oracle.test_kraft import T0, UNCLEAN, kp, kraft, regs
from tests.unit.oracle.test_kraft_releases import MIG, ZK_BROKERS, after, at

R362, R370, R371, R372 = Release(3, 6, 2), Release(3, 7, 0), Release(3, 7, 1), Release(3, 7, 2)
R380, R381, R390, R392 = Release(3, 8, 0), Release(3, 8, 1), Release(3, 9, 0), Release(3, 9, 2)
ALL = [R362, R370, R371, R372, R380, R381, R390, R392]
MV = "metadata.version"
ELR = "eligible.leader.replicas.enable"


def by_line(**values: object) -> list[tuple[Release, object]]:
    """One row per release of :data:`ALL`, the value of its line: ``l36=..., l37=..., l38=..., l39=...``."""
    return [(r, values[f"l{r.major}{r.minor}"]) for r in ALL]


# --- which releases are modelled -----------------------------------------------------------------

def test_3_6_to_4_4_are_modelled_and_3_5_and_4_5_are_refused() -> None:
    assert MODELLED_LINES == ((3, 6), (3, 7), (3, 8), (3, 9), (4, 0), (4, 1), (4, 2), (4, 3), (4, 4))
    assert MODELLED_TEXT == "3.6.x, 3.7.x, 3.8.x, 3.9.x and 4.0.x-4.4.x"
    state = kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))})
    for release in ALL:
        assert predict(at(state, release), [BrokerFailure((2,))]).state.partition(T0).isr == (1,)
    for release in (Release(3, 5, 2), Release(4, 5, 0)):
        with pytest.raises(ValueError, match="is not modelled"):
            predict(at(state, release), [BrokerFailure((2,))])


@pytest.mark.parametrize("version", ["3.7.0", "3.7.2", "3.8.0", "3.8.1"])
def test_json_takes_3_7_and_3_8(version) -> None:
    state, _ = parse_request({"mode": "kraft", "kafka_version": version, "brokers": [1]})
    assert state.release == Release.parse(version)


def test_the_harness_runs_the_lines_the_model_covers() -> None:
    from kafka_chaos.harness.config import KRAFT_RELEASE_LINES, kraft_releases_text, modes_running
    assert KRAFT_RELEASE_LINES == tuple(line for line in MODELLED_LINES if line < (4, 0))  # 4.x: KRaft only
    assert kraft_releases_text().startswith("3.6.x, 3.7.x, 3.8.x and 3.9.x")
    for version in ("3.7.0", "3.7.2", "3.8.0", "3.8.1"):
        assert {"kraft", "migration"} <= modes_running(version)
    assert "kraft" not in modes_running("3.5.2")


# --- metadata versions ---------------------------------------------------------------------------

@pytest.mark.parametrize("release, expected", by_line(
    # kafka-storage format without --release-version: 3.6.x MetadataVersion.latest() = IBP_3_6_IV2
    # (StorageTool.scala 3.6.1 line 148); 3.7.x LATEST_PRODUCTION = IBP_3_7_IV4 (MetadataVersion.java
    # 3.7.0/3.7.1/3.7.2 line 231; StorageTool.scala 3.7.2 line 191); 3.8.x IBP_3_8_IV0 (3.8.0/3.8.1
    # line 239; StorageTool.scala 3.8.1 line 250); 3.9 IBP_3_9_IV0 (line 247)
    l36=ProtocolVersion(3, 6, 0, 2), l37=ProtocolVersion(3, 7, 0, 4), l38=ProtocolVersion(3, 8, 0, 0),
    l39=ProtocolVersion(3, 9, 0, 0)))
def test_default_metadata_version(release, expected) -> None:
    assert kcfg.metadata_version({}, release) == expected


@pytest.mark.parametrize("release, newest_known, first_unknown", [
    # the enum's last constant: 3.7.x IBP_3_8_IV0 (MetadataVersion.java 3.7.2 line 205), 3.8.x
    # IBP_3_9_IV0 (3.8.1 line 213)
    (R370, "3.8-IV0", "3.9-IV0"), (R372, "3.8-IV0", "3.9-IV0"),
    (R380, "3.9-IV0", "4.0-IV0"), (R381, "3.9-IV0", "4.0-IV0"),
])
def test_a_metadata_version_the_release_does_not_know_is_refused(release, newest_known, first_unknown) -> None:
    state = at(kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))}), release)
    # known (3.8.x's newest, 3.9-IV0, supports ELR: refused by predict for that reason instead)
    kcfg.check_metadata_version_known(kcfg.metadata_version({MV: newest_known}, release), release)
    with pytest.raises(ValueError, match=f"unknown to Kafka {release}"):
        predict(at(state, release, **{MV: first_unknown}), [BrokerFailure((2,))])


# --- ELR (KIP-966) and unclean-shutdown detection (KAFKA-15582 / KAFKA-15586) ----------------------

@pytest.mark.parametrize("release, bounds", by_line(
    # MetadataVersion.isElrSupported: none in 3.6.x; 3.7.2 lines 325-327 IBP_3_8_IV0; 3.8.1 lines
    # 339-341 IBP_3_9_IV0; 3.9.0 lines 347-349 IBP_4_0_IV0 -- always above the production default
    l36=(ProtocolVersion(4, 0, 0, 0), None),
    l37=(ProtocolVersion(3, 7, 0, 4), ProtocolVersion(3, 8, 0, 0)),
    l38=(ProtocolVersion(3, 8, 0, 0), ProtocolVersion(3, 9, 0, 0)),
    l39=(ProtocolVersion(3, 9, 0, 0), ProtocolVersion(4, 0, 0, 0))))
def test_elr_support_by_metadata_version(release, bounds) -> None:
    last_without, first_with = bounds
    assert not kcfg.elr_supported(kcfg.metadata_version({}, release), release)
    assert not kcfg.elr_supported(last_without, release)
    if first_with is not None:
        assert kcfg.elr_supported(first_with, release)


@pytest.mark.parametrize("release, mv, leaves_isrs", [
    # 3.7.x: registerBroker only logs an unclean shutdown (ClusterControlManager.java 3.7.2 lines
    # 340-343, "TODO(KIP-966)"), even at the ELR metadata version
    (R370, "3.8-IV0", False), (R372, "3.8-IV0", False), (R372, "3.7-IV4", False),
    # 3.8.0 (KAFKA-15586, 376e9e20dbf): handleBrokerUncleanShutdown (ReplicationControlManager.java 3.8.1
    # lines 1395-1401) acts from isElrSupported = 3.9-IV0, whatever eligible.leader.replicas.enable says
    (R380, "3.9-IV0", True), (R381, "3.9-IV0", True), (R381, "3.8-IV0", False),
    (R392, "3.9-IV0", False),
])
def test_unclean_shutdown_detection(release, mv, leaves_isrs) -> None:
    parsed = kcfg.metadata_version({MV: mv}, release)
    assert kcfg.unclean_shutdown_leaves_isrs(parsed, release) is leaves_isrs
    state = at(kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))}), release, **{MV: mv})
    if leaves_isrs:
        with pytest.raises(ValueError, match="unclean shutdown"):
            predict(state, [BrokerFailure((2,))])
    else:
        predict(state, [BrokerFailure((2,))])


@pytest.mark.parametrize("release, mv, refused", [
    # isElrEnabled = eligible.leader.replicas.enable && isElrSupported (ReplicationControlManager.java
    # 3.7.2 lines 1005-1007): at the default metadata version the setting changes nothing
    (R370, None, False), (R372, None, False), (R381, None, False), (R392, None, False),
    (R372, "3.8-IV0", True),
    (R381, "3.9-IV0", True),
])
def test_eligible_leader_replicas_enabled_is_refused(release, mv, refused) -> None:
    config = {ELR: "true", **({} if mv is None else {MV: mv})}
    state = at(kraft({1, 2}, {0: kp((1, 2), 1, (1, 2))}), release, **config)
    if refused:
        with pytest.raises(ValueError, match="eligible leader replicas|unclean shutdown"):
            predict(state, [BrokerFailure((2,))])
    else:
        assert predict(state, [BrokerFailure((2,))]).state.partition(T0).isr == (1,)


# --- the ISR-shrink bump on the target ISR (KAFKA-16624, first in 3.8.0) --------------------------

@pytest.mark.parametrize("release, expected", by_line(
    # ControlledShutdown(1) of the last ISR member of t-0 in migration mode: the SHUTDOWN_NOW fence's
    # empty target ISR is a "shrink" while triggerLeaderEpochBumpIfNeeded reads the target ISR (3.6.1
    # line 296; 3.7.2 lines 392-405, called at line 438): one more record, +1/+1.  3.8.1 reads
    # record.isr() (lines 414-417, called at 473): none.
    l36=((1,), NO_LEADER, (1,), 6, 12, 0), l37=((1,), NO_LEADER, (1,), 6, 12, 0),
    l38=((1,), NO_LEADER, (1,), 5, 11, 0), l39=((1,), NO_LEADER, (1,), 5, 11, 0)))
def test_controlled_shutdown_of_the_last_isr_member_in_migration_mode(release, expected) -> None:
    assert kcfg.isr_shrink_bump_reads_target_isr(release) is (expected[3] == 6)
    state = at(kraft({1, 2}, {0: kp((1,), 1, (1,), 4, 10), 1: kp((1, 2), 2, (2, 1), 3, 7)}), release, **MIG)
    assert after(state, ControlledShutdown(1))[0] == expected


# --- reassignment completion (KAFKA-15665, first in 3.8.0) -----------------------------------------

@pytest.mark.parametrize("release, expected", by_line(
    # [1,2,3] -> [1,2] with 2 fenced: 3.6.x/3.7.x complete once the adding replicas (none) are in the
    # ISR (PartitionReassignmentReplicas.java 3.7.2 lines 123-125): at once, +1/+1.  3.8.x/3.9 wait
    # for every target replica (3.8.1 line 122): only the removing list is written, +0/+1.
    l36=(((1, 2), 1, (1,), 5, 10, 0), ()), l37=(((1, 2), 1, (1,), 5, 10, 0), ()),
    l38=(((1, 2, 3), 1, (1, 3), 4, 10, 0), (3,)), l39=(((1, 2, 3), 1, (1, 3), 4, 10, 0), (3,))))
def test_reassignment_with_a_target_replica_out_of_the_isr(release, expected) -> None:
    assert kcfg.reassignment_completes_when_adding_in_isr(release) is (expected[1] == ())
    state = at(kraft({1, 3}, {0: kp((1, 2, 3), 1, (1, 3), 4, 9)}), release)
    p = predict(state, [Reassign("t", 0, (1, 2))]).state.partition(T0)
    assert ((p.replicas, p.leader, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state),
            p.removing_replicas) == expected


# --- unclean.leader.election.enable read by the controller (KAFKA-12670, first in 3.9.0) ------------

@pytest.mark.parametrize("release, expected", by_line(
    # ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic is "return false" up to 3.8.x
    # (3.7.2 and 3.8.1 lines 498-500): the last ISR member's fence leaves t-0 leaderless; 3.9 elects
    # 2 uncleanly (generateLeaderAndIsrUpdates with UNCLEAN) and 3 rejoins it
    l36=((1, 2, 3), NO_LEADER, (1,), 5), l37=((1, 2, 3), NO_LEADER, (1,), 5),
    l38=((1, 2, 3), NO_LEADER, (1,), 5), l39=((1, 2, 3), 2, (2, 3), 5)))
def test_unclean_topic_setting(release, expected) -> None:
    assert kcfg.unclean_leader_election_configurable(release) is (expected[1] == 2)
    state = at(kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1,), 4, 9)}, topic_config={UNCLEAN: "true"}), release)
    assert after(state, BrokerFailure((1,)))[0][:4] == expected
    plans = _event_plans(at(kraft({2, 3}, {0: kp((1, 2, 3), NO_LEADER, (1,), 4, 9)}), release),
                         TopicConfigChange("t", {UNCLEAN: "true"}))
    assert len(plans) == (2 if expected[1] == 2 else 1)  # the periodic check: 3.9 only


@pytest.mark.parametrize("release, expected", by_line(
    # an unclean revert: refused (INVALID_REPLICA_ASSIGNMENT) while the setting is not read
    l36=Outcome.REQUEST_FAILED, l37=Outcome.REQUEST_FAILED, l38=Outcome.REQUEST_FAILED,
    l39=Outcome.NO_REPLICA_ONLINE))
def test_an_unclean_revert(release, expected) -> None:
    state = at(kraft({3}, {0: kp((3, 1), 3, (3,), 2, 6, adding=(3,), removing=(1,))},
                     topic_config={UNCLEAN: "true"}), release)
    assert predict(state, [CancelReassignment("t", 0)]).outcomes[0].outcome is expected


# --- directories (KIP-858, first in 3.7.0) ---------------------------------------------------------

@pytest.mark.parametrize("release, modelled", by_line(l36=False, l37=True, l38=True, l39=True))
def test_log_dir_failure_of_a_kraft_broker(release, modelled) -> None:
    # handleDirectoriesOffline (ReplicationControlManager.java 3.7.2 lines 1387-1412, 3.8.1 1415-1440)
    # from a heartbeat at MV >= 3.7-IV2 (the default of 3.7.x and later): broker 2 leaves t-0's ISR
    assert kcfg.partition_directories_supported(release) is modelled
    state = at(kraft({1, 2}, {0: kp((1, 2), 2, (2, 1), 3, 7)}), release)
    if not modelled:
        with pytest.raises(ValueError, match="before 3.7"):
            predict(state, [LogDirFailure(2, (T0,))])
        return
    assert after(state, LogDirFailure(2, (T0,)))[0] == ((1, 2), 1, (1,), 4, 8, 0)
    # below 3.7-IV2 the controller never hears of it: refused
    with pytest.raises(ValueError, match="3.7-IV2"):
        predict(at(state, release, **{MV: "3.7-IV1"}), [LogDirFailure(2, (T0,))])


@pytest.mark.parametrize("release, expected_pe", by_line(
    # a migrated ZooKeeper broker's first KRaft start: AssignReplicasToDirs (handleAssignReplicasToDirs,
    # 3.7.2 lines 2078-2151; ReplicaManager.maybeUpdateTopicAssignment, ReplicaManager.scala 3.7.2
    # line 3021, 3.8.1 line 2900) moves the partition epoch once more than the ISR rejoin
    l36=4, l37=5, l38=5, l39=5))
def test_a_zookeeper_broker_started_as_kraft(release, expected_pe) -> None:
    part = kp((1, 2), 1, (1,), 1, 3)
    if release.at_least(3, 7):
        part = dataclasses.replace(part, unassigned_dirs=(2,))
    state = at(kraft({1}, {0: part}, config={**MIG, ZK_BROKERS: "2"}), release)
    assert regs(predict(state, [BrokerStartup((2,), kraft_brokers=(2,))]).state)[0][4] == expected_pe


# --- the same in every release -----------------------------------------------------------------------

@pytest.mark.parametrize("release", ALL)
def test_fence_unfence_and_migration_bump_are_the_same_everywhere(release) -> None:
    # handleBrokerFenced / handleBrokerUnfenced / generateLeaderAndIsrUpdates: the same builders in
    # every release (3.7.2 and 3.8.1 only add a LeaderAcceptor and, in 3.8, brokerWithUncleanShutdown =
    # NO_LEADER); the migration-mode bump (|| zkMigrationEnabled) in all of them
    state = at(kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 9)}), release)
    assert after(state, BrokerFailure((1,)))[0] == ((1, 2, 3), 2, (2, 3), 5, 10, 0)
    assert after(state, BrokerFailure((3,)))[0] == ((1, 2, 3), 1, (1, 2), 4, 10, 0)
    assert after(at(state, release, **MIG), BrokerFailure((3,)))[0] == ((1, 2, 3), 1, (1, 2), 5, 10, 0)
    down = at(kraft({2, 3}, {0: kp((1, 2, 3), NO_LEADER, (1,), 5, 11)}), release)
    assert after(down, BrokerStartup((1,)))[0] == ((1, 2, 3), 1, (1, 2, 3), 6, 14, 0)


@pytest.mark.parametrize("release", [R370, R372, R381, R392])
@pytest.mark.parametrize("mv, expected_pe", [
    # below 3.7-IV2 the broker sends no AssignReplicasToDirs (ReplicaManager.scala 3.7.2 lines
    # 2881-2884, 3.9 lines 2771-2774): only the ISR rejoin (+1); from it, one more (+1)
    ("3.7-IV1", 4), ("3.6-IV2", 4), ("3.7-IV2", 5),
])
def test_a_zookeeper_broker_started_as_kraft_below_3_7_iv2(release, mv, expected_pe) -> None:
    part = dataclasses.replace(kp((1, 2), 1, (1,), 1, 3), unassigned_dirs=(2,))
    state = at(kraft({1}, {0: part}, config={**MIG, ZK_BROKERS: "2", MV: mv}), release)
    assert regs(predict(state, [BrokerStartup((2,), kraft_brokers=(2,))]).state)[0][4] == expected_pe

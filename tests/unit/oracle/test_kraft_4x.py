"""The KRaft model on Kafka 4.0.x-4.4.x (issue 45): one table per release-keyed rule, a row per
release (3.9.2, 4.0.2, 4.1.0, 4.1.2, 4.4.0), so a rule keyed to the wrong release or to the wrong ELR
switch fails a row.  Sources: docs/kraft-4x-audit.md and the sources jars it names,
``PartitionChangeBuilder`` / ``ReplicationControlManager`` 4.1.2 unless said otherwise."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_chaos.oracle import BrokerFailure, BrokerStartup, TopicConfigChange, predict
from kafka_chaos.oracle.kraft import builder
from kafka_chaos.oracle.kraft import config as kcfg
from kafka_chaos.oracle.release import ProtocolVersion, Release
from kafka_chaos.oracle.state import NO_LEADER, RECOVERED, RECOVERING, ClusterState, PartitionState
from tests.unit.oracle.test_kraft import T0, kraft
from tests.unit.oracle.test_kraft_releases import at

R392, R402, R410, R412, R440 = Release(3, 9, 2), Release(4, 0, 2), Release(4, 1, 0), Release(4, 1, 2), Release(4, 4, 0)
ELR_V = "eligible.leader.replicas.version"


def elr_p(replicas, leader, isr, elr=(), lke=(), le=0, pe=0, recovery=RECOVERED) -> PartitionState:
    return PartitionState(tuple(replicas), leader, tuple(isr), le, recovery, partition_epoch=pe, elr=tuple(elr),
                          last_known_elr=tuple(lke))


def row(state: ClusterState) -> tuple:
    p = state.partition(T0)
    return p.leader, p.isr, p.elr, p.last_known_elr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state


# --- which metadata version and ELR switch each line runs with ---------------------------------------

@pytest.mark.parametrize("release, mv, elr", [
    (R392, ProtocolVersion(3, 9, 0, 0), False),
    (Release(4, 0, 0), ProtocolVersion(4, 0, 0, 3), False), (R402, ProtocolVersion(4, 0, 0, 3), False),
    (R410, ProtocolVersion(4, 1, 0, 1), True), (R412, ProtocolVersion(4, 1, 0, 1), True),
    (Release(4, 2, 0), ProtocolVersion(4, 2, 0, 1), True), (Release(4, 3, 1), ProtocolVersion(4, 3, 0, 0), True),
    (R440, ProtocolVersion(4, 4, 0, 2), True),
])
def test_default_metadata_version_and_elr_per_line(release: Release, mv: ProtocolVersion, elr: bool) -> None:
    assert kcfg.metadata_version({}, release) == mv
    assert kcfg.elr_feature_enabled({}, release) is elr


@pytest.mark.parametrize("release, level, elr", [
    (R402, "1", True), (R412, "0", False), (R440, "0", False), (R412, "1", True), (R392, "1", False),
])
def test_the_finalized_feature_level_overrides_the_default(release: Release, level: str, elr: bool) -> None:
    assert kcfg.elr_feature_enabled({ELR_V: level}, release) is elr


# --- audit section 6: RF 3, min.insync.replicas 1, brokers 1, 2, 3 killed one after another -------

def _killed_one_by_one(release: Release, **config: str) -> ClusterState:
    state = at(kraft({1, 2, 3}, {0: elr_p((1, 2, 3), 1, (1, 2, 3))}), release, **config)
    for broker in (1, 2, 3):
        state = predict(state, [BrokerFailure((broker,))]).state
    return state


@pytest.mark.parametrize("release, config, expected", [
    # 3.9 and 4.0 (ELR off): an empty ISR is never written, the last member stays (3.9.1 L461-469)
    (R392, {}, (NO_LEADER, (3,), (), (), 3, 3, RECOVERED)),
    (R402, {}, (NO_LEADER, (3,), (), (), 3, 3, RECOVERED)),
    # 4.1+ (ELR on): ISR [], ELR [3] (maybePopulateTargetElr), LKE [3] (maybeUpdateLastKnownLeader)
    (R410, {}, (NO_LEADER, (), (3,), (3,), 3, 3, RECOVERED)),
    (R412, {}, (NO_LEADER, (), (3,), (3,), 3, 3, RECOVERED)),
    (R440, {}, (NO_LEADER, (), (3,), (3,), 3, 3, RECOVERED)),
    # the cluster's finalized level decides, not the line
    (R402, {ELR_V: "1"}, (NO_LEADER, (), (3,), (3,), 3, 3, RECOVERED)),
    (R412, {ELR_V: "0"}, (NO_LEADER, (3,), (), (), 3, 3, RECOVERED)),
])
def test_the_last_isr_member_fenced(release: Release, config: dict[str, str], expected: tuple) -> None:
    assert row(_killed_one_by_one(release, **config)) == expected


@pytest.mark.parametrize("release, unclean_restart, clean_restart", [
    # 3.9: unfence elects 3 from the ISR, clean; one plan
    (R392, (3, (3,), (), (), 4, 4, RECOVERED), None),
    # 4.0 (ELR off): the registration's fence builder over [3] writes nothing; the same
    (R402, (3, (3,), (), (), 4, 4, RECOVERED), None),
    # 4.1+: after SIGKILL the registration drops 3 from the ELR (+1 partition epoch), the unfence
    # elects it as last known leader, uncleanly: RECOVERING; after SIGTERM it is elected from the ELR, clean
    (R412, (3, (3,), (), (), 4, 5, RECOVERING), (3, (3,), (), (), 4, 4, RECOVERED)),
    (R440, (3, (3,), (), (), 4, 5, RECOVERING), (3, (3,), (), (), 4, 4, RECOVERED)),
])
def test_the_last_isr_member_restarts(release: Release, unclean_restart: tuple, clean_restart: tuple | None) -> None:
    prediction = predict(_killed_one_by_one(release), [BrokerStartup((3,))])
    rows = [row(a.state) for a in prediction.alternatives]
    assert rows[0] == unclean_restart
    assert rows[1:] == ([] if clean_restart is None else [clean_restart])


@pytest.mark.parametrize("release, expected", [
    (R392, (3, (3,), (), (), 4, 4, RECOVERED)),
    # ClearElrRecord (ConfigurationControlManager 4.1.2 L217-236, removeTopicElrs L603-618): ELR and
    # LKE gone, partition epoch +1; when 3 returns nothing can be elected
    (R412, (NO_LEADER, (), (), (), 3, 4, RECOVERED)),
])
def test_min_isr_change_while_offline_clears_the_elr(release: Release, expected: tuple) -> None:
    state = predict(_killed_one_by_one(release), [TopicConfigChange("t", {"min.insync.replicas": "1"})]).state
    if release.at_least(4, 1):
        assert row(state)[:6] == (NO_LEADER, (), (), (), 3, 4)
    assert row(predict(state, [BrokerStartup((3,))]).state) == expected


# --- KAFKA-19522: 4.0.x elects a fenced last known leader -----------------------------------------

@pytest.mark.parametrize("release, leader", [(R402, 3), (R410, NO_LEADER), (R412, NO_LEADER)])
def test_a_fenced_last_known_leader(release: Release, leader: int) -> None:
    # replicas [3, 1], ISR [], ELR [], LKE [3]; 3 registered but fenced, 1 unfenced (ELR forced on)
    state = at(kraft({5}, {0: elr_p((3, 1), NO_LEADER, (), (), (3,), le=3, pe=4)}), release, **{ELR_V: "1"})
    assert predict(state, [BrokerStartup((1,))]).state.partition(T0).leader == leader


# --- PR #20629: the LKE update rule of 4.0.0-4.1.0 and of 4.1.1+ ----------------------------------

@pytest.mark.parametrize("simplified, lke", [(False, (NO_LEADER,)), (True, None)])
def test_an_isr_emptied_under_a_leaderless_partition(simplified: bool, lke: tuple | None) -> None:
    # 4.1.0 (L497-500): an empty ISR written and LKE != [leader] -> LKE [leader] = [-1];
    # 4.1.1+ (L497-499): only a record writing leader -1 with LKE empty
    p = elr_p((3, 1), NO_LEADER, (3,))
    record = builder.build(p, lambda r: False, target_isr=(), elr=builder.Elr(lke_simplified=simplified))
    assert record is not None and record.isr == () and record.elr == (3,)
    assert record.last_known_elr == lke
    assert kcfg.last_known_leader_simplified(R410) is False and kcfg.last_known_leader_simplified(Release(4, 1, 1))


def test_elr_off_keeps_every_3x_builder_the_same() -> None:
    p = elr_p((1, 2), 1, (1,))
    assert builder.build(p, lambda r: False, target_isr=()) == builder.ChangeRecord(leader=NO_LEADER)
    on = builder.build(p, lambda r: False, target_isr=(), elr=builder.Elr())
    assert on == builder.ChangeRecord(leader=NO_LEADER, isr=(), elr=(1,), last_known_elr=(1,))


def test_an_isr_below_min_isr_keeps_the_removed_replicas_eligible() -> None:
    # min.insync.replicas 2, RF 3: a follower's fence leaves ISR [1, 2] -> fine; the next one ISR [1]
    # < 2: the removed replica joins the ELR (maybePopulateTargetElr L536-567)
    p = elr_p((1, 2, 3), 1, (1, 2))
    record = builder.build(p, lambda r: r == 1, target_isr=(1,), elr=builder.Elr(min_isr=2))
    assert record == builder.ChangeRecord(isr=(1,), elr=(2,))
    back = dataclasses.replace(p, isr=(1,), elr=(2,))
    assert builder.build(back, lambda r: True, target_isr=(1, 3), elr=builder.Elr(min_isr=2)) == \
        builder.ChangeRecord(isr=(1, 3), elr=())


# --- the harness compares ELR/LKE where either side has them -----------------------------------------

def test_compare_partitions_checks_elr_only_where_present() -> None:
    from kafka_chaos.harness.zksnapshot import PartitionZkState
    from kafka_chaos.scenarios.checks.functions import compare_partitions

    def observed(isr: tuple[int, ...], elr: tuple[int, ...], lke: tuple[int, ...]) -> PartitionZkState:
        return PartitionZkState("t", 0, (1, 2, 3), NO_LEADER, 3, isr, 1, 0, 3, elr=elr, last_known_elr=lke)

    before = {("t", 0): elr_p((1, 2, 3), 3, (3,), le=2, pe=2)}
    predicted = {("t", 0): elr_p((1, 2, 3), NO_LEADER, (), (3,), (3,), le=3, pe=3)}

    def elr_checks(got: PartitionZkState) -> list[bool]:
        results = compare_partitions(before, predicted, {("t", 0): got}, [], exact_epochs=True)
        return [r.passed for r in results if r.check == "oracle_elr"]

    assert elr_checks(observed((), (3,), (3,))) == [True]
    assert elr_checks(observed((), (), (3,))) == [False]
    none_predicted = {("t", 0): elr_p((1, 2, 3), NO_LEADER, (3,), le=3, pe=3)}
    results = compare_partitions(before, none_predicted, {("t", 0): observed((3,), (), ())}, [], exact_epochs=True)
    assert not [r for r in results if r.check == "oracle_elr"]
    assert all(r.passed for r in results if r.check == "oracle_isr")


# --- KAFKA-19975 (4.3.0+): reassignment completion --------------------------------------------------

@pytest.mark.parametrize("release, completes", [(R392, False), (R412, False), (Release(4, 2, 1), False),
                                                (Release(4, 3, 0), True), (R440, True)])
def test_reassignment_completes_once_the_adding_replicas_are_in(release: Release, completes: bool) -> None:
    # [1, 2] -> [1, 2, 3] (target replica 2 out of the ISR, 3 adding): 3.8-4.2 wait for 2 as well
    p = PartitionState((1, 2, 3), 1, (1,), 0, partition_epoch=1, adding_replicas=(3,))
    record = builder.build(p, lambda r: True, target_isr=(1, 3),
                           reassignment_kafka_19975=kcfg.reassignment_completes_kafka_19975(release))
    assert record is not None and (record.adding_replicas == ()) is completes


# --- a failed log directory (JBOD, KIP-858): handleDirectoriesOffline = a fence of that broker for
# the directory's partitions only (generateLeaderAndIsrUpdates with brokerToRemove: ReplicationControlManager
# 3.7 branch lines 1387-1412, 3.9 lines 1402-1427; 4.0.2 and 4.4.0 the same method and log line, javap) ---

@pytest.mark.parametrize("release", [Release(3, 7, 2), Release(3, 8, 1), R392, R402, R410, R412, R440])
def test_a_failed_directory_is_a_fence_of_its_partitions_only(release: Release) -> None:
    from kafka_chaos.oracle import LogDirFailure, TopicPartition

    t1 = TopicPartition("t", 1)
    state = at(kraft({1, 2, 3}, {0: elr_p((1, 2, 3), 1, (1, 2, 3), le=4, pe=10),
                                 1: elr_p((2, 1, 3), 2, (2, 1, 3), le=0, pe=0)}), release)
    failed = predict(state, [LogDirFailure(1, (T0,))]).state
    fenced = predict(state, [BrokerFailure((1,))]).state
    # t-0 (on the failed directory) as the fence leaves it: the next ISR member leads, epochs +1
    assert row(failed) == row(fenced) == (2, (2, 3), (), (), 5, 11, RECOVERED)
    # t-1 (on the other directory) untouched; the fence would have shrunk its ISR
    assert failed.partition(t1) == state.partition(t1) != fenced.partition(t1)
    # the broker still runs, and cannot lead t-0 again (LeaderAcceptor) until it registers anew
    assert 1 in failed.live_brokers and failed.offline_replicas == {1: frozenset({T0})}
    back = predict(failed, [BrokerFailure((2, 3)), BrokerStartup((2, 3))]).state
    assert back.partition(T0).leader in (2, 3)
    restarted = predict(failed, [BrokerFailure((1,)), BrokerStartup((1,))]).state
    assert not restarted.offline_replicas

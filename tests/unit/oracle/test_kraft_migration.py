"""The KRaft model during a ZooKeeper -> KRaft migration (``kafka_chaos.oracle.kraft.migration``):
a table per rule, each row naming the Kafka 3.9 source line it comes from (apache/kafka branch
3.9, c821449fb7c1; ``metadata/src/main/java/org/apache/kafka/controller/`` unless said otherwise),
and Hypothesis properties over random KRaft states with and without migration mode."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.oracle import (
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    ClusterState,
    ControlledShutdown,
    LogDirFailure,
    PartitionPhase,
    PartitionState,
    PreferredElection,
    Reassign,
    UncleanElection,
    apply_event,
    predict,
)
from kafka_chaos.oracle.jsonio import OracleInputError, parse_request, render_prediction
from kafka_chaos.oracle.kraft import builder, migration
from kafka_chaos.oracle.kraft.controller import leader_isr_shrink
from kafka_chaos.oracle.kraft.interleavings import _apply, _event_plans
from kafka_chaos.oracle.release import ProtocolVersion, parse_protocol_version
from kafka_chaos.oracle.state import NO_LEADER, RECOVERED
from tests.unit.oracle.test_kraft import (
    BROKERS,
    SETTINGS,
    T0,
    THREE,
    kp,
    kraft,
    kraft_events,
    kraft_states,
    regs,
    regs_all,
    walk_checking_invariants,
)
from tests.unit.oracle.test_purity import FORBIDDEN, _imported_roots

MIGRATION = "zookeeper.metadata.migration.enable"
ZK_BROKERS = "oracle.migrating.zk.brokers"
MIG = {MIGRATION: "true"}


def mv(text: str) -> ProtocolVersion:
    parsed = parse_protocol_version(text)
    assert parsed is not None
    return parsed


def with_config(state: ClusterState, extra: dict[str, str]) -> ClusterState:
    return dataclasses.replace(state, config={**state.config, **extra})


# --- the guard of triggerLeaderEpochBumpForIsrShrinkIfNeeded ------------------------------------

GUARD_ROWS = [
    # (controller config, metadata.version, zkRegistrationAllowed, ISR shrink bumps the leader epoch)
    # PartitionChangeBuilder.java 397 + MetadataVersion.java 331-333: no migration, MV 3.9-IV0 -> no bump
    ({}, "3.9-IV0", False, False),
    # KRaftConfigs.java 147: the default is false
    ({MIGRATION: "false"}, "3.9-IV0", False, False),
    # ClusterControlManager.java 352-354 (migration on, MV 3.4-IV0+) -> zkMigrationEnabled -> 397 bumps
    (MIG, "3.9-IV0", True, True),
    # ConfigDef.java 699-706: BOOLEAN values are trimmed and case-insensitive
    ({MIGRATION: " TRUE "}, "3.9-IV0", True, True),
    # ... and a Python bool is taken as is
    ({MIGRATION: True}, "3.6-IV1", True, True),
    # MetadataVersion.java 373-375: 3.4-IV0 is the first version supporting migration
    (MIG, "3.4-IV0", True, True),
    # MetadataVersion.java 331-333: below 3.6-IV0 every shrink bumps, migration or not (KAFKA-15021)
    ({}, "3.5-IV2", False, True),
    # ... 3.6-IV0 is the first without the bump
    ({}, "3.6-IV0", False, False),
]


@pytest.mark.parametrize("config, version, allowed, bumps", GUARD_ROWS)
def test_isr_shrink_guard(config, version, allowed, bumps) -> None:
    assert migration.zk_registration_allowed(config, mv(version)) is allowed
    assert migration.isr_shrink_bumps_leader_epoch(config, mv(version)) is bumps


def test_builder_bumps_on_a_shrink_only_with_the_guard() -> None:
    # PartitionChangeBuilder.java 410-422: with the guard, a shrink without a leader change writes
    # the same leader (leader epoch +1); an expansion never (418: the new ISR holds the old one)
    p = kp((1, 2, 3), 1, (1, 2, 3), 4, 10)
    accept = lambda r: True  # noqa: E731
    shrunk, _ = builder.change(p, accept, target_isr=(1, 2), bump_leader_epoch_on_isr_shrink=True)
    assert (shrunk.leader, shrunk.leader_epoch, shrunk.partition_epoch) == (1, 5, 11)
    grown, _ = builder.change(kp((1, 2, 3), 1, (1, 2), 4, 10), accept, target_isr=(1, 2, 3),
                              bump_leader_epoch_on_isr_shrink=True)
    assert (grown.leader_epoch, grown.partition_epoch) == (4, 11)
    # a reorder is no shrink either (Replicas.contains is set containment)
    reordered, _ = builder.change(p, accept, target_isr=(3, 2, 1), bump_leader_epoch_on_isr_shrink=True)
    assert (reordered.isr, reordered.leader_epoch) == ((3, 2, 1), 4)


# --- the handlers in migration mode, through predict() --------------------------------------------

LEADERLESS = {0: kp((1, 2, 3), NO_LEADER, (3,), 4, 10)}

MIGRATION_ROWS = [
    # (state, event, expected regs {partition: (replicas, leader, isr, le, pe, recovery)}) of the main alternative
    # handleBrokerFenced (ReplicationControlManager.java 1288-1305) -> generateLeaderAndIsrUpdates,
    # whose builder gets setZkMigrationEnabled (line 1939): the follower's removal from t-1 now also
    # bumps the leader epoch (PartitionChangeBuilder.java 396-423); t-0 elects 2 as without migration
    (kraft({1, 2, 3}, THREE, config=MIG), BrokerFailure((1,)),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 1, 1, 0)}),
    # ... the same cluster finalised (the controllers rolled without the setting): no bump
    # (ActivationRecordsGenerator.java 180-188; zkRegistrationAllowed false)
    (kraft({1, 2, 3}, THREE, config={MIGRATION: "false"}), BrokerFailure((1,)),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 0, 1, 0)}),
    # handleBrokerInControlledShutdown (1364-1374) uses the same generateLeaderAndIsrUpdates (1939)
    (kraft({1, 2, 3}, THREE, config=MIG), ControlledShutdown(1),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 1, 1, 0)}),
    # a fence of a broker in no ISR writes nothing (BrokersToIsrs.java 286-288): no record, no bump
    (kraft({1, 2, 3, 4}, THREE, config=MIG), BrokerFailure((4,)),
     {0: ((1, 2, 3), 1, (1, 2, 3), 4, 10, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # the last ISR member fenced: a leader change (-1) bumps once anyway (PartitionChangeBuilder.java
    # 410-413: "The leader is already changing"); the empty ISR is not written (461-463)
    (kraft({1, 2}, {0: kp((1, 2), 1, (1,), 3, 5)}, config=MIG), BrokerFailure((1,)),
     {0: ((1, 2), -1, (1,), 4, 6, 0)}),
    # two followers fenced, one controller event each (maybeFenceOneStaleBroker 1602-1614): +1 each
    (kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10)}, config=MIG), BrokerFailure((2, 3)),
     {0: ((1, 2, 3), 1, (1,), 6, 12, 0)}),
    # handleBrokerUnfenced (1339-1351): the election changes the leader (+1); the rejoins are
    # expansions (alterPartition 1008-1120, builder line 418): no bump, partition epoch +1 each
    (kraft({1, 2}, LEADERLESS, config=MIG), BrokerStartup((3,)), {0: ((1, 2, 3), 3, (3, 1, 2), 5, 13, 0)}),
    # changePartitionReassignment (2100-2130, setZkMigrationEnabled 2120): [1,2,3] -> [4,5,1] as without
    # migration -- the completing record bumps once for the shrunk replica set (378-388), and the ISR
    # shrink in the same record adds nothing (410-413: the leader field is already set)
    (kraft({1, 2, 3, 4, 5}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10)}, config=MIG), Reassign("t", 0, (4, 5, 1)),
     {0: ((4, 5, 1), 1, (1, 4, 5), 5, 13, 0)}),
    # ... a reorder shrinks nothing: no bump
    (kraft({1, 2, 3}, THREE, config=MIG), Reassign("t", 0, (3, 2, 1)),
     {0: ((3, 2, 1), 1, (1, 2, 3), 4, 11, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # electLeader (1485-1533, setZkMigrationEnabled 1520): PREFERRED keeps the ISR -- as without migration
    (kraft({1, 2, 3}, {0: kp((1, 2, 3), 2, (2, 3, 1), 5, 12)}, config=MIG), PreferredElection((T0,)),
     {0: ((1, 2, 3), 1, (2, 3, 1), 6, 13, 0)}),
    # maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader (1638-1671, flag at 1669): the same
    (kraft({1, 2, 3}, {0: kp((1, 2, 3), 2, (2, 3, 1), 5, 12)}, config=MIG), AutoRebalance(),
     {0: ((1, 2, 3), 1, (2, 3, 1), 6, 13, 0)}),
    # admin UNCLEAN (electLeader): a leader change, bumped once as without migration
    (kraft({1, 2}, LEADERLESS, config=MIG), UncleanElection((T0,)), {0: ((1, 2, 3), 1, (1, 2), 5, 12, 0)}),
    # handleDirectoriesOffline (1402-1427) of a KRaft broker (dual-write): the follower removal bumps
    (kraft({1, 2, 3}, THREE, config=MIG), LogDirFailure(2, (T0,)),
     {0: ((1, 2, 3), 1, (1, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3, 1), 0, 0, 0)}),
    # a migrating ZooKeeper broker's failed log directory halts it (ReplicaManager.scala 3.9
    # 2507-2511): fenced at session expiry, every partition of it as by BrokerFailure((1,))
    (kraft({1, 2, 3}, THREE, config={**MIG, ZK_BROKERS: "1"}), LogDirFailure(1, (T0,)),
     {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 1, 1, 0)}),
    # ... whatever the metadata version (no JBOD needed: the halt is the broker's own)
    (kraft({1, 2, 3}, THREE, config={**MIG, ZK_BROKERS: "1", "metadata.version": "3.6-IV1"}),
     LogDirFailure(1, (T0,)), {0: ((1, 2, 3), 2, (2, 3), 5, 11, 0), 1: ((2, 3, 1), 2, (2, 3), 1, 1, 0)}),
    # a ZooKeeper broker registers and is unfenced like a KRaft broker (BrokerLifecycleManager.scala
    # 396, KafkaServer.scala 635-644; BrokerHeartbeatManager.java 547-552)
    (kraft({1, 2}, LEADERLESS, config={**MIG, ZK_BROKERS: "3"}), BrokerStartup((3,)),
     {0: ((1, 2, 3), 3, (3, 1, 2), 5, 13, 0)}),
    # ... unless the controller is not in migration mode: registerBroker refuses it
    # (ClusterControlManager.java 385-387), it stays fenced and leads nothing
    (kraft({1, 2}, LEADERLESS, config={ZK_BROKERS: "3"}), BrokerStartup((3,)), {0: ((1, 2, 3), -1, (3,), 4, 10, 0)}),
]


@pytest.mark.parametrize("state, event, expected", MIGRATION_ROWS)
def test_migration_rows(state, event, expected) -> None:
    assert regs(predict(state, [event]).state) == expected


def test_a_halted_zookeeper_broker_is_no_longer_active() -> None:
    # ReplicaManager.scala 2507-2511: Exit.halt -> no heartbeat -> maybeFenceOneStaleBroker (1602-1614)
    state = kraft({1, 2, 3}, THREE, config={**MIG, ZK_BROKERS: "1"})
    after = predict(state, [LogDirFailure(1, (T0,))])
    assert after.state.live_brokers == frozenset({2, 3})
    assert after.state.offline_replicas == {}
    labels = [plan.label for plan in _event_plans(state, LogDirFailure(1, (T0,)))]
    assert labels == ["ZooKeeper broker 1 halted, fenced"]


def test_a_refused_zookeeper_broker_stays_out_of_the_active_set() -> None:
    # ClusterControlManager.registerBroker 385-387
    state = kraft({1, 2}, LEADERLESS, config={ZK_BROKERS: "3"})
    assert predict(state, [BrokerStartup((3,))]).state.live_brokers == frozenset({1, 2})


def test_two_fence_orders_agree_in_migration_mode() -> None:
    # Without migration "fenced 1 then 2" and "fenced 2 then 1" differ in the leader epoch
    # (test_kraft.test_fence_orders_leave_different_states); with it the follower's removal bumps too
    state = kraft({1, 2, 3}, {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10)}, config=MIG)
    alternatives = predict(state, [BrokerFailure((1, 2))]).alternatives
    assert [regs(a.state)[0] for a in alternatives] == [((1, 2, 3), 3, (3,), 6, 12, 0)]  # one state: no branch


# --- the leaders' AlterPartition shrink -----------------------------------------------------------

SHRINK_ROWS = [
    # (partition, config, cut, expected (leader, isr, le, pe))
    # alterPartition (1008-1120) with setZkMigrationEnabled (1073): a leader's shrink bumps in migration
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), MIG, {3}, (1, (1, 2), 5, 11)),
    # ... not without it at MV 3.9-IV0 (PartitionChangeBuilder.java 397-408)
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), {}, {3}, (1, (1, 2), 4, 11)),
    # ... below MV 3.6-IV0 always (MetadataVersion.java 331-333)
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), {"metadata.version": "3.5-IV2"}, {3}, (1, (1, 2), 5, 11)),
    # Partition.prepareIsrShrink (Partition.scala 1792-1814): every out-of-sync follower in one request
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), MIG, {2, 3}, (1, (1,), 5, 11)),
    # a leader cut from its peer brokers (not from the controllers): no follower fetches from it,
    # its own request gets through -- the ISR is the leader alone, one record
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), MIG, {1}, (1, (1,), 5, 11)),
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), {}, {1}, (1, (1,), 4, 11)),
    # ... the same when a follower is cut too
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), {}, {1, 2}, (1, (1,), 4, 11)),
    # ... and nothing when the leader is already alone
    (kp((1, 2, 3), 1, (1,), 4, 10), {}, {1}, (1, (1,), 4, 10)),
    # a follower cut whose leader's ISR no longer holds it: nothing
    (kp((1, 2, 3), 1, (1, 2), 4, 10), {}, {3}, (1, (1, 2), 4, 10)),
    # a leaderless partition has no leader to ask (validateAlterPartitionData 1151-1255)
    (kp((1, 2, 3), NO_LEADER, (3,), 4, 10), MIG, {3}, (NO_LEADER, (3,), 4, 10)),
]


@pytest.mark.parametrize("p, config, cut, expected", SHRINK_ROWS)
def test_leader_isr_shrink(p, config, cut, expected) -> None:
    state = kraft({1, 2, 3}, {0: p}, config=config)
    q = leader_isr_shrink(state, cut).partition(T0)
    assert (q.leader, q.isr, q.leader_epoch, q.partition_epoch) == expected


def test_alter_partition_refuses_an_inactive_isr_member() -> None:
    # ineligibleReplicasForIsr (1257-1277): a fenced member -> INELIGIBLE_REPLICA, no record
    from kafka_chaos.oracle.kraft.controller import KRaftController

    ctl = KRaftController(kraft({1, 2}, {0: kp((1, 2, 3), 1, (1, 2), 4, 10)}, config=MIG))
    assert not ctl.alter_partition(T0, (1, 3))
    assert ctl.alter_partition(T0, (1,))
    assert (ctl.partitions[T0].leader_epoch, ctl.partitions[T0].partition_epoch) == (5, 11)


# --- what the migration itself writes ------------------------------------------------------------

def test_migrated_partition() -> None:
    # ZkTopicMigrationClient.scala 81-87: partition epoch = the state znode's version (ZkData.scala 412-413)
    zk = PartitionState((1, 2, 3), 2, (2, 3), 7)
    assert migration.migrated_partition(zk, 12) == PartitionState((1, 2, 3), 2, (2, 3), 7, partition_epoch=12)
    # ... 88-96: no state znode -> leader = first replica, ISR = all replicas, epochs 0, RECOVERED
    new = PartitionState((3, 1), NO_LEADER, (), 0, phase=PartitionPhase.NEW)
    assert migration.migrated_partition(new, None) == PartitionState((3, 1), 3, (3, 1), 0, RECOVERED,
                                                                    partition_epoch=0)
    with pytest.raises(ValueError, match="NewPartition"):
        migration.migrated_partition(new, 3)


# --- refusals and the JSON contract ---------------------------------------------------------------

@pytest.mark.parametrize("config, match", [
    # ActivationRecordsGenerator.java 155-157: migration below MV 3.4-IV0 does not activate
    ({**MIG, "metadata.version": "3.3-IV3"}, "3.4-IV0"),
    # ConfigDef.java 699-706: anything but true/false is a ConfigException at start-up
    ({MIGRATION: "yes"}, "not true or false"),
    ({ZK_BROKERS: "1,x"}, "broker ids"),
])
def test_refusals(config, match) -> None:
    with pytest.raises(ValueError, match=match):
        predict(kraft({1, 2, 3}, THREE, config=config), [BrokerFailure((1,))])


def test_parse_broker_ids() -> None:
    assert migration.parse_broker_ids("1, 2,") == frozenset({1, 2})
    assert migration.parse_broker_ids("") == frozenset()
    assert migration.parse_broker_ids([4, 5]) == frozenset({4, 5})
    assert migration.parse_broker_ids("-1") is None
    assert migration.parse_broker_ids(3) is None


def test_json_migration_request() -> None:
    request = {
        "mode": "kraft", "brokers": [1, 2, 3], "controller": 3000,
        "config": {MIGRATION: True, ZK_BROKERS: "1,2"},
        "topics": {"t": {"partitions": {"0": {"replicas": [1, 2, 3], "leader": 1, "isr": [1, 2, 3],
                                              "leader_epoch": 4, "partition_epoch": 10}}}},
        "events": [{"type": "broker_failure", "brokers": [3]}],
    }
    state, events = parse_request(request)
    answer = render_prediction(predict(state, events))
    assert answer["topics"]["t"]["partitions"]["0"]["leader_epoch"] == 5
    assert answer["topics"]["t"]["partitions"]["0"]["partition_epoch"] == 11


@pytest.mark.parametrize("config, field", [
    ({MIGRATION: "yes"}, f"config.{MIGRATION}"),
    ({ZK_BROKERS: "one"}, f"config.{ZK_BROKERS}"),
])
def test_json_refusals(config, field) -> None:
    with pytest.raises(OracleInputError) as error:
        parse_request({"mode": "kraft", "brokers": [1], "config": config})
    assert error.value.field == field


def test_kraft_modules_stay_pure() -> None:
    kraft_dir = Path(migration.__file__).parent
    for path in sorted(kraft_dir.glob("*.py")):
        bad = _imported_roots(path.read_text()) & FORBIDDEN
        assert not bad, f"{path.name} imports {sorted(bad)}"


# --- properties -----------------------------------------------------------------------------------

def _same_but_leader_epochs(plain: ClusterState, migrating: ClusterState, before: ClusterState) -> None:
    assert plain.live_brokers == migrating.live_brokers
    assert set(dict(plain.partitions())) == set(dict(migrating.partitions()))
    for tp, p in plain.partitions():
        q = migrating.partition(tp)
        assert dataclasses.replace(q, leader_epoch=p.leader_epoch) == p, (tp, p, q)
        assert q.leader_epoch >= p.leader_epoch, (tp, p, q)
        if before.has_partition(tp):
            was = before.partition(tp)
            # the bump only fills the leader field of a record written anyway
            assert q.leader_epoch - p.leader_epoch <= q.partition_epoch - was.partition_epoch, (tp, was, p, q)


@SETTINGS
@given(st.data())
def test_migration_mode_changes_leader_epochs_only(data) -> None:
    # zkMigrationEnabled is read in one place, triggerLeaderEpochBumpForIsrShrinkIfNeeded (397),
    # which only sets the leader field (to the current leader) of a record that has an ISR (414-417)
    plain = data.draw(kraft_states())
    event = data.draw(kraft_events(plain))
    migrating = with_config(plain, MIG)
    plain_plans, migrating_plans = _event_plans(plain, event), _event_plans(migrating, event)
    assert [p.label for p in plain_plans] == [p.label for p in migrating_plans]
    for a, b in zip(plain_plans, migrating_plans):
        after_plain, outcomes_plain = _apply(plain, event, 0, a.run)
        after_migrating, outcomes_migrating = _apply(migrating, event, 0, b.run)
        assert outcomes_plain == outcomes_migrating
        _same_but_leader_epochs(after_plain, after_migrating, plain)


@SETTINGS
@given(st.data())
def test_in_migration_a_fence_bumps_every_partition_whose_isr_held_the_broker(data) -> None:
    # generateLeaderAndIsrUpdates (1891-1973): one record per partition with the broker in its ISR;
    # with the guard every such record carries a leader (a new one or, 410-422, the same): +1 exactly
    state = with_config(data.draw(kraft_states()), MIG)
    broker = data.draw(st.sampled_from(sorted(state.live_brokers)))
    after = apply_event(state, BrokerFailure((broker,)))[0]
    for tp, was in state.partitions():
        now = after.partition(tp)
        if broker in was.isr and was.leader != NO_LEADER:
            assert now.leader_epoch == was.leader_epoch + 1, (tp, was, now)
            assert broker not in now.isr or now.isr == (broker,), (tp, was, now)
        elif broker not in was.isr:
            assert now.leader_epoch == was.leader_epoch, (tp, was, now)


@SETTINGS
@given(st.data())
def test_zookeeper_broker_log_dir_failure_is_its_broker_failure(data) -> None:
    # ReplicaManager.scala 2507-2511: the halt, then the session expiry's fence
    state = data.draw(kraft_states())
    broker = data.draw(st.sampled_from(BROKERS))
    state = with_config(state, {**MIG, ZK_BROKERS: str(broker)})
    hosted = [tp for tp, p in state.partitions() if broker in p.replicas]
    failed = tuple(data.draw(st.lists(st.sampled_from(hosted), unique=True))) if hosted else ()
    halted = predict(state, [LogDirFailure(broker, failed)])
    fenced = predict(state, [BrokerFailure((broker,))])
    assert [regs_all(a.state) for a in halted.alternatives] == [regs_all(a.state) for a in fenced.alternatives]
    assert halted.outcomes == fenced.outcomes


@SETTINGS
@given(st.data())
def test_zookeeper_brokers_are_kraft_brokers_for_everything_else(data) -> None:
    # ClusterControlManager.isActive (737-745), BrokerHeartbeatManager.calculateNextBrokerState
    # (535-612) and LeaderAcceptor (2343-2365) never look at isMigratingZkBroker
    state = with_config(data.draw(kraft_states()), MIG)
    event = data.draw(kraft_events(state))
    if isinstance(event, LogDirFailure):
        return
    zk = data.draw(st.lists(st.sampled_from(BROKERS), unique=True))
    hybrid = with_config(state, {ZK_BROKERS: ",".join(map(str, zk))})
    as_kraft = predict(state, [event])
    as_hybrid = predict(hybrid, [event])
    assert [regs_all(a.state) for a in as_kraft.alternatives] == [regs_all(a.state) for a in as_hybrid.alternatives]
    assert as_kraft.outcomes == as_hybrid.outcomes


@SETTINGS
@given(st.data())
def test_without_migration_mode_zookeeper_brokers_never_become_active(data) -> None:
    # ClusterControlManager.registerBroker 385-387
    state = data.draw(kraft_states())
    dead = [b for b in BROKERS if b not in state.live_brokers]
    if not dead:
        return
    zk = data.draw(st.lists(st.sampled_from(dead), unique=True, min_size=1))
    refused = with_config(state, {ZK_BROKERS: ",".join(map(str, zk))})
    for alternative in predict(refused, [BrokerStartup(tuple(dead))]).alternatives:
        assert not alternative.state.live_brokers & set(zk)
        for tp, p in alternative.state.partitions():
            assert p.leader not in zk, (tp, p)
            assert set(p.isr) & set(zk) <= set(state.partition(tp).isr), (tp, p)  # no zk broker joins an ISR


@SETTINGS
@given(st.data())
def test_invariants_hold_in_migration_mode(data) -> None:
    state = with_config(data.draw(kraft_states()), {**MIG, ZK_BROKERS: ",".join(
        map(str, data.draw(st.lists(st.sampled_from(BROKERS), unique=True))))})
    walk_checking_invariants(data, state)


@SETTINGS
@given(st.data())
def test_leader_isr_shrink_epochs(data) -> None:
    # alterPartition (1008-1120): one record per shrunk partition; leader epoch +1 iff the guard
    plain = data.draw(kraft_states())
    cut = set(data.draw(st.lists(st.sampled_from(BROKERS), unique=True, min_size=1)))
    for config, bump in (({}, 0), (MIG, 1)):
        state = with_config(plain, config)
        after = leader_isr_shrink(state, cut)
        for tp, was in state.partitions():
            now = after.partition(tp)
            follower_cut = was.leader != NO_LEADER and was.leader not in cut and bool(cut & set(was.isr))
            leader_cut = was.leader in cut and len(was.isr) > 1 and was.leader in state.live_brokers
            if follower_cut or leader_cut:
                kept = (was.leader,) if leader_cut else tuple(r for r in was.isr if r not in cut)
                assert now.isr == kept, (tp, was, now)
                assert (now.leader, now.leader_epoch, now.partition_epoch) == (
                    was.leader, was.leader_epoch + bump, was.partition_epoch + 1), (tp, was, now)
            else:
                assert now == was, (tp, was, now)


# --- a migrated broker's first start as a KRaft broker assigns its directories -------------------

DIRECTORY_ROWS = [
    # (partition: replicas, leader, ISR, unassigned dirs before; broker started as KRaft;
    #  expected leader epoch, partition epoch, unassigned dirs after)
    # ReplicaManager.scala 2912-2923 + ReplicationControlManager.java 2157-2230: every replica of
    # the broker still MIGRATING is assigned: partition epoch +1, leader epoch unchanged
    (((1, 2, 3), 1, (1, 2, 3), (1, 2, 3)), 2, (4, 7, (1, 3))),
    # a replica it does not host is not its to assign
    (((1, 3), 1, (1, 3), (1, 3)), 2, (4, 6, (1, 3))),
    # already assigned (a pure KRaft partition, or an earlier start): nothing to write
    (((1, 2, 3), 1, (1, 2, 3), ()), 2, (4, 6, ())),
]


@pytest.mark.parametrize(("partition", "broker", "after"), DIRECTORY_ROWS)
def test_a_broker_started_as_kraft_assigns_its_migrating_directories(partition, broker, after) -> None:
    replicas, leader, isr, unassigned = partition
    live = set(replicas) - {broker}
    before = kraft(live, {0: dataclasses.replace(kp(replicas, leader, tuple(r for r in isr if r != broker), 4, 6),
                                                 unassigned_dirs=unassigned)},
                   config={**MIG, ZK_BROKERS: ",".join(map(str, sorted(set(replicas) | {broker})))})
    p = predict(before, [BrokerStartup((broker,), kraft_brokers=(broker,))]).state.partition(T0)
    rejoined = 1 if broker in replicas else 0  # the leader's AlterPartition adding it back (settle)
    assert (p.leader_epoch, p.partition_epoch - rejoined, p.unassigned_dirs) == after


def test_a_start_in_migration_mode_assigns_nothing() -> None:
    """A broker restarted as a ZooKeeper broker again (hybrid) sends no AssignReplicasToDirs: its
    directories stay MIGRATING (maybeUpdateTopicAssignment runs in KRaft brokers' metadata
    publishing only)."""
    before = kraft({1, 3}, {0: dataclasses.replace(kp((1, 2, 3), 1, (1, 3), 4, 6), unassigned_dirs=(1, 2, 3))},
                   config={**MIG, ZK_BROKERS: "1,2,3"})
    p = predict(before, [BrokerStartup((2,))]).state.partition(T0)
    assert (p.partition_epoch, p.unassigned_dirs) == (7, (1, 2, 3))  # only the ISR rejoin


def test_kraft_brokers_must_be_among_the_starting_ones() -> None:
    with pytest.raises(ValueError, match="among the starting brokers"):
        BrokerStartup((1,), kraft_brokers=(2,))

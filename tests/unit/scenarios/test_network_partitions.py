"""Network-partition faults, pure parts: targeting, oracle events per variant, the leader-side
ISR rules, the rule check, the settled precondition with a cut follower, client windows."""

from __future__ import annotations

from dataclasses import replace

import random
from types import SimpleNamespace as NS

import pytest

from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, ClusterState, PartitionState, Release, TopicState, predict
from kafka_chaos.scenarios.model import isr_rules
from kafka_chaos.scenarios.checks.functions import check_isr_rule
from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.faults import FaultEnv, Nemesis, make_fault
from kafka_chaos.scenarios.checks.latency import client_window, isr_written_at
from kafka_chaos.scenarios.model.snapshots import is_settled, judged_topics, unsettled
from kafka_chaos.scenarios.model.targets import FollowerOf, NonControllerLeaderOf, PartitionView, Target, TargetView

# --- targeting --------------------------------------------------------------------------------


def view(controller: int) -> TargetView:
    parts = {("t", 0): PartitionView((1, 2), 1, (1, 2)), ("t", 1): PartitionView((2, 3), 2, (2, 3)),
             ("t", 2): PartitionView((3, 1), 3, (3, 1)), ("r", 0): PartitionView((1, 2, 3), 1, (1, 2, 3))}
    return TargetView(frozenset({1, 2, 3}), controller, parts, frozenset({1, 2, 3}))


def test_non_controller_leader_skips_the_controller_deterministically() -> None:
    assert NonControllerLeaderOf("t").resolve(view(1), random.Random(1)) == Target(
        (2,), "broker 2 (leader of t-1, not the controller)")
    assert NonControllerLeaderOf("t").resolve(view(3), random.Random(9)).brokers == (1,)
    lone = TargetView(frozenset({1}), 1, {("t", 0): PartitionView((1, 2), 1, (1,))})
    with pytest.raises(UsageError, match="other than the controller"):
        NonControllerLeaderOf("t").resolve(lone, random.Random(1))


@pytest.mark.parametrize("seed", range(20))
def test_follower_sparing_the_controller_never_picks_it(seed: int) -> None:
    chosen = FollowerOf("r", 0, spare_controller=True).resolve(view(2), random.Random(seed))
    assert chosen.brokers == (3,)
    # without the option both followers are possible (the existing behaviour)
    assert FollowerOf("r", 0).resolve(view(2), random.Random(seed)).brokers[0] in (2, 3)


def test_follower_sparing_the_controller_may_find_none() -> None:
    with pytest.raises(UsageError, match="follower of t-0 other than the controller"):
        FollowerOf("t", 0, spare_controller=True).resolve(view(2), random.Random(1))


# --- faults: variants, oracle events, nemesis ----------------------------------------------------


class FakePartitioner:
    backend = "containers"
    bootstrap_servers = "127.0.0.1:1"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        self.calls.append(("isolate", broker_id, from_zookeeper, from_brokers, from_clients))

    def heal_network(self) -> None:
        self.calls.append(("heal",))


class NoPartitions:
    backend = "local"


def net(variant: str, brokers=(2,), **extra):
    return make_fault("network_partition", Target(tuple(brokers), f"broker {brokers}"),
                      {"variant": variant, **extra}, topic_names={}, topic_partitions={})


def test_variants_isolate_what_they_say() -> None:
    cluster = FakePartitioner()
    env = FaultEnv(cluster, None, None)
    for variant in ("everyone", "zookeeper", "peers"):
        net(variant).inject(env)
    assert cluster.calls == [("isolate", 2, True, True, True), ("isolate", 2, True, False, False),
                             ("isolate", 2, False, True, False)]


def test_oracle_events_and_rules_per_variant() -> None:
    assert net("zookeeper").oracle_events() == [BrokerFailure((2,))]
    assert net("everyone").oracle_events() == [BrokerFailure((2,))]
    assert net("peers").oracle_events() == []  # the controller sees nothing
    assert net("heal", cut="zookeeper").oracle_events() == [BrokerStartup((2,))]
    assert net("heal", cut="everyone").oracle_events() == [BrokerStartup((2,))]
    assert net("heal", cut="peers").oracle_events() == []
    assert [net(v).isr_rule for v in ("zookeeper", "everyone", "peers")] == [
        isr_rules.LEADER_ISR_REJOIN, None, isr_rules.LEADER_ISR_SHRINK]
    assert net("heal", cut="peers").isr_rule == isr_rules.LEADER_ISR_EXPAND
    assert net("heal", cut="zookeeper").isr_rule is None
    assert net("peers").label == "network_partition/peers"
    assert net("heal", cut="peers").label == "network_partition/heal"
    assert make_fault("hard_kill", Target((1,), "b"), {}, topic_names={}, topic_partitions={}).label == "hard_kill"


def test_bad_variants_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="'variant'"):
        net("carrier-pigeon")
    with pytest.raises(UsageError, match="'cut'"):
        net("heal")  # which cut it heals decides its oracle events


def test_nemesis_holds_the_cut_broker_until_the_heal_step_and_heals_at_teardown() -> None:
    cluster = FakePartitioner()
    nemesis = Nemesis(FaultEnv(cluster, None, None))
    nemesis.inject(net("zookeeper"))
    assert nemesis.faulted_brokers == {2}
    with pytest.raises(HarnessError, match="already faulted by network_partition"):
        nemesis.inject(net("peers"))
    nemesis.inject(net("heal", cut="zookeeper"))
    assert nemesis.faulted_brokers == frozenset()
    nemesis.inject(net("peers", (3,)))
    assert nemesis.heal_all() == []  # teardown heals the cut left open
    assert nemesis.heal_all() == []  # and only once
    assert cluster.calls == [("isolate", 2, True, False, False), ("heal",), ("isolate", 3, False, True, False),
                             ("heal",)]


def test_heal_of_a_cut_is_idempotent() -> None:
    cluster = FakePartitioner()
    env = FaultEnv(cluster, None, None)
    cut = net("everyone")
    cut.heal(env)  # never injected: nothing to undo
    cut.inject(env)
    cut.heal(env)
    cut.heal(env)
    assert cluster.calls == [("isolate", 2, True, True, True), ("heal",)]


@pytest.fixture
def host_cannot_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local launcher on a machine without root/iptables (this one may have both)."""
    import kafka_chaos.harness.local.cluster

    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem",
                        lambda: "network partitions on the local launcher need root (iptables on loopback)")


def test_a_launcher_without_partitions_is_one_clear_error(host_cannot_cut: None) -> None:
    with pytest.raises(HarnessError, match="network_partition/zookeeper: network partitions on the local "
                                           "launcher need root") as info:
        net("zookeeper").inject(FaultEnv(NoPartitions(), None, None))
    assert "\n" not in str(info.value)


# --- leader-side ISR rules ------------------------------------------------------------------------


def state(**partitions) -> ClusterState:
    parts = {int(name.split("_")[1]): PartitionState(replicas, leader, isr, epoch)
             for name, (replicas, leader, isr, epoch) in partitions.items()}
    return ClusterState(frozenset({1, 2, 3}), {"r": TopicState(parts)}, controller=1)


FULL = state(p_0=((1, 2, 3), 1, (1, 2, 3), 4), p_1=((2, 3, 1), 2, (2, 3, 1), 0), p_2=((3, 1, 2), 3, (3, 1, 2), 7))


def test_shrink_drops_the_cut_follower_where_a_reachable_leader_can_ask_the_controller() -> None:
    shrunk = isr_rules.shrink_isr_without(FULL, [2])
    r = shrunk.topics["r"].partitions
    assert r[0].isr == (1, 3) and r[2].isr == (3, 1)
    assert r[1] == FULL.topics["r"].partitions[1], "a partition the cut broker leads keeps its ISR"
    assert [ps.leader_epoch for ps in r.values()] == [4, 0, 7] and [ps.leader for ps in r.values()] == [1, 2, 3]
    assert isr_rules.changed_partitions(FULL, shrunk, ["r"]) == [("r", 0), ("r", 2)]


@pytest.mark.parametrize("release, ibp, cut_leader_isr", [
    ("3.9.2", None, (2, 3, 1)),  # AlterPartition cannot reach the controller: kept
    ("2.7.2", None, (2, 3, 1)),  # AlterIsr from 2.7 (IBP 2.7-IV2)
    ("2.7.2", "2.7-IV1", (2,)),  # an older IBP: ZkIsrManager, the leader writes ZooKeeper itself
    ("3.9.2", "2.6", (2,)),      # 3.9 KafkaServer: ZkAlterPartitionManager below IBP_2_7_IV2
    ("2.6.3", None, (2,)),       # before KIP-497 the leader always writes it (Partition.updateIsr)
    ("2.4.1", None, (2,)),       # seen on 2.4.1: follower_cut_from_leader, r-2 ISR [3]
])
def test_a_cut_leader_that_writes_its_own_isr_keeps_only_itself(release, ibp, cut_leader_isr) -> None:
    state = replace(FULL, release=Release.parse(release),
                    config={} if ibp is None else {"inter.broker.protocol.version": ibp})
    shrunk = isr_rules.shrink_isr_without(state, [2])
    r = shrunk.topics["r"].partitions
    assert r[1].isr == cut_leader_isr and r[1].leader == 2 and r[1].leader_epoch == 0
    assert r[0].isr == (1, 3) and r[2].isr == (3, 1)  # the other leaders drop it on every release
    assert shrunk.release == Release.parse(release)


def test_expand_is_the_settled_state_and_undoes_the_shrink() -> None:
    shrunk = isr_rules.apply_rule(isr_rules.LEADER_ISR_SHRINK, FULL, [2])
    back = isr_rules.apply_rule(isr_rules.LEADER_ISR_EXPAND, shrunk, [2])
    assert {p: set(ps.isr) for p, ps in back.topics["r"].partitions.items()} == {0: {1, 2, 3}, 1: {1, 2, 3},
                                                                                  2: {1, 2, 3}}
    assert [ps.leader_epoch for ps in back.topics["r"].partitions.values()] == [4, 0, 7]
    assert isr_rules.changed_partitions(shrunk, back, ["r"]) == [("r", 0), ("r", 2)]
    with pytest.raises(ValueError, match="unknown ISR rule"):
        isr_rules.apply_rule("nope", FULL, [])


WITH_OFFSETS = replace(FULL, topics={**FULL.topics, "__consumer_offsets": FULL.topics["r"]})


@pytest.mark.parametrize("rule, judged", [
    (None, ["r", "__consumer_offsets"]),
    # the controller takes a broker cut from ZooKeeper out of every ISR, the offsets topic's too: a
    # snapshot judged on "r" alone may be read before its last ISR write (two CI runs'
    # isr_registered failures on containers: __consumer_offsets-0 still naming the cut broker)
    (isr_rules.LEADER_ISR_REJOIN, ["r", "__consumer_offsets"]),
    # a leader drops a silent follower only if the partition is written meanwhile
    (isr_rules.LEADER_ISR_SHRINK, ["r"]),
    (isr_rules.LEADER_ISR_EXPAND, ["r"]),
])
def test_internal_topics_are_judged_unless_a_leader_side_rule_decides_their_isr(rule, judged) -> None:
    assert judged_topics(["r"], WITH_OFFSETS, rule) == judged
    assert judged_topics(["r"], FULL, rule) == ["r"], "an input without the offsets topic judges it not"


def test_the_oracle_alone_predicts_no_change_for_a_peer_cut() -> None:
    # The reason the rule exists: no controller event, so the oracle keeps the full ISR.
    assert predict(FULL, net("peers").oracle_events()).state == FULL


def test_isr_rule_check_passes_and_fails() -> None:
    before = FULL.topics["r"].partitions[0]
    want = isr_rules.shrink_isr_without(FULL, [2]).topics["r"].partitions[0]
    rule, source = isr_rules.LEADER_ISR_SHRINK, isr_rules.RULE_SOURCES[isr_rules.LEADER_ISR_SHRINK]
    ok = check_isr_rule(rule, source, "r", 0, before, want, NS(isr=(3, 1), leader=1, leader_epoch=4))
    assert ok.passed is True and ok.check == rule and "maybeShrinkIsr" in ok.detail
    still = check_isr_rule(rule, source, "r", 0, before, want, NS(isr=(1, 2, 3), leader=1, leader_epoch=4))
    assert still.passed is False and "ISR expected [1, 3]" in still.detail
    bumped = check_isr_rule(rule, source, "r", 0, before, want, NS(isr=(1, 3), leader=1, leader_epoch=5))
    assert bumped.passed is False and "leader_epoch changed 4 -> 5" in bumped.detail
    moved = check_isr_rule(rule, source, "r", 0, before, want, NS(isr=(3,), leader=3, leader_epoch=5))
    assert moved.passed is False and "leader moved 1 -> 3" in moved.detail


# --- settled with a cut follower -------------------------------------------------------------------


def zk(t, p, replicas, leader, isr, epoch=0):
    return PartitionZkState(t, p, tuple(replicas), leader, epoch, tuple(isr), 1, 0, 1)


def test_a_follower_held_by_a_fault_is_excused_from_catching_up() -> None:
    snap = ZkSnapshot(taken_at=0.0, live_brokers={1: 1, 2: 2, 3: 3}, controller=1, controller_epoch=1,
                      partitions={("r", 0): zk("r", 0, (1, 2, 3), 1, (1, 3))}, topic_configs={},
                      pending_reassignment=False)
    assert unsettled(snap, ["r"]) == ["r-0 ISR [1, 3] lacks live [2]"]
    assert is_settled(snap, ["r"], excused={2})
    assert not is_settled(snap, ["r"], excused={3})


def test_the_followers_of_a_leader_held_by_a_fault_are_excused_too() -> None:
    """A broker whose peer links lose 80 % leads a partition: its followers cannot fetch from it
    until the links heal, so the step before the heal must not wait for them."""
    snap = ZkSnapshot(taken_at=0.0, live_brokers={1: 1, 2: 2, 3: 3}, controller=1, controller_epoch=1,
                      partitions={("__consumer_offsets", 3): zk("__consumer_offsets", 3, (2, 3, 1), 2, (2,))},
                      topic_configs={}, pending_reassignment=False)
    assert unsettled(snap, None) == ["__consumer_offsets-3 ISR [2] lacks live [3, 1]"]
    assert is_settled(snap, None, excused={2})
    assert not is_settled(snap, None, excused={3})


# --- client windows ---------------------------------------------------------------------------------

T0 = 1000.0


def acks(partition: int, *times: float) -> list[Ack]:
    return [Ack(partition, i, f"k{partition}-{i}", t) for i, t in enumerate(times)]


def test_isr_written_at_is_the_first_write_with_that_isr() -> None:
    events = [NS(at=999.0, kind="partition_state", topic="r", partition=0, isr=(1, 3)),
              NS(at=1004.0, kind="partition_state", topic="r", partition=0, isr=(1, 2, 3)),
              NS(at=1004.5, kind="partition_state", topic="r", partition=0, isr=(3, 1)),
              NS(at=1005.0, kind="partition_state", topic="r", partition=0, isr=(1, 3))]
    assert isr_written_at(events, "r", 0, (1, 3), T0) == 1004.5
    assert isr_written_at(events, "r", 1, (1, 3), T0) is None


def test_client_window_of_a_follower_shrink() -> None:
    # acks every 0.05 s, then silence while the leader waits for the cut follower, resumed at
    # the ISR shrink 3.6 s later
    series = acks(0, 999.9, 999.95, 1000.0, 1003.7, 1003.75, 1003.8)
    w = client_window(T0, 1003.85, series, 0, isr_change_at=1003.65)
    assert w.ms() == {"first_produce": 3700.0, "client_gap": 3700.0}
    assert (w.gap_start, w.gap_end, w.silent_since) == (1000.0, 1003.7, None)
    assert w.timestamps()["isr_change"] == 1003.65
    other = client_window(T0, 1010.0, series, 1)
    assert other.ms() == {"first_produce": None, "client_gap": None} and other.silent_since is None


def test_client_window_of_a_stalled_leader_reports_the_open_silence() -> None:
    # a leader cut off from its followers: a couple of in-flight acks, then nothing to the end
    series = acks(1, 999.9, 999.95, 1000.02, 1000.05)
    w = client_window(T0, 1012.0, series, 1)
    assert w.silent_since == 1000.05 and w.ms()["client_gap"] == 70.0  # the largest finite gap
    assert w.timestamps()["silent_since"] == 1000.05
    # healed: the episode's window (cut .. after the heal) shows the whole stall as one gap
    healed = client_window(T0, 1030.0, series + acks(1, 1021.0, 1021.05), 1)
    assert healed.ms()["client_gap"] == pytest.approx(20950.0) and healed.silent_since is None


# --- the runner on a backend that cannot cut ---------------------------------------------------------


def test_runner_skips_a_partition_scenario_on_the_local_backend_with_an_unknown_record(tmp_path,
                                                                                      host_cannot_cut) -> None:
    from kafka_chaos.records.writer import RecordWriter, read_records
    from kafka_chaos.scenarios.plans.catalogue import by_names
    from kafka_chaos.scenarios.run.pool import ClusterPool
    from kafka_chaos.scenarios.run.runner import Runner, RunOptions

    lines: list[str] = []
    pool = ClusterPool("local", None, lines.append)
    writer = RecordWriter(tmp_path)
    runner = Runner(RunOptions(run_id="r1", results_dir=tmp_path), pool, writer, lines.append)
    outcome = runner.run(by_names(["leader_cut_from_zookeeper"])[0], 0)
    writer.close()
    assert pool.cluster is None, "no cluster is started for a scenario that cannot run"
    assert not outcome.passed and outcome.counts == (0, 0, 1) and outcome.error is None
    [record] = read_records(tmp_path).records
    assert record.passed is None and record.check == "backend_supports_scenario"
    assert "need root (iptables on loopback)" in record.detail
    assert any("skipped" in line for line in lines)


# --- a broker cut from ZooKeeper only: re-added by its leaders before 2.5 (KAFKA-9338) -------------

@pytest.mark.parametrize("release, ibp, rejoined", [
    ("3.9.2", None, False), ("3.2.3", None, False),  # fenced: "has an older epoch" (seen on 3.2.3)
    ("2.5.1", None, False),  # KAFKA-9338: the fetch session keeps the follower's leader epoch
    ("2.4.1", None, True),  # never fenced: re-added (seen on 2.4.1: controller_cut_from_zookeeper)
    ("2.4.1", "2.3", True), ("3.9.2", "2.7-IV1", False),  # the IBP does not decide it
])
def test_a_broker_cut_from_zookeeper_rejoins_the_isrs_it_followed_where_it_is_not_fenced(
        release: str, ibp: str | None, rejoined: bool) -> None:
    before = replace(FULL, release=Release.parse(release), controller=1,
                     config={} if ibp is None else {"inter.broker.protocol.version": ibp})
    after = predict(before, [BrokerFailure((2,))]).state
    ruled = isr_rules.apply_rule(isr_rules.LEADER_ISR_REJOIN, after, [2], before)
    r, controller_said = ruled.topics["r"].partitions, after.topics["r"].partitions
    # r-0 (leader 1) and r-2 (leader 3) kept their leader: 2 fetches there and is appended back
    assert (r[0].isr, r[2].isr) == (((1, 3, 2), (3, 1, 2)) if rejoined else ((1, 3), (3, 1)))
    assert [p.leader_epoch for p in r.values()] == [p.leader_epoch for p in controller_said.values()]
    # r-1 was led by 2: its new leader was never announced to 2, which does not fetch there
    assert r[1] == controller_said[1] and 2 not in r[1].isr
    assert isr_rules.changed_partitions(after, ruled, ["r"]) == ([("r", 0), ("r", 2)] if rejoined else [])

"""The ``log_dir_failure`` fault kind against a fake cluster: which directory fails, the oracle
events it declares (``LogDirFailure`` for the observed partitions there, ``BrokerFailure`` when it
is the broker's last live directory), its heal (repair, then restart), and the replicas it keeps
offline for later steps' oracle input."""

from __future__ import annotations

import dataclasses

from typing import Any

import pytest

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.oracle import (
    BrokerFailure,
    BrokerStartup,
    ClusterState,
    ControlledShutdown,
    LogDirFailure,
    PartitionState,
    TopicPartition,
    TopicState,
)
from kafka_chaos.scenarios.faults import FaultEnv, Nemesis, make_fault
from kafka_chaos.scenarios.model.targets import Target
from tests.unit.scenarios.fakes import FakeBrokers


class FakeCluster(FakeBrokers):
    """LogDirFailer + BrokerControl on dicts; records the calls in order."""

    def __init__(self, dirs: int = 2) -> None:
        super().__init__()
        self.dirs = dirs
        self.held = {(1, 0): [("phys-t", 0), ("__consumer_offsets", 1), ("old-topic", 4)],
                     (1, 1): [("phys-t", p) for p in range(1, 6)]}
        self.failed: set[tuple[int, int]] = set()

    def log_dirs(self, b: int) -> list[str]:
        return [f"/d{b}/{i}" for i in range(self.dirs)]

    def log_dir_partitions(self, b: int, i: int) -> list[tuple[str, int]]:
        return list(self.held.get((b, i), []))

    def fail_log_dir(self, b: int, i: int) -> None:
        self.calls.append(("fail", i))
        self.failed.add((b, i))

    def failed_log_dirs(self, b: int) -> list[int]:
        return sorted(i for (x, i) in self.failed if x == b)

    def repair_log_dirs(self, b: int) -> list[int]:
        self.calls.append(("repair", b))
        done = self.failed_log_dirs(b)
        self.failed -= {(b, i) for i in done}
        return done


# What the oracle predicts from: phys-t and __consumer_offsets (not old-topic, a previous scenario's).
STATE = ClusterState(frozenset({1, 2, 3}), {
    "phys-t": TopicState({p: PartitionState((1, 2), 1, (1, 2), 0) for p in range(6)}),
    "__consumer_offsets": TopicState({1: PartitionState((2, 1), 2, (2, 1), 0)})}, controller=2)


def _env(cluster: FakeCluster) -> FaultEnv:
    return FaultEnv(cluster, None, None)  # type: ignore[arg-type]


def _fault(brokers: tuple[int, ...] = (1,), **options: Any) -> Any:
    return make_fault("log_dir_failure", Target(brokers, "test"), options, topic_names={"t": "phys-t"},
                      topic_partitions={"t": (0, 1, 2, 3, 4, 5)})


def test_the_directory_holding_the_partition_fails_and_its_watched_partitions_go_offline() -> None:
    cluster = FakeCluster()
    f = _fault(topic="t", partition=3)
    env = _env(cluster)
    assert Nemesis(env).prepare(f, STATE) == [LogDirFailure(1, tuple(TopicPartition("phys-t", p) for p in range(1, 6)))]
    f = _fault(topic="t", partition=0)
    assert Nemesis(env).prepare(f, STATE) == [
        LogDirFailure(1, (TopicPartition("phys-t", 0), TopicPartition("__consumer_offsets", 1)))]
    f.inject(env)
    assert cluster.calls == [("fail", 0)]
    assert f.holds == (1,)


def test_the_last_live_directory_halts_the_broker() -> None:
    cluster = FakeCluster(dirs=1)
    cluster.held = {(1, 0): cluster.held[(1, 0)] + cluster.held.pop((1, 1))}
    f = _fault(dir=0)
    assert Nemesis(_env(cluster)).prepare(f, STATE) == [BrokerFailure((1,))]
    cluster = FakeCluster(dirs=2)
    cluster.failed.add((1, 1))  # its other directory failed earlier
    assert Nemesis(_env(cluster)).prepare(_fault(dir=0), STATE) == [BrokerFailure((1,))]


def test_heal_repairs_before_restarting_and_only_once() -> None:
    cluster = FakeCluster()
    env = _env(cluster)
    f = _fault(dir=0)
    f.inject(env)  # prepares itself when no pipeline did (the pytest plugin's inject)
    f.heal(env)
    f.heal(env)
    assert cluster.calls == [("fail", 0), ("repair", 1), ("stop", 1), ("start", 1)]
    assert cluster.failed == set()


def test_the_heal_step_restarts_a_running_broker_and_starts_a_halted_one() -> None:
    cluster = FakeCluster()
    heal = _fault(variant="heal")
    assert heal.label == "log_dir_failure/heal" and heal.releases == (1,)
    assert Nemesis(_env(cluster)).prepare(heal, STATE) == [ControlledShutdown(1), BrokerStartup((1,))]
    cluster.running[1] = False
    heal = _fault(variant="heal")
    assert Nemesis(_env(cluster)).prepare(heal, STATE) == [BrokerStartup((1,))]
    heal.inject(_env(cluster))
    assert cluster.calls == [("repair", 1), ("start", 1)]


def test_later_steps_see_the_replicas_on_the_failed_directory() -> None:
    cluster = FakeCluster()
    nemesis = Nemesis(_env(cluster))
    t = TopicState({p: PartitionState((1, 2), 1, (1, 2), 0) for p in range(6)})
    state = ClusterState(frozenset({1, 2, 3}), {"phys-t": t}, controller=2)
    f = _fault(topic="t", partition=3)
    nemesis.prepare(f, state)
    assert nemesis.with_controller_memory(state) == state  # not injected yet
    nemesis.inject(f)
    assert nemesis.with_controller_memory(state).offline_replicas == {
        1: frozenset(TopicPartition("phys-t", p) for p in range(1, 6))}
    gone = ClusterState(frozenset({2, 3}), {"phys-t": t}, controller=2)
    assert nemesis.with_controller_memory(gone).offline_replicas == {}  # a dead broker has no entry
    nemesis.heal_all()
    assert nemesis.with_controller_memory(state) == state


@pytest.mark.parametrize(("options", "message"), [
    ({"dir": True}, "'dir'"),
    ({"dir": -1}, "'dir'"),
    ({"partition": "0", "topic": "t"}, "'partition'"),
    ({"topic": "t", "dir": 1}, "not both"),
    ({"variant": "melt"}, "'variant'"),
    ({"colour": 1}, "unknown option 'colour'"),
    ({"topic": "nope"}, "'topic'"),
])
def test_bad_options_are_one_line(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _fault(**options)


def test_one_broker_only_and_a_partition_it_does_not_hold() -> None:
    with pytest.raises(HarnessError, match="one broker"):
        Nemesis(_env(FakeCluster())).prepare(_fault((1, 2), dir=0), STATE)
    with pytest.raises(HarnessError, match="no replica of phys-t-9"):
        Nemesis(_env(FakeCluster())).prepare(_fault(topic="t", partition=9), STATE)


def test_the_catalogue_scenarios_round_trip_as_schedules_with_their_two_log_dirs() -> None:
    import json

    from kafka_chaos.scenarios.plans.catalogue import by_names
    from kafka_chaos.scenarios.plans.schedule import dumps, from_scenario, schedule_from_json

    [s] = by_names(["leader_log_dir_failure"])
    text = dumps(from_scenario(s))
    back = schedule_from_json(json.loads(text))
    assert json.loads(text)["cluster"]["log_dirs"] == 2
    assert back.needs == s.needs and back.steps == s.steps
    bad = json.loads(text)
    bad["cluster"]["log_dirs"] = 0
    with pytest.raises(UsageError, match="cluster.log_dirs"):
        schedule_from_json(bad)


def test_the_cluster_verbs_refuse_bad_input_in_one_line(tmp_path: Any, capsys: Any) -> None:
    from kafka_chaos.cli.main import main

    assert main(["cluster", "fail-log-dir", "1", "--state-dir", str(tmp_path)]) == 2  # no cluster there
    assert main(["cluster", "repair-log-dir", "1", "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err and "cluster.json" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["cluster", "fail-log-dir", "1", "--dir", "first"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["cluster", "up", "--log-dirs", "9"])


def test_a_follower_log_created_late_is_waited_for() -> None:
    # ZooKeeper shows the controller's ISR before the follower has created its log.
    cluster = FakeCluster()
    late = cluster.held[(1, 1)].pop()
    listed = {"calls": 0}
    real = cluster.log_dir_partitions

    def listing(b: int, i: int) -> list[tuple[str, int]]:
        listed["calls"] += 1
        if listed["calls"] == 5:
            cluster.held[(1, 1)].append(late)
        return real(b, i)

    cluster.log_dir_partitions = listing  # type: ignore[method-assign]
    [event] = Nemesis(_env(cluster)).prepare(_fault(dir=1), STATE)
    assert isinstance(event, LogDirFailure) and TopicPartition(*late) in event.partitions


def test_later_steps_see_the_replicas_the_same_controller_deleted_before_their_broker_went_down() -> None:
    """The last converged step's predicted memory (ClusterState.deleted_offline_replicas) goes
    into the next step's oracle input while it still holds: the topic still queued, the replica's
    broker still down, the same controller; a step that did not converge forgets it."""
    nemesis = Nemesis(_env(FakeCluster()))
    tp0, tp1 = TopicPartition("d", 0), TopicPartition("d", 1)
    d = TopicState({0: PartitionState((6, 9), -1, (9,), 4), 1: PartitionState((8, 6), -1, (8,), 4)})
    predicted = ClusterState(frozenset({9}), {"d": d}, controller=9, topics_being_deleted=frozenset({"d"}),
                             deleted_offline_replicas=frozenset({(tp0, 6), (tp1, 6)}))
    observed = ClusterState(frozenset({9}), {"d": d}, controller=9, topics_being_deleted=frozenset({"d"}))
    nemesis.remember(predicted)
    assert nemesis.with_controller_memory(observed) == predicted
    moved = ClusterState(frozenset({9, 3}), {"d": d}, controller=3, topics_being_deleted=frozenset({"d"}))
    assert nemesis.with_controller_memory(moved) == moved  # another controller knows nothing of it
    back = ClusterState(frozenset({9, 6}), {"d": d}, controller=9, topics_being_deleted=frozenset({"d"}))
    assert nemesis.with_controller_memory(back) == back  # 6 is up: the settled rule covers it
    nemesis.remember(None)
    assert nemesis.with_controller_memory(observed) == observed


def test_what_a_failover_forgot_holds_for_the_controller_that_won_it() -> None:
    """A step whose controller failover found a deletion ineligible predicts the topic's deletions
    forgotten (ClusterState.deletions_forgotten) without knowing who won: the next step's input
    carries it for the observed controller, as long as the topic stays queued."""
    nemesis = Nemesis(_env(FakeCluster()))
    d = TopicState({0: PartitionState((3, 9), -1, (3,), 4), 1: PartitionState((9, 10), -1, (10,), 3)})
    predicted = ClusterState(frozenset({3}), {"d": d}, controller=None, topics_being_deleted=frozenset({"d"}),
                             deletions_forgotten=frozenset({"d"}))
    observed = ClusterState(frozenset({3}), {"d": d}, controller=3, topics_being_deleted=frozenset({"d"}))
    nemesis.remember(predicted)
    assert nemesis.with_controller_memory(observed).deletions_forgotten == {"d"}
    done = ClusterState(frozenset({3}), {"d": d}, controller=3)
    assert nemesis.with_controller_memory(done) == done  # no longer queued
    nemesis.remember(dataclasses.replace(predicted, controller=3))
    moved = ClusterState(frozenset({3, 10}), {"d": d}, controller=10, topics_being_deleted=frozenset({"d"}))
    assert nemesis.with_controller_memory(moved) == moved  # a controller the prediction did not name


def test_kraft_schedules_draw_it_when_named_on_kraft_clusters_with_two_log_dirs() -> None:
    """``explore --mode kraft --faults ...,log_dir_failure``: KRaft clusters (JBOD, KIP-858) with two
    log directories per broker, each failure healed, every schedule legal (``problems``)."""
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate, problems

    config = GeneratorConfig(faults=("log_dir_failure", "hard_kill", "start"), steps=8, mode="kraft")
    seen = 0
    for i in range(30):
        s = generate(11, i, config)
        assert problems(s) == [] and s.log_dirs == 2 and s.mode == "kraft"
        seen += sum(st.fault == "log_dir_failure" for st in s.steps)
    assert seen > 15
    # the fault and its heal apply to ZooKeeper-mode and KRaft clusters, not to a migrating one
    assert _fault(dir=0).modes == _fault(variant="heal").modes == {"zookeeper", "kraft"}

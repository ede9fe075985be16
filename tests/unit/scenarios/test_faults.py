"""Faults against a fake cluster: oracle events, idempotent heal, the nemesis refusing a second fault."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, ControlledShutdown, PreferredElection, Reassign, TopicConfigChange
from kafka_chaos.scenarios.faults import FaultEnv, Nemesis, make_fault
from kafka_chaos.scenarios.model.targets import Target
from tests.unit.scenarios.fakes import FakeBrokers


FakeCluster = FakeBrokers


class FakeObserver:
    """Stands in for both the observer (waits) and the ZooKeeper admin writer, recording both
    in one list so their order shows."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, object]] = []

    def wait_broker_gone(self, b: int, timeout: float) -> None:
        self.writes.append(("gone", b))

    def write_reassignment(self, moves) -> None:
        self.writes.append(("reassign", list(moves)))

    def write_preferred_election(self, partitions) -> None:
        self.writes.append(("preferred", list(partitions)))

    def set_topic_config(self, topic, config) -> None:
        self.writes.append(("config", (topic, dict(config))))


def env() -> FaultEnv:
    zk = FakeObserver()
    return FaultEnv(FakeCluster(), zk, zk)


def fault(kind: str, brokers=(1,), **options):
    names = {"t": "phys-t"}
    return make_fault(kind, Target(tuple(brokers), f"brokers {brokers}"), options, topic_names=names,
                      topic_partitions={"t": (0, 1, 2)})


def test_oracle_events_per_kind() -> None:
    assert fault("hard_kill", (1, 2)).oracle_events() == [BrokerFailure((1, 2))]
    assert fault("controlled_shutdown").oracle_events() == [ControlledShutdown(1)]
    assert fault("pause").oracle_events() == [BrokerFailure((1,)), BrokerStartup((1,))]
    assert fault("restart").oracle_events() == [ControlledShutdown(1), BrokerStartup((1,))]
    assert fault("restart", hard=True).oracle_events() == [BrokerFailure((1,), restarting=True), BrokerStartup((1,))]
    assert fault("reassignment", (), topic="t", moves=((0, (3, 2)),)).oracle_events() == [Reassign("phys-t", 0, (3, 2))]
    [pe] = fault("preferred_election", (), topic="t").oracle_events()
    assert isinstance(pe, PreferredElection) and [str(tp) for tp in pe.partitions] == ["phys-t-0", "phys-t-1", "phys-t-2"]
    assert fault("unclean_election", (), topic="t", via="config").oracle_events() == [
        TopicConfigChange("phys-t", {"unclean.leader.election.enable": "true"})]


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown fault kind"):
        fault("flood")
    with pytest.raises(UsageError, match="'topic'"):
        fault("reassignment", (), topic="zz", moves=())
    with pytest.raises(UsageError, match="'via'"):
        fault("preferred_election", (), topic="t", via="carrier-pigeon")


def test_nemesis_refuses_a_second_fault_on_a_faulted_broker_and_heals_once() -> None:
    e = env()
    nemesis = Nemesis(e)
    nemesis.inject(fault("hard_kill", (1,)))
    assert nemesis.faulted_brokers == {1}
    with pytest.raises(HarnessError, match="already faulted by hard_kill"):
        nemesis.inject(fault("controlled_shutdown", (1,)))
    nemesis.inject(fault("controlled_shutdown", (2,)))
    assert nemesis.heal_all() == []
    assert sorted(c for c in e.cluster.calls if c[0] == "start") == [("start", 1), ("start", 2)]
    assert nemesis.heal_all() == []  # idempotent: nothing left to heal
    assert len([c for c in e.cluster.calls if c[0] == "start"]) == 2


def test_start_releases_the_broker() -> None:
    e = env()
    nemesis = Nemesis(e)
    nemesis.inject(fault("hard_kill", (3,)))
    nemesis.inject(fault("start", (3,)))
    assert nemesis.faulted_brokers == frozenset()
    nemesis.inject(fault("hard_kill", (3,)))  # allowed again
    assert e.cluster.calls == [("kill", 3), ("start", 3), ("kill", 3)]


def test_heal_is_idempotent_on_the_fault_itself() -> None:
    e = env()
    f = fault("hard_kill", (2,))
    f.inject(e)
    f.heal(e)
    f.heal(e)
    assert e.cluster.calls == [("kill", 2), ("start", 2)]


def test_pause_waits_for_session_expiry_then_resumes() -> None:
    e = env()
    nemesis = Nemesis(e)
    nemesis.inject(fault("pause", (1,)))
    assert e.cluster.calls == [("pause", 1), ("resume", 1)]
    assert e.observer.writes == [("gone", 1)]
    assert nemesis.faulted_brokers == frozenset()
    assert e.session_expiry_bound_s > (6000 + 500) / 1000


def test_unclean_config_heal_removes_the_override() -> None:
    e = env()
    nemesis = Nemesis(e)
    nemesis.inject(fault("unclean_election", (), topic="t", via="config"))
    nemesis.heal_all()
    assert e.observer.writes == [("config", ("phys-t", {"unclean.leader.election.enable": "true"})),
                                 ("config", ("phys-t", {"unclean.leader.election.enable": None}))]


def test_short_pause_keeps_the_session_and_predicts_nothing(monkeypatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("kafka_chaos.scenarios.faults.process.time.sleep", slept.append)
    e = env()
    nemesis = Nemesis(e)
    f = fault("short_pause", (2,), seconds=1.5)
    assert f.oracle_events() == [] and f.label == "short_pause"
    nemesis.inject(f)
    assert e.cluster.calls == [("pause", 2), ("resume", 2)] and slept == [1.5]
    assert e.observer.writes == []  # no wait for a session expiry: there is none
    assert nemesis.faulted_brokers == frozenset()


def test_a_short_pause_that_would_expire_the_session_is_refused_before_any_signal() -> None:
    e = env()
    with pytest.raises(HarnessError, match=r"short_pause: 4 s would let the ZooKeeper session \(6000 ms\) expire"):
        fault("short_pause", (2,), seconds=4).inject(e)
    assert e.cluster.calls == []
    for bad in ("soon", 0, -1, 61):
        with pytest.raises(UsageError, match="'seconds'"):
            fault("short_pause", (2,), seconds=bad)

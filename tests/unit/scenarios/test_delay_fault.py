"""kafka_chaos.scenarios.faults.delay (network_delay): options, oracle events, holds, and what it asks of
the cluster (a recording stand-in for the LinkDelayer capability: the real proxy is tested in
tests/unit/harness/test_link_proxy.py and on a real cluster by the benchmark)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.oracle import BrokerFailure, BrokerStartup
from kafka_chaos.scenarios.plans.catalogue import by_names
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.faults.base import FaultEnv
from kafka_chaos.scenarios.plans.schedule import from_scenario, schedule_from_json, schedule_to_json
from kafka_chaos.scenarios.model.targets import Target

TWO = Target((2,), "broker 2")
TOPICS: dict[str, Any] = {"topic_names": {}, "topic_partitions": {}}


class RecordingCluster:
    """Has exactly the LinkDelayer members (and heal_network), records the calls."""

    backend = "local"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def delay_links(self, broker_id: int, *, delay_ms: float, jitter_ms: float = 0.0, to_zookeeper: bool = True,
                    to_brokers: bool = False, to_clients: bool = False) -> None:
        links = [name for name, on in (("zookeeper", to_zookeeper), ("peers", to_brokers), ("clients", to_clients))
                 if on]
        self.calls.append(("delay", broker_id, delay_ms, jitter_ms, *links))

    def heal_network(self) -> None:
        self.calls.append(("heal",))


def _env(cluster: RecordingCluster) -> FaultEnv:
    return FaultEnv(cluster=cluster, observer=None, admin=None, session_timeout_ms=0, tick_time_ms=0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "events", "holds"), [
    ({"delay_ms": 1000, "expect": "nothing"}, [], ()),
    ({"delay_ms": 9000, "expect": "session_expiry"}, [BrokerFailure((2,))], (2,)),
    ({"variant": "heal", "expect": "session_expiry"}, [BrokerStartup((2,))], ()),
    ({"variant": "heal"}, [], ()),
    ({"to": "peers", "delay_ms": 2000, "expect": "isr_shrink"}, [], (2,)),
    ({"to": "peers", "variant": "heal", "expect": "isr_shrink"}, [], ()),
])
def test_events_and_holds(options: dict[str, Any], events: list[Any], holds: tuple[int, ...]) -> None:
    fault = make_fault("network_delay", TWO, options, **TOPICS)
    assert fault.oracle_events() == events
    assert fault.holds == holds


@pytest.mark.parametrize(("options", "message"), [
    ({}, "delay_ms"),
    ({"delay_ms": -1}, "delay_ms"),
    ({"delay_ms": 100, "jitter_ms": "x"}, "jitter_ms"),
    ({"delay_ms": 100, "to": "brokers"}, "'to' must be one of"),
    ({"delay_ms": 100, "expect": "isr_shrink"}, "needs the peer links"),
    ({"delay_ms": 100, "to": "peers", "expect": "session_expiry"}, "needs the ZooKeeper links"),
    ({"delay_ms": 100, "expect": "split_brain"}, "expect"),
    ({"variant": "stall"}, "variant"),
])
def test_bad_options_are_one_line_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make_fault("network_delay", TWO, options, **TOPICS)


def test_inject_delays_and_heal_undoes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kafka_chaos.scenarios.faults.degrade.time.sleep", lambda s: None)  # LinkFault.inject
    cluster = RecordingCluster()
    fault = make_fault("network_delay", TWO, {"delay_ms": 1500, "jitter_ms": 100}, **TOPICS)
    fault.inject(_env(cluster))
    fault.heal(_env(cluster))
    make_fault("network_delay", TWO, {"variant": "heal"}, **TOPICS).inject(_env(cluster))
    assert cluster.calls == [("delay", 2, 1500.0, 100.0, "zookeeper"), ("heal",), ("heal",)]


@pytest.mark.parametrize(("to", "links"), [("peers", ("peers",)), ("clients", ("clients",)),
                                           ("everyone", ("zookeeper", "peers", "clients"))])
def test_each_to_names_its_links(monkeypatch: pytest.MonkeyPatch, to: str, links: tuple[str, ...]) -> None:
    monkeypatch.setattr("kafka_chaos.scenarios.faults.degrade.time.sleep", lambda s: None)
    cluster = RecordingCluster()
    fault = make_fault("network_delay", TWO, {"to": to, "delay_ms": 300}, **TOPICS)
    fault.inject(_env(cluster))
    assert cluster.calls == [("delay", 2, 300.0, 0.0, *links)]
    assert fault.label == f"network_delay/{to}"


def test_isr_shrink_is_checked_by_the_documented_rules() -> None:
    from kafka_chaos.scenarios.model.isr_rules import LEADER_ISR_EXPAND, LEADER_ISR_SHRINK

    options = {"to": "peers", "delay_ms": 2000, "expect": "isr_shrink"}
    assert make_fault("network_delay", TWO, options, **TOPICS).isr_rule == LEADER_ISR_SHRINK
    healed = make_fault("network_delay", TWO, {"variant": "heal", "expect": "isr_shrink"}, **TOPICS)
    assert healed.isr_rule == LEADER_ISR_EXPAND
    assert make_fault("network_delay", TWO, {"to": "peers", "delay_ms": 200}, **TOPICS).isr_rule is None


def test_delay_scenarios_round_trip_as_schedules_with_proxied_links() -> None:
    for scenario in by_names(["leader_zookeeper_link_delayed", "leader_zookeeper_link_delayed_past_session"]):
        assert scenario.needs.link_proxies
        data = schedule_to_json(from_scenario(scenario))
        assert data["cluster"]["link_proxies"] is True
        assert schedule_from_json(data).needs == scenario.needs


def test_schedule_link_proxies_must_be_a_boolean() -> None:
    data = schedule_to_json(from_scenario(by_names(["leader_zookeeper_link_delayed"])[0]))
    data["cluster"]["link_proxies"] = "yes"
    with pytest.raises(UsageError, match="link_proxies"):
        schedule_from_json(data)


def test_peer_link_delay_scenarios_need_what_a_cut_needs_and_zookeeper_ones_do_not() -> None:
    from kafka_chaos.harness.cluster import Capability

    peer, zk = by_names(["follower_link_delayed_past_lag_time", "leader_zookeeper_link_delayed"])
    assert peer.needs.link_proxies and dict(peer.needs.overrides)["replica.lag.time.max.ms"] == "3000"
    assert peer.requirements == {Capability.LINK_DELAY, Capability.NETWORK_PARTITION}  # root: nat redirects
    assert zk.requirements == {Capability.LINK_DELAY}  # no root

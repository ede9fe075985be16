"""The controller's figures around a fault (scenarios.history.controller_metrics) and the exporter
scrape parser (harness.metrics), on a real exposition and real scrapes of a kafka-chaos run
(tests/unit/scenarios/data/metrics: leader_hard_kill and controller_kill on 3 local brokers)."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_chaos.harness.jmx_exporter import agent_option, metrics_port_of
from kafka_chaos.harness.metrics import parse_exposition
from kafka_chaos.scenarios.history import controller_metrics as cm
from kafka_chaos.scenarios.history.controller_metrics import FaultMetrics, MetricsScrape

DATA = Path(__file__).parent / "data" / "metrics"
ELECTION = cm.MEASURED["leader_election"][0]
QUEUE = cm.MEASURED["event_queue_time"][0]


def _scrapes(name: str) -> FaultMetrics:
    return FaultMetrics.from_dict(json.loads((DATA / name).read_text()))


def test_real_exposition_parses_to_every_whitelisted_mbean_and_nothing_else() -> None:
    values = parse_exposition((DATA / "broker_controller.prom").read_text())
    assert all(name.startswith("kafka_") for name in values)  # the agent's JVM samples dropped
    for prefix, kind in cm.MEASURED.values():
        wanted = [f"{prefix}_value"] if kind == "gauge" else [f"{prefix}_count"]
        if kind == "timer":
            wanted.append(f"{prefix}_mean")
        for name in wanted:
            assert name in values, name
    # a Meter's MeanRate must not come out as a second "mean" (the rule excludes it)
    assert not any("{" in name for name in values)
    assert values[cm.MEASURED["active_controllers"][0] + "_value"] == 1.0


def test_hard_kill_of_a_leader_is_one_broker_change_on_the_controller() -> None:
    summary = cm.summarise(_scrapes("leader_hard_kill_scrapes.json"))
    assert summary["brokers_before"] == [1, 2, 3] and summary["brokers_after"] == [2, 3]
    assert summary["controller_before"] == summary["controller_after"] == 2
    election = summary["leader_election"]
    assert election["count"] == 1 and election["by_broker"] == {"2": 1}
    assert election["total_ms"] == election["mean_ms"] > 0
    assert summary["unclean_elections"]["count"] == 0
    assert summary["under_replicated"]["before"] == 0 and summary["under_replicated"]["after"] > 0
    assert "BrokerChange events 1" in cm.describe(summary)


def test_controller_kill_moves_the_active_controller_and_counts_only_surviving_brokers() -> None:
    metrics = _scrapes("controller_kill_scrapes.json")
    summary = cm.summarise(metrics)
    assert summary["controller_before"] == 2 and summary["controller_after"] == 1
    assert 2 not in summary["brokers_after"]
    # the dead controller's counters are gone with it: only brokers in both scrapes count
    assert set(summary["event_queue_time"]["by_broker"]) <= {"1", "3"}
    assert summary["active_controllers"]["after"] == 1


def _one(count: float, mean: float, at: float = 0.0) -> MetricsScrape:
    return MetricsScrape(at, {1: {f"{ELECTION}_count": count, f"{ELECTION}_mean": mean,
                                  f"{QUEUE}_count": count, f"{QUEUE}_mean": mean}})


def test_time_spent_is_the_difference_of_the_running_sums() -> None:
    # 2 events of mean 10 ms, then 3 more bringing the mean to 20: 100 - 20 = 80 ms over 3 events
    summary = cm.summarise(FaultMetrics(_one(2, 10.0), _one(5, 20.0, at=1.5)))
    assert summary["leader_election"] == {"count": 3, "total_ms": 80.0, "mean_ms": 26.7, "by_broker": {"1": 3}}
    assert summary["window_s"] == 1.5


def test_a_cleared_histogram_counts_from_zero_not_negative() -> None:
    # EventQueueTimeMs is cleared after 300 s without events (ControllerEventManager.pollFromEventQueue)
    summary = cm.summarise(FaultMetrics(_one(50, 4.0), _one(2, 7.0)))
    assert summary["event_queue_time"]["count"] == 2
    assert summary["event_queue_time"]["total_ms"] == 14.0


def test_nothing_happened_and_nobody_answered_afterwards() -> None:
    same = cm.summarise(FaultMetrics(_one(2, 10.0), _one(2, 10.0)))
    assert same["leader_election"] == {"count": 0, "total_ms": 0.0, "mean_ms": None, "by_broker": {}}
    gone = cm.summarise(FaultMetrics(_one(2, 10.0), MetricsScrape(1.0, {})))
    assert gone["brokers_after"] == [] and gone["controller_after"] is None
    assert gone["offline_partitions"]["after"] is None


def test_scrapes_round_trip_through_json() -> None:
    metrics = _scrapes("controller_kill_scrapes.json")
    assert FaultMetrics.from_dict(json.loads(json.dumps(metrics.to_dict()))) == metrics


def test_the_agent_port_is_read_back_from_a_command_line() -> None:
    flag = agent_option("/cache/jmx_prometheus_javaagent-1.0.1.jar", 40123, "/run/jmx_exporter.yaml")
    assert metrics_port_of(["java", "-Xmx384m", flag, "kafka.Kafka", "server.properties"]) == 40123
    assert metrics_port_of(["java", "-javaagent:/other/agent.jar=9999:x", "kafka.Kafka"]) is None
    assert metrics_port_of([]) is None

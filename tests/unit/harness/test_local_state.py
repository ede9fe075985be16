"""cluster.json written and read back (no processes: nodes that are not running)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.harness.local.nodes import LocalNode
from kafka_chaos.harness.local.state import STATE_FILE, read_state, render_state, write_state


def node(tmp_path: Path, name: str, port: int) -> LocalNode:
    return LocalNode(name=name, directory=tmp_path / name, port=port, config_file=tmp_path / name / "x.properties",
                     command=["java", str(tmp_path / name / "x.properties")])


def test_state_round_trip_keeps_config_ports_and_broker_ids(tmp_path: Path) -> None:
    config = ClusterConfig(brokers=2, first_broker_id=4, cluster_overrides={"num.io.threads": "2"})
    distribution = KafkaDistribution(version="3.9.2", libs_dir=tmp_path / "libs", source="test")
    brokers = {4: node(tmp_path, "broker-4", 9001), 5: node(tmp_path, "broker-5", 9002)}
    state = render_state(tmp_path, config, distribution, node(tmp_path, "zookeeper", 2181), brokers)
    assert state["bootstrap_servers"] == "127.0.0.1:9001,127.0.0.1:9002" and state["zookeeper_pid"] is None
    write_state(tmp_path, state)
    parts = read_state(tmp_path)
    assert parts.config == config and parts.distribution == distribution
    assert sorted(parts.brokers) == [4, 5] and parts.brokers[5].port == 9002
    assert parts.zookeeper.port == 2181 and parts.zookeeper.process is None


def test_no_state_is_a_usage_error_and_a_damaged_one_says_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no cluster in"):
        read_state(tmp_path)
    (tmp_path / STATE_FILE).write_text(json.dumps({"format": 1, "config": {}}))
    with pytest.raises(HarnessError, match="incomplete or damaged"):
        read_state(tmp_path)
    (tmp_path / STATE_FILE).write_text(json.dumps({"format": 99}))
    with pytest.raises(HarnessError, match="not written by this version"):
        read_state(tmp_path)


def test_an_ensemble_and_the_firewall_groups_round_trip(tmp_path: Path) -> None:
    config = ClusterConfig(brokers=1, zookeepers=3)
    distribution = KafkaDistribution(version="3.9.2", libs_dir=tmp_path / "libs", source="test")
    ensemble = {z: node(tmp_path, f"zookeeper-{z}", 2180 + z) for z in (1, 2, 3)}
    ensemble[2].group = 123
    state = render_state(tmp_path, config, distribution, ensemble[1], {1: node(tmp_path, "broker-1", 9001)}, ensemble)
    assert state["zookeeper"] == "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
    write_state(tmp_path, state)
    parts = read_state(tmp_path)
    assert parts.config.zookeepers == 3 and sorted(parts.zookeepers) == [1, 2, 3]
    assert parts.zookeepers[2].name == "zookeeper-2" and parts.zookeepers[2].group == 123
    assert parts.zookeeper is parts.zookeepers[1]


def test_the_control_plane_listener_and_its_ports_round_trip(tmp_path: Path) -> None:
    """Another process's cuts need each broker's KIP-291 port (harness.local.links)."""
    config = ClusterConfig(brokers=1, control_plane_listener=True)
    distribution = KafkaDistribution(version="3.9.2", libs_dir=tmp_path / "libs", source="test")
    broker = node(tmp_path, "broker-1", 9001)
    broker.control_plane_port = 9101
    write_state(tmp_path, render_state(tmp_path, config, distribution, node(tmp_path, "zookeeper", 2181), {1: broker}))
    parts = read_state(tmp_path)
    assert parts.config.control_plane_listener and parts.brokers[1].control_plane_port == 9101
    assert parts.brokers[1].listening_ports == (9001, 9101) and parts.zookeeper.listening_ports == (2181,)

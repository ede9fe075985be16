"""A broker JAAS configuration as a cluster setting (``ClusterConfig.broker_jaas``, a schedule's
``cluster.broker_jaas``): refused when it is no text, written to a file of the cluster's own and
passed to every broker JVM, never to ZooKeeper; listeners stay PLAINTEXT."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kafka_chaos.harness.config import ClusterConfig, broker_properties
from kafka_chaos.harness.containers.nodes import BROKER_JAAS_CONFIG
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.errors import UsageError
from kafka_chaos.harness.local.nodes import NodeLayout, prepare_broker, prepare_zookeeper, reprepare_broker
from kafka_chaos.harness.local.state import config_from_state, config_state
from kafka_chaos.scenarios.plans.schedule import dumps, schedule_from_json

JAAS = 'KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";\n};\n'
FLAG = "-Djava.security.auth.login.config="


@pytest.mark.parametrize("bad, message", [
    (5, "broker_jaas must be the text of a JAAS configuration (a string), not int"),
    ("", "broker_jaas must be the text of a JAAS configuration, not an empty string"),
    (" \n", "broker_jaas must be the text of a JAAS configuration, not an empty string"),
])
def test_a_broker_jaas_that_is_no_text_is_refused(bad: Any, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        ClusterConfig(broker_jaas=bad)
    assert str(raised.value) == message


def test_kraft_clusters_have_no_broker_jaas() -> None:
    with pytest.raises(UsageError, match="--mode kraft has no broker JAAS file"):
        ClusterConfig(mode="kraft", broker_jaas=JAAS)


def _layout(tmp_path: Path) -> NodeLayout:
    return NodeLayout(run_dir=tmp_path, java="java", classpath="libs/*", log4j=tmp_path / "log4j.properties",
                      jvm_options={"broker": ["-Xshare:auto"], "zookeeper": ["-Xshare:auto"]}, kafka_version="3.0.0")


def test_every_broker_jvm_reads_the_file_in_the_cluster_s_directory_and_zookeeper_does_not(tmp_path: Path) -> None:
    config = ClusterConfig(broker_jaas=JAAS)
    layout = _layout(tmp_path)
    brokers = [prepare_broker(layout, config, b, 9000 + b, "127.0.0.1:2181") for b in config.broker_ids()]
    zookeeper = prepare_zookeeper(layout, config, 2181)
    assert (tmp_path / "broker_jaas.conf").read_text() == JAAS
    assert all(f"{FLAG}{tmp_path / 'broker_jaas.conf'}" in node.command for node in brokers)
    assert not any(a.startswith(FLAG) for a in zookeeper.command)
    # a broker moved to another release (a roll) keeps it
    reprepare_broker(brokers[0], layout, config, 1)
    assert f"{FLAG}{tmp_path / 'broker_jaas.conf'}" in brokers[0].command
    # listeners stay PLAINTEXT; nothing asks ZooKeeper for ACLs or SASL
    props = broker_properties(config, 1, zookeeper_connect="127.0.0.1:2181", listeners={"PLAINTEXT": "127.0.0.1:9001"},
                              log_dir="/tmp/x", kafka_version="3.0.0")
    assert not any("SASL" in v.upper() for v in props.values()) and props.get("zookeeper.set.acl", "false") == "false"


def test_without_it_no_file_and_no_flag(tmp_path: Path) -> None:
    node = prepare_broker(_layout(tmp_path), ClusterConfig(), 1, 9001, "127.0.0.1:2181")
    assert not (tmp_path / "broker_jaas.conf").exists() and not any(a.startswith(FLAG) for a in node.command)


def _container_start(config: ClusterConfig, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What NodeStarter.start_broker would start, without Docker."""
    import ipaddress

    from kafka_chaos.harness.containers.nodes import NodeStarter

    starter = NodeStarter("r", "image", {}, kafka_version="3.0.0")
    starter._subnet = ipaddress.IPv4Network("10.99.0.0/24")
    started: dict[str, Any] = {}
    monkeypatch.setattr(starter, "_start", lambda node, role, command, **kw: started.update(command=command, **kw))
    starter.start_broker(config, 1, 19092)
    return started


def test_the_containers_launcher_copies_it_into_every_broker_s_container(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _container_start(ClusterConfig(broker_jaas=JAAS), monkeypatch)
    assert started["files"][BROKER_JAAS_CONFIG] == JAAS and BROKER_JAAS_CONFIG.endswith("/config/broker_jaas.conf")
    assert f"{FLAG}{BROKER_JAAS_CONFIG}" in started["command"]
    plain = _container_start(ClusterConfig(), monkeypatch)
    assert BROKER_JAAS_CONFIG not in plain["files"] and not any(a.startswith(FLAG) for a in plain["command"])


def test_cluster_json_keeps_it(tmp_path: Path) -> None:
    assert config_from_state(config_state(ClusterConfig(broker_jaas=JAAS))).broker_jaas == JAAS
    assert "broker_jaas" not in config_state(ClusterConfig())  # older cluster.json files stay as they were
    assert config_from_state(config_state(ClusterConfig())).broker_jaas is None


BASE: dict[str, Any] = {"schedule_version": 1, "name": "s", "cluster": {"brokers": [1, 2, 3]},
                        "topics": [{"name": "t", "assignment": {"0": [1, 2, 3]}}],
                        "steps": [{"fault": "hard_kill", "target": {"broker": 1}}]}


def _schedule(**cluster: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["cluster"].update(cluster)
    return data


@pytest.mark.parametrize("value, message", [
    (5, "s.json.cluster.broker_jaas: must be the text of a JAAS configuration (a string), not int"),
    (None, "s.json.cluster.broker_jaas: must be the text of a JAAS configuration (a string), not NoneType"),
    ("", "s.json.cluster.broker_jaas: must be the text of a JAAS configuration, not an empty string"),
    (["KafkaServer {};"], "s.json.cluster.broker_jaas: must be the text of a JAAS configuration (a string), not list"),
])
def test_a_schedule_s_bad_broker_jaas_is_one_line(value: Any, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        schedule_from_json(_schedule(broker_jaas=value), "s.json")
    assert str(raised.value) == message and "\n" not in str(raised.value)


def test_a_kraft_schedule_has_no_broker_jaas() -> None:
    with pytest.raises(UsageError, match="cluster.broker_jaas: is for brokers with a ZooKeeper client"):
        schedule_from_json(_schedule(broker_jaas=JAAS, mode="kraft"), "s.json")


def test_a_schedule_s_broker_jaas_reaches_the_cluster_and_round_trips() -> None:
    s = schedule_from_json(_schedule(broker_jaas=JAAS), "s.json")
    assert s.needs.broker_jaas == JAAS and "brokers with a JAAS file" in s.needs.describe()
    import json
    assert schedule_from_json(json.loads(dumps(s)), "again").broker_jaas == JAAS
    assert "broker_jaas" not in json.loads(dumps(schedule_from_json(_schedule(), "s.json")))["cluster"]

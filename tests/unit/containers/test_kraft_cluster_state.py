"""A `cluster up --backend containers --mode kraft` cluster's cluster.json (rendered, read back,
damaged), the launcher each cluster.json attaches to, and the refusals of `cluster up` and of
the ZooKeeper-mode verbs -- pure, no Docker engine needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_chaos.cli.cluster_kraft import check_container_kraft_up
from kafka_chaos.cli.main import main
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.containers.kraft_state import (
    ContainerKraftState,
    KraftNodeContainer,
    is_container_kraft_state,
    parse_container_kraft_state,
    read_container_kraft_state,
    render_container_kraft_state,
)
from kafka_chaos.harness.containers.state import state_names_run
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.harness.local.state import STATE_FILE, write_state


def described(tmp_path: Path, config: ClusterConfig, version: str = "4.4.0") -> ContainerKraftState:
    def node(alias: str, n: int, port: int, metrics: int | None = None) -> KraftNodeContainer:
        return KraftNodeContainer(alias, f"kafka-chaos-r1-{alias}", f"{alias}-id", port, metrics,
                                  address=f"10.231.0.{n}", data_dir=tmp_path / alias / "data")

    controllers = {c: node(f"controller-{c}", 2 + i, 11000 + i) for i, c in enumerate(config.controller_ids())}
    brokers = {b: node(f"broker-{b}", 10 + i, 22000 + i, 23000 + i) for i, b in enumerate(config.broker_ids())}
    return ContainerKraftState(run_id="r1", image=f"kafka-chaos-kafka:{version}-x", network="kafka-chaos-r1-net",
                               config=config, distribution=KafkaDistribution(version, tmp_path / "libs", "maven"),
                               cluster_id="akp7RiWzRlyay5vj7lGT5Q", controllers=controllers, brokers=brokers)


@pytest.mark.parametrize("config, version", [
    (ClusterConfig(brokers=3, mode="kraft"), "4.4.0"),
    (ClusterConfig(brokers=2, first_broker_id=4, mode="kraft", controllers=3,
                   broker_overrides={5: {"broker.rack": "b"}}), "3.9.2"),
])
def test_state_round_trip_keeps_containers_ports_addresses_data_dirs_and_cluster_id(
        tmp_path: Path, config: ClusterConfig, version: str) -> None:
    state = described(tmp_path, config, version)
    text = render_container_kraft_state(state)
    write_state(tmp_path, json.loads(json.dumps(text)))  # through JSON, as another process reads it
    assert read_container_kraft_state(tmp_path) == state
    assert is_container_kraft_state(text) and text["kafka_version"] == version
    assert text["bootstrap_servers"] == ",".join(f"127.0.0.1:{22000 + i}" for i in range(config.brokers))
    assert text["controller_quorum"].split(",")[0] == f"{config.controller_ids()[0]}@127.0.0.1:11000"
    assert state_names_run(tmp_path, "r1")  # what keeps its containers from `cluster prune`


# which launcher a cluster.json attaches to (cli.cluster._attach_any): both keys, or neither
@pytest.mark.parametrize("keys, ours", [
    ({"backend": "containers", "mode": "kraft"}, True),
    ({"backend": "containers"}, False),  # ZooKeeper mode on containers
    ({"mode": "kraft"}, False),  # KRaft on local JVMs
    ({}, False),  # a local ZooKeeper-mode cluster
])
def test_only_a_containers_kraft_file_is_this_launchers(keys: dict[str, str], ours: bool) -> None:
    assert is_container_kraft_state({"format": 1, **keys}) is ours


def _damaged(text: dict[str, Any], how: str) -> dict[str, Any]:
    if how == "a broker missing":
        text["broker_containers"] = text["broker_containers"][:1]
    elif how == "a controller missing":
        text["controller_containers"] = []
    elif how == "no address":
        del text["broker_containers"][0]["address"]
    elif how == "a ZooKeeper config":
        text["config"]["mode"] = "zookeeper"
    elif how == "not a port":
        text["controller_containers"][0]["host_port"] = "x"
    elif how == "no cluster id":
        del text["cluster_id"]
    return text


@pytest.mark.parametrize("how, said", [
    ("a broker missing", "brokers [1] do not match"),
    ("a controller missing", "controllers [] do not match"),
    ("no address", "KeyError: 'address'"),
    ("a ZooKeeper config", "the config's mode is 'zookeeper'"),
    ("not a port", "ValueError"),
    ("no cluster id", "KeyError: 'cluster_id'"),
])
def test_a_damaged_file_is_one_line_naming_it(tmp_path: Path, how: str, said: str) -> None:
    text = _damaged(render_container_kraft_state(described(tmp_path, ClusterConfig(brokers=2, mode="kraft"))), how)
    with pytest.raises((KeyError, TypeError, ValueError)):
        parse_container_kraft_state(text)
    (tmp_path / STATE_FILE).write_text(json.dumps(text))
    with pytest.raises(HarnessError, match="incomplete or damaged") as raised:
        read_container_kraft_state(tmp_path)
    assert said in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(UsageError, match="no cluster in"):
        read_container_kraft_state(tmp_path / "nothing")


def test_cli_on_a_damaged_containers_kraft_file_says_so_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / STATE_FILE).write_text(json.dumps({"format": 1, "backend": "containers", "mode": "kraft",
                                                   "run_id": "r1"}))
    for verb in (["status"], ["kill", "1"], ["down"]):
        assert main(["cluster", *verb, "--state-dir", str(tmp_path)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "incomplete or damaged" in err[0], (verb, err)
    assert (tmp_path / STATE_FILE).exists()


@pytest.mark.parametrize("config, refused", [
    (ClusterConfig(mode="kraft", quorum="dynamic"), "--quorum dynamic runs on the local launcher only"),
    (ClusterConfig(mode="kraft", log_dirs=2), "--log-dirs 2: a KRaft containers cluster mounts one data directory"),
    (ClusterConfig(mode="kraft", controllers=3), None),
])
def test_up_refuses_what_the_containers_kraft_launcher_cannot_start(config: ClusterConfig, refused: str | None) -> None:
    if refused is None:
        check_container_kraft_up(config)
        return
    with pytest.raises(UsageError, match=refused):
        check_container_kraft_up(config)


def test_a_detached_cluster_refuses_the_crash_consistency_layer_in_one_line(tmp_path: Path) -> None:
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

    distribution = KafkaDistribution("4.4.0", tmp_path / "libs", "maven")
    with pytest.raises(UsageError, match="cannot use filesystem 'lazyfs': the crash-consistency layer's mounts end"):
        ContainerKraftCluster(ClusterConfig(mode="kraft", filesystem="lazyfs"), distribution, state_dir=tmp_path)
    attached = ContainerKraftCluster(ClusterConfig(mode="kraft"), distribution, state_dir=tmp_path)
    assert attached.labels["kafka-chaos.state-dir"] == str(tmp_path.absolute())
    assert "kafka-chaos.state-dir" not in ContainerKraftCluster(ClusterConfig(mode="kraft"), distribution).labels


def test_cli_up_refusals_start_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--quorum", "dynamic"], ["--log-dirs", "2"]):
        assert main(["cluster", "up", "--backend", "containers", "--mode", "kraft", *extra,
                     "--state-dir", str(tmp_path / "c")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
    assert not (tmp_path / "c").exists()

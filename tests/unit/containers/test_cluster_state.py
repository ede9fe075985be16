"""A `cluster up --backend containers` cluster's cluster.json, the labels that keep its containers
from `cluster prune`, and the `cluster` verbs' refusals — pure, no Docker engine needed."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from kafka_chaos.cli.cluster import check_up_options
from kafka_chaos.cli.main import main
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.containers.labels import OWNER_LABEL, RUN_LABEL, STATE_DIR_LABEL, detached_labels, owner_alive
from kafka_chaos.harness.containers.state import (
    ContainerState,
    NodeContainer,
    parse_container_state,
    read_container_state,
    render_container_state,
    state_backend,
    state_names_run,
)
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.harness.local.state import STATE_FILE, write_state


def described(tmp_path: Path, config: ClusterConfig) -> ContainerState:
    servers = {z: NodeContainer("zookeeper" if config.zookeepers == 1 else f"zookeeper-{z}", f"kc-r1-zk{z}",
                                f"zk{z}id", 30000 + z) for z in range(1, config.zookeepers + 1)}
    brokers = {b: NodeContainer(f"broker-{b}", f"kc-r1-broker-{b}", f"b{b}id", 40000 + b, 41000 + b)
               for b in config.broker_ids()}
    return ContainerState(run_id="r1", image="kafka-chaos-kafka:3.9.2-x-cds", network="kafka-chaos-r1-net",
                          config=config, distribution=KafkaDistribution("3.9.2", tmp_path / "libs", "maven"),
                          zookeepers=servers, brokers=brokers, base_image="eclipse-temurin:17-jre")


@pytest.mark.parametrize("config", [
    ClusterConfig(brokers=3, control_plane_listener=True, cluster_overrides={"num.io.threads": "1"}),
    ClusterConfig(brokers=2, first_broker_id=4, zookeepers=3, log_dirs=2, broker_overrides={5: {"broker.rack": "b"}}),
])
def test_state_round_trip_keeps_containers_ports_and_config(tmp_path: Path, config: ClusterConfig) -> None:
    state = described(tmp_path, config)
    text = render_container_state(state, bootstrap_servers="127.0.0.1:40001", zookeeper_connect="127.0.0.1:30001",
                                  control_plane={1: "broker-1:9093"})
    write_state(tmp_path, json.loads(json.dumps(text)))  # through JSON, as another process reads it
    assert read_container_state(tmp_path) == state
    assert state_backend(text) == "containers" and state_backend({"format": 1}) == "local"
    assert state_names_run(tmp_path, "r1") and not state_names_run(tmp_path, "r2")


def test_a_broker_list_that_does_not_match_the_config_is_damage(tmp_path: Path) -> None:
    text = render_container_state(described(tmp_path, ClusterConfig(brokers=3)), bootstrap_servers="",
                                  zookeeper_connect="")
    text["broker_containers"] = text["broker_containers"][:2]
    with pytest.raises(ValueError, match="do not match"):
        parse_container_state(text)
    (tmp_path / STATE_FILE).write_text(json.dumps(text))
    with pytest.raises(HarnessError, match="incomplete or damaged"):
        read_container_state(tmp_path)
    with pytest.raises(UsageError, match="no cluster in"):
        read_container_state(tmp_path / "nothing")


def test_a_detached_clusters_containers_live_while_its_state_file_names_the_run(tmp_path: Path) -> None:
    dead_creator = f"{socket.gethostname()}:999999999:123"  # `cluster up` has exited
    labels = {**detached_labels("r1", tmp_path), OWNER_LABEL: dead_creator}
    assert labels[STATE_DIR_LABEL] == str(tmp_path.absolute())
    assert not owner_alive(labels)  # no cluster.json (yet, or any more): prune removes them
    (tmp_path / STATE_FILE).write_text(json.dumps({"format": 1, "run_id": "r1"}))
    assert owner_alive(labels)
    assert not owner_alive({**labels, RUN_LABEL: "r0"})  # the dir now holds another cluster
    assert owner_alive(detached_labels("r9", tmp_path / "empty"))  # its creator still runs (starting)


def test_up_options_of_the_other_launcher_are_refused() -> None:
    with pytest.raises(UsageError, match="--link-proxies is a local-launcher option"):
        check_up_options("containers", link_proxies=True, base_image=None, explicit=True)
    with pytest.raises(UsageError, match="--base-image applies to --backend containers only"):
        check_up_options("local", link_proxies=False, base_image="img", explicit=True)
    check_up_options("local", link_proxies=False, base_image="img", explicit=False)  # auto fell back: ignored
    check_up_options("containers", link_proxies=False, base_image="img", explicit=True)


def test_cli_refuses_bad_backends_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "up", "--backend", "podman", "--state-dir", str(tmp_path)]) == 2
    assert main(["cluster", "up", "--backend", "containers", "--link-proxies", "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "unknown backend 'podman'" in err[0] and "local-launcher option" in err[1]
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def test_cli_on_a_damaged_containers_state_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / STATE_FILE).write_text(json.dumps({"format": 1, "backend": "containers", "run_id": "r1"}))
    assert main(["cluster", "status", "--state-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "incomplete or damaged" in err[0]
    assert os.path.exists(tmp_path / STATE_FILE)

"""``cluster.json`` of a containers cluster that ``kafka-chaos cluster up --backend containers``
left running: what another process needs to re-attach (the run id its Docker objects are
labelled with, each node's container, the published ports, the run network).

The local launcher's file is :mod:`harness.local.state`; both carry ``format`` and the cluster
configuration (:func:`harness.local.state.config_state`), this one also ``"backend":
"containers"`` (a file without ``backend`` is a local cluster's).  Rendering and parsing are
pure; :func:`read_container_state` reads the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import ClusterConfig, session_timeout_ms, shared_broker_settings
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.local.state import STATE_FILE, STATE_FORMAT, config_from_state, config_state, load_state_file

BACKEND = "containers"


@dataclass(frozen=True)
class NodeContainer:
    """One node's container: ``node`` its name on the run network (``broker-N``, ``zookeeper``,
    ``zookeeper-N``), ``host_port`` its client port published on 127.0.0.1."""

    node: str
    name: str
    container_id: str
    host_port: int
    metrics_port: int | None = None  # brokers: the JMX exporter's /metrics on 127.0.0.1


@dataclass(frozen=True)
class ContainerState:
    """A containers cluster as ``cluster.json`` describes it (its containers may be gone since)."""

    run_id: str
    image: str
    network: str
    config: ClusterConfig
    distribution: KafkaDistribution
    zookeepers: Mapping[int, NodeContainer]  # server id -> its container
    brokers: Mapping[int, NodeContainer]  # broker id -> its container
    base_image: str | None = None


def render_node(entry: NodeContainer) -> dict[str, Any]:
    """One node's container as ``cluster.json`` lists it (both modes' files)."""
    return {"node": entry.node, "name": entry.name, "id": entry.container_id, "host_port": entry.host_port,
            **({"metrics_port": entry.metrics_port} if entry.metrics_port is not None else {})}


def parse_node(entry: Mapping[str, Any]) -> NodeContainer:
    """:func:`render_node` read back."""
    metrics = entry.get("metrics_port")
    return NodeContainer(node=str(entry["node"]), name=str(entry["name"]), container_id=str(entry["id"]),
                         host_port=int(entry["host_port"]), metrics_port=int(metrics) if metrics is not None else None)


def render_distribution(d: KafkaDistribution) -> dict[str, str]:
    return {"version": d.version, "libs_dir": str(d.libs_dir), "source": d.source}


def parse_distribution(d: Mapping[str, Any]) -> KafkaDistribution:
    """:func:`render_distribution` read back."""
    return KafkaDistribution(version=d["version"], libs_dir=Path(d["libs_dir"]), source=d["source"])


def render_container_state(state: ContainerState, *, bootstrap_servers: str, zookeeper_connect: str,
                           control_plane: Mapping[int, str] | None = None) -> dict[str, Any]:
    """What ``cluster.json`` holds; the addresses are there for people and scripts (``jq``)."""
    d = state.distribution
    return {
        "format": STATE_FORMAT,
        "backend": BACKEND,
        "run_id": state.run_id,
        "image": state.image,
        "base_image": state.base_image,
        "network": state.network,
        "kafka_version": d.version,
        "distribution": render_distribution(d),
        "bootstrap_servers": bootstrap_servers,
        "zookeeper": zookeeper_connect,
        "control_plane": {str(b): a for b, a in sorted((control_plane or {}).items())},
        "zookeeper_containers": [{"server": z, **render_node(n)} for z, n in sorted(state.zookeepers.items())],
        "broker_containers": [{"broker": b, **render_node(n)} for b, n in sorted(state.brokers.items())],
        "session_timeout_ms": session_timeout_ms(state.config),
        "broker_settings": shared_broker_settings(state.config, d.version),
        "config": config_state(state.config),
    }


def parse_container_state(state: Mapping[str, Any]) -> ContainerState:
    """:func:`render_container_state` read back; KeyError/TypeError/ValueError when damaged."""
    if state.get("backend") != BACKEND:
        raise ValueError(f"backend is {state.get('backend')!r}, not {BACKEND!r}")
    config = config_from_state(state["config"])
    brokers = {int(e["broker"]): parse_node(e) for e in state["broker_containers"]}
    zookeepers = {int(e["server"]): parse_node(e) for e in state["zookeeper_containers"]}
    if sorted(brokers) != config.broker_ids():
        raise ValueError(f"brokers {sorted(brokers)} do not match the config's {config.broker_ids()}")
    if sorted(zookeepers) != list(range(1, config.zookeepers + 1)):
        raise ValueError(f"ZooKeeper servers {sorted(zookeepers)} do not match the config's {config.zookeepers}")
    return ContainerState(run_id=str(state["run_id"]), image=str(state["image"]), network=str(state["network"]),
                          config=config, distribution=parse_distribution(state["distribution"]),
                          zookeepers=zookeepers, brokers=brokers,
                          base_image=str(state["base_image"]) if state.get("base_image") else None)


def state_backend(state: Mapping[str, Any]) -> str:
    """``containers`` or ``local`` (files written before containers clusters had none)."""
    return str(state.get("backend") or "local")


def read_container_state(state_dir: Path) -> ContainerState:
    state = load_state_file(state_dir)
    try:
        return parse_container_state(state)
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessError(f"{state_dir / STATE_FILE} is incomplete or damaged ({type(exc).__name__}: {exc})") from exc


def state_names_run(state_dir: Path, run_id: str) -> bool:
    """Whether ``state_dir/cluster.json`` exists and describes the run ``run_id`` (what keeps a
    ``cluster up``'s containers from ``cluster prune``: :func:`harness.containers.labels.owner_alive`)."""
    try:
        state = json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(state, dict) and state.get("run_id") == run_id

"""``cluster.json`` of a KRaft containers cluster that ``kafka-chaos cluster up --backend containers
--mode kraft`` left running (:class:`harness.containers.kraft.ContainerKraftCluster` with a state
dir): what another process needs to re-attach -- the run id its Docker objects are labelled with,
the image and run network, each node's container, published port and fixed address on the run
network, the cluster id, and the host data directories each container mounts (the observer reads
the controllers' metadata logs there).

It carries ``"backend": "containers"`` like the ZooKeeper-mode file (:mod:`harness.containers.state`)
and ``"mode": "kraft"`` like the local KRaft one (:func:`harness.local.state.render_kraft_state`):
the two keys together pick the launcher that attaches. Rendering and parsing are pure;
:func:`read_container_kraft_state` reads the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import ClusterConfig, broker_session_timeout_ms, shared_broker_settings
from kafka_chaos.harness.containers.state import (
    BACKEND,
    NodeContainer,
    parse_distribution,
    parse_node,
    render_distribution,
    render_node,
)
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.local.state import STATE_FILE, STATE_FORMAT, config_from_state, config_state, load_state_file

KRAFT_MODE = "kraft"


@dataclass(frozen=True)
class KraftNodeContainer(NodeContainer):
    """One KRaft node's container (``node``: ``controller-N`` or ``broker-N``; ``host_port``: a
    broker's EXTERNAL listener, a controller's CONTROLLER listener, published on 127.0.0.1), and
    what a KRaft cluster needs besides: ``address``, its fixed address on the run network (what a
    cut drops), and ``data_dir``, the host directory mounted as its data directory."""

    _: KW_ONLY
    address: str
    data_dir: Path


@dataclass(frozen=True)
class ContainerKraftState:
    """A KRaft containers cluster as ``cluster.json`` describes it (its containers may be gone since)."""

    run_id: str
    image: str
    network: str
    config: ClusterConfig
    distribution: KafkaDistribution
    cluster_id: str
    controllers: Mapping[int, KraftNodeContainer]  # node id -> its container
    brokers: Mapping[int, KraftNodeContainer]  # broker id -> its container
    base_image: str | None = None


def _render_node(key: str, node_id: int, entry: KraftNodeContainer) -> dict[str, Any]:
    return {key: node_id, **render_node(entry), "address": entry.address, "data_dir": str(entry.data_dir)}


def render_container_kraft_state(state: ContainerKraftState) -> dict[str, Any]:
    """What ``cluster.json`` holds; the addresses are there for people and scripts (``jq``)."""
    d = state.distribution
    return {
        "format": STATE_FORMAT,
        "backend": BACKEND,
        "mode": KRAFT_MODE,
        "run_id": state.run_id,
        "image": state.image,
        "base_image": state.base_image,
        "network": state.network,
        "kafka_version": d.version,
        "distribution": render_distribution(d),
        "cluster_id": state.cluster_id,
        "bootstrap_servers": ",".join(f"127.0.0.1:{e.host_port}" for _, e in sorted(state.brokers.items())),
        "controller_quorum": ",".join(f"{c}@127.0.0.1:{e.host_port}" for c, e in sorted(state.controllers.items())),
        "controller_containers": [_render_node("controller", c, e) for c, e in sorted(state.controllers.items())],
        "broker_containers": [_render_node("broker", b, e) for b, e in sorted(state.brokers.items())],
        "broker_session_timeout_ms": broker_session_timeout_ms(state.config),
        "broker_settings": shared_broker_settings(state.config, d.version),
        "config": config_state(state.config),
    }


def _parse_node(entry: Mapping[str, Any]) -> KraftNodeContainer:
    return KraftNodeContainer(**vars(parse_node(entry)), address=str(entry["address"]), data_dir=Path(entry["data_dir"]))


def parse_container_kraft_state(state: Mapping[str, Any]) -> ContainerKraftState:
    """:func:`render_container_kraft_state` read back; KeyError/TypeError/ValueError when damaged."""
    if state.get("backend") != BACKEND or state.get("mode") != KRAFT_MODE:
        raise ValueError(f"backend {state.get('backend')!r}, mode {state.get('mode')!r}: "
                         f"not a {BACKEND} {KRAFT_MODE} cluster")
    config = config_from_state(state["config"])
    if config.mode != KRAFT_MODE:
        raise ValueError(f"the config's mode is {config.mode!r}, not {KRAFT_MODE!r}")
    controllers = {int(e["controller"]): _parse_node(e) for e in state["controller_containers"]}
    brokers = {int(e["broker"]): _parse_node(e) for e in state["broker_containers"]}
    if sorted(brokers) != config.broker_ids():
        raise ValueError(f"brokers {sorted(brokers)} do not match the config's {config.broker_ids()}")
    if sorted(controllers) != config.controller_ids():
        raise ValueError(f"controllers {sorted(controllers)} do not match the config's {config.controller_ids()}")
    return ContainerKraftState(
        run_id=str(state["run_id"]), image=str(state["image"]), network=str(state["network"]), config=config,
        distribution=parse_distribution(state["distribution"]),
        cluster_id=str(state["cluster_id"]), controllers=controllers, brokers=brokers,
        base_image=str(state["base_image"]) if state.get("base_image") else None)


def is_container_kraft_state(state: Mapping[str, Any]) -> bool:
    """Whether a ``cluster.json`` (either launcher's, either mode's) is this module's."""
    return state.get("backend") == BACKEND and state.get("mode") == KRAFT_MODE


def read_container_kraft_state(state_dir: Path) -> ContainerKraftState:
    """UsageError when ``state_dir`` has no cluster, HarnessError (one line) when its file is damaged."""
    state = load_state_file(state_dir)
    try:
        return parse_container_kraft_state(state)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise HarnessError(f"{state_dir / STATE_FILE} is incomplete or damaged ({type(exc).__name__}: {exc})") from exc


__all__ = ["ContainerKraftState", "KraftNodeContainer", "is_container_kraft_state", "parse_container_kraft_state",
           "read_container_kraft_state", "render_container_kraft_state"]

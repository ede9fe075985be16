"""``cluster.json``: what another process needs to control a running local cluster (the
``kafka-chaos cluster`` verbs re-attach through it), written and read back here.

Pure of the cluster class: :class:`harness.local.cluster.LocalCluster` hands in its parts and gets
parts back, so the two modules do not import each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness import processes
from kafka_chaos.harness.config import ClusterConfig, session_timeout_ms, shared_broker_settings, tick_time_ms
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.local.nodes import HOST, ZOOKEEPER, LocalNode, broker_node_name

STATE_FILE = "cluster.json"
STATE_FORMAT = 1


@dataclass(frozen=True)
class AttachedParts:
    """A cluster as ``cluster.json`` describes it; its nodes' processes may have died since."""

    config: ClusterConfig
    distribution: KafkaDistribution
    zookeeper: LocalNode
    brokers: Mapping[int, LocalNode]
    zookeepers: Mapping[int, LocalNode]  # ZooKeeper server id -> node; {1: zookeeper} when alone


def render_state(run_dir: Path, config: ClusterConfig, distribution: KafkaDistribution,
                 zookeeper: LocalNode, brokers: Mapping[int, LocalNode],
                 zookeepers: Mapping[int, LocalNode] | None = None) -> dict[str, Any]:
    """What ``cluster.json`` holds."""
    ensemble = dict(zookeepers) if zookeepers else {1: zookeeper}
    return {
        "format": STATE_FORMAT,
        "run_dir": str(run_dir),
        "kafka_version": distribution.version,
        "distribution": {"version": distribution.version, "libs_dir": str(distribution.libs_dir),
                         "source": distribution.source},
        "zookeeper": ",".join(f"{HOST}:{n.port}" for _, n in sorted(ensemble.items())),
        "zookeeper_nodes": [{"id": z, "name": n.name, "pid": n.running_pid(), "started_at": n.running_since(),
                             "port": n.port, "dir": str(n.directory), "config_file": str(n.config_file),
                             "command": n.command, "group": n.group} for z, n in sorted(ensemble.items())],
        "zookeeper_pid": zookeeper.running_pid(),
        "zookeeper_started_at": zookeeper.running_since(),
        "bootstrap_servers": ",".join(brokers[b].bootstrap for b in sorted(brokers)),
        "brokers": [{"id": b, "pid": node.running_pid(), "started_at": node.running_since(), "port": node.port,
                     "dir": str(node.directory), "config_file": str(node.config_file), "command": node.command,
                     "group": node.group, "control_plane_port": node.control_plane_port}
                    for b, node in sorted(brokers.items())],
        "zookeeper_node": {"port": zookeeper.port, "dir": str(zookeeper.directory),
                           "config_file": str(zookeeper.config_file), "command": zookeeper.command,
                           "group": zookeeper.group},
        "session_timeout_ms": session_timeout_ms(config),
        "tick_time_ms": tick_time_ms(config),
        "broker_settings": shared_broker_settings(config, distribution.version),
        "config": config_state(config),
    }


def config_state(config: ClusterConfig) -> dict[str, Any]:
    """The cluster's configuration as ``cluster.json`` keeps it (both launchers)."""
    return {
        "brokers": config.brokers,
        "cluster_overrides": dict(config.cluster_overrides),
        "broker_overrides": {str(b): dict(o) for b, o in config.broker_overrides.items()},
        "zk_tick_time_ms": config.zk_tick_time_ms,
        "broker_heap": config.broker_heap,
        "zookeeper_heap": config.zookeeper_heap,
        "first_broker_id": config.first_broker_id,
        "jvm_options": list(config.jvm_options),
        "zookeepers": config.zookeepers,
        "log_dirs": config.log_dirs,
        "link_proxies": config.link_proxies,
        "control_plane_listener": config.control_plane_listener,
        "mode": config.mode,
        "controllers": config.controllers,
        **({"broker_jaas": config.broker_jaas} if config.broker_jaas is not None else {}),
        **({"quorum": config.quorum} if config.quorum != "static" else {}),
    }


def config_from_state(c: Mapping[str, Any]) -> ClusterConfig:
    """:func:`config_state` read back (KeyError/TypeError/ValueError when damaged)."""
    return ClusterConfig(
        brokers=int(c["brokers"]), cluster_overrides=dict(c["cluster_overrides"]),
        broker_overrides={int(b): dict(o) for b, o in c["broker_overrides"].items()},
        zk_tick_time_ms=int(c["zk_tick_time_ms"]), broker_heap=c["broker_heap"],
        zookeeper_heap=c["zookeeper_heap"], first_broker_id=int(c["first_broker_id"]),
        jvm_options=tuple(c["jvm_options"]), zookeepers=int(c.get("zookeepers", 1)),
        log_dirs=int(c.get("log_dirs", 1)), link_proxies=bool(c.get("link_proxies", False)),
        control_plane_listener=bool(c.get("control_plane_listener", False)),
        mode=str(c.get("mode", "zookeeper")), controllers=int(c.get("controllers", 1)),
        quorum=str(c.get("quorum", "static")),
        broker_jaas=None if c.get("broker_jaas") is None else str(c["broker_jaas"]))


def write_state(run_dir: Path, state: Mapping[str, Any]) -> Path:
    """Replace ``run_dir/cluster.json`` atomically (a reader never sees half a file)."""
    path = run_dir / STATE_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(path)
    return path


def load_state_file(state_dir: Path) -> dict[str, Any]:
    """``state_dir/cluster.json`` as a dict, either launcher's: UsageError when there is none,
    HarnessError when it is not JSON or from another version of kafka-chaos."""
    path = state_dir / STATE_FILE
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"no cluster in {state_dir} (no {STATE_FILE}); start one with "
                         f"`kafka-chaos cluster up --state-dir {state_dir}`") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise HarnessError(f"cannot read {path}: {exc}") from exc
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise HarnessError(f"{path} was not written by this version of kafka-chaos")
    return state


def read_state(state_dir: Path) -> AttachedParts:
    """The cluster ``kafka-chaos cluster up`` started in ``state_dir``; UsageError when there
    is none, HarnessError when the file is damaged or from another version."""
    path = state_dir / STATE_FILE
    state = load_state_file(state_dir)
    try:
        return _parts(state)
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessError(f"{path} is incomplete or damaged ({type(exc).__name__}: {exc})") from exc


def _parts(state: Mapping[str, Any]) -> AttachedParts:
    config = config_from_state(state["config"])
    d = state["distribution"]
    distribution = KafkaDistribution(version=d["version"], libs_dir=Path(d["libs_dir"]), source=d["source"])
    zookeeper = _attached_node(ZOOKEEPER, state["zookeeper_node"], state.get("zookeeper_pid"),
                               state.get("zookeeper_started_at"))
    brokers = {int(b["id"]): _attached_node(broker_node_name(int(b["id"])), b, b.get("pid"), b.get("started_at"))
               for b in state["brokers"]}
    if sorted(brokers) != config.broker_ids():
        raise ValueError(f"brokers {sorted(brokers)} do not match the config")
    zookeepers = {int(z["id"]): _attached_node(str(z["name"]), z, z.get("pid"), z.get("started_at"))
                  for z in state.get("zookeeper_nodes", [])} or {1: zookeeper}
    zookeeper = zookeepers[min(zookeepers)]
    return AttachedParts(config=config, distribution=distribution, zookeeper=zookeeper, brokers=brokers,
                         zookeepers=zookeepers)


def state_mode(state: Mapping[str, Any]) -> str:
    """Which kind of local cluster a ``cluster.json`` describes: "zookeeper" or "kraft"."""
    return str(state.get("mode", "zookeeper"))


def render_kraft_state(run_dir: Path, config: ClusterConfig, distribution: KafkaDistribution, cluster_id: str,
                       controllers: Mapping[int, LocalNode], brokers: Mapping[int, LocalNode]) -> dict[str, Any]:
    """What ``cluster.json`` holds for a KRaft cluster (:class:`harness.local.kraft.LocalKraftCluster`)."""
    def entry(node_id: int, node: LocalNode) -> dict[str, Any]:
        return {"id": node_id, "name": node.name, "pid": node.running_pid(), "started_at": node.running_since(),
                "port": node.port, "dir": str(node.directory), "config_file": str(node.config_file),
                "command": node.command}

    return {
        "format": STATE_FORMAT, "mode": "kraft", "run_dir": str(run_dir), "kafka_version": distribution.version,
        "distribution": {"version": distribution.version, "libs_dir": str(distribution.libs_dir),
                         "source": distribution.source},
        "cluster_id": cluster_id,
        "bootstrap_servers": ",".join(brokers[b].bootstrap for b in sorted(brokers)),
        "controller_quorum": ",".join(f"{c}@{n.bootstrap}" for c, n in sorted(controllers.items())),
        "controllers": [entry(c, n) for c, n in sorted(controllers.items())],
        "brokers": [entry(b, n) for b, n in sorted(brokers.items())],
        "config": config_state(config),
    }


@dataclass(frozen=True)
class AttachedKraftParts:
    config: ClusterConfig
    distribution: KafkaDistribution
    cluster_id: str
    controllers: Mapping[int, LocalNode]
    brokers: Mapping[int, LocalNode]


def read_kraft_state(state_dir: Path) -> AttachedKraftParts:
    path = state_dir / STATE_FILE
    state = load_state_file(state_dir)
    try:
        config = config_from_state(state["config"])
        d = state["distribution"]
        nodes = {kind: {int(e["id"]): _attached_node(str(e["name"]), e, e.get("pid"), e.get("started_at"))
                        for e in state[kind]} for kind in ("controllers", "brokers")}
        if sorted(nodes["brokers"]) != config.broker_ids() or sorted(nodes["controllers"]) != config.controller_ids():
            raise ValueError("the nodes do not match the config")
        return AttachedKraftParts(config, KafkaDistribution(version=d["version"], libs_dir=Path(d["libs_dir"]),
                                                            source=d["source"]),
                                  str(state["cluster_id"]), nodes["controllers"], nodes["brokers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessError(f"{path} is incomplete or damaged ({type(exc).__name__}: {exc})") from exc


def _attached_node(name: str, entry: Mapping[str, Any], pid: int | None, started_at: float | None) -> LocalNode:
    node = LocalNode(name=name, directory=Path(entry["dir"]), port=int(entry["port"]),
                     config_file=Path(entry["config_file"]), command=list(entry["command"]),
                     group=int(entry["group"]) if entry.get("group") is not None else None,
                     control_plane_port=int(entry["control_plane_port"]) if entry.get("control_plane_port") else None)
    if pid is not None:
        node.process = processes.attach(name, int(pid), node.identity,
                                        float(started_at) if started_at is not None else None)
    return node

"""``kafka-chaos cluster`` on a KRaft cluster (``cluster up --mode kraft``, local JVMs or, with
``--backend containers``, Docker containers): what differs from ZooKeeper mode -- the controllers'
lines in ``status`` (the quorum leader and epoch from the metadata log), and ``controller-N`` /
``controller-leader`` as targets of kill, stop, pause, resume and start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Union

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import DYNAMIC_QUORUM, ClusterConfig
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.local.kraft import LocalKraftCluster

if TYPE_CHECKING:
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

    KraftCliCluster = Union[LocalKraftCluster, ContainerKraftCluster]

CONTROLLER_PREFIX = "controller-"


def check_container_kraft_up(config: ClusterConfig) -> None:
    """What ``cluster up --backend containers --mode kraft`` cannot start (one-line UsageError):
    the containers launcher formats a static quorum into one data directory per node (the
    crash-consistency layer, which a detached cluster cannot have, ContainerKraftCluster refuses)."""
    if config.quorum == DYNAMIC_QUORUM:
        raise UsageError("--quorum dynamic runs on the local launcher only (--backend local): the containers "
                         "launcher formats a static quorum")
    if config.log_dirs != 1:
        raise UsageError(f"--log-dirs {config.log_dirs}: a KRaft containers cluster mounts one data directory per "
                         "node (--backend local has several)")


def container_kraft_up(config: ClusterConfig, distribution: KafkaDistribution, state_dir: Path, *,
                       base_image: str | None, timeout: float) -> int:
    """``cluster up --backend containers --mode kraft``: the containers outlive this command."""
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

    cluster = ContainerKraftCluster(config, distribution, base_image=base_image, start_timeout=timeout,
                                    state_dir=state_dir)
    cluster.start()  # removes what it started on failure and Ctrl-C
    print(f"Kafka {cluster.kafka_version} KRaft cluster is up ({config.controllers} controller(s), {config.quorum} "
          f"quorum, {config.brokers} brokers), containers (run {cluster.run_id}), state in {state_dir}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    print(f"controllers:       {','.join(f'{c}@{cluster.controller_address(c)}' for c in cluster.controller_ids)}")
    return 0


def _where(cluster: KraftCliCluster, node_id: int) -> str:
    """What runs a node: ``pid N`` (local) or ``container NAME`` (containers)."""
    if isinstance(cluster, LocalKraftCluster):
        pid = cluster.controller_pid(node_id) if node_id in cluster.controller_ids else cluster.endpoint(node_id).pid
        return f"pid {pid or '-'}"
    return f"container {cluster.container_name(node_id)}"


def _controller_note(cluster: KraftCliCluster, node_id: int) -> str:
    if not cluster.controller_running(node_id):
        return "DOWN"
    return "PAUSED" if not isinstance(cluster, LocalKraftCluster) and cluster.controller_paused(node_id) else "running"


def print_status(cluster: KraftCliCluster, state_dir: Path, topics: Sequence[str] | None) -> None:
    with cluster.observer(topics=topics) as observer:
        snapshot = observer.snapshot()
    containers = "" if isinstance(cluster, LocalKraftCluster) else \
        f"; containers (run {cluster.run_id}, image {cluster.image})"
    print(f"state dir {state_dir}; Kafka {cluster.kafka_version}; KRaft, cluster id {cluster.cluster_id}{containers}")
    print(f"quorum leader: {snapshot.controller if snapshot.controller is not None else 'none'} "
          f"(epoch {snapshot.controller_epoch})")
    print("controllers:")
    for c in cluster.controller_ids:
        print(f"  {c}  {cluster.controller_address(c)}  {_where(cluster, c)}  "
              f"{_controller_note(cluster, c)}{'  (leader)' if c == snapshot.controller else ''}")
    print("brokers:")
    for b in cluster.broker_ids:
        endpoint = cluster.endpoint(b)
        running = cluster.broker_running(b)
        state = "PAUSED" if running and cluster.broker_paused(b) else "running" if running else "DOWN"
        state += ", active" if b in snapshot.live_brokers else ", fenced or shutting down"
        print(f"  {b}  {endpoint.bootstrap}  {_where(cluster, b)}  {state}")
    rows = [("TOPIC", "PARTITION", "REPLICAS", "LEADER", "ISR", "LEADER_EPOCH", "PARTITION_EPOCH")]
    for key in sorted(snapshot.partitions):
        p = snapshot.partitions[key]
        rows.append((p.topic, str(p.partition), ",".join(map(str, p.replicas)), str(p.leader),
                     ",".join(map(str, p.isr)), str(p.leader_epoch), str(p.version)))
    if len(rows) == 1:
        print("no topics")
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def controller_id(target: str, cluster: KraftCliCluster) -> int:
    """``controller-N`` or ``controller-leader`` -> a controller node id (one-line UsageError)."""
    name = target.removeprefix(CONTROLLER_PREFIX)
    if name == "leader":
        with cluster.observer(topics=[]) as observer:
            leader = observer.snapshot().controller
        if leader is None:
            raise HarnessError("the metadata log names no quorum leader")
        return leader
    if not name.isdigit() or int(name) not in cluster.controller_ids:
        raise UsageError(f"unknown controller {target!r}: the controllers are "
                         f"{', '.join(CONTROLLER_PREFIX + str(c) for c in cluster.controller_ids)} (or controller-leader)")
    return int(name)


def control_controller(cluster: KraftCliCluster, target: str, action: str) -> int:
    node = controller_id(target, cluster)
    {"kill": cluster.kill_controller, "stop": cluster.stop_controller, "pause": cluster.pause_controller,
     "resume": cluster.resume_controller, "start": cluster.start_controller}[action](node)
    cluster.write_state()
    past = {"kill": "killed", "stop": "stopped", "pause": "paused", "resume": "resumed", "start": "started"}[action]
    print(f"controller {node} {past}")
    return 0

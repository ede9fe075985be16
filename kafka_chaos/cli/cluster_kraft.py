"""``kafka-chaos cluster`` on a KRaft cluster (``cluster up --mode kraft``): what differs from
ZooKeeper mode -- the controllers' lines in ``status`` (the quorum leader and epoch from the
metadata log), and ``controller-N`` / ``controller-leader`` as targets of kill, stop, pause,
resume and start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.local.kraft import LocalKraftCluster

CONTROLLER_PREFIX = "controller-"


def print_status(cluster: LocalKraftCluster, state_dir: Path, topics: Sequence[str] | None) -> None:
    with cluster.observer(topics=topics) as observer:
        snapshot = observer.snapshot()
    print(f"state dir {state_dir}; Kafka {cluster.kafka_version}; KRaft, cluster id {cluster.cluster_id}")
    print(f"quorum leader: {snapshot.controller if snapshot.controller is not None else 'none'} "
          f"(epoch {snapshot.controller_epoch})")
    print("controllers:")
    for c in cluster.controller_ids:
        running = cluster.controller_running(c)
        print(f"  {c}  {cluster.controller_address(c)}  pid {cluster.controller_pid(c) or '-'}  "
              f"{'running' if running else 'DOWN'}{'  (leader)' if c == snapshot.controller else ''}")
    print("brokers:")
    for b in cluster.broker_ids:
        endpoint = cluster.endpoint(b)
        running = cluster.broker_running(b)
        state = "PAUSED" if running and cluster.broker_paused(b) else "running" if running else "DOWN"
        state += ", active" if b in snapshot.live_brokers else ", fenced or shutting down"
        print(f"  {b}  {endpoint.bootstrap}  pid {endpoint.pid or '-'}  {state}")
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


def controller_id(target: str, cluster: LocalKraftCluster) -> int:
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


def control_controller(cluster: LocalKraftCluster, target: str, action: str) -> int:
    node = controller_id(target, cluster)
    {"kill": cluster.kill_controller, "stop": cluster.stop_controller, "pause": cluster.pause_controller,
     "resume": cluster.resume_controller, "start": cluster.start_controller}[action](node)
    cluster.write_state()
    past = {"kill": "killed", "stop": "stopped", "pause": "paused", "resume": "resumed", "start": "started"}[action]
    print(f"controller {node} {past}")
    return 0

"""Topic deletion and partition growth figures on a real local cluster (3 brokers, the harness's timing settings:
zookeeper.session.timeout.ms=6000, tickTime=500):

1. topic deletion: broker 3 killed, a topic with replicas on it deleted (it waits, ineligible),
   broker 3 started again: seconds from the start request (and from its registration in
   /brokers/ids) to the topic znode's removal;
2. failed log directory: broker 2's only log directory made read-only (a read-only bind mount
   over it; root needed): seconds from the mount to ZooKeeper showing new leaders for every
   partition broker 2 led. Kafka detects the failure at its next write to the directory (the
   high-watermark checkpoint, every ``replica.high.watermark.checkpoint.interval.ms`` = 5 s) and,
   its only directory gone, halts (``LogManager``: "Shutdown broker because all log dirs ... have
   failed"), so the controller sees a session expiry: the oracle event is ``BrokerFailure``.
   (A *partial* failure -- replicas on one of several directories, the broker running on --
   is ``benchmarks/log_dir_bench.py``, with two ``log.dirs`` per broker.)

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/topic_paths_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_chaos.harness import metadata  # noqa: E402
from kafka_chaos.harness.config import ClusterConfig  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.local.cluster import LocalCluster  # noqa: E402
from kafka_chaos.harness.observer import ZkObserver  # noqa: E402
from kafka_chaos.harness.zksnapshot import ZkSnapshot  # noqa: E402
from kafka_chaos.oracle import BrokerFailure, predict  # noqa: E402
from kafka_chaos.scenarios.model.snapshots import cluster_state_of, mismatches  # noqa: E402


def _online(snapshot: ZkSnapshot, topic: str, partitions: int = 3) -> bool:
    """Every partition has its state znode with both replicas in the ISR: ``all()`` over no
    partition states would be true the moment the topic znode appears, before the controller
    wrote any of them."""
    states = snapshot.topic_partitions(topic)
    return len(states) == partitions and all(len(p.isr) == 2 for p in states)


def deletion_round(cluster: LocalCluster) -> tuple[float, float]:
    topic = f"doomed-{uuid.uuid4().hex[:6]}"
    with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as observer:
        metadata.create_topic(cluster.bootstrap_servers, topic, {0: (1, 2), 1: (2, 3), 2: (3, 1)})
        observer.wait_until(lambda s: _online(s, topic), timeout=30, description="topic online")
        cluster.kill_broker(3)
        observer.wait_until(lambda s: 3 not in s.live_brokers, timeout=30, description="broker 3 gone")
        metadata.request_topic_deletion(cluster.bootstrap_servers, topic)
        observer.wait_until(lambda s: topic in s.topics_being_deleted and s.has_topic(topic)
                            and all(p.leader == -1 for p in s.topic_partitions(topic)),
                            timeout=30, description="deletion waiting for broker 3")
        time.sleep(1.0)
        started = time.monotonic()
        cluster.start_broker(3)
        registered = observer.wait_until(lambda s: 3 in s.live_brokers, timeout=60, description="broker 3 back")
        registered_at = time.monotonic()
        observer.wait_until(lambda s: not s.has_topic(topic), timeout=60, description="topic deleted")
        done = time.monotonic()
        del registered
        return done - started, done - registered_at


def _mount_read_only(path: Path) -> None:
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)


def log_dir_round(cluster: LocalCluster, run_dir: Path) -> float:
    topic = f"led-{uuid.uuid4().hex[:6]}"
    data = run_dir / "broker-2" / "data"
    with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as observer:
        metadata.create_topic(cluster.bootstrap_servers, topic, {0: (2, 1), 1: (2, 3), 2: (1, 2)})
        before = observer.wait_until(
            lambda s: _online(s, topic), timeout=30, description="topic online")
        want = predict(cluster_state_of(before, [topic], {}), [BrokerFailure((2,))]).state
        failed_at = time.monotonic()
        _mount_read_only(data)
        try:
            observer.wait_until(lambda s: not mismatches(s, want, [topic]), timeout=60,
                                description="new leaders for broker 2's partitions")
            elapsed = time.monotonic() - failed_at
        finally:
            subprocess.run(["umount", "-l", str(data)], check=False)
        logs = run_dir / "broker-2" / "logs"
        halted = any("have failed" in f.read_text(errors="replace") for f in logs.glob("*.log*"))
        print(f"broker 2 {'halted: all its log dirs failed' if halted else 'left no log-dir-failure line'} "
              f"({elapsed:.1f} s to new leaders)")
        cluster.start_broker(2)
        observer.wait_until(lambda s: 2 in s.live_brokers, timeout=60, description="broker 2 back")
        return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("topic_paths_bench: the log-directory figure needs root (mount)", file=sys.stderr)
    deletions: list[tuple[float, float]] = []
    log_dirs: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kc-topic-bench-") as tmp:
        run_dir = Path(tmp) / "run"
        with LocalCluster(ClusterConfig(brokers=3), resolve_distribution(), run_dir=run_dir) as cluster:
            for _ in range(args.rounds):
                deletions.append(deletion_round(cluster))
                if os.geteuid() == 0:
                    log_dirs.append(log_dir_round(cluster, run_dir))
    print(f"topic deletion done after the down replica's start request: "
          f"{', '.join(f'{d:.1f}' for d, _ in deletions)} s (median {statistics.median(d for d, _ in deletions):.1f})")
    print(f"  ... after its registration in /brokers/ids: "
          f"{', '.join(f'{r:.2f}' for _, r in deletions)} s (median {statistics.median(r for _, r in deletions):.2f})")
    if log_dirs:
        print(f"log directory failed (read-only) -> new leaders in ZooKeeper: "
              f"{', '.join(f'{x:.1f}' for x in log_dirs)} s (median {statistics.median(log_dirs):.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time from a log directory failing to its partitions' new leaders in ZooKeeper.

A real local cluster (3 brokers, two ``log.dirs`` each, the harness's timing settings:
zookeeper.session.timeout.ms=6000, tickTime=500). Each round creates a topic that broker 2 leads
twice, fails the directory holding its partition 0 on broker 2 (:mod:`harness.log_dirs`: moved
aside, a file in its place), and measures the seconds until ZooKeeper shows the state the oracle
predicts for ``LogDirFailure`` (new leaders for the partitions broker 2 led from there, ISRs
without it), then repairs the directory and restarts broker 2. Kafka notices the failure at its
next write under the directory, the high-watermark checkpoint: the figure is taken for each
``replica.high.watermark.checkpoint.interval.ms`` given (Kafka's default is 5000; the catalogue's
log-directory scenarios use 1000).

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/log_dir_bench.py [--rounds N] [--intervals 1000,5000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_chaos.common.waits import wait_until  # noqa: E402
from kafka_chaos.harness import metadata  # noqa: E402
from kafka_chaos.harness.config import REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, ClusterConfig  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.local.cluster import LocalCluster  # noqa: E402
from kafka_chaos.harness.observer import ZkObserver  # noqa: E402
from kafka_chaos.oracle import LogDirFailure, TopicPartition, predict  # noqa: E402
from kafka_chaos.scenarios.model.snapshots import cluster_state_of, mismatches  # noqa: E402

BROKER = 2


def one_round(cluster: LocalCluster) -> tuple[float, int]:
    """Seconds from the failure to the predicted leaders and ISRs; partitions it moved."""
    topic = f"ld-{uuid.uuid4().hex[:6]}"
    with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as observer:
        metadata.create_topic(cluster.bootstrap_servers, topic, {0: (2, 1), 1: (2, 3), 2: (1, 2), 3: (3, 2)})
        before = observer.wait_until(
            lambda s: s.has_topic(topic) and len(s.topic_partitions(topic)) == 4
            and all(len(p.isr) == 2 for p in s.topic_partitions(topic)),
            timeout=30, description="topic online")
        # ZooKeeper shows the ISR the controller wrote; the broker creates its logs a moment later
        # (a follower's on its LeaderAndIsr): list the directory only once all four are there.
        dirs = range(len(cluster.log_dirs(BROKER)))
        wait_until(lambda: sum(len([tp for tp in cluster.log_dir_partitions(BROKER, i) if tp[0] == topic])
                               for i in dirs), timeout=30, interval=0.1, accept=lambda n: n == 4,
                   description=f"broker {BROKER}'s four {topic} logs")
        index = next(i for i in dirs if (topic, 0) in cluster.log_dir_partitions(BROKER, i))
        held = tuple(TopicPartition(t, p) for t, p in cluster.log_dir_partitions(BROKER, index) if t == topic)
        want = predict(cluster_state_of(before, [topic], {}), [LogDirFailure(BROKER, held)]).state
        failed_at = time.monotonic()
        cluster.fail_log_dir(BROKER, index)
        try:
            observer.wait_until(lambda s: not mismatches(s, want, [topic]), timeout=60,
                                description=f"the predicted state after broker {BROKER}'s directory failed")
            elapsed = time.monotonic() - failed_at
        finally:
            cluster.repair_log_dirs(BROKER)
            cluster.stop_broker(BROKER)
            cluster.start_broker(BROKER)
        observer.wait_until(lambda s: all(len(p.isr) == 2 for p in s.topic_partitions(topic)), timeout=60,
                            description=f"broker {BROKER} back in every ISR")
        moved = sum(1 for tp in held if before.partitions[(tp.topic, tp.partition)].leader == BROKER)
        return elapsed, moved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--intervals", default="1000,5000", help="high-watermark checkpoint intervals, ms")
    args = parser.parse_args()
    intervals = [int(x) for x in args.intervals.split(",")]
    distribution = resolve_distribution()
    for interval in intervals:
        config = ClusterConfig(brokers=3, log_dirs=2,
                               cluster_overrides={REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: str(interval)})
        rounds: list[tuple[float, int]] = []
        with tempfile.TemporaryDirectory(prefix="kc-log-dir-bench-") as tmp:
            with LocalCluster(config, distribution, run_dir=Path(tmp) / "run") as cluster:
                for _ in range(args.rounds):
                    rounds.append(one_round(cluster))
        times = [t for t, _ in rounds]
        print(f"{REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS}={interval}: log directory failed -> new leaders "
              f"in ZooKeeper: {', '.join(f'{t:.2f}' for t in times)} s (median {statistics.median(times):.2f}, "
              f"{len(rounds)} rounds, leaders moved per round: {', '.join(str(m) for _, m in rounds)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

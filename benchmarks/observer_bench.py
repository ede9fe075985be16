"""Figures for the ZooKeeper observer and the metadata helpers on a local 3-broker cluster.

    .venv/bin/python benchmarks/observer_bench.py [--partitions 30] [--kills 3]

1. Snapshot cost: median/max wall time of ``ZkObserver.snapshot()`` for one topic of N
   partitions (three pipelined ZooKeeper round trips, whatever N is).
2. Watch lag: ``ZkAdmin.set_topic_config`` (our own ZK write, returned) -> its ``topic_config`` event.
3. ``broker_view`` (one Metadata v7 request to one broker) and AdminClient call times.
4. Hard kill of a non-controller leader: kill -> ``broker_gone`` (session expiry) -> the state
   znode event naming the new leader; the victim is restarted between kills.
5. Thread hygiene: OS threads of this process before and after all of the above.

Figures only: nothing here asserts a speed.  Runs one cluster; never next to another of yours.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.harness import metadata  # noqa: E402
from kafka_chaos.harness.config import ClusterConfig  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.local.cluster import LocalCluster  # noqa: E402
from kafka_chaos.harness.observer import TOPIC_CONFIG, ZkObserver, ZkSnapshot  # noqa: E402
from kafka_chaos.harness.zkadmin import ZkAdmin  # noqa: E402
from kafka_chaos.harness.zkevents import TopicConfigChanged  # noqa: E402


def os_threads() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return -1


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def summary(values: list[float]) -> str:
    return f"median {ms(statistics.median(values))}, max {ms(max(values))} (n={len(values)})"


def settle(observer: ZkObserver, cluster: LocalCluster, topic: str,
           assignment: dict[int, tuple[int, ...]]) -> ZkSnapshot:
    """Full ISRs, then preferred leaders: a restarted broker (or one whose session expired on
    its own on a loaded 2-core machine) must catch up before it can lead again."""
    observer.wait_until(lambda s: len(s.live_brokers) == 3 and all(
        set(s.partition(topic, p).isr) == set(r) for p, r in assignment.items()),
        timeout=120, description="full ISRs")
    metadata.elect_leaders(cluster.bootstrap_servers, "preferred", [(topic, p) for p in assignment])
    return observer.wait_until(lambda s: all(s.partition(topic, p).leader == r[0] for p, r in assignment.items()),
                               timeout=60, description="preferred leaders")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--kills", type=int, default=3)
    args = parser.parse_args()

    threads_before = os_threads()
    with LocalCluster(ClusterConfig(brokers=3), resolve_distribution()) as cluster:
        topic = f"bench-{uuid.uuid4().hex[:6]}"
        assignment = {p: tuple((p + i) % 3 + 1 for i in range(3)) for p in range(args.partitions)}
        t = time.perf_counter()
        metadata.create_topic(cluster.bootstrap_servers, topic, assignment)
        print(f"create_topic ({args.partitions} partitions): {ms(time.perf_counter() - t)}")
        with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as observer:
            settle(observer, cluster, topic, assignment)
            durations = []
            for _ in range(20):
                t = time.perf_counter()
                observer.snapshot()
                durations.append(time.perf_counter() - t)
            print(f"snapshot ({args.partitions} partitions, 3 brokers): {summary(durations)}")

            lags = []
            with ZkAdmin(cluster.zookeeper_connect) as admin:
                for i in range(10):
                    written = time.time()
                    admin.set_topic_config(topic, {"retention.ms": str(3_600_000 + i)})
                    event = observer.wait_event(TOPIC_CONFIG, after=written, timeout=10, topic=topic,
                                                description="the config event",
                                                where=lambda e, i=i: isinstance(e, TopicConfigChanged)
                                                and e.config.get("retention.ms") == str(3_600_000 + i))
                    lags.append(max(0.0, event.at - written))
            print(f"set_topic_config called -> its topic_config event recorded: {summary(lags)}")

            views = []
            for broker in cluster.broker_ids:
                t = time.perf_counter()
                metadata.broker_view(cluster.endpoint(broker).bootstrap, [topic])
                views.append(time.perf_counter() - t)
            print(f"broker_view (one broker, {args.partitions} partitions): {summary(views)}")
            t = time.perf_counter()
            metadata.describe_topics(cluster.bootstrap_servers, [topic])
            print(f"describe_topics via AdminClient (new client each call): {ms(time.perf_counter() - t)}")

            detections, elections = [], []
            for _ in range(args.kills):
                snap = settle(observer, cluster, topic, assignment)
                victim = next(b for b in cluster.broker_ids if b != snap.controller)
                probe = next(p for p in snap.topic_partitions(topic) if p.leader == victim)
                killed_at = time.time()
                cluster.kill_broker(victim)
                observer.wait_until(lambda s: victim not in s.live_brokers
                                    and s.partition(topic, probe.partition).leader not in (victim, -1),
                                    timeout=60, description=f"a new leader for {topic}-{probe.partition}")
                gone = observer.broker_gone_at(victim, killed_at)
                elected = observer.new_leader_at(topic, probe.partition, after=killed_at, old_leader=victim)
                assert gone is not None and elected is not None
                detections.append(gone - killed_at)
                elections.append(elected - gone)
                cluster.start_broker(victim)
            session = cluster.broker_settings().get("zookeeper.session.timeout.ms")
            print(f"kill -> broker_gone (session {session} ms): {summary(detections)}")
            print(f"broker_gone -> new leader in the state znode: {summary(elections)}")
            gone_events = [e for e in observer.events_since(0) if e.kind == "broker_gone"]
            print(f"broker_gone events over the whole run: {len(gone_events)} "
                  f"({len(gone_events) - args.kills} not caused by a kill: spurious session expiries)")
    time.sleep(0.5)
    names = sorted(t.name for t in threading.enumerate())
    print(f"OS threads of this process: {threads_before} before, {os_threads()} after everything "
          f"stopped; Python threads left: {names}")


if __name__ == "__main__":
    main()

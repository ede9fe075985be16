"""Figures for the containers launcher, next to the local one.

    .venv/bin/python benchmarks/containers_bench.py [--kills 3] [--starts 2] [--skip-cold] [--json OUT]

1. Image build: *cold* (no images, no .deb cache, no apt resolution cache: apt-get download,
   dpkg -x, docker import, docker build) and *cached* (both tags exist).  The cold build is made
   under separate image names and an empty cache dir, so images live runs use are untouched;
   those bench images are removed afterwards.
2. Start of a 3-broker cluster (until every broker is registered, a controller elected and each
   broker's metadata answers) on containers and on local JVMs.
3. Leader-switch latency of a hard kill, side by side: a fresh topic with replicas
   [x, y, controller], SIGKILL (``docker kill`` / ``kill -9``) of its leader x, then the time
   from the kill until ZooKeeper shows x's registration gone (detection = session expiry) and
   until the partition's state znode names a new leader (kill -> new leader).  x is restarted
   between kills.  Both launchers use the same broker settings (session timeout, tickTime).

Figures only: nothing here asserts a speed.  Runs one cluster at a time.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.harness.backends import open_cluster  # noqa: E402
from kafka_chaos.harness.config import ClusterConfig, session_timeout_ms, tick_time_ms  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.metadata import create_topic  # noqa: E402
from kafka_chaos.harness.observer import ZkObserver  # noqa: E402

CONFIG = ClusterConfig(brokers=3)


def bench_image_build(distribution: Any, cold: bool) -> dict[str, float | None]:
    from kafka_chaos.harness.containers import image

    client = image.docker_client()
    figures: dict[str, float | None] = {"cold_s": None}
    if cold:
        saved = (image.JRE_REPOSITORY, image.KAFKA_REPOSITORY, os.environ.get("KAFKA_CHAOS_CACHE"))
        with tempfile.TemporaryDirectory(prefix="kafka-chaos-bench-cache-") as cache:
            image.JRE_REPOSITORY, image.KAFKA_REPOSITORY = "kafka-chaos-bench-jre", "kafka-chaos-bench-kafka"
            os.environ["KAFKA_CHAOS_CACHE"] = cache  # empty .deb and resolution caches
            built = None
            try:
                started = time.monotonic()
                built = image.ensure_kafka_image(distribution, client=client)
                figures["cold_s"] = time.monotonic() - started
                assert not built.reused
            finally:
                image.JRE_REPOSITORY, image.KAFKA_REPOSITORY = saved[0], saved[1]
                if saved[2] is None:
                    os.environ.pop("KAFKA_CHAOS_CACHE", None)
                else:
                    os.environ["KAFKA_CHAOS_CACHE"] = saved[2]
                for repository in ("kafka-chaos-bench-kafka", "kafka-chaos-bench-jre"):
                    for img in client.images.list(name=repository):
                        for tag in img.tags:
                            client.images.remove(tag)
    image.ensure_kafka_image(distribution, client=client)  # make sure the real tags exist
    started = time.monotonic()
    cached = image.ensure_kafka_image(distribution, client=client)
    figures["cached_s"] = time.monotonic() - started
    assert cached.reused
    client.close()
    return figures


def bench_backend(backend: str, distribution: Any, kills: int) -> dict[str, Any]:
    started = time.monotonic()
    cluster = open_cluster(backend, CONFIG, distribution)
    with cluster:
        start_s = time.monotonic() - started
        detection, switch = [], []
        with ZkObserver(cluster.zookeeper_connect) as observer:
            for i in range(kills):
                controller = observer.snapshot().controller
                leader, follower = [b for b in cluster.broker_ids if b != controller][:2]
                topic = f"bench-{backend}-{i}"
                create_topic(cluster.bootstrap_servers, topic, {0: [leader, follower, controller]})
                observer.wait_until(lambda s: s.has_topic(topic) and s.partition(topic, 0).leader == leader
                                    and len(s.partition(topic, 0).isr) == 3,
                                    timeout=60, description=f"{topic}-0 led by {leader} with a full ISR")
                killed_at = time.time()
                cluster.kill_broker(leader)  # type: ignore[attr-defined]
                observer.wait_until(lambda s: s.partition(topic, 0).leader not in (leader, -1),
                                    timeout=60, description=f"a new leader for {topic}-0")
                gone = observer.broker_gone_at(leader, killed_at)
                new_leader = observer.new_leader_at(topic, 0, after=killed_at, old_leader=leader)
                detection.append((gone - killed_at) * 1000 if gone else float("nan"))
                switch.append((new_leader - killed_at) * 1000 if new_leader else float("nan"))
                print(f"  {backend} kill {i + 1}: broker {leader} gone after {detection[-1]:.0f} ms, "
                      f"new leader after {switch[-1]:.0f} ms", flush=True)
                cluster.start_broker(leader)  # type: ignore[attr-defined]
    return {"start_s": start_s, "detection_ms": detection, "kill_to_new_leader_ms": switch}


def bench_starts(backend: str, distribution: Any, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.monotonic()
        with open_cluster(backend, CONFIG, distribution):
            times.append(time.monotonic() - started)
    return times


def _stats(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"median {statistics.median(values):.0f} (min {min(values):.0f}, max {max(values):.0f}, n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3, help="hard kills per launcher [3]")
    parser.add_argument("--starts", type=int, default=2, help="extra start-ups per launcher [2]")
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold image build")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    distribution = resolve_distribution()

    print(f"Kafka {distribution.version}; session timeout {session_timeout_ms(CONFIG)} ms, "
          f"tickTime {tick_time_ms(CONFIG)} ms; {os.cpu_count()} CPUs", flush=True)
    image = bench_image_build(distribution, cold=not args.skip_cold)
    print(f"image build: cold {image['cold_s'] and round(image['cold_s'], 1)} s, "
          f"cached {image['cached_s']:.2f} s", flush=True)
    results: dict[str, Any] = {"image": image, "kafka_version": distribution.version}
    for backend in ("containers", "local"):
        figures = bench_backend(backend, distribution, args.kills)
        figures["starts_s"] = [figures["start_s"], *bench_starts(backend, distribution, args.starts)]
        results[backend] = figures
    print()
    print(f"{'':28} {'containers':>40} {'local':>40}")
    rows = [("3-broker start (s)", "starts_s", 1.0), ("kill -> broker gone (ms)", "detection_ms", 1.0),
            ("kill -> new leader (ms)", "kill_to_new_leader_ms", 1.0)]
    for label, key, _ in rows:
        fmt = (lambda v: _stats(v)) if key != "starts_s" else (
            lambda v: f"median {statistics.median(v):.1f} (min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")
        print(f"{label:28} {fmt(results['containers'][key]):>40} {fmt(results['local'][key]):>40}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

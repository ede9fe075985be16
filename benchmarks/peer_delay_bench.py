"""ISR-shrink time vs a follower's peer-link delay, local launcher as root.

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/peer_delay_bench.py \\
        [--delays 250,500,750,1000,1500,2000] [--repeats 3] [--lag-ms 3000] [--window 20] [--rate 50]

One 3-broker cluster with link proxies (``ClusterConfig(link_proxies=True)``; as root its peer
and client links go through the proxy too, docs/local-network.md), ``replica.lag.time.max.ms``
= ``--lag-ms``, topic f with three partitions led by broker 1 and followed by 2 and 3, and an
``acks=all`` producer at ``--rate`` records/s on it throughout.  For each one-way delay D,
repeated: the follower that is not the controller gets its peer links delayed by D each way
(``LocalCluster.delay_links(to_brokers=True)``), and for ``--window`` seconds the harness polls
f's partition state znodes (directly) for the follower leaving each ISR; then heal, and wait
(bounded) until it is back in every ISR.  The prediction (scenarios/faults/delay.py): a shrink
once ≈ 4D > replica.lag.time.max.ms, i.e. D > lag/4.  Figures only, nothing asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafka_chaos.common.waits import WaitTimeout, wait_until  # noqa: E402
from kafka_chaos.harness.config import ClusterConfig  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.local.cluster import LocalCluster  # noqa: E402
from kafka_chaos.harness.local.network import redirect_problem  # noqa: E402
from kafka_chaos.harness.zkclient import close_bounded, connect  # noqa: E402

TOPIC = "f"
ASSIGNMENT = [[1, 2, 3], [1, 3, 2], [1, 2, 3]]


def isrs(client: object) -> list[list[int]]:
    out = []
    for p in range(len(ASSIGNMENT)):
        data, _ = client.get(f"/brokers/topics/{TOPIC}/partitions/{p}/state")  # type: ignore[attr-defined]
        out.append(list(json.loads(data)["isr"]))
    return out


def produce(stop: threading.Event, bootstrap: str, rate: float) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    i = 0
    while not stop.is_set():
        producer.produce(TOPIC, value=str(i).encode(), partition=i % len(ASSIGNMENT))
        producer.poll(0)
        i += 1
        time.sleep(1 / rate)
    producer.flush(10)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delays", default="250,500,750,1000,1500,2000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lag-ms", type=int, default=3000)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=50.0)
    args = parser.parse_args()
    if redirect_problem() is not None:
        print(f"cannot run: {redirect_problem()}")
        return 2
    delays = [float(d) for d in args.delays.split(",")]
    config = ClusterConfig(brokers=3, link_proxies=True,
                           cluster_overrides={"replica.lag.time.max.ms": str(args.lag_ms)})
    rows = []
    with LocalCluster(config, resolve_distribution()) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, num_partitions=len(ASSIGNMENT),
                                      replica_assignment=ASSIGNMENT)])[TOPIC].result(60)
        zk = connect(cluster.zookeeper_connect, session_timeout=20, connect_timeout=20, command_deadline=20)
        stop = threading.Event()
        writer = threading.Thread(target=produce, args=(stop, cluster.bootstrap_servers, args.rate), daemon=True)
        writer.start()
        try:
            controller = json.loads(zk.get("/controller")[0])["brokerid"]
            follower = 3 if controller != 3 else 2
            wait_until(lambda: all(len(i) == 3 for i in isrs(zk)), timeout=60, interval=0.2,
                       description="full ISRs")
            time.sleep(3)
            for delay in delays:
                for repeat in range(args.repeats):
                    began = time.monotonic()
                    cluster.delay_links(follower, delay_ms=delay, to_zookeeper=False, to_brokers=True)
                    first = every = None
                    while time.monotonic() - began < args.window and every is None:
                        out = [follower not in i for i in isrs(zk)]
                        now = time.monotonic() - began
                        first = now if first is None and any(out) else first
                        every = now if all(out) else None
                        time.sleep(0.05)
                    cluster.heal_network()
                    healed = time.monotonic()
                    try:
                        wait_until(lambda: all(follower in i for i in isrs(zk)), timeout=90, interval=0.1,
                                   description="the follower back in every ISR")
                        back: float | None = time.monotonic() - healed
                    except WaitTimeout:
                        back = None
                    row = {"delay_ms": delay, "repeat": repeat, "first_shrink_s": first, "all_shrunk_s": every,
                           "back_after_heal_s": back}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    time.sleep(2)
        finally:
            stop.set()
            writer.join(15)
            close_bounded(zk, cluster.zookeeper_connect, timeout=5)
    print(f"\nreplica.lag.time.max.ms={args.lag_ms}, follower peer links delayed D each way, "
          f"{args.rate:g} acks=all records/s, window {args.window:g} s")
    print("D ms   shrunk/runs  first shrink s (median)  all 3 ISRs s (median)  back after heal s (median)")
    for delay in delays:
        mine = [r for r in rows if r["delay_ms"] == delay]
        firsts = [r["first_shrink_s"] for r in mine if r["first_shrink_s"] is not None]
        alls = [r["all_shrunk_s"] for r in mine if r["all_shrunk_s"] is not None]
        backs = [r["back_after_heal_s"] for r in mine if r["back_after_heal_s"] is not None]

        def med(xs: list[float]) -> str:
            return f"{statistics.median(xs):.1f}" if xs else "-"

        print(f"{delay:5.0f}  {len(firsts)}/{len(mine)}          {med(firsts):>6}                  "
              f"{med(alls):>6}                 {med(backs):>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

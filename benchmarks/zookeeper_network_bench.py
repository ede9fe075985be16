"""Figures of ZooKeeper faults (ensembles, loopback partitions, degraded links), local launcher.

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/zookeeper_network_bench.py \\
        [--only expiry,isr,kill] [--kills 3]

1. **Broker-session expiry vs broker↔ZooKeeper link quality.**  This machine's kernel has no
   ``netem`` (``CONFIG_NET_SCH_NETEM`` unset; only HTB/TBF), so the link is degraded by *packet
   loss* (iptables ``statistic``, both directions) instead of delay: for each loss level broker
   2's ZooKeeper link is degraded for 20 s and the time until ``/brokers/ids/2`` vanishes is
   printed ("kept" when it did not), then healed and re-registered.
2. **ISR-shrink time vs ``replica.lag.time.max.ms`` under loss**: a 3-broker cluster per value,
   a topic led by the controller with follower f, 50 msg/s produced (acks=1), 80 % loss on f's
   peer links; time from the degrade until the state znode's ISR loses f.
3. **Hard-kill leader switch, 3 ZooKeeper servers vs 1**: SIGKILL of a non-controller leader,
   time until its registration vanishes (detection) and until the state znode names a new
   leader; restarted between kills.
4. **Conformance wall time on the local backend** with the partition scenarios
   (``--only conformance``, or ``--conformance-results DIR`` to read a finished run's
   ``run.json``): the run's wall seconds, and the partition scenarios' share.

Figures only, nothing asserted.  Needs root (iptables).  One cluster at a time.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.common.waits import WaitTimeout, wait_until  # noqa: E402
from kafka_chaos.harness.config import REPLICA_LAG_TIME_MAX_MS, ClusterConfig  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.local.cluster import LocalCluster  # noqa: E402
from kafka_chaos.harness.metadata import create_topic  # noqa: E402
from kafka_chaos.harness.zkclient import close_bounded, connect  # noqa: E402

log = logging.getLogger("zookeeper_network_bench")


@contextmanager
def zk(cluster: LocalCluster) -> Iterator[Any]:
    client = connect(cluster.zookeeper_connect, session_timeout=20, connect_timeout=20, command_deadline=20)
    try:
        yield client
    finally:
        close_bounded(client, cluster.zookeeper_connect, timeout=5)


def registered(client: Any) -> set[int]:
    return {int(b) for b in client.get_children("/brokers/ids")}


def state(client: Any, topic: str, partition: int = 0) -> dict[str, Any]:
    data, _ = client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return dict(json.loads(data))


def first_true(condition: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until ``condition`` held (polled every 50 ms), None when it never did."""
    began = time.monotonic()
    try:
        wait_until(condition, timeout=timeout, interval=0.05, description="the condition")
    except WaitTimeout:
        return None
    return time.monotonic() - began


def expiry_vs_loss(losses: list[float]) -> list[tuple[float, float | None]]:
    rows = []
    with LocalCluster(ClusterConfig(brokers=3), resolve_distribution()) as cluster, zk(cluster) as client:
        for loss in losses:
            wait_until(lambda: registered(client) == {1, 2, 3}, timeout=60, interval=0.2,
                       description="all brokers registered")
            cluster.degrade(2, to_zookeeper=True, loss_pct=loss)
            took = first_true(lambda: 2 not in registered(client), timeout=20.0)
            cluster.heal_network()
            rows.append((loss, took))
            print(f"  loss {loss:5.1f} %: session {'expired after %.1f s' % took if took is not None else 'kept (20 s)'}",
                  flush=True)
    return rows


class Producer:
    """50 msg/s to one partition (acks=1) so the leader's log end keeps moving."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer as KafkaProducer

        self._producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._producer.produce(self._topic, b"x" * 100, partition=0)
            self._producer.poll(0)
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._producer.flush(5)
        del self._producer  # else librdkafka keeps reconnecting to the destroyed cluster


def isr_shrink_vs_lag(lags: list[int], loss: float) -> list[tuple[int, float | None]]:
    rows = []
    for lag in lags:
        config = ClusterConfig(brokers=3, cluster_overrides={REPLICA_LAG_TIME_MAX_MS: str(lag)})
        with LocalCluster(config, resolve_distribution()) as cluster, zk(cluster) as client:
            controller = int(json.loads(client.get("/controller")[0])["brokerid"])
            follower = next(b for b in cluster.broker_ids if b != controller)
            other = next(b for b in cluster.broker_ids if b not in (controller, follower))
            create_topic(cluster.bootstrap_servers, "isr", {0: [controller, follower, other]})
            wait_until(lambda: len(state(client, "isr")["isr"]) == 3, timeout=60, interval=0.2,
                       description="full ISR")
            producer = Producer(cluster.bootstrap_servers, "isr")
            time.sleep(2)
            cluster.degrade(follower, to_brokers=True, loss_pct=loss)
            took = first_true(lambda: follower not in state(client, "isr")["isr"], timeout=max(30.0, 6 * lag / 1000))
            cluster.heal_network()
            producer.stop()
            rows.append((lag, took))
            print(f"  replica.lag.time.max.ms {lag:6d}, loss {loss:g} %: "
                  f"{'ISR shrunk after %.1f s' % took if took is not None else 'no shrink'}", flush=True)
    return rows


def kill_switch(zookeepers: int, kills: int) -> list[tuple[float | None, float | None]]:
    rows = []
    config = ClusterConfig(brokers=3, zookeepers=zookeepers)
    with LocalCluster(config, resolve_distribution()) as cluster, zk(cluster) as client:
        controller = int(json.loads(client.get("/controller")[0])["brokerid"])
        victim = next(b for b in cluster.broker_ids if b != controller)
        other = next(b for b in cluster.broker_ids if b not in (controller, victim))
        for i in range(kills):
            topic = f"kill{i}"
            create_topic(cluster.bootstrap_servers, topic, {0: [victim, other, controller]})
            wait_until(lambda: state(client, topic)["leader"] == victim and len(state(client, topic)["isr"]) == 3,
                       timeout=60, interval=0.2, description="leader and full ISR")
            began = time.monotonic()
            cluster.kill_broker(victim)
            detection = first_true(lambda: victim not in registered(client), timeout=30)
            switched = first_true(lambda: state(client, topic)["leader"] not in (victim,), timeout=30)
            rows.append((detection, (time.monotonic() - began) if switched is not None else None))
            cluster.start_broker(victim)
    for detection, switch in rows:
        print(f"  {zookeepers} ZooKeeper server(s): detection {detection:.2f} s, kill -> new leader "
              f"{switch:.2f} s" if detection is not None and switch is not None else "  (no switch)", flush=True)
    return rows


PARTITION_SCENARIOS = ("leader_cut_from_zookeeper", "follower_cut_from_leader", "controller_cut_from_zookeeper",
                       "broker_isolated_from_everyone")


def conformance(results: Path | None) -> None:
    if results is None:
        import tempfile

        from kafka_chaos.cli.main import main as kafka_chaos

        results = Path(tempfile.mkdtemp(prefix="bench-conformance-"))
        kafka_chaos(["run", "--suite", "conformance", "--backend", "local", "--no-report", "--results", str(results)])
    info = json.loads((results / "run.json").read_text())
    outcomes = info["outcomes"]
    share = sum(o["seconds"] for o in outcomes if o["scenario"] in PARTITION_SCENARIOS)
    passed = sum(1 for o in outcomes if o["passed"])
    print(f"  {len(outcomes)} scenarios ({passed} passed), wall {info['wall_seconds']:.1f} s; the "
          f"{sum(1 for o in outcomes if o['scenario'] in PARTITION_SCENARIOS)} partition scenarios "
          f"{share:.1f} s of it", flush=True)


def summary(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "-"
    return f"median {statistics.median(got):.2f} s (min {min(got):.2f}, max {max(got):.2f}, n={len(got)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="expiry,isr,kill")
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--conformance-results", type=Path, default=None, metavar="DIR",
                        help="read the conformance figure from this finished run instead of running it")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    wanted = set(args.only.split(","))
    if "expiry" in wanted:
        print("1. broker session expiry vs loss on its ZooKeeper link (session 6 s, tick 500 ms):", flush=True)
        expiry_vs_loss([20.0, 50.0, 70.0, 85.0, 95.0])
    if "isr" in wanted:
        print("2. ISR shrink vs replica.lag.time.max.ms, 80 % loss on the follower's peer links:", flush=True)
        isr_shrink_vs_lag([2000, 4000, 8000], 80.0)
    if "kill" in wanted:
        print("3. hard-kill leader switch, 1 vs 3 ZooKeeper servers:", flush=True)
        for n in (1, 3):
            rows = kill_switch(n, args.kills)
            print(f"  {n} server(s): detection {summary([d for d, _ in rows])}; "
                  f"kill -> new leader {summary([s for _, s in rows])}", flush=True)
    if "conformance" in wanted or args.conformance_results is not None:
        print("4. conformance suite on the local backend, partition scenarios included:", flush=True)
        conformance(args.conformance_results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

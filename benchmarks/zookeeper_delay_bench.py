"""Broker session expiry vs broker↔ZooKeeper delay (issue 13's closing-note figure), local launcher.

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/zookeeper_delay_bench.py \\
        [--factors 0,0.25,0.4,0.5,0.75,1,1.5] [--repeats 3] [--window 25] [--jitter 0]

One 3-broker cluster with link proxies (``ClusterConfig(link_proxies=True)``, session 6 s,
tickTime 500 ms, one ZooKeeper server).  For each delay D = factor × session timeout, repeated:
a broker that is not the controller gets both directions of its ZooKeeper link delayed by D
(``LocalCluster.delay_links``, :mod:`harness.link_proxy`; no root, no netem), and for
``--window`` seconds the harness watches ``/brokers/ids/N`` (directly, not through the proxy):
the row says whether and when it vanished (the session expired), and how many times the broker's
ZooKeeper client gave up a connection meanwhile ("WARN Client session timed out" lines in its
server.log: a Disconnected, which Kafka ignores; read timeouts at 4 s and connect timeouts at 6 s).  Then heal, and wait (bounded) until the broker is
registered again.  Figures only, nothing asserted.  One cluster at a time (the lock).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.waits import WaitTimeout, wait_until  # noqa: E402
from harness.config import ClusterConfig  # noqa: E402
from harness.distribution import resolve_distribution  # noqa: E402
from harness.local import LocalCluster  # noqa: E402
from harness.zkclient import close_bounded, connect  # noqa: E402

TIMED_OUT = "WARN Client session timed out"  # once per drop (the stack trace repeats the text)


def registered(client: object, broker: int) -> bool:
    return client.exists(f"/brokers/ids/{broker}") is not None  # type: ignore[attr-defined]


def client_timeouts(log_file: Path) -> int:
    try:
        return log_file.read_text(errors="replace").count(TIMED_OUT)
    except OSError:
        return 0


def one_point(cluster: LocalCluster, client: object, broker: int, delay_ms: float, jitter_ms: float,
              window_s: float) -> tuple[float | None, int, float | None]:
    """(seconds until the registration vanished or None, client timeouts, heal -> registered s)."""
    wait_until(lambda: all(registered(client, b) for b in cluster.broker_ids), timeout=90, interval=0.2,
               description="every broker registered")
    log_file = cluster.log_files()[f"broker-{broker}"]
    before = client_timeouts(log_file)
    began = time.monotonic()
    cluster.delay_links(broker, delay_ms=delay_ms, jitter_ms=jitter_ms)
    vanished: float | None = None
    try:
        wait_until(lambda: not registered(client, broker), timeout=window_s, interval=0.05,
                   description="the registration vanishing")
        vanished = time.monotonic() - began
        time.sleep(max(0.0, window_s - vanished))  # same exposure for every row's timeout count
    except WaitTimeout:
        pass
    timeouts = client_timeouts(log_file) - before
    cluster.heal_network()
    healed = time.monotonic()
    try:
        wait_until(lambda: registered(client, broker), timeout=90, interval=0.1, description="re-registration")
        back: float | None = time.monotonic() - healed
    except WaitTimeout:
        back = None
    time.sleep(2.0)  # let the controller finish its BrokerChange before the next point
    return vanished, timeouts, back


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default="0,0.25,0.4,0.5,0.75,1,1.5",
                        help="delays as multiples of the session timeout")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window", type=float, default=25.0, metavar="S", help="watch time per point")
    parser.add_argument("--jitter", type=float, default=0.0, metavar="MS")
    args = parser.parse_args()
    try:
        factors = [float(f) for f in args.factors.split(",")]
    except ValueError:
        print(f"zookeeper_delay_bench: --factors must be numbers, not {args.factors!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # its reconnect chatter at teardown
    config = ClusterConfig(brokers=3, link_proxies=True)
    rows = []
    with LocalCluster(config, resolve_distribution()) as cluster:
        session_ms = cluster.session_timeout_s() * 1000
        client = connect(cluster.zookeeper_connect, session_timeout=20, connect_timeout=20, command_deadline=20)
        try:
            controller = int(json.loads(client.get("/controller")[0])["brokerid"])
            broker = next(b for b in cluster.broker_ids if b != controller)
            print(f"session {session_ms:.0f} ms, tickTime {config.zk_tick_time_ms} ms, 1 ZooKeeper server, "
                  f"broker {broker} (controller {controller}), jitter {args.jitter:g} ms, "
                  f"window {args.window:g} s", flush=True)
            for factor in factors:
                delay = factor * session_ms
                for repeat in range(args.repeats):
                    vanished, timeouts, back = one_point(cluster, client, broker, delay, args.jitter, args.window)
                    rows.append((factor, delay, vanished, timeouts, back))
                    print(f"  delay {factor:4.2f} x session = {delay:6.0f} ms each way, run {repeat + 1}: "
                          f"{'expired after %.1f s' % vanished if vanished is not None else 'kept'}; "
                          f"client connection drops {timeouts}; "
                          f"re-registered {'%.1f s' % back if back is not None else 'not within 90 s'} "
                          f"after the heal", flush=True)
        finally:
            close_bounded(client, cluster.zookeeper_connect, timeout=5)
    print("\n| delay (× session) | one-way delay | expired | expiry after (s) | client connection drops per run |")
    print("|---|---|---|---|---|")
    for factor in factors:
        mine = [r for r in rows if r[0] == factor]
        times = [r[2] for r in mine if r[2] is not None]
        spread = (f"median {statistics.median(times):.1f} ({min(times):.1f}–{max(times):.1f})" if times else "–")
        print(f"| {factor:g} | {mine[0][1] / 1000:g} s | {len(times)}/{len(mine)} | {spread} | "
              f"{', '.join(str(r[3]) for r in mine)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``kafka-chaos cluster delay BROKER_ID --to zookeeper --ms N [--jitter N]``: slow a broker's
ZooKeeper links through the cluster's link proxies (``cluster up --link-proxies``;
:mod:`harness.link_proxy`, no root needed); ``cluster heal`` undoes it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from common.errors import UsageError
from harness.link_proxy import MAX_DELAY_MS

LINK_TARGETS = ("zookeeper",)


def register_link_verbs(verbs: "argparse._SubParsersAction[argparse.ArgumentParser]",
                        with_state_dir: Callable[[argparse.ArgumentParser], argparse.ArgumentParser]) -> None:
    delay = with_state_dir(verbs.add_parser(
        "delay", help="delay a broker's ZooKeeper links by N ms each way (cluster up --link-proxies; no root)",
        description="Delay both directions of every link between the broker and ZooKeeper by MS ± JITTER "
                    "milliseconds (byte order kept), until `cluster heal` (docs/local-network.md)."))
    delay.add_argument("target", metavar="BROKER_ID", help="a broker id")
    delay.add_argument("--to", dest="links", default="zookeeper", metavar="zookeeper",
                       help="which links [default and only choice: zookeeper; peer links cannot be proxied]")
    delay.add_argument("--ms", type=float, required=True, metavar="N", help="one-way delay in milliseconds")
    delay.add_argument("--jitter", type=float, default=0.0, metavar="N",
                       help="± this many milliseconds, uniform [default: 0]")
    delay.set_defaults(func=cluster_delay)


def cluster_delay(args: argparse.Namespace) -> int:
    from cli.cluster import _attach_running, _broker_id, _state_dir, quiet_clients

    quiet_clients(args)
    if args.links not in LINK_TARGETS:
        raise UsageError(f"--to {args.links}: only the zookeeper links can be delayed (a broker advertises one "
                         "address to all its peers and clients, which a per-link proxy cannot stand in for)")
    for name, value in (("--ms", args.ms), ("--jitter", args.jitter)):
        if not 0 <= value <= MAX_DELAY_MS:
            raise UsageError(f"{name} must be in [0, {MAX_DELAY_MS:g}] milliseconds, not {value:g}")
    cluster = _attach_running(_state_dir(args))
    broker_id = _broker_id(args.target, cluster)
    if not cluster.config.link_proxies:
        raise UsageError("this cluster has no link proxies: start it with `kafka-chaos cluster up --link-proxies`")
    cluster.delay_links(broker_id, delay_ms=args.ms, jitter_ms=args.jitter)
    print(f"broker {broker_id}'s ZooKeeper links delayed {args.ms:g} ms ± {args.jitter:g} ms each way; "
          f"`kafka-chaos cluster heal` undoes it")
    return 0

"""``kafka-chaos cluster delay BROKER_ID --to zookeeper|peers|clients|everyone --ms N [--jitter N]``:
slow a broker's links through the cluster's link proxies (``cluster up --link-proxies``;
:mod:`harness.link_proxy`): its ZooKeeper links with or without root, its peer and client links as
root (nat rules redirect them through the proxy, docs/local-network.md); ``cluster heal`` undoes it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.link_proxy import MAX_DELAY_MS
from kafka_chaos.scenarios.faults.degrade import LINKS

LINK_TARGETS = tuple(LINKS)  # zookeeper, peers, clients, everyone


def register_link_verbs(verbs: "argparse._SubParsersAction[argparse.ArgumentParser]",
                        with_state_dir: Callable[[argparse.ArgumentParser], argparse.ArgumentParser]) -> None:
    delay = with_state_dir(verbs.add_parser(
        "delay", help="delay a broker's links by N ms each way (cluster up --link-proxies; peers and clients: root)",
        description="Delay both directions of every link between the broker and ZooKeeper, its peers, its "
                    "clients or all of them by MS ± JITTER milliseconds (byte order kept), until "
                    "`cluster heal` (docs/local-network.md)."))
    delay.add_argument("target", metavar="BROKER_ID", help="a broker id")
    delay.add_argument("--to", dest="links", default="zookeeper", metavar="|".join(LINK_TARGETS),
                       help="which links [default: zookeeper; peers, clients and everyone need root]")
    delay.add_argument("--ms", type=float, required=True, metavar="N", help="one-way delay in milliseconds")
    delay.add_argument("--jitter", type=float, default=0.0, metavar="N",
                       help="± this many milliseconds, uniform [default: 0]")
    delay.set_defaults(func=cluster_delay)


def cluster_delay(args: argparse.Namespace) -> int:
    from kafka_chaos.cli.cluster import attach_running, quiet_clients, resolve_broker_id, state_dir_of
    from kafka_chaos.harness.cluster import Capability, LinkDelayer, capabilities_of, capability_problems

    quiet_clients(args)
    if args.links not in LINK_TARGETS:
        raise UsageError(f"--to {args.links}: choose one of {', '.join(LINK_TARGETS)}")
    for name, value in (("--ms", args.ms), ("--jitter", args.jitter)):
        if not 0 <= value <= MAX_DELAY_MS:
            raise UsageError(f"{name} must be in [0, {MAX_DELAY_MS:g}] milliseconds, not {value:g}")
    cluster = attach_running(state_dir_of(args))
    broker_id = resolve_broker_id(args.target, cluster)
    if Capability.LINK_DELAY not in capabilities_of(cluster):
        raise UsageError(capability_problems(cluster).get(Capability.LINK_DELAY)
                         or f"the {cluster.backend} launcher cannot delay links yet (docs/containers.md, \"Delayed "
                            "links: not yet\"); a local cluster can: `kafka-chaos cluster up --link-proxies`")
    if not cluster.config.link_proxies:
        raise UsageError("this cluster has no link proxies: start it with `kafka-chaos cluster up --link-proxies`")
    try:
        cast(LinkDelayer, cluster).delay_links(broker_id, delay_ms=args.ms, jitter_ms=args.jitter, **LINKS[args.links])
    except HarnessError as exc:  # e.g. peer links of a cluster started without root: not redirected
        raise UsageError(str(exc)) from None
    what = "ZooKeeper" if args.links == "zookeeper" else "peer" if args.links == "peers" else \
        "client" if args.links == "clients" else "ZooKeeper, peer and client"
    print(f"broker {broker_id}'s {what} links delayed {args.ms:g} ms ± {args.jitter:g} ms each way; "
          f"`kafka-chaos cluster heal` undoes it")
    return 0

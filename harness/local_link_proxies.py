"""The link proxies of one :class:`harness.local.LocalCluster` (``ClusterConfig.link_proxies``).

One link per (broker, ZooKeeper server): the broker's ``zookeeper.connect`` names its own
proxy ports instead of the servers', so the harness can delay or cut *that broker's* ZooKeeper
links without root (:mod:`harness.link_proxy`).  The observer, the admin writer and the other
brokers still reach ZooKeeper directly.

As root with iptables' nat table (:func:`harness.local_network.redirect_problem`) there are also
peer and client links: one per ordered pair of brokers (``broker-X->broker-Y``: connections X
opens to Y's port) and one per broker for clients (``clients->broker-X``: connections no node
opened).  A broker advertises one address, so these cannot be named in its configuration;
instead nat rules (:class:`harness.local_network.Redirect`, from :meth:`ClusterLinkProxies.
redirects`) send each such connection to its link's port, and the proxy's onward connection
carries ``SO_MARK`` :data:`harness.local_network.PROXY_MARK` so no rule redirects it again.

A cluster this process owns runs the proxy on a thread of its own (it dies with the process,
like the owned JVMs); a detached one (``kafka-chaos cluster up``) runs it as a process
(``python -m harness.link_proxy``) whose control port is in ``cluster.json``, so later
``cluster delay``/``cut``/``heal`` commands reach it; it is killed with the cluster.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.errors import HarnessError
from harness import processes
from harness.link_proxy import HOST, LinkControl, LinkProxy, RemoteLinkProxy
from harness.local_network import PROXY_MARK, Redirect, node_mark
from harness.processes import NodeProcess

log = logging.getLogger(__name__)

READY_FILE = "link-proxy.json"
START_TIMEOUT_S = 30.0


def link_name(broker_id: int, server_id: int) -> str:
    return f"broker-{broker_id}->zookeeper-{server_id}"


def broker_links(broker_id: int, server_ids: list[int]) -> list[str]:
    return [link_name(broker_id, s) for s in server_ids]


def peer_link_name(opener: int, listener: int) -> str:
    """Connections broker ``opener`` opens to broker ``listener``'s port."""
    return f"broker-{opener}->broker-{listener}"


def client_link_name(broker_id: int) -> str:
    """Connections no node opened (the workload, the harness) to the broker's port."""
    return f"clients->broker-{broker_id}"


def peer_links(broker_id: int, broker_ids: list[int]) -> list[str]:
    """Both directions of connection between the broker and each other broker."""
    others = [b for b in broker_ids if b != broker_id]
    return [peer_link_name(broker_id, b) for b in others] + [peer_link_name(b, broker_id) for b in others]


def redirected_links(broker_ports: Mapping[int, int]) -> dict[str, tuple[str, int]]:
    """Pure: the peer and client links of brokers (id -> port), each to its real port."""
    links = {peer_link_name(a, b): (HOST, port) for a in broker_ports for b, port in broker_ports.items() if a != b}
    links.update({client_link_name(b): (HOST, port) for b, port in broker_ports.items()})
    return links


@dataclass
class ClusterLinkProxies:
    """The running proxy of one cluster, however it runs."""

    control: LinkControl
    server_ids: list[int]
    owned: LinkProxy | None = None  # on a thread of this process
    process: NodeProcess | None = None  # a detached process
    control_port: int = 0
    broker_ports: dict[int, int] | None = None  # peer and client links too (root): broker id -> port

    @property
    def peer_links(self) -> bool:
        return self.broker_ports is not None

    def redirects(self) -> list[Redirect]:
        """The nat redirects that put the peer and client links through the proxy."""
        ports = self.broker_ports or {}
        found = [Redirect(node_mark(ports[a]), ports[b], self.control.port(peer_link_name(a, b)))
                 for a in ports for b in ports if a != b]
        return found + [Redirect(0, port, self.control.port(client_link_name(b))) for b, port in ports.items()]

    def connect_string(self, broker_id: int) -> str:
        """The broker's ``zookeeper.connect``: its own proxy of each server, in server order."""
        return ",".join(f"{HOST}:{self.control.port(link)}" for link in broker_links(broker_id, self.server_ids))

    def state(self) -> dict[str, Any]:
        return {"control_port": self.control_port, "server_ids": self.server_ids,
                "broker_ports": {str(b): p for b, p in self.broker_ports.items()} if self.broker_ports else None,
                "pid": self.process.pid if self.process else None,
                "started_at": self.process.started_at if self.process else None,
                "identity": self.process.identity if self.process else None}

    def stop(self) -> None:
        """Close every proxied connection (idempotent)."""
        if self.owned is not None:
            self.owned.stop()
        if self.process is not None and self.process.alive():
            if not self.process.terminate(5.0):
                self.process.kill()


def start_link_proxies(run_dir: Path, broker_ids: list[int], servers: Mapping[int, int], *,
                       detached: bool, broker_ports: Mapping[int, int] | None = None) -> ClusterLinkProxies:
    """Start one link per (broker, server); ``servers``: server id -> client port.  With
    ``broker_ports`` (broker id -> port; root only) also the peer and client links, whose
    onward connections carry ``SO_MARK`` ``PROXY_MARK``."""
    links = {link_name(b, s): (HOST, port) for b in broker_ids for s, port in sorted(servers.items())}
    server_ids = sorted(servers)
    ports = dict(broker_ports) if broker_ports is not None else None
    mark = PROXY_MARK if ports is not None else None
    if ports is not None:
        links.update(redirected_links(ports))
    if not detached:
        proxy = LinkProxy(links, upstream_mark=mark).start()
        return ClusterLinkProxies(proxy, server_ids, owned=proxy, control_port=proxy.control_port,
                                  broker_ports=ports)
    ready = run_dir / READY_FILE
    argv = [sys.executable, "-m", "harness.link_proxy", "--links", json.dumps(links), "--ready", str(ready),
            *(["--mark", str(mark)] if mark is not None else [])]
    process = processes.spawn("link-proxy", argv, output=run_dir / "link-proxy.log", identity=str(ready),
                              cwd=Path.cwd(), detached=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.exists():
        if not process.alive() or time.monotonic() > deadline:
            process.kill()
            raise HarnessError(f"the link proxy did not start within {START_TIMEOUT_S:.0f} s "
                               f"(see {run_dir / 'link-proxy.log'})")
        time.sleep(0.05)
    control_port = int(json.loads(ready.read_text())["control_port"])
    return ClusterLinkProxies(RemoteLinkProxy(control_port), server_ids, process=process,
                              control_port=control_port, broker_ports=ports)


def attach_link_proxies(state: Mapping[str, Any] | None) -> ClusterLinkProxies | None:
    """The proxy of a cluster another process started (``cluster.json``'s ``link_proxy``)."""
    if not state:
        return None
    process = None
    if state.get("pid") is not None:
        process = processes.attach("link-proxy", int(state["pid"]), str(state["identity"]), state.get("started_at"))
    ports = state.get("broker_ports")
    return ClusterLinkProxies(RemoteLinkProxy(int(state["control_port"])), [int(s) for s in state["server_ids"]],
                              process=process, control_port=int(state["control_port"]),
                              broker_ports={int(b): int(p) for b, p in ports.items()} if ports else None)

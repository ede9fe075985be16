"""The link proxies of one :class:`harness.local.cluster.LocalCluster` (``ClusterConfig.link_proxies``).

One link per (broker, ZooKeeper server): the broker's ``zookeeper.connect`` names its own
proxy ports instead of the servers', so the harness can delay or cut *that broker's* ZooKeeper
links without root (:mod:`harness.link_proxy`).  The observer, the admin writer and the other
brokers still reach ZooKeeper directly.

As root with iptables' nat table (:func:`harness.local.network.redirect_problem`) there are also
peer and client links: one per ordered pair of brokers (``broker-X->broker-Y``: connections X
opens to Y's port) and one per broker for clients (``clients->broker-X``: connections no node
opened).  A broker advertises one address, so these cannot be named in its configuration;
instead nat rules (:class:`harness.local.network.Redirect`, from :meth:`ClusterLinkProxies.
redirects`) send each such connection to its link's port, and the proxy's onward connection
carries ``SO_MARK`` :data:`harness.local.network.PROXY_MARK` so no rule redirects it again.
A broker with KIP-291's control-plane listener has a second port, which the controller's
connections go to (``ControllerChannelManager.addNewBroker``); each of those links has a proxy of
its own (``broker-X->broker-Y/control-plane``, ``clients->broker-Y/control-plane``), delayed
with the broker's peer or client links.

A cluster this process owns runs the proxy on a thread of its own (it dies with the process,
like the owned JVMs); a detached one (``kafka-chaos cluster up``) runs it as a process
(``python -m kafka_chaos.harness.link_proxy``) whose control port is in ``cluster.json``, so later
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

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness import processes
from kafka_chaos.harness.link_proxy import HOST, LinkControl, LinkProxy, RemoteLinkProxy
from kafka_chaos.harness.local.network import PROXY_MARK, Redirect, node_mark
from kafka_chaos.harness.processes import NodeProcess

log = logging.getLogger(__name__)

READY_FILE = "link-proxy.json"
START_TIMEOUT_S = 30.0


def link_name(broker_id: int, server_id: int) -> str:
    return f"broker-{broker_id}->zookeeper-{server_id}"


def broker_links(broker_id: int, server_ids: list[int]) -> list[str]:
    return [link_name(broker_id, s) for s in server_ids]


CONTROL_PLANE_SUFFIX = "/control-plane"


def peer_link_name(opener: int, listener: int, control_plane: bool = False) -> str:
    """Connections broker ``opener`` opens to broker ``listener``'s port (its control-plane
    port with ``control_plane``)."""
    return f"broker-{opener}->broker-{listener}" + (CONTROL_PLANE_SUFFIX if control_plane else "")


def client_link_name(broker_id: int, control_plane: bool = False) -> str:
    """Connections no node opened (the workload, the harness) to the broker's port (its
    control-plane port with ``control_plane``)."""
    return f"clients->broker-{broker_id}" + (CONTROL_PLANE_SUFFIX if control_plane else "")


def peer_links(broker_id: int, broker_ids: list[int], control_plane: bool = False) -> list[str]:
    """Both directions of connection between the broker and each other broker; with
    ``control_plane`` also those to either's control-plane port."""
    others = [b for b in broker_ids if b != broker_id]
    planes = (False, True) if control_plane else (False,)
    return [name for cp in planes for name in
            [peer_link_name(broker_id, b, cp) for b in others] + [peer_link_name(b, broker_id, cp) for b in others]]


def client_links(broker_id: int, control_plane: bool = False) -> list[str]:
    return [client_link_name(broker_id)] + ([client_link_name(broker_id, True)] if control_plane else [])


def redirected_links(broker_ports: Mapping[int, int],
                     control_ports: Mapping[int, int] | None = None) -> dict[str, tuple[str, int]]:
    """Pure: the peer and client links of brokers (id -> port; ``control_ports``: id -> its
    control-plane port), each to its real port."""
    links: dict[str, tuple[str, int]] = {}
    for cp, ports in ((False, broker_ports), (True, control_ports or {})):
        links.update({peer_link_name(a, b, cp): (HOST, port) for a in broker_ports for b, port in ports.items()
                      if a != b})
        links.update({client_link_name(b, cp): (HOST, port) for b, port in ports.items()})
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
    control_ports: dict[int, int] | None = None  # and those to KIP-291 listeners: broker id -> that port

    @property
    def peer_links(self) -> bool:
        return self.broker_ports is not None

    def redirects(self) -> list[Redirect]:
        """The nat redirects that put the peer and client links through the proxy."""
        ports = self.broker_ports or {}
        found: list[Redirect] = []
        # A connection is told by its opener's mark (the opener's first port) and the port it goes to.
        for cp, to in ((False, ports), (True, self.control_ports or {})):
            found += [Redirect(node_mark(ports[a]), to[b], self.control.port(peer_link_name(a, b, cp)))
                      for a in ports for b in to if a != b]
            found += [Redirect(0, port, self.control.port(client_link_name(b, cp))) for b, port in to.items()]
        return found

    def connect_string(self, broker_id: int) -> str:
        """The broker's ``zookeeper.connect``: its own proxy of each server, in server order."""
        return ",".join(f"{HOST}:{self.control.port(link)}" for link in broker_links(broker_id, self.server_ids))

    def state(self) -> dict[str, Any]:
        return {"control_port": self.control_port, "server_ids": self.server_ids,
                "broker_ports": {str(b): p for b, p in self.broker_ports.items()} if self.broker_ports else None,
                "control_ports": {str(b): p for b, p in self.control_ports.items()} if self.control_ports else None,
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
                       detached: bool, broker_ports: Mapping[int, int] | None = None,
                       control_ports: Mapping[int, int] | None = None) -> ClusterLinkProxies:
    """Start one link per (broker, server); ``servers``: server id -> client port.  With
    ``broker_ports`` (broker id -> port; root only) also the peer and client links, whose
    onward connections carry ``SO_MARK`` ``PROXY_MARK``, and with ``control_ports`` those to
    the brokers' control-plane listeners."""
    links = {link_name(b, s): (HOST, port) for b in broker_ids for s, port in sorted(servers.items())}
    server_ids = sorted(servers)
    ports = dict(broker_ports) if broker_ports is not None else None
    control = dict(control_ports) if ports is not None and control_ports else None
    mark = PROXY_MARK if ports is not None else None
    if ports is not None:
        links.update(redirected_links(ports, control))
    if not detached:
        proxy = LinkProxy(links, upstream_mark=mark).start()
        return ClusterLinkProxies(proxy, server_ids, owned=proxy, control_port=proxy.control_port,
                                  broker_ports=ports, control_ports=control)
    ready = run_dir / READY_FILE
    argv = [sys.executable, "-m", "kafka_chaos.harness.link_proxy", "--links", json.dumps(links), "--ready", str(ready),
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
                              control_port=control_port, broker_ports=ports, control_ports=control)


def attach_link_proxies(state: Mapping[str, Any] | None) -> ClusterLinkProxies | None:
    """The proxy of a cluster another process started (``cluster.json``'s ``link_proxy``)."""
    if not state:
        return None
    process = None
    if state.get("pid") is not None:
        process = processes.attach("link-proxy", int(state["pid"]), str(state["identity"]), state.get("started_at"))
    ports, control = state.get("broker_ports"), state.get("control_ports")
    return ClusterLinkProxies(RemoteLinkProxy(int(state["control_port"])), [int(s) for s in state["server_ids"]],
                              process=process, control_port=int(state["control_port"]),
                              broker_ports={int(b): int(p) for b, p in ports.items()} if ports else None,
                              control_ports={int(b): int(p) for b, p in control.items()} if control else None)

"""The link proxies of one :class:`harness.local.LocalCluster` (``ClusterConfig.link_proxies``).

One link per (broker, ZooKeeper server): the broker's ``zookeeper.connect`` names its own
proxy ports instead of the servers', so the harness can delay or cut *that broker's* ZooKeeper
links without root (:mod:`harness.link_proxy`).  The observer, the admin writer and the other
brokers still reach ZooKeeper directly.

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
from harness.processes import NodeProcess

log = logging.getLogger(__name__)

READY_FILE = "link-proxy.json"
START_TIMEOUT_S = 30.0


def link_name(broker_id: int, server_id: int) -> str:
    return f"broker-{broker_id}->zookeeper-{server_id}"


def broker_links(broker_id: int, server_ids: list[int]) -> list[str]:
    return [link_name(broker_id, s) for s in server_ids]


@dataclass
class ClusterLinkProxies:
    """The running proxy of one cluster, however it runs."""

    control: LinkControl
    server_ids: list[int]
    owned: LinkProxy | None = None  # on a thread of this process
    process: NodeProcess | None = None  # a detached process
    control_port: int = 0

    def connect_string(self, broker_id: int) -> str:
        """The broker's ``zookeeper.connect``: its own proxy of each server, in server order."""
        return ",".join(f"{HOST}:{self.control.port(link)}" for link in broker_links(broker_id, self.server_ids))

    def state(self) -> dict[str, Any]:
        return {"control_port": self.control_port, "server_ids": self.server_ids,
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
                       detached: bool) -> ClusterLinkProxies:
    """Start one link per (broker, server); ``servers``: server id -> client port."""
    links = {link_name(b, s): (HOST, port) for b in broker_ids for s, port in sorted(servers.items())}
    server_ids = sorted(servers)
    if not detached:
        proxy = LinkProxy(links).start()
        return ClusterLinkProxies(proxy, server_ids, owned=proxy, control_port=proxy.control_port)
    ready = run_dir / READY_FILE
    argv = [sys.executable, "-m", "harness.link_proxy", "--links", json.dumps(links), "--ready", str(ready)]
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
                              control_port=control_port)


def attach_link_proxies(state: Mapping[str, Any] | None) -> ClusterLinkProxies | None:
    """The proxy of a cluster another process started (``cluster.json``'s ``link_proxy``)."""
    if not state:
        return None
    process = None
    if state.get("pid") is not None:
        process = processes.attach("link-proxy", int(state["pid"]), str(state["identity"]), state.get("started_at"))
    return ClusterLinkProxies(RemoteLinkProxy(int(state["control_port"])), [int(s) for s in state["server_ids"]],
                              process=process, control_port=int(state["control_port"]))

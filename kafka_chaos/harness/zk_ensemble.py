"""A ZooKeeper ensemble of 1, 3 or 5 servers: their ``zoo.cfg`` lines, who leads, and when
the ensemble serves.

ZooKeeper 3.8 (``QuorumPeerConfig.parseProperties``) runs replicated when ``server.N`` lines
are present, with ``myid`` in ``dataDir`` naming the local one; a lone server stays standalone
(today's clusters, unchanged).  ``initLimit``/``syncLimit`` are in ticks: with ``tickTime``
500 ms, 10 and 5 ticks give a follower 5 s to connect and sync and 2.5 s to answer the leader.

The mode of a server comes from the ``srvr`` four-letter word (``Mode: leader|follower|
standalone``); a server outside a quorum answers "This ZooKeeper instance is not currently
serving requests" (``NIOServerCnxn``/``FourLetterCommands``: only ``ruok``-like commands answer
without a running ``ZooKeeperServer``), so ``srvr`` tells serving from merely running.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.errors import HarnessError
from kafka_chaos.harness.nodes import zookeeper_four_letter

HOST = "127.0.0.1"
INIT_LIMIT_TICKS = 10
SYNC_LIMIT_TICKS = 5
SERVING_MODES = ("leader", "follower", "standalone")


@dataclass(frozen=True)
class ZkServer:
    """One ensemble member: its id (``myid``) and its three ports."""

    server_id: int
    client_port: int
    quorum_port: int
    election_port: int


def ensemble_properties(servers: Sequence[ZkServer]) -> dict[str, str]:
    """The replicated-mode lines of ``zookeeper.properties``; none for a lone server."""
    if len(servers) <= 1:
        return {}
    props = {"initLimit": str(INIT_LIMIT_TICKS), "syncLimit": str(SYNC_LIMIT_TICKS)}
    for server in servers:
        props[f"server.{server.server_id}"] = f"{HOST}:{server.quorum_port}:{server.election_port}"
    return props


def parse_mode(answer: str) -> str | None:
    """``srvr``'s ``Mode:`` line (pure); None when the server is not serving."""
    for line in answer.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def server_mode(port: int, timeout: float = 1.0) -> str | None:
    """leader / follower / standalone, or None when it does not serve (or does not answer)."""
    try:
        return parse_mode(zookeeper_four_letter(HOST, port, "srvr", timeout=timeout))
    except OSError:
        return None


def modes(client_ports: Mapping[int, int]) -> dict[int, str | None]:
    return {server_id: server_mode(port) for server_id, port in client_ports.items()}


def leader_of(client_ports: Mapping[int, int]) -> int | None:
    """The server id that leads (a lone standalone server counts as its own leader)."""
    for server_id, mode in modes(client_ports).items():
        if mode in ("leader", "standalone"):
            return server_id
    return None


def quorum_size(ensemble: int) -> int:
    return ensemble // 2 + 1


def wait_serving(client_ports: Mapping[int, int], expected: Iterable[int], timeout: float) -> None:
    """Every server in ``expected`` serves and exactly one leads (bounded)."""
    want = sorted(expected)

    def ready() -> bool:
        seen = modes(client_ports)
        leaders = [s for s, m in seen.items() if m in ("leader", "standalone")]
        return all(seen[s] in SERVING_MODES for s in want) and len(leaders) == 1

    try:
        wait_until(ready, timeout=timeout, interval=0.1, description="the ZooKeeper ensemble to serve")
    except WaitTimeout:
        raise HarnessError(f"ZooKeeper servers {want} did not all serve with one leader within "
                           f"{timeout:.0f} s (modes: {modes(client_ports)})") from None


def wait_not_serving(client_ports: Mapping[int, int], servers: Iterable[int], timeout: float) -> float:
    """Bounded wait until none of ``servers`` serves (quorum lost); returns the seconds taken."""
    began = time.monotonic()
    chosen = list(servers)
    try:
        wait_until(lambda: all(server_mode(client_ports[s]) is None for s in chosen), timeout=timeout,
                   interval=0.1, description="the ZooKeeper servers to stop serving")
    except WaitTimeout:
        raise HarnessError(f"ZooKeeper servers {chosen} still serve {timeout:.0f} s after losing quorum "
                           f"(modes: {modes(client_ports)})") from None
    return time.monotonic() - began

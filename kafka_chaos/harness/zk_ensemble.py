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

import re
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
# A connection's session in the ``cons`` four-letter word (ZooKeeper 3.8
# ``ServerCnxn.dumpConnectionInfo``: "…,sid=0x100011f6a5a0000,…"); 0 until the handshake is done.
_SESSION_ID = re.compile(r"sid=0x([0-9a-fA-F]+)")


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


def parse_session_ids(cons: str) -> set[int]:
    """The sessions the ``cons`` answer lists a connection for (pure; none for 0x0)."""
    return {sid for sid in (int(m.group(1), 16) for m in _SESSION_ID.finditer(cons)) if sid}


def connected_sessions(client_ports: Mapping[int, int], servers: Iterable[int], timeout: float = 1.0) -> set[int]:
    """The sessions with a connection open on any of ``servers`` (``cons``); a server that does
    not answer (killed, paused, out of the quorum) adds none."""
    found: set[int] = set()
    for server in servers:
        try:
            found |= parse_session_ids(zookeeper_four_letter(HOST, client_ports[server], "cons", timeout=timeout))
        except OSError:
            continue
    return found


def broker_sessions(zookeeper_connect: str, broker_ids: Iterable[int]) -> dict[int, int]:
    """Each registered broker's ZooKeeper session (the ephemeral owner of ``/brokers/ids/N``);
    a broker without a registration is left out."""
    from kafka_chaos.harness.zkclient import short_session
    from kafka_chaos.harness.zkpaths import broker_path

    sessions: dict[int, int] = {}
    with short_session(zookeeper_connect, command_s=5.0) as client:
        for broker in broker_ids:
            stat = client.retry(client.exists, broker_path(broker))
            if stat is not None and stat.ephemeralOwner:
                sessions[broker] = int(stat.ephemeralOwner)
    return sessions

"""Small things every launcher needs about its nodes, kept apart so the launchers do not
import each other: free ports to bind, and ZooKeeper's four-letter words."""

from __future__ import annotations

import random
import socket
from collections.abc import Collection

EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
_LOWEST_PORT = 10000


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out as an outgoing connection's local port."""
    try:
        with open(EPHEMERAL_RANGE_FILE, encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_ports(count: int, host: str = "127.0.0.1", *, taken: Collection[int] = ()) -> list[int]:
    """Ports free right now, distinct, none of ``taken`` (ports picked earlier for nodes that have
    not bound them yet: a ZooKeeper server picked first and started first took a broker's port,
    seen in CI), and below the kernel's ephemeral range: a port picked in that range (``bind(0)``)
    may become some client's local port before the node binds it (seen: a broker of a 6-broker
    cluster refused with "Address already in use"). Each candidate is bound to prove it free; all
    are held open together. ``bind(0)`` only when the range leaves no room below it."""
    taken = frozenset(taken)
    low = _ephemeral_low()
    rng = random.SystemRandom()
    candidates = rng.sample(range(_LOWEST_PORT, low), min(low - _LOWEST_PORT, 50 * count)) if low > _LOWEST_PORT else []
    candidates = [p for p in candidates if p not in taken]
    sockets: list[socket.socket] = []
    try:
        for port in candidates:
            if len(sockets) == count:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            sockets.append(s)
        while len(sockets) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            if s.getsockname()[1] in taken:
                s.close()
                continue
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def zookeeper_four_letter(host: str, port: int, command: str, timeout: float = 2.0) -> str:
    """Send a four-letter word (whitelisted in zookeeper.properties) and return the answer."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(command.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")

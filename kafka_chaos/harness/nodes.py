"""Small things every launcher needs about its nodes, kept apart so the launchers do not
import each other: free ports to bind, and ZooKeeper's four-letter words."""

from __future__ import annotations

import socket


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports the kernel calls free right now (all sockets held open together, so distinct)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
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

"""Network partitions between containers, made from the host side.

Each container has its own network namespace; we enter it with ``nsenter -t <pid> -n`` and
add iptables DROP rules there, so the image needs no tools (but the host needs root, iptables
and nsenter — CI runs as root).  Rules live in a chain of our own, ``KAFKA_CHAOS``, hooked into
INPUT and OUTPUT of the isolated container only: dropping both directions in one namespace
makes the cut symmetric, and healing is flushing that chain (Docker's own rules for its
embedded DNS sit in the nat table and are left alone).

DROP, not REJECT: a partitioned peer looks like a dead one — connections hang until a timeout
fires (zookeeper.session.timeout.ms, replica.lag.time.max.ms), as in a real network split.
A container's namespace dies with its process, so a restarted broker comes back healed.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.errors import HarnessError

log = logging.getLogger(__name__)

CHAIN = "KAFKA_CHAOS"


@dataclass(frozen=True)
class Peers:
    """Who a broker can be cut off from: addresses on the cluster network."""

    zookeeper: str
    brokers: tuple[str, ...]  # the other brokers
    clients: str  # the bridge gateway: host clients arrive through docker-proxy from there


def addresses_to_cut(peers: Peers, *, from_zookeeper: bool, from_brokers: bool,
                     from_clients: bool) -> tuple[str, ...]:
    """Pure: which peer addresses an isolation drops, in a stable order."""
    chosen: list[str] = []
    if from_zookeeper:
        chosen.append(peers.zookeeper)
    if from_brokers:
        chosen.extend(peers.brokers)
    if from_clients:
        chosen.append(peers.clients)
    if not chosen:
        raise HarnessError("isolate needs at least one of from_zookeeper, from_brokers, from_clients")
    return tuple(dict.fromkeys(chosen))


def drop_rules(addresses: Iterable[str]) -> list[list[str]]:
    """Pure: the iptables arguments (after ``iptables``) that drop all traffic with each address."""
    rules = []
    for address in addresses:
        rules.append(["-A", CHAIN, "-s", address, "-j", "DROP"])
        rules.append(["-A", CHAIN, "-d", address, "-j", "DROP"])
    return rules


class NamespaceFirewall:
    """iptables in one container's network namespace, driven from the host."""

    def __init__(self, pid: int, name: str) -> None:
        if pid <= 0:
            raise HarnessError(f"{name} is not running: cannot change its network")
        self.pid = pid
        self.name = name

    def drop(self, addresses: Sequence[str]) -> None:
        self._ensure_chain()
        for rule in drop_rules(addresses):
            self._iptables(rule)
        log.info("%s: dropping traffic with %s", self.name, ", ".join(addresses))

    def heal(self) -> None:
        if self._iptables(["-F", CHAIN], check=False) == 0:
            log.info("%s: network healed", self.name)

    def _ensure_chain(self) -> None:
        self._iptables(["-N", CHAIN], check=False)  # exists already after an earlier cut
        for hook in ("INPUT", "OUTPUT"):
            if self._iptables(["-C", hook, "-j", CHAIN], check=False) != 0:
                self._iptables(["-I", hook, "1", "-j", CHAIN])

    def _iptables(self, args: list[str], *, check: bool = True) -> int:
        argv = ["nsenter", "-t", str(self.pid), "-n", "iptables", "-w", *args]
        done = subprocess.run(argv, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise HarnessError(f"{self.name}: iptables {' '.join(args)} failed: "
                               f"{done.stderr.strip() or done.returncode}")
        return done.returncode


def check_partition_tools() -> None:
    """Raise a one-line HarnessError unless this host can cut container networks."""
    import os

    missing = [tool for tool in ("nsenter", "iptables") if shutil.which(tool) is None]
    if missing:
        raise HarnessError(f"network partitions need {' and '.join(missing)} on the host "
                           "(apt-get install iptables util-linux)")
    if os.geteuid() != 0:
        raise HarnessError("network partitions need root on the host (nsenter into container namespaces)")

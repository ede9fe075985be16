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

KRaft clusters (:class:`harness.containers.kraft.ContainerKraftCluster`) cut between node ids the
same way: the cut node's namespace drops each named peer's fixed address (:func:`peer_addresses`).
"""

from __future__ import annotations

import ipaddress
import logging
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.harness.errors import HarnessError

log = logging.getLogger(__name__)

CHAIN = "KAFKA_CHAOS"
SHAPER_CHAIN = "KAFKA_CHAOS_Q"  # mangle POSTROUTING: which packets go to the limited class
DEVICE = "eth0"  # a container on one network has one interface
HTB_HANDLE = "1:"
HTB_DEFAULT_CLASS = "1:1"
HTB_LIMITED_CLASS = "1:2"


@dataclass(frozen=True)
class Peers:
    """Who a broker can be cut off from: addresses on the cluster network."""

    zookeepers: tuple[str, ...]  # every server of the ensemble
    brokers: tuple[str, ...]  # the other brokers
    clients: str  # the bridge gateway: host clients arrive through docker-proxy from there


def addresses_to_cut(peers: Peers, *, from_zookeeper: bool, from_brokers: bool,
                     from_clients: bool) -> tuple[str, ...]:
    """Pure: which peer addresses an isolation drops, in a stable order."""
    chosen: list[str] = []
    if from_zookeeper:
        chosen.extend(peers.zookeepers)
    if from_brokers:
        chosen.extend(peers.brokers)
    if from_clients:
        chosen.append(peers.clients)
    if not chosen:
        raise HarnessError("isolate needs at least one of from_zookeeper, from_brokers, from_clients")
    return tuple(dict.fromkeys(chosen))


def peer_addresses(peers: Sequence[int], addresses: Mapping[int, str]) -> tuple[str, ...]:
    """Pure: the run-network addresses of the KRaft nodes a cut names (node id -> address: each
    node's fixed one, which a restart keeps), in the peers' order, without repeats."""
    missing = [peer for peer in peers if not addresses.get(peer)]
    if missing:
        raise HarnessError(f"node {missing[0]} has no address on the run network (was the cluster started?)")
    return tuple(dict.fromkeys(addresses[peer] for peer in peers))


def drop_rules(addresses: Iterable[str]) -> list[list[str]]:
    """Pure: the iptables arguments (after ``iptables``) that drop all traffic with each address."""
    rules = []
    for address in addresses:
        rules.append(["-A", CHAIN, "-s", address, "-j", "DROP"])
        rules.append(["-A", CHAIN, "-d", address, "-j", "DROP"])
    return rules


def loss_rules(addresses: Iterable[str], loss_pct: float) -> list[list[str]]:
    """Pure: drop each packet with each address with probability ``loss_pct`` %, both ways (so a
    round trip is lost with 1 - (1 - p)^2, as on the local launcher)."""
    if not 0 < loss_pct <= 100:
        raise HarnessError(f"loss must be a percentage in (0, 100], not {loss_pct}")
    probability = f"{loss_pct / 100:.4f}"
    return [["-A", CHAIN, direction, address, "-m", "statistic", "--mode", "random",
             "--probability", probability, "-j", "DROP"]
            for address in addresses for direction in ("-s", "-d")]


def shaper_commands(rate_kbit: int) -> list[list[str]]:
    """Pure: the ``tc`` arguments of an HTB on the container's interface with one class limited
    to ``rate_kbit`` (idempotent: ``replace``)."""
    if rate_kbit < 8:
        raise HarnessError(f"rate must be at least 8 kbit/s, not {rate_kbit}")
    return [["qdisc", "replace", "dev", DEVICE, "root", "handle", HTB_HANDLE, "htb", "default", "1"],
            ["class", "replace", "dev", DEVICE, "parent", HTB_HANDLE, "classid", HTB_DEFAULT_CLASS, "htb",
             "rate", "100gbit"],
            ["class", "replace", "dev", DEVICE, "parent", HTB_HANDLE, "classid", HTB_LIMITED_CLASS, "htb",
             "rate", f"{rate_kbit}kbit", "ceil", f"{rate_kbit}kbit"]]


def classify_rules(addresses: Iterable[str]) -> list[list[str]]:
    """Pure: the mangle rules putting packets *to* each address in the limited class (egress
    only: the peer's own shaper limits the other direction)."""
    return [["-t", "mangle", "-A", SHAPER_CHAIN, "-d", address, "-j", "CLASSIFY", "--set-class",
             HTB_LIMITED_CLASS] for address in addresses]


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

    def lose(self, addresses: Sequence[str], loss_pct: float) -> None:
        self._ensure_chain()
        for rule in loss_rules(addresses, loss_pct):
            self._iptables(rule)
        log.info("%s: losing %s%% of packets with %s", self.name, loss_pct, ", ".join(addresses))

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


class NamespaceShaper:
    """A rate limit on one container's egress towards some addresses (HTB + iptables CLASSIFY in
    its namespace, driven from the host like :class:`NamespaceFirewall`)."""

    def __init__(self, pid: int, name: str) -> None:
        if pid <= 0:
            raise HarnessError(f"{name} is not running: cannot change its network")
        self.pid = pid
        self.name = name

    def limit(self, addresses: Sequence[str], rate_kbit: int) -> None:
        if shutil.which("tc") is None:
            raise HarnessError("bandwidth limits need tc on the host (apt-get install iproute2)")
        for command in shaper_commands(rate_kbit):
            self._run(["tc", *command])
        self._run(["iptables", "-w", "-t", "mangle", "-N", SHAPER_CHAIN], check=False)
        if self._run(["iptables", "-w", "-t", "mangle", "-C", "POSTROUTING", "-j", SHAPER_CHAIN], check=False):
            self._run(["iptables", "-w", "-t", "mangle", "-I", "POSTROUTING", "1", "-j", SHAPER_CHAIN])
        for rule in classify_rules(addresses):
            self._run(["iptables", "-w", *rule])
        log.info("%s: egress to %s limited to %d kbit/s", self.name, ", ".join(addresses), rate_kbit)

    def remove(self) -> None:
        """Idempotent: no shaper, nothing to do."""
        self._run(["iptables", "-w", "-t", "mangle", "-F", SHAPER_CHAIN], check=False)
        self._run(["tc", "qdisc", "del", "dev", DEVICE, "root", "handle", HTB_HANDLE], check=False)

    def _run(self, argv: list[str], *, check: bool = True) -> int:
        done = subprocess.run(["nsenter", "-t", str(self.pid), "-n", *argv], capture_output=True, text=True)
        if check and done.returncode != 0:
            raise HarnessError(f"{self.name}: {' '.join(argv)} failed: {done.stderr.strip() or done.returncode}")
        return done.returncode


ESTABLISHED = "01"  # the ``st`` column of /proc/net/tcp (include/net/tcp_states.h TCP_ESTABLISHED)


def _proc_address(field: str) -> tuple[str, int]:
    """``0100007F:2385`` (tcp) or a 32-digit IPv6 (tcp6) as (address, port); the kernel prints
    each 32-bit word in host (little-endian) order.  An IPv4-mapped IPv6 address (a JVM's
    dual-stack socket) is given as its IPv4 address."""
    address, port = field.split(":")
    raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, len(address), 8))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def established_from(tables: Iterable[str], local_port: int) -> set[str]:
    """Pure: the remote addresses of the ESTABLISHED connections to ``local_port`` in the given
    ``/proc/<pid>/net/tcp`` and ``tcp6`` texts."""
    found = set()
    for text in tables:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == ESTABLISHED and _proc_address(fields[1])[1] == local_port:
                found.add(_proc_address(fields[2])[0])
    return found


def established_connections(pid: int, local_port: int) -> set[str]:
    """Who is connected to ``local_port`` in the network namespace of process ``pid`` (a
    container's, read from the host: root), by remote address."""
    tables = []
    for name in ("tcp", "tcp6"):
        try:
            tables.append(Path(f"/proc/{pid}/net/{name}").read_text())
        except OSError:
            continue
    return established_from(tables, local_port)


def partition_tools_problem() -> str | None:
    """Why this host cannot cut container networks (one line), or None when it can."""
    try:
        check_partition_tools()
    except HarnessError as exc:
        return str(exc)
    return None


def check_partition_tools() -> None:
    """Raise a one-line HarnessError unless this host can cut container networks."""
    import os

    missing = [tool for tool in ("nsenter", "iptables") if shutil.which(tool) is None]
    if missing:
        raise HarnessError(f"network partitions need {' and '.join(missing)} on the host "
                           "(apt-get install iptables util-linux)")
    if os.geteuid() != 0:
        raise HarnessError("network partitions need root on the host (nsenter into container namespaces)")

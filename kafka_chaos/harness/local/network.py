"""Network partitions between local JVMs on loopback, made with iptables (root only).

Why not one loopback address per node: Linux picks the *source* address of a loopback
connection from the route (``local 127.0.0.0/8 dev lo src 127.0.0.1``), and neither Kafka's
``NetworkClient`` nor ZooKeeper's ``ClientCnxnSocketNIO`` binds a local address, so every
connection would still come from 127.0.0.1 whatever address its peer listens on; the two ends
of a link cannot be told apart by address.  Each node already has a port of its own, so the
*listening* end of a link is its port; the *initiating* end is told by the process:

* every node runs with a group id of its own (``node_mark(port)``; the launcher spawns it
  with ``group=`` when this module is usable);
* a mangle-table rule marks each new connection with the group id of the process that opened
  it (``-m owner --gid-owner G -j CONNMARK --set-mark G``: the SYN leaves from the initiator's
  socket), and the mark stays on both directions of that connection;
* a cut of broker X from node P drops, in the filter table's OUTPUT chain on ``lo``, every
  packet of a connection marked X to or from P's port, and of one marked P to or from X's
  port — both directions, DROP not REJECT, as the containers launcher does;
* "clients" are connections no node opened (mark 0): the harness and the workload;
* a node with a second listening port (KIP-291's control-plane listener: the controller's
  connections go there) has it named in every rule beside its first (``Cut.other_listeners``).

A link is matched by the *original* destination port of its connection (``-m conntrack
--ctorigdstport``), both directions with one rule, so a rule still finds links whose connections
a redirect sent through a link proxy (below).

Delayed peer and client links (``ClusterConfig.link_proxies`` as root): nat-table rules, installed
before the nodes start, DNAT every connection of a broker's peer and client links to a port of
the cluster's link proxy (:mod:`harness.link_proxy`), which forwards it to the real port and
delays it only while asked to.  The proxy's own onward connections carry ``SO_MARK``
``PROXY_MARK`` (and so the connection mark ``PROXY_MARK``): no redirect, and no client cut,
matches them.

Rules live in chains named ``KCHAOS-<port>`` (mangle, filter and, with redirects, nat), hooked
into OUTPUT, after a port of the cluster's: its ZooKeeper's (server 1 of an ensemble), or a KRaft
cluster's first controller's (:mod:`harness.local.kraft_links`).  They are removed when the
cluster is destroyed (also on Ctrl-C and at exit: the launcher's own teardown); a new cluster first
removes chains of ours none of whose nodes listens any more (a run killed with SIGKILL) -- every
node's port, not only the one the chain is named after, since a fault may have killed that node
(a ZooKeeper server, a KRaft controller) of a cluster that still runs.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import psutil

from kafka_chaos.common.errors import HarnessError

log = logging.getLogger(__name__)

CHAIN_PREFIX = "KCHAOS-"
MARK_BASE = 0x4B430000  # "KC": a node's group id and connection mark is this plus its port
PROXY_MARK = MARK_BASE  # the link proxy's onward connections (no node has port 0)
_CHAIN_RE = re.compile(r"^(KCHAOS-(\d+)(?:-Q)?)$")
_GID_OWNER_RE = re.compile(r"--gid-owner (\d+)\b")
TABLES = ("mangle", "filter", "nat")
# Bandwidth limits: an HTB qdisc on lo (this kernel has HTB and TBF, not netem or prio), a
# default class as fast as loopback and one limited class; packets of degraded links are put in
# it by CLASSIFY rules in the mangle chain ``KCHAOS-<port>-Q`` (hooked at POSTROUTING).
HTB_HANDLE = "4b43:"
HTB_DEFAULT_CLASS = "4b43:1"
HTB_LIMITED_CLASS = "4b43:2"


def node_mark(port: int) -> int:
    """The group id a node listening on ``port`` runs with, and the mark of its connections."""
    if not 0 < port < 65536:
        raise HarnessError(f"not a port: {port}")
    return MARK_BASE + port


def chain_name(port: int) -> str:
    """The chains of the cluster named after ``port`` (its ZooKeeper's or first controller's)."""
    return f"{CHAIN_PREFIX}{port}"


@dataclass(frozen=True)
class Cut:
    """One node (a broker; on a KRaft cluster a controller or a broker) cut off from some peers
    (their ports) and possibly from clients.

    A node is named by its first listener's port (its mark); ``other_listeners`` holds, as
    (node port, listening port) pairs, every further port a node listens on — a broker's
    KIP-291 control-plane listener, which the controller's connections go to
    (``ControllerChannelManager.addNewBroker``: ``controlPlaneListenerName`` when set) — so the
    links to it are cut with the rest."""

    broker_port: int
    peer_ports: tuple[int, ...]
    clients: bool = False
    other_listeners: tuple[tuple[int, int], ...] = ()

    def listening(self, port: int) -> tuple[int, ...]:
        """Every port the node named by ``port`` listens on, its own first."""
        return (port, *(extra for node, extra in self.other_listeners if node == port))


def mark_rules(chain: str, node_ports: Iterable[int]) -> list[list[str]]:
    """Pure: the mangle rules that mark each new connection with its initiator's group id."""
    return [["-A", chain, "-o", "lo", "-p", "tcp", "-m", "conntrack", "--ctstate", "NEW",
             "-m", "owner", "--gid-owner", str(node_mark(port)),
             "-j", "CONNMARK", "--set-mark", hex(node_mark(port))] for port in node_ports]


def proxy_mark_rule(chain: str) -> list[str]:
    """Pure: the mangle rule that gives the link proxy's onward connections (their packets carry
    ``SO_MARK`` ``PROXY_MARK``) the connection mark ``PROXY_MARK`` — not 0, so they are neither
    redirected again nor taken for clients."""
    return ["-A", chain, "-o", "lo", "-p", "tcp", "-m", "conntrack", "--ctstate", "NEW",
            "-m", "mark", "--mark", hex(PROXY_MARK), "-j", "CONNMARK", "--set-mark", hex(PROXY_MARK)]


@dataclass(frozen=True)
class Redirect:
    """New connections marked ``mark`` (0: opened by no node) to ``port`` go to ``to_port``."""

    mark: int
    port: int
    to_port: int


def redirect_rules(chain: str, redirects: Iterable[Redirect]) -> list[list[str]]:
    """Pure: the nat rules that send the named links to their link-proxy ports (DNAT applies to
    a connection's first packet only, so they are installed before the nodes start)."""
    return [["-A", chain, "-o", "lo", "-p", "tcp", "-m", "connmark", "--mark", hex(r.mark),
             "--dport", str(r.port), "-j", "DNAT", "--to-destination", f"127.0.0.1:{r.to_port}"]
            for r in redirects]


def link_matches(cut: Cut) -> list[list[str]]:
    """Pure: the iptables matches that select both directions of every link ``cut`` names."""
    if not cut.peer_ports and not cut.clients:
        raise HarnessError("isolate needs at least one of from_zookeeper, from_brokers, from_clients")
    me = node_mark(cut.broker_port)
    links: list[tuple[int, int]] = []
    for peer in dict.fromkeys(cut.peer_ports):
        links += [(me, port) for port in cut.listening(peer)]  # connections the broker opened to the peer
        links += [(node_mark(peer), port) for port in cut.listening(cut.broker_port)]  # and the peer to it
    if cut.clients:
        links += [(0, port) for port in cut.listening(cut.broker_port)]  # opened by no node: the host's clients
    # The original destination, not --dport/--sport: one rule covers both directions, and it still
    # names the link when a redirect sent the connection through a link proxy.
    return [["-o", "lo", "-p", "tcp", "-m", "connmark", "--mark", hex(mark),
             "-m", "conntrack", "--ctorigdstport", str(port)] for mark, port in links]


def cut_rules(chain: str, cut: Cut) -> list[list[str]]:
    """Pure: the filter rules that drop both directions of every link the cut names."""
    return [["-A", chain, *match, "-j", "DROP"] for match in link_matches(cut)]


def loss_rules(chain: str, cut: Cut, loss_pct: float) -> list[list[str]]:
    """Pure: drop each packet of the named links with probability ``loss_pct`` % (both ways,
    so a request-response round trip is lost with 1 - (1 - p)^2)."""
    if not 0 < loss_pct <= 100:
        raise HarnessError(f"loss must be a percentage in (0, 100], not {loss_pct}")
    probability = f"{loss_pct / 100:.4f}"
    return [["-A", chain, *match, "-m", "statistic", "--mode", "random", "--probability", probability,
             "-j", "DROP"] for match in link_matches(cut)]


def classify_rules(chain: str, cut: Cut) -> list[list[str]]:
    """Pure: put the named links' packets in the limited HTB class."""
    return [["-A", chain, *match, "-j", "CLASSIFY", "--set-class", HTB_LIMITED_CLASS]
            for match in link_matches(cut)]


def htb_commands(rate_kbit: int) -> list[list[str]]:
    """Pure: the ``tc`` arguments that install the HTB on lo with one class of ``rate_kbit``."""
    if rate_kbit < 8:
        raise HarnessError(f"rate must be at least 8 kbit/s, not {rate_kbit}")
    return [["qdisc", "replace", "dev", "lo", "root", "handle", HTB_HANDLE, "htb", "default", "1"],
            ["class", "add", "dev", "lo", "parent", HTB_HANDLE, "classid", HTB_DEFAULT_CLASS, "htb",
             "rate", "100gbit"],
            ["class", "add", "dev", "lo", "parent", HTB_HANDLE, "classid", HTB_LIMITED_CLASS, "htb",
             "rate", f"{rate_kbit}kbit", "ceil", f"{rate_kbit}kbit"]]


def _tc(args: Sequence[str], *, check: bool = True) -> int:
    done = subprocess.run(["tc", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise HarnessError(f"tc {' '.join(args)} failed: {done.stderr.strip() or done.returncode}")
    return done.returncode


def ours_on_lo() -> bool:
    """Is the HTB of this module lo's root qdisc?"""
    listing = subprocess.run(["tc", "qdisc", "show", "dev", "lo"], capture_output=True, text=True).stdout
    return any(line.startswith(f"qdisc htb {HTB_HANDLE} root") for line in listing.splitlines())


def remove_htb() -> None:
    if shutil.which("tc") is not None and ours_on_lo():
        _tc(["qdisc", "del", "dev", "lo", "root", "handle", HTB_HANDLE], check=False)


def _iptables(table: str, args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["iptables", "-w", "-t", table, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise HarnessError(f"iptables -t {table} {' '.join(args)} failed: "
                           f"{done.stderr.strip() or done.returncode}")
    return done


@functools.cache
def partition_problem() -> str | None:
    """Why this machine cannot cut loopback links (one line), or None when it can.  Probes
    once per process that the owner, conntrack and connmark matches load."""
    if os.geteuid() != 0:
        return "network partitions on the local launcher need root (iptables on loopback)"
    if shutil.which("iptables") is None:
        return "network partitions on the local launcher need iptables (apt-get install iptables)"
    chain = f"{CHAIN_PREFIX}probe{os.getpid() % 100000}"
    try:
        _iptables("mangle", ["-N", chain])
        try:
            _iptables("mangle", mark_rules(chain, [1])[0])
            _iptables("filter", ["-N", chain])
            _iptables("filter", cut_rules(chain, Cut(1, (2,)))[0])
        finally:
            for table in TABLES:
                _iptables(table, ["-F", chain], check=False)
                _iptables(table, ["-X", chain], check=False)
    except HarnessError as exc:
        return f"network partitions on the local launcher: iptables lacks owner/connmark matching ({exc})"
    return None


@functools.cache
def redirect_problem() -> str | None:
    """Why this machine cannot send links through a link proxy (one line), or None when it can:
    the cuts' means plus the nat table's DNAT and the mark match.  Probed once per process."""
    problem = partition_problem()
    if problem is not None:
        return problem.replace("network partitions", "delayed peer and client links")
    chain = f"{CHAIN_PREFIX}probe{os.getpid() % 100000}"
    try:
        for table in ("mangle", "nat"):
            _iptables(table, ["-N", chain])
        _iptables("mangle", proxy_mark_rule(chain))
        _iptables("nat", redirect_rules(chain, [Redirect(0, 1, 2)])[0])
    except HarnessError as exc:
        return f"delayed peer and client links on the local launcher: iptables lacks nat DNAT ({exc})"
    finally:
        for table in ("mangle", "nat"):
            _iptables(table, ["-F", chain], check=False)
            _iptables(table, ["-X", chain], check=False)
    return None


class LoopbackFirewall:
    """The chains of one local cluster, named after one of its ports (:func:`chain_name`)."""

    def __init__(self, named_after: int) -> None:
        self.chain = chain_name(named_after)

    def install(self, node_ports: Iterable[int], redirects: Sequence[Redirect] = ()) -> None:
        """Create the chains (empty filter chain), mark each node's new connections and, with
        ``redirects``, send those links through the link proxy.  Must run before the nodes
        start: connections opened earlier stay unmarked and unredirected."""
        self.remove()
        for table in TABLES if redirects else ("mangle", "filter"):
            _iptables(table, ["-N", self.chain])
            _iptables(table, ["-I", "OUTPUT", "1", "-j", self.chain])
        for rule in mark_rules(self.chain, node_ports):
            _iptables("mangle", rule)
        if redirects:
            _iptables("mangle", proxy_mark_rule(self.chain))
            for rule in redirect_rules(self.chain, redirects):
                _iptables("nat", rule)
        log.info("loopback firewall %s installed%s", self.chain,
                 f" ({len(redirects)} links through the link proxy)" if redirects else "")

    def cut(self, cut: Cut) -> None:
        for rule in cut_rules(self.chain, cut):
            _iptables("filter", rule)
        log.info("%s: port %d cut from ports %s%s", self.chain, cut.broker_port,
                 ", ".join(map(str, cut.peer_ports)) or "-", " and clients" if cut.clients else "")

    def degrade(self, cut: Cut, *, loss_pct: float = 0.0, rate_kbit: int | None = None) -> None:
        """Lose ``loss_pct`` % of the links' packets and/or limit them to ``rate_kbit`` (all the
        links degraded at once share that one limit); until :meth:`heal`."""
        if loss_pct <= 0 and rate_kbit is None:
            raise HarnessError("degrade needs a loss percentage or a rate")
        if loss_pct > 0:
            for rule in loss_rules(self.chain, cut, loss_pct):
                _iptables("filter", rule)
        if rate_kbit is not None:
            if shutil.which("tc") is None:
                raise HarnessError("bandwidth limits need tc (apt-get install iproute2)")
            for command in htb_commands(rate_kbit):
                _tc(command)
            shaper = f"{self.chain}-Q"
            _iptables("mangle", ["-N", shaper], check=False)
            if _iptables("mangle", ["-C", "POSTROUTING", "-j", shaper], check=False).returncode != 0:
                _iptables("mangle", ["-I", "POSTROUTING", "1", "-j", shaper])
            for rule in classify_rules(shaper, cut):
                _iptables("mangle", rule)
        log.info("%s: port %d degraded towards %s%s: loss %s%%, rate %s kbit/s", self.chain, cut.broker_port,
                 ", ".join(map(str, cut.peer_ports)) or "-", " and clients" if cut.clients else "",
                 loss_pct, rate_kbit if rate_kbit is not None else "unlimited")

    def heal(self) -> None:
        """Remove every cut, loss and rate limit (the connection marks stay)."""
        if _iptables("filter", ["-F", self.chain], check=False).returncode == 0:
            log.info("%s: network healed", self.chain)
        remove_chain(f"{self.chain}-Q")
        remove_htb()

    def remove(self) -> None:
        """Unhook and delete our chains and lo's shaper; idempotent."""
        remove_chain(self.chain)
        remove_chain(f"{self.chain}-Q")
        remove_htb()


def remove_chain(chain: str) -> None:
    for table in TABLES:
        for hook in ("OUTPUT", "POSTROUTING") if table == "mangle" else ("OUTPUT",):
            while _iptables(table, ["-D", hook, "-j", chain], check=False).returncode == 0:
                pass
        _iptables(table, ["-F", chain], check=False)
        _iptables(table, ["-X", chain], check=False)


def our_chains() -> dict[str, int]:
    """Chains of ours in any table -> the port they are named after."""
    found: dict[str, int] = {}
    for table in TABLES:
        listing = _iptables(table, ["-S"], check=False).stdout
        for line in listing.splitlines():
            match = _CHAIN_RE.match(line.removeprefix("-N ")) if line.startswith("-N ") else None
            if match:
                found[match.group(1)] = int(match.group(2))
    return found


def listening_ports() -> set[int]:
    ports: set[int] = set()
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr:
            ports.add(int(connection.laddr[1]))
    return ports


def marked_ports(mangle_listing: str) -> dict[str, set[int]]:
    """Pure: from ``iptables -t mangle -S``, each chain of ours -> the ports of the nodes whose
    connections it marks (:func:`mark_rules`: the group id is ``node_mark(port)``)."""
    found: dict[str, set[int]] = {}
    for line in mangle_listing.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) < 3 or parts[0] != "-A" or not parts[1].startswith(CHAIN_PREFIX):
            continue
        for gid in _GID_OWNER_RE.findall(parts[2]):
            port = int(gid) - MARK_BASE
            if 0 < port < 65536:
                found.setdefault(parts[1], set()).add(port)
    return found


def stale_chains(named_after: Mapping[str, int], marked: Mapping[str, set[int]], alive: set[int]) -> list[str]:
    """Pure: the chains (``our_chains()``) of clusters none of whose nodes listens: neither the
    port a chain is named after nor any port its marks name (a ``-Q`` chain goes with its
    cluster's). A chain that marks nothing (a nat or filter chain left alone) has its name only."""
    stale = []
    for chain, port in named_after.items():
        ports = {port} | marked.get(chain.removesuffix("-Q"), set())
        if not ports & alive:
            stale.append(chain)
    return stale


def remove_stale_chains() -> list[str]:
    """Remove chains of ours whose cluster no longer listens on any of its ports (a killed run's)."""
    if partition_problem() is not None:
        return []
    alive = listening_ports()
    marked = marked_ports(_iptables("mangle", ["-S"], check=False).stdout)
    stale = stale_chains(our_chains(), marked, alive)
    for chain in stale:
        log.warning("removing stale iptables chain %s (none of its cluster's nodes listens)", chain)
        remove_chain(chain)
    if not our_chains():
        remove_htb()  # a shaper no live cluster of ours owns (every chain left is a live one's)
    return stale

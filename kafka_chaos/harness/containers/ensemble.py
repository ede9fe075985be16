"""The ZooKeeper ensemble and link controls of the containers launcher
(:class:`harness.cluster.ZooKeeperEnsembleControl`, :class:`harness.cluster.ZooKeeperLinkPartitioner`,
:class:`harness.cluster.NetworkDegrader`), kept apart from
:class:`harness.containers.cluster.ContainerCluster`, which mixes them in.

Each ZooKeeper server is a container of its own (``zookeeper-N``, ``myid`` N, on a fixed address
of the run's network); killing or pausing one is ``docker kill`` / ``docker pause`` of it, a start
reuses its container (same data, same address, same published client port).  Who leads is read
with ``srvr`` through the published ports (:mod:`harness.zk_ensemble`), as on the local launcher.

Degraded links are made inside the network namespaces: iptables ``statistic`` drops for loss in
the broker's namespace (both directions), and for a rate an HTB on the egress of the broker *and*
of each peer towards it (this kernel has no ingress policing action), so both directions are
limited, as on the local launcher's loopback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness import zk_ensemble
from kafka_chaos.harness.containers.network import NamespaceFirewall, NamespaceShaper, check_partition_tools
from kafka_chaos.harness.containers.nodes import container_pid, container_state, kill_container, zookeeper_alias

if TYPE_CHECKING:
    from docker.models.containers import Container

log = logging.getLogger(__name__)


class ContainerEnsembleControls:
    """ZooKeeper-server faults on containers; needs the attributes below from its host class."""

    start_timeout: float
    _zookeepers: dict[int, Container]
    _zk_host_ports: dict[int, int]
    _brokers: dict[int, Container]
    _cut: set[int]  # brokers whose namespace has rules of ours
    _shaped: set[str]  # peers' containers (by name) with a rate limit towards a degraded broker

    def _broker(self, broker_id: int) -> Container:
        raise NotImplementedError

    def _address(self, container: Container) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------------ ZooKeeperEnsembleControl

    def zookeeper_servers(self) -> list[int]:
        return sorted(self._zookeepers)

    def zookeeper_client_ports(self) -> dict[int, int]:
        """Server id -> its client port published on the host's loopback."""
        return dict(sorted(self._zk_host_ports.items()))

    def zookeeper_leader(self) -> int | None:
        """The server that leads now (``srvr``), None while no quorum serves."""
        return zk_ensemble.leader_of(self.zookeeper_client_ports())

    def zookeeper_server_running(self, server_id: int) -> bool:
        return container_state(self._zk_server(server_id)) in ("running", "paused")

    def kill_zookeeper_server(self, server_id: int) -> None:
        kill_container(self._zk_server(server_id))

    def pause_zookeeper_server(self, server_id: int) -> None:
        container = self._zk_server(server_id)
        log.info("docker pause %s", container.name)
        container.pause()

    def resume_zookeeper_server(self, server_id: int) -> None:
        """``docker unpause``; a HarnessError when the server is not paused (as on the local
        launcher, where SIGCONT needs a stopped process)."""
        container = self._zk_server(server_id)
        if container_state(container) != "paused":
            raise HarnessError(f"{container.name} is not paused")
        log.info("docker unpause %s", container.name)
        container.unpause()

    def start_zookeeper_server(self, server_id: int, *, wait_serving: bool = True) -> None:
        """``docker start`` a killed server on its data.  ``wait_serving``: return once it serves
        (it can only when a quorum forms with it)."""
        container = self._zk_server(server_id)
        if container_state(container) in ("running", "paused"):
            raise HarnessError(f"{zookeeper_alias(server_id, len(self._zookeepers))} is already running")
        log.info("docker start %s", container.name)
        container.start()
        if wait_serving:
            zk_ensemble.wait_serving(self.zookeeper_client_ports(), [server_id], self.start_timeout)

    def _zk_server(self, server_id: int) -> Container:
        try:
            return self._zookeepers[server_id]
        except KeyError:
            raise UsageError(f"unknown ZooKeeper server {server_id}: the servers are "
                             f"{', '.join(map(str, sorted(self._zookeepers)))}") from None

    # ------------------------------------------------------------------ ZooKeeperLinkPartitioner

    def cut_from_zookeeper_server(self, broker_id: int, server_id: int) -> None:
        """Drop every packet between the broker and one ZooKeeper server until ``heal_network``;
        the broker's ZooKeeper client then reconnects to another server."""
        check_partition_tools()
        container = self._broker(broker_id)
        NamespaceFirewall(container_pid(container), container.name).drop([self._address(self._zk_server(server_id))])
        self._cut.add(broker_id)

    # ------------------------------------------------------------------ NetworkDegrader

    def degrade(self, broker_id: int, *, to_zookeeper: bool = False, to_brokers: bool = False,
                to_clients: bool = False, loss_pct: float = 0.0, rate_kbit: int | None = None) -> None:
        """Lose ``loss_pct`` % of the named links' packets (both ways) and/or limit them to
        ``rate_kbit`` (each direction), until ``heal_network``."""
        if loss_pct <= 0 and rate_kbit is None:
            raise HarnessError("degrade needs a loss percentage or a rate")
        check_partition_tools()
        container = self._broker(broker_id)
        peers = self._degraded_peers(broker_id, to_zookeeper, to_brokers, to_clients)
        addresses = [address for address, _ in peers]
        self._cut.add(broker_id)  # heal_network flushes its chains from now on
        if loss_pct > 0:
            NamespaceFirewall(container_pid(container), container.name).lose(addresses, loss_pct)
        if rate_kbit is not None:
            NamespaceShaper(container_pid(container), container.name).limit(addresses, rate_kbit)
            mine = self._address(container)
            for _, peer in peers:
                if peer is not None:  # the clients' gateway is the host: not shaped there
                    self._shaped.add(peer.name)
                    NamespaceShaper(container_pid(peer), peer.name).limit([mine], rate_kbit)
        log.info("%s degraded towards %s: loss %s%%, rate %s kbit/s", container.name, ", ".join(addresses),
                 loss_pct, rate_kbit if rate_kbit is not None else "unlimited")

    def _degraded_peers(self, broker_id: int, zookeeper: bool, brokers: bool,
                        clients: bool) -> list[tuple[str, Container | None]]:
        """(address, its container — None for the clients' gateway) of each degraded link."""
        peers: list[Container] = []
        if zookeeper:
            peers += [c for _, c in sorted(self._zookeepers.items())]
        if brokers:
            peers += [c for b, c in sorted(self._brokers.items())
                      if b != broker_id and container_state(c) in ("running", "paused")]
        links: list[tuple[str, Container | None]] = [(self._address(c), c) for c in peers]
        if clients:
            links.append((self._gateway(broker_id), None))
        if not links:
            raise HarnessError("degrade needs at least one of to_zookeeper, to_brokers, to_clients")
        return links

    def _gateway(self, broker_id: int) -> str:
        raise NotImplementedError

    def _heal_shapers(self) -> None:
        """Remove the rate limits put on peers' egress (the broker's own go with its firewall)."""
        containers = {c.name: c for c in [*self._zookeepers.values(), *self._brokers.values()]}
        for name in sorted(self._shaped):
            container = containers.get(name)
            if container is not None and container_state(container) in ("running", "paused"):
                NamespaceShaper(container_pid(container), name).remove()
        self._shaped.clear()

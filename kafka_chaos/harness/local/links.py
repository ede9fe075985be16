"""The network controls of the local launcher (:class:`harness.cluster.NetworkPartitioner`,
:class:`harness.cluster.NetworkDegrader`, :class:`harness.cluster.ZooKeeperLinkPartitioner`),
kept apart from :class:`harness.local.cluster.LocalCluster`, which mixes them in: which ports a broker's
links go to; the rules themselves are :mod:`harness.local.network`.

A cluster started with ``link_proxies`` has its brokers' ZooKeeper links go through
:mod:`harness.link_proxy` (:class:`harness.cluster.LinkDelayer`): those links are delayed and cut
there, with or without root — an iptables rule could not tell them apart any more, since the
proxy, not the broker, opens the connection to ZooKeeper.

A broker with KIP-291's control-plane listener (``ClusterConfig.control_plane_listener``) listens
on a second port, which the controller's LeaderAndIsr / UpdateMetadata / StopReplica connections
go to (``ControllerChannelManager.addNewBroker`` connects to ``controlPlaneListenerName`` when
set): peer traffic, so its links are cut, degraded and delayed with the broker's peer links
(and, should a client use it, with its client links)."""

from __future__ import annotations

from collections.abc import Callable

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.link_proxy import Faults
from kafka_chaos.harness.local.link_proxies import ClusterLinkProxies, broker_links, client_links, link_name, peer_links
from kafka_chaos.harness.local.network import Cut, LoopbackFirewall, partition_problem, redirect_problem
from kafka_chaos.harness.local.nodes import LocalNode


class LocalLinkControls:
    """Cuts and degradations of one broker's loopback links; needs the attributes below."""

    _zookeeper: LocalNode | None
    _link_proxies: ClusterLinkProxies | None
    _zk: Callable[[], LocalNode]
    _zk_nodes: Callable[[], list[LocalNode]]
    _broker: Callable[[int], LocalNode]
    _zk_server: Callable[[int], LocalNode]
    config: ClusterConfig

    @property
    def broker_ids(self) -> list[int]:
        raise NotImplementedError

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        """Drop every packet between the broker and the named peers, both ways, until
        :meth:`heal_network`.  Proxied ZooKeeper links are cut at their proxies (no root needed
        when only those are cut)."""
        if from_zookeeper and self._link_proxies is not None:
            self._broker(broker_id)
            for link in broker_links(broker_id, self._link_proxies.server_ids):
                self._cut_link(link)
            if not (from_brokers or from_clients):
                return
            from_zookeeper = False
        links = self._links(broker_id, from_zookeeper, from_brokers, from_clients)
        self._firewall().cut(links)

    def delay_links(self, broker_id: int, *, delay_ms: float, jitter_ms: float = 0.0, to_zookeeper: bool = True,
                    to_brokers: bool = False, to_clients: bool = False) -> None:
        """Delay both directions of the named links of the broker by ``delay_ms`` ± ``jitter_ms``
        (order kept) until :meth:`heal_network`; needs a cluster started with ``link_proxies``,
        and for peer and client links root with iptables' nat table (the links' connections are
        redirected through the proxy: :mod:`harness.local.link_proxies`)."""
        proxies = self._proxies()
        self._broker(broker_id)
        if not (to_zookeeper or to_brokers or to_clients):
            raise HarnessError("delay_links needs at least one of to_zookeeper, to_brokers, to_clients")
        if (to_brokers or to_clients) and not proxies.peer_links:
            raise HarnessError(redirect_problem() or "this cluster's peer and client links do not go through its "
                               "link proxy (started without root?)")
        links = broker_links(broker_id, proxies.server_ids) if to_zookeeper else []
        planes = proxies.control_ports is not None
        links += peer_links(broker_id, self.broker_ids, planes) if to_brokers else []
        links += client_links(broker_id, planes) if to_clients else []
        faults = Faults(delay_ms, jitter_ms)
        for link in links:
            proxies.control.set_faults(link, upstream=faults, downstream=faults)

    def degrade(self, broker_id: int, *, to_zookeeper: bool = False, to_brokers: bool = False,
                to_clients: bool = False, loss_pct: float = 0.0, rate_kbit: int | None = None) -> None:
        """Lossy / rate-limited links of the broker until :meth:`heal_network`
        (:meth:`harness.local.network.LoopbackFirewall.degrade`)."""
        if to_zookeeper and self._link_proxies is not None:
            raise HarnessError("this cluster's ZooKeeper links go through link proxies, which iptables cannot "
                               "tell apart: degrade them with delay_links instead")
        links = self._links(broker_id, to_zookeeper, to_brokers, to_clients)
        self._firewall().degrade(links, loss_pct=loss_pct, rate_kbit=rate_kbit)

    def cut_from_zookeeper_server(self, broker_id: int, server_id: int) -> None:
        """Drop every packet between the broker and one ZooKeeper server (its client port) until
        ``heal_network``; the broker's client then reconnects to another server."""
        if self._link_proxies is not None:
            self._broker(broker_id)
            self._zk_server(server_id)
            self._cut_link(link_name(broker_id, server_id))
            return
        node = self._cuttable(broker_id)
        self._firewall().cut(Cut(node.port, (self._zk_server(server_id).port,)))

    def heal_network(self) -> None:
        """Remove every cut, delay and degradation (idempotent; nothing to do without the
        firewall or proxies)."""
        if self._link_proxies is not None:
            self._link_proxies.control.heal()
        if self._zookeeper is not None and self._zookeeper.group is not None:
            self._firewall().heal()

    def _cut_link(self, link: str) -> None:
        self._proxies().control.set_faults(link, upstream=Faults(cut=True), downstream=Faults(cut=True))

    def _proxies(self) -> ClusterLinkProxies:
        if self._link_proxies is None:
            raise HarnessError("this cluster was started without link proxies (ClusterConfig.link_proxies, "
                               "cluster up --link-proxies)")
        return self._link_proxies

    def _links(self, broker_id: int, zookeeper: bool, brokers: bool, clients: bool) -> Cut:
        node = self._cuttable(broker_id)
        peers = [n.port for n in self._zk_nodes()] if zookeeper else []
        if brokers:
            peers += [self._broker(b).port for b in self.broker_ids if b != broker_id]
        # Every port each broker listens on (KIP-291's control-plane port too), so the controller's
        # connections to it are matched like the other peer links.
        others = tuple((b.port, extra) for b in map(self._broker, self.broker_ids) for extra in b.listening_ports[1:])
        return Cut(node.port, tuple(peers), clients, others)

    def _cuttable(self, broker_id: int) -> LocalNode:
        node = self._broker(broker_id)
        if node.group is None:
            raise HarnessError(partition_problem() or "this cluster was started without its loopback firewall")
        return node

    def _firewall(self) -> LoopbackFirewall:
        return LoopbackFirewall(self._zk().port)

"""The network controls of the local launcher (:class:`harness.cluster.NetworkPartitioner`,
:class:`harness.cluster.NetworkDegrader`, :class:`harness.cluster.ZooKeeperLinkPartitioner`),
kept apart from :class:`harness.local.LocalCluster`, which mixes them in: which ports a broker's
links go to; the rules themselves are :mod:`harness.local_network`."""

from __future__ import annotations

from collections.abc import Callable

from common.errors import HarnessError
from harness.local_network import Cut, LoopbackFirewall, partition_problem
from harness.local_nodes import LocalNode


class LocalLinkControls:
    """Cuts and degradations of one broker's loopback links; needs the attributes below."""

    _zookeeper: LocalNode | None
    _zk: Callable[[], LocalNode]
    _zk_nodes: Callable[[], list[LocalNode]]
    _broker: Callable[[int], LocalNode]
    _zk_server: Callable[[int], LocalNode]

    @property
    def broker_ids(self) -> list[int]:
        raise NotImplementedError

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        """Drop every packet between the broker and the named peers, both ways, until
        :meth:`heal_network`."""
        self._firewall().cut(self._links(broker_id, from_zookeeper, from_brokers, from_clients))

    def degrade(self, broker_id: int, *, to_zookeeper: bool = False, to_brokers: bool = False,
                to_clients: bool = False, loss_pct: float = 0.0, rate_kbit: int | None = None) -> None:
        """Lossy / rate-limited links of the broker until :meth:`heal_network`
        (:meth:`harness.local_network.LoopbackFirewall.degrade`)."""
        self._firewall().degrade(self._links(broker_id, to_zookeeper, to_brokers, to_clients),
                                 loss_pct=loss_pct, rate_kbit=rate_kbit)

    def cut_from_zookeeper_server(self, broker_id: int, server_id: int) -> None:
        """Drop every packet between the broker and one ZooKeeper server (its client port) until
        ``heal_network``; the broker's client then reconnects to another server."""
        node = self._cuttable(broker_id)
        self._firewall().cut(Cut(node.port, (self._zk_server(server_id).port,)))

    def heal_network(self) -> None:
        """Remove every cut and degradation (idempotent; nothing to do without the firewall)."""
        if self._zookeeper is not None and self._zookeeper.group is not None:
            self._firewall().heal()

    def _links(self, broker_id: int, zookeeper: bool, brokers: bool, clients: bool) -> Cut:
        node = self._cuttable(broker_id)
        peers = [n.port for n in self._zk_nodes()] if zookeeper else []
        if brokers:
            peers += [self._broker(b).port for b in self.broker_ids if b != broker_id]
        return Cut(node.port, tuple(peers), clients)

    def _cuttable(self, broker_id: int) -> LocalNode:
        node = self._broker(broker_id)
        if node.group is None:
            raise HarnessError(partition_problem() or "this cluster was started without its loopback firewall")
        return node

    def _firewall(self) -> LoopbackFirewall:
        return LoopbackFirewall(self._zk().port)

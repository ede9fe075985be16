"""Cuts between the nodes of a local KRaft cluster (:class:`harness.cluster.QuorumLinkPartitioner`),
kept apart from :class:`harness.local.kraft.LocalKraftCluster`, which mixes them in: which ports a
cut between node ids names; the rules themselves are :mod:`harness.local.network`'s, as in
ZooKeeper mode.

As root with iptables, every node -- controllers and brokers alike -- runs with the group id of
its port (``node_mark``) and the cluster's chains, named after its first controller's port, mark
each new connection with its opener's; they are installed before any node starts, since a
connection opened earlier would stay unmarked and no cut could find it. A cut of node N from peer
P drops both directions of every connection N opened to a port of P and P opened to a port of N.
Connections no node opened -- the harness's (the observer reads files; admin and DescribeQuorum
requests) and the clients' -- are never named, so they keep every link.

What flows over these links in Kafka 3.9: voters send each other Vote and BeginQuorumEpoch and
fetch the metadata log from the leader on the CONTROLLER listener (``KafkaRaftClient``); brokers
fetch it from the leader too (as observers) and heartbeat to the active controller
(``BrokerLifecycleManager``); brokers fetch replicas from one another. A restarted node keeps its
group (``LocalNode.group``, kept in ``cluster.json`` too), so a cut keeps applying to it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.cluster import quorum_cut_peers
from kafka_chaos.harness.local.network import Cut, LoopbackFirewall, node_mark, partition_problem, remove_stale_chains
from kafka_chaos.harness.local.nodes import LocalNode

log = logging.getLogger(__name__)


def quorum_cut(node_id: int, peers: Sequence[int], listening: Mapping[int, Sequence[int]]) -> Cut:
    """Pure: the loopback :class:`Cut` of ``node_id`` from ``peers`` (checked ids), given each
    node's listening ports, its first one naming it (its mark); a node's further ports -- none on
    a KRaft node today, a KIP-291 control-plane port in ZooKeeper mode -- are cut with the rest
    (``Cut.other_listeners``)."""
    first = {node: ports[0] for node, ports in listening.items()}
    others = tuple((ports[0], extra) for _, ports in sorted(listening.items()) for extra in ports[1:])
    return Cut(first[node_id], tuple(first[peer] for peer in peers), clients=False, other_listeners=others)


def firewall_port(controllers: Mapping[int, LocalNode]) -> int:
    """The port the cluster's chains are named after: its first controller's (every KRaft
    cluster has one; it may be killed meanwhile: ``remove_stale_chains`` looks at every node)."""
    if not controllers:
        raise HarnessError("the cluster has not been started")
    return controllers[min(controllers)].port


class LocalQuorumLinkControls:
    """Cut and heal the loopback links between KRaft nodes kept in ``_controllers`` and
    ``_brokers`` (node id -> node); the launcher installs the firewall before its nodes start
    and removes it when destroyed."""

    _controllers: dict[int, LocalNode]
    _brokers: dict[int, LocalNode]

    def cut_links(self, node_id: int, peers: Sequence[int]) -> None:
        """Drop every packet between ``node_id`` and each of ``peers`` (controller or broker
        ids), both ways, until :meth:`heal_network`; the harness's and clients' links stay."""
        nodes = self._link_nodes()
        chosen = quorum_cut_peers(node_id, peers, sorted(nodes))
        if not self._firewall_installed():
            raise HarnessError(partition_problem() or "this cluster was started without its loopback firewall")
        cut = quorum_cut(node_id, chosen, {n: node.listening_ports for n, node in nodes.items()})
        self._quorum_firewall().cut(cut)
        log.info("node %d cut from nodes %s", node_id, ", ".join(map(str, chosen)))

    def heal_network(self) -> None:
        """Remove every cut (idempotent; nothing to do without the firewall)."""
        if self._firewall_installed():
            self._quorum_firewall().heal()

    def _install_quorum_firewall(self) -> None:
        """As root with iptables: give every node the group id of its port and mark the
        connections each opens, before any of them starts; first removes the chains a killed run
        left behind. Without the means, nothing (the capability is reported missing instead)."""
        if partition_problem() is not None:
            return
        remove_stale_chains()
        nodes = self._link_nodes()
        for node in nodes.values():
            node.group = node_mark(node.port)
        self._quorum_firewall().install([node.port for node in nodes.values()])

    def _remove_quorum_firewall(self) -> None:
        """Unhook and delete the cluster's chains (idempotent)."""
        if self._firewall_installed():
            self._quorum_firewall().remove()

    def _firewall_installed(self) -> bool:
        return any(node.group is not None for node in [*self._controllers.values(), *self._brokers.values()])

    def _quorum_firewall(self) -> LoopbackFirewall:
        return LoopbackFirewall(firewall_port(self._controllers))

    def _link_nodes(self) -> dict[int, LocalNode]:
        """Every node by id (KRaft's one id space: controllers' ids follow the brokers')."""
        if not self._controllers:
            raise HarnessError("the cluster has not been started")
        return {**self._brokers, **self._controllers}

"""The local launcher's network controls name every port a broker listens on: a KIP-291
control-plane listener's links are cut and degraded with the broker's other peer links."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.local.links import LocalLinkControls
from kafka_chaos.harness.local.network import Cut, node_mark
from kafka_chaos.harness.local.nodes import LocalNode

PORTS = {1: 9001, 2: 9002, 3: 9003}
CONTROL_PORTS = {1: 9101, 2: 9102, 3: 9103}
ZOOKEEPER_PORT = 2181


def _node(name: str, port: int, control_plane_port: int | None = None) -> LocalNode:
    node = LocalNode(name=name, directory=Path("/nonexistent"), port=port, config_file=Path("/nonexistent/x"),
                     command=[], control_plane_port=control_plane_port)
    node.group = node_mark(port)
    return node


class _Controls(LocalLinkControls):
    """The controls over nodes that only exist as data; ``cut`` records what the firewall got."""

    def __init__(self, control_plane: bool) -> None:
        self.config = ClusterConfig(brokers=3, control_plane_listener=control_plane)
        self._link_proxies = None
        self._zookeeper = _node("zookeeper", ZOOKEEPER_PORT)
        self._brokers = {b: _node(f"broker-{b}", p, CONTROL_PORTS[b] if control_plane else None)
                         for b, p in PORTS.items()}
        self._broker = self._brokers.__getitem__
        self._zk = lambda: self._zookeeper  # type: ignore[assignment,return-value]
        self._zk_nodes = lambda: [self._zookeeper]  # type: ignore[assignment,list-item]

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._brokers)


def _drops(cut: Cut) -> set[tuple[int, int]]:
    from kafka_chaos.harness.local.network import link_matches

    return {(int(m[m.index("--mark") + 1], 16), int(m[m.index("--ctorigdstport") + 1])) for m in link_matches(cut)}


@pytest.mark.parametrize("control_plane", [False, True])
def test_a_peer_cut_names_every_listener_port_of_both_ends(control_plane: bool) -> None:
    cut = _Controls(control_plane)._links(1, zookeeper=False, brokers=True, clients=False)
    drops = _drops(cut)
    for peer in (2, 3):
        assert (node_mark(PORTS[1]), PORTS[peer]) in drops and (node_mark(PORTS[peer]), PORTS[1]) in drops
        # the controller's connections: broker 1 (as controller) to the peer's control-plane port,
        # and the peer (as controller) to broker 1's
        assert ((node_mark(PORTS[1]), CONTROL_PORTS[peer]) in drops) is control_plane
        assert ((node_mark(PORTS[peer]), CONTROL_PORTS[1]) in drops) is control_plane
    assert len(drops) == (8 if control_plane else 4)
    assert not any(mark == 0 for mark, _ in drops)


def test_a_client_cut_and_a_zookeeper_cut_cover_the_control_plane_port_only_where_it_listens() -> None:
    controls = _Controls(True)
    assert _drops(controls._links(2, zookeeper=False, brokers=False, clients=True)) == {
        (0, PORTS[2]), (0, CONTROL_PORTS[2])}
    # ZooKeeper opens no connection to a broker: (its mark, broker port) never matches, but is harmless
    assert _drops(controls._links(2, zookeeper=True, brokers=False, clients=False)) == {
        (node_mark(PORTS[2]), ZOOKEEPER_PORT), (node_mark(ZOOKEEPER_PORT), PORTS[2]),
        (node_mark(ZOOKEEPER_PORT), CONTROL_PORTS[2])}

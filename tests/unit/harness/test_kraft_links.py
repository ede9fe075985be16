"""Cuts between the nodes of a KRaft cluster (QuorumLinkPartitioner) as plain data: which node ids
a cut accepts, which loopback ports and container addresses it names, which rules the firewall
gets, that every node runs with its group and keeps it across a restart and cluster.json, and which
chains count as stale (no iptables, Docker or JVM is run)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import quorum_cut_peers
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.local.kraft_links import LocalQuorumLinkControls, firewall_port, quorum_cut
from kafka_chaos.harness.local.network import (
    MARK_BASE,
    Cut,
    LoopbackFirewall,
    link_matches,
    marked_ports,
    node_mark,
    stale_chains,
)
from kafka_chaos.harness.local.nodes import LocalNode

# 3 brokers and 3 controllers, numbered as ClusterConfig(brokers=3, mode="kraft", controllers=3) numbers them
C1, C2, C3 = 3000, 3001, 3002
BROKER_PORTS = {1: 9001, 2: 9002, 3: 9003}
CONTROLLER_PORTS = {C1: 9104, C2: 9105, C3: 9106}
NODES = [1, 2, 3, C1, C2, C3]


def _node(name: str, port: int, *, group: bool = True) -> LocalNode:
    node = LocalNode(name=name, directory=Path("/nonexistent") / name, port=port,
                     config_file=Path("/nonexistent") / name / "server.properties", command=[])
    node.group = node_mark(port) if group else None
    return node


def _drops(cut: Cut) -> set[tuple[int, int]]:
    """(connection mark, original destination port) of each match: both directions of a link."""
    return {(int(m[m.index("--mark") + 1], 16), int(m[m.index("--ctorigdstport") + 1])) for m in link_matches(cut)}


# ---------------------------------------------------------------- which node ids a cut takes

@pytest.mark.parametrize(("node", "peers", "expected"), [
    (C1, [C2, C3], (C2, C3)),
    (C1, [C3, C2, C3], (C3, C2)),  # the given order, without repeats
    (1, [C1], (C1,)),  # a broker from a controller
    (2, [1, 3], (1, 3)),  # a broker from brokers
])
def test_a_cut_takes_known_peers_in_their_order(node: int, peers: list[int], expected: tuple[int, ...]) -> None:
    assert quorum_cut_peers(node, peers, NODES) == expected


@pytest.mark.parametrize(("node", "peers", "message"), [
    (9, [C1], "cut_links: unknown node id 9: the nodes are 1, 2, 3, 3000, 3001, 3002"),
    (C1, [C2, 4], "cut_links: unknown node id 4: the nodes are 1, 2, 3, 3000, 3001, 3002"),
    (C1, [C1, C2], "cut_links: node 3000 cannot be cut from itself"),
    (C1, [], "cut_links: name at least one node to cut 3000 from (the nodes are 1, 2, 3, 3000, 3001, 3002)"),
])
def test_bad_peers_are_one_usage_error_line(node: int, peers: list[int], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        quorum_cut_peers(node, peers, NODES)
    assert str(raised.value) == message and "\n" not in message


# ---------------------------------------------------------------- which loopback ports a cut names

LISTENING = {**{n: (p,) for n, p in BROKER_PORTS.items()}, **{n: (p,) for n, p in CONTROLLER_PORTS.items()}}


@pytest.mark.parametrize(("node", "peers", "cut"), [
    (C1, (C2, C3), Cut(9104, (9105, 9106))),
    (1, (C1, C2, C3), Cut(9001, (9104, 9105, 9106))),
    (2, (1,), Cut(9002, (9001,))),
])
def test_a_cut_names_each_nodes_port_and_no_client(node: int, peers: tuple[int, ...], cut: Cut) -> None:
    assert quorum_cut(node, peers, LISTENING) == cut
    assert not quorum_cut(node, peers, LISTENING).clients


def test_a_leader_cut_from_the_other_voters_drops_both_directions_of_their_links_only() -> None:
    drops = _drops(quorum_cut(C1, (C2, C3), LISTENING))
    # the leader's connections to the other voters, and theirs to it (fetches, votes); never a broker's link nor a client's (mark 0)
    assert drops == {(node_mark(9104), 9105), (node_mark(9105), 9104),
                     (node_mark(9104), 9106), (node_mark(9106), 9104)}


def test_a_second_listening_port_is_cut_with_its_node() -> None:
    listening = {**LISTENING, C2: (9105, 9205)}
    cut = quorum_cut(C1, (C2,), listening)
    assert cut.other_listeners == ((9105, 9205),)
    assert _drops(cut) == {(node_mark(9104), 9105), (node_mark(9104), 9205), (node_mark(9105), 9104)}


def test_the_chains_are_named_after_the_first_controllers_port() -> None:
    controllers = {C3: _node("controller-3002", 9106), C1: _node("controller-3000", 9104),
                   C2: _node("controller-3001", 9105)}
    assert firewall_port(controllers) == 9104
    assert LoopbackFirewall(firewall_port(controllers)).chain == "KCHAOS-9104"
    with pytest.raises(HarnessError, match="not been started"):
        firewall_port({})


# ---------------------------------------------------------------- the local controls over data nodes

class _Controls(LocalQuorumLinkControls):
    def __init__(self, *, groups: bool) -> None:
        self._brokers = {b: _node(f"broker-{b}", p, group=groups) for b, p in BROKER_PORTS.items()}
        self._controllers = {c: _node(f"controller-{c}", p, group=groups) for c, p in CONTROLLER_PORTS.items()}


@pytest.fixture
def firewall_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """What the loopback firewall was asked: (method, chain, argument)."""
    calls: list[tuple[str, str, Any]] = []
    monkeypatch.setattr(LoopbackFirewall, "cut", lambda self, cut: calls.append(("cut", self.chain, cut)))
    monkeypatch.setattr(LoopbackFirewall, "heal", lambda self: calls.append(("heal", self.chain, None)))
    monkeypatch.setattr(LoopbackFirewall, "remove", lambda self: calls.append(("remove", self.chain, None)))
    monkeypatch.setattr(LoopbackFirewall, "install",
                        lambda self, ports, redirects=(): calls.append(("install", self.chain, sorted(ports))))
    return calls


def test_cut_links_hands_the_firewall_the_cut_of_the_named_nodes(firewall_calls: list[tuple[str, str, Any]]) -> None:
    controls = _Controls(groups=True)
    controls.cut_links(C1, [C2, C3])
    controls.heal_network()
    controls._remove_quorum_firewall()
    assert firewall_calls == [("cut", "KCHAOS-9104", Cut(9104, (9105, 9106))), ("heal", "KCHAOS-9104", None),
                              ("remove", "KCHAOS-9104", None)]


def test_without_the_firewall_a_cut_says_why_and_healing_does_nothing(
        firewall_calls: list[tuple[str, str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.kraft_links as kraft_links

    monkeypatch.setattr(kraft_links, "partition_problem", lambda: "network partitions on the local launcher need root")
    controls = _Controls(groups=False)
    with pytest.raises(HarnessError, match="^network partitions on the local launcher need root$"):
        controls.cut_links(C1, [C2])
    controls.heal_network()
    controls._remove_quorum_firewall()
    assert firewall_calls == []
    with pytest.raises(UsageError, match="unknown node id 8"):  # bad input is told first
        controls.cut_links(8, [C2])


def test_the_firewall_marks_every_node_controllers_and_brokers(
        firewall_calls: list[tuple[str, str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.kraft_links as kraft_links

    monkeypatch.setattr(kraft_links, "partition_problem", lambda: None)
    monkeypatch.setattr(kraft_links, "remove_stale_chains", lambda: [])
    controls = _Controls(groups=False)
    controls._install_quorum_firewall()
    assert firewall_calls == [("install", "KCHAOS-9104", [9001, 9002, 9003, 9104, 9105, 9106])]
    assert {n: node.group for n, node in controls._link_nodes().items()} == {
        n: MARK_BASE + p for n, p in {**BROKER_PORTS, **CONTROLLER_PORTS}.items()}


def test_without_the_means_nothing_is_installed_and_no_node_gets_a_group(
        firewall_calls: list[tuple[str, str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.kraft_links as kraft_links

    monkeypatch.setattr(kraft_links, "partition_problem", lambda: "needs root")
    controls = _Controls(groups=False)
    controls._install_quorum_firewall()
    assert firewall_calls == [] and all(n.group is None for n in controls._link_nodes().values())


# ---------------------------------------------------------------- the launcher keeps the groups

def _kraft_cluster(tmp_path: Path) -> Any:
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    cluster = LocalKraftCluster(ClusterConfig(brokers=3, mode="kraft", controllers=3),
                                KafkaDistribution("3.9.2", tmp_path / "libs", "test"), tmp_path / "run")
    cluster._run_dir = tmp_path / "run"
    cluster._run_dir.mkdir()
    cluster._brokers = {b: _node(f"broker-{b}", p) for b, p in BROKER_PORTS.items()}
    cluster._controllers = {c: _node(f"controller-{c}", p) for c, p in CONTROLLER_PORTS.items()}
    return cluster


def test_a_node_started_again_runs_with_its_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.kraft as kraft

    spawned: dict[str, int | None] = {}
    monkeypatch.setattr(kraft.processes, "spawn",
                        lambda name, argv, **kwargs: spawned.__setitem__(name, kwargs["group"]))
    cluster = _kraft_cluster(tmp_path)
    cluster._spawn(cluster._controllers[C2])  # what start_controller and start_broker spawn with
    cluster._spawn(cluster._brokers[2])
    assert spawned == {"controller-3001": node_mark(9105), "broker-2": node_mark(9002)}


def test_cluster_json_keeps_every_nodes_group(tmp_path: Path) -> None:
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    cluster = _kraft_cluster(tmp_path)
    cluster._brokers[3].group = None  # one written without: read back without
    cluster.write_state()
    attached = LocalKraftCluster.attach(cluster.run_dir)
    assert {c: n.group for c, n in attached._controllers.items()} == {c: node_mark(p) for c, p in CONTROLLER_PORTS.items()}
    assert {b: n.group for b, n in attached._brokers.items()} == {1: node_mark(9001), 2: node_mark(9002), 3: None}
    assert attached._firewall_installed()


def test_the_local_kraft_launcher_reports_quorum_links_missing_without_the_means(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.kraft as kraft
    from kafka_chaos.harness.cluster import Capability, capabilities_of

    monkeypatch.setattr(kraft, "partition_problem", lambda: "needs root")
    assert kraft.LocalKraftCluster.capability_problems() == {Capability.QUORUM_LINK_PARTITION: "needs root"}
    assert Capability.QUORUM_LINK_PARTITION not in capabilities_of(kraft.LocalKraftCluster)
    monkeypatch.setattr(kraft, "partition_problem", lambda: None)
    assert Capability.QUORUM_LINK_PARTITION in capabilities_of(kraft.LocalKraftCluster)


def test_a_migrating_clusters_controller_address_is_its_voter_address(tmp_path: Path) -> None:
    from kafka_chaos.harness.local.migration import LocalMigrationCluster

    cluster = LocalMigrationCluster(ClusterConfig(brokers=3, mode="migration", controllers=3),
                                    KafkaDistribution("3.9.2", tmp_path / "libs", "test"))
    cluster._controllers = {C1: _node("controller-3000", 9104)}
    assert cluster.controller_address(C1) == "127.0.0.1:9104"
    with pytest.raises(UsageError, match="unknown controller id 3001"):
        cluster.controller_address(C2)


# ---------------------------------------------------------------- stale chains

MANGLE = """-P OUTPUT ACCEPT
-N KCHAOS-9104
-N KCHAOS-2181
-A OUTPUT -j KCHAOS-9104
-A KCHAOS-9104 -o lo -p tcp -m conntrack --ctstate NEW -m owner --gid-owner {g9104} -j CONNMARK --set-xmark {x}/0xffffffff
-A KCHAOS-9104 -o lo -p tcp -m conntrack --ctstate NEW -m owner --gid-owner {g9001} -j CONNMARK --set-xmark {x}/0xffffffff
-A KCHAOS-2181 -o lo -p tcp -m conntrack --ctstate NEW -m mark --mark 0x4b430000 -j CONNMARK --set-xmark 0x4b430000/0xffffffff
-A OTHER -m owner --gid-owner 1000 -j ACCEPT
""".format(g9104=MARK_BASE + 9104, g9001=MARK_BASE + 9001, x=hex(MARK_BASE))


def test_the_ports_a_chain_marks_are_read_from_the_mangle_listing() -> None:
    assert marked_ports(MANGLE) == {"KCHAOS-9104": {9104, 9001}}


CHAINS = {"KCHAOS-9104": 9104, "KCHAOS-9104-Q": 9104, "KCHAOS-2181": 2181}


@pytest.mark.parametrize(("alive", "stale"), [
    (set(), ["KCHAOS-9104", "KCHAOS-9104-Q", "KCHAOS-2181"]),
    ({9104, 2181}, []),
    # the first controller was killed, a broker of the same cluster still listens: not stale
    ({9001}, ["KCHAOS-2181"]),
    ({2181}, ["KCHAOS-9104", "KCHAOS-9104-Q"]),
])
def test_a_chain_is_stale_only_when_none_of_its_clusters_nodes_listens(alive: set[int], stale: list[str]) -> None:
    assert stale_chains(CHAINS, marked_ports(MANGLE), alive) == stale


# ---------------------------------------------------------------- containers

@pytest.mark.parametrize(("peers", "addresses"), [
    ([C2, C3], ("10.231.0.3", "10.231.0.4")),
    ([1, C2, 1], ("10.231.0.10", "10.231.0.3")),
])
def test_a_container_cut_names_the_peers_fixed_addresses(peers: list[int], addresses: tuple[str, ...]) -> None:
    from kafka_chaos.harness.containers.network import peer_addresses

    fixed = {C1: "10.231.0.2", C2: "10.231.0.3", C3: "10.231.0.4", 1: "10.231.0.10"}
    assert peer_addresses(peers, fixed) == addresses


def test_a_peer_without_an_address_is_one_error_line() -> None:
    from kafka_chaos.harness.containers.network import peer_addresses

    with pytest.raises(HarnessError, match="^node 3001 has no address on the run network"):
        peer_addresses([C2], {C1: "10.231.0.2"})


def _container_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[tuple[str, str, Any]]]:
    """A ContainerKraftCluster over stand-in containers; the namespace firewall records its calls."""
    import kafka_chaos.harness.containers.kraft as kraft

    calls: list[tuple[str, str, Any]] = []

    class RecordingFirewall:
        def __init__(self, pid: int, name: str) -> None:
            self.name = name

        def drop(self, addresses: tuple[str, ...]) -> None:
            calls.append(("drop", self.name, addresses))

        def heal(self) -> None:
            calls.append(("heal", self.name, None))

    monkeypatch.setattr(kraft, "NamespaceFirewall", RecordingFirewall)
    monkeypatch.setattr(kraft, "check_partition_tools", lambda: None)
    monkeypatch.setattr(kraft, "container_pid", lambda c: 100)
    monkeypatch.setattr(kraft, "container_state", lambda c: c.status)
    cluster = kraft.ContainerKraftCluster(ClusterConfig(brokers=3, mode="kraft", controllers=3),
                                          KafkaDistribution("3.9.2", tmp_path / "libs", "test"))
    cluster._brokers = {b: SimpleNamespace(status="running") for b in (1, 2, 3)}
    cluster._controllers = {c: SimpleNamespace(status="running") for c in (C1, C2, C3)}
    cluster._addresses = {C1: "10.231.0.2", C2: "10.231.0.3", C3: "10.231.0.4",
                          1: "10.231.0.10", 2: "10.231.0.11", 3: "10.231.0.12"}
    cluster._controller_ports = {C1: 40004, C2: 40005, C3: 40006}
    return cluster, calls


def test_a_container_cut_drops_the_peers_in_the_cut_nodes_namespace_and_heal_flushes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, calls = _container_cluster(tmp_path, monkeypatch)
    cluster.cut_links(C1, [C2, C3])
    cluster.cut_links(2, [C1])
    cluster._controllers[C1].status = "exited"  # killed outside: nothing to flush, its namespace is gone
    cluster.heal_network()
    cluster.heal_network()  # idempotent
    assert calls == [("drop", "controller-3000", ("10.231.0.3", "10.231.0.4")),
                     ("drop", "broker-2", ("10.231.0.2",)), ("heal", "broker-2", None)]


def test_a_container_cut_refuses_bad_ids_and_an_unstarted_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.containers.kraft as kraft

    cluster, calls = _container_cluster(tmp_path, monkeypatch)
    with pytest.raises(UsageError, match="cannot be cut from itself"):
        cluster.cut_links(C2, [C2])
    unstarted = kraft.ContainerKraftCluster(ClusterConfig(brokers=3, mode="kraft", controllers=3),
                                            KafkaDistribution("3.9.2", tmp_path / "libs", "test"))
    with pytest.raises(HarnessError, match="not been started"):
        unstarted.cut_links(C1, [C2])
    assert calls == []


def test_a_containers_controller_address_is_its_published_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, _ = _container_cluster(tmp_path, monkeypatch)
    assert [cluster.controller_address(c) for c in (C1, C2, C3)] == ["127.0.0.1:40004", "127.0.0.1:40005",
                                                                      "127.0.0.1:40006"]
    with pytest.raises(UsageError, match="unknown controller id 1"):
        cluster.controller_address(1)

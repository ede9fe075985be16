"""The loopback firewall's rules as plain data (no iptables is run)."""

from __future__ import annotations

import pytest

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.local.network import (
    MARK_BASE,
    PROXY_MARK,
    Cut,
    Redirect,
    chain_name,
    cut_rules,
    mark_rules,
    node_mark,
    proxy_mark_rule,
    redirect_rules,
)


def test_a_node_is_told_by_its_port_and_the_chain_by_zookeepers() -> None:
    assert node_mark(2181) == MARK_BASE + 2181
    assert chain_name(2181) == "KCHAOS-2181"
    with pytest.raises(HarnessError, match="not a port"):
        node_mark(70000)


def test_each_node_marks_the_connections_it_opens() -> None:
    [rule] = mark_rules("KCHAOS-1", [9092])
    assert rule[rule.index("--gid-owner") + 1] == str(MARK_BASE + 9092)
    assert rule[rule.index("--set-mark") + 1] == hex(MARK_BASE + 9092)
    assert "NEW" in rule and rule[-3:] == ["CONNMARK", "--set-mark", hex(MARK_BASE + 9092)]


def _drops(rules: list[list[str]]) -> set[tuple[int, int]]:
    """(connection mark, original destination port) of each drop: both directions of a link."""
    assert all(r[r.index("-m", r.index("--mark")) + 1] == "conntrack" for r in rules)
    return {(int(r[r.index("--mark") + 1], 16), int(r[r.index("--ctorigdstport") + 1])) for r in rules}


def test_a_cut_drops_both_directions_of_links_either_side_opened() -> None:
    me, zk, peer = 9001, 2181, 9002
    drops = _drops(cut_rules("C", Cut(me, (zk, peer))))
    # links the broker opened to each peer, and the peer to the broker; by the original destination,
    # which matches both directions and still names a link whose connection a redirect proxied
    assert drops == {(node_mark(me), zk), (node_mark(zk), me), (node_mark(me), peer), (node_mark(peer), me)}
    assert not any(mark == 0 for mark, _ in drops), "clients are not cut unless asked"
    assert all(r[:4] == ["-A", "C", "-o", "lo"] and r[-1] == "DROP" for r in cut_rules("C", Cut(me, (zk,))))


def test_clients_are_the_connections_no_node_opened() -> None:
    assert _drops(cut_rules("C", Cut(9001, (), clients=True))) == {(0, 9001)}


def test_redirects_send_a_links_new_connections_to_its_proxy_port() -> None:
    [rule] = redirect_rules("C", [Redirect(node_mark(9001), 9002, 40000)])
    assert rule[:2] == ["-A", "C"] and rule[rule.index("--mark") + 1] == hex(node_mark(9001))
    assert rule[rule.index("--dport") + 1] == "9002"
    assert rule[-4:] == ["-j", "DNAT", "--to-destination", "127.0.0.1:40000"]


def test_the_proxys_own_connections_are_marked_apart_from_clients() -> None:
    rule = proxy_mark_rule("C")
    assert PROXY_MARK != 0 and rule[rule.index("--mark") + 1] == hex(PROXY_MARK)
    assert rule[-3:] == ["CONNMARK", "--set-mark", hex(PROXY_MARK)] and "NEW" in rule
    # no node can have the proxy's mark: node marks are MARK_BASE + a port > 0
    with pytest.raises(HarnessError):
        node_mark(0)


def test_every_peer_and_client_link_of_a_cluster_is_redirected_to_its_own_link() -> None:
    from kafka_chaos.harness.local.link_proxies import client_link_name, peer_link_name, peer_links, redirected_links

    ports = {1: 9001, 2: 9002, 3: 9003}
    links = redirected_links(ports)
    assert len(links) == 3 * 2 + 3
    assert links[peer_link_name(1, 2)] == ("127.0.0.1", 9002)  # 1 opens to 2: forwarded to 2's port
    assert links[client_link_name(3)] == ("127.0.0.1", 9003)
    assert sorted(peer_links(2, [1, 2, 3])) == sorted(["broker-2->broker-1", "broker-2->broker-3",
                                                       "broker-1->broker-2", "broker-3->broker-2"])


def test_an_empty_cut_is_refused() -> None:
    with pytest.raises(HarnessError, match="at least one"):
        cut_rules("C", Cut(9001, ()))


def test_cluster_cut_from_choices_map_to_isolate_arguments() -> None:
    from kafka_chaos.cli.cluster import cut_arguments

    assert cut_arguments(None) == {"from_zookeeper": True, "from_brokers": True, "from_clients": True}
    assert cut_arguments(["zookeeper"]) == {"from_zookeeper": True, "from_brokers": False, "from_clients": False}
    assert cut_arguments(["peers", "clients"]) == {"from_zookeeper": False, "from_brokers": True,
                                                   "from_clients": True}


def test_zookeeper_server_targets_of_cluster_verbs() -> None:
    from kafka_chaos.cli.cluster import zookeeper_server_id
    from kafka_chaos.common.errors import UsageError

    assert zookeeper_server_id("zookeeper-2", [1, 2, 3], leader=3) == 2
    assert zookeeper_server_id("zookeeper-leader", [1, 2, 3], leader=3) == 3
    with pytest.raises(UsageError, match="unknown ZooKeeper server 'zookeeper-7'"):
        zookeeper_server_id("zookeeper-7", [1, 2, 3], leader=3)
    with pytest.raises(HarnessError, match="no quorum"):
        zookeeper_server_id("zookeeper-leader", [1, 2, 3], leader=None)


def test_a_clusters_redirects_name_each_links_opener_listener_and_proxy_port() -> None:
    from kafka_chaos.harness.local.link_proxies import ClusterLinkProxies, client_link_name, peer_link_name

    class Ports:  # the LinkControl members redirects() uses: each link's proxy port
        def port(self, link: str) -> int:
            return {peer_link_name(1, 2): 41000, peer_link_name(2, 1): 41001, client_link_name(1): 41002,
                    client_link_name(2): 41003}[link]

    proxies = ClusterLinkProxies(Ports(), [1], broker_ports={1: 9001, 2: 9002})  # type: ignore[arg-type]
    assert proxies.peer_links and not ClusterLinkProxies(Ports(), [1]).peer_links  # type: ignore[arg-type]
    assert set(proxies.redirects()) == {Redirect(node_mark(9001), 9002, 41000), Redirect(node_mark(9002), 9001, 41001),
                                        Redirect(0, 9001, 41002), Redirect(0, 9002, 41003)}
    assert proxies.state()["broker_ports"] == {"1": 9001, "2": 9002}  # cluster.json: attach restores them


def test_a_cut_covers_the_other_ports_each_end_listens_on() -> None:
    """KIP-291: a broker's control-plane port (9102 for the broker on 9002) is cut like its first."""
    drops = _drops(cut_rules("C", Cut(9001, (9002,), clients=True, other_listeners=((9002, 9102), (9001, 9101)))))
    assert drops == {(node_mark(9001), 9002), (node_mark(9001), 9102), (node_mark(9002), 9001),
                     (node_mark(9002), 9101), (0, 9001), (0, 9101)}


def test_control_plane_ports_get_peer_and_client_links_of_their_own() -> None:
    from kafka_chaos.harness.local.link_proxies import client_links, peer_link_name, peer_links, redirected_links

    links = redirected_links({1: 9001, 2: 9002}, {1: 9101, 2: 9102})
    assert len(links) == 2 * (2 + 2)
    assert links[peer_link_name(1, 2, control_plane=True)] == ("127.0.0.1", 9102)  # the controller 1 -> 2
    assert links[peer_link_name(1, 2)] == ("127.0.0.1", 9002)
    assert set(peer_links(1, [1, 2], control_plane=True)) == {
        "broker-1->broker-2", "broker-2->broker-1", "broker-1->broker-2/control-plane",
        "broker-2->broker-1/control-plane"}
    assert client_links(2, control_plane=True) == ["clients->broker-2", "clients->broker-2/control-plane"]
    assert redirected_links({1: 9001, 2: 9002}) == {k: v for k, v in links.items() if "control" not in k}


def test_a_clusters_redirects_send_the_controllers_connections_through_their_links() -> None:
    from kafka_chaos.harness.local.link_proxies import ClusterLinkProxies, redirected_links

    names = sorted(redirected_links({1: 9001, 2: 9002}, {1: 9101, 2: 9102}))

    class Ports:
        def port(self, link: str) -> int:
            return 41000 + names.index(link)

    proxies = ClusterLinkProxies(Ports(), [1], broker_ports={1: 9001, 2: 9002},  # type: ignore[arg-type]
                                 control_ports={1: 9101, 2: 9102})
    redirects = proxies.redirects()
    assert len(redirects) == len(names) == len({r.to_port for r in redirects})
    port = Ports().port
    assert Redirect(node_mark(9001), 9102, port("broker-1->broker-2/control-plane")) in redirects
    assert Redirect(0, 9101, port("clients->broker-1/control-plane")) in redirects
    assert proxies.state()["control_ports"] == {"1": 9101, "2": 9102}

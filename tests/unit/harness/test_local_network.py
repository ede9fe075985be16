"""The loopback firewall's rules as plain data (no iptables is run)."""

from __future__ import annotations

import pytest

from common.errors import HarnessError
from harness.local_network import MARK_BASE, Cut, chain_name, cut_rules, mark_rules, node_mark


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


def _drops(rules: list[list[str]]) -> set[tuple[int, str, int]]:
    return {(int(r[r.index("--mark") + 1], 16), r[-4], int(r[-3])) for r in rules}


def test_a_cut_drops_both_directions_of_links_either_side_opened() -> None:
    me, zk, peer = 9001, 2181, 9002
    drops = _drops(cut_rules("C", Cut(me, (zk, peer))))
    for port in (zk, peer):  # links the broker opened, both ways
        assert {(node_mark(me), "--dport", port), (node_mark(me), "--sport", port)} <= drops
        # and links the peer opened to the broker
        assert {(node_mark(port), "--dport", me), (node_mark(port), "--sport", me)} <= drops
    assert not any(mark == 0 for mark, _, _ in drops), "clients are not cut unless asked"
    assert all(r[:4] == ["-A", "C", "-o", "lo"] and r[-1] == "DROP" for r in cut_rules("C", Cut(me, (zk,))))


def test_clients_are_the_connections_no_node_opened() -> None:
    drops = _drops(cut_rules("C", Cut(9001, (), clients=True)))
    assert drops == {(0, "--dport", 9001), (0, "--sport", 9001)}


def test_an_empty_cut_is_refused() -> None:
    with pytest.raises(HarnessError, match="at least one"):
        cut_rules("C", Cut(9001, ()))


def test_cluster_cut_from_choices_map_to_isolate_arguments() -> None:
    from cli.cluster import cut_arguments

    assert cut_arguments(None) == {"from_zookeeper": True, "from_brokers": True, "from_clients": True}
    assert cut_arguments(["zookeeper"]) == {"from_zookeeper": True, "from_brokers": False, "from_clients": False}
    assert cut_arguments(["peers", "clients"]) == {"from_zookeeper": False, "from_brokers": True,
                                                   "from_clients": True}


def test_zookeeper_server_targets_of_cluster_verbs() -> None:
    from cli.cluster import zookeeper_server_id
    from common.errors import UsageError

    assert zookeeper_server_id("zookeeper-2", [1, 2, 3], leader=3) == 2
    assert zookeeper_server_id("zookeeper-leader", [1, 2, 3], leader=3) == 3
    with pytest.raises(UsageError, match="unknown ZooKeeper server 'zookeeper-7'"):
        zookeeper_server_id("zookeeper-7", [1, 2, 3], leader=3)
    with pytest.raises(HarnessError, match="no quorum"):
        zookeeper_server_id("zookeeper-leader", [1, 2, 3], leader=None)

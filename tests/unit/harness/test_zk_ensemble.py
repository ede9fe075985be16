"""ZooKeeper ensembles as plain data: zoo.cfg lines, srvr parsing, and which servers a fault hits."""

from __future__ import annotations

import pytest

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.zk_ensemble import ZkServer, ensemble_properties, parse_mode, quorum_size
from kafka_chaos.scenarios.faults.zookeeper import choose_servers, majority


def test_a_lone_server_stays_standalone_and_an_ensemble_lists_every_server() -> None:
    assert ensemble_properties([ZkServer(1, 2181, 0, 0)]) == {}
    props = ensemble_properties([ZkServer(1, 2181, 2888, 3888), ZkServer(2, 2182, 2889, 3889),
                                 ZkServer(3, 2183, 2890, 3890)])
    assert props["server.2"] == "127.0.0.1:2889:3889"
    assert {"initLimit", "syncLimit", "server.1", "server.3"} <= set(props)


def test_srvr_mode_is_parsed_and_not_serving_is_none() -> None:
    assert parse_mode("Zookeeper version: 3.8.4\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n") == "follower"
    assert parse_mode("This ZooKeeper instance is not currently serving requests\n") is None


def test_ensemble_sizes_are_odd_and_quorums_are_majorities() -> None:
    assert [quorum_size(n) for n in (1, 3, 5)] == [1, 2, 3]
    with pytest.raises(UsageError, match="zookeepers must be one of 1, 3, 5"):
        ClusterConfig(zookeepers=4)


def test_roles_name_the_leader_a_follower_or_the_largest_minority() -> None:
    assert choose_servers("leader", 2, [1, 2, 3]) == (2,)
    assert choose_servers("follower", 2, [1, 2, 3]) == (1,)
    assert choose_servers("minority", 2, [1, 2, 3]) == (2,)
    assert choose_servers("minority", 4, [1, 2, 3, 4, 5]) == (4, 1)
    assert majority(3, [1, 2, 3]) == (3, 1)
    assert majority(5, [1, 2, 3, 4, 5]) == (5, 1, 2)


def test_roles_need_an_ensemble_with_a_leader() -> None:
    with pytest.raises(HarnessError, match="needs an ensemble of 3 or 5"):
        choose_servers("leader", 1, [1])
    with pytest.raises(HarnessError, match="no quorum"):
        choose_servers("follower", None, [1, 2, 3])


# ZooKeeper 3.8's answer to `cons` (ServerCnxn.dumpConnectionInfo): an established session, and a
# connection whose handshake is not done (the four-letter word's own has no sid at all).
CONS = (" /127.0.0.1:43210[1](queued=0,recved=12,sent=12,sid=0x1000079d0c70001,lop=PING,est=1764300000000,"
        "to=6000,lcxid=0x3,lzxid=0x20,lresp=1764300001000,llat=0,minlat=0,avglat=0,maxlat=1)\n"
        " /127.0.0.1:43211[1](queued=0,recved=1,sent=0,sid=0x0,lop=NA,est=1764300002000,to=6000)\n"
        " /127.0.0.1:43212[0](queued=0,recved=1,sent=0)\n")


def test_cons_lists_the_sessions_with_a_connection() -> None:
    from kafka_chaos.harness.zk_ensemble import parse_session_ids

    assert parse_session_ids(CONS) == {0x1000079d0c70001}
    assert parse_session_ids("This ZooKeeper instance is not currently serving requests\n") == set()


@pytest.mark.parametrize(("connected", "reachable", "safe"), [
    ({1: {11, 12}, 2: {13}}, {}, True),  # every broker's session on some server
    ({1: {11, 12}, 2: set()}, {}, False),  # broker 3's session nowhere yet: it may still expire
    ({1: {11, 12, 13}}, {3: [2, 3]}, False),  # a cut broker seen only on the server it is cut from
    ({1: {11, 12}, 3: {13}}, {3: [2, 3]}, True),  # ... and then on one it can reach
    ({}, {}, False),
])
def test_a_session_is_safe_once_connected_where_its_broker_can_reach(
        connected: dict[int, set[int]], reachable: dict[int, list[int]], safe: bool) -> None:
    from kafka_chaos.scenarios.faults.zookeeper import sessions_safe

    assert sessions_safe({1: 11, 2: 12, 3: 13}, connected, reachable, [1, 2, 3]) is safe

"""The pure parts of the containers launcher: dependency parsing, image tags, partition
targeting, run ownership, listener layout, backend choice."""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.harness.backends import resolve_backend
from kafka_chaos.harness.config import ClusterConfig, broker_properties
from kafka_chaos.harness.containers.cluster import broker_listeners
from kafka_chaos.harness.containers.image import DebPackage, _first_alternatives, jre_image_tag
from kafka_chaos.harness.containers.labels import OWNER_LABEL, RUN_LABEL, current_owner, owner_alive, run_labels
from kafka_chaos.harness.containers.network import (
    CHAIN,
    SHAPER_CHAIN,
    Peers,
    addresses_to_cut,
    classify_rules,
    drop_rules,
    loss_rules,
    shaper_commands,
)
from kafka_chaos.harness.containers.nodes import (
    SUBNET_CANDIDATES,
    container_ensemble_properties,
    free_subnets,
    node_address,
    zookeeper_address,
    zookeeper_alias,
    zookeeper_connect_string,
)
from kafka_chaos.harness.errors import HarnessError, UsageError

APT_CACHE_DEPENDS = """\
openjdk-17-jre-headless
  Depends: ca-certificates-java
  Depends: libc6
 |Depends: libfoo1
  Depends: libfoo1-alt
  Depends: <java-runtime-common>
    java-common
    other-provider
  PreDepends: dpkg
libc6
  Depends: libgcc-s1
"""


def test_dependency_parsing_follows_first_alternatives_and_first_providers() -> None:
    assert _first_alternatives(APT_CACHE_DEPENDS) == {
        "ca-certificates-java", "libc6", "libfoo1", "java-common", "dpkg", "libgcc-s1"}


def test_jre_tag_is_stable_and_follows_package_versions() -> None:
    packages = (DebPackage("libc6", "2.36-9"), DebPackage("openjdk-17-jre-headless", "17.0.1"))
    assert jre_image_tag(packages) == jre_image_tag(tuple(packages))
    assert jre_image_tag(packages).startswith("kafka-chaos-jre:")
    bumped = (packages[0], DebPackage("openjdk-17-jre-headless", "17.0.2"))
    assert jre_image_tag(bumped) != jre_image_tag(packages)


PEERS = Peers(zookeepers=("172.18.0.2",), brokers=("172.18.0.4", "172.18.0.5"), clients="172.18.0.1")


@pytest.mark.parametrize(("flags", "expected"), [
    ({"from_zookeeper": True, "from_brokers": False, "from_clients": False}, ("172.18.0.2",)),
    ({"from_zookeeper": False, "from_brokers": True, "from_clients": False}, ("172.18.0.4", "172.18.0.5")),
    ({"from_zookeeper": True, "from_brokers": True, "from_clients": True},
     ("172.18.0.2", "172.18.0.4", "172.18.0.5", "172.18.0.1")),
])
def test_isolation_targets(flags: dict[str, bool], expected: tuple[str, ...]) -> None:
    assert addresses_to_cut(PEERS, **flags) == expected


def test_isolating_from_nobody_is_refused() -> None:
    with pytest.raises(HarnessError, match="at least one"):
        addresses_to_cut(PEERS, from_zookeeper=False, from_brokers=False, from_clients=False)


def test_drop_rules_cut_both_directions_in_our_chain() -> None:
    assert drop_rules(["10.0.0.9"]) == [["-A", CHAIN, "-s", "10.0.0.9", "-j", "DROP"],
                                        ["-A", CHAIN, "-d", "10.0.0.9", "-j", "DROP"]]


def test_owner_of_this_process_is_alive_and_a_dead_pid_is_not() -> None:
    assert owner_alive(run_labels("r1"))
    host = socket.gethostname()
    assert not owner_alive({OWNER_LABEL: f"{host}:{os.getpid()}:0"})  # pid reused: other start time
    assert not owner_alive({OWNER_LABEL: f"{host}:999999999:123"})
    assert owner_alive({OWNER_LABEL: "another-host:1:1"})  # not ours to judge
    assert owner_alive({RUN_LABEL: "r2"})  # no owner label: only --all removes it
    assert current_owner().startswith(f"{host}:{os.getpid()}:")


def test_container_listeners_inter_broker_on_the_network_clients_on_loopback() -> None:
    props = broker_properties(ClusterConfig(brokers=3), 2, zookeeper_connect="zookeeper:2181",
                              listeners=broker_listeners(2, 40002),
                              bind_listeners={"INTERNAL": "0.0.0.0:9092", "EXTERNAL": "0.0.0.0:9094"},
                              log_dir="/var/lib/kafka/data")
    assert props["advertised.listeners"] == "INTERNAL://broker-2:9092,EXTERNAL://127.0.0.1:40002"
    assert props["listeners"] == "INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:9094"
    assert props["inter.broker.listener.name"] == "INTERNAL"


def test_a_control_plane_listener_is_a_third_listener_on_the_network_only() -> None:
    from kafka_chaos.harness.containers.nodes import bind_listeners

    props = broker_properties(ClusterConfig(brokers=3, control_plane_listener=True), 2,
                              zookeeper_connect="zookeeper:2181", listeners=broker_listeners(2, 40002, True),
                              bind_listeners=bind_listeners(True), log_dir="/var/lib/kafka/data")
    assert props["advertised.listeners"] == ("INTERNAL://broker-2:9092,EXTERNAL://127.0.0.1:40002,"
                                             "CONTROL_PLANE://broker-2:9093")
    assert props["listeners"] == "INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:9094,CONTROL_PLANE://0.0.0.0:9093"
    assert props["control.plane.listener.name"] == "CONTROL_PLANE"
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert "CONTROL_PLANE" not in broker_listeners(2, 40002) and "CONTROL_PLANE" not in bind_listeners()


def test_unknown_backend_is_a_usage_error() -> None:
    assert resolve_backend("local") == "local"
    with pytest.raises(UsageError, match="unknown backend"):
        resolve_backend("kubernetes")


# --------------------------------------------------------------------------- fixed addresses

def test_free_subnets_leave_out_every_overlapping_candidate() -> None:
    taken = [ipaddress.ip_network("10.231.0.0/16")]
    assert free_subnets(taken) == []
    taken = [ipaddress.ip_network("172.17.0.0/16"), ipaddress.ip_network("10.231.7.0/24"),
             ipaddress.ip_network("fd00::/64")]
    free = free_subnets(taken)
    assert ipaddress.ip_network("10.231.7.0/24") not in free
    assert free[0] == ipaddress.ip_network("10.231.0.0/24")
    assert len(free) == len(SUBNET_CANDIDATES) - 1


@given(st.integers(min_value=0, max_value=200))
def test_node_addresses_are_distinct_inside_the_subnet_and_never_the_gateway(count: int) -> None:
    subnet = ipaddress.ip_network("10.231.14.0/24")
    addresses = [node_address(subnet, index) for index in range(count + 1)]
    assert len(set(addresses)) == len(addresses)
    for address in addresses:
        ip = ipaddress.ip_address(address)
        assert ip in subnet and ip not in (subnet.network_address, subnet.network_address + 1,
                                           subnet.broadcast_address)


def test_zookeeper_and_first_broker_addresses() -> None:
    subnet = ipaddress.ip_network("10.231.21.0/24")
    assert node_address(subnet, 0) == "10.231.21.2"
    assert node_address(subnet, 1) == "10.231.21.10"
    with pytest.raises(HarnessError):
        node_address(subnet, 250)


# --------------------------------------------------------------------------- ensembles and degraded links

def test_a_lone_zookeeper_keeps_its_name_and_an_ensemble_lists_every_server() -> None:
    assert zookeeper_alias(1, 1) == "zookeeper" and container_ensemble_properties(1) == {}
    assert zookeeper_connect_string(1) == "zookeeper:2181"
    assert zookeeper_connect_string(3) == "zookeeper-1:2181,zookeeper-2:2181,zookeeper-3:2181"
    props = container_ensemble_properties(3)
    assert props["server.2"] == "zookeeper-2:2888:3888" and set(props) == {
        "initLimit", "syncLimit", "server.1", "server.2", "server.3"}


def test_zookeeper_servers_sit_below_the_first_broker_address() -> None:
    subnet = ipaddress.IPv4Network("10.231.28.0/24")
    servers = [zookeeper_address(subnet, z) for z in range(1, 6)]
    assert servers[0] == node_address(subnet, 0) == "10.231.28.2"
    assert all(ipaddress.ip_address(a) < ipaddress.ip_address(node_address(subnet, 1)) for a in servers)


def test_loss_drops_both_directions_with_the_probability() -> None:
    rules = loss_rules(["10.0.0.2", "10.0.0.3"], 12.5)
    assert rules[0] == ["-A", CHAIN, "-s", "10.0.0.2", "-m", "statistic", "--mode", "random",
                        "--probability", "0.1250", "-j", "DROP"]
    assert [r[2:4] for r in rules] == [["-s", "10.0.0.2"], ["-d", "10.0.0.2"], ["-s", "10.0.0.3"],
                                       ["-d", "10.0.0.3"]]
    with pytest.raises(HarnessError):
        loss_rules(["10.0.0.2"], 0)


def test_a_rate_limit_is_an_htb_class_and_classify_rules_to_each_address() -> None:
    commands = shaper_commands(512)
    assert commands[-1][-4:] == ["rate", "512kbit", "ceil", "512kbit"]
    assert all("replace" in c for c in commands)  # a second degrade on the same broker is no error
    assert classify_rules(["10.0.0.9"]) == [["-t", "mangle", "-A", SHAPER_CHAIN, "-d", "10.0.0.9", "-j",
                                             "CLASSIFY", "--set-class", "1:2"]]
    with pytest.raises(HarnessError):
        shaper_commands(4)


def test_established_connections_are_read_from_proc_net_tcp_of_either_family() -> None:
    from kafka_chaos.harness.containers.network import established_from

    header = "  sl  local_address rem_address   st tx_queue ...\n"
    tcp = header + "   0: 0B00E70A:2385 0A00E70A:A1B2 01 00000000:00000000\n"  # 10.231.0.11:9093 <- .10
    tcp6 = (header
            # a JVM's dual-stack socket: IPv4-mapped; the LISTEN (0A) row and another port do not count
            + "   0: 0000000000000000FFFF00000B00E70A:2385 0000000000000000FFFF00000C00E70A:C000 01 x\n"
            + "   1: 00000000000000000000000000000000:2385 00000000000000000000000000000000:0000 0A x\n"
            + "   2: 0000000000000000FFFF00000B00E70A:2384 0000000000000000FFFF00000D00E70A:C000 01 x\n")
    assert established_from([tcp, tcp6], 9093) == {"10.231.0.10", "10.231.0.12"}
    assert established_from([tcp, tcp6], 9092) == {"10.231.0.13"}


def test_class_data_archives_are_named_per_role_and_only_when_the_image_has_them() -> None:
    from kafka_chaos.harness.containers.cds import cds_image_tag
    from kafka_chaos.harness.containers.nodes import archive_options

    assert archive_options("broker", True) == ["-XX:SharedArchiveFile=/opt/kafka/cds/broker.jsa"]
    assert archive_options("zookeeper", True) == ["-XX:SharedArchiveFile=/opt/kafka/cds/zookeeper.jsa"]
    assert archive_options("broker", False) == []
    assert cds_image_tag("kafka-chaos-kafka:3.9.2-0123abcd") == "kafka-chaos-kafka:3.9.2-0123abcd-cds"
    assert cds_image_tag("localhost:5000/kafka:1-x") == "localhost:5000/kafka:1-x-cds"

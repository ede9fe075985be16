"""Nodes' clocks on the containers launchers (harness.containers.clocks). A broker's clock
is read from outside as the LogAppendTime it stamps on each record it appends (Kafka's
``Time.milliseconds`` on the leader: ``UnifiedLog.append`` with ``message.timestamp.type`` =
LogAppendTime) against this host's clock at the acknowledgement; a KRaft controller's as the
append time of the TopicRecord it writes to its metadata log (the batch's base timestamp,
``KafkaRaftClient``'s accumulator on ``time.milliseconds``), read from the host-mounted log; a
ZooKeeper server's as the ctime of a znode it creates (``PrepRequestProcessor`` stamps the
transaction with ``Time.currentWallTime``).
ZooKeeper mode: a jump is felt, survives a kill and a ``docker start`` (the container's
environment and mount are kept), a drift gains, the heal puts it back; the ZooKeeper server's
clock stays the host's through the broker's faults and then jumps by itself. KRaft: the broker's
and the controller's jumps. Nothing is left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_chaos.harness.local.clocks import FELT_WITHIN_S
from tests.containers.conftest import assert_nothing_left

log = logging.getLogger(__name__)

TOPIC = "clock-probe"
FELT_BOUND_S = 10.0  # a new offset is felt within ~2 s (docs/clocks.md); the wait is bounded by this


def broker_offset_s(bootstrap: str) -> float:
    """The broker's wall clock minus this host's, from one acknowledged record's LogAppendTime."""
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Producer

    stamps: list[tuple[int, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    sent = time.time()
    producer.produce(TOPIC, b"tick", on_delivery=lambda err, msg: stamps.append(msg.timestamp()) if err is None else None)
    assert producer.flush(15) == 0, "the record was not acknowledged in 15 s"
    acked = time.time()
    assert stamps and stamps[0][0] == TIMESTAMP_LOG_APPEND_TIME, stamps
    return stamps[0][1] / 1000 - (sent + acked) / 2


def zookeeper_offset_s(connect: str) -> float:
    """The ZooKeeper server's wall clock minus this host's, from the ctime of a znode it creates."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=15.0)
    try:
        sent = time.time()
        path = client.create("/kafka-chaos-clock-probe-", ephemeral=True, sequence=True)
        acked = time.time()
        _, stat = client.get(path)
        return stat.ctime / 1000 - (sent + acked) / 2
    finally:
        client.stop()
        client.close()


def wait_offset(bootstrap: str, accept: Callable[[float], bool], what: str,
                probe: Callable[[str], float] = broker_offset_s) -> float:
    """Probe until ``accept`` holds for the node's offset (bounded), returning it."""
    deadline = time.monotonic() + FELT_BOUND_S
    began = time.monotonic()
    while True:
        offset = probe(bootstrap)
        if accept(offset):
            log.info("%s: offset %+.3f s, seen %.1f s after the change", what, offset, time.monotonic() - began)
            return offset
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: the node's clock is {offset:+.3f} s off the host's after {FELT_BOUND_S:.0f} s")
        time.sleep(0.2)


# One more cell of the clock matrix: the test command keeps its budget (docs/nightly.md).
@pytest.mark.nightly
def test_a_brokers_and_zookeepers_clocks_jump_drift_survive_a_restart_and_heal(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.cluster import ContainerCluster
    from kafka_chaos.harness.errors import UsageError

    cluster = ContainerCluster(ClusterConfig(brokers=1, fake_clocks=True), kafka_distribution)
    with cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[TOPIC].result(30)
        wait_offset(bootstrap, lambda o: abs(o) < 1.0, "on the host's clock at start")

        cluster.set_clock("broker", 1, offset_s=60)
        wait_offset(bootstrap, lambda o: abs(o - 60) < 1.0, "+60 s")
        cluster.kill_broker(1)
        cluster.start_broker(1)
        assert abs(broker_offset_s(bootstrap) - 60) < 1.0, "a started container keeps its fake clock"

        cluster.set_clock("broker", 1, rate=2.0)  # from the host's clock, gaining a second a second
        gained = wait_offset(bootstrap, lambda o: 3.0 < o < 30.0, "x2 from +0 s")
        assert wait_offset(bootstrap, lambda o: o > gained + 1.0, "x2, later") > gained

        cluster.heal_clocks()
        wait_offset(bootstrap, lambda o: abs(o) < 1.0, "healed")

        connect = cluster.zookeeper_connect
        assert abs(zookeeper_offset_s(connect)) < 1.0, "the broker's faults left ZooKeeper's clock alone"
        cluster.set_clock("zookeeper", 1, offset_s=60)
        wait_offset(connect, lambda o: abs(o - 60) < 1.0, "ZooKeeper +60 s", zookeeper_offset_s)
        assert abs(broker_offset_s(bootstrap)) < 1.0, "ZooKeeper's jump left the broker's clock alone"
        with pytest.raises(UsageError, match="this cluster has no zookeeper 2"):
            cluster.set_clock("zookeeper", 2, offset_s=60)
        cluster.heal_clocks()
        wait_offset(connect, lambda o: abs(o) < 1.0, "ZooKeeper healed", zookeeper_offset_s)
    assert_nothing_left(cluster.run_id)


def topic_created_at(metadata_dir: Path, topic: str) -> float:
    """The append time the controller's metadata log gives ``topic``'s TopicRecord (bounded wait)."""
    from kafka_chaos.harness.kraft.observer import METADATA_PARTITION_DIR
    from kafka_chaos.harness.kraft.records import TopicCreated, iter_records

    deadline = time.monotonic() + FELT_BOUND_S
    while time.monotonic() < deadline:
        for segment in sorted((metadata_dir / METADATA_PARTITION_DIR).glob("*.log")):
            for entry in iter_records(segment.read_bytes()):
                if isinstance(entry.record, TopicCreated) and entry.record.name == topic:
                    return entry.at
        time.sleep(0.2)
    pytest.fail(f"no TopicRecord for {topic} in {metadata_dir} after {FELT_BOUND_S:.0f} s")


# The KRaft cell of the same matrix (docs/nightly.md).
@pytest.mark.nightly
def test_a_kraft_brokers_and_controllers_clocks_jump_and_heal(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

    cluster = ContainerKraftCluster(ClusterConfig(brokers=1, mode="kraft", controllers=1, fake_clocks=True),
                                    kafka_distribution)
    with cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[TOPIC].result(30)
        cluster.set_clock("broker", 1, offset_s=60)
        wait_offset(bootstrap, lambda o: abs(o - 60) < 1.0, "broker +60 s")
        cluster.heal_clocks()
        wait_offset(bootstrap, lambda o: abs(o) < 1.0, "broker healed")

        controller = cluster.controller_ids[0]
        cluster.set_clock("controller", controller, offset_s=60)
        time.sleep(FELT_WITHIN_S)  # no record to probe the controller with before it is felt
        asked = time.time()
        admin.create_topics([NewTopic("after-the-jump", 1, 1)])["after-the-jump"].result(30)
        done = time.time()
        at = topic_created_at(cluster.metadata_log_dirs()[0], "after-the-jump")
        log.info("controller +60 s: TopicRecord appended at %+.3f s of the host's clock", at - (asked + done) / 2)
        assert asked + 59 <= at <= done + 61
        cluster.heal_clocks()
        assert abs(broker_offset_s(bootstrap)) < 1.0, "the controller's jump left the broker's clock alone"
    assert_nothing_left(cluster.run_id)

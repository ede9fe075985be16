"""Brokers' clocks on the containers launcher (harness.containers.clocks): one broker on a fake
clock, read from outside as the LogAppendTime it stamps on each record it appends (Kafka's
``Time.milliseconds`` on the leader: ``UnifiedLog.append`` with ``message.timestamp.type`` =
LogAppendTime), against this host's clock at the acknowledgement. A jump is felt, survives a
kill and a ``docker start`` (the container's environment and mount are kept), a drift gains,
the heal puts it back; the ZooKeeper container never preloads libfaketime. Nothing is left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

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


def wait_offset(bootstrap: str, accept: Callable[[float], bool], what: str) -> float:
    """Probe until ``accept`` holds for the broker's offset (bounded), returning it."""
    deadline = time.monotonic() + FELT_BOUND_S
    began = time.monotonic()
    while True:
        offset = broker_offset_s(bootstrap)
        if accept(offset):
            log.info("%s: offset %+.3f s, seen %.1f s after the change", what, offset, time.monotonic() - began)
            return offset
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: the broker's clock is {offset:+.3f} s off the host's after {FELT_BOUND_S:.0f} s")
        time.sleep(0.2)


# One more cell of the clock matrix: the test command keeps its budget (docs/nightly.md).
@pytest.mark.nightly
def test_a_brokers_clock_jumps_drifts_survives_a_restart_and_heals(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
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

        with pytest.raises(UsageError, match="ZooKeeper servers run on the host's clock"):
            cluster.set_clock("zookeeper", 1, offset_s=60)
        containers = cluster.node_containers()
        environment = {node: c.attrs["Config"]["Env"] or [] for node, c in containers.items()}
        assert any(e.startswith("LD_PRELOAD=") for e in environment["broker-1"])
        assert not any(e.startswith("LD_PRELOAD=") for e in environment["zookeeper"])
    assert_nothing_left(cluster.run_id)

"""The workload against a real ZooKeeper + 3 brokers: read-back, min ISR refusals, leader SIGKILL.

The cluster is shared by the module; each test leaves every broker running for the next one,
except the last (nightly), whose killed leader stays down: the cluster is torn down after it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_chaos.harness import zkpaths
from kafka_chaos.harness.config import AUTO_LEADER_REBALANCE_ENABLE, ZOOKEEPER_SESSION_TIMEOUT_MS, ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.metadata import alter_topic_config, create_topic, delete_topics
from kafka_chaos.harness.replica_logs import batches_in
from kafka_chaos.harness.observer import ZkObserver
from kafka_chaos.scenarios.clients.delivery import Ack, largest_gap, validate_delivery
from kafka_chaos.scenarios.checks.producer_ids import check_producer_ids_unique
from kafka_chaos.scenarios.checks.replica_logs import check_replica_logs
from kafka_chaos.scenarios.clients.workload import Workload, WorkloadError
from kafka_chaos.scenarios.run.log_view import leaders_high_watermarks, replica_logs

log = logging.getLogger(__name__)

SESSION_TIMEOUT_MS = 6000
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}  # preferred leaders 1, 2, 3


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    config = ClusterConfig(brokers=3, cluster_overrides={
        ZOOKEEPER_SESSION_TIMEOUT_MS: str(SESSION_TIMEOUT_MS),
        AUTO_LEADER_REBALANCE_ENABLE: "false",  # leadership must not move back behind our back
    })
    with LocalCluster(config, resolve_distribution()) as c:
        yield c


@pytest.fixture(scope="module")
def zk(cluster: LocalCluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def partition_state(zk: KazooClient, topic: str, partition: int) -> tuple[zkpaths.LeaderIsrState, float]:
    """The state znode and the ZooKeeper server's write time of it (epoch seconds, ms resolution)."""
    data, stat = zk.get(zkpaths.partition_state_path(topic, partition))
    return zkpaths.parse_partition_state(data), stat.mtime / 1000.0


def produce_for(workload: Workload, seconds: float) -> None:
    """Run until every partition acknowledged something, then ``seconds`` more."""
    assert all(workload.wait_for_acks(timeout=30).values()), workload.summary()
    time.sleep(seconds)


def test_consume_all_reads_back_exactly_what_was_acknowledged(cluster: LocalCluster) -> None:
    create_topic(cluster.bootstrap_servers, "wl-readback", ASSIGNMENT)
    workload = Workload(cluster.bootstrap_servers, "wl-readback", [0, 1], rate_per_partition=100)
    with workload:
        produce_for(workload, 2.0)
        with pytest.raises(WorkloadError, match="stop"):
            workload.verify()

    records = workload.consume_all(partitions=[0, 1, 2])  # 2 was never written: nothing, at once
    acks = workload.acks()
    assert acks and workload.failures() == []
    assert sorted(records) == sorted((a.partition, a.offset, a.key) for a in acks)
    for p in (0, 1):
        assert [o for q, o, _ in sorted(records) if q == p] == list(range(len(workload.acks(p))))

    report = workload.verify()
    assert report.ok and report.acked == len(acks) == report.consumed
    # The accounting can fail: an acknowledgement the log does not hold is reported lost.
    phantom = Ack(0, 10**9, "phantom", time.time())
    assert validate_delivery([*acks, phantom], records).lost == ("phantom",)


def test_in_sync_replicas_logs_agree_until_a_followers_batch_changes_and_producer_ids_are_unique(
    cluster: LocalCluster,
) -> None:
    """The replica_logs_agree and producer_ids_unique invariants on what a real cluster holds: the
    in-sync replicas' segment files read up to each leader's high watermark (ListOffsets) agree,
    two workloads' producers hold two ids; then one byte of a follower's committed batch is
    changed on disk and the check names that follower."""
    topics = ["wl-logs", "wl-logs-2"]
    create_topic(cluster.bootstrap_servers, topics[0], ASSIGNMENT)
    create_topic(cluster.bootstrap_servers, topics[1], {0: [1, 2, 3]})
    first = Workload(cluster.bootstrap_servers, topics[0], [0, 1, 2], rate_per_partition=100)
    second = Workload(cluster.bootstrap_servers, topics[1], [0])
    with first, second:
        produce_for(first, 2.0)
        produce_for(second, 0.0)
    with ZkObserver(cluster.zookeeper_connect, topics=topics) as observer:
        after = observer.wait_until(lambda s: all(len(p.isr) == 3 for t in topics for p in s.topic_partitions(t)),
                                    timeout=30, description="every replica in sync")

    logs = replica_logs(cluster, leaders_high_watermarks(cluster), after, topics, held=(), timeout=10)
    results = check_replica_logs(logs)
    assert [(r.topic, r.partition, r.passed) for r in results] == \
        [(topics[0], 0, True), (topics[0], 1, True), (topics[0], 2, True), (topics[1], 0, True)]
    acked = {p: len(first.acks(p)) for p in (0, 1, 2)}
    assert all(logs[f"{topics[0]}-{p}"].high == n for p, n in acked.items()), (logs, acked)  # every ack compared

    given = first.producer_ids() + second.producer_ids()
    assert len({g.client for g in given}) == 2 and check_producer_ids_unique(given).passed is True

    state = after.partitions[(topics[0], 0)]
    follower = next(b for b in state.isr if b != state.leader)
    segment = cluster.replica_log_dirs(follower)[0] / f"{topics[0]}-0" / "00000000000000000000.log"
    batch = next(iter(batches_in(segment.read_bytes())))
    with segment.open("r+b") as f:  # the batch's last byte: a record's, below the high watermark
        f.seek(len(batch.data) - 1)
        f.write(bytes([batch.data[-1] ^ 0xFF]))
    changed = check_replica_logs(replica_logs(cluster, leaders_high_watermarks(cluster), after, topics[:1],
                                              held=(), timeout=1.0))
    assert [r.passed for r in changed] == [False, True, True]
    assert changed[0].detail.startswith(f"broker {follower}'s log differs from broker {state.leader}'s")
    assert "same offsets, different bytes" in changed[0].detail
    delete_topics(cluster.bootstrap_servers, topics)


def test_leader_kill_loses_nothing_and_the_produce_gap_spans_the_failover(
    cluster: LocalCluster, zk: KazooClient
) -> None:
    create_topic(cluster.bootstrap_servers, "wl-failover", ASSIGNMENT)
    before, _ = partition_state(zk, "wl-failover", 0)
    victim = before.leader
    # min.insync.replicas=2 on two replicas, the victim one of them: once the controller drops
    # it from the ISR every acks=all produce is refused with NOT_ENOUGH_REPLICAS.
    survivor = next(b for b in cluster.broker_ids if b != victim)
    create_topic(cluster.bootstrap_servers, "wl-strict", {0: [survivor, victim]},
                 {"min.insync.replicas": "2"})
    workload = Workload(cluster.bootstrap_servers, "wl-failover", [0, 1, 2])
    strict = Workload(cluster.bootstrap_servers, "wl-strict", [0], delivery_timeout_ms=4000,
                      rate_per_partition=20)
    with workload, strict:
        produce_for(workload, 2.0)
        produce_for(strict, 0.0)
        killed_at = time.time()
        cluster.kill_broker(victim)
        recovered = workload.wait_for_acks(timeout=60, after=killed_at)
        assert all(recovered.values()), f"no acks after the kill: {recovered}"
        time.sleep(1.0)
        strict.wait_for_acks(timeout=0)  # re-raises a producer-thread exception, if any

    after, elected_at = partition_state(zk, "wl-failover", 0)
    assert after.leader not in (victim, -1) and after.leader_epoch > before.leader_epoch

    report = workload.verify()
    assert report.ok, report.describe()
    assert report.acked == len(workload.acks()) and workload.failures() == []

    times = workload.ack_times(0)
    gap = largest_gap(times, (killed_at, elected_at))
    assert gap is not None
    gap_s, gap_start, gap_end = gap
    # Causal, not timed: the new leader is written in ZK after the kill, and it acknowledges
    # nothing before that write, so the silence around the fault spans the election.
    assert killed_at < elected_at and gap_start < elected_at <= gap_end
    assert largest_gap(times) == gap  # the failover is the partition's longest silence
    log.info("leader kill of broker %d (session %d ms): produce gap %.2f s, elected %.2f s "
             "after the kill, first ack %.2f s after the election", victim, SESSION_TIMEOUT_MS,
             gap_s, elected_at - killed_at, gap_end - elected_at)

    # Refused messages are failures, never acknowledgements, and nothing acknowledged is lost.
    refused = {name for _, name, _ in strict.failures()}
    assert refused, strict.summary()
    log.info("min.insync.replicas refusals reported as %s", sorted(refused))
    # Under min ISR Kafka 3.9 freezes the high watermark (Partition.maybeIncrementLeaderHW), so
    # wl-strict can only be read back once the victim is in its ISR again.
    cluster.start_broker(victim)
    strict_report = strict.verify()
    assert strict_report.ok, strict_report.describe()
    log.info("min ISR topic read back: %s", strict_report.describe())


@pytest.mark.nightly
def test_unclean_election_loss_is_counted_and_the_workload_survives(cluster: LocalCluster) -> None:
    """Kill the follower, let the ISR shrink to the leader, produce, kill the leader, restart the
    stale follower and enable unclean election: what only the old leader had is gone.

    ``nightly`` (about 16 s): the test command counts the same loss through an unclean election of
    its own in tests/integration/test_client_history.py (the ``delivery`` and
    ``delivery_unclean_loss`` records of the same Workload's report)."""
    leader, follower = cluster.broker_ids[:2]
    create_topic(cluster.bootstrap_servers, "wl-unclean", {0: [leader, follower]})
    workload = Workload(cluster.bootstrap_servers, "wl-unclean", [0])
    with ZkObserver(cluster.zookeeper_connect, topics=["wl-unclean"]) as observer, workload:
        produce_for(workload, 1.0)
        cluster.kill_broker(follower)
        observer.wait_until(lambda s: s.partition("wl-unclean", 0).isr == (leader,),
                            timeout=60, description="ISR shrunk to the leader")
        alone_since = time.time()
        assert workload.wait_for_acks(timeout=30, after=alone_since)[0] is not None
        time.sleep(1.0)  # acknowledged by the leader alone: these are the messages to lose
        cluster.kill_broker(leader)
        cluster.start_broker(follower)
        # Asked of the broker that never stopped: the restarted follower may not have the topic in
        # its metadata yet, and refuses then (UNKNOWN_TOPIC_OR_PARTITION).
        alter_topic_config(cluster.endpoint(cluster.broker_ids[2]).bootstrap, "wl-unclean",
                           {"unclean.leader.election.enable": "true"})
        observer.wait_until(lambda s: s.partition("wl-unclean", 0).leader == follower,
                            timeout=60, description="stale follower elected uncleanly")
        elected_at = time.time()
        recovered = workload.wait_for_acks(timeout=60, after=elected_at)[0]
        assert recovered is not None, "the workload did not survive the unclean election"

    report = workload.verify()
    alone = [a for a in workload.acks(0) if alone_since < a.acked_at < elected_at]
    assert report.lost and set(report.lost) <= {a.key for a in workload.acks(0)}
    assert dict(report.lost_by_partition) == {0: len(report.lost)}
    assert len(report.lost) >= len(alone) > 0 and not report.duplicated
    log.info("unclean election: %s; client errors %s", report.describe(),
             sorted({(e.name, e.fatal) for e in workload.client_errors()}))
    # The killed leader stays down: the module's last test, its cluster torn down next.

"""Topic deletion and partition growth during faults on a real cluster: the oracle's
prediction, computed from what ZooKeeper showed *before* each action, is what ZooKeeper shows
after it.

* deletion with a replica's broker down: ``/admin/delete_topics/<t>`` stays, the topic stays with
  the online replicas removed from the ISR (leader -1, the epochs the oracle counts), until the
  broker starts again and the topic znode goes (``TopicDeletionManager``);
* a partition added (topic znode rewritten) with its only replica down has no state znode until
  that broker starts, then leader = it, epoch 0 (``onNewPartitionCreation``, ``onBrokerStartup``).

Prints the time from the down replica's restart to the topic znode's removal (the figure of
``benchmarks/topic_paths_bench.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_chaos.harness import metadata
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.observer import ZkObserver
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.oracle import AddPartitions, BrokerFailure, BrokerStartup, ClusterState, DeleteTopic, predict
from kafka_chaos.scenarios.faults.topics import write_partitions_znode
from kafka_chaos.scenarios.model.snapshots import cluster_state_of, mismatches

DOWN = 3


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(ClusterConfig(brokers=3), resolve_distribution()) as running:
        yield running


def _state(observer: ZkObserver, topics: list[str], cluster: LocalCluster) -> tuple[ZkSnapshot, ClusterState]:
    snap = observer.snapshot(topics)
    return snap, cluster_state_of(snap, topics, cluster.broker_settings())


def _wait_for(observer: ZkObserver, want: ClusterState, topics: list[str], timeout: float, what: str) -> ZkSnapshot:
    """Bounded wait until ZooKeeper shows ``want`` (leaders, ISRs as sets, replicas, deletions)
    with the predicted epochs, then 2 s of stability."""
    def shows(s: ZkSnapshot) -> bool:
        if set(s.live_brokers) != set(want.live_brokers) or mismatches(s, want, topics):
            return False
        return all(s.partition(tp.topic, tp.partition).leader_epoch == p.leader_epoch
                   for tp, p in want.partitions() if p.has_leader_and_isr)

    observer.wait_until(shows, timeout=timeout, description=what)
    time.sleep(2.0)
    snap = observer.snapshot(topics)
    assert shows(snap), f"{what}: ZooKeeper moved on: {snap.summary()}"
    return snap


def test_deletion_waits_for_the_down_replica_and_new_partitions_for_theirs(cluster: LocalCluster) -> None:
    run = uuid.uuid4().hex[:6]
    doomed, grown = f"doomed-{run}", f"grown-{run}"
    topics = [doomed, grown]
    expiry = 2 * int(cluster.broker_settings().get("zookeeper.session.timeout.ms", "18000")) / 1000 + 15
    with ZkObserver(cluster.zookeeper_connect, topics=topics) as observer:
        metadata.create_topic(cluster.bootstrap_servers, doomed, {0: (1, 2), 1: (2, 3), 2: (3, 1)})
        metadata.create_topic(cluster.bootstrap_servers, grown, {0: (1, 2)})
        observer.wait_until(lambda s: all(s.has_topic(t) for t in topics) and not mismatches(
            s, cluster_state_of(s, topics, {}), topics) and all(
            len(p.isr) == len(p.replicas) for p in s.partitions.values()), timeout=30,
            description="both topics online with full ISRs")

        _, before = _state(observer, topics, cluster)
        cluster.kill_broker(DOWN)
        down = predict(before, [BrokerFailure((DOWN,))]).state
        _wait_for(observer, down, topics, expiry, f"broker {DOWN} gone")

        _, before = _state(observer, topics, cluster)
        # "answered" once the brokers' caches drop the topic, although it waits for broker 3
        assert metadata.request_topic_deletion(cluster.bootstrap_servers, doomed) in ("answered", "timed_out")
        pending = predict(before, [DeleteTopic(doomed)]).state
        assert pending.topics_being_deleted == {doomed}
        snap = _wait_for(observer, pending, topics, 30, "the deletion waiting for the down replica")
        assert doomed in snap.topics_being_deleted and all(p.leader == -1 for p in snap.topic_partitions(doomed))

        _, before = _state(observer, topics, cluster)
        write_partitions_znode(cluster.zookeeper_connect, grown, {1: (DOWN,), 2: (DOWN, 1)})
        added = predict(before, [AddPartitions(grown, {1: (DOWN,), 2: (DOWN, 1)})]).state
        assert not added.partition(grown, 1).has_leader_and_isr and added.partition(grown, 2).leader == 1
        snap = _wait_for(observer, added, topics, 30, "the new partitions")
        assert snap.partition(grown, 1).version == -1  # no state znode while its only replica is down

        _, before = _state(observer, topics, cluster)
        started_at = time.monotonic()
        cluster.start_broker(DOWN)
        after = predict(before, [BrokerStartup((DOWN,))]).state
        assert doomed not in after.topics and after.partition(grown, 1).leader == DOWN
        observer.wait_until(lambda s: not s.has_topic(doomed), timeout=60, description=f"{doomed} deleted")
        deleted_s = time.monotonic() - started_at
        snap = _wait_for(observer, after, topics, 60, f"broker {DOWN} back, {doomed} deleted")
        assert doomed not in snap.topics_being_deleted
        print(f"topic deletion completed {deleted_s:.1f} s after broker {DOWN}'s start was requested")

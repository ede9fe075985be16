"""The observer against a real 3-broker ZooKeeper-mode cluster: ZK truth, watches with
timestamps (typed events), the ZK admin writes, and every broker's metadata cache."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest
from kazoo.client import KazooClient
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from kafka_chaos.harness import metadata, zkpaths
from kafka_chaos.harness.config import ZOOKEEPER_SESSION_TIMEOUT_MS, ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.errors import HarnessError
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.observer import (
    BROKER_GONE,
    BROKER_REGISTERED,
    PARTITION_STATE,
    PREFERRED_ELECTION,
    REASSIGNMENT,
    TOPIC_ASSIGNMENT,
    ConvergenceTimeout,
    ZkObserver,
    ZkSnapshot,
)
from kafka_chaos.harness.zkadmin import ZkAdmin
from kafka_chaos.harness.zkevents import (
    AdminZnodeChanged,
    BrokerGone,
    PartitionStateWritten,
    TopicAssignmentChanged,
    ZkEvent,
    event_from_dict,
    event_to_dict,
)

ASSIGNMENT = {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(ClusterConfig(brokers=3), resolve_distribution()) as running:
        yield running


@pytest.fixture
def observer(cluster: LocalCluster) -> Iterator[ZkObserver]:
    with ZkObserver(cluster.zookeeper_connect) as watching:
        yield watching


@pytest.fixture
def admin(cluster: LocalCluster) -> Iterator[ZkAdmin]:
    with ZkAdmin(cluster.zookeeper_connect) as writing:
        yield writing


def pending(expected: bool) -> Callable[[ZkEvent], bool]:
    return lambda e: isinstance(e, AdminZnodeChanged) and e.pending is expected


def fresh_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def expiry_bound(cluster: LocalCluster) -> float:
    """Seconds within which a killed broker's session is surely gone (doc: failover-timing)."""
    session_ms = int(cluster.broker_settings().get(ZOOKEEPER_SESSION_TIMEOUT_MS, "18000"))
    return 2 * session_ms / 1000 + 15


def online_as_assigned(topic: str, assignment: Mapping[int, Sequence[int]]) -> Callable[[ZkSnapshot], bool]:
    def check(s: ZkSnapshot) -> bool:
        return all(s.partition(topic, p).leader == replicas[0]
                   and set(s.partition(topic, p).isr) == set(replicas)
                   for p, replicas in assignment.items())
    return check


def create_online(cluster: LocalCluster, observer: ZkObserver, topic: str,
                  assignment: Mapping[int, Sequence[int]],
                  config: Mapping[str, str] | None = None) -> ZkSnapshot:
    metadata.create_topic(cluster.bootstrap_servers, topic, assignment, config or {})
    return observer.wait_until(online_as_assigned(topic, assignment), timeout=30,
                               description=f"{topic} online with its preferred leaders")


def assert_views_agree(cluster: LocalCluster, snap: ZkSnapshot, topic: str, brokers: Sequence[int]) -> None:
    """Each broker's metadata cache equals ZooKeeper (ISR as a set), once UpdateMetadata landed.
    The caches have no watch to wait on, so this polls, bounded."""
    want = {(p.topic, p.partition): (p.leader, p.leader_epoch, p.replicas, frozenset(p.isr))
            for p in snap.topic_partitions(topic)}

    def agree() -> None:
        for broker in brokers:
            view = metadata.broker_view(cluster.endpoint(broker).bootstrap, [topic], timeout=5)
            got = {k: (m.leader, m.leader_epoch, m.replicas, frozenset(m.isr)) for k, m in view.items()}
            assert got == want, f"broker {broker} shows {got}, ZooKeeper {want}"

    for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.25),
                            retry=retry_if_exception_type(AssertionError), reraise=True):
        with attempt:
            agree()


def test_snapshot_after_creating_a_topic_with_an_explicit_assignment(cluster: LocalCluster) -> None:
    topic = fresh_topic("snap")
    # Observe a topic that does not exist yet: its watches must fire on creation.
    with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as observer:
        before = observer.snapshot()
        assert not before.has_topic(topic)
        with pytest.raises(LookupError):
            before.partition(topic, 0)
        created_at = time.time()
        snap = create_online(cluster, observer, topic, ASSIGNMENT, {"min.insync.replicas": "2"})

        assert set(snap.live_brokers) == {1, 2, 3}
        assert len(set(snap.live_brokers.values())) == 3 and min(snap.live_brokers.values()) > 0
        assert snap.controller in snap.live_brokers and snap.controller_epoch is not None
        assert snap.topic_ids[topic]
        assert snap.topic_configs[topic] == {"min.insync.replicas": "2"}
        assert not snap.pending_reassignment
        for partition, replicas in ASSIGNMENT.items():
            state = snap.partition(topic, partition)
            assert state.replicas == replicas  # AR order as assigned, not sorted
            assert (state.leader, state.leader_epoch, state.version) == (replicas[0], 0, 0)
            assert state.isr == replicas  # the controller initialises ISR in AR order
            assert state.controller_epoch == snap.controller_epoch
            assert state.leader_recovery_state == 0

        events = observer.events_since(created_at)
        assigned = [e for e in events if e.kind == TOPIC_ASSIGNMENT and e.topic == topic]
        assert assigned and isinstance(assigned[0], TopicAssignmentChanged)
        assert assigned[0].partitions == ASSIGNMENT
        for partition, replicas in ASSIGNMENT.items():
            first = observer.first_event(PARTITION_STATE, after=created_at, topic=topic, partition=partition)
            assert isinstance(first, PartitionStateWritten)
            assert first.at >= assigned[0].at
            assert (first.leader, first.leader_epoch, first.isr) == (replicas[0], 0, replicas)
        # What a history file stores reads back equal: every real event, and the snapshot.
        assert [event_from_dict(event_to_dict(e)) for e in events] == events
        assert ZkSnapshot.from_dict(snap.to_dict()) == snap


def test_every_broker_view_agrees_with_zookeeper_after_settling(cluster: LocalCluster, observer: ZkObserver) -> None:
    topic = fresh_topic("views")
    snap = create_online(cluster, observer, topic, ASSIGNMENT)
    assert_views_agree(cluster, snap, topic, [1, 2, 3])
    # Asking about a topic no broker knows neither fails nor creates it.
    missing = fresh_topic("missing")
    assert metadata.broker_view(cluster.endpoint(1).bootstrap, [missing]) == {}
    assert not observer.snapshot([missing]).has_topic(missing)


def test_wait_until_times_out_naming_what_it_waited_for(observer: ZkObserver) -> None:
    with pytest.raises(ConvergenceTimeout) as info:
        observer.wait_until(lambda s: s.controller == 99, timeout=1.0, description="broker 99 to lead")
    assert "broker 99 to lead" in str(info.value)
    assert info.value.last is not None and set(info.value.last.live_brokers) == {1, 2, 3}
    assert "live brokers=[1,2,3]" in str(info.value)


def test_observer_rides_out_a_zookeeper_pause(cluster: LocalCluster, observer: ZkObserver) -> None:
    cluster.pause_zookeeper()
    try:
        with pytest.raises(ConvergenceTimeout) as info:
            observer.wait_until(lambda s: True, timeout=2.0, description="any snapshot")
        assert info.value.last is None and "last read failed" in str(info.value)
    finally:
        cluster.resume_zookeeper()
    resumed_at = time.time()
    topic = fresh_topic("after-pause")
    create_online(cluster, observer, topic, {0: (2, 3, 1)})  # reads work again
    assert observer.first_event(TOPIC_ASSIGNMENT, after=resumed_at, topic=topic) is not None  # watches too


def test_set_topic_config_writes_the_znode_and_notifies_the_brokers(cluster: LocalCluster, observer: ZkObserver,
                                                                    admin: ZkAdmin) -> None:
    topic = fresh_topic("config")
    create_online(cluster, observer, topic, {0: (1, 2, 3)}, {"min.insync.replicas": "2"})

    admin.set_topic_config(topic, {"unclean.leader.election.enable": "true", "retention.ms": "3600000"})
    expected = {"min.insync.replicas": "2", "unclean.leader.election.enable": "true", "retention.ms": "3600000"}
    observer.wait_until(lambda s: s.topic_configs.get(topic) == expected, timeout=10,
                        description=f"{topic} config in ZooKeeper")

    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=6.0)
    zk.start(timeout=10)
    try:
        raw, _ = zk.get(zkpaths.topic_config_path(topic))
        assert zkpaths.parse_topic_config(raw) == expected
        notifications = sorted(c for c in zk.get_children(zkpaths.CONFIG_CHANGES)
                               if c.startswith(zkpaths.CONFIG_CHANGE_PREFIX))
        # Brokers delete processed notifications after a while, but not within seconds.
        bodies = [zk.get(f"{zkpaths.CONFIG_CHANGES}/{c}")[0] for c in notifications]
        assert f'{{"version":2,"entity_path":"topics/{topic}"}}'.encode() in bodies
    finally:
        zk.stop()
        zk.close()

    # The notification is what makes brokers reload: each one serves the new overrides.
    for attempt in Retrying(stop=stop_after_delay(20), wait=wait_fixed(0.25),
                            retry=retry_if_exception_type(AssertionError), reraise=True):
        with attempt:
            for broker in (1, 2, 3):
                assert metadata.describe_topic_config(cluster.endpoint(broker).bootstrap, topic) == expected

    admin.set_topic_config(topic, {"retention.ms": None})
    assert observer.snapshot().topic_configs[topic] == {
        "min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    with pytest.raises(HarnessError, match="does not exist"):
        admin.set_topic_config(fresh_topic("absent"), {"retention.ms": "1"})


def test_write_reassignment_completes(cluster: LocalCluster, observer: ZkObserver, admin: ZkAdmin) -> None:
    topic = fresh_topic("reassign")
    create_online(cluster, observer, topic, {0: (1, 2, 3), 1: (2, 3, 1)})
    started = time.time()
    admin.write_reassignment([(topic, 0, [3, 1]), (topic, 1, [1, 3, 2])])
    done = observer.wait_until(
        lambda s: not s.pending_reassignment and s.partition(topic, 0).replicas == (3, 1)
        and s.partition(topic, 1).replicas == (1, 3, 2),
        timeout=30, description="reassignment to finish")
    p0, p1 = done.partition(topic, 0), done.partition(topic, 1)
    # Leaders still in the target set stay; only a preferred election would move them (§2.5).
    assert (p0.leader, set(p0.isr), p0.adding_replicas, p0.removing_replicas) == (1, {1, 3}, (), ())
    assert (p1.leader, set(p1.isr)) == (2, {1, 2, 3})
    submitted = observer.wait_event(REASSIGNMENT, after=started, timeout=10,
                                    description="the reassignment znode to be seen",
                                    where=pending(True))
    observer.wait_event(REASSIGNMENT, after=submitted.at, timeout=10,
                        description="the reassignment znode to be seen gone",
                        where=pending(False))
    assert_views_agree(cluster, done, topic, [1, 2, 3])


def test_leader_kill_restart_and_preferred_election(cluster: LocalCluster, observer: ZkObserver,
                                                    admin: ZkAdmin) -> None:
    """Last in the module: it kills a broker (and brings it back)."""
    controller = observer.wait_until(lambda s: s.controller is not None, timeout=30,
                                     description="a controller").controller
    # Kill a broker that is not the controller: a controller kill adds a failover (epoch +2).
    victim, a, b = sorted({1, 2, 3} - {controller}) + [controller]
    topic = fresh_topic("failover")
    assignment = {0: (victim, a, b), 1: (a, b, victim)}
    before = create_online(cluster, observer, topic, assignment)
    old_epoch = before.live_brokers[victim]

    killed_at = time.time()
    cluster.kill_broker(victim)
    # The election (partition 0) and the follower's ISR removal (partition 1) are separate writes.
    after = observer.wait_until(
        lambda s: s.partition(topic, 0).leader == a and victim not in s.partition(topic, 1).isr,
        timeout=expiry_bound(cluster),
        description=f"{topic}-0 to move from broker {victim} to {a}, and {victim} to leave {topic}-1's ISR")
    assert victim not in after.live_brokers
    p0, p1 = after.partition(topic, 0), after.partition(topic, 1)
    assert (p0.leader, p0.isr, p0.leader_epoch) == (a, (a, b), 1)  # old ISR minus the dead, order kept
    assert (p1.leader, p1.isr, p1.leader_epoch) == (a, (a, b), 1)  # follower removal bumps too

    gone_at = observer.broker_gone_at(victim, killed_at)
    elected_at = observer.new_leader_at(topic, 0, after=killed_at, old_leader=victim)
    assert gone_at is not None and elected_at is not None
    assert killed_at <= gone_at <= elected_at
    gone = observer.first_event(BROKER_GONE, after=killed_at, broker_id=victim)
    assert isinstance(gone, BrokerGone) and gone.at == gone_at

    assert_views_agree(cluster, after, topic, [a, b])
    with pytest.raises(metadata.MetadataError):
        metadata.broker_view(cluster.endpoint(victim).bootstrap, [topic], timeout=2)

    live_bootstrap = cluster.endpoint(a).bootstrap
    assert metadata.elect_leaders(live_bootstrap, "preferred", [(topic, 0), (topic, 1)]) == {
        (topic, 0): "PREFERRED_LEADER_NOT_AVAILABLE", (topic, 1): "ELECTION_NOT_NEEDED"}
    assert metadata.elect_leaders(live_bootstrap, "unclean", [(topic, 1)]) == {
        (topic, 1): "ELECTION_NOT_NEEDED"}

    restarted_at = time.time()
    cluster.start_broker(victim)
    # Back in every ISR of the topic, not only partition 0's: the views are compared with the
    # snapshot the election leaves, which a later ISR expansion of partition 1 would make stale
    # (CI #38: broker 1 rejoined partition 1's ISR after the election's snapshot was read).
    back = observer.wait_until(
        lambda s: s.live_brokers.get(victim, 0) > old_epoch and all(victim in p.isr for p in s.topic_partitions(topic)),
        timeout=60, description=f"broker {victim} back (new broker epoch) and in every ISR of {topic}")
    assert back.partition(topic, 0).leader == a  # leadership does not come back by itself
    assert observer.broker_registered_at(victim, restarted_at) is not None
    assert observer.first_event(BROKER_REGISTERED, after=restarted_at, broker_id=victim) is not None

    admin.write_preferred_election([(topic, 0)])
    elected = observer.wait_until(
        lambda s: s.partition(topic, 0).leader == victim and not s.pending_preferred_election,
        timeout=30, description="preferred election through /admin/preferred_replica_election")
    assert elected.partition(topic, 0).leader_epoch == back.partition(topic, 0).leader_epoch + 1
    # Events may trail the snapshot that satisfied the wait by a watch round trip: wait for them.
    submitted = observer.wait_event(PREFERRED_ELECTION, after=restarted_at, timeout=10,
                                    description="the election znode to be seen",
                                    where=pending(True))
    finished = observer.wait_event(PREFERRED_ELECTION, after=submitted.at, timeout=10,
                                   description="the election znode to be seen gone",
                                   where=pending(False))
    assert submitted.at <= finished.at
    assert_views_agree(cluster, elected, topic, [1, 2, 3])


def test_observer_survives_its_own_session_expiry(cluster: LocalCluster, observer: ZkObserver) -> None:
    """Last: the observer's own ZooKeeper session expires; it must reconnect with a new session
    and re-arm its watches.

    The session is expired the way kazoo's own tests do it: a second client attaches to the
    same session id and closes it, which ZooKeeper treats as the session's end.  (Pausing
    ZooKeeper is no reliable way: on resume a client's ping may touch its session before the
    expirer runs, so whether any one session expires is a race.)"""
    observer.wait_until(lambda s: len(s.live_brokers) == 3, timeout=60, description="3 brokers")
    losses_before = observer.session_losses
    session_id, password = observer._require_client().client_id  # noqa: SLF001 - the fault itself
    intruder = KazooClient(hosts=cluster.zookeeper_connect, client_id=(session_id, password))
    intruder.start(timeout=10)
    intruder.stop()
    intruder.close()
    observer.wait_until(lambda s: observer.session_losses > losses_before and len(s.live_brokers) == 3,
                        timeout=expiry_bound(cluster) + 30, description="the observer's session lost and renewed")
    assert observer._require_client().client_id[0] != session_id  # noqa: SLF001 - a new session

    # The raw exists watch on the admin znode is re-armed after the session loss.
    asked_at = time.time()
    with ZkAdmin(cluster.zookeeper_connect) as admin:
        admin.write_preferred_election([(fresh_topic("no-such-topic"), 0)])  # skipped, znode removed
    observer.wait_event(PREFERRED_ELECTION, after=asked_at, timeout=20, description="election znode seen",
                        where=pending(False))
    topic = fresh_topic("after-expiry")
    create_online(cluster, observer, topic, {0: (3, 1, 2)})
    assert observer.first_event(PARTITION_STATE, after=asked_at, topic=topic, partition=0) is not None

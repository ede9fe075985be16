"""The oracle against a real cluster where Kafka's processing order matters.

Broker ids 4, 5, 6 (``ClusterConfig.first_broker_id``): with ids >= 5 the controller's
``replicas.groupBy(_.replica)`` (an immutable HashMap) does not visit brokers in ascending order,
so which ISR member survives two deaths in one ``BrokerChange`` is decided by the Scala hash order
(``oracle.scala_order``).  Both brokers are SIGKILLed together; their sessions may expire in one
``BrokerChange`` or in two, in either order, so the observation must equal *one of* the oracle's
alternatives, each computed from the state observed before the kill, never after it.

The module is ``nightly`` (docs/nightly.md; about 60 s, over the test command's budget): each
case proves on a real cluster a rule the test command checks in unit tables -- the hash order
against Scala's own ``groupBy`` (tests/unit/oracle/test_scala_order.py), the alternatives, an
admin election naming a partition without state, a reassignment of a stateless partition, the
controlled-shutdown request count (tests/unit/oracle/test_fidelity.py).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence

import pytest

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness import metadata
from kafka_chaos.harness.config import ZOOKEEPER_SESSION_TIMEOUT_MS, ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.metadata import MetadataError
from kafka_chaos.harness.node_logs import LogCursor
from kafka_chaos.harness.observer import ConvergenceTimeout, ZkObserver, ZkSnapshot
from kafka_chaos.harness.zkadmin import ZkAdmin
from kafka_chaos.oracle import (
    Alternative,
    BrokerFailure,
    BrokerStartup,
    ClusterState,
    ControlledShutdown,
    Outcome,
    PartitionPhase,
    PartitionState,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    TopicPartition,
    TopicState,
    initial_phase,
    predict,
)

pytestmark = pytest.mark.nightly

FIRST_BROKER_ID = 4
KILLED = (4, 5)
# "pair": the audit's case (ISR [4, 5], both die: one BrokerChange keeps 4, the member removed last).
# "trio": the 6-broker case of item 5 on three brokers (leader and first follower die; the last
#     replica leads with epoch +1 in one BrokerChange, +2 in two).  Kafka wants one replication
#     factor per topic, hence two topics.
ASSIGNMENTS: Mapping[str, tuple[int, ...]] = {"pair": (4, 5), "trio": (5, 4, 6)}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # tickTime 3000 (session 6000 = the 2-tick minimum): ZooKeeper expires sessions in 3 s buckets,
    # so the two killed brokers' sessions often expire together and the controller sees them in
    # one BrokerChange -- the case where the HashMap order decides.
    config = ClusterConfig(brokers=3, first_broker_id=FIRST_BROKER_ID, zk_tick_time_ms=3000)
    with LocalCluster(config, resolve_distribution()) as running:
        yield running


def expiry_bound(cluster: LocalCluster) -> float:
    """Seconds within which a killed broker's session is surely gone (doc: failover-timing)."""
    session_ms = int(cluster.broker_settings().get(ZOOKEEPER_SESSION_TIMEOUT_MS, "18000"))
    return 2 * session_ms / 1000 + 15


def create_without_waiting(cluster: LocalCluster, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
    """CreateTopics with operation timeout 0, for a topic whose leader never comes (its only
    replica is a broker that never existed). Kafka 3.9 ``ZkAdminManager.createTopics`` writes the
    topic's znodes (``adminZkClient.createTopicWithAssignment``) before it looks at the timeout,
    and with ``timeout <= 0`` answers at once (REQUEST_TIMED_OUT, which librdkafka's
    CreateTopics response parser reports as success for an operation timeout <= 0) instead of
    holding the request in its purgatory until a leader or the timeout comes. The callers wait
    for the znodes in ZooKeeper."""
    from confluent_kafka.admin import NewTopic

    replicas = [list(assignment[p]) for p in sorted(assignment)]
    with metadata.admin_client(cluster.bootstrap_servers, 30.0) as client:
        future = client.create_topics([NewTopic(topic, num_partitions=len(replicas), replica_assignment=replicas)],
                                      operation_timeout=0, request_timeout=30.0)[topic]
        future.result(timeout=31.0)


def oracle_state(snap: ZkSnapshot, topics: Sequence[str], broker_config: Mapping[str, str]) -> ClusterState:
    """What ZooKeeper showed, as the oracle's input (the named topics only)."""
    live = frozenset(snap.live_brokers)
    by_topic: dict[str, dict[int, PartitionState]] = {t: {} for t in topics}
    for (name, number), ps in snap.partitions.items():
        if name not in by_topic:
            continue
        by_topic[name][number] = PartitionState(
            replicas=ps.replicas, leader=ps.leader, isr=ps.isr, leader_epoch=ps.leader_epoch,
            leader_recovery_state=ps.leader_recovery_state,
            phase=initial_phase(ps.leader, live, has_state_znode=ps.version >= 0),
            adding_replicas=ps.adding_replicas, removing_replicas=ps.removing_replicas)
    return ClusterState(
        live_brokers=live,
        topics={t: TopicState(partitions=parts, config=dict(snap.topic_configs.get(t, {})))
                for t, parts in by_topic.items()},
        controller=snap.controller if snap.controller in live else None,
        config=dict(broker_config),
    )


View = tuple[frozenset[int], dict[tuple[str, int], tuple[object, ...]]]


def zk_view(state: ClusterState) -> View:
    """What ZooKeeper can show: live brokers, and per partition replicas, leader, ISR (as a set:
    leader-made ISRs append in catch-up order), epoch and recovery state."""
    return state.live_brokers, {
        (tp.topic, tp.partition): (p.replicas, p.leader, frozenset(p.isr), p.leader_epoch, p.leader_recovery_state)
        for tp, p in state.partitions()
    }


def matching(alternatives: tuple[Alternative, ...], observed: ClusterState) -> Alternative | None:
    want = zk_view(observed)
    return next((alt for alt in alternatives if zk_view(alt.state) == want), None)


def describe(alternatives: tuple[Alternative, ...]) -> str:
    return "; ".join(f"[{alt.label}] {zk_view(alt.state)[1]}" for alt in alternatives)


def kill_together_and_match(cluster: LocalCluster, round_number: int) -> str:
    """One round: fresh topics, SIGKILL 4 and 5 back to back, wait (bounded) until ZooKeeper shows
    one of the alternatives predicted from the state before the kill, and stays there.  Returns
    the matched alternative's label."""
    run = f"{round_number}-{uuid.uuid4().hex[:6]}"
    topics = {f"{name}-{run}": replicas for name, replicas in ASSIGNMENTS.items()}
    names = list(topics)
    pair, trio = names
    with ZkObserver(cluster.zookeeper_connect, topics=names) as observer:
        for topic, replicas in topics.items():
            metadata.create_topic(cluster.bootstrap_servers, topic, {0: replicas})
        before = observer.wait_until(
            lambda s: all(s.has_topic(t) and s.partition(t, 0).leader == r[0] and set(s.partition(t, 0).isr) == set(r)
                          for t, r in topics.items()),
            timeout=30, description="both topics online with full ISRs")

        state = oracle_state(before, names, cluster.broker_settings())
        prediction = predict(state, [BrokerFailure(KILLED)])
        labels = [alt.label for alt in prediction.alternatives]
        # The audit's observation is among them: one BrokerChange removes 5 then 4 from the ISR.
        assert any(alt.state.partition(pair, 0).isr == (4,) for alt in prediction.alternatives), labels

        killed_at = time.time()
        for broker in KILLED:
            cluster.kill_broker(broker)

        def settled_on_an_alternative(s: ZkSnapshot) -> bool:
            return set(s.live_brokers) == {6} and matching(prediction.alternatives, oracle_state(s, names, {})) is not None

        try:
            observer.wait_until(settled_on_an_alternative, timeout=expiry_bound(cluster),
                                description="brokers 4 and 5 gone and ZooKeeper showing an oracle alternative")
        except ConvergenceTimeout as timeout:
            last = timeout.last
            shown = zk_view(oracle_state(last, names, {})) if last is not None else None
            pytest.fail(f"ZooKeeper shows {shown}; the oracle allows {describe(prediction.alternatives)}")
        # Stable: a second BrokerChange still on its way would change the state again.
        time.sleep(3.0)
        observed = oracle_state(observer.snapshot(names), names, {})
        found = matching(prediction.alternatives, observed)
        assert found is not None, (
            f"ZooKeeper moved on to {zk_view(observed)}; the oracle allows {describe(prediction.alternatives)}")
        print(f"round {round_number}: {found.label} ({time.time() - killed_at:.1f} s after the kill); "
              f"ZooKeeper: {zk_view(observed)[1]}")
        assert found.state.partition(pair, 0).leader == -1
        assert found.state.partition(trio, 0).leader == 6
        assert observed.topics[pair].partitions[0].phase is PartitionPhase.OFFLINE
        return found.label


ONE_EVENT = "one BrokerChange {4,5}"
MAX_ROUNDS = 4


def test_two_brokers_killed_together_match_an_oracle_alternative(cluster: LocalCluster) -> None:
    """Every round must match an alternative.  Rounds repeat (at most MAX_ROUNDS) until the kills
    landed in one BrokerChange, the case the HashMap order decides (ISR [4], not [5]); whether
    they do is ZooKeeper timing, so the rounds that saw two events are reported, not failed."""
    assert cluster.broker_ids == [4, 5, 6]
    seen = []
    for round_number in range(MAX_ROUNDS):
        if round_number:
            for broker in KILLED:
                cluster.start_broker(broker)
        seen.append(kill_together_and_match(cluster, round_number))
        if seen[-1] == ONE_EVENT:
            break
    print(f"alternatives observed per round: {seen}")


def ensure_running(cluster: LocalCluster, brokers: Sequence[int]) -> None:
    """Every broker of ``brokers`` up and every ISR of every topic whole: the module's tests share
    one cluster, and a test must not start from what the last one left (a broker still leading
    an RF-2 partition whose restarted follower has not caught up makes its controlled shutdown
    retry: seen once a test no longer slept 3 s at its end)."""
    for broker in brokers:
        if not cluster.broker_running(broker):
            cluster.start_broker(broker)
    def whole(s: ZkSnapshot) -> bool:  # (not is_settled: a test leaves a reassignment that never completes)
        live = set(s.live_brokers)
        return set(brokers) <= live and all(set(p.replicas) & live <= set(p.isr)
                                            for p in s.partitions.values() if p.leader in live)

    with ZkObserver(cluster.zookeeper_connect) as observer:
        observer.wait_until(whole, timeout=60, description="every broker up and every ISR whole")


def wait_matching(observer: ZkObserver, prediction_alternatives: tuple[Alternative, ...], names: list[str],
                  live: set[int], timeout: float, what: str, *, settle: float) -> Alternative:
    """Bounded wait until ZooKeeper shows ``live`` and one of the alternatives, then ``settle``
    seconds for a controller event that may still change it (each caller says why it waits or
    why nothing can come); the state must still be that alternative. Returns the alternative."""
    def shows_one(s: ZkSnapshot) -> bool:
        return set(s.live_brokers) == live and matching(prediction_alternatives, oracle_state(s, names, {})) is not None

    try:
        observer.wait_until(shows_one, timeout=timeout, description=what)
    except ConvergenceTimeout as timeout_error:
        last = timeout_error.last
        shown = zk_view(oracle_state(last, names, {})) if last is not None else None
        pytest.fail(f"{what}: ZooKeeper shows {shown}; the oracle allows {describe(prediction_alternatives)}")
    time.sleep(settle)
    observed = oracle_state(observer.snapshot(names), names, {})
    found = matching(prediction_alternatives, observed)
    assert found is not None, f"{what}: ZooKeeper moved on to {zk_view(observed)}"
    return found


def test_unclean_override_with_spaces_elects_at_the_next_controller_event_not_at_the_change(
        cluster: LocalCluster) -> None:
    """Item 6 on a real cluster: ``unclean.leader.election.enable=" true"`` is true for the topic's
    LogConfig (ConfigDef trims) but sends no TopicUncleanLeaderElectionEnable (Scala's toBoolean
    does not trim).  A leaderless partition with a live out-of-ISR replica therefore stays
    leaderless at the change, and is elected uncleanly at the next controller event -- here the
    failover when broker 4 (the only broker that never stopped, hence the controller) dies."""
    ensure_running(cluster, [4, 5, 6])
    topic = f"spaces-{uuid.uuid4().hex[:8]}"
    names = [topic]
    settings = cluster.broker_settings()
    bound = expiry_bound(cluster)
    with ZkObserver(cluster.zookeeper_connect, topics=names) as observer:
        metadata.create_topic(cluster.bootstrap_servers, topic, {0: (5, 6)})
        observer.wait_until(lambda s: s.has_topic(topic) and s.partition(topic, 0).leader == 5
                            and set(s.partition(topic, 0).isr) == {5, 6}, timeout=30, description=f"{topic} online")
        # Leave it leaderless with ISR [5] and 6 live outside the ISR: 6 dies, 5 dies, 6 returns.
        # 5 dies only once the controller has taken 6 out of the ISR: its registration gone is not
        # enough.  Had both deaths reached the controller as one BrokerChange, its
        # removeReplicasFromIsr would visit 5 first (leader → -1, ISR [6]) and 6 would come back
        # as a clean leader.
        cluster.kill_broker(6)
        observer.wait_broker_gone(6, bound)
        observer.wait_until(lambda s: s.partition(topic, 0).isr == (5,), timeout=bound,
                            description=f"the controller to take 6 out of {topic}-0's ISR")
        cluster.kill_broker(5)
        observer.wait_broker_gone(5, bound)
        cluster.start_broker(6)
        observer.wait_until(lambda s: s.controller == 4 and set(s.live_brokers) == {4, 6}
                            and s.partition(topic, 0).leader == -1, timeout=bound,
                            description="6 back, 4 the controller, the partition leaderless")
        # 6's startup (its BrokerChange) may still be queued at the controller once ZooKeeper
        # shows it registered; with unclean election off it must leave the partition leaderless:
        # 3 s for it to run, so that the oracle starts from what the controller left.
        time.sleep(3.0)
        before = observer.snapshot(names)
        state = oracle_state(before, names, settings)
        assert lit_zk(state, topic) == (-1, (5,)), zk_view(state)

        change = {"unclean.leader.election.enable": " true"}
        at_change = predict(state, [TopicConfigChange(topic, change)])
        with ZkAdmin(cluster.zookeeper_connect) as admin:
            admin.set_topic_config(topic, change)
        # Nothing is written at the change, so ZooKeeper matches at once; an election would come
        # from the brokers' config-change listeners (TopicConfigHandler.processConfigChanges ->
        # KafkaController.enableTopicUncleanLeaderElection), which run after the write and show
        # nothing in ZooKeeper until then: 3 s for such an event to arrive and be written.
        found = wait_matching(observer, at_change.alternatives, names, {4, 6}, 15, "after the config change",
                              settle=3.0)
        assert found.state.partition(topic, 0).leader == -1  # nothing elected at the change

        after_change = oracle_state(observer.snapshot(names), names, settings)
        assert after_change.topics[topic].config == change
        at_failover = predict(after_change, [BrokerFailure((4,))])
        cluster.kill_broker(4)
        # The new controller's failover elects 6 (onControllerFailover) in its first event; with 4
        # and 5 dead and 6 the only replica left, no later event changes the partition.
        found = wait_matching(observer, at_failover.alternatives, names, {6}, bound, "after 4's failover", settle=0)
        elected = found.state.partition(topic, 0)
        assert (elected.leader, elected.isr, elected.leader_recovery_state) == (6, (6,), 1), found.label
        print(f"failover: {found.label}; ZooKeeper {zk_view(found.state)[1]}")


def lit_zk(state: ClusterState, topic: str) -> tuple[int, tuple[int, ...]]:
    p = state.partition(topic, 0)
    return p.leader, p.isr


def test_admin_election_naming_a_partition_without_state_elects_nothing(cluster: LocalCluster) -> None:
    """Item 3 on a real cluster: an ElectLeaders(PREFERRED) request naming a partition that has no
    state znode (its only replica, broker 9, never existed) besides an electable one: the
    controller's ``partitionLeadershipInfo(tp).get`` throws before any election, so neither is
    elected; the same request without it elects."""
    ensure_running(cluster, [4, 5, 6])
    run = uuid.uuid4().hex[:8]
    electable, orphan = f"electable-{run}", f"orphan-{run}"
    names = [electable, orphan]
    settings = cluster.broker_settings()
    with ZkObserver(cluster.zookeeper_connect, topics=names) as observer:
        metadata.create_topic(cluster.bootstrap_servers, electable, {0: (5, 6)})
        create_without_waiting(cluster, orphan, {0: (9,)})
        with ZkAdmin(cluster.zookeeper_connect) as admin:  # reorder: 6 preferred, 5 still leads
            admin.write_reassignment([(electable, 0, [6, 5])])
        observer.wait_until(
            lambda s: s.has_topic(orphan) and s.has_topic(electable) and not s.pending_reassignment
            and s.partition(electable, 0).replicas == (6, 5) and s.partition(electable, 0).leader == 5
            and set(s.partition(electable, 0).isr) == {5, 6}, timeout=30, description="the reorder done")
        state = oracle_state(observer.snapshot(names), names, settings)
        assert state.partition(orphan, 0).phase is PartitionPhase.NEW

        both = [TopicPartition(electable, 0), TopicPartition(orphan, 0)]
        refused = predict(state, [PreferredElection(tuple(both))])
        assert {o.outcome for o in refused.outcomes} == {Outcome.REQUEST_FAILED}
        controller_log = LogCursor(cluster)
        controller_log.mark()
        try:
            answer: object = metadata.elect_leaders(cluster.bootstrap_servers, "preferred",
                                                    [(electable, 0), (orphan, 0)], timeout=3)
        except MetadataError as error:  # the controller never answers: the client gives up
            answer = str(error)
        print(f"ElectLeaders naming the stateless partition answered: {answer}")
        # It reached the controller and failed there: KafkaController.process logs the exception
        # that ended the event ("Error processing event ReplicaLeaderElection(...)", 3.9: the
        # NoSuchElementException of processReplicaLeaderElection's partitionLeadershipInfo(tp).get),
        # and the election's callback, the event's last act, never runs: no answer ever comes.
        failed = wait_until(
            lambda: [line for line in controller_log.lines_since_mark()
                     if "Error processing event ReplicaLeaderElection" in line and orphan in line],
            timeout=30, interval=0.2, description="the controller's error line for the ElectLeaders event")
        print(f"the controller: {failed[0]}")
        # The line is written after the event ended, and nothing of it can follow: the state
        # matches (nothing elected) or the test fails now.
        found = wait_matching(observer, refused.alternatives, names, {4, 5, 6}, 15, "after the refused election",
                              settle=0)
        assert found.state.partition(electable, 0).leader == 5

        state = oracle_state(observer.snapshot(names), names, settings)
        elected = predict(state, [PreferredElection((TopicPartition(electable, 0),))])
        assert metadata.elect_leaders(cluster.bootstrap_servers, "preferred", [(electable, 0)], timeout=30) == {
            (electable, 0): None}
        # ElectLeaders answered after the election's one write (its DelayedElectLeader completes
        # once the new leader is in the metadata); no other event is pending.
        found = wait_matching(observer, elected.alternatives, names, {4, 5, 6}, 15, "after the election alone",
                              settle=0)
        assert found.state.partition(electable, 0).leader == 6


def test_reassigning_a_stateless_partition_then_starting_a_target(cluster: LocalCluster) -> None:
    """Item 4 on a real cluster: a reassignment (ZooKeeper path) of a partition without state
    writes RS = TRS ++ (ORS - TRS) with adding replicas and fails (no state to bump); when a target
    broker starts, the controller first initialises the partition over RS, then resumes the
    reassignment (phase A: +1, the other target never catches up)."""
    ensure_running(cluster, [4, 5, 6])
    orphan = f"orphan-{uuid.uuid4().hex[:8]}"
    names = [orphan]
    settings = cluster.broker_settings()
    bound = expiry_bound(cluster)
    with ZkObserver(cluster.zookeeper_connect, topics=names) as observer:
        create_without_waiting(cluster, orphan, {0: (9,)})
        cluster.kill_broker(5)
        observer.wait_until(lambda s: s.has_topic(orphan) and 5 not in s.live_brokers and s.controller is not None,
                            timeout=bound, description="5 gone, the orphan topic written")
        state = oracle_state(observer.snapshot(names), names, settings)
        recorded = predict(state, [Reassign(orphan, 0, (5, 9))])
        with ZkAdmin(cluster.zookeeper_connect) as admin:
            admin.write_reassignment([(orphan, 0, [5, 9])])
        observer.wait_until(lambda s: not s.pending_reassignment and s.partition(orphan, 0).replicas == (5, 9),
                            timeout=30, description="the reassignment recorded and given up")
        # The wait above saw /admin/reassign_partitions go: the last write of the controller's
        # failed reassignment (KafkaController.processZkPartitionReassignment removes the failed
        # partitions last); nothing else is pending.
        found = wait_matching(observer, recorded.alternatives, names, {4, 6}, 15, "after the reassignment", settle=0)
        assert found.state.partition(orphan, 0).adding_replicas == (5,)
        assert found.state.partition(orphan, 0).phase is PartitionPhase.NEW

        state = oracle_state(observer.snapshot(names), names, settings)
        resumed = predict(state, [BrokerStartup((5,))])
        cluster.start_broker(5)
        # One controller event (onBrokerStartup) initialises the partition and resumes the
        # reassignment; its other target (9) never exists, so nothing follows.
        found = wait_matching(observer, resumed.alternatives, names, {4, 5, 6}, 30, "after 5 started", settle=0)
        p = found.state.partition(orphan, 0)
        assert (p.replicas, p.leader, p.isr, p.leader_epoch, p.adding_replicas) == ((5, 9), 5, (5,), 1, (5,))


def shutdown_lines(cluster: LocalCluster, broker: int, offset: int) -> list[str]:
    """The broker's controlled-shutdown log lines written after ``offset`` (KafkaServer.scala 3.9
    lines 906-936: one "returned ..." line per request, "Retrying" between requests)."""
    with open(cluster.log_files()[f"broker-{broker}"], encoding="utf-8", errors="replace") as log_file:
        log_file.seek(offset)
        return [line for line in log_file if "ontrolled shutdown" in line]


def log_size(cluster: LocalCluster, broker: int) -> int:
    return cluster.log_files()[f"broker-{broker}"].stat().st_size


def test_controlled_shutdown_requests_count_only_rf_above_1_leaderships(cluster: LocalCluster) -> None:
    """Item 2 on a real cluster: ``partitionLeadersOnBroker`` filters on RF > 1, so a broker that
    still leads only an RF = 1 partition needs one ControlledShutdownRequest; one still leading an
    RF = 2 partition (its follower dead, no candidate) uses all ``controlled.shutdown.max.retries``
    (3).  The settled ZooKeeper state equals the oracle's either way."""
    ensure_running(cluster, [4, 5, 6])
    run = uuid.uuid4().hex[:8]
    single, stuck = f"single-{run}", f"stuck-{run}"
    settings = cluster.broker_settings()
    bound = expiry_bound(cluster)
    with ZkObserver(cluster.zookeeper_connect, topics=[single, stuck]) as observer:
        metadata.create_topic(cluster.bootstrap_servers, single, {0: (6,)})
        observer.wait_until(lambda s: s.has_topic(single) and s.partition(single, 0).leader == 6, timeout=30,
                            description=f"{single} led by 6")
        state = oracle_state(observer.snapshot([single]), [single], settings)
        prediction = predict(state, [ControlledShutdown(6)])
        offset = log_size(cluster, 6)
        cluster.stop_broker(6)
        # The match is the write of 6's BrokerChange (its partition leaderless): the last event,
        # with nothing else down or starting.
        wait_matching(observer, prediction.alternatives, [single], {4, 5}, bound, "after 6's controlled shutdown",
                      settle=0)
        lines = shutdown_lines(cluster, 6, offset)
        assert sum("returned successfully" in line for line in lines) == 1, lines
        assert not any("Retrying controlled shutdown" in line for line in lines), lines

        cluster.start_broker(6)
        metadata.create_topic(cluster.bootstrap_servers, stuck, {0: (6, 5)})
        observer.wait_until(lambda s: s.has_topic(stuck) and s.partition(stuck, 0).leader == 6
                            and set(s.partition(stuck, 0).isr) == {5, 6}, timeout=30, description=f"{stuck} online")
        cluster.kill_broker(5)
        observer.wait_until(lambda s: 5 not in s.live_brokers and s.partition(stuck, 0).isr == (6,), timeout=bound,
                            description="5 gone and out of the ISR")
        names = [single, stuck]
        state = oracle_state(observer.snapshot(names), names, settings)
        prediction = predict(state, [ControlledShutdown(6)])
        offset = log_size(cluster, 6)
        cluster.stop_broker(6)
        wait_matching(observer, prediction.alternatives, names, {4}, bound, "after 6's second controlled shutdown",
                      settle=0)  # as after the first: 6's BrokerChange is the last event
        lines = shutdown_lines(cluster, 6, offset)
        requests = sum("Controlled shutdown request returned" in line for line in lines)
        assert requests == 3, lines
        assert sum("Retrying controlled shutdown" in line for line in lines) == 2, lines

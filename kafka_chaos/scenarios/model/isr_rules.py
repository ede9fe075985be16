"""Leader-side ISR changes the oracle does not model: pure rules over an oracle ``ClusterState``.

The oracle models the *controller*. A follower cut off from its peers but not from ZooKeeper
never makes the controller act: its session lives, so there is no ``onBrokerFailure``. Instead
each partition *leader* drops it from the ISR itself — ``Partition.maybeShrinkIsr`` every
``replica.lag.time.max.ms / 2``, with ``getOutOfSyncReplicas`` naming followers that have not
caught up for ``replica.lag.time.max.ms`` while the leader's log end moved — and asks the
controller through ``AlterPartition`` (``KafkaController.processAlterPartition``), which writes
the new ISR with the leader epoch unchanged. Once the follower fetches again,
``Partition.maybeExpandIsr`` adds it back the same way (that is :func:`oracle.settled`).

These rules hold only when (the scenarios see to it):

* records keep arriving on the partition (a silent follower whose log end equals the leader's
  counts as caught up and is never shrunk) — the runner's workload produces to every partition;
* the leader can reach the controller: the cut broker is not the controller, and partitions the
  cut broker *leads* keep their ISR (its AlterPartition cannot reach the controller either) —
  while they stall for clients (``acks=all`` cannot be committed without the followers).
  Not so where leaders write the ISR to ZooKeeper themselves (:func:`leaders_write_isr`): there
  the cut leader, which still reaches ZooKeeper, drops its unreachable followers too.

On KRaft (``broker_peer_cut``: a broker cut from its peer brokers, its controller links kept) the
controller is no broker: a cut leader's AlterPartition gets through and it shrinks its ISR to
itself, and every accepted request bumps the partition epoch -- :func:`shrink_isr` goes through
the KRaft controller's ``alterPartition`` (``oracle.kraft.controller.leader_isr_shrink``), so the
partition epochs the rule predicts are exact -- but for a cut leader's (:func:`epochs_unexact`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from kafka_chaos.oracle import NO_LEADER, ClusterState, Mode, TopicState, leaders_ask_controller, settled
from kafka_chaos.oracle.kraft.controller import leader_isr_shrink

LEADER_ISR_SHRINK = "rule_leader_isr_shrink"
LEADER_ISR_EXPAND = "rule_leader_isr_expand"
LEADER_ISR_REJOIN = "rule_leader_isr_rejoin"
# Rules applied on top of the controller's writes for the step's events (not on the state before)
AFTER_CONTROLLER = frozenset({LEADER_ISR_REJOIN})

RULE_SOURCES = {
    LEADER_ISR_SHRINK: "Partition.maybeShrinkIsr/getOutOfSyncReplicas (replica.lag.time.max.ms) "
                       "-> AlterPartition: ISR minus the cut follower, leader and leader epoch unchanged",
    LEADER_ISR_EXPAND: "Partition.maybeExpandIsr -> AlterPartition: the follower back in the ISR, "
                       "leader and leader epoch unchanged",
    LEADER_ISR_REJOIN: "Partition.maybeExpandIsr of a broker cut from ZooKeeper only that was never fenced: "
                       "before 2.5 a fetch session drops the follower's leader epoch (KAFKA-9338), "
                       "leader and leader epoch unchanged",
}


def leaders_write_isr(state: ClusterState) -> bool:
    """Whether partition leaders write their ISR changes to ZooKeeper themselves: before AlterIsr
    (``oracle.leaders_ask_controller``)."""
    return not leaders_ask_controller(state)


def shrink_isr_without(state: ClusterState, cut: Iterable[int]) -> ClusterState:
    """Every partition led by a live broker outside ``cut`` loses the ``cut`` followers from its
    ISR (order kept); partitions led by a cut broker, or leaderless, keep theirs — unless leaders
    write the ISR themselves (:func:`leaders_write_isr`): then a cut leader, whose followers
    cannot fetch from it (a cut broker reaches no peer), keeps only itself."""
    gone = frozenset(cut)
    self_written = leaders_write_isr(state)
    topics = {}
    for name, ts in state.topics.items():
        parts = {}
        for p, ps in ts.partitions.items():
            live_leader = ps.leader != NO_LEADER and ps.leader in state.live_brokers
            if live_leader and ps.leader not in gone and gone & set(ps.isr):
                ps = ps.with_changes(isr=tuple(r for r in ps.isr if r not in gone))
            elif live_leader and ps.leader in gone and self_written and set(ps.isr) != {ps.leader}:
                ps = ps.with_changes(isr=(ps.leader,))
            parts[p] = ps
        topics[name] = TopicState(parts, ts.config)
    return replace(state, topics=topics)


def shrink_isr(state: ClusterState, cut: Iterable[int]) -> ClusterState:
    """The leaders' shrink for ``cut`` brokers: on KRaft through the controller's AlterPartition
    (a cut leader keeps only itself; partition epoch +1 per accepted request), in ZooKeeper mode
    :func:`shrink_isr_without`."""
    if state.mode is Mode.KRAFT:
        return leader_isr_shrink(state, cut)
    return shrink_isr_without(state, cut)


def epochs_unexact(rule: str, state: ClusterState, brokers: Iterable[int],
                   ruled: Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """Of the ``ruled`` partitions (those whose ISR the rule changes in ``state``, the oracle's
    prediction), those whose partition epoch the rule does not count. ZooKeeper mode: all (its
    rules write no partition epoch). KRaft counts each AlterPartition (:func:`shrink_isr`;
    :func:`expand_isr` is ``oracle.settled``, +1 per follower) except a shrink of two or more
    followers (a cut leader's, or two cut followers'): ``getOutOfSyncReplicas`` (Partition.scala 3.9.0 lines 1309-1319) leaves out
    a follower whose log end equals the leader's until the next record, so the followers may
    leave in one request or in several (``broker_peer_cut_kraft`` seed 4801 on 3.9.2: r-1 shrunk
    "2,3,1 to 2,3", then 1.5 s later "2,3 to 2", partition epoch +2)."""
    ruled = tuple(ruled)
    if state.mode is not Mode.KRAFT:
        return ruled
    if rule != LEADER_ISR_SHRINK:
        return ()
    gone = frozenset(brokers)
    unexact = []
    for t, p in ruled:
        ps = state.topics[t].partitions[p]
        leaving = set(ps.isr) - {ps.leader} if ps.leader in gone else set(ps.isr) & gone
        if len(leaving) > 1:
            unexact.append((t, p))
    return tuple(unexact)


def followers_fenced(state: ClusterState) -> bool:
    """Whether a leader fences a follower that fetches with an older leader epoch. Not before
    2.5: an incremental fetch session kept each partition's offsets but not the epoch the
    follower sent (``FetchSession.CachedPartition`` 2.4.1 has no leader epoch; KAFKA-9338 added
    it in 2.5.0), so ``Partition.readRecords`` saw none to check."""
    return state.release.at_least(2, 5)


def rejoin_unregistered(before: ClusterState, state: ClusterState, cut: Iterable[int]) -> ClusterState:
    """Brokers cut from ZooKeeper only lose their session and the controller takes them out of
    every ISR (``onBrokerFailure``, a new leader epoch they are never told of: they are not
    live). They keep fetching from the leaders they knew. From 2.5 those fetches carry the old
    epoch and are fenced (the follower stops: "has an older epoch ... Will await the new
    LeaderAndIsr", seen on 3.2.3); before (:func:`followers_fenced`) nothing checks it, the
    leaders add them back (appended, epoch unchanged: seen on 2.4.1) -- every partition whose
    leader is unchanged, live and not cut. Partitions a cut broker led got a leader it was never
    told of: it does not fetch there."""
    if followers_fenced(state):
        return state
    gone = frozenset(cut)
    topics = {}
    for name, ts in state.topics.items():
        parts = {}
        for p, ps in ts.partitions.items():
            was = before.topics[name].partitions.get(p) if name in before.topics else None
            if was is not None and ps.leader == was.leader and ps.leader in state.live_brokers \
                    and ps.leader not in gone:
                back = tuple(r for r in ps.replicas if r in gone and r in was.isr and r not in ps.isr)
                if back:
                    ps = ps.with_changes(isr=ps.isr + back)
            parts[p] = ps
        topics[name] = TopicState(parts, ts.config)
    return replace(state, topics=topics)


def expand_isr(state: ClusterState) -> ClusterState:
    """Every live replica of a partition with a live leader back in the ISR (epoch unchanged)."""
    return settled(state)


def apply_rule(rule: str, state: ClusterState, brokers: Iterable[int], before: ClusterState | None = None
               ) -> ClusterState:
    """``state``: the oracle's prediction; ``before``: its input (the rejoin rule needs both)."""
    if rule == LEADER_ISR_REJOIN:
        return rejoin_unregistered(before if before is not None else state, state, brokers)
    if rule == LEADER_ISR_SHRINK:
        return shrink_isr(state, brokers)
    if rule == LEADER_ISR_EXPAND:
        return expand_isr(state)
    raise ValueError(f"unknown ISR rule {rule!r}; known: {', '.join(RULE_SOURCES)}")


def changed_partitions(before: ClusterState, after: ClusterState,
                       topics: Iterable[str]) -> list[tuple[str, int]]:
    """The partitions of ``topics`` whose ISR (as a set) differs between the two states."""
    changed = []
    for topic in topics:
        if topic not in before.topics or topic not in after.topics:
            continue
        for p, ps in sorted(after.topics[topic].partitions.items()):
            was = before.topics[topic].partitions.get(p)
            if was is not None and set(was.isr) != set(ps.isr):
                changed.append((topic, p))
    return changed

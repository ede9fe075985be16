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
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_chaos.oracle import NO_LEADER, ClusterState, TopicState, settled

LEADER_ISR_SHRINK = "rule_leader_isr_shrink"
LEADER_ISR_EXPAND = "rule_leader_isr_expand"

RULE_SOURCES = {
    LEADER_ISR_SHRINK: "Partition.maybeShrinkIsr/getOutOfSyncReplicas (replica.lag.time.max.ms) "
                       "-> AlterPartition: ISR minus the cut follower, leader and leader epoch unchanged",
    LEADER_ISR_EXPAND: "Partition.maybeExpandIsr -> AlterPartition: the follower back in the ISR, "
                       "leader and leader epoch unchanged",
}


def shrink_isr_without(state: ClusterState, cut: Iterable[int]) -> ClusterState:
    """Every partition led by a live broker outside ``cut`` loses the ``cut`` followers from its
    ISR (order kept); partitions led by a cut broker, or leaderless, keep theirs."""
    gone = frozenset(cut)
    topics = {}
    for name, ts in state.topics.items():
        parts = {}
        for p, ps in ts.partitions.items():
            if ps.leader != NO_LEADER and ps.leader not in gone and ps.leader in state.live_brokers \
                    and gone & set(ps.isr):
                ps = ps.with_changes(isr=tuple(r for r in ps.isr if r not in gone))
            parts[p] = ps
        topics[name] = TopicState(parts, ts.config)
    return ClusterState(state.live_brokers, topics, state.controller, state.config)


def expand_isr(state: ClusterState) -> ClusterState:
    """Every live replica of a partition with a live leader back in the ISR (epoch unchanged)."""
    return settled(state)


def apply_rule(rule: str, state: ClusterState, brokers: Iterable[int]) -> ClusterState:
    if rule == LEADER_ISR_SHRINK:
        return shrink_isr_without(state, brokers)
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

"""Terse constructors for oracle test states."""

from __future__ import annotations

from typing import Iterable, Mapping

from kafka_chaos.oracle import ClusterState, PartitionPhase, PartitionState, TopicPartition, TopicState
from kafka_chaos.oracle.interleavings import apply_event

ONLINE, OFFLINE, NEW = PartitionPhase.ONLINE, PartitionPhase.OFFLINE, PartitionPhase.NEW


def part(
    replicas: Iterable[int],
    leader: int,
    isr: Iterable[int],
    epoch: int = 0,
    *,
    recovery: int = 0,
    phase: PartitionPhase = ONLINE,
    adding: Iterable[int] = (),
    removing: Iterable[int] = (),
) -> PartitionState:
    return PartitionState(
        replicas=tuple(replicas),
        leader=leader,
        isr=tuple(isr),
        leader_epoch=epoch,
        leader_recovery_state=recovery,
        phase=phase,
        adding_replicas=tuple(adding),
        removing_replicas=tuple(removing),
    )


def new_part(replicas: Iterable[int]) -> PartitionState:
    return part(replicas, -1, (), 0, phase=NEW)


def cluster(
    live: Iterable[int],
    topics: Mapping[str, Mapping[int, PartitionState]] | None = None,
    *,
    controller: int | None = None,
    config: Mapping[str, str] | None = None,
    topic_config: Mapping[str, Mapping[str, str]] | None = None,
) -> ClusterState:
    topic_config = topic_config or {}
    return ClusterState(
        live_brokers=frozenset(live),
        topics={t: TopicState(partitions=dict(ps), config=topic_config.get(t, {})) for t, ps in (topics or {}).items()},
        controller=controller,
        config={"auto.leader.rebalance.enable": "false", **(config or {})},
    )


def one(live: Iterable[int], p: PartitionState, **kwargs) -> ClusterState:
    """A cluster with the single partition t-0."""
    return cluster(live, {"t": {0: p}}, **kwargs)


T0 = TopicPartition("t", 0)


def run(state: ClusterState, event):
    """(partition t-0 after the event, its outcome or None, the new state)."""
    after, outcomes = apply_event(state, event)
    found = [o.outcome for o in outcomes if (o.topic, o.partition) == ("t", 0)]
    return after.partition(T0), (found[0] if found else None), after


def lit(p: PartitionState) -> tuple:
    """The ZooKeeper-visible part of a partition, for table comparisons."""
    return (list(p.replicas), p.leader, list(p.isr), p.leader_epoch, p.leader_recovery_state)

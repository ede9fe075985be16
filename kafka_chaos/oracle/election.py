"""New leader, ISR and epoch per strategy (``controller/Election.scala``), plus the other
controller-made writes of a partition's state znode.

Every controller write bumps ``leader_epoch`` by exactly one (``kafka.api.LeaderAndIsr``:
``newLeader``, ``newLeaderAndIsr``, ``newEpoch``, ``newRecoveringLeaderAndIsr``).  A function that
returns ``None`` models "nothing written": the znode keeps its old content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet

from kafka_chaos.oracle import selectors
from kafka_chaos.oracle.state import (
    INITIAL_LEADER_EPOCH,
    NO_LEADER,
    RECOVERED,
    RECOVERING,
    PartitionPhase,
    PartitionState,
)


@dataclass(frozen=True)
class ElectionResult:
    """``Election.ElectionResult``: the new state, or None when no leader could be elected."""

    new_state: PartitionState | None
    unclean: bool = False


# --- kafka.api.LeaderAndIsr -------------------------------------------------------------------

def new_leader_and_isr(p: PartitionState, leader: int, isr: tuple[int, ...]) -> PartitionState:
    """``LeaderAndIsr.newLeaderAndIsr``: epoch +1, leader recovery state kept."""
    return p.with_changes(leader=leader, isr=tuple(isr), leader_epoch=p.leader_epoch + 1)


def new_leader(p: PartitionState, leader: int) -> PartitionState:
    """``LeaderAndIsr.newLeader``: epoch +1, ISR and recovery state kept."""
    return p.with_changes(leader=leader, leader_epoch=p.leader_epoch + 1)


def new_epoch(p: PartitionState) -> PartitionState:
    """``LeaderAndIsr.newEpoch`` (``KafkaController.updateLeaderEpoch``): only the epoch moves."""
    return p.with_changes(leader_epoch=p.leader_epoch + 1)


def new_recovering_leader_and_isr(p: PartitionState, leader: int, isr: tuple[int, ...]) -> PartitionState:
    """``LeaderAndIsr.newRecoveringLeaderAndIsr``: epoch +1 and leader_recovery_state RECOVERING."""
    return p.with_changes(
        leader=leader, isr=tuple(isr), leader_epoch=p.leader_epoch + 1, leader_recovery_state=RECOVERING
    )


# --- Election.scala ---------------------------------------------------------------------------

def leader_for_offline(
    p: PartitionState,
    live_replicas: AbstractSet[int],
    unclean_leader_election_enabled: bool,
    leader_recovery_supported: bool = True,
) -> ElectionResult:
    """``Election.leaderForOffline``.  Clean: ISR = old ISR filtered to online replicas, order kept.
    Unclean (leader not in the old ISR): ISR = [leader] and, from IBP 3.2, RECOVERING (KIP-704)."""
    leader = selectors.offline_partition_leader_election(
        p.replicas, p.isr, live_replicas, unclean_leader_election_enabled
    )
    if leader is None:
        return ElectionResult(None)
    if leader in p.isr:
        isr = tuple(r for r in p.isr if r in live_replicas)
        return ElectionResult(new_leader_and_isr(p, leader, isr).with_changes(phase=PartitionPhase.ONLINE))
    if leader_recovery_supported:
        elected = new_recovering_leader_and_isr(p, leader, (leader,))
    else:
        elected = new_leader_and_isr(p, leader, (leader,))
    return ElectionResult(elected.with_changes(phase=PartitionPhase.ONLINE), unclean=True)


def leader_for_reassign(p: PartitionState, live_replicas: AbstractSet[int]) -> ElectionResult:
    """``Election.leaderForReassign``: candidates are the *target* replicas; ISR unchanged."""
    leader = selectors.reassign_partition_leader_election(p.target_replicas, p.isr, live_replicas)
    if leader is None:
        return ElectionResult(None)
    return ElectionResult(new_leader(p, leader).with_changes(phase=PartitionPhase.ONLINE))


def leader_for_preferred_replica(p: PartitionState, live_replicas: AbstractSet[int]) -> ElectionResult:
    """``Election.leaderForPreferredReplica``: AR.head or nothing; ISR unchanged."""
    leader = selectors.preferred_replica_partition_leader_election(p.replicas, p.isr, live_replicas)
    if leader is None:
        return ElectionResult(None)
    return ElectionResult(new_leader(p, leader).with_changes(phase=PartitionPhase.ONLINE))


def leader_for_controlled_shutdown(
    p: PartitionState, live_or_shutting_down: AbstractSet[int], shutting_down: AbstractSet[int]
) -> ElectionResult:
    """``Election.leaderForControlledShutdown``: ISR = old ISR minus every shutting-down broker.
    No candidate: nothing written and the ISR is *not* shrunk."""
    leader = selectors.controlled_shutdown_partition_leader_election(
        p.replicas, p.isr, live_or_shutting_down, shutting_down
    )
    if leader is None:
        return ElectionResult(None)
    isr = tuple(r for r in p.isr if r not in shutting_down)
    return ElectionResult(new_leader_and_isr(p, leader, isr).with_changes(phase=PartitionPhase.ONLINE))


# --- PartitionStateMachine / ReplicaStateMachine writes ---------------------------------------

def initialize_leader_and_isr(p: PartitionState, live_replicas: AbstractSet[int]) -> PartitionState | None:
    """``ZkPartitionStateMachine.initializeLeaderAndIsrForPartitions`` (NewPartition -> Online):
    leader = first live replica in AR order, ISR = every live replica in AR order, epoch 0.
    No live replica: no state znode is created and the partition stays NewPartition."""
    live = tuple(r for r in p.replicas if r in live_replicas)
    if not live:
        return None
    return p.with_changes(
        leader=live[0],
        isr=live,
        leader_epoch=INITIAL_LEADER_EPOCH,
        leader_recovery_state=RECOVERED,
        phase=PartitionPhase.ONLINE,
    )


def remove_replica_from_isr(p: PartitionState, replica: int) -> PartitionState | None:
    """``ZkReplicaStateMachine.doRemoveReplicasFromIsr`` (OfflineReplica): only partitions whose ISR
    holds the replica are written; the leader becomes -1 if it was that replica; the *last* ISR
    member is never removed; epoch +1 even when only a follower leaves."""
    if not p.has_leader_and_isr or replica not in p.isr:
        return None
    leader = NO_LEADER if replica == p.leader else p.leader
    isr = p.isr if len(p.isr) == 1 else tuple(r for r in p.isr if r != replica)
    return new_leader_and_isr(p, leader, isr)

"""``object PartitionLeaderElectionAlgorithms`` (``PartitionStateMachine.scala``, Kafka 3.9): the
four leader choices, as pure one-liners with the Scala names in snake_case.

Candidates are always scanned in *assignment* (AR) order, never in ISR order.  ``None`` means no
leader can be chosen (the caller turns it into a ``StateChangeFailedException``: nothing is
written).  ``live_replicas`` is the set for which ``ControllerContext.isReplicaOnline`` holds,
which excludes brokers in controlled shutdown except where the Scala says otherwise.
"""

from __future__ import annotations

from typing import AbstractSet, Sequence


def offline_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: AbstractSet[int],
    unclean_leader_election_enabled: bool,
) -> int | None:
    """First live ISR member in AR order, else (unclean only) the first live replica."""
    clean = next((r for r in assignment if r in live_replicas and r in isr), None)
    if clean is not None or not unclean_leader_election_enabled:
        return clean
    return next((r for r in assignment if r in live_replicas), None)


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
) -> int | None:
    """First target replica that is live and in the ISR."""
    return next((r for r in reassignment if r in live_replicas and r in isr), None)


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
) -> int | None:
    """AR.head if it is live and in the ISR; no other replica is ever considered."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: AbstractSet[int],
    shutting_down_brokers: AbstractSet[int],
) -> int | None:
    """First replica that is live (shutting-down brokers count as live here), in the ISR and not
    shutting down."""
    return next(
        (r for r in assignment if r in live_replicas and r in isr and r not in shutting_down_brokers),
        None,
    )

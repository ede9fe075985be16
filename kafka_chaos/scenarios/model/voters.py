"""Voter changes of a dynamic KRaft quorum, the pure parts the faults (``scenarios.faults.voters``)
and the check (``scenarios.checks.voters``) share: where the fault's outcome records what it
observed, and which voter a removal takes out."""

from __future__ import annotations

from kafka_chaos.common.errors import HarnessError, UsageError

VOTER_CHANGE = "voter_change"  # the fault's outcome key (FaultTraits.outcome)
LEADER, FOLLOWER = "leader", "follower"


def removal_target(voter: str, leader: int, voters: tuple[int, ...]) -> int:
    """Which voter a ``controller_remove`` takes out: the leader, or the lowest-id follower."""
    if leader not in voters:
        raise HarnessError(f"the quorum leader {leader} is not one of the voters {list(voters)}")
    if voter == LEADER:
        return leader
    followers = [v for v in sorted(voters) if v != leader]
    if not followers:
        raise UsageError(f"controller_remove: no follower voter to remove (the voters are {list(voters)})")
    return followers[0]

"""Why a partition ended up as it did after an event, so scenarios can assert the reason too."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Outcome(Enum):
    ELECTED = "elected"  # a new leader was chosen cleanly (or a new partition got its first leader)
    UNCHANGED = "unchanged"  # same leader; ISR or epoch may have moved
    NO_REPLICA_ONLINE = "no_replica_online"  # no live leader after the event (leaderless partition)
    ELECTION_NOT_NEEDED = "election_not_needed"  # admin election: leader already preferred / live
    PREFERRED_LEADER_NOT_AVAILABLE = "preferred_leader_not_available"  # AR.head dead or not in ISR
    UNCLEAN_ELECTED = "unclean_elected"  # leader from outside the ISR: data loss possible
    # admin election whose request names a partition without a state znode: the controller event
    # fails as a whole, nothing is elected, the admin client gets no answer (processReplicaLeaderElection)
    REQUEST_FAILED = "request_failed"


@dataclass(frozen=True)
class PartitionOutcome:
    event_index: int
    topic: str
    partition: int
    outcome: Outcome

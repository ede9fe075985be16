"""What each KRaft voter said of the quorum when a step's measurement closed: DescribeQuorum asked
of every voter on its own (:func:`harness.metadata.describe_quorum`). A voter answers only while it
believes it leads (``KafkaRaftClient.handleDescribeQuorumRequest``), so the answers say which voters
believe they lead, and in which epoch.

Recorded in ``history.jsonl`` (version 9) so the ``one_quorum_leader`` check
(:mod:`scenarios.checks.quorum`) is a pure function of the record. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_chaos.harness.kafka_wire import WireQuorum

NOT_LEADER_OR_FOLLOWER = 6


@dataclass(frozen=True)
class VoterAnswer:
    """One voter's answer at ``at``: the leader and epoch it answered as leader of, or ``error``
    (Kafka's error name, or why it did not answer)."""

    at: float
    leader: int | None = None
    epoch: int | None = None
    error: str | None = None

    @property
    def claims_leadership(self) -> bool:
        return self.error is None and self.leader is not None

    def to_list(self) -> list[object]:
        return [self.at, self.leader, self.epoch, self.error]

    @classmethod
    def from_list(cls, v: list[object]) -> VoterAnswer:
        leader, epoch, error = v[1], v[2], v[3]
        return cls(float(str(v[0])), None if leader is None else int(str(leader)),
                   None if epoch is None else int(str(epoch)), None if error is None else str(error))


def voter_answer(at: float, answer: WireQuorum, error_name: str) -> VoterAnswer:
    """A voter's DescribeQuorum answer as recorded (``error_name``: Kafka's name of its error code)."""
    if answer.error_code != 0:
        return VoterAnswer(at, error=error_name)
    return VoterAnswer(at, answer.leader_id, answer.leader_epoch)

"""What the idempotent producer's own debug lines say about a partition's sends (pure).

librdkafka (``debug=eos,msg``; the workload keeps the lines in a ring) logs every failed
ProduceRequest's batch with the error's actions (``rd_kafka_handle_Produce_error``, MSGSET:
"t [0]: MessageSet with 1 message(s) (MsgId 68, BaseSeq 67) encountered error: ... (actions
Retry,MsgPossiblyPersisted)"). When any partition's request is refused for a gap in the sequence
numbers (``rd_kafka_handle_idempotent_Produce_error``, ERRSEQ) it bumps the producer epoch — for
the whole producer, every partition — and renumbers each partition's unacknowledged messages from
sequence 0 of the new epoch (``rd_kafka_idemp_drain_epoch_bump``; NEWPID per partition: "t [4]
changed PID{Id:0,Epoch:0} -> PID{Id:0,Epoch:1} with base MsgId 100").

A message whose batch was *possibly persisted* (a transport error or timeout: the broker may have
appended it) and that the producer then renumbers under a bumped epoch is written twice when the
first attempt was in fact appended: the broker cannot deduplicate across producer epochs. So is one
refused with NOT_LEADER_OR_FOLLOWER, which librdkafka takes as not persisted (``MsgNotPersisted``)
but a leader also answers for a batch it *appended* and was waiting to replicate (``acks=all``)
when it stopped leading: ``DelayedProduce.tryComplete`` -> ``Partition.checkEnoughReplicasReachOffset``,
``case None => (false, Errors.NOT_LEADER_OR_FOLLOWER)`` (Partition.scala 3.9 lines 1136-1137), the
batch kept in the log the new leader replicated (seen: test_migration, u [1] msgid 367, broker 4's
append at offset 366 answered NOT_LEADER at its controlled shutdown, broker 1 leading from offset
367, then an out-of-order refusal's epoch bump re-sent it at offset 367). That
is librdkafka's open confluentinc/librdkafka#4953 ("Sporadic message duplication during leader
transition with idempotent producer"), whose maintainers describe this epoch-bump path — and the
bump may come from another partition's gap (seen: explore-27007-12, t0 [4]'s batch possibly
persisted, the gap on t0 [7]). :func:`possibly_persisted_resends` finds it, so a duplicate it
explains is triaged ``client`` with the producer's own lines as evidence.

Each producer instance logs the producer id and epoch it is given (``rd_kafka_idemp_pid_update``,
GETPID: "Acquired PID{Id:1000,Epoch:0}"), at start-up and at every epoch bump;
:func:`producer_ids_given` reads them for the ``producer_ids_unique`` check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_TIME = r"^(?P<at>\d+(?:\.\d+)?) .*?"
_CLIENT = r"\[(?P<client>[^\]\s]+#producer-\d+)\]"
_FAILED_BATCH = re.compile(
    _TIME + r"(?P<topic>[^\s\[]+) \[(?P<partition>\d+)\]: MessageSet with (?P<count>\d+) message\(s\) "
    r"\(MsgId (?P<msgid>\d+), BaseSeq (?P<seq>-?\d+)\) encountered error: (?P<error>.*) \(actions (?P<actions>[^)]*)\)")
# A partition's messages renumbered under a new producer id/epoch, from ``base`` on. From
# PID{Invalid} it is the producer's first id, not a bump: nothing was sent under an earlier one.
_RENUMBERED = re.compile(
    _TIME + r"(?P<topic>[^\s\[]+) \[(?P<partition>\d+)\] changed PID\{(?P<old>[^}]*)\} -> PID\{(?P<new>[^}]*)\} "
    r"with base MsgId (?P<base>\d+)")
_CLIENT_NAME = re.compile(_CLIENT)
POSSIBLY_PERSISTED = "MsgPossiblyPersisted"
# librdkafka's words for NOT_LEADER_OR_FOLLOWER (rd_kafka_err_descs): appended or not (above).
NOT_LEADER = "Not leader for partition"
ACQUIRED_PID = "Acquired PID{"
_ACQUIRED = re.compile(_TIME + _CLIENT + r".*?Acquired PID\{Id:(?P<id>-?\d+),Epoch:(?P<epoch>-?\d+)\}")


@dataclass(frozen=True)
class ProducerIdGiven:
    """A producer instance (``<client.id>#producer-N``) was given ``producer_id`` and ``epoch``."""

    client: str
    at: float
    producer_id: int
    epoch: int

    def to_list(self) -> list[object]:
        return [self.client, self.at, self.producer_id, self.epoch]

    @classmethod
    def from_list(cls, v: list[object]) -> ProducerIdGiven:
        return cls(str(v[0]), float(str(v[1])), int(str(v[2])), int(str(v[3])))


def producer_ids_given(lines: Iterable[str]) -> list[ProducerIdGiven]:
    """Every producer id and epoch a producer instance logged it acquired, in order."""
    return [ProducerIdGiven(m["client"], float(m["at"]), int(m["id"]), int(m["epoch"]))
            for line in lines if ACQUIRED_PID in line and (m := _ACQUIRED.search(line)) is not None]


@dataclass(frozen=True)
class FailedBatch:
    """One failed ProduceRequest batch of a partition: msgids ``first_msgid`` .. + ``count`` - 1."""

    at: float
    topic: str
    partition: int
    first_msgid: int
    count: int
    error: str
    actions: str
    line: str
    client: str = ""  # the producer instance ("<client.id>#producer-N"): msgids are its own

    @property
    def possibly_persisted(self) -> bool:
        """Whether the broker may have appended the batch: librdkafka says so, or the error is a
        NOT_LEADER_OR_FOLLOWER a leader also answers after appending (module docstring)."""
        return POSSIBLY_PERSISTED in self.actions.split(",") or NOT_LEADER in self.error

    @property
    def last_msgid(self) -> int:
        return self.first_msgid + self.count - 1

    def holds(self, msgid: int) -> bool:
        return self.first_msgid <= msgid <= self.last_msgid


@dataclass(frozen=True)
class Resend:
    """A possibly persisted batch, then an epoch bump that renumbered its partition from
    ``base_msgid`` on: its messages from there are sent again under the new epoch, and written
    twice if the first attempt was appended."""

    batch: FailedBatch
    bump_at: float
    bump_line: str
    base_msgid: int = 0

    @property
    def resent_msgids(self) -> range:
        return range(max(self.batch.first_msgid, self.base_msgid), self.batch.last_msgid + 1)

    def evidence(self) -> str:
        return (f"librdkafka#4953: {self.batch.topic} [{self.batch.partition}] msgids {self.batch.first_msgid}.."
                f"{self.batch.last_msgid} possibly persisted ({self.batch.error}), then an "
                f"epoch bump re-sent them: «{self.batch.line.strip()}» «{self.bump_line.strip()}»")


def _client(line: str) -> str:
    m = _CLIENT_NAME.search(line)
    return m["client"] if m else ""


def possibly_persisted_resends(lines: Iterable[str]) -> list[Resend]:
    """Every possibly persisted batch whose partition the same producer instance renumbered
    under a bumped epoch from one of the batch's msgids or earlier (the next bump after it)."""
    open_batches: dict[tuple[str, str, int], list[FailedBatch]] = {}
    found: list[Resend] = []
    for line in lines:  # the substring tests first: most lines are neither, and the regexes are slow on them
        if "encountered error" in line and (m := _FAILED_BATCH.search(line)) is not None:
            batch = FailedBatch(float(m["at"]), m["topic"], int(m["partition"]), int(m["msgid"]), int(m["count"]),
                                m["error"], m["actions"], line, _client(line))
            if not batch.possibly_persisted:
                continue
            pending = open_batches.setdefault((batch.client, batch.topic, batch.partition), [])
            # a retry's failure of a batch already open adds nothing: the first error is the evidence
            if not any((b.first_msgid, b.count) == (batch.first_msgid, batch.count) for b in pending):
                pending.append(batch)
        elif "changed PID" in line and (m := _RENUMBERED.search(line)) is not None and m["old"] != "Invalid":
            base = int(m["base"])
            for batch in open_batches.pop((_client(line), m["topic"], int(m["partition"])), []):
                if base <= batch.last_msgid:  # else acknowledged before the bump: not sent again
                    found.append(Resend(batch, float(m["at"]), line, base))
    return found


# librdkafka's words for NOT_ENOUGH_REPLICAS (rd_kafka_err_descs): the leader refused to append
# because its ISR is below the topic's min.insync.replicas (Partition.appendRecordsToLeader).
NOT_ENOUGH_REPLICAS = "Not enough in-sync replicas"


@dataclass(frozen=True)
class Refusal:
    """A ProduceRequest batch of ``topic``-``partition`` the leader refused (librdkafka retries it)."""

    topic: str
    partition: int
    at: float
    error: str


def refusals(lines: Iterable[str], wanted: str = NOT_ENOUGH_REPLICAS) -> list[Refusal]:
    """Every failed batch whose error contains ``wanted``, in order."""
    return [Refusal(m["topic"], int(m["partition"]), float(m["at"]), m["error"])
            for line in lines if wanted in line and (m := _FAILED_BATCH.search(line)) is not None]


def explaining(resends: Iterable[Resend], topic: str, partition: int, msgid: int) -> Resend | None:
    """The resend that explains a duplicate of message ``msgid`` of the partition, if any."""
    return next((r for r in resends if r.batch.topic == topic and r.batch.partition == partition
                 and msgid in r.resent_msgids), None)

"""What the idempotent producer's own debug lines say about a partition's sends (pure).

librdkafka (``debug=eos,msg``; the workload keeps the lines in a ring) logs every failed
ProduceRequest's batch with the error's actions (``rd_kafka_handle_Produce_error``, MSGSET:
"t [0]: MessageSet with 1 message(s) (MsgId 68, BaseSeq 67) encountered error: ... (actions
Retry,MsgPossiblyPersisted)"), and a later request refused for a gap in the sequence numbers,
after which it bumps the producer epoch and sends the messages again from sequence 0
(``rd_kafka_handle_idempotent_Produce_error``, ERRSEQ: "ProduceRequest for t [0] with 3
message(s) failed due to skipped sequence numbers (..., base seq 70 > next seq 67) caused by
previous failed request (...): recovering and retrying").

A message whose batch was *possibly persisted* (a transport error or timeout: the broker may have
appended it) and that the producer then sends again under a bumped epoch is written twice when
the first attempt was in fact appended: the broker cannot deduplicate across producer epochs.
That is librdkafka's open confluentinc/librdkafka#4953 ("Sporadic message duplication during
leader transition with idempotent producer"), whose maintainers describe this epoch-bump path.
:func:`possibly_persisted_resends` finds it, so a duplicate it explains is triaged ``client``
with the producer's own lines as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_TIME = r"^(?P<at>\d+(?:\.\d+)?) .*?"
_FAILED_BATCH = re.compile(
    _TIME + r"(?P<topic>[^\s\[]+) \[(?P<partition>\d+)\]: MessageSet with (?P<count>\d+) message\(s\) "
    r"\(MsgId (?P<msgid>\d+), BaseSeq (?P<seq>-?\d+)\) encountered error: (?P<error>.*) \(actions (?P<actions>[^)]*)\)")
_SKIPPED_SEQUENCE = re.compile(
    _TIME + r"ProduceRequest for (?P<topic>[^\s\[]+) \[(?P<partition>\d+)\] with (?P<count>\d+) message\(s\) failed "
    r"due to skipped sequence numbers")
POSSIBLY_PERSISTED = "MsgPossiblyPersisted"


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

    @property
    def possibly_persisted(self) -> bool:
        return POSSIBLY_PERSISTED in self.actions.split(",")

    def holds(self, msgid: int) -> bool:
        return self.first_msgid <= msgid < self.first_msgid + self.count


@dataclass(frozen=True)
class Resend:
    """A possibly persisted batch, then an epoch bump on its partition: its messages are sent
    again under the new epoch, and written twice if the first attempt was appended."""

    batch: FailedBatch
    bump_at: float
    bump_line: str

    def evidence(self) -> str:
        return (f"librdkafka#4953: {self.batch.topic} [{self.batch.partition}] msgids {self.batch.first_msgid}.."
                f"{self.batch.first_msgid + self.batch.count - 1} possibly persisted ({self.batch.error}), then an "
                f"epoch bump re-sent them: «{self.batch.line.strip()}» «{self.bump_line.strip()}»")


def possibly_persisted_resends(lines: Iterable[str]) -> list[Resend]:
    """Every possibly persisted batch followed, on its partition, by an epoch bump for skipped
    sequence numbers (the next bump after it)."""
    open_batches: dict[tuple[str, int], list[FailedBatch]] = {}
    found: list[Resend] = []
    for line in lines:
        if (m := _FAILED_BATCH.search(line)) is not None:
            batch = FailedBatch(float(m["at"]), m["topic"], int(m["partition"]), int(m["msgid"]), int(m["count"]),
                                m["error"], m["actions"], line)
            if batch.possibly_persisted:
                open_batches.setdefault((batch.topic, batch.partition), []).append(batch)
        elif (m := _SKIPPED_SEQUENCE.search(line)) is not None:
            for batch in open_batches.pop((m["topic"], int(m["partition"])), []):
                found.append(Resend(batch, float(m["at"]), line))
    return found


def explaining(resends: Iterable[Resend], topic: str, partition: int, msgid: int) -> Resend | None:
    """The resend that explains a duplicate of message ``msgid`` of the partition, if any."""
    return next((r for r in resends if r.batch.topic == topic and r.batch.partition == partition
                 and r.batch.holds(msgid)), None)

"""Reading a topic back for the delivery check: every record up to the high watermarks taken
when the read starts, by an assigned consumer (never a group member), bounded in time."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until

log = logging.getLogger(__name__)


_BATCH_WAIT_S = 0.1


class ReadBackError(HarnessError):
    """The topic could not be read back up to its high watermarks in time (one line)."""


def consume_all(bootstrap: str, topic: str, partitions: Sequence[int], *, client_id: str,
                timeout: float = 60.0) -> list[tuple[int, int, str]]:
    """Every record of the partitions, from the log start to the high watermark taken when
    this call starts, as ``(partition, offset, key)``. Raises :class:`ReadBackError` when a
    partition cannot be read to its watermark within ``timeout`` (e.g. it has no leader)."""
    wanted = tuple(partitions)
    deadline = time.monotonic() + timeout
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "group.id": f"{client_id}-{uuid.uuid4().hex}",  # never joined: assign()
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_uncommitted",  # non-transactional producer: LSO == HW
        "enable.partition.eof": False,
        "logger": logging.getLogger(f"{__name__}.librdkafka"),
    })
    try:
        marks = {p: _watermarks(consumer, topic, p, deadline) for p in wanted}
        ends = {p: high for p, (_, high) in marks.items()}
        # A partition whose log start reached its high watermark (delete_records deleted every record:
        # DeleteRecords to the high watermark) has nothing to read: no position would ever be reported.
        pending = {p for p, (low, high) in marks.items() if high > low}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        records: list[tuple[int, int, str]] = []
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ReadBackError(
                    f"reading {topic} back: partitions {sorted(pending)} not read up to "
                    f"their high watermarks {[ends[p] for p in sorted(pending)]} "
                    f"within {timeout:.0f} s"
                )
            # consume() returns early only with a full batch: a short wait, so that a topic read to
            # its watermarks is seen as done within a fraction of a second, not after a second's wait.
            for msg in consumer.consume(500, min(remaining, _BATCH_WAIT_S)):
                record = _record_of(msg)
                if record is not None and record[1] < ends[record[0]]:
                    records.append(record)
            positions = consumer.position(
                [TopicPartition(topic, p) for p in sorted(pending)]
            )
            pending -= {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}
        return records
    finally:
        consumer.close()


def _watermarks(consumer: Consumer, topic: str, partition: int, deadline: float) -> tuple[int, int]:
    """The partition's log start and high watermark, as its leader answers them."""
    tp = TopicPartition(topic, partition)

    def query() -> tuple[int, int]:
        offsets = consumer.get_watermark_offsets(tp, timeout=2.0, cached=False)
        if offsets is None:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return int(offsets[0]), int(offsets[1])

    try:
        return wait_until(query, timeout=deadline - time.monotonic(), interval=0.5,
                          retry_on=(KafkaException,), accept=lambda _: True,  # 0 is an answer too
                          description=f"the high watermark of {topic}-{partition}")
    except WaitTimeout as exc:
        cause = exc.last_error
        raise ReadBackError(
            f"high watermark of {topic}-{partition} unavailable: {cause.args[0] if cause else exc}"
        ) from cause


def _record_of(msg: Message) -> tuple[int, int, str] | None:
    err = msg.error()
    if err is not None:
        if err.fatal():
            raise KafkaException(err)
        log.debug("while reading back: %s", err)
        return None
    key = msg.key()
    partition, offset = msg.partition(), msg.offset()
    if partition is None or offset is None:  # not a record: nothing to account for
        return None
    # The workload keys every message; a keyless record (another writer's) is kept under the
    # empty key, which no acknowledgement carries, so it counts as consumed and never matches.
    return (partition, offset, key.decode(errors="replace") if key else "")

"""The JSON lines Kafka's Java test clients print, read into the transactional history's ops
(:mod:`scenarios.clients.txn_ops`) — pure functions, no I/O.

What each tool prints (3.9: ``tools/src/main/java/org/apache/kafka/tools/``) and what it gives:

* ``VerifiableProducer`` (``ProducerEvent`` subclasses): ``producer_send_success`` with the
  record's ``key`` (null: it sends none), ``value`` (``<value-prefix>.<n>``, ``getValue``),
  ``topic``, ``partition`` and ``offset`` — one acknowledged send; ``producer_send_error`` with
  the ``topic``, the ``value`` and the exception's class, no partition. The tool has no
  transactional mode (it never calls ``initTransactions``): every send is a plain, idempotent
  ``acks=all`` write, visible to a ``read_committed`` reader once acknowledged. Each is one
  :class:`Txn` of one send — ``committed`` when acknowledged (an acknowledged write must be read
  like a committed one), ``unknown`` when it failed (it may be in the log; no partition is
  printed, so no send is recorded) — without producer id or times but the acknowledgement's.
* ``VerifiableConsumer --verbose``: ``record_data`` per record (``key``, ``value``, ``topic``,
  ``partition``, ``offset``) — one :class:`TxnRead`; ``partitions_assigned`` /
  ``partitions_revoked`` and ``startup_complete`` (a restart) — a reset of its positions
  (:class:`ConsumerReset`).
* ``TransactionalMessageCopier``: only its progress (``statusAsJson``): ``stage``
  (``ProcessLoop`` before each poll, ``RebalanceComplete`` after an assignment,
  ``ShutdownComplete``) with ``totalProcessed``, the messages of the transactions it committed.
  It does not print a transaction's records, its aborts (``--enable-random-aborts`` aborts one in
  three silently), its offsets or its producer id: none of its transactions becomes a
  :class:`Txn`. :func:`copier_progress` counts its commits; what it wrote is judged from the
  topics themselves after the run (:mod:`scenarios.checks.copy`).

A message's identity in the history is its *value* (unique per run: the producer's prefix is the
process's start number), the copier copying key and value unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_chaos.scenarios.clients.ops import ConsumerReset
from kafka_chaos.scenarios.clients.txn_ops import COMMITTED, UNKNOWN, Txn, TxnRead, TxnSend

SEND_SUCCESS, SEND_ERROR = "producer_send_success", "producer_send_error"
RECORD_DATA, ASSIGNED, REVOKED, STARTED = "record_data", "partitions_assigned", "partitions_revoked", "startup_complete"
PROCESS_LOOP, REBALANCE_COMPLETE, SHUTDOWN_COMPLETE = "ProcessLoop", "RebalanceComplete", "ShutdownComplete"


def json_event(line: str) -> dict[str, Any] | None:
    """The JSON object a line holds, or None (log lines, ``Bad data can't be written as json``)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _exception(event: Mapping[str, Any]) -> str:
    """``class org.apache.kafka...TimeoutException`` -> ``TimeoutException``."""
    return str(event.get("exception") or "error").rsplit(".", 1)[-1]


def producer_txn(event: Mapping[str, Any], producer: str, seq: int, at: float) -> Txn | None:
    """A ``VerifiableProducer`` line as the ``seq``-th write of ``producer`` (None: not a send)."""
    name = event.get("name")
    if name == SEND_SUCCESS:
        send = TxnSend(str(event["topic"]), int(event["partition"]), str(event["value"]), int(event["offset"]))
        return Txn(producer, seq, COMMITTED, (send,), ended_at=at)
    if name == SEND_ERROR:
        return Txn(producer, seq, UNKNOWN, (), error=_exception(event), ended_at=at)
    return None


def consumer_read(event: Mapping[str, Any], consumer: str, at: float) -> TxnRead | None:
    """A ``VerifiableConsumer --verbose`` ``record_data`` line as a read (None: another line)."""
    if event.get("name") != RECORD_DATA:
        return None
    return TxnRead(consumer, str(event["topic"]), int(event["partition"]), int(event["offset"]),
                   str(event["value"]), at)


def consumer_reset(event: Mapping[str, Any], consumer: str, at: float) -> ConsumerReset | None:
    """A (re)start, an assignment or a revocation: the consumer's positions are established anew
    (a restarted process reads on from its group's committed offsets, perhaps below its last read)."""
    name = event.get("name")
    if name == STARTED:
        return ConsumerReset(consumer, at, "started")
    if name == ASSIGNED:
        return ConsumerReset(consumer, at, "assigned")
    if name == REVOKED:
        return ConsumerReset(consumer, at, "revoked")
    return None


@dataclass(frozen=True)
class CopierProgress:
    """What a copier's status line says since the previous one: ``committed`` messages (its
    ``totalProcessed`` grew by them: one or more committed transactions), ``rebalanced`` (a
    ``RebalanceComplete``: it starts over from its group's committed offsets)."""

    committed: int
    rebalanced: bool
    total: int


def copier_progress(event: Mapping[str, Any], total_before: int) -> CopierProgress | None:
    """A ``TransactionalMessageCopier`` status line against the total before it (None: not a
    status line). A total below the one before is a new process's (a restart counts from 0)."""
    stage = event.get("stage")
    if stage not in (PROCESS_LOOP, REBALANCE_COMPLETE, SHUTDOWN_COMPLETE):
        return None
    total = int(event.get("totalProcessed", 0))
    grown = total - total_before if total >= total_before else total
    return CopierProgress(grown, stage == REBALANCE_COMPLETE, total)

"""What transactional clients did over a run: every transaction attempt of every transactional
id, every record a consumer received with the isolation level it read at, the consumers'
resets, the final read-back and the consumer groups' final offsets — the raw material of the
transactional history checker (:mod:`scenarios.checks.transactions`, issue 43).

The model follows Jepsen's Kafka workload (``jepsen/src/jepsen/tests/kafka.clj``: a ``:txn``
operation holds ``[:send k v]`` and ``[:poll]`` micro-operations and completes ``:ok``,
``:fail`` or ``:info``) in Kafka's own terms, so that two kinds of clients can fill it:

* a transactional producer (confluent-kafka: ``init_transactions``, ``begin_transaction``,
  ``produce``, ``commit_transaction`` / ``abort_transaction``) fills one :class:`Txn` per
  ``begin_transaction``, with the offsets its delivery reports named;
* a read-process-write loop (confluent-kafka, or Kafka's Java ``TransactionalMessageCopier``,
  which prints only its progress) fills :attr:`Txn.offsets` with what it passed to
  ``send_offsets_to_transaction`` (the consumer's *position* per input partition: the next
  offset to read), and may leave what it does not know (offsets, producer id, times) None.

A message is identified by its topic and its key: the workload makes keys unique per topic
(a copier re-sends an input message's key to its output topic). A read-process-write loop
that aborts and re-processes its input sends the same keys again in its next attempt, so the
checker ties a read to a send by offset first and by key only when no acknowledged send sits
at that offset.

An outcome is what the *client* saw (Jepsen's ``:ok`` / ``:fail`` / ``:info``): ``committed``
(``commit_transaction`` returned), ``aborted`` (the client knows the transaction cannot have
committed: ``abort_transaction`` returned, or the commit failed with an error that aborts it),
``unknown`` (anything else: a timeout, a fatal error, a fenced producer, a process that died).
An unknown transaction may or may not be visible; the checker never counts it either way. A
fenced commit is unknown: the coordinator completes a commit it had prepared before the fence,
and Kafka reports its own timeout of a transaction as ``ProducerFencedException`` too (Jepsen's
Bufstream analysis, ``jepsen-io/bufstream`` ``workload/producer_fence.clj``).

Pure data with lossless, compact JSON forms (lists, not dicts: a history holds tens of
thousands of reads; the read-back is one list of ``[offset, key]`` pairs per partition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.scenarios.clients.ops import ConsumerReset

COMMITTED = "committed"
ABORTED = "aborted"
UNKNOWN = "unknown"
OUTCOMES = (COMMITTED, ABORTED, UNKNOWN)

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
ISOLATION_LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)

READBACK = "readback"  # the consumer name the checker gives the final read-back's records


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _opt_float(v: Any) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True)
class TxnSend:
    """One message a transaction attempt produced: ``key`` to ``topic``/``partition``, written
    at ``offset`` when its delivery report named one (None: not acknowledged, or not known)."""

    topic: str
    partition: int
    key: str
    offset: int | None = None

    def to_list(self) -> list[Any]:
        return [self.topic, self.partition, self.key, self.offset]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> TxnSend:
        return cls(str(v[0]), int(v[1]), str(v[2]), _opt_int(v[3]))


@dataclass(frozen=True)
class TxnOffset:
    """A consumer group's offset on an input partition: what a read-process-write transaction
    passed to ``send_offsets_to_transaction`` (the consumer's position, the next offset to
    read), or a group's committed offset read after the run (:attr:`TxnHistory.group_offsets`)."""

    group: str
    topic: str
    partition: int
    offset: int

    def to_list(self) -> list[Any]:
        return [self.group, self.topic, self.partition, self.offset]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> TxnOffset:
        return cls(str(v[0]), str(v[1]), int(v[2]), int(v[3]))


@dataclass(frozen=True)
class Txn:
    """One transaction attempt of ``txn_id`` (the ``transactional.id``), the ``seq``-th of that
    id (0, 1, ...; unique per id, in the order the client began them).

    ``producer_id`` / ``epoch``: what ``init_transactions`` gave, when known. ``outcome``: one
    of :data:`OUTCOMES`, as the client saw it, with ``error`` the error name that ended it
    otherwise (a ``KafkaError`` name such as ``_TIMED_OUT`` or ``_FENCED``, or a Java
    exception's simple name). Times are epoch seconds of the harness's clock: ``began_at``
    (``begin_transaction``), ``committing_at`` (taken just before ``commit_transaction`` was
    called; None when it never was, or when the client reports only afterwards — a late stamp
    would make the reads of the transaction look earlier than its commit), ``ended_at`` (the
    commit or abort returned, or the client gave up)."""

    txn_id: str
    seq: int
    outcome: str
    sends: tuple[TxnSend, ...] = ()
    offsets: tuple[TxnOffset, ...] = ()
    error: str | None = None
    producer_id: int | None = None
    epoch: int | None = None
    began_at: float | None = None
    committing_at: float | None = None
    ended_at: float | None = None
    # Set when a fault held the attempt open (scenarios.faults.txn_timeout): the instance's
    # transaction.timeout.ms, and how long the client held it between its last send's
    # acknowledgement and the commit call.
    timeout_ms: int | None = None
    held_ms: int | None = None

    @property
    def held_past_timeout(self) -> bool:
        """Held open longer than its own transaction.timeout.ms: the coordinator aborts it
        (``TransactionCoordinator.abortTimedOutTransactions``)."""
        return self.timeout_ms is not None and self.held_ms is not None and self.held_ms > self.timeout_ms

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"transaction {self.name}: outcome {self.outcome!r} is not one of {OUTCOMES}")

    @property
    def name(self) -> str:
        """``txn_id#seq``: how checks name the attempt."""
        return f"{self.txn_id}#{self.seq}"

    def to_list(self) -> list[Any]:
        return [self.txn_id, self.seq, self.outcome, self.error, self.producer_id, self.epoch,
                self.began_at, self.committing_at, self.ended_at,
                [s.to_list() for s in self.sends], [o.to_list() for o in self.offsets]] + \
            ([self.timeout_ms, self.held_ms] if self.timeout_ms is not None or self.held_ms is not None else [])

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> Txn:
        return cls(str(v[0]), int(v[1]), str(v[2]), tuple(TxnSend.from_list(s) for s in v[9]),
                   tuple(TxnOffset.from_list(o) for o in v[10]), None if v[3] is None else str(v[3]),
                   _opt_int(v[4]), _opt_int(v[5]), _opt_float(v[6]), _opt_float(v[7]), _opt_float(v[8]),
                   _opt_int(v[11]) if len(v) > 11 else None, _opt_int(v[12]) if len(v) > 12 else None)


@dataclass(frozen=True)
class TxnConsumer:
    """A consumer of the run and the isolation level it reads at (one of
    :data:`ISOLATION_LEVELS`); ``group`` when it is a group member (a read-process-write
    loop's consumer names the group its transactions send offsets for)."""

    name: str
    isolation: str
    group: str | None = None

    def __post_init__(self) -> None:
        if self.isolation not in ISOLATION_LEVELS:
            raise ValueError(f"consumer {self.name}: isolation {self.isolation!r} is not one of {ISOLATION_LEVELS}")

    def to_list(self) -> list[Any]:
        return [self.name, self.isolation, self.group]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> TxnConsumer:
        return cls(str(v[0]), str(v[1]), None if v[2] is None else str(v[2]))


@dataclass(frozen=True)
class TxnRead:
    """One record ``consumer`` received: ``key`` at ``topic``/``partition``/``offset``, handed
    out by the poll that returned at ``polled_at``."""

    consumer: str
    topic: str
    partition: int
    offset: int
    key: str
    polled_at: float

    def to_list(self) -> list[Any]:
        return [self.consumer, self.topic, self.partition, self.offset, self.key, self.polled_at]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> TxnRead:
        return cls(str(v[0]), str(v[1]), int(v[2]), int(v[3]), str(v[4]), float(v[5]))


@dataclass(frozen=True)
class ReadBack:
    """The final read-back of one partition, after healing: a ``read_committed`` consumer
    assigned to it read every record from the log start ``start`` up to ``end`` (exclusive; the
    last stable offset when the read began, which after every transaction ended is the high
    watermark), finishing at ``at``. ``records``: ``(offset, key)`` in offset order."""

    topic: str
    partition: int
    start: int
    end: int
    at: float
    records: tuple[tuple[int, str], ...] = ()

    def to_list(self) -> list[Any]:
        return [self.topic, self.partition, self.start, self.end, self.at, [[o, k] for o, k in self.records]]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> ReadBack:
        return cls(str(v[0]), int(v[1]), int(v[2]), int(v[3]), float(v[4]),
                   tuple((int(r[0]), str(r[1])) for r in v[5]))


@dataclass(frozen=True)
class TxnHistory:
    """Everything the transactional workload recorded over a run.

    ``resets``: a consumer's positions were (re)established on every partition it reads
    (:class:`scenarios.clients.ops.ConsumerReset`: assigned, revoked, lost; a seek, such as a
    copier rewinding to its group's committed offsets after an abort, is a reset too; a
    consumer whose position moved without one is judged as reading on). ``readback``: None
    when the final read-back did not happen (then the checks that need it are not judged).
    ``group_offsets``: the committed offsets of the read-process-write groups read after the
    run (every partition a transaction sent offsets for; a missing one has none committed), or
    None when not read."""

    txns: tuple[Txn, ...] = ()
    consumers: tuple[TxnConsumer, ...] = ()
    reads: tuple[TxnRead, ...] = ()
    resets: tuple[ConsumerReset, ...] = ()
    readback: tuple[ReadBack, ...] | None = None
    group_offsets: tuple[TxnOffset, ...] | None = None

    def isolation_of(self) -> dict[str, str]:
        """Consumer name -> isolation level (the read-back reads committed)."""
        levels = {c.name: c.isolation for c in self.consumers}
        levels[READBACK] = READ_COMMITTED
        return levels

    @classmethod
    def merged(cls, parts: Sequence[TxnHistory]) -> TxnHistory:
        """One history of consecutive stretches (each step's cut, then the scenario's end): their
        transactions, reads and resets in order, every consumer declared once (the first
        declaration of a name wins), the last read-back and group offsets given."""
        consumers: dict[str, TxnConsumer] = {}
        for part in parts:
            for c in part.consumers:
                consumers.setdefault(c.name, c)
        readback = next((p.readback for p in reversed(parts) if p.readback is not None), None)
        group_offsets = next((p.group_offsets for p in reversed(parts) if p.group_offsets is not None), None)
        return cls(tuple(t for p in parts for t in p.txns), tuple(consumers.values()),
                   tuple(r for p in parts for r in p.reads), tuple(r for p in parts for r in p.resets),
                   readback, group_offsets)

    def to_dict(self) -> dict[str, Any]:
        return {"txns": [t.to_list() for t in self.txns], "consumers": [c.to_list() for c in self.consumers],
                "reads": [r.to_list() for r in self.reads], "resets": [r.to_list() for r in self.resets],
                "readback": None if self.readback is None else [r.to_list() for r in self.readback],
                "group_offsets": None if self.group_offsets is None else [o.to_list() for o in self.group_offsets]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TxnHistory:
        readback = d.get("readback")
        group_offsets = d.get("group_offsets")
        return cls(tuple(Txn.from_list(t) for t in d.get("txns", ())),
                   tuple(TxnConsumer.from_list(c) for c in d.get("consumers", ())),
                   tuple(TxnRead.from_list(r) for r in d.get("reads", ())),
                   tuple(ConsumerReset.from_list(r) for r in d.get("resets", ())),
                   None if readback is None else tuple(ReadBack.from_list(r) for r in readback),
                   None if group_offsets is None else tuple(TxnOffset.from_list(o) for o in group_offsets))

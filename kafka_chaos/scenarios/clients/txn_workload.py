"""The transactional workload, librdkafka side (issue 43): confluent-kafka transactional producers,
a read-process-write copier and ``read_committed`` / ``read_uncommitted`` consumers over two
topics, recorded as :mod:`scenarios.clients.txn_ops` data for the transactional history checker
(:mod:`scenarios.checks.transactions`).

* **Producers** (``producers`` of them, each its own ``transactional.id`` and thread): a
  transaction of 2-4 messages over partitions of both topics (the first to the input topic,
  the second to the output topic, the rest anywhere; seeded), committed, or aborted one time in
  ``abort_every`` (seeded) — flushed first, so the aborted messages are in the log and only the
  abort markers keep them from a ``read_committed`` reader. Every attempt is one :class:`Txn` with the outcome the client saw
  (:func:`on_commit_error`, :func:`txn_outcome`): ``commit_transaction`` returned: committed;
  the commit was never called (a planned abort, a produce or ``send_offsets_to_transaction``
  that failed): aborted; the commit failed with an error that requires an abort, first time,
  and ``abort_transaction`` returned: aborted; anything else (a retriable commit error past
  :data:`COMMIT_RETRIES`, a fatal error, a fenced producer): unknown — and the instance is
  replaced by a new one of the same ``transactional.id``, whose ``init_transactions`` fences it
  (and completes or aborts what it left open).
* **The copier** (one read-process-write loop): consumes a batch of the input topic at
  ``read_committed`` as a member of its own group, then in one transaction produces each
  record's key to the output topic (input partition modulo the output's partitions) and sends
  the consumer's positions past the batch with ``send_offsets_to_transaction``; it aborts one
  time in ``abort_every`` (seeded), and after an abort or an unknown outcome it seeks back to
  its group's committed offsets (a reset of its reads) and processes the input again.
* **Readers**: ``rc`` (assign, ``read_committed``), ``ru`` (assign, ``read_uncommitted``) and
  ``rc_group`` (a group member, ``read_committed``, auto-commit), each over every partition of
  both topics from the beginning.

Every key is unique per topic (``<run>-<producer>-<seq>-<n>``); the copier re-sends the input's
keys to the output topic. What happened is taken out in stretches (:meth:`TxnWorkload.cut`):
each step stores what was recorded since the previous cut, so a run's stretches hold every
transaction and read once. After healing, :meth:`TxnWorkload.fence` gives each
``transactional.id`` one more ``init_transactions`` (nothing may stay open: the last stable
offset must reach the high watermark), then :meth:`TxnWorkload.read_back` reads both topics at
``read_committed`` from the log start and :meth:`TxnWorkload.group_offsets` the copier's
group's committed offsets.

Producer ids and epochs are librdkafka's own account (``debug=eos``, "Acquired PID{...}",
:func:`scenarios.clients.producer_log.producer_ids_given`), taken for each transaction from the
instance that ran it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.scenarios.clients.debug_ring import DebugRing
from kafka_chaos.scenarios.clients.ops import ConsumerReset
from kafka_chaos.scenarios.clients.producer_log import ACQUIRED_PID, ProducerIdGiven, producer_ids_given
from kafka_chaos.scenarios.clients.txn_ops import (
    ABORTED,
    COMMITTED,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    UNKNOWN,
    ReadBack,
    Txn,
    TxnConsumer,
    TxnHistory,
    TxnOffset,
    TxnRead,
    TxnSend,
)
from kafka_chaos.scenarios.model.codecs import COMPRESSIONS, compression_problem
from kafka_chaos.scenarios.model.held_txn import HeldTransaction

log = logging.getLogger(__name__)
T = TypeVar("T")

# What to do after commit_transaction (or abort_transaction) raised.
RETRY, ABORT, GIVE_UP = "retry", "abort", "give_up"
COMMIT_RETRIES = 3  # a retriable commit error (a timeout: the commit goes on in the background) is retried this often
ABORT_RETRIES = 3
_COMMIT_TIMEOUT_S = 15.0
_INIT_TIMEOUT_S = 20.0
_OFFSETS_TIMEOUT_S = 10.0
# The coordinator aborts a transaction open longer than this; librdkafka's message.timeout.ms
# may not exceed it. Long enough for a leader's failover (6 s session) and a commit's retries.
_TRANSACTION_TIMEOUT_MS = 30_000
_SOCKET_TIMEOUT_MS = 10_000
_PACE_S = 0.15  # between a producer's transactions
# A thread ends its transaction first: commits, retries, a new instance. A transactional call
# that outlives its own timeout (librdkafka#5456) is given up after _HANG_MARGIN_S more and its
# instance fenced (call_bounded, _TxnClient.fence_stuck), so no attempt outlasts this grace.
_STOP_GRACE_S = 90.0
# Past a transactional call's own timeout before it is taken for hung: librdkafka ends a call at
# its timeout (a retriable _TIMED_OUT) except when its coordinator request is never timed out,
# confluentinc/librdkafka#5456 (rd_kafka_txn_op_req0 in an untimed cnd_wait, docs/transactions.md).
_HANG_MARGIN_S = 10.0
# How long the copier waits for a fenced instance's stuck call to return before it goes on: the
# call may stay blocked long after the fence (the stuck instance learns of it only from a reply to
# a request of its own), and is then closed by the late hook (_TxnClient._closed_late).
_REAP_S = 5.0
_CLOSE_S = 10.0
HUNG = "_HUNG"  # the error recorded for a call given up as hung (librdkafka's local errors' style)
_POLL_S = 0.2
_BATCH = 200
_COPY_BATCH = 20
_REWIND_RETRY_S = 0.5  # between the copier's asks for its group's committed offsets
_DEBUG_LINES = 20_000

RC, RU, RC_GROUP, COPIER = "rc", "ru", "rc_group", "copier"


class TxnWorkloadError(HarnessError):
    """The transactional workload could not run or could not read its topics back (one line)."""


# --- outcomes: what the client saw (pure) --------------------------------------------------------

def on_commit_error(err: KafkaError, failed_before: int, retries: int = COMMIT_RETRIES) -> str:
    """What to do after ``commit_transaction`` raised ``err``, ``failed_before`` earlier attempts
    of this commit having failed: :data:`GIVE_UP` on a fatal error (a fenced producer among
    them), :data:`ABORT` when the error requires an abort (``txn_requires_abort``),
    :data:`RETRY` a retriable one (a timeout: the commit goes on in the background) while
    attempts are left, else :data:`GIVE_UP`."""
    if err.fatal():
        return GIVE_UP
    if err.txn_requires_abort():
        return ABORT
    if err.retriable() and failed_before < retries:
        return RETRY
    return GIVE_UP


def on_abort_error(err: KafkaError, failed_before: int, retries: int = ABORT_RETRIES) -> str:
    """After ``abort_transaction`` raised: :data:`RETRY` a retriable, non-fatal error while
    attempts are left, else :data:`GIVE_UP` (the instance is replaced)."""
    return RETRY if err.retriable() and not err.fatal() and failed_before < retries else GIVE_UP


def txn_outcome(commit_called: bool, committed: bool, aborted: bool, commit_errors: Sequence[str] = (),
                hung: bool = False) -> str:
    """The outcome the client saw (:data:`scenarios.clients.txn_ops.OUTCOMES`): committed when
    ``commit_transaction`` returned; unknown when a call of the attempt ``hung`` (never returned
    within its timeout and :data:`_HANG_MARGIN_S`: the client never saw the attempt end, and its
    instance is fenced by the next one's ``init_transactions``, which completes a commit the
    coordinator had prepared and aborts anything else); aborted when the commit was never called
    (a transaction commits only by its EndTxn(commit)), or when ``abort_transaction`` returned
    after the commit's first and only failure required the abort (librdkafka raises it before or
    instead of the EndTxn); unknown otherwise — a commit that failed retriably may have gone on
    in the background."""
    if committed:
        return COMMITTED
    if hung:
        return UNKNOWN
    if not commit_called:
        return ABORTED
    return ABORTED if aborted and len(commit_errors) == 1 else UNKNOWN


def error_name(exc: BaseException) -> str:
    """A KafkaException's error name (``_TIMED_OUT``, ``PRODUCER_FENCED``), else the type's."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return err.name() if isinstance(err, KafkaError) else type(exc).__name__


def kafka_error(exc: KafkaException) -> KafkaError:
    err = exc.args[0] if exc.args else None
    return err if isinstance(err, KafkaError) else KafkaError(KafkaError._FAIL, str(exc))


# --- a call that may hang (librdkafka#5456) ------------------------------------------------------

def hang_bound(timeout_s: float, margin_s: float = _HANG_MARGIN_S) -> float:
    """How long a transactional call given ``timeout_s`` runs before it is taken for hung."""
    return timeout_s + margin_s


def hung_error(call: str) -> str:
    """The error an attempt records for a call given up as hung (``send_offsets_to_transaction:_HUNG``)."""
    return f"{call}:{HUNG}"


@dataclass
class _Returned:
    """What a call run by :func:`call_bounded` returned or raised, once it ``ended``; ``given_up``:
    the caller stopped waiting first."""

    value: Any = None
    error: BaseException | None = None
    ended: bool = False
    given_up: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class CallHung(Exception):
    """A call that did not return within its bound; it goes on in ``thread`` (its result in
    ``returned`` once the thread ends)."""

    def __init__(self, call: str, bound_s: float, thread: threading.Thread, returned: _Returned) -> None:
        super().__init__(f"{call} did not return within {bound_s:g} s")
        self.call = call
        self.bound_s = bound_s
        self.thread = thread
        self.returned = returned

    @property
    def error(self) -> str:
        return hung_error(self.call)

    def result(self) -> str:
        """How the call ended: "still running", "returned" or the error's name."""
        with self.returned.lock:
            if not self.returned.ended:
                return "still running"
        return "returned" if self.returned.error is None else error_name(self.returned.error)


def call_bounded(call: str, fn: Callable[[], T], bound_s: float, late: Callable[[CallHung], None] | None = None) -> T:
    """``fn()`` run on a thread of its own, its result or exception handed back when it ends within
    ``bound_s``; :class:`CallHung` otherwise: the thread is left to end (a daemon thread), and
    runs ``late`` (on that thread) if it ever does — the caller's clean-up of what it gave up."""
    returned = _Returned()
    hung: list[CallHung] = []

    def run() -> None:
        try:
            returned.value = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            returned.error = exc
        with returned.lock:
            returned.ended = True
            given_up = returned.given_up
        if given_up and late is not None:
            try:
                late(hung[0])
            except Exception:  # noqa: BLE001 - nobody waits for this thread: said here
                log.exception("cleaning up after %s", call)

    thread = threading.Thread(target=run, name=f"txn-call-{call}", daemon=True)
    hung.append(CallHung(call, bound_s, thread, returned))
    thread.start()
    thread.join(bound_s)
    with returned.lock:
        returned.given_up = not returned.ended
    if returned.given_up:
        raise hung[0]
    if returned.error is not None:
        raise returned.error
    return cast(T, returned.value)


# --- one transactional.id ------------------------------------------------------------------------

@dataclass
class _Send:
    topic: str
    partition: int
    key: str
    offset: int | None = None

    def frozen(self) -> TxnSend:
        return TxnSend(self.topic, self.partition, self.key, self.offset)


@dataclass
class _Hold:
    """A request to hold one transaction open past ``timeout_ms`` (``TxnWorkload.hold_past_timeout``)."""

    timeout_ms: int
    hold_s: float
    done: threading.Event
    txn: Txn | None = None

    def settings(self) -> dict[str, Any]:
        """The held instance's: librdkafka wants ``message.timeout.ms`` and ``socket.timeout.ms``
        no longer than ``transaction.timeout.ms`` (+100 ms for the socket's)."""
        return {"transaction.timeout.ms": self.timeout_ms, "message.timeout.ms": self.timeout_ms,
                "socket.timeout.ms": min(_SOCKET_TIMEOUT_MS, self.timeout_ms)}


def new_producer(config: dict[str, Any], logger: logging.Logger) -> Producer:
    return Producer(config, logger=logger)


@dataclass
class _Stuck:
    """An instance whose call hung, fenced by a newer instance of its transactional.id: once the
    call returns (with the fence's error) it is closed and dropped, never called again."""

    producer: Producer
    hung: CallHung


class _TxnClient:
    """One ``transactional.id``: its current producer instance (made and initialised on
    demand, replaced after a fatal error or an unknown outcome) and its attempts' numbering.
    Every transactional call runs through :func:`call_bounded` (``bound``: a call's timeout to
    the time it may take); one that hangs makes the attempt unknown and its instance fenced
    (:meth:`fence_stuck`)."""

    def __init__(self, bootstrap: str, txn_id: str, client_id: str, stopping: threading.Event, *,
                 make: Callable[[dict[str, Any], logging.Logger], Producer] = new_producer,
                 bound: Callable[[float], float] = hang_bound, wait_stuck_s: float = _REAP_S,
                 compression: str = COMPRESSIONS[0]) -> None:
        self.txn_id = txn_id
        self.stopping = stopping
        self.config: dict[str, Any] = {
            "bootstrap.servers": bootstrap, "client.id": client_id, "transactional.id": txn_id,
            "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "transaction.timeout.ms": _TRANSACTION_TIMEOUT_MS, "message.timeout.ms": _TRANSACTION_TIMEOUT_MS,
            "socket.timeout.ms": _SOCKET_TIMEOUT_MS, "reconnect.backoff.max.ms": 1_000,
            # librdkafka's batch codec (CONFIGURATION.md: none, gzip, snappy, lz4, zstd); every
            # instance of this transactional id, a held transaction's too, compresses alike
            "compression.type": compression,
        }
        self.ring = DebugRing(f"{__name__}.librdkafka.{txn_id}", _DEBUG_LINES, keep=(ACQUIRED_PID,))
        self.producer: Producer | None = None
        self.override: dict[str, Any] = {}  # a held transaction's instance: its own timeouts
        self.instances = 0
        self.made_at = 0.0
        self.seq = 0
        self.make = make
        self.bound = bound
        self.wait_stuck_s = wait_stuck_s
        self._stuck_lock = threading.Lock()
        self._stuck: list[_Stuck] = []
        self.hangs = 0

    def _call(self, producer: Producer, call: str, fn: Callable[[], T], timeout_s: float) -> T:
        """``fn``, a call of ``producer`` given ``timeout_s``, bounded: :class:`CallHung` past
        ``bound(timeout_s)``; the instance is closed if the call returns after that."""
        return call_bounded(call, fn, self.bound(timeout_s), late=lambda hung: self._closed_late(producer, hung))

    def _closed_late(self, producer: Producer, hung: CallHung) -> None:
        """A call given up as hung has returned (on its own thread): one last poll for its
        attempt's delivery reports, then the instance is closed and forgotten."""
        log.info("%s: the stuck %s returned: %s; its instance closed", self.txn_id, hung.call, hung.result())
        try:
            producer.poll(0)
        except KafkaException as exc:  # fenced: a fatal error, raised again by every call
            log.debug("%s: poll: %s", self.txn_id, kafka_error(exc).str())
        try:
            call_bounded("close", producer.close, _CLOSE_S)
        except CallHung:
            log.warning("%s: closing a fenced instance did not return within %.0f s", self.txn_id, _CLOSE_S)
        except KafkaException as exc:
            log.info("%s: closing a fenced instance: %s", self.txn_id, kafka_error(exc).str())
        with self._stuck_lock:
            self._stuck = [s for s in self._stuck if s.hung.thread is not hung.thread]

    def ready(self) -> Producer | None:
        """The current instance, made and ``init_transactions``-ed if need be (retried until it
        works or the workload stops: None). Its ``init_transactions`` fences every earlier
        instance of the transactional.id, a stuck one among them."""
        while self.producer is None and not self.stopping.is_set():
            self.made_at = time.time()
            producer = self.make({**self.config, **self.override, "debug": "eos", "log_level": 7,
                                  "error_cb": lambda err: log.debug("%s: %s", self.txn_id, err)}, self.ring.logger)
            self.instances += 1
            try:
                self._call(producer, "init_transactions", lambda: producer.init_transactions(_INIT_TIMEOUT_S),
                           _INIT_TIMEOUT_S)
                self.producer = producer
            except CallHung as hung:  # the next instance's init_transactions fences this one
                self._hung(producer, hung)
            except KafkaException as exc:
                log.info("%s: init_transactions: %s", self.txn_id, kafka_error(exc).str())
                self.stopping.wait(1.0)
        return self.producer

    def _hung(self, producer: Producer, hung: CallHung) -> None:
        """Say it once, keep the stuck instance to close when its call returns, drop it as current."""
        self.hangs += 1
        log.warning("%s: %s did not return within %g s, past its own timeout: librdkafka#5456 (an untimed wait "
                    "once a coordinator it needs is gone); an attempt under way is recorded unknown and a new "
                    "instance of the transactional.id fences the stuck one", self.txn_id, hung.call, hung.bound_s)
        with self._stuck_lock:
            self._stuck.append(_Stuck(producer, hung))
        if self.producer is producer:
            self.replace()

    def fence_stuck(self, producer: Producer, hung: CallHung) -> None:
        """After ``producer``'s call hung: a new instance of the transactional.id, whose
        ``init_transactions`` fences the stuck one (the coordinator bumps the epoch, completing
        a prepared commit and aborting anything else: ``TransactionCoordinator.handleInitProducerId``;
        the brokers refuse the old epoch's writes from then on); when the workload is stopping,
        one fencing instance (:meth:`fence`). The stuck call returns with the fence's error once
        its instance hears of it; up to ``wait_stuck_s`` is waited for that (its attempt's
        delivery reports), then the copier goes on and the call's thread closes the instance
        whenever it returns (:meth:`_closed_late`)."""
        self._hung(producer, hung)
        if self.ready() is None:
            self.fence()
        self.still_stuck(self.wait_stuck_s)

    def still_stuck(self, timeout_s: float) -> list[str]:
        """The calls given up as hung that have not returned yet, after waiting up to
        ``timeout_s`` for them."""
        deadline = time.monotonic() + timeout_s
        with self._stuck_lock:
            stuck = list(self._stuck)
        for s in stuck:
            s.hung.thread.join(max(0.0, deadline - time.monotonic()))
        return [s.hung.call for s in stuck if s.hung.result() == "still running"]

    def replace(self) -> None:
        """Drop the instance: the next :meth:`ready` makes one of the same transactional.id."""
        self.producer = None

    def ids(self, until: float) -> ProducerIdGiven | None:
        """The producer id and epoch the current instance held at ``until``, as it logged them."""
        given = [g for g in producer_ids_given(self.ring.kept_lines()) if self.made_at - 1.0 <= g.at <= until]
        return given[-1] if given else None

    def transact(self, plan: Callable[[Producer, list[_Send]], list[TxnOffset]], abort: bool,
                 group_metadata: Any = None, hold: _Hold | None = None) -> Txn | None:
        """One transaction attempt: begin, ``plan`` produces (into the list it is given) and
        returns the offsets to send, then commit, or abort when ``abort``. None when no
        transaction began (no instance, or ``begin_transaction`` failed). With ``hold``: on a
        new instance with the hold's ``transaction.timeout.ms``, the sends flushed and the
        transaction held open ``hold.hold_s`` before the commit (the next attempt gets a new
        instance with the usual settings)."""
        if hold is not None:
            self.replace()
            self.override = hold.settings()
        try:
            return self._transact(plan, abort, group_metadata, hold)
        finally:
            if hold is not None:
                self.override = {}
                self.replace()

    def _transact(self, plan: Callable[[Producer, list[_Send]], list[TxnOffset]], abort: bool,
                  group_metadata: Any, hold: _Hold | None) -> Txn | None:
        producer = self.ready()
        if producer is None:
            return None
        began = time.time()
        try:
            self._call(producer, "begin_transaction", producer.begin_transaction, 0.0)
        except CallHung as stuck:  # nothing sent yet: no attempt to record
            self.fence_stuck(producer, stuck)
            return None
        except KafkaException as exc:
            log.info("%s: begin_transaction: %s", self.txn_id, kafka_error(exc).str())
            self.replace()
            return None
        seq, self.seq = self.seq, self.seq + 1
        sends: list[_Send] = []
        offsets: list[TxnOffset] = []
        errors: list[str] = []
        commit_errors: list[str] = []
        committing_at = None
        committed = aborted = replace = False
        hung: CallHung | None = None
        held_ms = None
        try:
            offsets = plan(producer, sends)
            if abort or hold is not None:  # written to the log before the abort: its markers, not a purge, make it invisible
                producer.flush(_COMMIT_TIMEOUT_S)
            if hold is not None:
                acked = time.time()
                self.stopping.wait(hold.hold_s)
                held_ms = int((time.time() - acked) * 1000)
            if offsets:
                tps = [TopicPartition(o.topic, o.partition, o.offset) for o in offsets]
                self._call(producer, "send_offsets_to_transaction",
                           lambda: producer.send_offsets_to_transaction(tps, group_metadata, _OFFSETS_TIMEOUT_S),
                           _OFFSETS_TIMEOUT_S)
        except CallHung as exc:  # neither commit nor abort: the stuck instance is fenced below
            hung = exc
            errors.append(exc.error)
        except KafkaException as exc:
            errors.append(error_name(exc))
            abort = True
            replace = kafka_error(exc).fatal()
        if not abort and hung is None:
            committing_at = time.time()
            while True:
                try:
                    self._call(producer, "commit_transaction", lambda: producer.commit_transaction(_COMMIT_TIMEOUT_S),
                               _COMMIT_TIMEOUT_S)
                    committed = True
                    break
                except CallHung as exc:
                    hung = exc
                    commit_errors.append(exc.error)
                    break
                except KafkaException as exc:
                    err = kafka_error(exc)
                    commit_errors.append(err.name())
                    action = on_commit_error(err, len(commit_errors) - 1)
                    if action == RETRY:
                        continue
                    abort = action == ABORT
                    replace = action == GIVE_UP
                    break
        if abort and not replace and hung is None:
            try:
                aborted = self._abort(producer, errors)
            except CallHung as exc:
                hung = exc
                errors.append(exc.error)
            replace = not aborted
        if hung is None:
            try:
                producer.poll(0)  # the delivery reports of this attempt's sends
            except KafkaException as exc:  # a fatal error (fenced) is raised again by every call: replaced below
                log.info("%s: poll: %s", self.txn_id, kafka_error(exc).str())
        outcome = txn_outcome(committing_at is not None, committed, aborted, commit_errors, hung is not None)
        if outcome == UNKNOWN:
            replace = True
        ended = time.time()
        given = self.ids(ended)
        if hung is not None:  # its sends' offsets come with the stuck instance's last poll
            self.fence_stuck(producer, hung)
        elif replace:
            self.replace()
        everything = commit_errors + errors
        return Txn(self.txn_id, seq, outcome, tuple(s.frozen() for s in sends), tuple(offsets),
                   "/".join(everything) if everything and outcome != COMMITTED else None,
                   given.producer_id if given else None, given.epoch if given else None,
                   began, committing_at, ended, hold.timeout_ms if hold is not None else None, held_ms)

    def _abort(self, producer: Producer, errors: list[str]) -> bool:
        """``abort_transaction``, retried by :func:`on_abort_error`: whether it returned.
        :class:`CallHung` propagates."""
        failed = 0
        while True:
            try:
                self._call(producer, "abort_transaction", lambda: producer.abort_transaction(_COMMIT_TIMEOUT_S),
                           _COMMIT_TIMEOUT_S)
                return True
            except KafkaException as exc:
                err = kafka_error(exc)
                errors.append(f"abort:{err.name()}")
                if on_abort_error(err, failed) != RETRY:
                    return False
                failed += 1

    def fence(self) -> bool:
        """One more instance of this transactional.id, initialised and dropped: whatever an
        earlier instance left open is completed or aborted by the coordinator, and a stuck
        instance's call returns once the instance hears of it (then it is closed: :meth:`_closed_late`)."""
        producer = self.make({**self.config, "client.id": f"{self.config['client.id']}-fence", "log_level": 2},
                             logging.getLogger(f"{__name__}.librdkafka"))
        try:
            self._call(producer, "init_transactions", lambda: producer.init_transactions(_INIT_TIMEOUT_S),
                       _INIT_TIMEOUT_S)
            return True
        except CallHung as hung:
            log.warning("%s: fencing init_transactions: %s", self.txn_id, hung)
            return False
        except KafkaException as exc:
            log.warning("%s: fencing init_transactions: %s", self.txn_id, kafka_error(exc).str())
            return False


def produce(producer: Producer, sends: list[_Send], topic: str, partition: int, key: str) -> None:
    """Produce one message of the transaction, its offset filled in by its delivery report; a
    full local queue is waited out (bounded), a KafkaException propagates (the transaction aborts)."""
    send = _Send(topic, partition, key)

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is None:
            send.offset = msg.offset()

    for _ in range(100):
        try:
            producer.produce(topic, key=key, value=key.encode(), partition=partition, on_delivery=delivered)
            sends.append(send)
            return
        except BufferError:
            producer.poll(0.1)
    raise KafkaException(KafkaError(KafkaError._QUEUE_FULL, "local queue full"))


# --- the workload --------------------------------------------------------------------------------

class TxnWorkload:
    """Transactional producers, the copier and the readers over ``in_topic`` and ``out_topic``;
    thread-safe accessors of what they recorded. ``seed``: the seeded choices' root (the same
    seed, the same choices of partitions, sizes and aborts)."""

    def __init__(self, bootstrap: str, in_topic: str, in_partitions: Sequence[int], out_topic: str,
                 out_partitions: Sequence[int], *, seed: str, client_id: str, producers: int = 2,
                 abort_every: int = 5, pace_s: float = _PACE_S, compression: str = COMPRESSIONS[0]) -> None:
        if not in_partitions or not out_partitions or producers < 1 or abort_every < 1:
            raise TxnWorkloadError(f"transactional workload on {in_topic}, {out_topic}: nothing to do")
        problem = compression_problem(compression)
        if problem is not None:
            raise TxnWorkloadError(f"transactional workload compression {problem}")
        self.compression = compression
        self.bootstrap = bootstrap
        self.in_topic, self.out_topic = in_topic, out_topic
        self.in_partitions, self.out_partitions = tuple(in_partitions), tuple(out_partitions)
        self.seed = seed
        self.client_id = client_id
        self.run_id = uuid.uuid4().hex[:8]
        self.abort_every = abort_every
        self.pace_s = pace_s
        self.copier_group = f"{client_id}-copier-{self.run_id}"
        self.reader_group = f"{client_id}-rc-group-{self.run_id}"
        self._writing = threading.Event()  # set: the writers stop
        self._reading = threading.Event()  # set: the readers stop
        self.clients = [_TxnClient(bootstrap, f"{client_id}-{self.run_id}-p{i}", f"{client_id}-txn-p{i}", self._writing,
                                   compression=compression)
                        for i in range(producers)]
        self.copier = _TxnClient(bootstrap, f"{client_id}-{self.run_id}-copier", f"{client_id}-txn-copier",
                                 self._writing, compression=compression)
        self.consumers = (TxnConsumer(RC, READ_COMMITTED), TxnConsumer(RU, READ_UNCOMMITTED),
                          TxnConsumer(RC_GROUP, READ_COMMITTED, self.reader_group),
                          TxnConsumer(COPIER, READ_COMMITTED, self.copier_group))
        self._lock = threading.Condition()
        self._txns: list[Txn] = []
        self._reads: list[TxnRead] = []
        self._resets: list[ConsumerReset] = []
        self._cut = (0, 0, 0)
        self._writers: list[threading.Thread] = []
        self._readers: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._holds: dict[int, _Hold] = {}  # producer index -> its next transaction held open

    @property
    def topics(self) -> dict[str, tuple[int, ...]]:
        return {self.in_topic: self.in_partitions, self.out_topic: self.out_partitions}

    @property
    def transactional_ids(self) -> dict[str, str]:
        """Each transactional id by the role a schedule names it with (``p0``, ``p1``, ...,
        ``copier``): the ids carry the run's random part, so that a reused cluster's
        ``__transaction_state`` never holds an earlier run's state for them."""
        return {**{f"p{i}": c.txn_id for i, c in enumerate(self.clients)}, COPIER: self.copier.txn_id}

    @property
    def groups(self) -> dict[str, str]:
        """The consumer groups by role: the copier's and ``rc_group``'s."""
        return {COPIER: self.copier_group, RC_GROUP: self.reader_group}

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._writers or self._readers:
            raise TxnWorkloadError("the transactional workload is already running")
        for name in (RC, RU, RC_GROUP):
            self._readers.append(self._thread(f"txn-reader-{name}", self._read, name))
        for i, client in enumerate(self.clients):
            self._writers.append(self._thread(f"txn-producer-{i}", self._produce, client, i))
        self._writers.append(self._thread("txn-copier", self._copy))
        log.info("transactional workload %s: %d producers and a copier on %s -> %s (compression %s)", self.run_id,
                 len(self.clients), self.in_topic, self.out_topic, self.compression)

    def _thread(self, name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:  # noqa: BLE001 - kept and re-raised by stop_*
                log.exception("transactional workload thread %s failed", name)
                with self._lock:
                    self._errors.append(exc)
                    self._lock.notify_all()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        return thread

    def wait_for_commits(self, timeout: float) -> list[str]:
        """Wait (bounded) until every producer and the copier committed a transaction; the
        transactional ids that did not."""
        return self._wait_for_each([*self.clients, self.copier], lambda t: t.outcome == COMMITTED, timeout)

    def wait_for_attempts(self, since: float, timeout: float) -> list[str]:
        """Wait (bounded) until every producer ended a transaction attempt it began at or after
        ``since`` (epoch seconds), so that a step's window holds each one's attempts in the state
        the step left; the transactional ids that did not. Not the copier: it begins one only
        with records to copy, after its group's rebalance when a fault moved its coordinator."""
        return self._wait_for_each(self.clients, lambda t: t.began_at is not None and t.began_at >= since, timeout)

    def _wait_for_each(self, writers: Sequence[_TxnClient], counts: Callable[[Txn], bool],
                       timeout: float) -> list[str]:
        ids = [c.txn_id for c in writers]

        def missing() -> list[str]:
            done = {t.txn_id for t in self._txns if counts(t)}
            return [i for i in ids if i not in done]

        with self._lock:
            self._lock.wait_for(lambda: not missing() or bool(self._errors), timeout=timeout)
            return missing()

    def stop_writers(self) -> None:
        """Stop the producers and the copier: each ends its transaction first (bounded)."""
        self._writing.set()
        self._join(self._writers)
        self._writers = []

    def stop_readers(self) -> None:
        self._reading.set()
        self._join(self._readers)
        self._readers = []

    def _join(self, threads: Sequence[threading.Thread]) -> None:
        deadline = time.monotonic() + _STOP_GRACE_S
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                raise TxnWorkloadError(f"{thread.name} still running {_STOP_GRACE_S:.0f} s after stop")
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise TxnWorkloadError(f"transactional workload failed: {type(errors[0]).__name__}: {errors[0]}") \
                from errors[0]

    def fence(self) -> list[str]:
        """Every transactional.id initialised once more (writers stopped): nothing stays open.
        The ids that could not be. A call still stuck after its fence (librdkafka#5456) is said:
        its instance is fenced (the brokers refuse its writes) and is closed if it returns."""
        unfenced = [c.txn_id for c in [*self.clients, self.copier] if not c.fence()]
        for c in [*self.clients, self.copier]:
            stuck = c.still_stuck(c.wait_stuck_s)
            if stuck:
                log.warning("%s: %s still blocked after the fence (librdkafka#5456); its instance is fenced and is "
                            "closed if the call returns", c.txn_id, ", ".join(stuck))
        return unfenced

    # -- what was recorded --------------------------------------------------------------------

    def _record(self, txn: Txn | None = None, reads: Sequence[TxnRead] = (), reset: ConsumerReset | None = None) -> None:
        with self._lock:
            if txn is not None:
                self._txns.append(txn)
            self._reads.extend(reads)
            if reset is not None:
                self._resets.append(reset)
            self._lock.notify_all()

    def cut(self, readback: Sequence[ReadBack] | None = None,
            group_offsets: Sequence[TxnOffset] | None = None) -> TxnHistory:
        """What was recorded since the previous cut (consecutive cuts hold everything once),
        with the final read-back and group offsets when given."""
        with self._lock:
            t0, r0, s0 = self._cut
            part = TxnHistory(tuple(self._txns[t0:]), self.consumers, tuple(self._reads[r0:]),
                              tuple(self._resets[s0:]), None if readback is None else tuple(readback),
                              None if group_offsets is None else tuple(group_offsets))
            self._cut = (len(self._txns), len(self._reads), len(self._resets))
        return part

    def counts(self) -> dict[str, int]:
        with self._lock:
            out = {o: sum(1 for t in self._txns if t.outcome == o) for o in (COMMITTED, ABORTED, UNKNOWN)}
            out["reads"] = len(self._reads)
        return out

    def debug_lines(self) -> dict[str, list[str]]:
        """Each transactional.id's librdkafka lines (the last ``_DEBUG_LINES``)."""
        return {c.txn_id: c.ring.lines() for c in [*self.clients, self.copier]}

    # -- a transaction held past its timeout (scenarios.faults.txn_timeout) ----------------------

    def hold_past_timeout(self, role: str, timeout_ms: int, hold_s: float) -> HeldTransaction:
        """Producer ``role``'s next transaction on an instance with ``transaction.timeout.ms``
        ``timeout_ms``, held open ``hold_s`` before its commit; the attempt as recorded.
        :class:`TxnWorkloadError` when the role is no producer, or no transaction began in time."""
        index = next((i for i, c in enumerate(self.clients) if f"p{i}" == role), None)
        if index is None:
            raise TxnWorkloadError(f"no transactional producer {role!r} (producers: "
                                   f"{[f'p{i}' for i in range(len(self.clients))]})")
        hold = _Hold(timeout_ms, hold_s, threading.Event())
        with self._lock:
            self._holds[index] = hold
        bound = hold_s + _INIT_TIMEOUT_S + (COMMIT_RETRIES + ABORT_RETRIES + 2) * _COMMIT_TIMEOUT_S
        if not hold.done.wait(bound):
            raise TxnWorkloadError(f"producer {role}: no held transaction ended within {bound:.0f} s")
        t = hold.txn
        if t is None:
            raise TxnWorkloadError(f"producer {role}: the held transaction never began")
        return HeldTransaction(t.name, t.outcome, t.error, timeout_ms, t.held_ms)

    def _take_hold(self, index: int) -> _Hold | None:
        with self._lock:
            return self._holds.pop(index, None)

    # -- producers ----------------------------------------------------------------------------

    def _produce(self, client: _TxnClient, index: int) -> None:
        rng = random.Random(f"{self.seed}:txn-producer-{index}")
        choices = [(self.in_topic, p) for p in self.in_partitions] + [(self.out_topic, p) for p in self.out_partitions]
        while not self._writing.is_set():
            size = rng.randint(2, 4)
            where = [(self.in_topic, rng.choice(self.in_partitions)), (self.out_topic, rng.choice(self.out_partitions))]
            where += [rng.choice(choices) for _ in range(size - 2)]
            abort = rng.randrange(self.abort_every) == 0
            seq = client.seq

            def plan(producer: Producer, sends: list[_Send]) -> list[TxnOffset]:
                for n, (topic, partition) in enumerate(where):
                    produce(producer, sends, topic, partition, f"{self.run_id}-p{index}-{seq}-{n}")
                return []

            hold = self._take_hold(index)
            txn = client.transact(plan, abort and hold is None, hold=hold)
            if txn is not None:
                self._record(txn)
            if hold is not None:
                hold.txn = txn
                hold.done.set()
            self._writing.wait(self.pace_s)

    # -- the copier ---------------------------------------------------------------------------

    def _copy(self) -> None:
        rng = random.Random(f"{self.seed}:txn-copier")
        consumer = Consumer(self._consumer_config(COPIER, READ_COMMITTED, self.copier_group, commit=False))
        try:
            consumer.subscribe([self.in_topic], on_assign=lambda c, tps: self._reset(COPIER, "assigned"),
                               on_revoke=lambda c, tps: self._reset(COPIER, "revoked"),
                               on_lost=lambda c, tps: self._reset(COPIER, "lost"))
            while not self._writing.is_set():
                batch = [m for m in consumer.consume(_COPY_BATCH, _POLL_S) if _readable(m)]
                if not batch:
                    continue
                now = time.time()
                self._record(reads=[_read_of(COPIER, m, now) for m in batch])
                positions: dict[int, int] = {}
                for m in batch:
                    positions[_partition(m)] = max(positions.get(_partition(m), 0), _offset(m) + 1)
                abort = rng.randrange(self.abort_every) == 0

                def plan(producer: Producer, sends: list[_Send]) -> list[TxnOffset]:
                    for m in batch:
                        p = self.out_partitions[_partition(m) % len(self.out_partitions)]
                        produce(producer, sends, self.out_topic, p, _key(m))
                    return [TxnOffset(self.copier_group, self.in_topic, p, o) for p, o in sorted(positions.items())]

                try:
                    metadata = consumer.consumer_group_metadata()
                except KafkaException as exc:
                    log.info("copier: no group metadata: %s", kafka_error(exc).str())
                    self._rewind(consumer, positions)
                    continue
                txn = None
                while txn is None and not self._writing.is_set():
                    txn = self.copier.transact(plan, abort, metadata)
                if txn is None:
                    break
                self._record(txn)
                if txn.outcome != COMMITTED:
                    self._rewind(consumer, positions)
        finally:
            consumer.close()

    def _rewind(self, consumer: Consumer, positions: Mapping[int, int]) -> None:
        """Back to the group's committed offsets on the partitions of an uncommitted batch (the
        log start where there is none): the input is processed again. A reset of the copier.
        Kafka's own copier does the same after an abort (``TransactionalMessageCopier.
        resetToLastCommittedPositions``, 3.6.1 tools line 233: ``consumer.committed`` then
        ``seek``); the offsets are the stable ones (:func:`committed_positions`)."""
        tps = [TopicPartition(self.in_topic, p) for p in sorted(positions)]
        committed = committed_positions(lambda: consumer.committed(tps, timeout=_OFFSETS_TIMEOUT_S), self._writing)
        if committed is None:  # stopping: the copy loop ends before it reads again
            return
        self._reset(COPIER, "seek")
        for tp in committed:
            try:
                consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
            except KafkaException as exc:  # no longer assigned (a rebalance): its new owner starts from the committed offset
                log.info("copier: seek %s-%d: %s", tp.topic, tp.partition, kafka_error(exc).str())

    # -- readers ------------------------------------------------------------------------------

    def _consumer_config(self, name: str, isolation: str, group: str | None, commit: bool) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap, "client.id": f"{self.client_id}-txn-{name}",
            "group.id": group or f"{self.client_id}-txn-{name}-{self.run_id}", "enable.auto.commit": commit,
            "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.partition.eof": False,
            "socket.timeout.ms": _SOCKET_TIMEOUT_MS, "reconnect.backoff.max.ms": 1_000,
            "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000, "auto.commit.interval.ms": 500,
            "log_level": 2, "logger": logging.getLogger(f"{__name__}.librdkafka"),
            "error_cb": lambda err: log.debug("txn consumer %s: %s", name, err),
        }

    def _reset(self, name: str, why: str) -> None:
        self._record(reset=ConsumerReset(name, time.time(), why))

    def _read(self, name: str) -> None:
        isolation = READ_UNCOMMITTED if name == RU else READ_COMMITTED
        group = self.reader_group if name == RC_GROUP else None
        consumer = Consumer(self._consumer_config(name, isolation, group, commit=name == RC_GROUP))
        try:
            if name == RC_GROUP:
                consumer.subscribe(list(self.topics), on_assign=lambda c, tps: self._reset(name, "assigned"),
                                   on_revoke=lambda c, tps: self._reset(name, "revoked"),
                                   on_lost=lambda c, tps: self._reset(name, "lost"))
            else:
                self._reset(name, "assigned")
                consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, ps in self.topics.items() for p in ps])
            while not self._reading.is_set():
                batch = consumer.consume(_BATCH, _POLL_S)
                now = time.time()
                reads = [_read_of(name, m, now) for m in batch if _readable(m)]
                if reads:
                    self._record(reads=reads)
        finally:
            consumer.close()

    # -- after healing ------------------------------------------------------------------------

    def read_back(self, timeout: float = 60.0) -> tuple[ReadBack, ...]:
        """Both topics read at ``read_committed`` from the log start to the end the leaders
        answer when the read begins (the last stable offset: after :meth:`fence`, the high
        watermark), by an assigned consumer. Raises :class:`TxnWorkloadError` when a partition
        cannot be read to its end within ``timeout``."""
        return read_committed_back(self.bootstrap, self.topics, client_id=f"{self.client_id}-txn-readback",
                                   timeout=timeout)

    def group_offsets(self, timeout: float = 15.0) -> tuple[TxnOffset, ...]:
        """The copier's group's committed offsets on the input topic (partitions without one left out)."""
        return committed_group_offsets(self.bootstrap, self.copier_group, self.in_topic, self.in_partitions,
                                       client_id=f"{self.client_id}-txn-offsets", timeout=timeout)


def committed_positions(fetch: Callable[[], list[TopicPartition]], stopping: threading.Event,
                        retry_s: float = _REWIND_RETRY_S) -> list[TopicPartition] | None:
    """What ``fetch`` (a read_committed consumer's ``committed()``) answers, asked again until it
    answers every partition without an error; None when ``stopping`` is set first. Never the log
    start for a partition it could not answer: the copier would copy that input a second time
    (a harness-made ``txn_duplicate``). A read_committed librdkafka consumer asks for stable
    offsets (KIP-447: ``rd_kafka_committed`` sets ``require_stable_offsets`` from
    ``isolation.level``, librdkafka v2.15.0 src/rdkafka.c lines 5409-5410; OffsetFetch v7+
    RequireStable, src/rdkafka_request.c line 1565) and retries UNSTABLE_OFFSET_COMMIT itself
    (``retry_unstable``, line 1381), which the group coordinator answers while a transactional
    offset commit of the partition awaits its marker (``GroupMetadataManager.getOffsets``, 3.6.1
    line 516) — so what comes back is what the group last committed, or an error."""
    while not stopping.is_set():
        try:
            got = fetch()
        except KafkaException as exc:
            log.info("copier: committed offsets: %s; asking again", kafka_error(exc).str())
        else:
            failed = [tp for tp in got if tp.error is not None]
            if not failed:
                return got
            log.info("copier: committed offsets: %s; asking again",
                     ", ".join(f"{tp.topic}-{tp.partition}: {tp.error}" for tp in failed))
        stopping.wait(retry_s)
    return None


def committed_group_offsets(bootstrap: str, group: str, topic: str, partitions: Sequence[int], *, client_id: str,
                            timeout: float = 15.0) -> tuple[TxnOffset, ...]:
    """``group``'s committed offsets on ``topic`` (partitions without one left out), read by a
    consumer of that group that never joins it. Raises :class:`TxnWorkloadError` when Kafka does
    not answer within ``timeout``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                         "enable.auto.commit": False, "isolation.level": READ_COMMITTED, "log_level": 2,
                         "logger": logging.getLogger(f"{__name__}.librdkafka")})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=timeout)
    except KafkaException as exc:
        raise TxnWorkloadError(f"the copier's committed offsets: {kafka_error(exc).str()}") from exc
    finally:
        consumer.close()
    return tuple(TxnOffset(group, tp.topic, tp.partition, tp.offset)
                 for tp in committed if tp.offset >= 0 and tp.error is None)


def read_committed_back(bootstrap: str, topics: Mapping[str, Sequence[int]], *, client_id: str,
                        timeout: float = 60.0, by_value: bool = False) -> tuple[ReadBack, ...]:
    """Every record of the partitions at ``read_committed``, from the log start to the end
    answered when the read begins (:class:`scenarios.clients.txn_ops.ReadBack`); each named by
    its key, or by its value with ``by_value`` (Kafka's Java test clients send no key)."""
    deadline = time.monotonic() + timeout
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "group.id": f"{client_id}-{uuid.uuid4().hex}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": READ_COMMITTED,
        "enable.partition.eof": True, "log_level": 2, "logger": logging.getLogger(f"{__name__}.librdkafka"),
    })
    try:
        marks: dict[tuple[str, int], tuple[int, int]] = {}
        for topic, partitions in topics.items():
            for p in partitions:
                marks[(topic, p)] = _marks(consumer, topic, p, deadline)
        records: dict[tuple[str, int], list[tuple[int, str]]] = {tp: [] for tp in marks}
        pending = {tp for tp, (low, end) in marks.items() if end > low}
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in sorted(pending)])
        while pending:
            if time.monotonic() > deadline:
                raise TxnWorkloadError(f"reading back at read_committed: {sorted(pending)} not read to their ends "
                                       f"{[marks[tp][1] for tp in sorted(pending)]} within {timeout:.0f} s")
            for msg in consumer.consume(500, 0.1):
                err = msg.error()
                tp = (msg.topic() or "", msg.partition() or 0)
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF and (msg.offset() or 0) >= marks[tp][1]:
                        pending.discard(tp)
                    elif err.fatal():
                        raise KafkaException(err)
                    continue
                if _offset(msg) < marks[tp][1]:
                    records[tp].append((_offset(msg), _value(msg) if by_value else _key(msg)))
            positions = consumer.position([TopicPartition(t, p) for t, p in sorted(pending)])
            pending -= {(tp.topic, tp.partition) for tp in positions if tp.offset >= marks[(tp.topic, tp.partition)][1]}
        at = time.time()
        return tuple(ReadBack(t, p, low, end, at, tuple(sorted(records[(t, p)])))
                     for (t, p), (low, end) in sorted(marks.items()))
    finally:
        consumer.close()


def _marks(consumer: Consumer, topic: str, partition: int, deadline: float) -> tuple[int, int]:
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            got = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=2.0, cached=False)
            if got is not None:
                return int(got[0]), int(got[1])
        except KafkaException as exc:
            last = exc
        time.sleep(0.5)
    raise TxnWorkloadError(f"the end of {topic}-{partition} unavailable: {last}")


def _readable(msg: Message) -> bool:
    err = msg.error()
    if err is not None:
        if err.fatal():
            raise KafkaException(err)
        log.debug("txn consumer: %s", err)
        return False
    return msg.partition() is not None and msg.offset() is not None


def _partition(msg: Message) -> int:
    p = msg.partition()
    return int(p) if p is not None else -1


def _offset(msg: Message) -> int:
    o = msg.offset()
    return int(o) if o is not None else -1


def _value(msg: Message) -> str:
    value = msg.value()
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value or "")


def _key(msg: Message) -> str:
    key = msg.key()
    return key.decode(errors="replace") if isinstance(key, bytes) else str(key or "")


def _read_of(name: str, msg: Message, at: float) -> TxnRead:
    return TxnRead(name, msg.topic() or "", _partition(msg), _offset(msg), _key(msg), at)

"""The client workload: an idempotent ``acks=all`` producer at a steady rate, and the read-back.

One background thread owns the producer: it produces round-robin over the given partitions at
``rate_per_partition`` messages/s, calls ``poll()`` (so delivery callbacks run on that thread) and
records every delivery report with ``time.time()``. As ducktape's ``BackgroundThreadService``
does, an exception on that thread is kept and re-raised by :meth:`Workload.stop` (and by
:meth:`Workload.wait_for_acks`), never lost in a log.

Delivery errors are data, not crashes: after librdkafka has retried a message until
``message.timeout.ms`` its final error (``_MSG_TIMED_OUT``, ``NOT_ENOUGH_REPLICAS`` under
``min.insync.replicas``, ``_PURGE_QUEUE`` at stop, ...) is recorded in :meth:`failures`.
Verification (:meth:`consume_all`, :meth:`verify`) reads the partitions back with an assigned
consumer (:mod:`scenarios.clients.readback`) — no group coordinator, so it works while
``__consumer_offsets`` is unavailable — and compares with :func:`scenarios.clients.delivery.validate_delivery`.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kafka_chaos.harness.errors import HarnessError, UsageError
from kafka_chaos.scenarios.clients.debug_ring import DebugRing
from kafka_chaos.scenarios.clients.delivery import Ack, DeliveryReport, validate_delivery
from kafka_chaos.scenarios.clients.producer_log import (
    ACQUIRED_PID,
    ProducerIdGiven,
    possibly_persisted_resends,
    producer_ids_given,
    refusals,
)
from kafka_chaos.scenarios.clients.readback import consume_all

log = logging.getLogger(__name__)

# Why these producer settings (see docs/failover-timing.md, "The client side"):
# * socket.timeout.ms: a SIGSTOPped (paused) leader keeps its TCP connections open, so the
#   client only moves on when its in-flight ProduceRequest times out, long after the cluster
#   has elected a new leader. librdkafka's 60 s default would make every pause scenario cost a
#   minute; 10 s keeps that client-only window visible in the produce gap (it is real
#   unavailability) yet bounded. Callers can pass another value.
# * reconnect.backoff.max.ms: 1 s instead of 10 s, so a restarted broker is reconnected to
#   promptly and the measured latency is the cluster's, not the client's back-off.
# * message.timeout.ms (= delivery.timeout.ms): bounded; a message still unacknowledged after
#   it is reported as failed (_MSG_TIMED_OUT) — never as acknowledged.
# * enable.gapless.guarantee stays false: after an unclean election the idempotent producer
#   bumps its epoch and carries on, so the loss shows up in the accounting instead of
#   stopping the workload.
DEFAULT_SOCKET_TIMEOUT_MS = 10_000
_RECONNECT_BACKOFF_MAX_MS = 1_000
_LINGER_MS = 5
_MAX_POLL_S = 0.1
_MAX_SCHEDULE_LAG_S = 1.0  # after a longer stall on this thread, skip ahead instead of bursting
_STOP_GRACE_S = 15.0
# librdkafka debug contexts of the producer's ring: idempotence state (producer id, epoch,
# sequence resets) and every message set sent, retried or delivered — measured: 2,775 lines in
# 10 s with 6 partitions at 50 msgs/s (one message per set), so 150,000 lines hold about four
# minutes at 12 partitions (~20 MB), longer than an iteration lasts after most anomalies.
_DEBUG_CONTEXTS = "eos,msg"
_DEBUG_LINES = 150_000


class WorkloadError(HarnessError):
    """The workload could not run or could not read the topic back (one line)."""


@dataclass(frozen=True)
class ClientError:
    """A client-level error librdkafka reported through ``error_cb`` (not tied to a message)."""

    name: str
    at: float  # time.time()
    fatal: bool
    reason: str


class Workload:
    """Produce to ``topic``'s ``partitions`` until stopped; then read them back and account.

    About 350 lines, on purpose: the producer thread's lifecycle, the records it keeps (under one
    lock) and their thread-safe accessors are one unit; the read-back lives in
    :mod:`scenarios.clients.readback`."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: Sequence[int],
        *,
        rate_per_partition: float = 50.0,
        delivery_timeout_ms: int = 120000,
        client_id: str = "kafka-chaos-workload",
        socket_timeout_ms: int = DEFAULT_SOCKET_TIMEOUT_MS,
    ) -> None:
        if not partitions:
            raise UsageError(f"workload on {topic}: no partitions given")
        if len(set(partitions)) != len(partitions) or min(partitions) < 0:
            raise UsageError(f"workload on {topic}: bad partition list {list(partitions)}")
        if rate_per_partition <= 0:
            raise UsageError(f"workload rate must be positive, not {rate_per_partition}")
        if delivery_timeout_ms <= _LINGER_MS or socket_timeout_ms < 10:
            raise UsageError("workload delivery/socket timeouts are too small")
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions: tuple[int, ...] = tuple(partitions)
        self.rate_per_partition = rate_per_partition
        self.client_id = client_id
        self.run_id = uuid.uuid4().hex[:8]  # keys are "<run_id>-<partition>-<seq>"
        self.producer_config: dict[str, str | int | bool] = {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": _LINGER_MS,
            "message.timeout.ms": delivery_timeout_ms,
            "socket.timeout.ms": socket_timeout_ms,
            "reconnect.backoff.max.ms": _RECONNECT_BACKOFF_MAX_MS,
        }
        self._lock = threading.Condition()
        self._acks: dict[int, list[Ack]] = {p: [] for p in self.partitions}
        self._failures: list[tuple[int, str, float]] = []
        self._failed_keys: list[str] = []  # parallel to _failures: the failed message's key
        self.read_back: list[tuple[int, int, str]] | None = None  # the last verify()'s records
        self._client_errors: list[ClientError] = []
        self._produced = 0
        self._stopping = threading.Event()
        self._replace_producer = threading.Event()
        self._drain_timeout = 30.0
        self._thread: threading.Thread | None = None
        self._connected: Producer | None = None  # made by connect(), produced with by start()
        self._error: BaseException | None = None
        self._debug = DebugRing(f"{__name__}.librdkafka.{self.run_id}", _DEBUG_LINES,
                                forward=logging.getLogger(f"{__name__}.librdkafka"), keep=(ACQUIRED_PID,))
        # Each producer instance's start (time.time()) and the next sequence number of every
        # partition then: librdkafka numbers a producer's messages per partition from MsgId 1
        # (rd_kafka_toppar_enq_msg), so MsgId m of generation g is sequence base_g + m - 1.
        self._generations: list[tuple[float, dict[int, int]]] = []

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Workload:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.stop()
            return
        try:
            self.stop()
        except Exception:  # the original exception matters more; keep this one in the log
            log.exception("workload on %s failed while unwinding another error", self.topic)

    def connect(self) -> None:
        """Make the producer now, before the topic exists, so that :meth:`start` produces at once.

        An idempotent producer sends nothing before it holds a producer id, and librdkafka asks
        for one only once a broker connection is up, on a timer (``rd_kafka_idemp_pid_fsm``:
        about half a second after the first connection). Made while the topics are being
        created, that wait is over when the workload starts. It asks for no topic's metadata
        until it produces, so it cannot auto-create the topic. Optional."""
        if self._thread is not None or self._connected is not None:
            raise WorkloadError(f"workload on {self.topic} is already connected or running")
        self._connected = self._new_producer(dict.fromkeys(self.partitions, 0))

    def start(self) -> None:
        if self._thread is not None:
            raise WorkloadError(f"workload on {self.topic} is already running")
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"workload-{self.topic}", daemon=True
        )
        self._thread.start()
        log.info(
            "workload %s producing to %s partitions %s at %.0f msg/s each",
            self.run_id, self.topic, list(self.partitions), self.rate_per_partition,
        )

    def stop(self, *, drain_timeout: float = 30.0) -> None:
        """Stop producing, wait up to ``drain_timeout`` for outstanding delivery reports, then
        purge the rest (reported as failures). Re-raises an exception of the producer thread.
        Idempotent; a workload only connected closes its producer."""
        self._connected = None  # never produced with: nothing to drain
        thread = self._thread
        if thread is not None:
            self._drain_timeout = drain_timeout
            self._stopping.set()
            thread.join(drain_timeout + _STOP_GRACE_S)
            if thread.is_alive():
                raise WorkloadError(
                    f"workload on {self.topic}: producer thread still running "
                    f"{drain_timeout + _STOP_GRACE_S:.0f} s after stop"
                )
            self._thread = None
            with self._lock:
                acked = sum(len(a) for a in self._acks.values())
            log.info(
                "workload %s stopped: %d produced, %d acked, %d failed",
                self.run_id, self._produced, acked, len(self._failures),
            )
        self._raise_background_error()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- what was recorded (thread-safe copies) ------------------------------------------

    def acks(self, partition: int | None = None) -> list[Ack]:
        """Acknowledged messages in acknowledgement order (of one partition, or all)."""
        with self._lock:
            if partition is not None:
                return list(self._acks.get(partition, ()))
            merged = [a for acks in self._acks.values() for a in acks]
        return sorted(merged, key=lambda a: a.acked_at)

    def ack_times(self, partition: int) -> list[float]:
        """The ``acked_at`` times of one partition, for :func:`scenarios.clients.delivery.largest_gap`."""
        return [a.acked_at for a in self.acks(partition)]

    def failures(self) -> list[tuple[int, str, float]]:
        """``(partition, error name, time.time())`` of every message whose delivery failed for
        good (librdkafka retries retriable errors itself until ``message.timeout.ms``)."""
        with self._lock:
            return list(self._failures)

    def failed_sends(self) -> list[tuple[int, str, str, float]]:
        """``(partition, key, error name, time.time())`` of every failed message (the history
        checker needs the key: a definitely failed message must never be read)."""
        with self._lock:
            return [(p, key, name, at) for (p, name, at), key in zip(self._failures, self._failed_keys)]

    def client_errors(self) -> list[ClientError]:
        """Client-level errors (all brokers down, fatal idempotence errors, ...) in order."""
        with self._lock:
            return list(self._client_errors)

    @property
    def produced(self) -> int:
        """Messages handed to the producer so far (acked + failed + still in flight)."""
        with self._lock:
            return self._produced

    def wait_for_acks(
        self, *, timeout: float, after: float | None = None, partitions: Sequence[int] | None = None
    ) -> dict[int, Ack | None]:
        """Wait (bounded, woken by delivery reports) until every partition has an ack later than
        ``after`` (any ack when ``None``); return the first such ack per partition, ``None``
        where none came within ``timeout``. Re-raises a producer-thread exception."""
        wanted = tuple(partitions) if partitions is not None else self.partitions
        since = float("-inf") if after is None else after

        def firsts() -> dict[int, Ack | None]:
            result: dict[int, Ack | None] = {}
            for p in wanted:
                acks = self._acks.get(p, [])  # appended in acked_at order
                i = bisect.bisect_right(acks, since, key=lambda a: a.acked_at)
                result[p] = acks[i] if i < len(acks) else None
            return result

        with self._lock:
            self._lock.wait_for(
                lambda: self._error is not None or all(firsts().values()), timeout=timeout
            )
            result = firsts()
        self._raise_background_error(keep=True)
        return result

    # -- read back ---------------------------------------------------------------------

    def consume_all(
        self, timeout: float = 60.0, partitions: Sequence[int] | None = None
    ) -> list[tuple[int, int, str]]:
        """Every record of the partitions up to their high watermarks (:func:`scenarios.clients.readback.consume_all`)."""
        wanted = tuple(partitions) if partitions is not None else self.partitions
        return consume_all(self.bootstrap, self.topic, wanted, client_id=f"{self.client_id}-verify", timeout=timeout)

    def verify(self, timeout: float = 60.0) -> DeliveryReport:
        """Read the topic back and compare with what was acknowledged. Needs a stopped
        workload: acks arriving during the read would look lost."""
        if self.running:
            raise WorkloadError(f"workload on {self.topic}: stop() it before verify()")
        self.read_back = self.consume_all(timeout)
        return validate_delivery(self.acks(), self.read_back)

    # -- the producer thread -----------------------------------------------------------

    def _run(self) -> None:
        try:
            self._produce_until_stopped()
        except BaseException as exc:  # noqa: BLE001 - kept and re-raised on stop()
            log.exception("workload %s producer thread failed", self.run_id)
            with self._lock:
                self._error = exc
                self._lock.notify_all()

    def _produce_until_stopped(self) -> None:
        next_seq = dict.fromkeys(self.partitions, 0)
        producer, self._connected = self._connected or self._new_producer(next_seq), None
        interval = 1.0 / (self.rate_per_partition * len(self.partitions))
        slot = 0
        due = time.monotonic()
        while not self._stopping.is_set():
            if self._replace_producer.is_set():
                producer = self._replace(producer, next_seq)
            now = time.monotonic()
            if now - due > _MAX_SCHEDULE_LAG_S:
                due = now
            while due <= now:
                partition = self.partitions[slot % len(self.partitions)]
                if self._send(producer, partition, next_seq[partition]):
                    next_seq[partition] += 1
                slot += 1
                due += interval
            self._poll(producer, min(max(due - time.monotonic(), 0.0), _MAX_POLL_S))
        self._drain(producer, self._drain_timeout)

    def _poll(self, producer: Producer, timeout: float) -> None:
        try:
            producer.poll(timeout)
        except KafkaException as exc:
            # librdkafka also raises a fatal error from poll() (e.g. OUT_OF_ORDER_SEQUENCE_NUMBER
            # after an unclean election truncated acknowledged batches): that is the fault's
            # effect, to be recorded and survived, not the workload's failure.
            error = exc.args[0]
            if not _is_fatal(exc):
                raise
            if not self._replace_producer.is_set():  # error_cb has not reported it yet
                self._on_client_error(error)

    def _new_producer(self, next_seq: Mapping[int, int]) -> Producer:
        # librdkafka's own account of its idempotent sends (producer id, sequences, retries,
        # which batch each ProduceResponse delivered) goes to a ring, its critical lines on to our
        # log: only the client can say that it sent a message twice (resent_keys).
        producer = Producer(
            {**self.producer_config, "error_cb": self._on_client_error, "debug": _DEBUG_CONTEXTS, "log_level": 7},
            logger=self._debug.logger,
        )
        with self._lock:
            self._generations.append((time.time(), dict(next_seq)))
        return producer

    def debug_lines(self) -> list[str]:
        """The producer's librdkafka debug lines (the last ``_DEBUG_LINES``)."""
        return self._debug.lines()

    def refusals(self, since: float, until: float) -> dict[int, list[tuple[str, float]]]:
        """Partition -> ``(error, time)`` of each batch the leader refused with NOT_ENOUGH_REPLICAS
        in ``[since, until]`` (librdkafka retried it), from the producer's debug ring."""
        found: dict[int, list[tuple[str, float]]] = {}
        for r in refusals(self._debug.lines()):
            if r.topic == self.topic and since <= r.at <= until:
                found.setdefault(r.partition, []).append((r.error, r.at))
        return found

    def producer_ids(self) -> list[ProducerIdGiven]:
        """Every producer id and epoch this workload's producer instances were given, in order."""
        return producer_ids_given(self._debug.kept_lines())

    def key_of(self, partition: int, seq: int) -> str:
        """The key (and value) of the partition's message number ``seq``."""
        return f"{self.run_id}-{partition}-{seq}"

    def resent_keys(self) -> dict[str, str]:
        """Keys of messages librdkafka sent again under a bumped producer epoch after their
        batch was possibly persisted (:mod:`scenarios.clients.producer_log`, librdkafka#4953), each with
        the producer's own lines as evidence: a duplicate among them is the client's."""
        resends = possibly_persisted_resends(self._debug.lines())
        with self._lock:
            generations = list(self._generations)
        keys: dict[str, str] = {}
        for resend in resends:
            batch = resend.batch
            started = [bases for at, bases in generations if at <= batch.at]
            if batch.topic != self.topic or not started or batch.partition not in started[-1]:
                continue
            base = started[-1][batch.partition]
            for msgid in resend.resent_msgids:
                keys.setdefault(self.key_of(batch.partition, base + msgid - 1), resend.evidence())
        return keys

    def _send(self, producer: Producer, partition: int, seq: int) -> bool:
        key = self.key_of(partition, seq)
        try:
            producer.produce(
                self.topic, key=key, value=key.encode(), partition=partition,
                on_delivery=lambda err, msg: self._on_delivery(partition, key, err, msg),
            )
        except BufferError:
            # librdkafka's local queue is full (a long outage): skip this slot, keep serving.
            producer.poll(_MAX_POLL_S)
            return False
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError._FATAL:  # fatal error already reported
                self._replace_producer.set()
                return False
            raise
        with self._lock:
            self._produced += 1
        return True

    def _on_delivery(self, partition: int, key: str, err: KafkaError | None, msg: Message) -> None:
        """``partition`` and ``key`` are the ones the message was sent with (explicit partition,
        so the report's cannot differ). ``msg.offset()`` is None when the acknowledgement named
        no offset: an idempotent producer acknowledges a message implicitly when a later batch
        of its own succeeds, and then does not know where it was written (:class:`Ack`)."""
        now = time.time()
        with self._lock:
            if err is None:
                self._acks.setdefault(partition, []).append(Ack(partition, msg.offset(), key, now))
            else:
                self._failures.append((partition, err.name(), now))
                self._failed_keys.append(key)
            self._lock.notify_all()
        if err is not None:
            log.debug("delivery to %s-%d failed: %s", self.topic, partition, err)

    def _on_client_error(self, err: KafkaError) -> None:
        with self._lock:
            self._client_errors.append(ClientError(err.name(), time.time(), err.fatal(), err.str()))
        if err.fatal():
            # An idempotent producer that hit a fatal error refuses every further message:
            # start a new one (new producer id) so the workload goes on.
            log.warning("workload %s: fatal producer error %s; replacing producer",
                        self.run_id, err)
            self._replace_producer.set()
        else:
            # Recorded in the history; at INFO, a total outage's connection refusals (three a
            # second per broker) would drown the run's progress lines.
            log.debug("workload %s client error: %s", self.run_id, err)

    def _replace(self, producer: Producer, next_seq: Mapping[int, int]) -> Producer:
        # A fatally failed producer delivers nothing more: fail its backlog at once (reported as
        # failures) rather than wait, so the new producer starts within the fault's window.
        producer.purge()
        self._drain(producer, 1.0)
        self._replace_producer.clear()
        return self._new_producer(next_seq)

    @staticmethod
    def _drain(producer: Producer, timeout: float) -> None:
        """Serve outstanding delivery reports; purge what is left so it is reported as failed."""
        try:
            left = producer.flush(timeout)
        except (KafkaException, SystemError) as exc:
            # A fatal error raised inside flush()'s callbacks may surface as a SystemError whose
            # __cause__ is the KafkaException (seen after an unclean election: OUT_OF_ORDER_SEQUENCE).
            cause = exc if isinstance(exc, KafkaException) else exc.__cause__
            if not (isinstance(cause, KafkaException) and _is_fatal(cause)):
                raise
            left = len(producer)
        if left:
            log.warning("purging %d undelivered messages after %.0f s", left, timeout)
            producer.purge()
            try:
                producer.flush(min(timeout, 5.0))
            except KafkaException as exc:
                if not _is_fatal(exc):
                    raise

    # -- helpers -----------------------------------------------------------------------

    def _raise_background_error(self, keep: bool = False) -> None:
        with self._lock:
            error = self._error
            if not keep:
                self._error = None
        if error is not None:
            raise error

    def summary(self) -> dict[str, Any]:
        """Counts and settings for a record's ``observed`` or the run's ``run.json``."""
        with self._lock:
            acked = {str(p): len(a) for p, a in self._acks.items()}
            failed = len(self._failures)
        return {
            "run_id": self.run_id, "topic": self.topic, "partitions": list(self.partitions),
            "rate_per_partition": self.rate_per_partition, "produced": self.produced,
            "acked_by_partition": acked, "failed": failed,
            "producer_config": {k: v for k, v in self.producer_config.items()
                                if k != "bootstrap.servers"},
        }


def _is_fatal(exc: KafkaException) -> bool:
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.fatal()

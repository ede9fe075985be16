"""Consumers that run through every step of a scenario and record every record they poll.

Two consumers per topic, each on its own background thread (exceptions kept and re-raised by
:meth:`Consumers.stop`, as the workload's producer thread does):

* ``assign`` — ``assign()`` of every partition from the beginning, never a group member: it
  sees every offset the leaders serve, needs no coordinator, and shows what a truncation does
  to a reader (an out-of-range position resets to the earliest offset: a non-monotonic poll);
* ``group`` — ``subscribe()`` as a member of one consumer group with auto-commit: it is
  rebalanced when its coordinator moves, and resumes from committed offsets (re-reads are not
  anomalies after a reset; every assignment, revocation and loss is recorded as a reset).

The group needs ``__consumer_offsets``: :func:`harness.readiness.ensure_offsets_topic` creates
it at cluster start so the group works from the first fault on, also while a broker is down.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_NOT_AVAILABLE, Consumer, Message, TopicPartition

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.scenarios.clients.ops import ASSIGN, GROUP, ConsumerReset, Poll
from kafka_chaos.scenarios.clients.debug_ring import DebugRing

log = logging.getLogger(__name__)

_POLL_TIMEOUT_S = 0.2
_BATCH = 500
_STOP_GRACE_S = 15.0
# A paused leader keeps its connections open: as the producer, give up on a fetch after 10 s
# (librdkafka's 60 s would hide the recovery) — see docs/failover-timing.md.
_SOCKET_TIMEOUT_MS = 10_000
# The group member: a short session so a rebalance after a coordinator move is quick, yet
# long enough not to be expired by a busy 2-core machine.
_GROUP_SESSION_TIMEOUT_MS = 10_000
_GROUP_HEARTBEAT_MS = 1_000
# The group member's own account of itself (librdkafka debug "cgrp,fetch,consumer"): kept in a
# bounded ring and written beside the node logs when a scenario fails, so a consumer that skips
# or re-reads offsets can be classified from the run's files — about 50 lines a
# second with 6 partitions, so the ring holds the last few minutes.
_DEBUG_CONTEXTS = "cgrp,fetch,consumer"
_DEBUG_LINES = 20_000


class ConsumerError(HarnessError):
    """A consumer thread failed (one line)."""


class Consumers:
    """The ``assign`` and ``group`` consumers of one topic; thread-safe accessors of their polls."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int], *, client_id: str,
                 group: bool = True) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = tuple(partitions)
        self.client_id = client_id
        self.group_id = f"{client_id}-{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._polls: dict[int, list[Poll]] = {p: [] for p in self.partitions}
        self._resets: dict[int, list[ConsumerReset]] = {p: [] for p in self.partitions}
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._names = (ASSIGN, GROUP) if group else (ASSIGN,)
        self._debug = DebugRing(f"{__name__}.librdkafka.{self.group_id}", _DEBUG_LINES)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            raise ConsumerError(f"consumers of {self.topic} are already running")
        self._stopping.clear()
        for name in self._names:
            thread = threading.Thread(target=self._run, args=(name,), name=f"consumer-{name}-{self.topic}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop both consumers (bounded) and re-raise the first exception of their threads."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(_STOP_GRACE_S)
            if thread.is_alive():
                raise ConsumerError(f"consumer thread {thread.name} still running {_STOP_GRACE_S:.0f} s after stop")
        self._threads = []
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise ConsumerError(f"consumer of {self.topic} failed: {type(errors[0]).__name__}: {errors[0]}") \
                from errors[0]

    # -- what was recorded ----------------------------------------------------------------

    def polls(self, partition: int) -> list[Poll]:
        with self._lock:
            return list(self._polls.get(partition, ()))

    def resets(self, partition: int) -> list[ConsumerReset]:
        with self._lock:
            return list(self._resets.get(partition, ()))

    def debug_lines(self) -> list[str]:
        """The group member's librdkafka debug lines (the last ``_DEBUG_LINES``)."""
        return self._debug.lines()

    def count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._polls.values())

    # -- the consumer threads -------------------------------------------------------------

    def _config(self, name: str) -> dict[str, Any]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": f"{self.client_id}-{name}",
            "group.id": self.group_id if name == GROUP else f"{self.group_id}-{name}",  # assign: never joined
            "enable.auto.commit": name == GROUP,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",  # non-transactional producer
            "enable.partition.eof": False,
            "socket.timeout.ms": _SOCKET_TIMEOUT_MS,
            "reconnect.backoff.max.ms": 1_000,
            # Brokers going away is what the faults do: librdkafka's connection errors go to
            # error_cb (debug log) instead of its ERROR-level log lines, which would drown the
            # run's progress output; only its critical log lines are kept.
            "log_level": 2,
            "error_cb": lambda err: log.debug("consumer %s of %s: %s", name, self.topic, err),
            "logger": logging.getLogger(f"{__name__}.librdkafka"),
        }
        if name == GROUP:
            config.update({"session.timeout.ms": _GROUP_SESSION_TIMEOUT_MS,
                           "heartbeat.interval.ms": _GROUP_HEARTBEAT_MS, "auto.commit.interval.ms": 500,
                           "debug": _DEBUG_CONTEXTS, "log_level": 7, "logger": self._debug.logger})
        return config

    def _run(self, name: str) -> None:
        try:
            self._consume(name)
        except BaseException as exc:  # noqa: BLE001 - kept and re-raised on stop()
            log.exception("consumer %s of %s failed", name, self.topic)
            with self._lock:
                self._errors.append(exc)

    def _reset(self, name: str, partitions: Sequence[TopicPartition], why: str) -> None:
        now = time.time()
        with self._lock:
            for tp in partitions:
                if tp.topic == self.topic and tp.partition in self._resets:
                    self._resets[tp.partition].append(ConsumerReset(name, now, why))

    def _consume(self, name: str) -> None:
        consumer = Consumer(self._config(name))
        try:
            if name == GROUP:
                consumer.subscribe([self.topic],
                                   on_assign=lambda c, tps: self._reset(name, tps, "assigned"),
                                   on_revoke=lambda c, tps: self._reset(name, tps, "revoked"),
                                   on_lost=lambda c, tps: self._reset(name, tps, "lost"))
            else:
                tps = [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in self.partitions]
                self._reset(name, tps, "assigned")
                consumer.assign(tps)
            while not self._stopping.is_set():
                batch = consumer.consume(_BATCH, _POLL_TIMEOUT_S)
                now = time.time()
                polls = [p for p in (_poll_of(name, m, now) for m in batch) if p is not None]
                if polls:
                    with self._lock:
                        for partition, poll in polls:
                            self._polls.setdefault(partition, []).append(poll)
        finally:
            consumer.close()


def _poll_of(name: str, msg: Message, now: float) -> tuple[int, Poll] | None:
    err = msg.error()
    if err is not None:
        if err.fatal():
            raise RuntimeError(f"fatal consumer error: {err.str()}")
        # Transport errors, out-of-range resets, all brokers down: the fault's effect, seen in
        # the polls (or their absence); not the consumer's failure.
        log.debug("consumer %s: %s", name, err)
        return None
    partition, offset = msg.partition(), msg.offset()
    if partition is None or offset is None:
        return None
    key = msg.key()  # keyless: not the workload's (it keys every message); kept under the empty key
    kind, ms = msg.timestamp()
    created = None if kind == TIMESTAMP_NOT_AVAILABLE else ms / 1000.0
    return partition, Poll(name, offset, key.decode(errors="replace") if key else "", now, created)

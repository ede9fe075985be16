"""The truth from ZooKeeper: brokers, controller and partition states, watched with timestamps.

A :class:`ZkObserver` holds one kazoo session, with the watches of
:class:`harness.zkwatches.ZkWatches`.  Each watch that fires records a typed event
(:mod:`harness.zkevents`) stamped with ``time.time()`` and wakes :meth:`ZkObserver.wait_until`,
which re-reads a fresh :class:`ZkSnapshot` (:mod:`harness.zksnapshot`) and re-evaluates its
predicate — no sleep loops.  The snapshot is the authority, events are for timing.

The observer only reads: admin writes (reassignment, preferred election, topic config) are
:class:`harness.zkadmin.ZkAdmin`'s, on a session of their own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType

from kazoo.client import KazooClient

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.zkclient import ZkUnavailable, close_bounded, connect
from kafka_chaos.harness.zkevents import (
    BROKER_GONE,
    BROKER_REGISTERED,
    CONTROLLER_CHANGED,
    PARTITION_STATE,
    PARTITION_STATE_DELETED,
    PREFERRED_ELECTION,
    REASSIGNMENT,
    TOPIC_ASSIGNMENT,
    TOPIC_CONFIG,
    TOPIC_DELETED,
    EventLog,
    PartitionStateWritten,
    ZkEvent,
)
from kafka_chaos.harness.zksnapshot import (
    NO_LEADER,
    PartitionZkState,
    SnapshotReader,
    UnknownPartition,
    ZkSnapshot,
    partition_zk_state,
)
from kafka_chaos.harness.zkwatches import ZkWatches

__all__ = [
    "BROKER_GONE", "BROKER_REGISTERED", "CONTROLLER_CHANGED", "NO_LEADER", "PARTITION_STATE",
    "PARTITION_STATE_DELETED", "PREFERRED_ELECTION", "REASSIGNMENT", "TOPIC_ASSIGNMENT",
    "TOPIC_CONFIG", "TOPIC_DELETED", "ConvergenceTimeout", "PartitionZkState", "UnknownPartition",
    "ZkEvent", "ZkObserver", "ZkSnapshot", "ZkUnavailable", "partition_zk_state",
]

log = logging.getLogger(__name__)


class ConvergenceTimeout(HarnessError):
    """ZooKeeper (or, for a KRaft cluster, its metadata log: ``source``) did not reach the
    awaited state in time."""

    def __init__(self, description: str, last: ZkSnapshot | None, timeout: float | None = None,
                 note: str = "", source: str = "ZooKeeper") -> None:
        self.description = description
        self.last = last
        self.timeout = timeout
        waited = f" after {timeout:.1f} s" if timeout is not None else ""
        seen = last.summary() if last is not None else "no snapshot could be read"
        super().__init__(f"timed out{waited} waiting for {description}{note}; {source} showed: {seen}")


class BrokerWaits:
    """``wait_broker_gone`` / ``wait_broker_registered`` over an observer's own ``wait_until``;
    what "gone" and "registered" mean is each observer's to say in its descriptions (a KRaft
    broker is fenced and unfenced, a ZooKeeper one leaves and joins ``/brokers/ids``)."""

    gone_words = "to be fenced"
    registered_words = "to be unfenced"

    def wait_until(self, predicate: Callable[[ZkSnapshot], bool], *, timeout: float,
                   description: str) -> ZkSnapshot:
        raise NotImplementedError

    def wait_broker_gone(self, broker_id: int, timeout: float) -> ZkSnapshot:
        return self.wait_until(lambda s: broker_id not in s.live_brokers, timeout=timeout,
                               description=f"broker {broker_id} {self.gone_words}")

    def wait_broker_registered(self, broker_id: int, timeout: float, *,
                               newer_than_epoch: int | None = None) -> ZkSnapshot:
        def registered(s: ZkSnapshot) -> bool:
            epoch = s.live_brokers.get(broker_id)
            return epoch is not None and (newer_than_epoch is None or epoch > newer_than_epoch)
        return self.wait_until(registered, timeout=timeout, description=f"broker {broker_id} {self.registered_words}")


class EventQueries:
    """The event queries both observers answer the same way (this one and
    :class:`harness.kraft.observer.KraftObserver`), over their ``_events`` log and ``_changed``
    condition; ``_timeout_snapshot`` is what a timed-out :meth:`wait_event` reports."""

    _events: EventLog
    _changed: threading.Condition
    _stopping: bool

    def _timeout_snapshot(self) -> ZkSnapshot | None:
        raise NotImplementedError

    def wait_event(self, kind: str, *, after: float, timeout: float, description: str,
                   broker_id: int | None = None, topic: str | None = None,
                   partition: int | None = None,
                   where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent:
        """Wait for the first matching event at or after ``after`` (see :meth:`first_event`)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._events.first(kind, after=after, broker_id=broker_id, topic=topic,
                                           partition=partition, where=where)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping:
                    break
                self._changed.wait(timeout=remaining)
        raise ConvergenceTimeout(description, self._timeout_snapshot(), timeout)

    def events_since(self, t: float) -> list[ZkEvent]:
        """Events stamped at or after ``t``, oldest first (see :meth:`EventLog.since`)."""
        with self._changed:
            return self._events.since(t)

    def first_event(self, kind: str, *, after: float, broker_id: int | None = None,
                    topic: str | None = None, partition: int | None = None,
                    where: Callable[[ZkEvent], bool] | None = None) -> ZkEvent | None:
        with self._changed:
            return self._events.first(kind, after=after, broker_id=broker_id, topic=topic,
                                      partition=partition, where=where)

    def broker_gone_at(self, broker_id: int, after: float) -> float | None:
        event = self.first_event(BROKER_GONE, after=after, broker_id=broker_id)
        return event.at if event else None

    def broker_registered_at(self, broker_id: int, after: float) -> float | None:
        event = self.first_event(BROKER_REGISTERED, after=after, broker_id=broker_id)
        return event.at if event else None

    def new_leader_at(self, topic: str, partition: int, *, after: float, old_leader: int) -> float | None:
        """When the partition state first showed a live-looking leader other than ``old_leader``."""
        event = self.first_event(
            PARTITION_STATE, after=after, topic=topic, partition=partition,
            where=lambda e: isinstance(e, PartitionStateWritten) and e.leader not in (old_leader, NO_LEADER))
        return event.at if event else None


class ZkObserver(BrokerWaits, EventQueries):
    """Watches a Kafka cluster's ZooKeeper state, reads snapshots, waits for conditions and
    answers event queries; see the module docstring.

    ``topics=None`` observes every topic (new ones are picked up by a watch on
    ``/brokers/topics``); otherwise only the named ones, which need not exist yet.
    """

    gone_words = "to leave /brokers/ids"
    registered_words = "to register in /brokers/ids"

    def __init__(self, zk_connect: str, *, topics: Iterable[str] | None = None,
                 session_timeout: float = 6.0, connect_timeout: float = 10.0,
                 read_timeout: float = 5.0, recheck_interval: float = 0.5,
                 stop_timeout: float = 3.0, max_events: int = 100_000) -> None:
        if isinstance(topics, str):
            raise UsageError(f"topics must be a list of names, not the string {topics!r}")
        self._zk_connect = zk_connect
        self._topics = None if topics is None else frozenset(topics)
        self._session_timeout = session_timeout
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._recheck_interval = recheck_interval
        self._stop_timeout = stop_timeout
        self._client: KazooClient | None = None
        self._watches: ZkWatches | None = None
        self._reader: SnapshotReader | None = None
        # One lock for the event log and the generation counter that wakes waiters.
        self._changed = threading.Condition()
        self._generation = 0
        self._events = EventLog(max_events)
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> ZkObserver:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        if self._client is not None or self._stopping:
            raise HarnessError("ZkObserver already started (a stopped one cannot be restarted)")
        try:
            self._client = connect(self._zk_connect, session_timeout=self._session_timeout,
                                   connect_timeout=self._connect_timeout,
                                   command_deadline=self._read_timeout * 2)
            self._reader = SnapshotReader(self._client, self._zk_connect)
            self._watches = ZkWatches(self._client, self._zk_connect, self._topics, self._record,
                                      install_timeout=self._read_timeout * 4)
            self._watches.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Idempotent: drops every watch and closes the session, within about ``stop_timeout``
        even when ZooKeeper does not answer."""
        self._stopping = True
        watches = self._watches
        if watches is not None:
            watches.begin_stop()
        client, self._client = self._client, None
        if client is not None:
            close_bounded(client, self._zk_connect, timeout=self._stop_timeout)
        if watches is not None:
            watches.join(timeout=1.0)
        with self._changed:
            self._changed.notify_all()

    @property
    def zk_connect(self) -> str:
        return self._zk_connect

    @property
    def session_losses(self) -> int:
        """How often the observer's own ZK session expired (watches were re-armed each time;
        changes during the gap show in snapshots but may have no event)."""
        return self._watches.session_losses if self._watches is not None else 0

    def _require_client(self) -> KazooClient:
        if self._client is None or self._stopping:
            raise HarnessError("ZkObserver is not started")
        return self._client

    def _require_watches(self) -> ZkWatches:
        if self._watches is None:
            raise HarnessError("ZkObserver is not started")
        return self._watches

    def _record(self, event: ZkEvent | None) -> None:
        """The watches' callback: log ``event`` (if any) and wake every waiter."""
        with self._changed:
            if event is not None:
                self._events.append(event)
                log.debug("observed %s", event)
            self._generation += 1
            self._changed.notify_all()

    # ------------------------------------------------------------------ reading

    def snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot:
        """Read the current state; ``topics`` None means the observed topics (or all).
        Raises ZkUnavailable when ZooKeeper does not answer within ``read_timeout``."""
        return self._read_snapshot(topics, self._read_timeout)

    def _read_snapshot(self, topics: Iterable[str] | None, timeout: float) -> ZkSnapshot:
        if isinstance(topics, str):
            raise UsageError(f"topics must be a list of names, not the string {topics!r}")
        if self._reader is None or self._client is None or self._stopping:
            raise HarnessError("ZkObserver is not started")
        return self._reader.read(self._topics if topics is None else frozenset(topics), timeout)

    # ------------------------------------------------------------------ waiting

    def _wait_for_change(self, seen_generation: int, timeout: float) -> int:
        """Block until a watch fires after ``seen_generation`` or ``timeout`` passes."""
        with self._changed:
            self._changed.wait_for(lambda: self._generation != seen_generation or self._stopping,
                                   timeout=max(0.0, timeout))
            return self._generation

    def _wait_events_caught_up(self, snap: ZkSnapshot, timeout: float) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._stopping or self._require_watches().caught_up_with(snap),
                                          timeout=timeout):
                # Not an error: ZooKeeper moved on again (the watches show a newer state).
                log.debug("events did not catch up with the snapshot of %.3f", snap.taken_at)

    def wait_until(self, predicate: Callable[[ZkSnapshot], bool], *, timeout: float,
                   description: str) -> ZkSnapshot:
        """Return the first snapshot satisfying ``predicate``, re-checked whenever a watch fires
        (and every ``recheck_interval`` as a safety net: a znode may appear between a read and
        the installation of its watch).  A predicate raising LookupError (e.g. a partition not
        created yet) counts as False.  Raises ConvergenceTimeout when ``timeout`` passes.

        On return, the events that led to the returned snapshot are recorded too (waited for,
        at most ``recheck_interval * 4``), so ``events_since`` can time them at once."""
        deadline = time.monotonic() + timeout
        last: ZkSnapshot | None = None
        note = ""
        with self._changed:
            generation = self._generation
        while True:
            try:
                # Never overrun the caller's deadline by a whole read timeout (ZooKeeper paused).
                read_timeout = min(self._read_timeout, max(deadline - time.monotonic(), 0.2))
                last = self._read_snapshot(None, read_timeout)
                note = ""
                try:
                    if predicate(last):
                        self._wait_events_caught_up(last, self._recheck_interval * 4)
                        return last
                except LookupError:
                    pass
            except ZkUnavailable as exc:  # keep waiting: ZooKeeper may be paused on purpose
                note = f" (last read failed: {exc})"
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._stopping:
                raise ConvergenceTimeout(description, last, timeout, note)
            generation = self._wait_for_change(generation, min(remaining, self._recheck_interval))


    def _timeout_snapshot(self) -> ZkSnapshot | None:
        try:
            return self.snapshot()
        except ZkUnavailable:
            return None

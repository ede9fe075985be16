"""The truth from the KRaft controllers: their metadata log, tailed, replayed and waited on.

A :class:`KraftObserver` answers what :class:`harness.observer.ZkObserver` answers -- snapshots in
the same :class:`ZkSnapshot` shape (:mod:`.image`), ``wait_until`` a predicate holds, event queries
-- from the controllers' ``__cluster_metadata-0`` segment files, which a poller thread reads every
``poll_interval`` (a file on this machine: the local launcher's run directory, or a container's
data directory mounted from the host). Several controllers: the log that is furthest ahead
(quorum epoch, then offset) feeds the image, so a killed controller's stale log does not hold it
back. A quorum leader is shown only once its epoch is on a majority of the voters' logs (its
LEADER_CHANGE record committed): a candidate that wins an election and loses its leadership
before any follower took its first record -- as after all three voters restart together, seen in
``explore --mode kraft --seed 30020`` -- is no leader anyone followed. Other uncommitted records
at the active controller's tail are shown as soon as written: a quorum that loses them on a
failover rewrites those partitions, and the next snapshot shows that.

Events are stamped with the active controller's append time (the batch timestamp), so detection
and election phases are the controller's own clock, not a watch's delivery.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.kraft.image import MetadataImage
from kafka_chaos.harness.kraft.records import BatchSpan, LogEntry, MetadataLogError, read_batches
from kafka_chaos.harness.observer import BrokerWaits, ConvergenceTimeout, EventQueries
from kafka_chaos.harness.zkevents import EventLog
from kafka_chaos.harness.zksnapshot import ZkSnapshot

log = logging.getLogger(__name__)

METADATA_PARTITION_DIR = "__cluster_metadata-0"


FINGERPRINT_BYTES = 64  # a batch's last bytes: its records, CRC-covered, differ between leaders


@dataclass
class _LogTail:
    """One controller's metadata log, read incrementally: per segment the bytes consumed."""

    directory: Path
    positions: dict[Path, int] = field(default_factory=dict)
    entries: list[LogEntry] = field(default_factory=list)
    batches: list[BatchSpan] = field(default_factory=list)  # every batch read, NoOps' too
    last_epoch: int = -1
    next_offset: int = 0
    # per segment, the bytes just before its read position: a log truncated and written again
    # between two polls (a new leader overwriting uncommitted records) no longer has them
    fingerprints: dict[Path, bytes] = field(default_factory=dict)

    def _reset(self) -> None:
        self.positions.clear()
        self.fingerprints.clear()
        self.entries.clear()
        self.batches.clear()
        self.last_epoch, self.next_offset = -1, 0

    def poll(self) -> bool:
        """Read what was appended since the last poll; True when anything new was read. A segment
        that shrank or whose consumed bytes changed (truncated after a quorum failover, perhaps
        written again since) makes the whole log re-read."""
        partition = self.directory / METADATA_PARTITION_DIR
        segments = sorted(partition.glob("*.log")) if partition.is_dir() else []
        if any(path.stat().st_size < pos for path, pos in self.positions.items() if path.exists()):
            self._reset()
        grew = False
        for segment in segments:
            position = self.positions.get(segment, 0)
            try:
                data = segment.read_bytes()
            except FileNotFoundError:  # deleted by retention between glob and read
                continue
            if position and data[max(0, position - FINGERPRINT_BYTES):position] != self.fingerprints.get(segment):
                self._reset()
                return self.poll()
            if len(data) <= position:
                continue
            read = read_batches(data, position)
            self.positions[segment] = read.end_position
            self.fingerprints[segment] = data[max(0, read.end_position - FINGERPRINT_BYTES):read.end_position]
            self.entries.extend(read.entries)
            if read.batches:
                self.batches.extend(read.batches)
                self.last_epoch = max(self.last_epoch, read.batches[-1].epoch)
            if read.next_offset > 0:
                self.next_offset = max(self.next_offset, read.next_offset)
            grew = grew or read.end_position > position
        return grew


@dataclass(frozen=True)
class LogPosition:
    """Where a reader of :meth:`KraftObserver.metadata_log_since` stands: the next offset to hand
    it, in which replay of the image (one more each time the log diverged and was replayed anew)."""

    replay: int
    offset: int


@dataclass(frozen=True)
class LogSlice:
    """The metadata-log entries the image was replayed from since a :class:`LogPosition`, in
    offset order; ``anew``: the log diverged since (or no position was given), and these are all
    of them from its start, for a reader to replay from scratch."""

    entries: tuple[LogEntry, ...]
    position: LogPosition
    anew: bool


class KraftObserver(BrokerWaits, EventQueries):
    """Watches a KRaft cluster's metadata log; see the module docstring. ``metadata_dirs``: each
    controller's metadata log directory (the parent of ``__cluster_metadata-0``)."""

    def __init__(self, metadata_dirs: Iterable[Path], *, topics: Iterable[str] | None = None,
                 poll_interval: float = 0.05, max_events: int = 100_000) -> None:
        if isinstance(topics, str):
            raise UsageError(f"topics must be a list of names, not the string {topics!r}")
        self._tails = [_LogTail(Path(d)) for d in metadata_dirs]
        if not self._tails:
            raise HarnessError("a KRaft observer needs at least one controller's metadata directory")
        self._topics = None if topics is None else frozenset(topics)
        self._poll_interval = poll_interval
        self._image = MetadataImage()
        self._last_replayed: tuple[int, int] | None = None  # (offset, epoch) of the last record replayed
        # the log the image was fed from last (its entries below the image's next offset are what
        # the image holds), and how many times the image was replayed anew: what
        # metadata_log_since hands out, without a copy of the log of its own
        self._fed_from: _LogTail | None = None
        self._replays = 0
        self._events = EventLog(max_events)
        self._changed = threading.Condition()
        self._generation = 0
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._error: str | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> KraftObserver:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        if self._thread is not None or self._stopping:
            raise HarnessError("KraftObserver already started (a stopped one cannot be restarted)")
        self._poll_once()
        self._thread = threading.Thread(target=self._run, name="kraft-observer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    @property
    def session_losses(self) -> int:
        return 0

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._poll_once()
            except Exception as exc:  # noqa: BLE001 - kept and raised to the next reader
                log.warning("reading the metadata log: %s", exc)
                with self._changed:
                    self._error = f"{type(exc).__name__}: {exc}"
                    self._changed.notify_all()
            time.sleep(self._poll_interval)

    def _poll_once(self) -> None:
        grew = False
        for tail in self._tails:
            try:
                grew = tail.poll() or grew
            except OSError as exc:  # a directory of a container going away
                log.debug("metadata log %s: %s", tail.directory, exc)
        if not grew:
            return
        lead = max(self._tails, key=lambda t: (t.last_epoch, t.next_offset))
        with self._changed:
            if lead.next_offset < self._image.next_offset:
                return  # the leading log was truncated below what was replayed: wait for it to regrow
            if self._diverged(lead):
                self._replay_anew(lead)
            else:
                fresh = [e for e in lead.entries if e.offset >= self._image.next_offset]
                for event in self._image.apply_all(fresh):
                    self._events.append(event)
            self._fed_from = lead
            self._image.next_offset = max(self._image.next_offset, lead.next_offset)
            last = self._image.next_offset - 1
            epoch = self._epoch_at(lead, last)
            self._last_replayed = None if epoch is None else (last, epoch)
            self._generation += 1
            self._changed.notify_all()

    @staticmethod
    def _epoch_at(tail: _LogTail, offset: int) -> int | None:
        """The quorum epoch of the batch that holds ``offset`` in the tail (None: none does)."""
        for span in reversed(tail.batches):
            if span.base_offset <= offset <= span.last_offset:
                return span.epoch
            if span.last_offset < offset:
                return None
        return None

    def _diverged(self, lead: _LogTail) -> bool:
        """The leading log no longer holds, at the offset replayed last, the epoch's record that
        was replayed: a leader appended records it never committed, they were replayed, and the
        next leader's log has its own there (a quorum loss before the high watermark moved, seen
        on a migrating cluster's quorum restarted twice; or a paused leader's last NoOpRecord,
        which decodes to nothing, under the next leader's LEADER_CHANGE: ``run --suite migration
        --seed 7``). Compared by batch, not by decoded record, so a skipped record counts."""
        if self._last_replayed is None:
            return False
        offset, epoch = self._last_replayed
        return self._epoch_at(lead, offset) != epoch

    def _replay_anew(self, lead: _LogTail) -> None:
        """The image rebuilt from the leading log alone; events only for the entries of epochs
        newer than the one replayed last (what was never shown)."""
        shown = self._last_replayed[1] if self._last_replayed is not None else -1
        log.info("metadata log diverged from what was replayed (epoch %d): replaying it anew", shown)
        image = MetadataImage()
        for entry in lead.entries:
            events = image.apply(entry)
            if entry.epoch > shown:
                for event in events:
                    self._events.append(event)
        self._image = image
        self._replays += 1

    # ------------------------------------------------------------------ reading

    def snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot:
        """The controllers' current view of ``topics`` (None: the observed ones, or all)."""
        if isinstance(topics, str):
            raise UsageError(f"topics must be a list of names, not the string {topics!r}")
        with self._changed:
            if self._error is not None:
                raise MetadataLogError(f"the metadata log cannot be read: {self._error}")
            wanted = self._topics if topics is None else frozenset(topics)
            snapshot = self._image.snapshot(wanted, time.time())
            committed = self._committed_epoch()
        if snapshot.controller_epoch is not None and snapshot.controller_epoch > committed:
            return replace(snapshot, controller=None, controller_elected_at=None)  # not yet followed by a majority
        return snapshot

    def _committed_epoch(self) -> int:
        """The highest quorum epoch a majority of the voters' logs have reached."""
        epochs = sorted((t.last_epoch for t in self._tails), reverse=True)
        return epochs[len(epochs) // 2]

    def wait_until(self, predicate: Callable[[ZkSnapshot], bool], *, timeout: float,
                   description: str) -> ZkSnapshot:
        """The first snapshot satisfying ``predicate``, re-checked whenever the log grows;
        ConvergenceTimeout after ``timeout``. A predicate raising LookupError counts as False."""
        deadline = time.monotonic() + timeout
        with self._changed:
            generation = self._generation
        while True:
            last = self.snapshot()
            try:
                if predicate(last):
                    return last
            except LookupError:
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._stopping:
                raise ConvergenceTimeout(description, last, timeout, source="the metadata log")
            with self._changed:
                self._changed.wait_for(lambda: self._generation != generation or self._stopping,
                                       timeout=min(remaining, 0.5))
                generation = self._generation

    def _timeout_snapshot(self) -> ZkSnapshot | None:
        return self.snapshot()

    def metadata_log_since(self, position: LogPosition | None) -> LogSlice:
        """The entries the image was replayed from after ``position`` (None: from the log's
        start), with their append times, and where the reader stands after them: what an
        incremental replay of the active controller's own schedule reads
        (``scenarios.model.kraft_balances``). All of them again, ``anew``, once the log diverged
        and the image was replayed anew (:meth:`_replay_anew`)."""
        with self._changed:
            anew = position is None or position.replay != self._replays
            start = 0 if anew or position is None else position.offset
            tail, end = self._fed_from, self._image.next_offset
            entries: tuple[LogEntry, ...] = ()
            if tail is not None:
                # The poller thread reads the tail outside this lock: a tail re-read from its
                # start (a truncated segment) may be emptied under the search or not yet hold
                # ``end`` again; what it holds is handed out, the rest at the next call.
                held = tail.entries
                try:
                    first = bisect.bisect_left(held, start, key=lambda e: e.offset)
                    last = bisect.bisect_left(held, end, lo=first, key=lambda e: e.offset)
                    entries = tuple(e for e in held[first:last] if start <= e.offset < end)
                except IndexError:
                    entries = ()
            after = entries[-1].offset + 1 if entries else start
            return LogSlice(entries, LogPosition(self._replays, after), anew)

    def zk_migration_state(self) -> int | None:
        """The last ``ZkMigrationStateRecord`` replayed (None: the log has none)."""
        with self._changed:
            return self._image.zk_migration_state

    def broker_epochs(self) -> Mapping[int, int]:
        """Every registered broker (fenced or not) and its epoch."""
        with self._changed:
            return {b: r.epoch for b, r in self._image.brokers.items()}

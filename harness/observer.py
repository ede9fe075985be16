"""The truth from ZooKeeper: brokers, controller and partition states, watched with timestamps.

A :class:`ZkObserver` holds one kazoo session.  It keeps watches on ``/brokers/ids``,
``/controller``, ``/controller_epoch``, the admin znodes and, for each observed topic, the topic
znode, its config znode and every partition's ``state`` znode.  Each watch that fires records an
:class:`ObservedEvent` stamped with ``time.time()`` and wakes :meth:`ZkObserver.wait_until`,
which re-reads a fresh :class:`ZkSnapshot` and re-evaluates its predicate — no sleep loops.

ZooKeeper watches are one-shot and re-armed by kazoo after each read, so two writes in quick
succession may show as one event; the snapshot (with the znode ``version``) is the authority,
events are for timing.

The module also holds the few ZK writers scenarios need, each encoding exactly what Kafka 3.9's
own ZK tools write (see :mod:`harness.zkpaths`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from harness import zkpaths
from harness.errors import HarnessError, UsageError

log = logging.getLogger(__name__)

# ObservedEvent.kind values.
BROKER_REGISTERED = "broker_registered"
BROKER_GONE = "broker_gone"
CONTROLLER_CHANGED = "controller_changed"
PARTITION_STATE = "partition_state"
TOPIC_ASSIGNMENT = "topic_assignment"
TOPIC_CONFIG = "topic_config"
REASSIGNMENT = "reassignment"  # data {"pending": bool}: /admin/reassign_partitions appeared/went
PREFERRED_ELECTION = "preferred_election"  # same for /admin/preferred_replica_election

NO_LEADER = -1


class ZkUnavailable(HarnessError):
    """ZooKeeper did not answer in time (down, paused, or the session is reconnecting)."""


class UnknownPartition(HarnessError, LookupError):
    """The snapshot holds no such partition (topic not created yet, or not observed)."""


@dataclass(frozen=True)
class PartitionZkState:
    """One partition as ZooKeeper has it: assignment from the topic znode, the rest from ``state``."""

    topic: str
    partition: int
    replicas: tuple[int, ...]  # AR order; replicas[0] is the preferred leader
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int  # 0 unless the znode says 1 (RECOVERING, after unclean election)
    version: int  # state znode version; -1 when there is no state znode yet
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    def describe(self) -> str:
        extra = ""
        if self.leader_recovery_state:
            extra += f" recovery={self.leader_recovery_state}"
        if self.adding_replicas or self.removing_replicas:
            extra += f" adding={list(self.adding_replicas)} removing={list(self.removing_replicas)}"
        return (f"{self.topic}-{self.partition}: replicas={list(self.replicas)} leader={self.leader} "
                f"epoch={self.leader_epoch} isr={list(self.isr)} v{self.version}{extra}")


def partition_zk_state(topic: str, partition: int, assignment: zkpaths.TopicAssignment,
                       state: zkpaths.LeaderIsrState | None, version: int) -> PartitionZkState:
    """Join a topic znode's replica list with a (possibly missing) state znode.

    Kafka writes no state znode while no replica of a new partition is live (doc §1.6): that
    reads as leader -1, epoch -1, empty ISR, version -1.
    """
    if state is None:
        state, version = zkpaths.LeaderIsrState(leader=NO_LEADER, leader_epoch=-1, isr=(),
                                                controller_epoch=-1), -1
    return PartitionZkState(
        topic=topic, partition=partition,
        replicas=assignment.partitions.get(partition, ()),
        leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
        controller_epoch=state.controller_epoch, leader_recovery_state=state.leader_recovery_state,
        version=version,
        adding_replicas=assignment.adding_replicas.get(partition, ()),
        removing_replicas=assignment.removing_replicas.get(partition, ()),
    )


@dataclass(frozen=True)
class ZkSnapshot:
    """Everything read from ZooKeeper in one pass (a few pipelined round trips, not atomic)."""

    taken_at: float  # time.time()
    live_brokers: Mapping[int, int]  # broker id -> broker epoch (czxid of /brokers/ids/N)
    controller: int | None
    controller_epoch: int | None
    partitions: Mapping[tuple[str, int], PartitionZkState]
    topic_configs: Mapping[str, Mapping[str, str]]  # /config/topics/<t>; {} when none
    pending_reassignment: bool  # /admin/reassign_partitions exists
    pending_preferred_election: bool = False  # /admin/preferred_replica_election exists
    topic_ids: Mapping[str, str | None] = field(default_factory=dict)

    def partition(self, topic: str, partition: int) -> PartitionZkState:
        try:
            return self.partitions[(topic, partition)]
        except KeyError:
            raise UnknownPartition(f"no partition {topic}-{partition} in ZooKeeper") from None

    def topic_partitions(self, topic: str) -> list[PartitionZkState]:
        return [self.partitions[k] for k in sorted(self.partitions) if k[0] == topic]

    def has_topic(self, topic: str) -> bool:
        return topic in self.topic_ids

    def summary(self, max_partitions: int = 12) -> str:
        """One line, for error messages."""
        brokers = ",".join(str(b) for b in sorted(self.live_brokers)) or "none"
        parts = [f"controller={self.controller} (epoch {self.controller_epoch})",
                 f"live brokers=[{brokers}]"]
        if self.pending_reassignment:
            parts.append("reassignment pending")
        if self.pending_preferred_election:
            parts.append("preferred election pending")
        keys = sorted(self.partitions)
        parts.extend(self.partitions[k].describe() for k in keys[:max_partitions])
        if len(keys) > max_partitions:
            parts.append(f"... {len(keys) - max_partitions} more partitions")
        return "; ".join(parts)

    def render(self) -> str:
        """A readable multi-line table."""
        lines = [
            f"controller {self.controller} (controller_epoch {self.controller_epoch})",
            "live brokers: " + (", ".join(f"{b} (epoch {e})" for b, e in sorted(self.live_brokers.items()))
                                or "none"),
            f"reassignment pending: {'yes' if self.pending_reassignment else 'no'}; "
            f"preferred election pending: {'yes' if self.pending_preferred_election else 'no'}",
        ]
        lines.extend("  " + self.partitions[k].describe() for k in sorted(self.partitions))
        for topic, config in sorted(self.topic_configs.items()):
            if config:
                lines.append(f"  config {topic}: " + ", ".join(f"{k}={v}" for k, v in sorted(config.items())))
        return "\n".join(lines)


@dataclass(frozen=True)
class ObservedEvent:
    at: float  # time.time() when the watch callback ran
    kind: str  # one of the module's kind constants
    broker_id: int | None = None
    topic: str | None = None
    partition: int | None = None
    data: Mapping[str, Any] | None = None  # e.g. the parsed state znode plus its "version"


class ConvergenceTimeout(HarnessError):
    """ZooKeeper did not reach the awaited state in time."""

    def __init__(self, description: str, last: ZkSnapshot | None, timeout: float | None = None,
                 note: str = "") -> None:
        self.description = description
        self.last = last
        self.timeout = timeout
        waited = f" after {timeout:.1f} s" if timeout is not None else ""
        seen = last.summary() if last is not None else "no snapshot could be read"
        super().__init__(f"timed out{waited} waiting for {description}{note}; ZooKeeper showed: {seen}")


def _close_quietly(client: KazooClient) -> None:
    try:
        client.stop()
        client.close()
    except KazooException as exc:  # best effort: nothing of ours lives in ZooKeeper
        log.debug("closing kazoo client: %s", exc)


def _first_call_flag() -> Callable[[], bool]:
    """Returns a function that answers True once, then False."""
    state = {"first": True}

    def first() -> bool:
        was, state["first"] = state["first"], False
        return was
    return first


class ZkObserver:
    """Watches a Kafka cluster's ZooKeeper state; see the module docstring.

    ``topics=None`` observes every topic (new ones are picked up by a watch on
    ``/brokers/topics``); otherwise only the named ones, which need not exist yet.
    """

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
        self._changed = threading.Condition()
        self._generation = 0
        # Bounded, for long chaos runs; the oldest events go first.
        self._events: deque[ObservedEvent] = deque(maxlen=max_events)
        self._started = False
        self._stopping = False
        # Watch callbacks run on kazoo's single callback thread; installing a watch costs a
        # round trip, so new watches are installed on our own thread instead.
        self._installs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._installer: threading.Thread | None = None
        self._watched_topics: set[str] = set()
        self._watched_states: set[tuple[str, int]] = set()
        self._brokers: set[int] | None = None
        # What the watches have seen so far, to tell when events have caught up with a snapshot.
        self._seen_state_versions: dict[tuple[str, int], int] = {}
        self._seen_admin: dict[str, bool] = {}
        self._rearm_after_reconnect: list[Callable[[], None]] = []
        self._disconnected = False
        self._session_losses = 0

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
        client = KazooClient(
            hosts=self._zk_connect, timeout=self._session_timeout,
            # Reconnect for as long as we run (ZooKeeper may be paused by a scenario) ...
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
            # ... but one command never waits forever.
            command_retry={"max_tries": 5, "delay": 0.1, "backoff": 2, "max_delay": 1.0,
                           "deadline": self._read_timeout * 2},
        )
        self._client = client
        try:
            try:
                client.start(timeout=self._connect_timeout)
            except KazooTimeoutError:
                raise ZkUnavailable(f"cannot connect to ZooKeeper at {self._zk_connect} "
                                    f"within {self._connect_timeout:.0f} s") from None
            self._installer = threading.Thread(target=self._install_loop, name="zk-observer-watches",
                                               daemon=True)
            self._installer.start()
            self._install_root_watches(client)
            self._drain_installs()
            self._started = True
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Idempotent: drops every watch and closes the session, within about ``stop_timeout``
        even when ZooKeeper does not answer."""
        self._stopping = True
        installer, self._installer = self._installer, None
        if installer is not None:
            self._installs.put(None)
        client, self._client = self._client, None
        if client is not None:
            # Closing first also fails whatever the installer thread is waiting for.  A graceful
            # close waits for ZooKeeper's answer (~10 s when it is paused): bound our wait; the
            # session then expires on the server and the thread ends by itself.
            closer = threading.Thread(target=_close_quietly, args=(client,), name="zk-observer-close",
                                      daemon=True)
            closer.start()
            closer.join(timeout=self._stop_timeout)
            if closer.is_alive():
                log.info("ZooKeeper at %s did not confirm closing the observer's session within "
                         "%.0f s; leaving it to expire", self._zk_connect, self._stop_timeout)
        if installer is not None:
            installer.join(timeout=1.0)
        self._started = False
        with self._changed:
            self._changed.notify_all()

    @property
    def zk_connect(self) -> str:
        return self._zk_connect

    @property
    def session_losses(self) -> int:
        """How often the observer's own ZK session expired (watches were re-armed each time;
        changes during the gap show in snapshots but may have no event)."""
        return self._session_losses

    def _require_client(self) -> KazooClient:
        if self._client is None or self._stopping:
            raise HarnessError("ZkObserver is not started")
        return self._client

    # ------------------------------------------------------------------ watches

    def _install_root_watches(self, client: KazooClient) -> None:
        # Kafka creates these persistent paths itself at start-up (createTopLevelPaths); making
        # sure they exist lets the observer start before the first broker.
        client.ensure_path(zkpaths.BROKER_IDS)
        client.ensure_path(zkpaths.BROKER_TOPICS)
        self._children_watch(zkpaths.BROKER_IDS, self._on_broker_ids)
        self._data_watch(zkpaths.CONTROLLER, self._on_controller)
        self._data_watch(zkpaths.CONTROLLER_EPOCH, lambda at, data, stat, baseline: None)
        self._existence_watch(zkpaths.REASSIGN_PARTITIONS, REASSIGNMENT)
        self._existence_watch(zkpaths.PREFERRED_REPLICA_ELECTION, PREFERRED_ELECTION)
        client.add_listener(self._on_session_state)
        if self._topics is None:
            self._children_watch(zkpaths.BROKER_TOPICS, self._on_topic_list)
        else:
            for topic in sorted(self._topics):
                self._install(lambda t=topic: self._watch_topic(t))

    def _install(self, job: Callable[[], None]) -> None:
        if not self._stopping:
            self._installs.put(job)

    def _install_loop(self) -> None:
        while True:
            job = self._installs.get()
            if job is None or self._stopping:
                return
            try:
                job()
            except Exception:  # a failed install must not end the loop; stop() closes the client
                if not self._stopping:
                    log.exception("installing a ZooKeeper watch failed")

    def _drain_installs(self) -> None:
        """Wait until watches queued so far (and those they queue) are installed, bounded."""
        deadline = time.monotonic() + self._read_timeout * 4
        for _ in range(3):  # topics queue partitions, which queue nothing further
            done = threading.Event()
            self._installs.put(done.set)
            if not done.wait(timeout=max(0.0, deadline - time.monotonic())):
                raise ZkUnavailable(f"installing ZooKeeper watches on {self._zk_connect} timed out")

    def _data_watch(self, path: str,
                    handler: Callable[[float, bytes | None, ZnodeStat | None, bool], None]) -> None:
        """DataWatch calling ``handler(at, data, stat, baseline)``; ``baseline`` is True for the
        first call of a watch installed during start() (existing state, not an event)."""
        client = self._require_client()
        installed_during_start = not self._started
        first = _first_call_flag()

        def on_change(data: bytes | None, stat: ZnodeStat | None, event: Any = None) -> bool | None:
            at = time.time()
            if self._stopping:
                return False  # tells kazoo to drop this watch
            baseline = first() and installed_during_start
            try:
                handler(at, data, stat, baseline)
            except Exception:  # a bad znode must not kill the watch (kazoo would log and stop)
                log.exception("handling a change of %s", path)
            self._wake()
            return None

        DataWatch(client, path, on_change)

    def _children_watch(self, path: str, handler: Callable[[float, list[str], bool], None]) -> None:
        client = self._require_client()
        installed_during_start = not self._started
        first = _first_call_flag()

        def on_children(children: list[str]) -> bool | None:
            at = time.time()
            if self._stopping:
                return False
            baseline = first() and installed_during_start
            try:
                handler(at, children, baseline)
            except Exception:
                log.exception("handling children of %s", path)
            self._wake()
            return None

        ChildrenWatch(client, path, on_children)

    def _existence_watch(self, path: str, kind: str) -> None:
        """Records ``kind`` events with data {"pending": bool} when ``path`` appears or goes.

        Not a DataWatch: the controller deletes its admin znodes within milliseconds, and a
        DataWatch that re-reads after the creation finds nothing changed and stays silent.  A raw
        exists watch is told the event type, and re-arming it tells whether the node is still
        there (its deletion may have happened before the watch was re-armed).
        """
        last: dict[str, bool] = {}

        def record(at: float, exists: bool) -> None:
            if "exists" in last and exists != last["exists"]:
                self._wake(ObservedEvent(at=at, kind=kind, data={"pending": exists}))
            last["exists"] = exists
            self._seen_admin[kind] = exists

        def arm() -> None:
            if self._stopping or self._client is None:
                return
            client = self._client
            try:
                stat = client.retry(client.exists, path, watch=on_event)
            except KazooException as exc:  # re-armed once the connection is back
                log.info("watch on %s not armed yet (%s)", path, type(exc).__name__)
                return
            record(time.time(), stat is not None)
            self._wake()

        def on_event(event: WatchedEvent) -> None:
            at = time.time()
            if self._stopping:
                return
            if event.type == EventType.CREATED:
                record(at, True)
            elif event.type == EventType.DELETED:
                record(at, False)
            self._wake()
            self._install(arm)  # one-shot: re-arm, off kazoo's callback thread

        arm()
        self._rearm_after_reconnect.append(arm)

    def _on_session_state(self, state: str) -> None:
        # Runs on kazoo's connection thread: only queue work.  ZooKeeper drops every watch of an
        # expired session; kazoo's recipes re-arm their own, the raw exists watches are ours
        # (re-arming one that survived is harmless: kazoo keeps one entry per callback).
        if state == KazooState.LOST:
            self._session_losses += 1
        if state in (KazooState.LOST, KazooState.SUSPENDED):
            self._disconnected = True
        elif state == KazooState.CONNECTED and self._disconnected:
            self._disconnected = False
            for arm in self._rearm_after_reconnect:
                self._install(arm)
        self._wake()

    def _wake(self, event: ObservedEvent | None = None) -> None:
        with self._changed:
            if event is not None:
                self._events.append(event)
                log.debug("observed %s", event)
            self._generation += 1
            self._changed.notify_all()

    def _on_broker_ids(self, at: float, children: list[str], baseline: bool) -> None:
        current = {int(c) for c in children if c.isdigit()}
        previous, self._brokers = self._brokers, current
        if baseline:
            return
        previous = previous or set()
        for broker_id in sorted(previous - current):
            self._wake(ObservedEvent(at=at, kind=BROKER_GONE, broker_id=broker_id))
        for broker_id in sorted(current - previous):
            self._wake(ObservedEvent(at=at, kind=BROKER_REGISTERED, broker_id=broker_id))

    def _on_controller(self, at: float, data: bytes | None, stat: ZnodeStat | None,
                       baseline: bool) -> None:
        # kazoo calls this only when the znode's mzxid changed: a new election, even if the same
        # broker won again, or the znode's removal (controller = None).
        if not baseline:
            controller = zkpaths.parse_controller(data) if data is not None else None
            self._wake(ObservedEvent(at=at, kind=CONTROLLER_CHANGED, broker_id=controller,
                                     data={"controller": controller}))

    def _on_topic_list(self, at: float, children: list[str], baseline: bool) -> None:
        for topic in sorted(set(children) - self._watched_topics):
            self._install(lambda t=topic: self._watch_topic(t))

    def _watch_topic(self, topic: str) -> None:
        if topic in self._watched_topics or self._stopping:
            return
        self._watched_topics.add(topic)

        had_data = [False]

        def on_assignment(at: float, data: bytes | None, stat: ZnodeStat | None, baseline: bool) -> None:
            if data is None:
                # Not created yet is no event; deleted (topic deletion) is.
                if had_data[0] and not baseline:
                    self._wake(ObservedEvent(at=at, kind=TOPIC_ASSIGNMENT, topic=topic, data=None))
                had_data[0] = False
                return
            had_data[0] = True
            assignment = zkpaths.parse_topic_assignment(data, topic)
            if not baseline:
                self._wake(ObservedEvent(
                    at=at, kind=TOPIC_ASSIGNMENT, topic=topic,
                    data={"partitions": {p: list(r) for p, r in assignment.partitions.items()},
                          "adding_replicas": {p: list(r) for p, r in assignment.adding_replicas.items()},
                          "removing_replicas": {p: list(r) for p, r in assignment.removing_replicas.items()},
                          "version": stat.version if stat is not None else -1}))
            for partition in sorted(assignment.partitions):
                if (topic, partition) not in self._watched_states:
                    self._install(lambda p=partition: self._watch_state(topic, p))

        def on_config(at: float, data: bytes | None, stat: ZnodeStat | None, baseline: bool) -> None:
            if not baseline:
                self._wake(ObservedEvent(at=at, kind=TOPIC_CONFIG, topic=topic,
                                         data={"config": zkpaths.parse_topic_config(data, topic)}))

        self._data_watch(zkpaths.topic_path(topic), on_assignment)
        self._data_watch(zkpaths.topic_config_path(topic), on_config)

    def _watch_state(self, topic: str, partition: int) -> None:
        if (topic, partition) in self._watched_states or self._stopping:
            return
        self._watched_states.add((topic, partition))
        where = f"state of {topic}-{partition}"

        had_data = [False]

        def on_state(at: float, data: bytes | None, stat: ZnodeStat | None, baseline: bool) -> None:
            self._seen_state_versions[(topic, partition)] = stat.version if stat is not None else -1
            if data is None:
                # Not created yet is no event; deleted (topic deletion) is.
                if had_data[0] and not baseline:
                    self._wake(ObservedEvent(at=at, kind=PARTITION_STATE, topic=topic,
                                             partition=partition, data=None))
                had_data[0] = False
                return
            had_data[0] = True
            if baseline:
                return
            state = zkpaths.parse_partition_state(data, where)
            self._wake(ObservedEvent(
                at=at, kind=PARTITION_STATE, topic=topic, partition=partition,
                data={"leader": state.leader, "leader_epoch": state.leader_epoch,
                      "isr": list(state.isr), "controller_epoch": state.controller_epoch,
                      "leader_recovery_state": state.leader_recovery_state,
                      "version": stat.version if stat is not None else -1}))

        self._data_watch(zkpaths.partition_state_path(topic, partition), on_state)

    # ------------------------------------------------------------------ reading

    def _await(self, result: Any, deadline: float, path: str, missing: Any = None) -> Any:
        try:
            return result.get(timeout=max(0.0, deadline - time.monotonic()))
        except NoNodeError:
            return missing
        except KazooTimeoutError:
            raise ZkUnavailable(f"ZooKeeper at {self._zk_connect} did not answer a read of {path} "
                                f"in time") from None
        except KazooException as exc:
            raise ZkUnavailable(f"reading {path} from ZooKeeper at {self._zk_connect} failed: "
                                f"{type(exc).__name__}") from exc

    def snapshot(self, topics: Iterable[str] | None = None) -> ZkSnapshot:
        """Read the current state; ``topics`` None means the observed topics (or all).
        Raises ZkUnavailable when ZooKeeper does not answer within ``read_timeout``."""
        return self._read_snapshot(topics, self._read_timeout)

    def _read_snapshot(self, topics: Iterable[str] | None, timeout: float) -> ZkSnapshot:
        if isinstance(topics, str):
            raise UsageError(f"topics must be a list of names, not the string {topics!r}")
        client = self._require_client()
        deadline = time.monotonic() + timeout
        wanted = self._topics if topics is None else frozenset(topics)
        # Round trip 1: the cluster-level znodes (requests are pipelined on one connection).
        ids_r = client.get_children_async(zkpaths.BROKER_IDS)
        ctrl_r = client.get_async(zkpaths.CONTROLLER)
        epoch_r = client.get_async(zkpaths.CONTROLLER_EPOCH)
        reassign_r = client.exists_async(zkpaths.REASSIGN_PARTITIONS)
        preferred_r = client.exists_async(zkpaths.PREFERRED_REPLICA_ELECTION)
        topics_r = client.get_children_async(zkpaths.BROKER_TOPICS) if wanted is None else None
        ids = self._await(ids_r, deadline, zkpaths.BROKER_IDS, missing=[])
        ctrl = self._await(ctrl_r, deadline, zkpaths.CONTROLLER)
        epoch = self._await(epoch_r, deadline, zkpaths.CONTROLLER_EPOCH)
        reassign_stat = self._await(reassign_r, deadline, zkpaths.REASSIGN_PARTITIONS)
        preferred_stat = self._await(preferred_r, deadline, zkpaths.PREFERRED_REPLICA_ELECTION)
        topic_names = sorted(wanted) if wanted is not None else sorted(
            self._await(topics_r, deadline, zkpaths.BROKER_TOPICS, missing=[]))
        # Round trip 2: broker registrations (for their epochs), topic znodes and configs.
        broker_ids = sorted(int(c) for c in ids if c.isdigit())
        broker_rs = {b: client.exists_async(zkpaths.broker_path(b)) for b in broker_ids}
        topic_rs = {t: client.get_async(zkpaths.topic_path(t)) for t in topic_names}
        config_rs = {t: client.get_async(zkpaths.topic_config_path(t)) for t in topic_names}
        live: dict[int, int] = {}
        for b, r in broker_rs.items():
            stat = self._await(r, deadline, zkpaths.broker_path(b))
            if stat is not None:  # gone between the two reads
                live[b] = stat.czxid  # the broker epoch (KafkaZkClient.registerBroker)
        assignments: dict[str, zkpaths.TopicAssignment] = {}
        for t, r in topic_rs.items():
            got = self._await(r, deadline, zkpaths.topic_path(t))
            if got is not None:
                assignments[t] = zkpaths.parse_topic_assignment(got[0], t)
        configs: dict[str, Mapping[str, str]] = {}
        for t, r in config_rs.items():
            got = self._await(r, deadline, zkpaths.topic_config_path(t))
            if t in assignments:
                configs[t] = zkpaths.parse_topic_config(got[0], t) if got is not None else {}
        # Round trip 3: every partition's state znode.
        state_rs = {(t, p): client.get_async(zkpaths.partition_state_path(t, p))
                    for t, a in assignments.items() for p in a.partitions}
        partitions: dict[tuple[str, int], PartitionZkState] = {}
        for (t, p), r in state_rs.items():
            path = zkpaths.partition_state_path(t, p)
            got = self._await(r, deadline, path)
            state = zkpaths.parse_partition_state(got[0], path) if got is not None else None
            version = got[1].version if got is not None else -1
            partitions[(t, p)] = partition_zk_state(t, p, assignments[t], state, version)
        return ZkSnapshot(
            taken_at=time.time(),
            live_brokers=live,
            controller=zkpaths.parse_controller(ctrl[0]) if ctrl is not None else None,
            controller_epoch=zkpaths.parse_controller_epoch(epoch[0]) if epoch is not None else None,
            partitions=partitions,
            topic_configs=configs,
            pending_reassignment=reassign_stat is not None,
            pending_preferred_election=preferred_stat is not None,
            topic_ids={t: a.topic_id for t, a in assignments.items()},
        )

    # ------------------------------------------------------------------ waiting

    def _wait_for_change(self, seen_generation: int, timeout: float) -> int:
        """Block until a watch fires after ``seen_generation`` or ``timeout`` passes."""
        with self._changed:
            self._changed.wait_for(lambda: self._generation != seen_generation or self._stopping,
                                   timeout=max(0.0, timeout))
            return self._generation

    def _events_caught_up(self, snap: ZkSnapshot) -> bool:
        """Have the watches recorded everything this snapshot shows?  A snapshot's reads can
        overtake a watch that fired but whose callback (a re-read, on kazoo's one callback
        thread) has not run yet."""
        if self._brokers is not None and self._brokers != set(snap.live_brokers):
            return False
        if self._seen_admin.get(REASSIGNMENT, snap.pending_reassignment) != snap.pending_reassignment:
            return False
        if (self._seen_admin.get(PREFERRED_ELECTION, snap.pending_preferred_election)
                != snap.pending_preferred_election):
            return False
        for (topic, partition), state in snap.partitions.items():
            observed = self._topics is None or topic in self._topics
            if observed and state.version >= 0:
                # Also covers a new partition whose state watch is not installed yet.
                if self._seen_state_versions.get((topic, partition), -1) < state.version:
                    return False
        return True

    def _wait_events_caught_up(self, snap: ZkSnapshot, timeout: float) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._stopping or self._events_caught_up(snap),
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

    def wait_broker_gone(self, broker_id: int, timeout: float) -> ZkSnapshot:
        return self.wait_until(lambda s: broker_id not in s.live_brokers, timeout=timeout,
                               description=f"broker {broker_id} to leave /brokers/ids")

    def wait_broker_registered(self, broker_id: int, timeout: float, *,
                               newer_than_epoch: int | None = None) -> ZkSnapshot:
        """Wait for ``/brokers/ids/N``; with ``newer_than_epoch``, for a *new* registration."""
        def registered(s: ZkSnapshot) -> bool:
            epoch = s.live_brokers.get(broker_id)
            return epoch is not None and (newer_than_epoch is None or epoch > newer_than_epoch)
        return self.wait_until(registered, timeout=timeout,
                               description=f"broker {broker_id} to register in /brokers/ids")

    def wait_event(self, kind: str, *, after: float, timeout: float, description: str,
                   broker_id: int | None = None, topic: str | None = None,
                   partition: int | None = None,
                   where: Callable[[ObservedEvent], bool] | None = None) -> ObservedEvent:
        """Wait for the first matching event at or after ``after`` (see :meth:`first_event`)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._first_event_locked(kind, after, broker_id, topic, partition, where)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping:
                    break
                self._changed.wait(timeout=remaining)
        try:
            last: ZkSnapshot | None = self.snapshot()
        except ZkUnavailable:
            last = None
        raise ConvergenceTimeout(description, last, timeout)

    # ------------------------------------------------------------------ events

    def events_since(self, t: float) -> list[ObservedEvent]:
        """Events stamped at or after ``t``, oldest first.  (Callbacks run on two threads, so
        the order of recording may differ from the order of the stamps by a few microseconds.)"""
        with self._changed:
            return sorted((e for e in self._events if e.at >= t), key=lambda e: e.at)

    def _first_event_locked(self, kind: str, after: float, broker_id: int | None, topic: str | None,
                            partition: int | None,
                            where: Callable[[ObservedEvent], bool] | None) -> ObservedEvent | None:
        found: ObservedEvent | None = None
        for event in self._events:
            if (event.at >= after and event.kind == kind
                    and (found is None or event.at < found.at)
                    and (broker_id is None or event.broker_id == broker_id)
                    and (topic is None or event.topic == topic)
                    and (partition is None or event.partition == partition)
                    and (where is None or where(event))):
                found = event
        return found

    def first_event(self, kind: str, *, after: float, broker_id: int | None = None,
                    topic: str | None = None, partition: int | None = None,
                    where: Callable[[ObservedEvent], bool] | None = None) -> ObservedEvent | None:
        with self._changed:
            return self._first_event_locked(kind, after, broker_id, topic, partition, where)

    def broker_gone_at(self, broker_id: int, after: float) -> float | None:
        event = self.first_event(BROKER_GONE, after=after, broker_id=broker_id)
        return event.at if event else None

    def broker_registered_at(self, broker_id: int, after: float) -> float | None:
        event = self.first_event(BROKER_REGISTERED, after=after, broker_id=broker_id)
        return event.at if event else None

    def new_leader_at(self, topic: str, partition: int, *, after: float, old_leader: int) -> float | None:
        """When the state znode first showed a live-looking leader other than ``old_leader``."""
        event = self.first_event(
            PARTITION_STATE, after=after, topic=topic, partition=partition,
            where=lambda e: e.data is not None and e.data["leader"] not in (old_leader, NO_LEADER))
        return event.at if event else None

    # ------------------------------------------------------------------ writers

    def _create_once(self, path: str, data: bytes, what: str) -> None:
        """Create an admin znode that the controller deletes when done; refuse if one is pending."""
        client = self._require_client()
        try:
            client.retry(client.create, path, data, makepath=True)
        except NodeExistsError:
            # A retried create whose first attempt got through finds its own bytes there.
            try:
                existing, _ = client.get(path)
            except NoNodeError:
                existing = None
            if existing != data:
                raise HarnessError(f"{what}: {path} already exists (a previous request is still "
                                   f"pending); wait for it to finish first") from None
        except KazooException as exc:
            raise ZkUnavailable(f"{what}: writing {path} failed: {type(exc).__name__}") from exc

    def write_reassignment(self, moves: Iterable[tuple[str, int, Sequence[int]]]) -> None:
        """Start reassignments the way pre-2.4 ``kafka-reassign-partitions --zookeeper`` did:
        create ``/admin/reassign_partitions``; the controller removes entries as they finish
        (KafkaController.processZkPartitionReassignment)."""
        self._create_once(zkpaths.REASSIGN_PARTITIONS, zkpaths.encode_reassignment(moves),
                          "partition reassignment")

    def write_preferred_election(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Create ``/admin/preferred_replica_election``; the controller deletes it when done
        (KafkaController.processReplicaLeaderElection, ZkTriggered)."""
        self._create_once(zkpaths.PREFERRED_REPLICA_ELECTION,
                          zkpaths.encode_preferred_election(partitions), "preferred replica election")

    def set_topic_config(self, topic: str, config: Mapping[str, str | None], *,
                         replace: bool = False) -> dict[str, str]:
        """Change a topic's dynamic config as AdminZkClient.changeTopicConfig does: write
        ``/config/topics/<t>`` then a sequential ``/config/changes/config_change_`` notification
        that makes every broker (and the controller) reload it.

        Keys map to string values; None removes a key.  Without ``replace`` the change is merged
        into the existing overrides (as ``kafka-configs --alter --add-config``).  Returns the
        config written.
        """
        client = self._require_client()
        path = zkpaths.topic_config_path(topic)
        try:
            # AdminZkClient.validateTopicConfig: the topic must exist.
            if client.retry(client.exists, zkpaths.topic_path(topic)) is None:
                raise HarnessError(f"cannot configure topic {topic!r}: it does not exist")
            try:
                current = zkpaths.parse_topic_config(client.retry(client.get, path)[0], topic)
            except NoNodeError:
                current = {}
            merged = {} if replace else dict(current)
            for key, value in config.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            data = zkpaths.encode_topic_config(merged)
            # KafkaZkClient.setOrCreateEntityConfigs: set, else create, else set again.
            try:
                client.retry(client.set, path, data)
            except NoNodeError:
                try:
                    client.retry(client.create, path, data, makepath=True)
                except NodeExistsError:
                    client.retry(client.set, path, data)
            # KafkaZkClient.createConfigChangeNotification.
            client.retry(client.ensure_path, zkpaths.CONFIG_CHANGES)
            client.retry(client.create, zkpaths.config_change_sequence_prefix(),
                         zkpaths.encode_config_change(zkpaths.topic_entity_path(topic)),
                         sequence=True)
        except KazooException as exc:
            raise ZkUnavailable(f"changing config of topic {topic!r} failed: {type(exc).__name__}") from exc
        log.info("topic %s config now %s", topic, merged)
        return merged

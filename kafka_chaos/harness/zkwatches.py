"""The watches of :class:`harness.observer.ZkObserver`: which znodes are watched, and which
typed event (:mod:`harness.zkevents`) each change becomes.

:class:`ZkWatches` keeps watches on ``/brokers/ids``, ``/controller``, ``/controller_epoch``,
the admin znodes and, for each observed topic, the topic znode, its config znode and every
partition's ``state`` znode.  Each watch that fires hands an event (or just a wake-up) to the
observer's ``record`` callback.

ZooKeeper watches are one-shot and re-armed by kazoo after each read, so two writes in quick
succession may show as one event; the snapshot (with the znode ``version``) is the authority,
events are for timing.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kafka_chaos.harness import zkpaths
from kafka_chaos.harness.zkclient import ZkUnavailable
from kafka_chaos.harness.zkevents import (
    ADMIN_ZNODE_KINDS,
    AdminZnodeChanged,
    BrokerGone,
    BrokerRegistered,
    ControllerChanged,
    PartitionStateDeleted,
    PartitionStateWritten,
    TopicAssignmentChanged,
    TopicConfigChanged,
    TopicDeleted,
    ZkEvent,
)
from kafka_chaos.harness.zksnapshot import ZkSnapshot

log = logging.getLogger(__name__)

Record = Callable[[ZkEvent | None], None]
DataHandler = Callable[[float, bytes | None, ZnodeStat | None, bool], None]


def _first_call_flag() -> Callable[[], bool]:
    """Returns a function that answers True once, then False."""
    state = {"first": True}

    def first() -> bool:
        was, state["first"] = state["first"], False
        return was
    return first


class ZkWatches:
    """Installs and re-arms the observer's watches; see the module docstring.

    ``topics`` None watches every topic (new ones are picked up by a watch on
    ``/brokers/topics``).  ``record(event)`` is called for every change (``record(None)`` for a
    change that is no event, e.g. a reconnect), from kazoo's callback thread or ours.

    About 300 lines as one class on purpose: every watch shares the install queue and thread,
    the stop flag, and the seen-so-far state that :meth:`caught_up_with` compares, and split
    apart they would only pass all of that around.
    """

    def __init__(self, client: KazooClient, zk_connect: str, topics: frozenset[str] | None,
                 record: Record, *, install_timeout: float) -> None:
        self._client = client
        self._zk_connect = zk_connect
        self._topics = topics
        self._record = record
        self._install_timeout = install_timeout
        self._started = False
        self._stopping = False
        # Watch callbacks run on kazoo's single callback thread; installing a watch costs a
        # round trip, so new watches are installed on our own thread instead.
        self._installs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._installer: threading.Thread | None = None
        self._watched_topics: set[str] = set()
        self._watched_states: set[tuple[str, int]] = set()
        # What the watches have seen so far, to tell when events have caught up with a snapshot.
        self._brokers: set[int] | None = None
        self._seen_state_versions: dict[tuple[str, int], int] = {}
        self._seen_admin: dict[str, bool] = {}  # admin znode path -> exists
        self._rearm_after_reconnect: list[Callable[[], None]] = []
        self._disconnected = False
        self._session_losses = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Install every watch and return once they are armed (bounded by ``install_timeout``)."""
        self._installer = threading.Thread(target=self._install_loop, name="zk-observer-watches",
                                           daemon=True)
        self._installer.start()
        self._install_root_watches()
        self._drain_installs()
        self._started = True

    def begin_stop(self) -> None:
        """Stop recording; callbacks drop their watches.  Then close the client (which also
        fails whatever the installer thread is waiting for) and call :meth:`join`."""
        self._stopping = True
        if self._installer is not None:
            self._installs.put(None)

    def join(self, timeout: float) -> None:
        installer, self._installer = self._installer, None
        if installer is not None:
            installer.join(timeout=timeout)

    @property
    def session_losses(self) -> int:
        return self._session_losses

    # ------------------------------------------------------------------ catching up

    def caught_up_with(self, snap: ZkSnapshot) -> bool:
        """Have the watches recorded everything this snapshot shows?  A snapshot's reads can
        overtake a watch that fired but whose callback (a re-read, on kazoo's one callback
        thread) has not run yet."""
        if self._brokers is not None and self._brokers != set(snap.live_brokers):
            return False
        pending = {zkpaths.REASSIGN_PARTITIONS: snap.pending_reassignment,
                   zkpaths.PREFERRED_REPLICA_ELECTION: snap.pending_preferred_election}
        if any(self._seen_admin.get(path, shown) != shown for path, shown in pending.items()):
            return False
        for (topic, partition), state in snap.partitions.items():
            observed = self._topics is None or topic in self._topics
            if observed and state.version >= 0:
                # Also covers a new partition whose state watch is not installed yet.
                if self._seen_state_versions.get((topic, partition), -1) < state.version:
                    return False
        return True

    # ------------------------------------------------------------------ installing

    def _install_root_watches(self) -> None:
        client = self._client
        # Kafka creates these persistent paths itself at start-up (createTopLevelPaths); making
        # sure they exist lets the observer start before the first broker.
        client.ensure_path(zkpaths.BROKER_IDS)
        client.ensure_path(zkpaths.BROKER_TOPICS)
        self._children_watch(zkpaths.BROKER_IDS, self._on_broker_ids)
        self._data_watch(zkpaths.CONTROLLER, self._on_controller)
        self._data_watch(zkpaths.CONTROLLER_EPOCH, lambda at, data, stat, baseline: None)
        for path in ADMIN_ZNODE_KINDS:
            self._existence_watch(path)
        client.add_listener(self._on_session_state)
        if self._topics is None:
            self._children_watch(zkpaths.BROKER_TOPICS, self._on_topic_list)
        else:
            for topic in sorted(self._topics):
                self._install(partial(self._watch_topic, topic))

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
        deadline = time.monotonic() + self._install_timeout
        for _ in range(3):  # topics queue partitions, which queue nothing further
            done = threading.Event()
            self._installs.put(done.set)
            if not done.wait(timeout=max(0.0, deadline - time.monotonic())):
                raise ZkUnavailable(f"installing ZooKeeper watches on {self._zk_connect} timed out")

    def _data_watch(self, path: str, handler: DataHandler) -> None:
        """DataWatch calling ``handler(at, data, stat, baseline)``; ``baseline`` is True for the
        first call of a watch installed during start() (existing state, not an event)."""
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
            self._record(None)
            return None

        DataWatch(self._client, path, on_change)

    def _children_watch(self, path: str, handler: Callable[[float, list[str], bool], None]) -> None:
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
            self._record(None)
            return None

        ChildrenWatch(self._client, path, on_children)

    def _existence_watch(self, path: str) -> None:
        """Records :class:`AdminZnodeChanged` events when ``path`` appears or goes.

        Not a DataWatch: the controller deletes its admin znodes within milliseconds, and a
        DataWatch that re-reads after the creation finds nothing changed and stays silent.  A raw
        exists watch is told the event type, and re-arming it tells whether the node is still
        there (its deletion may have happened before the watch was re-armed).
        """
        last: dict[str, bool] = {}

        def note(at: float, exists: bool) -> None:
            if "exists" in last and exists != last["exists"]:
                self._record(AdminZnodeChanged(at=at, znode=path, pending=exists))
            last["exists"] = exists
            self._seen_admin[path] = exists

        def arm() -> None:
            if self._stopping:
                return
            client = self._client
            try:
                stat = client.retry(client.exists, path, watch=on_event)
            except KazooException as exc:  # re-armed once the connection is back
                log.info("watch on %s not armed yet (%s)", path, type(exc).__name__)
                return
            note(time.time(), stat is not None)
            self._record(None)

        def on_event(event: WatchedEvent) -> None:
            at = time.time()
            if self._stopping:
                return
            if event.type == EventType.CREATED:
                note(at, True)
            elif event.type == EventType.DELETED:
                note(at, False)
            self._record(None)
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
        self._record(None)

    # ------------------------------------------------------------------ what a change means

    def _on_broker_ids(self, at: float, children: list[str], baseline: bool) -> None:
        current = {int(c) for c in children if c.isdigit()}
        previous, self._brokers = self._brokers, current
        if baseline:
            return
        previous = previous or set()
        for broker_id in sorted(previous - current):
            self._record(BrokerGone(at=at, broker_id=broker_id))
        for broker_id in sorted(current - previous):
            self._record(BrokerRegistered(at=at, broker_id=broker_id))

    def _on_controller(self, at: float, data: bytes | None, stat: ZnodeStat | None,
                       baseline: bool) -> None:
        # kazoo calls this only when the znode's mzxid changed: a new election, even if the same
        # broker won again, or the znode's removal (controller = None).
        if not baseline:
            controller = zkpaths.parse_controller(data) if data is not None else None
            self._record(ControllerChanged(at=at, controller=controller))

    def _on_topic_list(self, at: float, children: list[str], baseline: bool) -> None:
        for topic in sorted(set(children) - self._watched_topics):
            self._install(partial(self._watch_topic, topic))

    def _watch_topic(self, topic: str) -> None:
        if topic in self._watched_topics or self._stopping:
            return
        self._watched_topics.add(topic)
        had_data = [False]

        def on_assignment(at: float, data: bytes | None, stat: ZnodeStat | None, baseline: bool) -> None:
            if data is None:
                # Not created yet is no event; deleted (topic deletion) is.
                if had_data[0] and not baseline:
                    self._record(TopicDeleted(at=at, topic=topic))
                had_data[0] = False
                return
            had_data[0] = True
            assignment = zkpaths.parse_topic_assignment(data, topic)
            if not baseline:
                self._record(TopicAssignmentChanged(
                    at=at, topic=topic, partitions=dict(assignment.partitions),
                    adding_replicas=dict(assignment.adding_replicas),
                    removing_replicas=dict(assignment.removing_replicas),
                    version=stat.version if stat is not None else -1))
            for partition in sorted(assignment.partitions):
                if (topic, partition) not in self._watched_states:
                    self._install(partial(self._watch_state, topic, partition))

        def on_config(at: float, data: bytes | None, stat: ZnodeStat | None, baseline: bool) -> None:
            if not baseline:
                self._record(TopicConfigChanged(at=at, topic=topic,
                                                config=zkpaths.parse_topic_config(data, topic)))

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
                    self._record(PartitionStateDeleted(at=at, topic=topic, partition=partition))
                had_data[0] = False
                return
            had_data[0] = True
            if baseline:
                return
            state = zkpaths.parse_partition_state(data, where)
            self._record(PartitionStateWritten(
                at=at, topic=topic, partition=partition, leader=state.leader,
                leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                controller_epoch=state.controller_epoch,
                leader_recovery_state=state.leader_recovery_state,
                version=stat.version if stat is not None else -1))

        self._data_watch(zkpaths.partition_state_path(topic, partition), on_state)

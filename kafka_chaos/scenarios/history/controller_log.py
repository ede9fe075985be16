"""What the controller itself logged about a fault: a pure parser of the lines of
``controller.log`` and ``state-change.log`` (or a container's single log, which holds both), and
the per-partition controller phases computed from them.

Every line used is logged at INFO by Kafka 3.9 — nothing needs DEBUG or TRACE:

=====================  ======================================================================
kind                   line (logger, Kafka 3.9 function)
=====================  ======================================================================
``broker_change``      ``[Controller id=C] Newly added brokers: …, deleted brokers: D, …``
                       (kafka.controller, ``KafkaController.processBrokerChange``: the
                       BrokerChange event is being processed, right after its ZooKeeper read)
``shutdown_request``   ``[Controller id=C] Shutting down broker B`` (``doControlledShutdown``:
                       the ControlledShutdown event is being processed)
``elected``            ``[Controller id=C] C successfully elected as the controller`` (``elect``)
``failover_ready``     ``[Controller id=C] Ready to serve as the new controller with epoch E``
                       (end of ``onControllerFailover``)
``partition_changed``  ``[Controller id=C epoch=E] Changed partition T-P from S to OnlinePartition
                       with state LeaderAndIsr(leader=L, leaderEpoch=N, …`` (state.change.logger,
                       ``ZkPartitionStateMachine.doHandleStateChanges``: logged once the
                       election's ZooKeeper write succeeded)
``isr_shrunk``         ``[Controller id=C epoch=E] Partition T-P state changed to (Leader:L,ISR:…,…
                       LeaderEpoch:N,…) after removing replica R from the ISR`` (state.change.logger,
                       ``ZkReplicaStateMachine.doRemoveReplicasFromIsr``, after the ZooKeeper write;
                       a dead or shut-down leader's partitions get their new leader here too)
``leader_and_isr``     ``[Controller id=C epoch=E] Sending LeaderAndIsr request to broker B with
                       X become-leader and Y become-follower partitions``
                       (``AbstractControllerBrokerRequestBatch.sendLeaderAndIsrRequest``)
``update_metadata``    ``[Controller id=C epoch=E] Sending UpdateMetadata request to brokers
                       Set(…) for N partitions`` (``sendUpdateMetadataRequests``)
``leader_started``     ``[Broker id=B] Leader T-P with topic id … starts at leader epoch N``
                       (``Partition.makeLeader`` via ``ReplicaManager.makeLeaders``: the new
                       leader applied LeaderAndIsr and serves); before topic ids (2.4.1)
                       ``[Partition T-P broker=B] T-P starts at leader epoch N``. Before 2.6
                       the controller logs "Changed partition" at TRACE and no "Sending
                       LeaderAndIsr" line (PartitionStateMachine / ControllerChannelManager
                       2.5.1 vs 2.6.3): a 2.4 or 2.5 run has no controller phases
``session_expired``    ``Expiring session 0x…, timeout of Nms exceeded`` (ZooKeeper 3.8's
                       ``ZooKeeperServer.expire``, on the ensemble's leader: the closeSession
                       that deletes the session's ephemeral znodes is submitted right after)
=====================  ======================================================================

Log4j's ``[%d]`` has no zone: the launchers run every JVM in UTC (``harness.node_logs.JVM_TIMEZONE_FLAG``);
``utc_offset_s`` reads logs written in another zone.
Only partitions of the topics asked for are kept (a 10,000-partition failover logs ~30,000).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_STAMP = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3})\] (\w+) (.*)$")
_CONTROLLER = r"\[Controller id=(?P<node>\d+)\] "
_STATE = r"\[Controller id=(?P<node>\d+) epoch=\d+\] "
_TP = r"(?P<topic>\S+)-(?P<partition>\d+)"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("broker_change", re.compile(_CONTROLLER + r"Newly added brokers: (?P<added>[\d,]*), deleted brokers: "
                                 r"(?P<brokers>[\d,]*), bounced brokers: (?P<bounced>[\d,]*), all live")),
    ("shutdown_request", re.compile(_CONTROLLER + r"Shutting down broker (?P<brokers>\d+)")),
    ("elected", re.compile(_CONTROLLER + r"\d+ successfully elected as the controller")),
    ("failover_ready", re.compile(_CONTROLLER + r"Ready to serve as the new controller")),
    ("partition_changed", re.compile(_STATE + r"Changed partition " + _TP + r" from \w+ to OnlinePartition "
                                     r"with state LeaderAndIsr\(leader=(?P<leader>-?\d+), leaderEpoch=(?P<epoch>\d+)")),
    ("isr_shrunk", re.compile(_STATE + r"Partition " + _TP + r" state changed to \(Leader:(?P<leader>-?\d+),"
                              r".*?LeaderEpoch:(?P<epoch>\d+)")),
    ("leader_and_isr", re.compile(_STATE + r"Sending LeaderAndIsr request to broker (?P<brokers>\d+) with "
                                  r"(?P<count>\d+) become-leader")),
    ("update_metadata", re.compile(_STATE + r"Sending UpdateMetadata request to brokers \w*\((?P<brokers>[\d, ]*)\) "
                                   r"for (?P<count>\d+) partitions")),
    ("leader_started", re.compile(r"\[Broker id=(?P<node>\d+)\] Leader " + _TP + r" with topic id .* starts at "
                                  r"leader epoch (?P<epoch>\d+)")),
    # the same, as releases before topic ids log it (Partition.makeLeader, 2.4.1)
    ("leader_started", re.compile(r"\[Partition " + _TP + r" broker=(?P<node>\d+)\] \S+ starts at "
                                  r"leader epoch (?P<epoch>\d+)")),
    ("session_expired", re.compile(r"Expiring session 0x[0-9a-f]+, timeout of \d+ms exceeded")),
)
# The lines that start processing a fault's controller event.
TRIGGERS = frozenset({"broker_change", "shutdown_request", "elected"})


@dataclass(frozen=True)
class LogEvent:
    """One parsed line: ``node`` is the controller (or, for ``leader_started``, the broker)
    that logged it; ``brokers`` the brokers it names (deleted, shut down, sent to)."""

    at: float
    kind: str
    node: int
    topic: str | None = None
    partition: int | None = None
    leader: int | None = None
    epoch: int | None = None
    brokers: tuple[int, ...] = ()
    count: int | None = None

    def to_list(self) -> list[Any]:
        return [self.at, self.kind, self.node, self.topic, self.partition, self.leader, self.epoch,
                list(self.brokers), self.count]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> LogEvent:
        return cls(float(v[0]), str(v[1]), int(v[2]), v[3], v[4], v[5], v[6], tuple(int(b) for b in v[7]), v[8])


def _ints(text: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.split(r"[,\s]+", text or "") if x)


def _opt_int(groups: Mapping[str, str | None], name: str) -> int | None:
    value = groups.get(name)
    return int(value) if value is not None else None


def parse_line(line: str, utc_offset_s: float = 0.0) -> LogEvent | None:
    """The event of one log line, None for every other line."""
    stamp = _STAMP.match(line)
    if stamp is None:
        return None
    message = stamp.group(9)
    for kind, pattern in _PATTERNS:
        found = pattern.search(message)
        if found is None:
            continue
        year, month, day, hour, minute, second, millis = (int(stamp.group(i)) for i in range(1, 8))
        at = calendar.timegm((year, month, day, hour, minute, second)) + millis / 1000.0 - utc_offset_s
        groups = found.groupdict()
        return LogEvent(at=round(at, 3), kind=kind, node=int(groups.get("node") or -1), topic=groups.get("topic"),
                        partition=_opt_int(groups, "partition"), leader=_opt_int(groups, "leader"),
                        epoch=_opt_int(groups, "epoch"), brokers=_ints(groups.get("brokers")),
                        count=_opt_int(groups, "count"))
    return None


def parse_lines(lines: Iterable[str], utc_offset_s: float = 0.0, *, after: float | None = None,
                topics: Iterable[str] | None = None) -> list[LogEvent]:
    """Every event of ``lines`` (at or after ``after`` when given; partition events of
    ``topics`` only when given), in time order (stable: the log's order within a millisecond)."""
    wanted = None if topics is None else frozenset(topics)
    events = []
    for line in lines:
        event = parse_line(line, utc_offset_s)
        if event is None or (after is not None and event.at < after):
            continue
        if wanted is not None and event.topic is not None and event.topic not in wanted:
            continue
        events.append(event)
    return sorted(events, key=lambda e: e.at)


@dataclass(frozen=True)
class ControllerPhases:
    """Epoch seconds of one partition's way through the controller after a fault; None where
    the logs do not say.  ``trigger_at``: the controller started processing the fault's event;
    ``written_at``: the new leader's ZooKeeper write was done (logged after it); ``sent_at``: the
    first LeaderAndIsr to the new leader after that; ``metadata_at``: the first UpdateMetadata
    after that; ``leader_at``: the new leader applied it; ``expired_at``: ZooKeeper expired the
    session whose ephemeral znode's deletion queued the trigger (None unless exactly one session
    expired between the fault and the trigger: with several the logs do not say which)."""

    controller: int | None
    trigger: str | None
    trigger_at: float | None
    written_at: float | None
    sent_at: float | None
    metadata_at: float | None
    leader_at: float | None
    expired_at: float | None = None


def expiry_before(events: Iterable[LogEvent], fault_at: float, trigger: LogEvent | None) -> float | None:
    """When ZooKeeper expired the session whose ephemeral znode's deletion queued ``trigger``:
    the one ``session_expired`` between the fault and the trigger; None when there is none, or
    several (the lines do not name the broker: a session id is all ZooKeeper logs)."""
    if trigger is None:
        return None
    expired = [e.at for e in events if e.kind == "session_expired" and fault_at <= e.at <= trigger.at]
    return expired[0] if len(expired) == 1 else None


def _first(events: Iterable[LogEvent], pred: Any) -> LogEvent | None:
    return next((e for e in events if pred(e)), None)


def partition_phases(events: Sequence[LogEvent], topic: str, partition: int, leader: int,
                     fault_at: float) -> ControllerPhases:
    """The phases of ``topic-partition`` moving to ``leader`` after ``fault_at``: the first
    trigger line after the fault (any controller: a controller kill's successor logs
    ``elected``), then that controller's ZooKeeper write naming ``leader``, its sends."""
    after = [e for e in events if e.at >= fault_at]
    trigger = _first(after, lambda e: e.kind in TRIGGERS)
    written = _first(after, lambda e: e.kind in ("partition_changed", "isr_shrunk") and e.topic == topic
                     and e.partition == partition and e.leader == leader
                     and (trigger is None or e.node == trigger.node))
    sent = metadata = started = None
    if written is not None:
        since = [e for e in after if e.at >= written.at]
        sent = _first(since, lambda e: e.kind == "leader_and_isr" and e.node == written.node and leader in e.brokers)
        metadata = _first(since, lambda e: e.kind == "update_metadata" and e.node == written.node and leader in e.brokers)
        started = _first(since, lambda e: e.kind == "leader_started" and e.node == leader and e.topic == topic
                         and e.partition == partition)
    return ControllerPhases(
        expired_at=expiry_before(after, fault_at, trigger),
        controller=written.node if written is not None else trigger.node if trigger is not None else None,
        trigger=trigger.kind if trigger is not None else None, trigger_at=trigger.at if trigger is not None else None,
        written_at=written.at if written is not None else None, sent_at=sent.at if sent is not None else None,
        metadata_at=metadata.at if metadata is not None else None, leader_at=started.at if started is not None else None)

"""Replicas on disk agree with the assignment: an invariant that needs no prediction.

Once a step settles, every live broker that no fault holds must have a log for each partition
assigned to it, and none for a partition that is not: the controller tells a broker to delete a
removed replica (StopReplica with ``deletePartition`` in ZooKeeper mode,
``ControllerChannelManager.addStopReplicaRequestForBrokers``; a partition change that drops the
broker from the replicas in KRaft, ``ReplicaManager.applyDelta``), and the broker drops the log
from its LogManager at once (``LogManager.asyncDelete``). KAFKA-16120 (3.6.1, fixed in 3.6.2) is
the kind this catches: in a migration's hybrid phase the KRaft controller sent that StopReplica
with ``deletePartition = false`` (``MigrationPropagator``), so the removed replica stayed on its
broker while every metadata view was right.

Not a stray: a replica removed while its broker could not be told — down at either end of the
step, re-registered during it (a new broker epoch: a controller drops requests to a broker that
left, ``ControllerChannelManager.removeBroker``), or held by a fault. A ZooKeeper-mode broker never
deletes such a log by itself (it only acts on the controller's requests), and a KRaft broker only
at start-up, from 3.7.1 and 3.8.0 on (``LogManager.isStrayKraftReplica``, KAFKA-16234), so such
logs are let be -- until a new KRaft controller of a migration sends the broker a full
LeaderAndIsr (from 3.6.1 a migrating ZooKeeper-mode broker then renames every log the request
does not name stray, KAFKA-15605: :func:`reconciled_brokers`). Not compared: topics being
deleted, partitions without a state (no LeaderAndIsr was sent yet), and the missing replicas of a
broker with an offline log directory (they are offline replicas, the oracle's business).

Pure functions of recorded snapshots and DescribeLogDirs answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.history.disk import DiskAnswer, DiskReplicas, Replica

CHECK = "replicas_on_disk"

BrokerReplica = tuple[int, str, int]  # (broker, topic, partition)


def assigned_replicas(snapshot: ZkSnapshot, topics: Iterable[str]) -> dict[int, frozenset[Replica]]:
    """Broker -> the partitions of ``topics`` assigned to it, those being deleted or without a
    state left out."""
    wanted = set(topics) - set(snapshot.topics_being_deleted)
    by_broker: dict[int, set[Replica]] = {}
    for (t, p), state in snapshot.partitions.items():
        if t in wanted and state.version >= 0:
            for b in state.replicas:
                by_broker.setdefault(b, set()).add((t, p))
    return {b: frozenset(rs) for b, rs in by_broker.items()}


def _assignment(snapshot: ZkSnapshot) -> set[BrokerReplica]:
    return {(b, t, p) for (t, p), s in snapshot.partitions.items() for b in s.replicas}


def _could_be_told(broker: int, before: ZkSnapshot, after: ZkSnapshot, held: Iterable[int]) -> bool:
    epoch = before.live_brokers.get(broker)
    return epoch is not None and after.live_brokers.get(broker) == epoch and broker not in set(held)


def removed(before: ZkSnapshot, after: ZkSnapshot) -> set[BrokerReplica]:
    """The replicas a step removed: assigned before it, not after (a deleted topic's too)."""
    return _assignment(before) - _assignment(after)


def removed_untold(before: ZkSnapshot, after: ZkSnapshot, held: Iterable[int]) -> set[BrokerReplica]:
    """The replicas a step removed from brokers that could not be told (module docstring)."""
    held = tuple(held)
    return {r for r in removed(before, after) if not _could_be_told(r[0], before, after, held)}


def reconciled_brokers(status_before: Mapping[str, Any] | None, status_after: Mapping[str, Any] | None,
                       before: ZkSnapshot, after: ZkSnapshot, held: Iterable[int]) -> frozenset[int]:
    """The migrating ZooKeeper-mode brokers a new KRaft leader reconciled in a step: when a KRaft
    controller becomes active in a migration (a new ``kraft_controller_epoch``), the
    KRaftMigrationDriver sends every broker a *full* LeaderAndIsr from its metadata image, and a
    broker in migration mode renames every log the request does not name stray
    (``ReplicaManager.becomeLeaderOrFollower``, 3.6.1 lines 1899-1908, 3.9 line 1933:
    ``updateStrayLogs(findStrayPartitionsFromLeaderAndIsr(...))``; added in 3.6.1 by KAFKA-15605).
    Those that could be told: live at both ends of the step with one broker epoch, unheld. The new
    leader shows first in the metadata log (the snapshots' KRaft view: a new quorum epoch), a moment
    before the driver's status says so: either counts."""
    if not status_before or not status_after:
        return frozenset()
    if not (_new_kraft_epoch(status_before.get("kraft_controller_epoch"), status_after.get("kraft_controller_epoch"))
            or (before.mode == after.mode == "kraft" and _new_kraft_epoch(before.controller_epoch, after.controller_epoch))):
        return frozenset()
    roles = {**(status_before.get("broker_roles") or {}), **(status_after.get("broker_roles") or {})}
    held = tuple(held)
    return frozenset(int(b) for b, role in roles.items()
                     if role == "hybrid" and _could_be_told(int(b), before, after, held))


def _new_kraft_epoch(before: object, after: object) -> bool:
    return isinstance(after, int) and (not isinstance(before, int) or after > before)


# One step as untold_removals reads it: (before, after, held, brokers a full LeaderAndIsr reconciled).
StepDisk = tuple[ZkSnapshot, ZkSnapshot | None, Sequence[int], frozenset[int]]


def untold_removals(steps: Sequence[StepDisk]) -> frozenset[BrokerReplica]:
    """Over a scenario's steps in order: the replicas removed from a broker that could not be
    told, during a step or between one step's end and the next one's start (a reassignment may
    finish there), not assigned to it again since, and not on a broker a full LeaderAndIsr
    reconciled since (:func:`reconciled_brokers`: it must have dropped them)."""
    untold: set[BrokerReplica] = set()
    previous: tuple[ZkSnapshot, Sequence[int]] | None = None
    for before, after, held, reconciled in steps:
        spans = ([(previous[0], before, previous[1])] if previous is not None else []) + \
                ([(before, after, held)] if after is not None else [])
        for start, end, span_held in spans:
            untold = (untold | removed_untold(start, end, span_held)) - _assignment(end)
        untold = {r for r in untold if r[0] not in reconciled}
        previous = (after, held) if after is not None else None
    return frozenset(untold)


@dataclass(frozen=True)
class Disagreement:
    strays: frozenset[BrokerReplica]  # on disk, not assigned
    missing: frozenset[BrokerReplica]  # assigned, not on disk

    def __bool__(self) -> bool:
        return bool(self.strays or self.missing)

    def describe(self) -> str:
        def listed(rs: frozenset[BrokerReplica]) -> str:
            return ", ".join(f"{t}-{p} on broker {b}" for b, t, p in sorted(rs))
        parts = ([f"not assigned, still on disk: {listed(self.strays)}"] if self.strays else []) + \
                ([f"assigned, no log: {listed(self.missing)}"] if self.missing else [])
        return "; ".join(parts)


def disagreement(after: ZkSnapshot, topics: Iterable[str], on_disk: Mapping[int, DiskReplicas],
                 tolerated: Iterable[BrokerReplica] = ()) -> Disagreement:
    """Where the brokers' answers and the assignment in ``after`` differ; ``tolerated`` strays
    (:func:`untold_removals`) left out."""
    topics = set(topics)
    assigned = assigned_replicas(after, topics)
    judged = topics - set(after.topics_being_deleted)
    tolerated = set(tolerated)
    strays: set[BrokerReplica] = set()
    missing: set[BrokerReplica] = set()
    for b, disk in on_disk.items():
        mine = assigned.get(b, frozenset())
        strays |= {(b, t, p) for t, p in disk.replicas - mine if t in judged} - tolerated
        if not disk.failed_dirs:
            missing |= {(b, t, p) for t, p in mine - disk.replicas}
    return Disagreement(frozenset(strays), frozenset(missing))


def check_replicas_on_disk(after: ZkSnapshot, topics: Iterable[str], on_disk: Mapping[int, DiskAnswer],
                           tolerated: Iterable[BrokerReplica] = ()) -> CheckResult:
    """One verdict for the step: pass when every broker that answered holds exactly its replicas;
    unknown when a broker did not answer (its disk is not known), unless another already fails."""
    topics = list(topics)
    answered = {b: a for b, a in on_disk.items() if isinstance(a, DiskReplicas)}
    silent = {b: a for b, a in on_disk.items() if isinstance(a, str)}
    found = disagreement(after, topics, answered, tolerated)
    observed = {str(b): sorted(f"{t}-{p}" for t, p in a.replicas) for b, a in sorted(answered.items())}
    expected = {str(b): sorted(f"{t}-{p}" for t, p in rs)
                for b, rs in sorted(assigned_replicas(after, topics).items()) if b in answered}
    if found:
        return CheckResult(CHECK, False, expected, observed, found.describe())
    if silent:
        return CheckResult(CHECK, None, expected, observed,
                           "; ".join(f"broker {b}: {why}" for b, why in sorted(silent.items())))
    return CheckResult(CHECK, True, expected, observed, f"{len(answered)} brokers hold exactly their replicas")


def disk_settled(before: ZkSnapshot, after: ZkSnapshot, topics: Iterable[str], held: Iterable[int],
                 on_disk: Mapping[int, DiskAnswer], reconciled: Iterable[int] = ()) -> bool:
    """What the observation waits for (bounded): every broker answered, holds a log of each of
    its replicas, and dropped the ones this step removed from it while it could be told, and a
    broker a full LeaderAndIsr reconciled every stray. Another stray from an earlier step is not
    waited for: nothing in Kafka will remove it now."""
    answered = {b: a for b, a in on_disk.items() if isinstance(a, DiskReplicas)}
    if len(answered) < len(on_disk):
        return False
    found = disagreement(after, topics, answered)
    told = removed(before, after) - removed_untold(before, after, held)
    reconciled = set(reconciled)
    return not found.missing and not (found.strays & told) and not any(b in reconciled for b, _, _ in found.strays)

"""Which brokers a fault hits: pure selectors over an observed state.

Like Jepsen's ``bisect`` / ``complete-grudge``, targeting is a pure function of plain data and is
kept apart from the effectful fault that applies it (kafkatest's ``replication_test.py`` does the
same with its ``leader`` / ``controller`` matrix argument). A selector resolves against a
:class:`TargetView` — built from a ZooKeeper snapshot (``harness.observer.ZkSnapshot``) or an
oracle ``ClusterState`` — and a seeded :class:`random.Random`, so the same seed replays the
same choices. The result is the broker ids plus a readable description for records and
progress lines ("broker 2 (leader of t-0)").
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kafka_chaos.harness.errors import UsageError
from kafka_chaos.oracle import ClusterState
from kafka_chaos.scenarios.model.coordinators import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, partition_for

if TYPE_CHECKING:
    from kafka_chaos.harness.zksnapshot import ZkSnapshot

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionView:
    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TargetView:
    """The little a selector needs: live brokers, the controller, every partition's roles.

    ``brokers`` is every broker of the cluster (live or not) when known; selectors naming a
    broker by id validate against it.
    """

    live_brokers: frozenset[int]
    controller: int | None
    partitions: Mapping[tuple[str, int], PartitionView]
    brokers: frozenset[int] = frozenset()

    def partition(self, topic: str, partition: int) -> PartitionView:
        try:
            return self.partitions[(topic, partition)]
        except KeyError:
            raise UsageError(f"no partition {topic}-{partition} in the observed state") from None

    @property
    def all_brokers(self) -> frozenset[int]:
        if self.brokers:
            return self.brokers
        replicas = {r for p in self.partitions.values() for r in p.replicas}
        return frozenset(self.live_brokers | replicas)


def view_of(state: ZkSnapshot | ClusterState | TargetView, brokers: Sequence[int] = ()) -> TargetView:
    """A :class:`TargetView` of a ZooKeeper snapshot, an oracle ``ClusterState`` (tests and the
    generator's model) or a view already."""
    if isinstance(state, TargetView):
        return state
    partitions: dict[tuple[str, int], PartitionView] = {}
    if isinstance(state, ClusterState):
        for topic, topic_state in state.topics.items():
            for p, ps in topic_state.partitions.items():
                partitions[(topic, int(p))] = PartitionView(tuple(ps.replicas), ps.leader, tuple(ps.isr))
    else:
        for (topic, p), zk in state.partitions.items():
            partitions[(topic, int(p))] = PartitionView(tuple(zk.replicas), zk.leader, tuple(zk.isr))
    # a ZkSnapshot's live brokers map id -> broker epoch: the ids
    return TargetView(frozenset(state.live_brokers), state.controller, partitions, frozenset(brokers))


@dataclass(frozen=True)
class Target:
    """What a selector chose: broker ids in a stable order and a readable description."""

    brokers: tuple[int, ...]
    description: str

    @property
    def broker(self) -> int:
        """The single broker of a one-broker target."""
        if len(self.brokers) != 1:
            raise ValueError(f"{self.description} is {len(self.brokers)} brokers, not one")
        return self.brokers[0]


class Selector(Protocol):
    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target: ...


def _tp(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _no_target(what: str) -> UsageError:
    return UsageError(f"cannot target {what}: no such broker in the observed state")


@dataclass(frozen=True)
class LeaderOf:
    topic: str
    partition: int = 0

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        leader = view.partition(self.topic, self.partition).leader
        if leader == NO_LEADER:
            raise _no_target(f"the leader of {_tp(self.topic, self.partition)} (it has none)")
        return Target((leader,), f"broker {leader} (leader of {_tp(self.topic, self.partition)})")

    def __str__(self) -> str:
        return f"leader of {_tp(self.topic, self.partition)}"


@dataclass(frozen=True)
class Controller:
    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        if view.controller is None or view.controller < 0:
            raise _no_target("the controller (none elected)")
        if view.brokers and view.controller not in view.brokers:  # KRaft: a controller node
            return Target((view.controller,), f"controller {view.controller} (quorum leader)")
        return Target((view.controller,), f"broker {view.controller} (controller)")

    def __str__(self) -> str:
        return "controller"


@dataclass(frozen=True)
class FollowerOf:
    """A live in-sync follower of the partition, chosen with the seeded RNG.

    ``spare_controller`` leaves the controller out: a follower cut off from its peers must not
    be the controller, or the leader's AlterPartition (the ISR shrink itself) could not reach it."""

    topic: str
    partition: int = 0
    spare_controller: bool = False

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        p = view.partition(self.topic, self.partition)
        followers = [r for r in p.replicas if r != p.leader and r in p.isr and r in view.live_brokers
                     and not (self.spare_controller and r == view.controller)]
        if not followers:
            raise _no_target(f"{self}")
        chosen = rng.choice(followers)
        return Target((chosen,), f"broker {chosen} (follower of {_tp(self.topic, self.partition)})")

    def __str__(self) -> str:
        spared = " other than the controller" if self.spare_controller else ""
        return f"a follower of {_tp(self.topic, self.partition)}{spared}"


@dataclass(frozen=True)
class NonControllerLeaderOf:
    """The leader of the lowest-numbered partition of ``topic`` that a live broker other than
    the controller leads — deterministic, and never the controller, so "a leader cut off" and
    "the controller cut off" stay two different scenarios."""

    topic: str

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        for (topic, p), pv in sorted(view.partitions.items()):
            if (topic == self.topic and pv.leader != NO_LEADER and pv.leader != view.controller
                    and pv.leader in view.live_brokers):
                return Target((pv.leader,), f"broker {pv.leader} (leader of {_tp(topic, p)}, not the controller)")
        raise _no_target(f"{self} (controller {view.controller})")

    def __str__(self) -> str:
        return f"a leader of {self.topic} other than the controller"


@dataclass(frozen=True)
class IsrAllButOne:
    """Every live ISR member but one. ``keep="leader"`` spares the leader (deterministic);
    ``keep="random"`` spares one member chosen with the seeded RNG."""

    topic: str
    partition: int = 0
    keep: str = "leader"

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        p = view.partition(self.topic, self.partition)
        members = [r for r in p.replicas if r in p.isr and r in view.live_brokers]
        if len(members) < 2:
            raise _no_target(f"every ISR member but one of {_tp(self.topic, self.partition)} (ISR {list(p.isr)})")
        if self.keep == "leader" and p.leader in members:
            spared = p.leader
        elif self.keep in ("leader", "random"):
            spared = rng.choice(members)
        else:
            raise UsageError(f"IsrAllButOne keep must be 'leader' or 'random', not {self.keep!r}")
        hit = tuple(r for r in members if r != spared)
        names = ", ".join(map(str, hit))
        return Target(hit, f"brokers {names} (ISR of {_tp(self.topic, self.partition)} but {spared})")

    def __str__(self) -> str:
        return f"every ISR member of {_tp(self.topic, self.partition)} but one"


@dataclass(frozen=True)
class IsrOf:
    """Every live ISR member of the partition, in replica order: a rack that holds all of it."""

    topic: str
    partition: int = 0

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        p = view.partition(self.topic, self.partition)
        members = tuple(r for r in p.replicas if r in p.isr and r in view.live_brokers)
        if not members:
            raise _no_target(f"the ISR of {_tp(self.topic, self.partition)} (ISR {list(p.isr)}, none live)")
        return Target(members, f"brokers {', '.join(map(str, members))} (ISR of {_tp(self.topic, self.partition)})")

    def __str__(self) -> str:
        return f"every ISR member of {_tp(self.topic, self.partition)}"


@dataclass(frozen=True)
class BrokerId:
    broker_id: int

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        known = view.all_brokers
        if self.broker_id not in known:
            raise UsageError(f"broker {self.broker_id} is not in the cluster (brokers: {sorted(known)})")
        return Target((self.broker_id,), f"broker {self.broker_id}")

    def __str__(self) -> str:
        return f"broker {self.broker_id}"


@dataclass(frozen=True)
class Brokers:
    """Explicit brokers, in the given order (generated schedules name their targets)."""

    broker_ids: tuple[int, ...]

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        unknown = [b for b in self.broker_ids if b not in view.all_brokers]
        if unknown:
            raise UsageError(f"brokers {unknown} are not in the cluster (brokers: {sorted(view.all_brokers)})")
        return Target(tuple(self.broker_ids), f"brokers {', '.join(map(str, self.broker_ids))}"
                      if len(self.broker_ids) != 1 else f"broker {self.broker_ids[0]}")

    def __str__(self) -> str:
        return f"brokers {list(self.broker_ids)}"


@dataclass(frozen=True)
class FollowerLeadingNothing:
    """A live broker in the ISR of every partition of ``topic`` that leads none of them and is
    not the controller (the lowest such id) — a follower whose degraded links can only make
    *other* leaders shrink their ISRs."""

    topic: str

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        parts = [pv for (topic, _), pv in sorted(view.partitions.items()) if topic == self.topic]
        for broker in sorted(view.live_brokers):
            if broker != view.controller and all(broker in pv.isr and pv.leader != broker for pv in parts):
                return Target((broker,), f"broker {broker} (follows every partition of {self.topic}, "
                                         "leads none, not the controller)")
        raise _no_target(f"{self} (controller {view.controller})")

    def __str__(self) -> str:
        return f"a follower of every partition of {self.topic} leading none, other than the controller"


@dataclass(frozen=True)
class NonReplicaOf:
    """A live broker holding no replica of the partition, chosen with the seeded RNG."""

    topic: str
    partition: int = 0

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        p = view.partition(self.topic, self.partition)
        outsiders = sorted(b for b in view.live_brokers if b not in p.replicas)
        if not outsiders:
            raise _no_target(f"a non-replica of {_tp(self.topic, self.partition)} (replicas {list(p.replicas)})")
        chosen = rng.choice(outsiders)
        return Target((chosen,), f"broker {chosen} (not a replica of {_tp(self.topic, self.partition)})")

    def __str__(self) -> str:
        return f"a non-replica of {_tp(self.topic, self.partition)}"


@dataclass(frozen=True)
class EarlierTarget:
    """The brokers an earlier step of the same scenario hit (e.g. "restart the first one
    killed"); ``step`` indexes the scenario's steps."""

    step: int

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        if not 0 <= self.step < len(history):
            raise UsageError(f"step {self.step} has no target yet (steps so far: {len(history)})")
        earlier = history[self.step]
        return Target(earlier.brokers, f"{earlier.description.split(' (')[0]} (hit in step {self.step + 1})")

    def __str__(self) -> str:
        return f"the target of step {self.step + 1}"


def _internal_leader(view: TargetView, topic: str, key: str, what: str) -> tuple[int, int]:
    """The partition of ``topic`` that owns ``key`` (``coordinators.partition_for`` over the
    partitions the observed state holds) and its leader."""
    count = sum(1 for (t, _) in view.partitions if t == topic)
    if not count:
        raise UsageError(f"cannot target {what}: no {topic} in the observed state (the transactional "
                         "workload creates it; its topics must be in the scenario)")
    partition = partition_for(key, count)
    leader = view.partition(topic, partition).leader
    if leader == NO_LEADER or leader not in view.live_brokers:
        raise _no_target(f"{what} (the leader of {_tp(topic, partition)}: none live)")
    return partition, leader


@dataclass(frozen=True)
class CoordinatorOf:
    """The transaction coordinator of ``transactional_id``: the leader of the ``__transaction_state``
    partition that owns it (``TransactionStateManager.partitionFor``), as the state observed before
    the fault holds it. A schedule names one of the workload's ids by its role (``p0``, ``p1``,
    ``copier``: the run renames it to the id, as it renames topics) or any id verbatim."""

    transactional_id: str

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        partition, leader = _internal_leader(view, TRANSACTION_STATE_TOPIC, self.transactional_id, str(self))
        return Target((leader,), f"broker {leader} (coordinator of transactional id {self.transactional_id}: "
                                 f"leader of {_tp(TRANSACTION_STATE_TOPIC, partition)})")

    def __str__(self) -> str:
        return f"the coordinator of transactional id {self.transactional_id}"


@dataclass(frozen=True)
class GroupCoordinatorOf:
    """The group coordinator of ``group``: the leader of the ``__consumer_offsets`` partition that
    owns it (``GroupMetadataManager.partitionFor``; KRaft's new coordinator,
    ``GroupCoordinatorService.partitionFor``, maps it the same way). The workload's groups are
    named by role (``copier``, ``rc_group``) or verbatim."""

    group: str

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        partition, leader = _internal_leader(view, GROUP_METADATA_TOPIC, self.group, str(self))
        return Target((leader,), f"broker {leader} (coordinator of group {self.group}: "
                                 f"leader of {_tp(GROUP_METADATA_TOPIC, partition)})")

    def __str__(self) -> str:
        return f"the coordinator of group {self.group}"


# Selectors whose broker only the cluster's internal topics name: the generator's model cannot
# tell which broker they hit.
COORDINATOR_SELECTORS: tuple[type, ...] = (CoordinatorOf, GroupCoordinatorOf)


@dataclass(frozen=True)
class NoTarget:
    """For cluster-wide actions (preferred election, reassignment) that hit no broker."""

    what: str = "cluster"

    def resolve(self, view: TargetView, rng: random.Random, history: Sequence[Target] = ()) -> Target:
        return Target((), self.what)

    def __str__(self) -> str:
        return self.what


def resolve(selector: Selector, state: ZkSnapshot | ClusterState | TargetView, rng: random.Random, history: Sequence[Target] = (),
            brokers: Sequence[int] = ()) -> Target:
    """Resolve ``selector`` on a snapshot / ClusterState / TargetView."""
    return selector.resolve(view_of(state, brokers), rng, history)


__all__ = [
    "COORDINATOR_SELECTORS", "BrokerId", "Brokers", "Controller", "CoordinatorOf", "EarlierTarget", "GroupCoordinatorOf", "FollowerLeadingNothing", "FollowerOf", "IsrAllButOne",
    "LeaderOf", "NoTarget", "NonControllerLeaderOf", "NonReplicaOf", "PartitionView", "Selector", "Target", "TargetView", "resolve", "view_of",
]

"""Topic admin operations during faults: deleting a topic while a replica's broker is
down (Kafka 3.9 ``TopicDeletionManager``: the deletion waits, ReplicaDeletionIneligible, and
completes when the broker returns) and adding partitions (``processPartitionModifications`` →
``onNewPartitionCreation``: a new partition with no live replica stays NewPartition until one
starts). Neither needs a capability beyond a running cluster.

The deleted topic must carry no workload: a producer on it would fail with
UNKNOWN_TOPIC_OR_PARTITION once the deletion starts and its acknowledged messages could not be
read back. Catalogue scenarios therefore delete a topic declared ``workload=False``
(``scenarios.plans.catalogue.TopicSpec``); the runner starts no producer or consumers on it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.oracle import NO_LEADER, AddPartitions, ClusterState, CreateTopic, DeleteTopic, Event
from kafka_chaos.scenarios.faults.base import (
    ZOOKEEPER_ONLY,
    FaultBase,
    FaultEnv,
    StepTopics,
    admin_request,
    register_fault,
    reject_unknown_options,
)
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import NoTarget, Target

log = logging.getLogger(__name__)


@register_fault
@dataclass
class DeleteTopicFault(FaultBase):
    """Delete a topic by AdminClient ``deleteTopics`` (``/admin/delete_topics/<t>``). Options:
    ``topic`` (an unproduced one). Nothing to heal: the deletion completes on its own once every
    replica's broker is up."""

    topic: str = ""
    kind: ClassVar[str] = "delete_topic"

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> DeleteTopicFault:
        unknown = sorted(set(options) - {"topic"})
        if unknown:
            raise UsageError(f"{cls.kind}: unknown option {unknown[0]!r} (expected topic)")
        return cls(target, topics.physical(cls.kind, options))

    def oracle_events(self) -> list[Event]:
        return [DeleteTopic(self.topic)]

    def inject(self, env: FaultEnv) -> None:
        from kafka_chaos.harness.metadata import request_topic_deletion

        # The answer says little (see request_topic_deletion); the step's convergence wait on
        # ZooKeeper decides whether the deletion completed or waits, as the oracle predicts.
        answer = request_topic_deletion(env.bootstrap, self.topic)
        log.info("deleting topic %s: %s", self.topic, answer)


def _assignment(kind: str, value: Any) -> dict[int, tuple[int, ...]]:
    try:
        assignment = {int(p): tuple(int(r) for r in replicas) for p, replicas in dict(value).items()}
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{kind}: 'assignment' must map partitions to replica lists") from exc
    if sorted(assignment) != list(range(len(assignment))) or any(
            not rs or len(set(rs)) != len(rs) for rs in assignment.values()):
        raise UsageError(f"{kind}: 'assignment' needs partitions 0..n-1, each with distinct replicas")
    return assignment


@register_fault
@dataclass
class RecreateTopicFault(FaultBase):
    """Create again a topic an earlier step deleted, by AdminClient ``createTopics`` with an
    explicit assignment, which may name a broker that is down: Kafka only requires it to be
    registered (KRaft ``ReplicationControlManager.validateManualPartitionAssignment``; the ISR is
    the active replicas), so the broker finds the partition again under a new topic id when it
    starts -- with the old log still on its disk (KAFKA-14616). Options: ``topic`` (an unproduced
    one), ``assignment`` ({partition: [replicas]}; required)."""

    topic: str = ""
    assignment: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    kind: ClassVar[str] = "recreate_topic"

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> RecreateTopicFault:
        reject_unknown_options(cls.kind, options, ("topic", "assignment"))
        physical = topics.physical(cls.kind, options)
        if "assignment" not in options:
            raise UsageError(f"{cls.kind}: option 'assignment' is required ({{partition: [replicas]}})")
        return cls(target, physical, _assignment(cls.kind, options["assignment"]))

    def oracle_events(self) -> list[Event]:
        return [CreateTopic(self.topic, dict(self.assignment))]

    def inject(self, env: FaultEnv) -> None:
        from kafka_chaos.harness.metadata import create_topic

        create_topic(env.bootstrap, self.topic, self.assignment)


def _additions(kind: str, options: Mapping[str, Any]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    try:
        additions = tuple((int(p), tuple(int(r) for r in replicas)) for p, replicas in options["add"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{kind}: 'add' must be a list of (new partition, [replicas]) pairs") from exc
    if not additions:
        raise UsageError(f"{kind}: 'add' names no partition")
    for number, replicas in additions:
        if not replicas or len(set(replicas)) != len(replicas):
            raise UsageError(f"{kind}: partition {number} needs distinct replicas, got {list(replicas)}")
    return additions


@register_fault
@dataclass
class AddPartitionsFault(FaultBase):
    """Add partitions with an explicit assignment. Options: ``topic``, ``add`` (a list of (new
    partition, replicas in AR order), numbered on from the topic's partitions) and ``via``:
    ``admin`` (AdminClient ``createPartitions``; ZkAdminManager.createPartitions accepts only
    *registered* brokers) or ``znode`` (rewrite ``/brokers/topics/<t>`` as the pre-3.0
    ``kafka-topics --zookeeper --alter`` did: replicas on stopped brokers allowed)."""

    topic: str = ""
    additions: tuple[tuple[int, tuple[int, ...]], ...] = ()
    via: str = "admin"
    kind: ClassVar[str] = "add_partitions"
    _leaderless_before: bool = field(default=False, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> AddPartitionsFault:
        unknown = sorted(set(options) - {"topic", "add", "via"})
        if unknown:
            raise UsageError(f"{cls.kind}: unknown option {unknown[0]!r} (expected topic, add, via)")
        via = options.get("via", "admin")
        if via not in ("admin", "znode"):
            raise UsageError(f"{cls.kind}: 'via' must be 'admin' or 'znode', not {via!r}")
        return cls(target, topics.physical(cls.kind, options), _additions(cls.kind, options), str(via))

    @property
    def modes(self) -> frozenset[str]:
        return ZOOKEEPER_ONLY if self.via == "znode" else self.mode_support

    def oracle_events(self) -> list[Event]:
        return [AddPartitions(self.topic, dict(self.additions))]

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        topic = state.topics.get(self.topic)
        self._leaderless_before = topic is not None and any(
            p.leader == NO_LEADER or p.leader not in state.live_brokers for p in topic.partitions.values())

    def inject(self, env: FaultEnv) -> None:
        if self.via == "znode":
            write_partitions_znode(env.cluster.zookeeper_connect, self.topic, dict(self.additions))
            return
        from kafka_chaos.harness.metadata import create_partitions

        # ZkAdminManager.createPartitions answers through DelayedCreatePartitions, which waits
        # for a leader in every partition of the topic (CreatePartitionsMetadata holds the
        # combined assignment, old partitions too), not only the new ones: with an old partition
        # leaderless the request times out although the new partitions were written.
        admin_request(lambda timeout: create_partitions(env.bootstrap, self.topic, dict(self.additions),
                                                        timeout=timeout),
                      unanswered=self._leaderless_before,
                      what=f"add_partitions {self.topic} while an old partition is leaderless")


def _topic_znode(client: Any, topic: str) -> tuple[dict[str, Any], Any]:
    from kazoo.exceptions import NoNodeError

    try:
        data, stat = client.get(f"/brokers/topics/{topic}")
    except NoNodeError:
        raise UsageError(f"no topic {topic!r} in ZooKeeper") from None
    znode = json.loads(data.decode("utf-8"))
    if not isinstance(znode, dict) or not isinstance(znode.get("partitions"), dict):
        raise HarnessError(f"/brokers/topics/{topic} is not a topic znode")
    return znode, stat


def topic_exists(zk_connect: str, topic: str) -> bool:
    """Whether ``/brokers/topics/<topic>`` exists (a deleted topic's znode goes last but one)."""
    try:
        partition_count(zk_connect, topic)
    except UsageError:
        return False
    return True


def partition_count(zk_connect: str, topic: str, timeout: float = 10.0) -> int:
    """How many partitions ``/brokers/topics/<topic>`` assigns (new ones are numbered on from it)."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    client = KazooClient(hosts=zk_connect, timeout=timeout)
    try:
        client.start(timeout=timeout)
        znode, _ = _topic_znode(client, topic)
        return len(znode["partitions"])
    except (KazooException, KazooTimeoutError, OSError, ValueError) as exc:
        raise HarnessError(f"reading /brokers/topics/{topic} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        client.stop()
        client.close()


def write_partitions_znode(zk_connect: str, topic: str, additions: Mapping[int, tuple[int, ...]],
                           timeout: float = 10.0) -> None:
    """Add ``additions`` to ``/brokers/topics/<topic>`` with a versioned write (the controller's
    ``PartitionModificationsHandler`` fires on the data change). Refuses existing partitions."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    path = f"/brokers/topics/{topic}"
    client = KazooClient(hosts=zk_connect, timeout=timeout)
    try:
        client.start(timeout=timeout)
        znode, stat = _topic_znode(client, topic)
        partitions = znode["partitions"]
        clash = sorted(str(p) for p in additions if str(p) in partitions)
        if clash:
            raise UsageError(f"add_partitions: {topic}-{clash[0]} already exists")
        for number, replicas in sorted(additions.items()):
            partitions[str(number)] = [int(r) for r in replicas]
        client.set(path, json.dumps(znode, separators=(",", ":")).encode("utf-8"), version=stat.version)
    except (KazooException, KazooTimeoutError, OSError, ValueError) as exc:
        raise HarnessError(f"add_partitions: writing {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        client.stop()
        client.close()


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _topic_admin(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Deleting an unproduced topic (its replicas may be down: the deletion waits for them) and
    adding partitions (through the AdminClient only onto registered brokers; by rewriting the topic
    znode onto any broker of the cluster, down ones included)."""
    topic = step.options.get("topic")
    if step.fault == RecreateTopicFault.kind:
        _recreate(model, step, topic)
        return
    if not isinstance(topic, str) or topic not in model.topics:
        raise IllegalStep(f"{step.fault} on unknown topic {topic!r}")
    spec = model.topics[topic]
    if step.fault == DeleteTopicFault.kind:
        if spec.workload:
            raise IllegalStep(f"delete_topic of {topic}: it carries a workload")
        model.topics = {name: t for name, t in model.topics.items() if name != topic}
        model.deleted = {**model.deleted, topic: spec}
        return
    additions = [(int(p), tuple(int(r) for r in rs)) for p, rs in step.options.get("add", ())]
    rf = len(next(iter(spec.assignment.values())))
    assignment = dict(spec.assignment)
    for p, replicas in additions:
        if p != len(assignment) or len(replicas) != rf or len(set(replicas)) != rf:
            raise IllegalStep(f"add_partitions {topic}-{p}: not the next partition, or not {rf} distinct replicas")
        registered = model.free if not model.unknown_down else []
        if step.options.get("via", "admin") == "admin" and any(r not in registered for r in replicas):
            raise IllegalStep(f"add_partitions {topic}-{p} by AdminClient onto brokers that may not be registered")
        if any(r not in model.brokers for r in replicas):
            raise IllegalStep(f"add_partitions {topic}-{p} onto brokers outside the cluster")
        assignment[p] = replicas
    model.topics = {**model.topics, topic: TopicSpec(spec.name, assignment, spec.config, spec.workload)}


def _recreate(model: ClusterModel, step: Step, topic: Any) -> None:
    if not isinstance(topic, str) or topic not in model.deleted:
        raise IllegalStep(f"recreate_topic of {topic!r}: no step deleted it")
    assignment = _assignment(step.fault, step.options.get("assignment", {}))
    if any(r not in model.brokers for rs in assignment.values() for r in rs):
        raise IllegalStep(f"recreate_topic {topic} onto brokers outside the cluster")
    # Every partition needs a live replica (KRaft refuses the topic otherwise; ZooKeeper mode would
    # leave it without a leader, which the settle wait cannot pass).
    if model.unknown_down or any(not set(rs) & set(model.free) for rs in assignment.values()):
        raise IllegalStep(f"recreate_topic {topic}: a partition without a live replica")
    spec = model.deleted[topic]
    model.deleted = {t: s for t, s in model.deleted.items() if t != topic}
    model.topics = {**model.topics, topic: TopicSpec(spec.name, assignment, spec.config, spec.workload)}


def _recreate_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    """The deleted topic again, each partition on a live broker and any others (down ones too:
    KAFKA-14616's trigger)."""
    if not model.deleted or model.unknown_down or not model.free:
        return []
    topic = draw.rng.choice(sorted(model.deleted))
    rf = len(next(iter(model.deleted[topic].assignment.values())))
    assignment: dict[str, list[int]] = {}
    for p in sorted(model.deleted[topic].assignment):
        first = draw.rng.choice(model.free)
        rest = draw.rng.sample([b for b in model.brokers if b != first], rf - 1)
        replicas = [first, *rest]
        draw.rng.shuffle(replicas)
        assignment[str(p)] = replicas
    return [Step(RecreateTopicFault.kind, NoTarget(f"{topic} again"), {"topic": topic, "assignment": assignment})]


def _delete_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    unproduced = [t for t in sorted(model.topics) if not model.topics[t].workload]
    return [Step(DeleteTopicFault.kind, NoTarget(t), {"topic": t}) for t in unproduced[:1]]


def _add_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    topic = draw.rng.choice(sorted(model.topics))
    spec = model.topics[topic]
    rf, n = len(next(iter(spec.assignment.values()))), len(spec.assignment)
    admin_ok = not model.unknown_down and len(model.free) >= rf
    via = draw.rng.choice(("admin", "znode")) if admin_ok else "znode"
    pool = model.free if via == "admin" else list(model.brokers)
    chosen = draw.rng.sample(pool, rf)
    return [Step(AddPartitionsFault.kind, NoTarget(f"{topic}-{n} -> {chosen}"),
                 {"topic": topic, "add": [[n, chosen]], "via": via})]


register_generator(GeneratorSide(DeleteTopicFault.kind, 1, _topic_admin, _delete_candidates, opt_in=True,
                                 unproduced_topic=True))
register_generator(GeneratorSide(AddPartitionsFault.kind, 1, _topic_admin, _add_candidates, opt_in=True))
register_generator(GeneratorSide(RecreateTopicFault.kind, 1, _topic_admin, _recreate_candidates, opt_in=True,
                                 unproduced_topic=True))

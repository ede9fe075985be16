"""Configuration changes while the cluster runs: a topic's overrides and a broker's dynamic
configs, through the AdminClient's ``incrementalAlterConfigs`` (KIP-339) as an operator changes
them — in ZooKeeper mode the broker that takes the request writes ``/config/topics/<t>`` or
``/config/brokers/<id|<default>>`` and a change notification (``ZkAdminManager.incrementalAlterConfigs``,
``AdminZkClient.changeConfigs``), every broker's ``ZkConfigManager`` applies it; in KRaft the
controller commits a ConfigRecord (``ConfigurationControlManager.incrementalAlterConfigs``) that
every broker's ``DynamicConfigPublisher`` applies; during a migration the KRaft controller
dual-writes it to ZooKeeper for the ZooKeeper-mode brokers (``KRaftMigrationZkWriter.handleConfigsDelta``).

What the controller does about it: for a topic, nothing to its partitions unless the change
enables ``unclean.leader.election.enable`` (the oracle's ``TopicConfigChange``:
``KafkaController.processTopicUncleanLeaderElectionEnable`` in ZooKeeper mode); for a broker,
nothing — the dynamic broker defaults the controller itself reads
(``unclean.leader.election.enable``: ``KafkaController.enableDefaultUncleanLeaderElection``) are
refused, the oracle does not model them, and so is ``min.insync.replicas`` (the
``min_isr_honoured`` check takes the topic's override, else the static setting). The change is kept after the step (configs are
state, not a fault to heal): a schedule that wants it undone deletes the key in a later step.

A change is where configuration propagation bugs show: KAFKA-16428 (3.6.1, a migration's
deleted last topic override never reaches the ZooKeeper-mode brokers), KAFKA-9254 (2.4.0, topic
overrides lost after a dynamic default change), KAFKA-17584; and the replication throttle a
reassignment needs to stay pending (KAFKA-13972).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.config import LOG_CLEANER_DEDUPE_BUFFER_SIZE
from kafka_chaos.oracle import Event, TopicConfigChange
from kafka_chaos.scenarios.faults.base import FaultBase, FaultEnv, StepTopics, register_fault, reject_unknown_options
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import NoTarget, Target

log = logging.getLogger(__name__)

DEFAULT_BROKER = "default"
# Dynamic broker defaults the controller acts on, which the oracle does not model, or that a check
# reads from the static settings (min_isr_honoured takes the topic's override, else the static one).
CONTROLLER_READS = frozenset({"unclean.leader.election.enable", "min.insync.replicas"})


def config_changes(kind: str, options: Mapping[str, Any]) -> dict[str, str | None]:
    """``set`` (key -> value) and ``delete`` (keys) as one change: None deletes a key."""
    to_set, to_delete = options.get("set") or {}, options.get("delete") or []
    if not isinstance(to_set, Mapping) or not isinstance(to_delete, (list, tuple)):
        raise UsageError(f"{kind}: 'set' must map config names to values and 'delete' list config names")
    changes: dict[str, str | None] = {}
    for key, value in to_set.items():
        if not isinstance(key, str) or not key or isinstance(value, (dict, list, type(None))):
            raise UsageError(f"{kind}: cannot set {key!r} to {value!r}")
        changes[key] = str(value).lower() if isinstance(value, bool) else str(value)
    for key in to_delete:
        if not isinstance(key, str) or key in changes:
            raise UsageError(f"{kind}: cannot delete {key!r} (not a name, or also set)")
        changes[key] = None
    if not changes:
        raise UsageError(f"{kind}: nothing to change (give 'set' and/or 'delete')")
    return changes


def _described(changes: Mapping[str, str | None]) -> str:
    return ", ".join(f"{k}={v}" if v is not None else f"-{k}" for k, v in sorted(changes.items()))


@register_fault
@dataclass
class TopicConfigFault(FaultBase):
    """Change a topic's overrides. Options: ``topic``, ``set`` ({name: value}), ``delete`` ([name])."""

    topic: str = ""
    changes: Mapping[str, str | None] = field(default_factory=dict)
    kind: ClassVar[str] = "topic_config"
    # The clients are waited for until they write again, and measured: a change of
    # min.insync.replicas decides whether the leaders take acks=all writes at all.
    client_windows: ClassVar[bool] = True

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> TopicConfigFault:
        reject_unknown_options(cls.kind, options, ("topic", "set", "delete"))
        return cls(target, topics.physical(cls.kind, options), config_changes(cls.kind, options))

    @property
    def label(self) -> str:
        return f"{self.kind} {self.topic}: {_described(self.changes)}"

    def oracle_events(self) -> list[Event]:
        return [TopicConfigChange(self.topic, dict(self.changes))]

    def inject(self, env: FaultEnv) -> None:
        from kafka_chaos.harness.metadata import alter_topic_config

        alter_topic_config(env.bootstrap, self.topic, self.changes)
        log.info("topic %s config: %s", self.topic, _described(self.changes))


@register_fault
@dataclass
class BrokerConfigFault(FaultBase):
    """Change a broker's dynamic configs (``broker``: its id, or ``"default"`` for every broker's
    default). Options: ``broker``, ``set``, ``delete``. No partition changes (see the module)."""

    broker: str = ""
    changes: Mapping[str, str | None] = field(default_factory=dict)
    kind: ClassVar[str] = "broker_config"
    client_windows: ClassVar[bool] = True  # as topic_config: what the leaders enforce shows in the writes

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> BrokerConfigFault:
        reject_unknown_options(cls.kind, options, ("broker", "set", "delete"))
        broker = options.get("broker")
        if broker != DEFAULT_BROKER and (isinstance(broker, bool) or not isinstance(broker, int)):
            raise UsageError(f"{cls.kind}: 'broker' must be a broker id or {DEFAULT_BROKER!r}, not {broker!r}")
        changes = config_changes(cls.kind, options)
        modelled = sorted(set(changes) & CONTROLLER_READS)
        if modelled:
            raise UsageError(f"{cls.kind}: {modelled[0]} as a dynamic broker default is not modelled (the controller "
                             "or a check reads it): set it on a topic with topic_config")
        return cls(target, "" if broker == DEFAULT_BROKER else str(broker), changes)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.broker or DEFAULT_BROKER}: {_described(self.changes)}"

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        from kafka_chaos.harness.metadata import alter_broker_config

        if self.broker and int(self.broker) not in env.cluster.broker_ids:
            raise UsageError(f"{self.kind}: no broker {self.broker} in the cluster {env.cluster.broker_ids}")
        # A broker's own config is changed by asking that broker (ZkAdminManager validates it there);
        # the default by asking a live one.
        live = env.observer.snapshot().live_brokers
        asked = int(self.broker) if self.broker else min(live, default=None)
        if asked is None or asked not in live:
            raise UsageError(f"{self.kind}: broker {asked} is not running: a broker's own config is changed by "
                             f"asking it (\"default\" asks any live broker)" if asked is not None
                             else f"{self.kind}: no live broker to ask")
        alter_broker_config(env.cluster.endpoint(asked).bootstrap, self.broker, self.changes)
        log.info("broker %s config: %s", self.broker or DEFAULT_BROKER, _described(self.changes))


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# What a generated change may set: values that leave the workload writable with every replica in
# sync and that no controller decision reads.
_TOPIC_CHOICES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("min.insync.replicas", ("1", "2")),
    ("retention.ms", ("3600000", "86400000")),
    ("max.message.bytes", ("1048588", "2097152")),
    ("segment.bytes", ("1048576", "16777216")),
)
_BROKER_CHOICES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("follower.replication.throttled.rate", ("1048576", "10485760")),
    ("leader.replication.throttled.rate", ("1048576", "10485760")),
    ("log.cleaner.threads", ("1", "2")),
)


def _configs(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if step.fault == BrokerConfigFault.kind:
        broker = step.options.get("broker")
        if broker != DEFAULT_BROKER and broker not in model.brokers:
            raise IllegalStep(f"broker_config of unknown broker {broker!r}")
        # A broker's own config is changed by asking it (BrokerConfigFault.inject): it must run.
        if broker != DEFAULT_BROKER and (model.unknown_down or broker not in model.free):
            raise IllegalStep(f"broker_config of broker {broker}: it may be down")
        return
    topic = step.options.get("topic")
    if not isinstance(topic, str) or topic not in model.topics:
        raise IllegalStep(f"topic_config on unknown topic {topic!r}")
    spec = model.topics[topic]
    changes = config_changes(step.fault, step.options)
    config = {k: v for k, v in {**spec.config, **changes}.items() if v is not None}
    rf = min(len(r) for r in spec.assignment.values())
    # Only a change that sets it: a reassignment may have shrunk a partition below a value set
    # earlier (legal, writes to it are refused), and the topic's other settings stay changeable
    # (found by the generator property test: seed 7204839, schedule 2600).
    if "min.insync.replicas" in changes and int(config.get("min.insync.replicas", "1")) > rf:
        raise IllegalStep(f"topic_config of {topic}: min.insync.replicas above its replication factor {rf}")
    model.topics = {**model.topics, topic: TopicSpec(spec.name, spec.assignment, config, spec.workload)}


def _topic_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    topic = draw.rng.choice(sorted(model.topics))
    name, values = draw.rng.choice(_TOPIC_CHOICES)
    spec = model.topics[topic]
    if name == "min.insync.replicas":  # never above the replication factor: nothing could be written
        rf = min(len(r) for r in spec.assignment.values())
        values = tuple(v for v in values if int(v) <= rf)
    options: dict[str, Any] = ({"topic": topic, "delete": [name]} if name in spec.config
                               and draw.rng.random() < 0.5 else {"topic": topic, "set": {name: draw.rng.choice(values)}})
    return [Step(TopicConfigFault.kind, NoTarget(f"{topic} config"), options)]


def _broker_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    choices: list[int | str] = [DEFAULT_BROKER, *([] if model.unknown_down else model.free)]
    broker = draw.rng.choice(choices)
    name, values = draw.rng.choice(_BROKER_CHOICES)
    value = draw.rng.choice(values)
    changes = {name: value}
    if name == "log.cleaner.threads" and value != "1":
        # Each cleaner thread needs more than 1 MiB of the dedupe buffer (KafkaConfig.validateValues,
        # 3.9.0-rc3 KafkaConfig.scala line 887; 3.1.0 line 2019; 4.4.0 refuses it too) and the
        # harness's is 2 MiB (harness.config): 2 threads alone are refused, INVALID_REQUEST (found by
        # `explore --mode kraft --seed 7702` on 4.4.0). Both are dynamic (LogCleaner.ReconfigurableConfigs).
        changes[LOG_CLEANER_DEDUPE_BUFFER_SIZE] = str(2 * 1024 * 1024 * int(value))
    return [Step(BrokerConfigFault.kind, NoTarget(f"broker {broker} config"), {"broker": broker, "set": changes})]


register_generator(GeneratorSide(TopicConfigFault.kind, 1, _configs, _topic_candidates, opt_in=True))
register_generator(GeneratorSide(BrokerConfigFault.kind, 1, _configs, _broker_candidates, opt_in=True))

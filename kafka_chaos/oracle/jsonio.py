"""The ``kafka-chaos predict`` JSON contract: parse a request into a state and events, render a
prediction.  Pure: takes and returns plain Python objects (``json`` text only in
:func:`parse_json_text`).  Every rejection names the offending field path, e.g.
``topics.orders.partitions.0.isr``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle.kraft import migration
from kafka_chaos.oracle.kraft.interleavings import MODELLED_TEXT as KRAFT_MODELLED, release_modelled
from kafka_chaos.oracle.kraft.config import elr_feature_enabled
from kafka_chaos.oracle.events import (
    EVENT_TYPES,
    AddPartitions,
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ControlledShutdown,
    ControllerFailover,
    CreateTopic,
    DeleteTopic,
    Event,
    LogDirFailure,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    UncleanElection,
)
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.outcomes import PartitionOutcome
from kafka_chaos.oracle.prediction import Prediction
from kafka_chaos.oracle.release import NEWEST, Release
from kafka_chaos.oracle.state import (
    NO_LEADER,
    ClusterState,
    PartitionPhase,
    PartitionState,
    TopicPartition,
    TopicState,
    initial_phase,
)

# "outcomes", "steps" and "alternatives" are accepted and ignored, so an answer can be fed back.
_TOP_LEVEL_KEYS = {
    "mode",
    "kafka_version",
    "brokers",
    "controller",
    "config",
    "topics",
    "topics_being_deleted",
    "offline_replicas",
    "events",
    "outcomes",
    "steps",
    "alternatives",
}
_TOPIC_KEYS = {"partitions", "config"}
_PARTITION_KEYS = {
    "replicas",
    "leader",
    "isr",
    "leader_epoch",
    "leader_recovery_state",
    "state",
    "adding_replicas",
    "removing_replicas",
    "partition_epoch",
    "elr",
    "last_known_elr",
}
_EVENT_KEYS: Mapping[str, set[str]] = {
    BrokerFailure.KIND: {"brokers", "restarting"},
    ControlledShutdown.KIND: {"broker"},
    BrokerStartup.KIND: {"brokers"},
    Reassign.KIND: {"topic", "partition", "replicas"},
    PreferredElection.KIND: {"partitions"},
    UncleanElection.KIND: {"partitions"},
    AutoRebalance.KIND: set(),
    CreateTopic.KIND: {"topic", "replicas", "config"},
    TopicConfigChange.KIND: {"topic", "config"},
    DeleteTopic.KIND: {"topic"},
    AddPartitions.KIND: {"topic", "replicas"},
    LogDirFailure.KIND: {"broker", "partitions"},
    ControllerFailover.KIND: {"controller"},
    CancelReassignment.KIND: {"topic", "partition"},
}
_OPTIONAL_EVENT_KEYS = {(CreateTopic.KIND, "config"), (ControllerFailover.KIND, "controller"),
                        (BrokerFailure.KIND, "restarting")}


def one_line(text: str) -> str:
    """``text`` with control characters (a newline in a topic name, ...) escaped, so an error stays
    one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OracleInputError(ValueError):
    """A request the oracle cannot take; ``field`` is the path of the offending value."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(one_line(f"{field}: {message}"))
        self.field = field
        self.message = message


# --- small typed readers --------------------------------------------------------------------

def _path(*parts: object) -> str:
    return ".".join(str(p) for p in parts)


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise OracleInputError(field, f"expected a JSON object, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _no_unknown_keys(obj: Mapping[str, Any], allowed: set[str], field: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        where = _path(field, unknown[0]) if field else unknown[0]
        raise OracleInputError(where, f"unknown field (expected one of {', '.join(sorted(allowed))})")


def _int(value: Any, field: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OracleInputError(field, f"expected an integer, got {_kind(value)}")
    if minimum is not None and value < minimum:
        raise OracleInputError(field, f"must be >= {minimum}, got {value}")
    return value


def _broker_list(value: Any, field: str, *, allow_empty: bool = True) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise OracleInputError(field, f"expected a list of broker ids, got {_kind(value)}")
    ids = tuple(_int(v, _path(field, i), minimum=0) for i, v in enumerate(value))
    if not ids and not allow_empty:
        raise OracleInputError(field, "must not be empty")
    duplicates = sorted({b for b in ids if ids.count(b) > 1})
    if duplicates:
        raise OracleInputError(field, f"duplicate broker id {duplicates[0]} in {list(ids)}")
    return ids


def _config(value: Any, field: str, *, allow_null_values: bool = False) -> dict[str, str | None]:
    obj = _object(value, field)
    parsed: dict[str, str | None] = {}
    for key, raw in obj.items():
        where = _path(field, key)
        if raw is None and allow_null_values:
            parsed[key] = None
            continue
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        elif isinstance(raw, int):
            text = str(raw)
        elif isinstance(raw, str):
            text = raw
        else:
            raise OracleInputError(where, f"expected a string, boolean or integer, got {_kind(raw)}")
        if key in cfg.BOOLEAN_SETTINGS and cfg.parse_bool(text) is None:
            raise OracleInputError(where, f"expected true or false, got {raw!r}")
        if key in cfg.INTEGER_SETTINGS and cfg.parse_int(text) is None:
            raise OracleInputError(where, f"expected an integer, got {raw!r}")
        if key == migration.MIGRATING_ZK_BROKERS and migration.parse_broker_ids(text) is None:
            raise OracleInputError(where, f"expected comma-separated broker ids, got {raw!r}")
        parsed[key] = text
    return parsed


def _partition_number(key: Any, field: str) -> int:
    # str.isdigit() also accepts "²" or "٣" (which int() refuses or reads); only ASCII digits without
    # leading zeros, so "1" and "01" cannot name the same partition twice.
    text = str(key)
    if not (text.isascii() and text.isdigit()) or (len(text) > 1 and text[0] == "0"):
        raise OracleInputError(field, f"partition ids are non-negative integers, got {key!r}")
    return int(text)


# --- the cluster state ----------------------------------------------------------------------

def _partition(raw: Any, field: str, live: frozenset[int], mode: Mode = Mode.ZOOKEEPER,
               elr_on: bool = False) -> PartitionState:
    """One partition; ``elr_on``: a KRaft controller with eligible leader replicas (KIP-966), where
    an ISR may be empty and ``elr`` / ``last_known_elr`` may be given."""
    obj = _object(raw, field)
    _no_unknown_keys(obj, _PARTITION_KEYS, field)
    if "replicas" not in obj:
        raise OracleInputError(_path(field, "replicas"), "missing")
    replicas = _replica_list(obj["replicas"], _path(field, "replicas"))
    leader = _int(obj.get("leader", NO_LEADER), _path(field, "leader"), minimum=NO_LEADER)
    if leader != NO_LEADER and leader not in replicas:
        raise OracleInputError(_path(field, "leader"), f"leader {leader} is not one of the replicas {list(replicas)}")
    isr = _broker_list(obj.get("isr", []), _path(field, "isr"))
    outside = [r for r in isr if r not in replicas]
    if outside:
        raise OracleInputError(_path(field, "isr"), f"ISR member {outside[0]} is not one of the replicas {list(replicas)}")
    if leader != NO_LEADER and leader not in isr:
        raise OracleInputError(_path(field, "isr"), f"the leader {leader} must be in the ISR {list(isr)}")
    epoch = _int(obj.get("leader_epoch", 0), _path(field, "leader_epoch"), minimum=0)
    recovery = _int(obj.get("leader_recovery_state", 0), _path(field, "leader_recovery_state"), minimum=0)
    if recovery not in (0, 1):
        raise OracleInputError(_path(field, "leader_recovery_state"), f"must be 0 or 1, got {recovery}")
    adding = _broker_list(obj.get("adding_replicas", []), _path(field, "adding_replicas"))
    removing = _broker_list(obj.get("removing_replicas", []), _path(field, "removing_replicas"))
    for name, ids in (("adding_replicas", adding), ("removing_replicas", removing)):
        stray = [r for r in ids if r not in replicas]
        if stray:
            raise OracleInputError(_path(field, name), f"{stray[0]} is not one of the replicas {list(replicas)}")
    partition_epoch = None
    if "partition_epoch" in obj:
        if mode is not Mode.KRAFT:
            raise OracleInputError(_path(field, "partition_epoch"), "the partition epoch is KRaft's (\"mode\": \"kraft\")")
        partition_epoch = _int(obj["partition_epoch"], _path(field, "partition_epoch"), minimum=0)
    elr, last_known_elr = _eligible_leader_replicas(obj, field, replicas, isr, elr_on)
    if mode is Mode.KRAFT:
        if not isr and not elr_on:
            raise OracleInputError(_path(field, "isr"), "a KRaft partition always has an ISR member (the last one is "
                                   "kept) unless eligible leader replicas are on (Kafka 4.1+, or 4.0 with "
                                   "eligible.leader.replicas.version=1 in config)")
        if obj.get("state") == PartitionPhase.NEW.value:
            raise OracleInputError(_path(field, "state"), "a KRaft partition has no NewPartition state")
    phase = _phase(obj, field, leader, isr, live, mode)
    return PartitionState(
        replicas=replicas,
        leader=leader,
        isr=isr,
        leader_epoch=epoch,
        leader_recovery_state=recovery,
        phase=phase,
        adding_replicas=adding,
        removing_replicas=removing,
        partition_epoch=partition_epoch,
        elr=elr,
        last_known_elr=last_known_elr,
    )


def _eligible_leader_replicas(obj: Mapping[str, Any], field: str, replicas: tuple[int, ...], isr: tuple[int, ...],
                              elr_on: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``elr`` and ``last_known_elr`` (PartitionRegistration 4.1.2): replicas, the ELR outside the
    ISR (``maybePopulateTargetElr`` moves a member out of the ISR into it); only where the
    controller keeps them."""
    lists = []
    for name in ("elr", "last_known_elr"):
        ids = _broker_list(obj.get(name, []), _path(field, name))
        if ids and not elr_on:
            raise OracleInputError(_path(field, name), "eligible leader replicas are a KRaft controller's with "
                                   "eligible.leader.replicas.version >= 1 (\"mode\": \"kraft\", Kafka 4.1+ by default)")
        stray = [r for r in ids if r not in replicas]
        if stray:
            raise OracleInputError(_path(field, name), f"{stray[0]} is not one of the replicas {list(replicas)}")
        lists.append(ids)
    in_isr = [r for r in lists[0] if r in isr]
    if in_isr:
        raise OracleInputError(_path(field, "elr"), f"{in_isr[0]} is in the ISR {list(isr)}: an eligible leader replica is not")
    return lists[0], lists[1]


def _phase(obj: Mapping[str, Any], field: str, leader: int, isr: tuple[int, ...], live: frozenset[int],
           mode: Mode = Mode.ZOOKEEPER) -> PartitionPhase:
    if "state" in obj:
        names = {phase.value: phase for phase in PartitionPhase}
        if not isinstance(obj["state"], str) or obj["state"] not in names:
            raise OracleInputError(_path(field, "state"), f"expected one of {', '.join(names)}, got {obj['state']!r}")
        phase = names[obj["state"]]
        if phase is PartitionPhase.NEW and (leader != NO_LEADER or isr):
            raise OracleInputError(_path(field, "state"), "a NewPartition has no leader and no ISR yet")
        return phase
    # No state given: a ZooKeeper-mode partition with neither leader nor ISR has no state znode
    # yet; every KRaft partition has a registration (an empty ISR is an ELR controller's).
    return initial_phase(leader, live, has_state_znode=mode is Mode.KRAFT or leader != NO_LEADER or bool(isr))


def _replica_list(value: Any, field: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise OracleInputError(field, f"expected a list of broker ids, got {_kind(value)}")
    ids = tuple(_int(v, _path(field, i), minimum=0) for i, v in enumerate(value))
    if not ids:
        raise OracleInputError(field, "a partition needs at least one replica")
    duplicates = sorted({b for b in ids if ids.count(b) > 1})
    if duplicates:
        raise OracleInputError(field, f"duplicate replica {duplicates[0]} in {list(ids)}")
    return ids


def _topics(value: Any, live: frozenset[int], mode: Mode = Mode.ZOOKEEPER, elr_on: bool = False) -> dict[str, TopicState]:
    topics: dict[str, TopicState] = {}
    for name, raw in _object(value, "topics").items():
        field = _path("topics", name)
        if not name:
            raise OracleInputError(field, "topic names must not be empty")
        obj = _object(raw, field)
        _no_unknown_keys(obj, _TOPIC_KEYS, field)
        if "partitions" not in obj:
            raise OracleInputError(_path(field, "partitions"), "missing")
        partitions: dict[int, PartitionState] = {}
        for key, raw_partition in _object(obj["partitions"], _path(field, "partitions")).items():
            where = _path(field, "partitions", key)
            partitions[_partition_number(key, where)] = _partition(raw_partition, where, live, mode, elr_on)
        config = _config(obj.get("config", {}), _path(field, "config"))
        topics[name] = TopicState(partitions=partitions, config=config)  # type: ignore[arg-type]
    return topics


# --- events ---------------------------------------------------------------------------------

class _EventContext:
    """What the events may refer to: topics and partitions existing at that point, known brokers."""

    def __init__(self, topics: Mapping[str, TopicState], known_brokers: set[int]) -> None:
        self.partitions = {t: set(ts.partitions) for t, ts in topics.items()}
        self.known_brokers = known_brokers

    def broker(self, value: Any, field: str) -> int:
        broker = _int(value, field, minimum=0)
        if broker not in self.known_brokers:
            raise OracleInputError(field, f"unknown broker {broker} (neither live nor a replica of any partition)")
        return broker

    def brokers(self, value: Any, field: str) -> tuple[int, ...]:
        ids = _broker_list(value, field, allow_empty=False)
        for i, broker in enumerate(ids):
            self.broker(broker, _path(field, i))
        return ids

    def topic(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise OracleInputError(field, f"expected a topic name, got {_kind(value)}")
        if value not in self.partitions:
            raise OracleInputError(field, f"unknown topic {value!r}")
        return value

    def topic_partition(self, obj: Mapping[str, Any], field: str) -> TopicPartition:
        for key in ("topic", "partition"):
            if key not in obj:
                raise OracleInputError(_path(field, key), "missing")
        topic = self.topic(obj["topic"], _path(field, "topic"))
        number = _int(obj["partition"], _path(field, "partition"), minimum=0)
        if number not in self.partitions[topic]:
            raise OracleInputError(_path(field, "partition"), f"unknown partition {topic}-{number}")
        return TopicPartition(topic, number)

    def partition_list(self, value: Any, field: str) -> tuple[TopicPartition, ...]:
        if not isinstance(value, list):
            raise OracleInputError(field, f"expected a list of {{topic, partition}} objects, got {_kind(value)}")
        result = []
        for i, raw in enumerate(value):
            where = _path(field, i)
            obj = _object(raw, where)
            _no_unknown_keys(obj, {"topic", "partition"}, where)
            result.append(self.topic_partition(obj, where))
        return tuple(result)


def _event(raw: Any, index: int, ctx: _EventContext, mode: Mode = Mode.ZOOKEEPER) -> Event:
    field = _path("events", index)
    obj = _object(raw, field)
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        raise OracleInputError(
            _path(field, "type"), f"unknown event type {kind!r} (expected one of {', '.join(EVENT_TYPES)})"
        )
    _no_unknown_keys(obj, _EVENT_KEYS[kind] | {"type"}, field)
    for key in sorted(_EVENT_KEYS[kind]):
        if key not in obj and (kind, key) not in _OPTIONAL_EVENT_KEYS:
            raise OracleInputError(_path(field, key), "missing")

    def at(key: str) -> str:
        return _path(field, key)

    if kind == BrokerFailure.KIND:
        return BrokerFailure(ctx.brokers(obj["brokers"], at("brokers")), _restarting(obj, at("restarting"), mode))
    if kind == BrokerStartup.KIND:
        return BrokerStartup(ctx.brokers(obj["brokers"], at("brokers")))
    if kind == ControlledShutdown.KIND:
        return ControlledShutdown(ctx.broker(obj["broker"], at("broker")))
    if kind == Reassign.KIND:
        tp = ctx.topic_partition(obj, field)
        return Reassign(tp.topic, tp.partition, _replica_list(obj["replicas"], at("replicas")))
    if kind == PreferredElection.KIND:
        return PreferredElection(ctx.partition_list(obj["partitions"], at("partitions")))
    if kind == UncleanElection.KIND:
        return UncleanElection(ctx.partition_list(obj["partitions"], at("partitions")))
    if kind == AutoRebalance.KIND:
        return AutoRebalance()
    if kind == CreateTopic.KIND:
        topic = obj["topic"]
        if not isinstance(topic, str) or not topic:
            raise OracleInputError(at("topic"), f"expected a topic name, got {_kind(topic)}")
        if topic in ctx.partitions:
            raise OracleInputError(at("topic"), f"topic {topic!r} already exists")
        assignment = _assignment(obj["replicas"], at("replicas"), "a topic needs at least one partition")
        config = _config(obj.get("config", {}), at("config"))
        ctx.partitions[topic] = set(assignment)
        return CreateTopic(topic, assignment, config)  # type: ignore[arg-type]
    if kind == DeleteTopic.KIND:
        return DeleteTopic(ctx.topic(obj["topic"], at("topic")))
    if kind == AddPartitions.KIND:
        topic = ctx.topic(obj["topic"], at("topic"))
        additions = _assignment(obj["replicas"], at("replicas"), "a partition addition needs at least one partition")
        for number in sorted(additions):
            if number in ctx.partitions[topic]:
                raise OracleInputError(_path(field, "replicas", number), f"partition {topic}-{number} already exists")
        ctx.partitions[topic] |= set(additions)
        return AddPartitions(topic, additions)
    if kind == ControllerFailover.KIND:
        if mode is not Mode.KRAFT:
            raise OracleInputError(_path(field, "type"), "controller_failover is a KRaft event (\"mode\": \"kraft\"); "
                                   "in ZooKeeper mode the controller broker's failure is a broker_failure")
        controller = obj.get("controller")
        return ControllerFailover(None if controller is None else _int(controller, at("controller"), minimum=0))
    if kind == CancelReassignment.KIND:
        if mode is not Mode.KRAFT:
            raise OracleInputError(_path(field, "type"), "cancel_reassignment is a KRaft event (\"mode\": \"kraft\"); "
                                   "in ZooKeeper mode a cancellation is a reassign to the original replicas")
        tp = ctx.topic_partition(obj, field)
        return CancelReassignment(tp.topic, tp.partition)
    if kind == LogDirFailure.KIND:
        return LogDirFailure(ctx.broker(obj["broker"], at("broker")), ctx.partition_list(obj["partitions"], at("partitions")))
    # TopicConfigChange
    topic = ctx.topic(obj["topic"], at("topic"))
    return TopicConfigChange(topic, _config(obj["config"], at("config"), allow_null_values=True))


def _restarting(obj: Mapping[str, Any], field: str, mode: Mode) -> bool:
    """A broker_failure's ``restarting`` (a hard restart: SIGKILL and start at once): only the KRaft
    model has the plan it adds (the new incarnation registered before the old one is fenced,
    ``KRaftController.handle_registration_before_fence``); ZooKeeper mode has no such race to model."""
    value = obj.get("restarting", False)
    if not isinstance(value, bool):
        raise OracleInputError(field, f"expected true or false, got {_kind(value)}")
    if value and mode is not Mode.KRAFT:
        raise OracleInputError(field, "restarting is a KRaft model input (\"mode\": \"kraft\"): a ZooKeeper-mode "
                               "restart is a broker_failure, then a broker_startup")
    return value


def _assignment(value: Any, field: str, empty: str) -> dict[int, tuple[int, ...]]:
    """``{"<partition>": [replicas]}`` of a create_topic or add_partitions event."""
    replicas_obj = _object(value, field)
    if not replicas_obj:
        raise OracleInputError(field, empty)
    assignment = {}
    for key, raw_replicas in replicas_obj.items():
        where = _path(field, key)
        assignment[_partition_number(key, where)] = _replica_list(raw_replicas, where)
    return assignment


def _known_brokers(brokers: tuple[int, ...], topics: Mapping[str, TopicState], raw_events: list[Any]) -> set[int]:
    """Live brokers, every replica of an existing partition, and every broker a create_topic or
    reassign event names (they may introduce new broker ids)."""
    known = set(brokers)
    for topic in topics.values():
        for p in topic.partitions.values():
            known.update(p.replicas)
    for raw in raw_events:
        if not isinstance(raw, dict):
            continue
        replicas = raw.get("replicas")
        if raw.get("type") == Reassign.KIND and isinstance(replicas, list):
            known.update(r for r in replicas if isinstance(r, int) and not isinstance(r, bool))
        if raw.get("type") in (CreateTopic.KIND, AddPartitions.KIND) and isinstance(replicas, dict):
            for values in replicas.values():
                if isinstance(values, list):
                    known.update(r for r in values if isinstance(r, int) and not isinstance(r, bool))
    return known


def parse_request(obj: Any) -> tuple[ClusterState, list[Event]]:
    """The request object (already decoded from JSON) -> the initial state and the events."""
    request = _object(obj, "input")
    _no_unknown_keys(request, _TOP_LEVEL_KEYS, "")
    if "brokers" not in request:
        raise OracleInputError("brokers", "missing (the list of live broker ids)")
    mode = _mode(request.get("mode", Mode.ZOOKEEPER.value))
    brokers = _broker_list(request["brokers"], "brokers")
    live = frozenset(brokers)
    controller = request.get("controller")
    if controller is not None:
        controller = _int(controller, "controller", minimum=0)
        # KRaft: the active controller is a controller node, not a broker
        if mode is Mode.ZOOKEEPER and controller not in live:
            raise OracleInputError("controller", f"controller {controller} is not one of the live brokers {list(brokers)}")
    config = _config(request.get("config", {}), "config")
    release = _release(request.get("kafka_version", str(NEWEST)), mode)
    topics = _topics(request.get("topics", {}), live, mode, _elr_on(mode, config, release))
    raw_events = request.get("events", [])
    if not isinstance(raw_events, list):
        raise OracleInputError("events", f"expected a list of events, got {_kind(raw_events)}")
    deleting = _topics_being_deleted(request.get("topics_being_deleted", []), topics)
    if mode is Mode.KRAFT and deleting:
        raise OracleInputError("topics_being_deleted", "KRaft deletes a topic at once: no topic is being deleted")
    offline = _offline_replicas(request.get("offline_replicas", {}), topics, live)
    ctx = _EventContext(topics, _known_brokers(brokers, topics, raw_events))
    events = [_event(raw, i, ctx, mode) for i, raw in enumerate(raw_events)]
    state = ClusterState(
        live_brokers=live,
        topics=topics,
        controller=controller,
        config=config,  # type: ignore[arg-type]
        release=release,
        topics_being_deleted=deleting,
        offline_replicas=offline,
        mode=mode,
    )
    return state, events


def _elr_on(mode: Mode, config: Mapping[str, object], release: Release) -> bool:
    return mode is Mode.KRAFT and elr_feature_enabled(config, release)


def _mode(value: Any) -> Mode:
    """``"zookeeper"`` (the default) or ``"kraft"``."""
    names = [m.value for m in Mode]
    if not isinstance(value, str) or value not in names:
        raise OracleInputError("mode", f"expected one of {', '.join(names)}, got {value!r}")
    return Mode(value)


def _release(value: Any, mode: Mode) -> Release:
    """The controller's Kafka release (default 3.9.2): 2.4.0 to 3.9.x in ZooKeeper mode, the lines
    the KRaft model covers in KRaft mode (4.x included: it has no ZooKeeper mode)."""
    if not isinstance(value, str):
        raise OracleInputError("kafka_version", f"expected a release like \"3.9.2\", got {_kind(value)}")
    try:
        release = Release.parse(value)
    except ValueError:
        raise OracleInputError("kafka_version", f"{value!r} is not a release like \"3.9.2\"") from None
    if mode is Mode.KRAFT:
        if not release_modelled(release):
            raise OracleInputError("kafka_version", f"{release} is not modelled in KRaft mode (the KRaft model covers "
                                                    f"{KRAFT_MODELLED})")
    elif not Release(2, 4) <= release < Release(4, 0):
        raise OracleInputError("kafka_version", f"{value} is not a ZooKeeper-mode release the oracle models (2.4 to 3.9)"
                               + ("; 4.x is KRaft only: add \"mode\": \"kraft\"" if release >= Release(4, 0) else ""))
    return release


def _topics_being_deleted(value: Any, topics: Mapping[str, TopicState]) -> frozenset[str]:
    """``/admin/delete_topics`` entries of topics that still exist."""
    if not isinstance(value, list):
        raise OracleInputError("topics_being_deleted", f"expected a list of topic names, got {_kind(value)}")
    names: set[str] = set()
    for i, name in enumerate(value):
        where = _path("topics_being_deleted", i)
        if not isinstance(name, str) or name not in topics:
            raise OracleInputError(where, f"expected one of the topics, got {name!r}")
        if name in names:
            raise OracleInputError(where, f"duplicate topic {name!r}")
        names.add(name)
    return frozenset(names)


def _offline_replicas(
    value: Any, topics: Mapping[str, TopicState], live: frozenset[int]
) -> dict[int, frozenset[TopicPartition]]:
    """``{"<broker>": [{topic, partition}]}``: partitions on a live broker's failed log directories."""
    ctx = _EventContext(topics, set(live))
    result: dict[int, frozenset[TopicPartition]] = {}
    for key, raw in _object(value, "offline_replicas").items():
        where = _path("offline_replicas", key)
        if not (key.isascii() and key.isdigit()) or (len(key) > 1 and key[0] == "0"):
            raise OracleInputError(where, f"broker ids are non-negative integers, got {key!r}")
        broker = int(key)
        if broker not in live:
            raise OracleInputError(where, f"broker {broker} is not one of the live brokers")
        tps = ctx.partition_list(raw, where)
        for i, tp in enumerate(tps):
            if broker not in topics[tp.topic].partitions[tp.partition].replicas:
                raise OracleInputError(_path(where, i), f"{tp} has no replica on broker {broker}")
        result[broker] = frozenset(tps)
    return result


def parse_json_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise OracleInputError("input", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise OracleInputError("input", "JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer longer than Python's int-string conversion limit
        raise OracleInputError("input", f"not usable JSON ({exc})") from None


# --- rendering ------------------------------------------------------------------------------

def render_partition(p: PartitionState, elr_on: bool = False) -> dict[str, Any]:
    """``elr_on``: a controller that keeps eligible leader replicas, whose answers show them."""
    rendered = {
        "replicas": list(p.replicas),
        "leader": p.leader,
        "isr": list(p.isr),
        "leader_epoch": p.leader_epoch,
        "leader_recovery_state": p.leader_recovery_state,
        "state": p.phase.value,
        "adding_replicas": list(p.adding_replicas),
        "removing_replicas": list(p.removing_replicas),
    }
    if p.partition_epoch is not None:  # KRaft only: ZooKeeper answers keep their shape
        rendered["partition_epoch"] = p.partition_epoch
    if elr_on or p.elr or p.last_known_elr:
        rendered["elr"] = list(p.elr)
        rendered["last_known_elr"] = list(p.last_known_elr)
    return rendered


def render_state(state: ClusterState) -> dict[str, Any]:
    """The cluster state in the request's shape (so an answer can be fed back as a request)."""
    return {
        **({"mode": state.mode.value} if state.mode is not Mode.ZOOKEEPER else {}),
        **({"kafka_version": str(state.release)} if state.release != NEWEST else {}),
        "brokers": sorted(state.live_brokers),
        "controller": state.controller,
        "config": dict(state.config),
        "topics_being_deleted": sorted(state.topics_being_deleted),
        "offline_replicas": {
            str(broker): [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(tps)]
            for broker, tps in sorted(state.offline_replicas.items())
        },
        "topics": {
            name: {
                "config": dict(state.topics[name].config),
                "partitions": {
                    str(number): render_partition(state.topics[name].partitions[number],
                                                     _elr_on(state.mode, state.config, state.release))
                    for number in sorted(state.topics[name].partitions)
                },
            }
            for name in sorted(state.topics)
        },
    }


def _render_outcomes(outcomes: tuple[PartitionOutcome, ...]) -> list[dict[str, Any]]:
    return [
        {"event": o.event_index, "topic": o.topic, "partition": o.partition, "outcome": o.outcome.value}
        for o in outcomes
    ]


def render_prediction(prediction: Prediction, *, include_steps: bool = False) -> dict[str, Any]:
    """The main prediction (state, ``outcomes``, ``steps`` if asked) and ``alternatives``: every
    settled state a legal order of the events leaves, the main one first, each with its ``label``,
    state and ``outcomes`` (and ``steps``)."""
    rendered = render_state(prediction.state)
    rendered["outcomes"] = _render_outcomes(prediction.outcomes)
    if include_steps:
        rendered["steps"] = [render_state(step) for step in prediction.steps]
    alternatives = []
    for alternative in prediction.alternatives:
        entry: dict[str, Any] = {"label": alternative.label, **render_state(alternative.state)}
        entry["outcomes"] = _render_outcomes(alternative.outcomes)
        if include_steps:
            entry["steps"] = [render_state(step) for step in alternative.steps]
        alternatives.append(entry)
    rendered["alternatives"] = alternatives
    return rendered

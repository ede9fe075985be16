"""Where ZooKeeper-mode Kafka 3.9 keeps its state, and how each znode's bytes are read and written.

Pure functions only (no kazoo, no I/O), so every format is unit-tested on bytes that look like
the real ones.  Paths and encodings follow ``core/src/main/scala/kafka/zk/ZkData.scala`` (3.9);
each codec names the ZkData object it mirrors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_chaos.harness.errors import HarnessError, UsageError

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ADMIN = "/admin"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
# ConfigEntityChangeNotificationSequenceZNode.SequenceNumberPrefix
CONFIG_CHANGE_PREFIX = "config_change_"

# LeaderRecoveryState.RECOVERED; the state znode carries the field only when it is not this.
RECOVERED = 0


class ZnodeFormatError(HarnessError):
    """A znode's content is not what Kafka 3.9 writes there."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def config_change_sequence_prefix() -> str:
    """The path handed to a PERSISTENT_SEQUENTIAL create; ZooKeeper appends the counter."""
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"


@dataclass(frozen=True)
class TopicAssignment:
    """``/brokers/topics/<t>`` (TopicZNode): the replica list of each partition in AR order."""

    topic_id: str | None
    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class LeaderIsrState:
    """``/brokers/topics/<t>/partitions/<p>/state`` (TopicPartitionStateZNode)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = RECOVERED


def _json_object(data: bytes | None, what: str) -> dict[str, Any]:
    if data is None:
        raise ZnodeFormatError(f"{what}: znode has no data")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZnodeFormatError(f"{what}: not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ZnodeFormatError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def _int(value: Any, what: str) -> int:
    # bool is an int subclass in Python; Kafka never writes booleans where it means ids.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeFormatError(f"{what}: expected an integer, got {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ZnodeFormatError(f"{what}: expected a list of broker ids, got {value!r}")
    return tuple(_int(v, what) for v in value)


def _replica_map(value: Any, what: str) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ZnodeFormatError(f"{what}: expected an object keyed by partition, got {value!r}")
    result: dict[int, tuple[int, ...]] = {}
    for key, replicas in value.items():
        try:
            partition = int(key)
        except ValueError as exc:
            raise ZnodeFormatError(f"{what}: partition key {key!r} is not a number") from exc
        result[partition] = _int_list(replicas, f"{what}[{key}]")
    return result


def parse_topic_assignment(data: bytes | None, topic: str = "?") -> TopicAssignment:
    """TopicZNode.decode: ``{"version":3,"topic_id":..,"partitions":{"0":[1,2,3]},...}``."""
    what = f"topic znode of {topic!r}"
    obj = _json_object(data, what)
    if "partitions" not in obj:
        raise ZnodeFormatError(f"{what}: no 'partitions' field")
    topic_id = obj.get("topic_id")
    return TopicAssignment(
        topic_id=str(topic_id) if topic_id is not None else None,
        partitions=_replica_map(obj["partitions"], f"{what} partitions"),
        adding_replicas=_replica_map(obj.get("adding_replicas"), f"{what} adding_replicas"),
        removing_replicas=_replica_map(obj.get("removing_replicas"), f"{what} removing_replicas"),
    )


def parse_partition_state(data: bytes | None, where: str = "partition state") -> LeaderIsrState:
    """TopicPartitionStateZNode.decode; ``leader_recovery_state`` is absent when RECOVERED."""
    obj = _json_object(data, where)
    try:
        return LeaderIsrState(
            leader=_int(obj["leader"], f"{where} leader"),
            leader_epoch=_int(obj["leader_epoch"], f"{where} leader_epoch"),
            isr=_int_list(obj["isr"], f"{where} isr"),
            controller_epoch=_int(obj["controller_epoch"], f"{where} controller_epoch"),
            leader_recovery_state=_int(
                obj.get("leader_recovery_state", RECOVERED), f"{where} leader_recovery_state"),
        )
    except KeyError as exc:
        raise ZnodeFormatError(f"{where}: no {exc.args[0]!r} field") from exc


def parse_controller(data: bytes | None) -> int:
    """ControllerZNode.decode: ``{"version":2,"brokerid":N,"timestamp":"..",...}`` -> N."""
    obj = _json_object(data, "/controller")
    if "brokerid" not in obj:
        raise ZnodeFormatError("/controller: no 'brokerid' field")
    return _int(obj["brokerid"], "/controller brokerid")


def parse_controller_elected_at(data: bytes | None) -> float | None:
    """ControllerZNode's ``timestamp`` (``KafkaController.elect``: the winner's wall clock in ms
    when it wrote the znode) in epoch seconds, or None when it has none."""
    obj = _json_object(data, "/controller")
    try:
        return float(obj["timestamp"]) / 1000.0
    except (KeyError, TypeError, ValueError):
        return None


def parse_controller_epoch(data: bytes | None) -> int:
    """ControllerEpochZNode.decode: the epoch as a decimal string."""
    if data is None:
        raise ZnodeFormatError("/controller_epoch: znode has no data")
    try:
        return int(data.decode("utf-8").strip())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZnodeFormatError(f"/controller_epoch: not an integer ({data[:40]!r})") from exc


def parse_topic_config(data: bytes | None, topic: str = "?") -> dict[str, str]:
    """ConfigEntityZNode.decode: ``{"version":1,"config":{"k":"v"}}`` -> {k: v}.

    Like Kafka, an empty znode means "no overrides" rather than an error.
    """
    if not data:
        return {}
    what = f"config of topic {topic!r}"
    config = _json_object(data, what).get("config") or {}
    if not isinstance(config, dict):
        raise ZnodeFormatError(f"{what}: 'config' is not an object")
    return {str(k): str(v) for k, v in config.items()}


def _dumps(obj: object) -> bytes:
    # Kafka's Json.encodeAsBytes writes compact JSON; keep ours byte-for-byte comparable.
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def _check_broker_list(replicas: Sequence[int], what: str) -> list[int]:
    ids = [_int(r, what) for r in replicas]
    if not ids:
        raise UsageError(f"{what}: the replica list is empty")
    if len(set(ids)) != len(ids):
        raise UsageError(f"{what}: duplicate broker ids in {ids}")
    if any(r < 0 for r in ids):
        raise UsageError(f"{what}: negative broker id in {ids}")
    return ids


def encode_reassignment(moves: Iterable[tuple[str, int, Sequence[int]]]) -> bytes:
    """ReassignPartitionsZNode.encode: ``{"version":1,"partitions":[{"topic","partition","replicas"}]}``.

    The ZK path does no validation (the controller accepts offline targets and stalls), so
    empty, duplicate or repeated entries are refused here.
    """
    entries: list[dict[str, object]] = []
    seen: set[tuple[str, int]] = set()
    for topic, partition, replicas in moves:
        what = f"reassignment of {topic}-{partition}"
        if (topic, partition) in seen:
            raise UsageError(f"{what}: partition listed twice")
        seen.add((topic, partition))
        entries.append({"topic": topic, "partition": _int(partition, what),
                        "replicas": _check_broker_list(replicas, what)})
    if not entries:
        raise UsageError("reassignment: no partitions given")
    return _dumps({"version": 1, "partitions": entries})


def encode_preferred_election(partitions: Iterable[tuple[str, int]]) -> bytes:
    """PreferredReplicaElectionZNode.encode: ``{"version":1,"partitions":[{"topic","partition"}]}``."""
    entries = [{"topic": t, "partition": _int(p, f"preferred election of {t}-{p}")}
               for t, p in dict.fromkeys(partitions)]
    if not entries:
        raise UsageError("preferred election: no partitions given")
    return _dumps({"version": 1, "partitions": entries})


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    """ConfigEntityZNode.encode: ``{"version":1,"config":{...}}`` (values are strings)."""
    for key, value in config.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(f"topic config {key!r}={value!r}: keys and values must be strings")
    return _dumps({"version": 1, "config": dict(config)})


def encode_config_change(entity_path: str) -> bytes:
    """ConfigEntityChangeNotificationSequenceZNode.encode: ``{"version":2,"entity_path":".."}``."""
    return _dumps({"version": 2, "entity_path": entity_path})


def topic_entity_path(topic: str) -> str:
    """The sanitized entity path AdminZkClient.changeEntityConfig puts in the notification."""
    return f"topics/{topic}"

"""The brokers' side of the story, through confluent-kafka's AdminClient.

:func:`broker_view` asks exactly one broker, so each broker's metadata cache can be compared
with ZooKeeper (the truth, :mod:`harness.observer`); the cache is updated by the controller's
UpdateMetadata requests and lags behind ZK.  The other functions are the admin operations the
scenarios need.  Every call uses a short-lived client with bounded timeouts; the client is
released before returning so no librdkafka threads outlive the call.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from harness.errors import HarnessError, UsageError

log = logging.getLogger(__name__)
_librdkafka_log = logging.getLogger(__name__ + ".librdkafka")

NO_LEADER = -1

Election = Literal["preferred", "unclean"]
_ELECTION_TYPES: dict[str, ElectionType] = {
    "preferred": ElectionType.PREFERRED,
    "unclean": ElectionType.UNCLEAN,
}


class MetadataError(HarnessError):
    """A broker did not answer, or answered with an error, within the bounded time."""


@dataclass(frozen=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int  # -1 when the answering broker knows no live leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None  # e.g. "LEADER_NOT_AVAILABLE" as the broker reported it


def _single_host_port(bootstrap: str) -> str:
    hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
    if len(hosts) != 1:
        raise UsageError(f"broker_view needs exactly one broker address, got {bootstrap!r}")
    return hosts[0]


@contextmanager
def admin_client(bootstrap: str, timeout: float) -> Iterator[AdminClient]:
    """A short-lived AdminClient; its log lines go to :mod:`logging`, not stderr."""
    timeout_ms = max(1000, int(timeout * 1000))
    client = AdminClient({
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": timeout_ms,
        "socket.connection.setup.timeout.ms": timeout_ms,
        # Don't keep reconnecting to a killed broker in the background for long.
        "reconnect.backoff.max.ms": 1000,
        "logger": _librdkafka_log,
    })
    try:
        yield client
    finally:
        client.poll(0)  # delivers queued log lines to the logger
        # AdminClient has no close(): dropping the last reference destroys the handle and joins
        # librdkafka's threads (rd_kafka_destroy) here rather than at some later GC.
        del client


def _error_name(error: Any) -> str:
    if isinstance(error, KafkaException):
        error = error.args[0] if error.args else error
    if isinstance(error, KafkaError):
        return str(error.name())
    return str(error)


def _result(future: Any, timeout: float, what: str) -> Any:
    try:
        return future.result(timeout=timeout)
    except KafkaException as exc:
        raise MetadataError(f"{what} failed: {_error_name(exc)}: {exc.args[0] if exc.args else exc}") from exc
    except TimeoutError:
        raise MetadataError(f"{what}: no answer within {timeout:.0f} s") from None


def broker_view(bootstrap: str, topics: Iterable[str],
                timeout: float = 5.0) -> dict[tuple[str, int], PartitionMetadata]:
    """The partitions of ``topics`` as the one broker at ``bootstrap`` has them in its cache.

    A topic the broker does not know is simply absent from the result.  Raises MetadataError
    when the broker does not answer in time.
    """
    if isinstance(topics, str):
        raise UsageError(f"topics must be a list of names, not the string {topics!r}")
    host_port = _single_host_port(bootstrap)
    wanted = set(topics)
    with admin_client(host_port, timeout) as client:
        try:
            # One Metadata request for all topics: one consistent read of that broker's cache.
            # The client has only just connected to this broker, so librdkafka sends it there;
            # orig_broker_name below checks that.
            cluster = client.list_topics(timeout=timeout)
        except KafkaException as exc:
            raise MetadataError(f"broker at {host_port} did not return metadata within "
                                f"{timeout:.0f} s: {_error_name(exc)}") from exc
    origin = str(cluster.orig_broker_name or "")
    if not origin.startswith(host_port):
        raise MetadataError(f"metadata meant to come from {host_port} came from {origin!r}")
    view: dict[tuple[str, int], PartitionMetadata] = {}
    for name, topic in cluster.topics.items():
        if name not in wanted or topic.error is not None:
            continue
        for pid, part in topic.partitions.items():
            view[(name, pid)] = PartitionMetadata(
                topic=name, partition=pid,
                leader=part.leader if part.leader is not None and part.leader >= 0 else NO_LEADER,
                replicas=tuple(part.replicas), isr=tuple(part.isrs),
                error=_error_name(part.error) if part.error is not None else None,
            )
    return view


def _assignment_list(topic: str, assignment: Mapping[int, Sequence[int]]) -> list[list[int]]:
    """NewTopic wants a list indexed by partition: partitions must be 0..n-1."""
    if not assignment:
        raise UsageError(f"topic {topic!r}: the assignment is empty")
    if sorted(assignment) != list(range(len(assignment))):
        raise UsageError(f"topic {topic!r}: partitions must be numbered 0..{len(assignment) - 1}, "
                         f"got {sorted(assignment)}")
    result = []
    for partition in range(len(assignment)):
        replicas = [int(r) for r in assignment[partition]]
        if not replicas or len(set(replicas)) != len(replicas):
            raise UsageError(f"topic {topic!r} partition {partition}: replicas {replicas} must be "
                             f"non-empty and distinct")
        result.append(replicas)
    return result


def create_topic(bootstrap: str, topic: str, assignment: Mapping[int, Sequence[int]],
                 config: Mapping[str, str] | None = None, *, timeout: float = 30.0) -> None:
    """Create ``topic`` with an explicit replica assignment ({partition: [broker, ...]}, AR
    order), so the test knows the preferred leaders instead of Kafka's random placement."""
    new_topic = NewTopic(topic, replica_assignment=_assignment_list(topic, assignment),
                         config={str(k): str(v) for k, v in (config or {}).items()})
    with admin_client(bootstrap, timeout) as client:
        futures = client.create_topics([new_topic], operation_timeout=timeout, request_timeout=timeout)
        _result(futures[topic], timeout + 1, f"creating topic {topic!r}")
    log.info("created topic %s with assignment %s", topic, dict(assignment))


def delete_topics(bootstrap: str, topics: Iterable[str], *, timeout: float = 30.0) -> None:
    names = list(topics)
    if not names:
        return
    with admin_client(bootstrap, timeout) as client:
        futures = client.delete_topics(names, operation_timeout=timeout, request_timeout=timeout)
        for name, future in futures.items():
            _result(future, timeout + 1, f"deleting topic {name!r}")


def elect_leaders(bootstrap: str, election: Election, partitions: Iterable[tuple[str, int]], *,
                  timeout: float = 30.0) -> dict[tuple[str, int], str | None]:
    """Admin ElectLeaders; returns each partition's error name (e.g. "ELECTION_NOT_NEEDED",
    "PREFERRED_LEADER_NOT_AVAILABLE", "ELIGIBLE_LEADERS_NOT_AVAILABLE") or None on success."""
    if election not in _ELECTION_TYPES:
        raise UsageError(f"election must be 'preferred' or 'unclean', not {election!r}")
    wanted = list(dict.fromkeys(partitions))
    if not wanted:
        raise UsageError("elect_leaders: no partitions given")
    tps = [TopicPartition(t, p) for t, p in wanted]
    with admin_client(bootstrap, timeout) as client:
        future = client.elect_leaders(_ELECTION_TYPES[election], tps,
                                      request_timeout=timeout, operation_timeout=timeout)
        results = _result(future, timeout + 1, f"{election} leader election")
    outcome: dict[tuple[str, int], str | None] = {}
    for tp, error in results.items():
        outcome[(tp.topic, tp.partition)] = None if error is None else _error_name(error)
    return outcome


def describe_topics(bootstrap: str, topics: Iterable[str], *,
                    timeout: float = 10.0) -> dict[tuple[str, int], PartitionMetadata]:
    """DescribeTopics through any broker of ``bootstrap`` (one cache among many; prefer
    :func:`broker_view` for per-broker comparisons)."""
    names = list(topics)
    if not names:
        return {}
    with admin_client(bootstrap, timeout) as client:
        futures = client.describe_topics(TopicCollection(names), request_timeout=timeout)
        described = {name: _result(f, timeout + 1, f"describing topic {name!r}")
                     for name, f in futures.items()}
    view: dict[tuple[str, int], PartitionMetadata] = {}
    for name, description in described.items():
        for info in description.partitions:
            view[(name, info.id)] = PartitionMetadata(
                topic=name, partition=info.id,
                leader=info.leader.id if info.leader is not None else NO_LEADER,
                replicas=tuple(n.id for n in info.replicas), isr=tuple(n.id for n in info.isr))
    return view


def alter_topic_config(bootstrap: str, topic: str, changes: Mapping[str, str | None], *,
                       timeout: float = 30.0) -> None:
    """IncrementalAlterConfigs on a topic (the broker writes ``/config/topics/<t>`` and the
    change notification itself); None deletes a key."""
    if not changes:
        raise UsageError(f"alter_topic_config {topic!r}: no changes given")
    entries = [
        ConfigEntry(key, value if value is not None else "",
                    incremental_operation=AlterConfigOpType.SET if value is not None
                    else AlterConfigOpType.DELETE)
        for key, value in changes.items()
    ]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    with admin_client(bootstrap, timeout) as client:
        futures = client.incremental_alter_configs([resource], request_timeout=timeout)
        for future in futures.values():
            _result(future, timeout + 1, f"altering config of topic {topic!r}")

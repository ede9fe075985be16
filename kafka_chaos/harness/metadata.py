"""The brokers' side of the story.

:func:`broker_view` asks exactly one broker for its metadata cache, so each broker can be
compared with ZooKeeper (the truth, :mod:`harness.observer`); the cache is filled by the
controller's UpdateMetadata requests and lags behind ZK.  It speaks the Metadata API directly
(:mod:`harness.kafka_wire` says why librdkafka cannot be pinned to one broker).

The admin operations the scenarios need go through confluent-kafka's AdminClient.  Every call
uses a short-lived client with bounded timeouts, released before returning so no librdkafka
threads outlive the call.
"""

from __future__ import annotations

import itertools
import logging
import socket
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

from kafka_chaos.harness import kafka_wire
from kafka_chaos.harness.cluster import ControllerQuorumControl
from kafka_chaos.harness.errors import HarnessError, UsageError

log = logging.getLogger(__name__)
_librdkafka_log = logging.getLogger(__name__ + ".librdkafka")

NO_LEADER = -1

Election = Literal["preferred", "unclean"]
_ELECTION_TYPES: dict[str, ElectionType] = {
    "preferred": ElectionType.PREFERRED,
    "unclean": ElectionType.UNCLEAN,
}


_correlation_ids = itertools.count(1)


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
    leader_epoch: int = -1  # broker_view only: the epoch in that broker's cache
    offline_replicas: tuple[int, ...] = ()  # broker_view only


def _single_host_port(bootstrap: str) -> str:
    hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
    if len(hosts) != 1 or ":" not in hosts[0] or not hosts[0].rpartition(":")[2].isdigit():
        raise UsageError(f"broker_view needs exactly one broker address host:port, got {bootstrap!r}")
    return hosts[0]


@contextmanager
def admin_client(bootstrap: str, timeout: float) -> Iterator[AdminClient]:
    """A short-lived AdminClient; its log lines go to :mod:`logging`, not stderr."""
    timeout_ms = max(1000, int(timeout * 1000))
    # Any values: "logger" takes a logging.Logger, which the client's own typing leaves out.
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": timeout_ms,
        "socket.connection.setup.timeout.ms": timeout_ms,
        # Don't keep reconnecting to a killed broker in the background for long.
        "reconnect.backoff.max.ms": 1000,
        "logger": _librdkafka_log,
    }
    client = AdminClient(config)
    try:
        yield client
    finally:
        client.poll(0)  # delivers queued log lines to the logger
        # AdminClient has no close(): dropping the last reference destroys the handle and joins
        # librdkafka's threads (rd_kafka_destroy) here rather than at some later GC.
        del client


def _kafka_error_name(error: Any) -> str:
    if isinstance(error, KafkaException):
        error = error.args[0] if error.args else error
    if isinstance(error, KafkaError):
        return str(error.name())
    return str(error)


def _result(future: Any, timeout: float, what: str) -> Any:
    try:
        return future.result(timeout=timeout)
    except KafkaException as exc:
        raise MetadataError(f"{what} failed: {_kafka_error_name(exc)}: {exc.args[0] if exc.args else exc}") from exc
    except TimeoutError:
        raise MetadataError(f"{what}: no answer within {timeout:.0f} s") from None


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _exchange(address: str, request: bytes, timeout: float) -> bytes:
    """Send one size-prefixed request to the broker at ``host:port`` on a connection of its own;
    its answer without the size prefix (OSError or ValueError when none came)."""
    host, _, port = address.strip().rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.settimeout(timeout)  # each send/recv; the whole exchange is a few of them
        sock.sendall(request)
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        return _recv_exactly(sock, size)


def fetch_metadata(bootstrap: str, topics: Sequence[str] | None,
                   timeout: float = 5.0) -> kafka_wire.WireMetadata:
    """One Metadata request to the one broker at ``host:port``, on its own connection."""
    address = _single_host_port(bootstrap)
    correlation_id = next(_correlation_ids)
    try:
        payload = _exchange(address, kafka_wire.encode_metadata_request(correlation_id, topics), timeout)
    except (OSError, ValueError) as exc:
        raise MetadataError(f"broker at {bootstrap} did not answer a metadata request within "
                            f"{timeout:.0f} s: {type(exc).__name__}: {exc}") from exc
    try:
        metadata = kafka_wire.decode_metadata_response(payload)
    except kafka_wire.WireFormatError as exc:
        raise MetadataError(f"broker at {bootstrap}: {exc}") from exc
    if metadata.correlation_id != correlation_id:
        raise MetadataError(f"broker at {bootstrap} answered request {metadata.correlation_id}, "
                            f"expected {correlation_id}")
    return metadata


def alter_partition_reassignments(bootstrap: str, moves: Mapping[str, Mapping[int, Sequence[int] | None]],
                                  timeout: float = 30.0) -> None:
    """AlterPartitionReassignments, sent to the first broker of ``bootstrap`` that answers (a broker
    forwards it to the controller: ``KafkaApis.handleAlterPartitionReassignmentsRequest``); a
    MetadataError naming Kafka's error when it refuses any partition."""
    def ask(address: str) -> None:
        correlation_id = next(_correlation_ids)
        request = kafka_wire.encode_alter_partition_reassignments(correlation_id, int(timeout * 1000), moves)
        try:
            answer = kafka_wire.decode_alter_partition_reassignments_response(_exchange(address, request, timeout))
        except (OSError, ValueError) as exc:
            raise _NoAnswer(f"{address}: {type(exc).__name__}: {exc}") from exc
        refused = [f"{t}-{p}: {error_name(code)}{f' ({msg})' if msg else ''}"
                   for (t, p), (code, msg) in sorted(answer.partitions.items()) if code != 0]
        if answer.error_code != 0:
            refused.insert(0, f"{error_name(answer.error_code)}: {answer.error_message or ''}".rstrip(": "))
        if refused:
            raise MetadataError(f"AlterPartitionReassignments refused by way of {address}: {'; '.join(refused)}")

    _ask_first_answering(bootstrap, "AlterPartitionReassignments", ask)


def find_coordinator(address: str, group: str, timeout: float = 2.0) -> kafka_wire.WireAnswer:
    """FindCoordinator for ``group``, asked of the broker at ``address``: its error code and the
    coordinator's node id. While ``__consumer_offsets`` does not exist the broker creates it and
    answers COORDINATOR_NOT_AVAILABLE (``KafkaApis.getCoordinator``, 3.9)."""
    return _answer(address, "FindCoordinator", lambda cid: kafka_wire.encode_find_coordinator(cid, group),
                   kafka_wire.decode_find_coordinator_response, timeout)


def init_producer_id(address: str, timeout: float = 2.0) -> kafka_wire.WireProducerId:
    """InitProducerId of an idempotent producer, asked of the broker at ``address``: its error code,
    the producer id and its epoch. A broker without a block of producer ids asks the controller for one
    and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile (``RPCProducerIdManager.generateProducerId``,
    3.9)."""
    return _answer(address, "InitProducerId", kafka_wire.encode_init_producer_id,
                   kafka_wire.decode_init_producer_id_response, timeout)


def describe_quorum(address: str, timeout: float = 2.0) -> kafka_wire.WireQuorum:
    """DescribeQuorum asked of the KRaft voter at ``address`` (its controller listener): its leader
    id and epoch when it believes it leads, else NOT_LEADER_OR_FOLLOWER."""
    return _answer(address, "DescribeQuorum", kafka_wire.encode_describe_quorum,
                   kafka_wire.decode_describe_quorum_response, timeout)


def running_voters_quorum(quorum: ControllerQuorumControl,
                          timeout: float = 2.0) -> Iterator[tuple[int, kafka_wire.WireQuorum | MetadataError]]:
    """Each running voter's DescribeQuorum answer, or the error it gave instead, in node-id order
    of ``controller_ids``; lazy, so a caller after the leader alone stops at the first that leads."""
    for node in quorum.controller_ids:
        if not quorum.controller_running(node):
            continue
        try:
            yield node, describe_quorum(quorum.controller_address(node), timeout)
        except MetadataError as exc:
            yield node, exc


def describe_log_dirs(address: str, timeout: float = 2.0) -> kafka_wire.WireLogDirs:
    """DescribeLogDirs v1 asked of the broker at ``address``: every log it holds, per directory
    (``ReplicaManager.describeLogDirs``: its LogManager's logs, so a partition it stopped without
    deleting is there, one it deleted is not — ``LogManager.asyncDelete`` drops it at once)."""
    return _answer(address, "DescribeLogDirs", kafka_wire.encode_describe_log_dirs,
                   kafka_wire.decode_describe_log_dirs_response, timeout)


def latest_offsets(address: str, partitions: Mapping[str, Sequence[int]], timeout: float = 2.0) -> kafka_wire.WireOffsets:
    """ListOffsets v1 (LATEST) asked of the broker at ``address``: for each partition it leads,
    its high watermark; NOT_LEADER_OR_FOLLOWER for the others."""
    return _answer(address, "ListOffsets", lambda c: kafka_wire.encode_list_offsets(c, partitions),
                   kafka_wire.decode_list_offsets_response, timeout)


def log_start_offsets(address: str, partitions: Mapping[str, Sequence[int]],
                      timeout: float = 2.0) -> kafka_wire.WireOffsets:
    """ListOffsets v1 (EARLIEST) asked of the broker at ``address``: for each partition it leads,
    its log start offset; NOT_LEADER_OR_FOLLOWER for the others."""
    return _answer(address, "ListOffsets",
                   lambda c: kafka_wire.encode_list_offsets(c, partitions, kafka_wire.EARLIEST_TIMESTAMP),
                   kafka_wire.decode_list_offsets_response, timeout)


def delete_records(address: str, offsets: Mapping[str, Mapping[int, int]], *, wait_ms: int = 10_000,
                   timeout: float = 15.0) -> kafka_wire.WireDeleted:
    """DeleteRecords v1 (own wire code) asked of the broker at ``address``, the leader of the
    partitions in ``offsets`` (topic -> partition -> offset, -1: the high watermark): each
    partition's error code and low watermark. The leader moves its log start at once and answers
    when every live replica's log start reached the offset, or after ``wait_ms`` with
    REQUEST_TIMED_OUT (``ReplicaManager.deleteRecords``, ``DelayedDeleteRecords``)."""
    return _answer(address, "DeleteRecords", lambda c: kafka_wire.encode_delete_records(c, offsets, wait_ms),
                   kafka_wire.decode_delete_records_response, max(timeout, wait_ms / 1000.0 + 2.0))


class _Correlated(Protocol):
    @property
    def correlation_id(self) -> int: ...


A = TypeVar("A", bound=_Correlated)


def _answer(address: str, what: str, request: Callable[[int], bytes],
            decode: Callable[[bytes], A], timeout: float) -> A:
    """One request (built for its correlation id) to the broker at ``address``, and its answer."""
    correlation_id = next(_correlation_ids)
    try:
        answer = decode(_exchange(address, request(correlation_id), timeout))
    except (OSError, ValueError) as exc:
        raise MetadataError(f"broker at {address} did not answer {what}: {type(exc).__name__}: {exc}") from exc
    if answer.correlation_id != correlation_id:
        raise MetadataError(f"broker at {address} answered request {answer.correlation_id}, expected {correlation_id}")
    return answer


def error_name(code: int) -> str:
    """Kafka protocol error code -> name (librdkafka's broker error codes are the same)."""
    return str(KafkaError(code).name())


def broker_view(bootstrap: str, topics: Iterable[str],
                timeout: float = 5.0) -> dict[tuple[str, int], PartitionMetadata]:
    """The partitions of ``topics`` as the one broker at ``bootstrap`` has them in its cache.

    A topic the broker does not know (UNKNOWN_TOPIC_OR_PARTITION) is absent from the result;
    it is never auto-created.  Raises MetadataError when the broker does not answer in time.
    """
    if isinstance(topics, str):
        raise UsageError(f"topics must be a list of names, not the string {topics!r}")
    # An empty list still asks (and so proves the broker answers); it returns no topics.
    metadata = fetch_metadata(bootstrap, sorted(set(topics)), timeout)
    view: dict[tuple[str, int], PartitionMetadata] = {}
    for topic in metadata.topics:
        if topic.error_code != 0:
            continue
        for part in topic.partitions:
            view[(topic.name, part.partition)] = PartitionMetadata(
                topic=topic.name, partition=part.partition,
                leader=part.leader if part.leader >= 0 else NO_LEADER,
                replicas=part.replicas, isr=part.isr,
                error=error_name(part.error_code) if part.error_code else None,
                leader_epoch=part.leader_epoch, offline_replicas=part.offline_replicas)
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
    replicas = _assignment_list(topic, assignment)
    new_topic = NewTopic(topic, num_partitions=len(replicas), replica_assignment=replicas,
                         config={str(k): str(v) for k, v in (config or {}).items()})
    with admin_client(bootstrap, timeout) as client:
        futures = client.create_topics([new_topic], operation_timeout=timeout, request_timeout=timeout)
        _result(futures[topic], timeout + 1, f"creating topic {topic!r}")
    log.info("created topic %s: %s", topic, describe_assignment(replicas))


ASSIGNMENT_SHOWN = 12  # partitions a log line spells out; a bench's 10,000 made a 160 kB line


def describe_assignment(replicas: Sequence[Sequence[int]], shown: int = ASSIGNMENT_SHOWN) -> str:
    """A topic's replica assignment (indexed by partition) for a log line: whole when short,
    else its first ``shown`` partitions and how many more."""
    head = ", ".join(f"{partition}: {list(brokers)}" for partition, brokers in enumerate(replicas[:shown]))
    more = f", ... {len(replicas) - shown} more" if len(replicas) > shown else ""
    return f"{len(replicas)} partition(s), assignment {{{head}{more}}}"


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
        # No request_timeout/operation_timeout kwargs: confluent-kafka 2.16.1 rejects them
        # ("more argument specifiers than keyword list entries"); both default to the
        # client's socket.timeout.ms, which admin_client() sets from ``timeout``.
        future = client.elect_leaders(_ELECTION_TYPES[election], tps)
        results = _result(future, timeout + 1, f"{election} leader election")
    outcome: dict[tuple[str, int], str | None] = {}
    for tp, error in results.items():
        outcome[(tp.topic, tp.partition)] = None if error is None else _kafka_error_name(error)
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


def describe_topic_config(bootstrap: str, topic: str, *, timeout: float = 10.0) -> dict[str, str]:
    """The topic's dynamic overrides as the answering broker has loaded them (DescribeConfigs,
    entries whose source is DYNAMIC_TOPIC_CONFIG) — shows a ZK config change took effect."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    with admin_client(bootstrap, timeout) as client:
        futures = client.describe_configs([resource], request_timeout=timeout)
        entries = _result(futures[resource], timeout + 1, f"describing config of topic {topic!r}")
    return {name: str(entry.value) for name, entry in entries.items()
            if _source(entry.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and entry.value is not None}


def _source(source: Any) -> int:
    # ConfigEntry.source is a ConfigSource from Python but a plain int from the C layer.
    return int(getattr(source, "value", source))


def alter_topic_config(bootstrap: str, topic: str, changes: Mapping[str, str | None], *,
                       timeout: float = 30.0) -> None:
    """IncrementalAlterConfigs v0 (own wire code) on a topic, asked of the first broker of
    ``bootstrap`` that answers; None deletes a key. Any broker takes it: in ZooKeeper mode it
    writes ``/config/topics/<t>`` and the change notification itself
    (``ZkAdminManager.incrementalAlterConfigs``), a KRaft or migrating broker forwards it to the
    controller. Not librdkafka's admin client, which sends it to the controller its metadata names
    and, in a migrating cluster with a broker down, timed out "waiting for controller" (corpus
    run, KAFKA-16428 on 3.6.2). A refusal is a MetadataError naming Kafka's error."""
    if not changes:
        raise UsageError(f"alter_topic_config {topic!r}: no changes given")
    _ask_first_answering(bootstrap, f"IncrementalAlterConfigs for topic {topic!r}",
                         lambda address: _alter_configs(address, kafka_wire.TOPIC_RESOURCE, topic, changes, timeout,
                                                        f"topic {topic!r}"))


def alter_broker_config(address: str, broker: str, changes: Mapping[str, str | None], *,
                        timeout: float = 30.0) -> None:
    """IncrementalAlterConfigs v0 (own wire code: librdkafka refuses the default's empty name) of
    broker ``broker`` (its id: ask that broker, ``address``; or ``""``, the cluster-wide default,
    asked of any broker): a dynamic broker config (ZooKeeper ``/config/brokers/<id|<default>>``,
    KRaft a ConfigRecord); None deletes a key. A refusal is a MetadataError naming Kafka's error."""
    if not changes:
        raise UsageError(f"altering config of broker {broker or '<default>'}: no changes given")
    _alter_configs(address, kafka_wire.BROKER_RESOURCE, broker, changes, timeout, f"broker {broker or '<default>'}")


class _NoAnswer(MetadataError):
    """The broker did not answer at all (another may)."""


def _ask_first_answering(bootstrap: str, what: str, ask: Callable[[str], None]) -> None:
    """``ask`` each broker of ``bootstrap`` in turn until one answers (``ask`` raises
    :class:`_NoAnswer` when it did not); a MetadataError naming every silence when none did."""
    problems = []
    for address in bootstrap.split(","):
        try:
            ask(address)
            return
        except _NoAnswer as exc:
            problems.append(str(exc))
    raise MetadataError(f"no broker of {bootstrap} answered {what}: {'; '.join(problems)}")


def _alter_configs(address: str, resource_type: int, name: str, changes: Mapping[str, str | None],
                   timeout: float, what: str) -> None:
    """One IncrementalAlterConfigs v0 of one resource asked of the broker at ``address``."""
    try:
        answer = _answer(address, "IncrementalAlterConfigs",
                         lambda c: kafka_wire.encode_incremental_alter_configs(c, resource_type, name, changes),
                         kafka_wire.decode_incremental_alter_configs_response, timeout)
    except MetadataError as exc:
        raise _NoAnswer(str(exc)) from exc
    refused = [f"{error_name(code)}{f' ({message})' if message else ''}" for code, message, _, _ in answer.results
               if code != 0]
    if refused:
        raise MetadataError(f"{what} config change refused by {address}: {'; '.join(refused)}")


# --- topic deletion and partition growth during faults ------------------------------

DeletionAnswer = Literal["answered", "timed_out"]


def request_topic_deletion(bootstrap: str, topic: str, *, wait: float = 3.0,
                           timeout: float = 15.0) -> DeletionAnswer:
    """AdminClient ``deleteTopics`` for one topic. In ZooKeeper mode the broker creates
    ``/admin/delete_topics/<topic>`` and waits up to ``wait`` s until its *metadata cache* no
    longer has the topic (``ZkAdminManager.deleteTopics`` + ``DelayedDeleteTopics``). The
    controller drops the topic from every cache as soon as the deletion starts (UpdateMetadata
    with LeaderDuringDelete), so "answered" does not mean the topic is gone: a replica's broker
    down, it stays in ``/brokers/topics`` until that broker returns (``TopicDeletionManager``).
    "timed_out" (REQUEST_TIMED_OUT): queued but not started within ``wait``. ZooKeeper is the
    truth. Any other error is a :class:`MetadataError`."""
    with admin_client(bootstrap, timeout) as client:
        futures = client.delete_topics([topic], operation_timeout=wait, request_timeout=timeout)
        try:
            futures[topic].result(timeout=timeout + 1)
        except KafkaException as exc:
            name = _kafka_error_name(exc)
            if name == "REQUEST_TIMED_OUT":
                return "timed_out"
            raise MetadataError(f"deleting topic {topic!r} failed: {name}") from exc
        except TimeoutError:
            raise MetadataError(f"deleting topic {topic!r}: no answer within {timeout:.0f} s") from None
    return "answered"


def create_partitions(bootstrap: str, topic: str, additions: Mapping[int, Sequence[int]], *,
                      timeout: float = 30.0) -> None:
    """AdminClient ``createPartitions`` with an explicit assignment of the new partitions
    ({partition: [broker, ...]} numbered from the current count, AR order). The brokers validate
    the ids against *registered* brokers only when no assignment is given, so replicas on
    stopped brokers are accepted (``AdminZkClient.addPartitions``)."""
    numbers = sorted(additions)
    if not numbers or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise UsageError(f"topic {topic!r}: new partitions must be consecutive, got {numbers}")
    replicas = [[int(r) for r in additions[n]] for n in numbers]
    for n, rs in zip(numbers, replicas):
        if not rs or len(set(rs)) != len(rs):
            raise UsageError(f"topic {topic!r} partition {n}: replicas {rs} must be non-empty and distinct")
    request = NewPartitions(topic, numbers[-1] + 1, replica_assignment=replicas)
    with admin_client(bootstrap, timeout) as client:
        futures = client.create_partitions([request], operation_timeout=timeout, request_timeout=timeout)
        _result(futures[topic], timeout + 1, f"adding partitions {numbers} to {topic!r}")
    log.info("added partitions %s to %s", dict(additions), topic)

"""Schedules as data: a cluster, topics with explicit assignments, and steps — a scenario in a
JSON file (``docs/schedules.md``), written by hand, exported from the catalogue, or generated
(:mod:`scenarios.plans.generator`), run by ``kafka-chaos run --schedule FILE``.

A schedule file is validated field by field; every problem is one line naming the field
(``steps[2].target: ...``) and raised as ``UsageError``. Targets are the catalogue's selectors
as data: ``{"brokers": [4, 5]}``, ``{"leader_of": {"topic": "t", "partition": 0}}``,
``{"controller": {}}``, ``{"earlier": 0}``, … (:data:`SELECTORS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.config import FILESYSTEMS, check_broker_jaas, check_dynamic_quorum
from kafka_chaos.harness.config import kraft_only
from kafka_chaos.harness.distribution import check_version
from kafka_chaos.oracle import AddPartitions, CreateTopic, Event, Reassign
from kafka_chaos.scenarios.model import targets as tg
from kafka_chaos.scenarios.plans.transactional import (
    COMPRESSIONS,
    DEFAULT_TXN_PRODUCERS,
    TXN_CLIENTS,
    compression_problem,
    producers_problem,
    transactional_topics,
    with_transactional_topics,
)
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.plans.spec import ClusterNeeds, KnownBug, Scenario, validate_steps
from kafka_chaos.scenarios.faults import Fault, fault_kinds, make_fault

SCHEDULE_VERSION = 1
MAX_BROKERS = 9
MAX_PARTITIONS = 1000
MAX_LOG_DIRS = 4  # harness.config.MAX_LOG_DIRS

# Target grammar: one key naming the selector, its fields as an object.
SELECTORS: Mapping[str, type] = {
    "brokers": tg.Brokers, "broker": tg.BrokerId, "leader_of": tg.LeaderOf, "follower_of": tg.FollowerOf,
    "controller": tg.Controller, "non_controller_leader_of": tg.NonControllerLeaderOf,
    "isr_all_but_one": tg.IsrAllButOne, "isr_of": tg.IsrOf, "non_replica_of": tg.NonReplicaOf, "earlier": tg.EarlierTarget,
    "follower_leading_nothing": tg.FollowerLeadingNothing, "none": tg.NoTarget,
    "coordinator_of": tg.CoordinatorOf, "group_coordinator_of": tg.GroupCoordinatorOf,
}
_NAME_OF = {cls: name for name, cls in SELECTORS.items()}
# Selectors written as a bare value instead of an object: {"brokers": [4, 5]}, {"earlier": 0}.
_SHORTHAND = {"brokers": "broker_ids", "broker": "broker_id", "earlier": "step", "none": "what",
              "coordinator_of": "transactional_id", "group_coordinator_of": "group"}


@dataclass(frozen=True)
class Schedule:
    """One runnable scenario as data."""

    name: str
    brokers: tuple[int, ...]  # broker ids, any distinct non-negative ints
    topics: tuple[TopicSpec, ...]
    steps: tuple[Step, ...]
    overrides: Mapping[str, str] = field(default_factory=dict)
    doc: str = ""
    zookeepers: int = 1  # ZooKeeper ensemble size: 1, 3 or 5
    log_dirs: int = 1  # log directories per broker (2: a log_dir_failure leaves the broker running)
    link_proxies: bool = False  # brokers reach ZooKeeper through link proxies (network_delay)
    kafka_version: str | None = None  # the release it is written for (None: the run's)
    mode: str = "zookeeper"  # "kraft": KRaft controllers instead of ZooKeeper
    controllers: int = 1  # KRaft controllers: 1 or 3
    known_bug: KnownBug | None = None  # the Kafka bug it reproduces (the corpus: scenarios.plans.corpus)
    # A JAAS configuration's text every broker JVM gets (-Djava.security.auth.login.config; None: none)
    broker_jaas: str | None = None
    filesystem: str = "plain"  # "lazyfs": data on the crash-consistency layer (power_failure, disk faults)

    @property
    def needs(self) -> ClusterNeeds:
        ids = tuple(self.brokers) if tuple(self.brokers) != tuple(range(1, len(self.brokers) + 1)) else ()
        return ClusterNeeds(len(self.brokers), tuple(sorted(self.overrides.items())), ids, zookeepers=self.zookeepers,
                            log_dirs=self.log_dirs, link_proxies=self.link_proxies, kafka_version=self.kafka_version,
                            mode=self.mode, controllers=self.controllers, broker_jaas=self.broker_jaas,
                            filesystem=self.filesystem, quorum=self.quorum, features=self.features)

    txn_client: str = "librdkafka"  # the transactional workload's clients ("workload": {"client": ...})
    txn_compression: str = "none"  # its producers' batch codec ("workload": {"compression": ...})
    txn_producers: int = DEFAULT_TXN_PRODUCERS  # librdkafka's transactional producers ("workload": {"producers": N})
    quorum: str = "static"  # "dynamic": a KRaft quorum formatted with --initial-controllers (KIP-853, 3.9+)
    # KRaft: feature levels the storage format finalizes (kafka-storage format --feature), sorted pairs
    features: tuple[tuple[str, int], ...] = ()

    def scenario(self) -> Scenario:
        s = Scenario(self.name, self.doc or f"schedule {self.name}", self.topics, self.steps, frozenset(), self.needs,
                     txn_client=self.txn_client, txn_compression=self.txn_compression,
                     txn_producers=self.txn_producers)
        validate_steps(s)
        return s


# --- to JSON --------------------------------------------------------------------------------------

def selector_to_json(selector: Any) -> dict[str, Any]:
    name = _NAME_OF.get(type(selector))
    if name is None:
        raise ValueError(f"selector {selector!r} has no schedule form")
    values = asdict(selector)
    if name in _SHORTHAND:
        value = values[_SHORTHAND[name]]
        return {name: list(value) if isinstance(value, tuple) else value}
    return {name: values}


def _step_to_json(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"fault": step.fault, "target": selector_to_json(step.target)}
    if step.options:
        out["options"] = json.loads(json.dumps(dict(step.options)))  # tuples -> lists
    if step.then:
        out["then"] = list(step.then)
    return out


def schedule_to_json(s: Schedule) -> dict[str, Any]:
    return {
        "schedule_version": SCHEDULE_VERSION, "name": s.name, "doc": s.doc,
        "cluster": {"brokers": list(s.brokers), "overrides": dict(s.overrides),
                    **({"zookeepers": s.zookeepers} if s.zookeepers != 1 else {}),
                    **({"log_dirs": s.log_dirs} if s.log_dirs != 1 else {}),
                    **({"link_proxies": True} if s.link_proxies else {}),
                    **({"kafka_version": s.kafka_version} if s.kafka_version is not None else {}),
                    **({"mode": s.mode, "controllers": s.controllers} if s.mode != "zookeeper" else {}),
                    **({"broker_jaas": s.broker_jaas} if s.broker_jaas is not None else {}),
                    **({"filesystem": s.filesystem} if s.filesystem != "plain" else {}),
                    **({"quorum": s.quorum} if s.quorum != "static" else {}),
                    **({"features": dict(s.features)} if s.features else {})},
        "topics": [{"name": t.name, "assignment": {str(p): list(r) for p, r in sorted(t.assignment.items())},
                    "config": dict(t.config),
                    **({"workload": "transactional"} if t.transactional else {} if t.workload else {"workload": False})}
                   for t in s.topics],
        "steps": [_step_to_json(st) for st in s.steps],
        **({"known_bug": s.known_bug.to_json()} if s.known_bug is not None else {}),
        **({"workload": _workload_to_json(s)} if _workload_to_json(s) else {}),
    }


def _workload_to_json(s: Schedule) -> dict[str, str | int]:
    """The ``workload`` keys that differ from their defaults (the transactional topics are the
    topics' own ``"workload": "transactional"``)."""
    return {**({"client": s.txn_client} if s.txn_client != TXN_CLIENTS[0] else {}),
            **({"compression": s.txn_compression} if s.txn_compression != COMPRESSIONS[0] else {}),
            **({"producers": s.txn_producers} if s.txn_producers != DEFAULT_TXN_PRODUCERS else {})}


_INT_LIST = re.compile(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]")


def dumps(s: Schedule) -> str:
    """Indented JSON with lists of broker ids on one line, for people to read and edit."""
    text = json.dumps(schedule_to_json(s), indent=2)
    return _INT_LIST.sub(lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text) + "\n"


def from_scenario(s: Scenario) -> Schedule:
    """A catalogue scenario as a schedule (brokers 1..N unless its needs name them)."""
    brokers = s.needs.broker_ids or tuple(range(1, s.needs.brokers + 1))
    return Schedule(s.name, brokers, s.topics, s.steps, dict(s.needs.overrides), " ".join(s.doc.split()),
                    s.needs.zookeepers, s.needs.log_dirs, s.needs.link_proxies, s.needs.kafka_version,
                    s.needs.mode, s.needs.controllers, broker_jaas=s.needs.broker_jaas, filesystem=s.needs.filesystem,
                    txn_client=s.txn_client, txn_compression=s.txn_compression, txn_producers=s.txn_producers,
                    quorum=s.needs.quorum, features=s.needs.features)


# --- from JSON, validated -------------------------------------------------------------------------

def _fail(where: str, message: str) -> UsageError:
    """One line, whatever the file's keys and values hold (a key may contain a newline)."""
    return UsageError(f"{where}: {message}".replace("\r", "\\r").replace("\n", "\\n"))


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"must be an object, not {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, f"must be a list, not {type(value).__name__}")
    return value


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(where, f"must be an integer >= {minimum}, not {value!r}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(where, f"must be a non-empty string, not {value!r}")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    obj = _object(value, where)
    for k, v in obj.items():
        if not isinstance(v, str):
            raise _fail(f"{where}.{k}", f"must be a string, not {v!r}")
    return dict(obj)


def _only(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(allowed))}")


def _brokers(value: Any, where: str) -> tuple[int, ...]:
    ids = tuple(_int(b, f"{where}[{i}]") for i, b in enumerate(_list(value, where)))
    if not 1 <= len(ids) <= MAX_BROKERS or len(set(ids)) != len(ids):
        raise _fail(where, f"must be 1 to {MAX_BROKERS} distinct broker ids, not {list(ids)}")
    return ids


def _topic(value: Any, where: str, brokers: tuple[int, ...]) -> TopicSpec:
    obj = _object(value, where)
    _only(obj, {"name", "assignment", "config", "workload"}, where)
    name = _str(obj.get("name"), f"{where}.name")
    raw = _object(obj.get("assignment"), f"{where}.assignment")
    assignment: dict[int, tuple[int, ...]] = {}
    for key, replicas in raw.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit()):
            raise _fail(f"{where}.assignment", f"partition keys are 0, 1, 2, …, not {key!r}")
        ids = tuple(_int(r, f"{where}.assignment.{key}[{i}]") for i, r in enumerate(_list(replicas, f"{where}.assignment.{key}")))
        if not ids or len(set(ids)) != len(ids) or not set(ids) <= set(brokers):
            raise _fail(f"{where}.assignment.{key}", f"must be distinct brokers of the cluster {list(brokers)}, not {list(ids)}")
        assignment[int(key)] = ids
    if sorted(assignment) != list(range(len(assignment))) or not 1 <= len(assignment) <= MAX_PARTITIONS:
        raise _fail(f"{where}.assignment", f"partitions must be 0..n-1 with 1 <= n <= {MAX_PARTITIONS}")
    if len({len(r) for r in assignment.values()}) != 1:
        raise _fail(f"{where}.assignment", "every partition needs the same replication factor")
    # false: an unproduced topic (one a step deletes); "transactional": the transactional workload's
    # (scenarios.plans.transactional: the first such topic is its input, the second its output)
    workload = obj.get("workload", True)
    if not isinstance(workload, bool) and workload != "transactional":
        raise _fail(f"{where}.workload", f"expected true, false or \"transactional\", not {workload!r}")
    transactional = workload == "transactional"
    return TopicSpec(name, assignment, _string_map(obj.get("config", {}), f"{where}.config"),
                     workload is True, transactional)


def selector_from_json(value: Any, where: str) -> Any:
    obj = _object(value, where)
    if len(obj) != 1:
        raise _fail(where, f"must name one selector, one of {', '.join(SELECTORS)}")
    [(name, args)] = obj.items()
    cls = SELECTORS.get(name)
    if cls is None:
        raise _fail(where, f"unknown selector {name!r}; known: {', '.join(SELECTORS)}")
    if name in _SHORTHAND and not isinstance(args, dict):
        args = {_SHORTHAND[name]: tuple(args) if isinstance(args, list) else args}
    args = dict(_object(args, f"{where}.{name}"))
    _only(args, {f.name for f in fields(cls)}, f"{where}.{name}")
    if "broker_ids" in args:
        args["broker_ids"] = tuple(_int(b, f"{where}.{name}") for b in _list(list(args["broker_ids"]), f"{where}.{name}"))
    for key in ("broker_id", "partition", "step"):
        if key in args:
            _int(args[key], f"{where}.{name}.{key}")
    for key in ("topic", "keep", "what", "transactional_id", "group"):
        if key in args:
            _str(args[key], f"{where}.{name}.{key}")
    try:
        return cls(**args)
    except TypeError as exc:
        raise _fail(f"{where}.{name}", str(exc)) from exc


def _step(value: Any, where: str) -> Step:
    obj = _object(value, where)
    _only(obj, {"fault", "target", "options", "then"}, where)
    fault = _str(obj.get("fault"), f"{where}.fault")
    if fault not in fault_kinds():
        raise _fail(f"{where}.fault", f"unknown fault kind {fault!r}; known: {', '.join(fault_kinds())}")
    target = selector_from_json(obj["target"], f"{where}.target") if "target" in obj else tg.NoTarget()
    options = dict(_object(obj.get("options", {}), f"{where}.options"))
    then = tuple(_str(t, f"{where}.then[{i}]") for i, t in enumerate(_list(obj.get("then", []), f"{where}.then")))
    if any(t != "auto_rebalance" for t in then):
        raise _fail(f"{where}.then", f"only 'auto_rebalance' is known, not {list(then)}")
    return Step(fault, target, options, then)


def _release(value: Any, where: str) -> str:
    try:
        return check_version(_str(value, where))
    except UsageError as exc:
        raise _fail(where, str(exc)) from None


def _known_bug(value: Any, where: str) -> KnownBug:
    """``{"jira": "KAFKA-16120", "affected": "3.6.1", "fixed": "3.6.2", "caught_by": "replicas_on_disk"}``,
    and for an intermittent race ``"attempts"``: runs on the affected release until caught (1-10)."""
    obj = _object(value, where)
    _only(obj, {"jira", "affected", "fixed", "caught_by", "attempts"}, where)
    jira = _str(obj.get("jira"), f"{where}.jira")
    if not re.fullmatch(r"KAFKA-\d+", jira):
        raise _fail(f"{where}.jira", f"must be a Kafka JIRA key like KAFKA-16120, not {jira!r}")
    affected, fixed = _release(obj.get("affected"), f"{where}.affected"), _release(obj.get("fixed"), f"{where}.fixed")
    if affected == fixed:
        raise _fail(where, f"the affected and the fixed release are both {affected}")
    attempts = obj.get("attempts", 1)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_KNOWN_BUG_ATTEMPTS:
        raise _fail(f"{where}.attempts", f"must be a whole number from 1 to {MAX_KNOWN_BUG_ATTEMPTS}, not {attempts!r}")
    return KnownBug(jira, affected, fixed, _str(obj.get("caught_by"), f"{where}.caught_by"), attempts)


MAX_KNOWN_BUG_ATTEMPTS = 10


def _txn_client(obj: Mapping[str, Any], where: str) -> str:
    """The schedule's ``workload.client``: which clients run the transactional workload."""
    client = _object(obj["workload"], where).get("client", TXN_CLIENTS[0]) if "workload" in obj else TXN_CLIENTS[0]
    if client not in TXN_CLIENTS:
        raise _fail(f"{where}.client", f"must be one of {', '.join(map(repr, TXN_CLIENTS))}, not {client!r}")
    return str(client)


def _txn_compression(obj: Mapping[str, Any], where: str) -> str:
    """The schedule's ``workload.compression``: the codec of the transactional workload's producers."""
    compression = _object(obj["workload"], where).get("compression", COMPRESSIONS[0]) if "workload" in obj else COMPRESSIONS[0]
    problem = compression_problem(compression)
    if problem is not None:
        raise _fail(f"{where}.compression", problem)
    return str(compression)


def _txn_producers(obj: Mapping[str, Any], where: str, client: str) -> int:
    """The schedule's ``workload.producers``: how many transactional producers librdkafka's
    workload runs (Kafka's Java clients have one producer, not transactional: refused there)."""
    workload = _object(obj["workload"], where) if "workload" in obj else {}
    producers = workload.get("producers", DEFAULT_TXN_PRODUCERS)
    problem = producers_problem(producers)
    if problem is not None:
        raise _fail(f"{where}.producers", problem)
    if "producers" in workload and client != TXN_CLIENTS[0]:
        raise _fail(f"{where}.producers", f"is the {TXN_CLIENTS[0]} workload's: the {client} clients run one producer")
    return int(producers)


def _with_workload(obj: Mapping[str, Any], topics: tuple[TopicSpec, ...], where: str) -> tuple[TopicSpec, ...]:
    """The topics with what the schedule's ``workload`` asks: ``{"transactions": true}`` adds the
    transactional workload's two topics (:func:`scenarios.plans.transactional.with_transactional_topics`)."""
    on = False
    if "workload" in obj:
        workload = _object(obj["workload"], where)
        _only(workload, {"transactions", "client", "compression", "producers"}, where)
        on = workload.get("transactions", False)
        if not isinstance(on, bool):
            raise _fail(f"{where}.transactions", f"expected true or false, not {on!r}")
    try:
        if on:
            return with_transactional_topics(topics)
        transactional_topics(topics)
    except UsageError as exc:
        raise _fail(where, str(exc)) from None
    return topics


def _features(cluster: Mapping[str, Any], mode: object, where: str) -> tuple[tuple[str, int], ...]:
    """The cluster section's ``features``: ``{"eligible.leader.replicas.version": 1}``, the levels a
    KRaft cluster's storage format finalizes (``kafka-storage format --feature``, Kafka 3.8+)."""
    if "features" not in cluster:
        return ()
    if mode != "kraft":
        raise _fail(where, "feature levels at format time are a KRaft cluster's: they need \"mode\": \"kraft\"")
    obj = _object(cluster["features"], where)
    for name, level in obj.items():
        if not name or isinstance(level, bool) or not isinstance(level, int) or level < 0:
            raise _fail(f"{where}.{name}", f"must be a feature level (a whole number >= 0), not {level!r}")
    return tuple(sorted(obj.items()))


def _quorum(cluster: Mapping[str, Any], mode: object, kafka_version: str | None, where: str) -> str:
    """The cluster section's ``quorum``: "static" (the default) or "dynamic", a KRaft cluster's of
    Kafka 3.9+ (harness.config.check_dynamic_quorum)."""
    quorum = cluster.get("quorum", "static")
    if quorum not in ("static", "dynamic"):
        raise _fail(where, f"must be \"static\" or \"dynamic\", not {quorum!r}")
    if quorum == "dynamic" and mode != "kraft":
        raise _fail(where, "a dynamic quorum is a KRaft cluster's: it needs \"mode\": \"kraft\"")
    if quorum == "dynamic" and kafka_version is not None:
        try:
            check_dynamic_quorum(kafka_version)
        except UsageError as exc:
            raise _fail(where, str(exc)) from None
    return str(quorum)


def schedule_from_json(data: Any, where: str = "schedule") -> Schedule:
    obj = _object(data, where)
    _only(obj, {"schedule_version", "name", "doc", "cluster", "topics", "steps", "known_bug", "workload"}, where)
    if obj.get("schedule_version") != SCHEDULE_VERSION:
        raise _fail(f"{where}.schedule_version", f"must be {SCHEDULE_VERSION}, not {obj.get('schedule_version')!r}")
    name = _str(obj.get("name"), f"{where}.name")
    cluster = _object(obj.get("cluster"), f"{where}.cluster")
    _only(cluster, {"brokers", "overrides", "zookeepers", "log_dirs", "link_proxies", "kafka_version", "mode",
                    "controllers", "broker_jaas", "filesystem", "quorum", "features"}, f"{where}.cluster")
    brokers = _brokers(cluster.get("brokers"), f"{where}.cluster.brokers")
    zookeepers = cluster.get("zookeepers", 1)
    if zookeepers not in (1, 3, 5) or isinstance(zookeepers, bool):
        raise _fail(f"{where}.cluster.zookeepers", f"must be 1, 3 or 5, not {zookeepers!r}")
    log_dirs = cluster.get("log_dirs", 1)
    if isinstance(log_dirs, bool) or not isinstance(log_dirs, int) or not 1 <= log_dirs <= MAX_LOG_DIRS:
        raise _fail(f"{where}.cluster.log_dirs", f"must be 1 to {MAX_LOG_DIRS}, not {log_dirs!r}")
    link_proxies = cluster.get("link_proxies", False)
    if not isinstance(link_proxies, bool):
        raise _fail(f"{where}.cluster.link_proxies", f"must be true or false, not {link_proxies!r}")
    kafka_version = cluster.get("kafka_version")
    if kafka_version is not None:
        kafka_version = _release(kafka_version, f"{where}.cluster.kafka_version")
    mode = cluster.get("mode", "zookeeper")
    if mode not in ("zookeeper", "kraft", "migration"):
        raise _fail(f"{where}.cluster.mode", f"must be \"zookeeper\", \"kraft\" or \"migration\", not {mode!r}")
    controllers = cluster.get("controllers", 1)
    if controllers not in (1, 3) or isinstance(controllers, bool):
        raise _fail(f"{where}.cluster.controllers", f"must be 1 or 3, not {controllers!r}")
    if mode == "zookeeper" and "controllers" in cluster:
        raise _fail(f"{where}.cluster.controllers", "KRaft controllers need \"mode\": \"kraft\" or \"migration\"")
    if kafka_version is not None and mode != "kraft" and kraft_only(kafka_version):
        raise _fail(f"{where}.cluster.kafka_version", f"Kafka {kafka_version} has no ZooKeeper mode (removed in 4.0, "
                                                      f"KIP-833): a 4.x schedule needs \"mode\": \"kraft\"")
    broker_jaas = None
    if "broker_jaas" in cluster:
        try:
            broker_jaas = check_broker_jaas(cluster["broker_jaas"], f"{where}.cluster.broker_jaas")
        except UsageError as exc:
            raise _fail(f"{where}.cluster.broker_jaas", str(exc).removeprefix(f"{where}.cluster.broker_jaas ")) from None
        if mode == "kraft":
            raise _fail(f"{where}.cluster.broker_jaas", "is for brokers with a ZooKeeper client: a ZooKeeper-mode or "
                                                       "migration schedule")
    filesystem = cluster.get("filesystem", "plain")
    quorum = _quorum(cluster, mode, kafka_version, f"{where}.cluster.quorum")
    if filesystem not in FILESYSTEMS:
        raise _fail(f"{where}.cluster.filesystem", f"must be one of {', '.join(map(repr, FILESYSTEMS))}, not {filesystem!r}")
    topics = tuple(_topic(t, f"{where}.topics[{i}]", brokers)
                   for i, t in enumerate(_list(obj.get("topics"), f"{where}.topics")))
    topics = _with_workload(obj, topics, f"{where}.workload")
    if not topics or len({t.name for t in topics}) != len(topics):
        raise _fail(f"{where}.topics", "must be at least one topic, names distinct")
    steps = tuple(_step(s, f"{where}.steps[{i}]") for i, s in enumerate(_list(obj.get("steps"), f"{where}.steps")))
    doc = obj.get("doc", "")
    if not isinstance(doc, str):
        raise _fail(f"{where}.doc", "must be a string")
    known_bug = _known_bug(obj["known_bug"], f"{where}.known_bug") if "known_bug" in obj else None
    s = Schedule(name, brokers, topics, steps, _string_map(cluster.get("overrides", {}), f"{where}.cluster.overrides"),
                 doc, zookeepers, log_dirs, link_proxies, kafka_version, str(mode), int(controllers), known_bug,
                 broker_jaas, str(filesystem), txn_client=_txn_client(obj, f"{where}.workload"),
                 txn_compression=_txn_compression(obj, f"{where}.workload"),
                 txn_producers=_txn_producers(obj, f"{where}.workload", _txn_client(obj, f"{where}.workload")),
                 quorum=quorum, features=_features(cluster, mode, f"{where}.cluster.features"))
    try:
        s.scenario()  # every step's options build a fault
    except TypeError as exc:
        raise _fail(f"{where}.steps", str(exc).removeprefix(f"scenario {name}: ")) from exc
    check_runnable(s, where)
    return s


# --- what the file alone decides: refused before a cluster starts ------------------------------

def _static_brokers(steps: Sequence[Step], index: int) -> tuple[int, ...] | None:
    """The brokers step ``index`` targets when the file alone says which (explicit ids, or an
    earlier step's explicit ids); None when only the cluster can say (a leader, the controller)."""
    target = steps[index].target
    if isinstance(target, tg.Brokers):
        return tuple(target.broker_ids)
    if isinstance(target, tg.BrokerId):
        return (target.broker_id,)
    if isinstance(target, tg.EarlierTarget) and 0 <= target.step < index:
        return _static_brokers(steps, target.step)
    return None


def _fault_of(s: Schedule, step: Step, brokers: tuple[int, ...]) -> Fault:
    return make_fault(step.fault, tg.Target(brokers, "validation"), step.options,
                      topic_names={t.name: t.name for t in s.topics},
                      topic_partitions={t.name: t.partitions for t in s.topics})


def check_runnable(s: Schedule, where: str = "schedule") -> None:
    """Refuse, naming the field, what cannot run on the schedule's own cluster: a target broker
    or a replica outside it, an ``earlier`` step that is not earlier, and a ``start`` of a broker
    no earlier step left down. Each would otherwise fail only once a cluster is up (or end
    "not judged" after the convergence timeout)."""
    cluster = set(s.brokers)
    down: set[int] | None = set()  # brokers left down by earlier steps; None: only the cluster knows
    for i, step in enumerate(s.steps):
        at = f"{where}.steps[{i}]"
        target = step.target
        if isinstance(target, tg.EarlierTarget) and not target.step < i:
            raise _fail(f"{at}.target.earlier", f"step {target.step} is not an earlier step (this is step {i})")
        named = _static_brokers(s.steps, i)
        if named is not None and not set(named) <= cluster:
            raise _fail(f"{at}.target", f"broker(s) {sorted(set(named) - cluster)} not in the cluster {list(s.brokers)}")
        fault = _fault_of(s, step, named or (s.brokers[0],))
        for event in fault.oracle_events():
            _check_replicas(event, cluster, s.brokers, f"{at}.options")
        if step.fault == "start":
            _check_start(s, i, named, down, at)
        if step.fault == "recreate_topic" and not any(
                e.fault == "delete_topic" and e.options.get("topic") == step.options.get("topic") for e in s.steps[:i]):
            raise _fail(f"{at}.options.topic", f"no earlier step deletes topic {step.options.get('topic')!r}")
        if down is None or Capability.BROKER_CONTROL not in fault.requires:
            continue  # only process faults take brokers down and start them (a heal releases a cut)
        if fault.holds and named is None:
            down = None  # a broker the cluster picks stays down
        else:
            down = (down | set(fault.holds)) - set(fault.releases)


def _check_replicas(event: Event, cluster: set[int], brokers: Sequence[int], where: str) -> None:
    if isinstance(event, Reassign):
        moves = {event.partition: event.replicas}
    elif isinstance(event, (AddPartitions, CreateTopic)):
        moves = dict(event.replicas)
    else:
        return
    for partition, replicas in sorted(moves.items()):
        outside = sorted(set(replicas) - cluster)
        if outside:
            raise _fail(where, f"partition {partition}'s replicas {list(replicas)} name broker(s) {outside} "
                               f"not in the cluster {list(brokers)}")


def _check_start(s: Schedule, index: int, named: tuple[int, ...] | None, down: set[int] | None, at: str) -> None:
    target = s.steps[index].target
    if isinstance(target, tg.EarlierTarget):
        earlier = s.steps[target.step]
        if not _fault_of(s, earlier, (s.brokers[0],)).holds:
            raise _fail(f"{at}.target.earlier", f"step {target.step} ({earlier.fault}) leaves no broker down to start")
    if named is not None and down is not None and not set(named) <= down:
        raise _fail(f"{at}.target", f"broker(s) {sorted(set(named) - down)} are running here: no earlier step "
                                    f"left them down")


def load(path: Path) -> Schedule:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not JSON ({getattr(exc, 'msg', type(exc).__name__)})") from exc
    try:
        return schedule_from_json(data, str(path.name))
    except RecursionError as exc:
        raise UsageError(f"{path}: nested too deeply") from exc


def load_all(paths: Sequence[Path]) -> list[Schedule]:
    schedules = [load(p) for p in paths]
    names = [s.name for s in schedules]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise UsageError(f"schedule names must be distinct within a run: {', '.join(duplicated)}")
    return schedules

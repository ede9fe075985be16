"""The recorded history of a run: one frozen, serialisable observation per thing that happened.

The runner *observes* and appends here; the checks (:mod:`scenarios.checks.functions`) are pure functions of
these observations. Every observation holds what a check needs and nothing decided: the state
before a step, its target, the oracle's input (the prediction is recomputed from it, so a
corrected oracle applies to old histories), the fault's timestamps, the snapshot after, the
ZooKeeper events, each broker's metadata answers, the client acks and errors per partition.

``history.jsonl`` (in the results directory) holds one JSON object per line, written and
fsync'ed as each observation is complete; ``kafka-chaos check`` reads it back.

Observation kinds (the ``type`` field):

* ``step`` — topic creation (``index`` None) or one fault step (:class:`StepObserved`);
* ``finished`` — after healing: whether the cluster healed, the delivery read-back per topic;
* ``aborted`` — the scenario could not go on (one line why);
* ``skipped`` — the backend lacks a capability the scenario needs.

Version 2 adds ``ops`` to ``step`` and ``finished`` (:mod:`scenarios.clients.ops`: per ``"t-p"``
every send, poll and consumer reset since the previous cut; at ``finished`` the rest and the
final read-back). Version 1 files are still read: their observations have no ``ops``, and the
checks that need them produce no results, so old runs re-check to the same records.

Version 3 adds ``metrics`` to fault steps (:mod:`scenarios.history.controller_metrics`: every broker's
JMX exporter scraped right before the fault and when the step's measurement closes) and
``controller_log`` (:mod:`scenarios.history.controller_log`: the controller's and new leaders' log lines
from the fault on); older steps have neither and give no ``controller_metrics`` record and no
controller phases in ``latency``.

Version 5 adds ``migration`` to the steps of a migrating cluster
(:mod:`scenarios.history.migration`); other steps are written as version 4 wrote them.

Version 6 adds ``ledger`` to ``step``, ``finished`` and ``aborted``: where the step's or the scenario
iteration's wall time went, as ``[[phase, seconds], ...]`` (:mod:`scenarios.model.ledger`). Older
observations have none (read as an empty ledger) and give no ``time_ledger`` record.

Version 7 adds ``on_disk`` to steps that converged (:mod:`scenarios.history.disk`: each asked
broker's replicas on disk, from DescribeLogDirs); older steps have none and give no
``replicas_on_disk`` result.

Version 8 adds ``replica_logs`` to steps that converged (:mod:`scenarios.history.replica_logs`:
the in-sync replicas' logs of each partition, summed up in blocks) and ``producers`` to a topic's
delivery (:mod:`scenarios.clients.producer_log`: the producer ids and epochs its producers were
given) and ``refused`` to a step's client activity (the leader's refusals the producer retried);
older observations have none of them and give no ``replica_logs_agree``, ``producer_ids_unique``
or ``min_isr_honoured`` result.

Version 9 adds ``granted`` to ``finished`` (the producer ids the brokers handed the harness's own
InitProducerIds: :func:`harness.readiness.warm_producer_ids`) and ``quorum`` to steps of a cluster
with KRaft voters (:mod:`scenarios.history.quorum`: what each voter said of the quorum); older
observations have none and give no ``one_quorum_leader`` result.

Version 10 adds ``outcome`` to a fault step's ``traits`` where the fault has one to tell (what
its own requests were answered: ``delete_records`` records each partition's low watermark,
:mod:`scenarios.faults.records`, which the delivery and history checks read); other steps are
written as version 9 wrote them.

Version 11 adds ``txn`` to ``step`` and ``finished`` where the scenario runs the transactional
workload (:mod:`scenarios.clients.txn_workload`, issue 43): what its clients recorded since the
previous cut as a :class:`scenarios.clients.txn_ops.TxnHistory` (transaction attempts, reads,
resets), at ``finished`` with the final ``read_committed`` read-back and the copier's group's
committed offsets; the ``transactions`` check merges them (:func:`merged_txn`). Observations
without one are written as version 10 wrote them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Union

from kafka_chaos.harness.observer import ZkSnapshot
from kafka_chaos.harness.zkevents import PartitionStateWritten, ZkEvent, event_from_dict, event_to_dict
from kafka_chaos.oracle import ClusterState, Event, TopicState
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.scenarios.clients import codec
from kafka_chaos.scenarios.clients.ops import ClientOps, ops_from_dict, ops_to_dict
from kafka_chaos.scenarios.clients.producer_log import ProducerIdGiven
from kafka_chaos.scenarios.clients.txn_ops import TxnHistory
from kafka_chaos.scenarios.history.controller_log import LogEvent
from kafka_chaos.scenarios.history import disk, replica_logs
from kafka_chaos.scenarios.history.controller_metrics import FaultMetrics
from kafka_chaos.scenarios.history.disk import DiskAnswer
from kafka_chaos.scenarios.history.migration import MigrationObserved
from kafka_chaos.scenarios.history.quorum import VoterAnswer
from kafka_chaos.scenarios.history.replica_logs import PartitionLogs
from kafka_chaos.scenarios.clients.delivery import Ack, DeliveryReport
from kafka_chaos.scenarios.model.ledger import TimeLedger
from kafka_chaos.scenarios.model.targets import Target

HISTORY_FILE = "history.jsonl"
# 4: an acknowledgement without an offset (an idempotent producer's implicit ack) is stored with
# offset null; versions 1-3 stored it as offset 0, and are read as they were written.
# 6: time ledgers (StepObserved, ScenarioFinished, ScenarioAborted).
# 7: each broker's replicas on disk (StepObserved.on_disk).
# 8: the in-sync replicas' logs (StepObserved.replica_logs) and producer ids (TopicDelivery.producers).
# 9: the producer ids the brokers handed the harness itself (ScenarioFinished.granted) and what each
# KRaft voter said of the quorum (StepObserved.quorum).
# 10: what a fault's own requests were answered (FaultTraits.outcome: delete_records' low watermarks).
# 11: the transactional workload's stretches (StepObserved.txn, ScenarioFinished.txn).
HISTORY_VERSION = 11
READABLE_HISTORY_VERSIONS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})



@dataclass(frozen=True)
class PartitionSeen:
    """One partition as a broker's metadata cache showed it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


# A broker's metadata answer: (topic, partition) -> what it showed, or the error text.
MetadataAnswer = Union[Mapping[tuple[str, int], PartitionSeen], str]


def _answer_to_json(answer: MetadataAnswer) -> Any:
    if isinstance(answer, str):
        return answer
    return [[t, p, s.leader, list(s.replicas), list(s.isr)] for (t, p), s in sorted(answer.items())]


def _answer_from_json(value: Any) -> MetadataAnswer:
    if isinstance(value, str):
        return value
    return {(str(t), int(p)): PartitionSeen(int(leader), tuple(replicas), tuple(isr))
            for t, p, leader, replicas, isr in value}


@dataclass(frozen=True)
class ScenarioRun:
    """Which scenario iteration an observation belongs to, and what every record repeats."""

    run_id: str
    scenario: str
    iteration: int
    seed: int
    backend: str
    kafka_version: str
    brokers: int
    partitions: int
    git_revision: str | None = None
    session_timeout_ms: int | None = None
    tick_time_ms: int | None = None
    topics: tuple[str, ...] = ()  # this iteration's physical topics
    # "kraft" on a KRaft cluster (session_timeout_ms is then broker.session.timeout.ms); absent
    # from a ZooKeeper-mode run's records, which stay as they were
    mode: str = "zookeeper"

    def to_dict(self) -> dict[str, Any]:
        d = {**self.__dict__, "topics": list(self.topics)}
        if self.mode == "zookeeper":
            del d["mode"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScenarioRun:
        return cls(**{**d, "topics": tuple(d["topics"])})


@dataclass(frozen=True)
class FaultTraits:
    """What the step's fault declared (``scenarios.faults.Fault``), kept so checks need no fault
    object: ``kind`` ``create_topic`` for topic creation."""

    kind: str
    label: str
    exact_epochs: bool
    client_windows: bool = False
    isr_rule: str | None = None
    holds: tuple[int, ...] = ()
    releases: tuple[int, ...] = ()
    # What the fault's own requests were answered (history v10; None: nothing to tell, and written
    # as before): ``delete_records``' low watermarks (``scenarios.faults.records``).
    outcome: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {**self.__dict__, "holds": list(self.holds), "releases": list(self.releases)}
        if self.outcome is None:  # every other step is written as version 9 wrote it
            del d["outcome"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FaultTraits:
        return cls(**{**d, "holds": tuple(d["holds"]), "releases": tuple(d["releases"])})


@dataclass(frozen=True)
class ClientActivity:
    """What the producer saw on one partition during the step: acks, failed sends, and the
    leader's refusals it retried (``refused``: librdkafka's own account of each failed
    ProduceRequest, :func:`scenarios.clients.producer_log.refusals`; history v8, none before)."""

    acks: tuple[Ack, ...] = ()
    failures: tuple[tuple[str, float], ...] = ()  # (error name, time)
    # (the broker's error as librdkafka words it, time); None: not recorded (an older history)
    refused: tuple[tuple[str, float], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"acks": [codec.ack_to_list(a) for a in self.acks], "failures": [list(f) for f in self.failures],
                **({"refused": [list(r) for r in self.refused]} if self.refused is not None else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClientActivity:
        refused = d.get("refused")
        return cls(tuple(codec.ack_from_list(a) for a in d["acks"]),
                   tuple((str(n), float(t)) for n, t in d["failures"]),
                   None if refused is None else tuple((str(n), float(t)) for n, t in refused))


@dataclass(frozen=True)
class StepObserved:
    """One step: topic creation (``index`` None) or a fault."""

    run: ScenarioRun
    index: int | None
    label: str  # "step 2/3 hard_kill" or "create_topic"
    traits: FaultTraits
    target: Target
    then: tuple[str, ...]  # oracle events the cluster runs by itself after the fault
    started_at: float  # the step began (waiting for a settled state)
    before: ZkSnapshot
    oracle_state: ClusterState  # the oracle's input: built from ``before`` only
    oracle_events: tuple[Event, ...]
    fault_at: float  # just before the first signal / write
    episode_started_at: float  # a heal's episode began at its cut; else == fault_at
    after: ZkSnapshot | None  # the last snapshot the convergence wait read
    waited_s: float  # how long the convergence wait ran
    convergence_timeout_s: float
    excused: tuple[int, ...]  # brokers a fault still held (no UpdateMetadata expected)
    metadata: Mapping[int, MetadataAnswer] | None  # each live, unheld broker's last answer; None: not asked
    sightings: Mapping[str, tuple[tuple[float, int, int], ...]]  # "t-p" -> (at, broker, leader)
    events: tuple[ZkEvent, ...]  # ZooKeeper events since the fault
    clients: Mapping[str, ClientActivity]  # "t-p" -> producer activity during the step
    measured_at: float  # when the step's measurement window closed
    finished_at: float
    # Every send, poll and consumer reset per "t-p" since the previous step's cut (history v2).
    ops: Mapping[str, ClientOps] = field(default_factory=dict)
    # The brokers' JMX exporters scraped before the fault and at ``measured_at`` (history v3);
    # None: not scraped (topic creation, a launcher without the agent, an older history).
    metrics: FaultMetrics | None = None
    # What the controllers and the new leaders logged from the fault to ``measured_at``
    # (scenarios.history.controller_log; the step's topics only); None: not read (older histories).
    controller_log: tuple[LogEvent, ...] | None = None
    # A migrating cluster's phase before and after, and ZooKeeper's and the log's views while
    # dual-writing (scenarios.history.migration; history v5); None: not a migrating cluster.
    migration: MigrationObserved | None = None
    # Where the step's wall time went, started_at to finished_at (history v6; empty before).
    ledger: TimeLedger = TimeLedger()
    # Each asked broker's replicas on disk once the step converged (scenarios.history.disk;
    # history v7); None: not asked (it never converged, an older history).
    on_disk: Mapping[int, DiskAnswer] | None = None
    # "t-p" -> its in-sync replicas' logs once the step converged (scenarios.history.replica_logs;
    # history v8); None: not read (it never converged, a launcher that cannot, an older history).
    replica_logs: Mapping[str, PartitionLogs] | None = None
    # voter -> what it said of the quorum when the measurement closed (scenarios.history.quorum;
    # history v9); None: no KRaft quorum, or an older history.
    quorum: Mapping[int, VoterAnswer] | None = None
    # What the transactional workload recorded since the previous cut (history v11); None: the
    # scenario runs none, or an older history.
    txn: TxnHistory | None = None

    @property
    def topics(self) -> tuple[str, ...]:
        return self.run.topics

    def partition_state_writes(self) -> list[PartitionStateWritten]:
        """The partition-state writes ZooKeeper showed during the step, in order."""
        return [e for e in self.events if isinstance(e, PartitionStateWritten)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "step", "run": self.run.to_dict(), "index": self.index, "label": self.label,
            "traits": self.traits.to_dict(), "target": {"brokers": list(self.target.brokers),
                                                        "description": self.target.description},
            "then": list(self.then), "started_at": self.started_at, "before": self.before.to_dict(),
            "oracle_state": codec.state_to_dict(self.oracle_state),
            "oracle_events": [codec.event_to_dict(e) for e in self.oracle_events],
            "fault_at": self.fault_at, "episode_started_at": self.episode_started_at,
            "after": None if self.after is None else self.after.to_dict(), "waited_s": self.waited_s,
            "convergence_timeout_s": self.convergence_timeout_s, "excused": list(self.excused),
            "metadata": None if self.metadata is None else {
                str(b): _answer_to_json(a) for b, a in sorted(self.metadata.items())},
            "sightings": {k: [list(s) for s in v] for k, v in sorted(self.sightings.items())},
            "events": [event_to_dict(e) for e in self.events],
            "clients": {k: c.to_dict() for k, c in sorted(self.clients.items())},
            "measured_at": self.measured_at, "finished_at": self.finished_at, "ops": ops_to_dict(self.ops),
            "metrics": None if self.metrics is None else self.metrics.to_dict(),
            "controller_log": None if self.controller_log is None else [e.to_list() for e in self.controller_log],
            **({"migration": self.migration.to_dict()} if self.migration is not None else {}),
            **_ledger_to_dict(self.ledger),
            **({"on_disk": {str(b): disk.answer_to_json(a) for b, a in sorted(self.on_disk.items())}}
               if self.on_disk is not None else {}),
            **({"replica_logs": replica_logs.logs_to_json(self.replica_logs)} if self.replica_logs is not None else {}),
            **({"quorum": {str(v): a.to_list() for v, a in sorted(self.quorum.items())}}
               if self.quorum is not None else {}),
            **({"txn": self.txn.to_dict()} if self.txn is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepObserved:
        run = ScenarioRun.from_dict(d["run"])
        before = ZkSnapshot.from_dict(d["before"])
        return cls(
            run=run, index=d["index"], label=d["label"],
            traits=FaultTraits.from_dict(d["traits"]),
            target=Target(tuple(d["target"]["brokers"]), d["target"]["description"]),
            then=tuple(d["then"]), started_at=d["started_at"], before=before,
            oracle_state=with_recorded_elr(codec.state_from_dict(d["oracle_state"], run.kafka_version), before),
            oracle_events=tuple(codec.event_from_dict(e) for e in d["oracle_events"]),
            fault_at=d["fault_at"], episode_started_at=d["episode_started_at"],
            after=None if d["after"] is None else ZkSnapshot.from_dict(d["after"]), waited_s=d["waited_s"],
            convergence_timeout_s=d["convergence_timeout_s"], excused=tuple(d["excused"]),
            metadata=None if d["metadata"] is None else {
                int(b): _answer_from_json(a) for b, a in d["metadata"].items()},
            sightings={k: tuple((float(s[0]), int(s[1]), int(s[2])) for s in v) for k, v in d["sightings"].items()},
            events=tuple(event_from_dict(e) for e in d["events"]),
            clients={k: ClientActivity.from_dict(c) for k, c in d["clients"].items()},
            measured_at=d["measured_at"], finished_at=d["finished_at"], ops=ops_from_dict(d.get("ops")),
            metrics=FaultMetrics.from_dict(d["metrics"]) if d.get("metrics") is not None else None,
            controller_log=None if d.get("controller_log") is None else tuple(
                LogEvent.from_list(e) for e in d["controller_log"]),
            migration=MigrationObserved.from_dict(d["migration"]) if d.get("migration") is not None else None,
            ledger=TimeLedger.from_list(d.get("ledger")),
            on_disk=None if d.get("on_disk") is None else {
                int(b): disk.answer_from_json(a) for b, a in d["on_disk"].items()},
            replica_logs=None if d.get("replica_logs") is None else replica_logs.logs_from_json(d["replica_logs"]),
            quorum=None if d.get("quorum") is None else {
                int(v): VoterAnswer.from_list(a) for v, a in d["quorum"].items()},
            txn=TxnHistory.from_dict(d["txn"]) if d.get("txn") is not None else None)


def with_recorded_elr(state: ClusterState, before: ZkSnapshot) -> ClusterState:
    """``state`` (an observation's oracle input) with each KRaft partition's ELR and last known ELR
    taken from ``before``, the snapshot it was made of, where ``state`` has neither.

    The live run builds the oracle's input from ``before`` (scenarios.model.snapshots.
    cluster_state_of), ELR and LKE as observed, but ``history.jsonl`` stored them in
    ``before`` only until 3810cbd (clients/codec.py): the oracle input of older histories has
    none, and a re-check predicted a start after a kill from an empty ELR and LKE, where Kafka
    elects from them (PartitionChangeBuilder.java 4.1.2: ``isValidNewLeader``, lines 322-326,
    takes an ELR member when the ISR is empty; ``canElectLastKnownLeader``, lines 290-320, called
    at 250 and 273, reads the registration's single ``lastKnownElr``) -- 12 verdicts of the 4.1.2 and 4.4.0
    kraft-suite runs (seeds 4611, 4612) differed. Newer histories store both whenever not empty,
    equal to ``before``'s, so this is the identity for them."""
    if before.mode != Mode.KRAFT:
        return state
    topics: dict[str, TopicState] = {}
    for name, topic in state.topics.items():
        restored = {p: dataclasses.replace(ps, elr=tuple(seen.elr), last_known_elr=tuple(seen.last_known_elr))
                    for p, ps in topic.partitions.items()
                    if not ps.elr and not ps.last_known_elr
                    and (seen := before.partitions.get((name, p))) is not None
                    and (seen.elr or seen.last_known_elr)}
        if restored:
            topics[name] = dataclasses.replace(topic, partitions={**topic.partitions, **restored})
    return dataclasses.replace(state, topics={**state.topics, **topics}) if topics else state


def _ledger_to_dict(ledger: TimeLedger) -> dict[str, Any]:
    """``ledger`` as an observation's field; nothing when empty (an older observation re-written
    stays as it was)."""
    return {"ledger": ledger.to_list()} if ledger else {}


@dataclass(frozen=True)
class TopicDelivery:
    """The read-back of one topic: the report, or why there is none."""

    topic: str
    report: DeliveryReport | None
    problem: str | None = None  # "workload failed: …" / "could not read back: …"
    # Keys the producer sent again under a bumped epoch after their batch was possibly
    # persisted, with its own log lines (Workload.resent_keys; history v4, absent before).
    resent: Mapping[str, str] = field(default_factory=dict)
    # The producer id and epoch each of the topic's producers was given, in order (history v8;
    # None before, and when the workload never ran).
    producers: tuple[ProducerIdGiven, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "problem": self.problem,
                "report": None if self.report is None else codec.report_to_dict(self.report),
                **({"resent": dict(sorted(self.resent.items()))} if self.resent else {}),
                **({"producers": [g.to_list() for g in self.producers]} if self.producers is not None else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TopicDelivery:
        report = None if d["report"] is None else codec.report_from_dict(d["report"])
        producers = d.get("producers")
        return cls(d["topic"], report, d["problem"], dict(d.get("resent") or {}),
                   None if producers is None else tuple(ProducerIdGiven.from_list(g) for g in producers))


@dataclass(frozen=True)
class ScenarioFinished:
    """After healing: ``healed`` None when the cluster settled again, else why not (then no
    read-back happened); the delivery read-back per topic."""

    run: ScenarioRun
    started_at: float
    finished_at: float
    healed: str | None
    deliveries: tuple[TopicDelivery, ...] = ()
    # The clients' last stretch per "t-p" and the read-back as polls (history v2).
    ops: Mapping[str, ClientOps] = field(default_factory=dict)
    # Where the iteration's wall time went outside its fault steps' ledgers (history v6).
    ledger: TimeLedger = TimeLedger()
    # The producer ids the brokers handed the harness's own InitProducerIds: when the cluster was
    # acquired and once more after healing (history v9; None before).
    granted: tuple[ProducerIdGiven, ...] | None = None
    # The transactional workload's last stretch, with its read-back and group offsets (history
    # v11; None: no transactional workload, or an older history).
    txn: TxnHistory | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"type": "finished", "run": self.run.to_dict(), "started_at": self.started_at,
                "finished_at": self.finished_at, "healed": self.healed,
                "deliveries": [t.to_dict() for t in self.deliveries], "ops": ops_to_dict(self.ops),
                **_ledger_to_dict(self.ledger),
                **({"granted": [g.to_list() for g in self.granted]} if self.granted is not None else {}),
                **({"txn": self.txn.to_dict()} if self.txn is not None else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScenarioFinished:
        granted = d.get("granted")
        return cls(ScenarioRun.from_dict(d["run"]), d["started_at"], d["finished_at"], d["healed"],
                   tuple(TopicDelivery.from_dict(t) for t in d["deliveries"]), ops_from_dict(d.get("ops")),
                   TimeLedger.from_list(d.get("ledger")),
                   tuple(ProducerIdGiven.from_list(g) for g in granted) if granted is not None else None,
                   TxnHistory.from_dict(d["txn"]) if d.get("txn") is not None else None)


@dataclass(frozen=True)
class ScenarioAborted:
    run: ScenarioRun
    started_at: float
    finished_at: float
    why: str
    # As ScenarioFinished's: up to the abort (history v6).
    ledger: TimeLedger = TimeLedger()

    def to_dict(self) -> dict[str, Any]:
        return {"type": "aborted", "run": self.run.to_dict(), "started_at": self.started_at,
                "finished_at": self.finished_at, "why": self.why, **_ledger_to_dict(self.ledger)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScenarioAborted:
        return cls(ScenarioRun.from_dict(d["run"]), d["started_at"], d["finished_at"], d["why"],
                   TimeLedger.from_list(d.get("ledger")))


@dataclass(frozen=True)
class ScenarioSkipped:
    run: ScenarioRun
    at: float
    requirements: tuple[str, ...]
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "skipped", "run": self.run.to_dict(), "at": self.at,
                "requirements": list(self.requirements), "why": self.why}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScenarioSkipped:
        return cls(ScenarioRun.from_dict(d["run"]), d["at"], tuple(d["requirements"]), d["why"])


Observation = Union[StepObserved, ScenarioFinished, ScenarioAborted, ScenarioSkipped]

_READERS: Mapping[str, Any] = {"step": StepObserved.from_dict, "finished": ScenarioFinished.from_dict,
                               "aborted": ScenarioAborted.from_dict, "skipped": ScenarioSkipped.from_dict}


def observation_to_json(obs: Observation) -> str:
    return json.dumps({"history_version": HISTORY_VERSION, **obs.to_dict()}, sort_keys=True)


def observation_from_json(line: str) -> Observation:
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError(f"an observation is a JSON object, got {type(data).__name__}")
    if data.get("history_version") not in READABLE_HISTORY_VERSIONS:
        raise ValueError(f"history_version {data.get('history_version')!r} is not readable "
                         f"(known: {sorted(READABLE_HISTORY_VERSIONS)})")
    reader = _READERS.get(data.get("type", ""))
    if reader is None:
        raise ValueError(f"unknown observation type {data.get('type')!r}")
    obs: Observation = reader(data)
    return obs


@dataclass
class HistoryWriter:
    """Appends observations to ``DIR/history.jsonl``, each line flushed and fsync'ed as soon as
    the observation is complete (an interrupted run keeps everything observed so far)."""

    directory: Path
    _file: IO[str] | None = field(default=None, init=False)

    @property
    def path(self) -> Path:
        return Path(self.directory) / HISTORY_FILE

    def append(self, obs: Observation) -> None:
        if self._file is None:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(observation_to_json(obs) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(frozen=True)
class HistoryProblem:
    path: Path
    line: int
    error: str


def read_history(path: Path) -> Iterator[Observation | HistoryProblem]:
    """Every observation of one history file in order; an unreadable line is a
    :class:`HistoryProblem` (a truncated last line after a crash is normal)."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield observation_from_json(line)
            except (ValueError, KeyError, TypeError) as exc:
                yield HistoryProblem(path, number, f"{type(exc).__name__}: {exc}")


def merged_txn(observations: Sequence[Observation]) -> TxnHistory | None:
    """The transactional workload's whole history from one scenario iteration's observations
    (their stretches in order, :meth:`TxnHistory.merged`); None when none holds one."""
    parts = [o.txn for o in observations if isinstance(o, (StepObserved, ScenarioFinished)) and o.txn is not None]
    return TxnHistory.merged(parts) if parts else None


def group_by_scenario(observations: Sequence[Observation]) -> dict[tuple[str, str, int], list[Observation]]:
    """Observations per (run id, scenario, iteration), in their order."""
    groups: dict[tuple[str, str, int], list[Observation]] = {}
    for obs in observations:
        groups.setdefault((obs.run.run_id, obs.run.scenario, obs.run.iteration), []).append(obs)
    return groups

"""The fault contract, its one registry, and the :class:`Nemesis` that applies faults.

As in Jepsen's ``nemesis.clj``: a fault has an effect (``inject``) and an undo (``heal``) that is
idempotent and also runs at teardown; the nemesis refuses a second fault on a broker that is
already faulted. As in kafkatest's ``replication_test.py`` the fault kinds are a small registry
and *which* broker they hit is decided beforehand by a pure selector (:mod:`scenarios.model.targets`).

A fault kind is one class, registered with :func:`register_fault`; everything the step pipeline
needs from it is declared on the class (:class:`Fault`): its oracle events, the brokers it holds
and releases, whether the oracle's epochs are exact on its path, its leader-side ISR rule, whether
client windows are measured, and the cluster capabilities it requires. The runner, the catalogue's
validation, capability gating and the CLI read :data:`FAULTS`; nothing outside this package tests
a fault's class.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, TypeVar, runtime_checkable

from kafka_chaos.harness.cluster import Capability, ChaosCluster
from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.oracle import ClusterState, Event, TopicPartition
from kafka_chaos.scenarios.model.ledger import PLAIN, FaultWaits
from kafka_chaos.scenarios.model.targets import Target

if TYPE_CHECKING:
    from kafka_chaos.harness.observers import AdminWriter, Observer
    from kafka_chaos.scenarios.faults.clients import ClientHolder
    from kafka_chaos.scenarios.faults.txn_timeout import TransactionHolder

log = logging.getLogger(__name__)


@dataclass
class FaultEnv:
    """What faults act through: the cluster (``Cluster`` + its capability protocols), the
    ZooKeeper observer (reads and waits only), the ZooKeeper admin writer, timing settings."""

    cluster: ChaosCluster  # optional capabilities: require_capability
    observer: Observer  # ZooKeeper's or the KRaft metadata log's (harness.observers)
    admin: AdminWriter
    session_timeout_ms: int = 6000
    tick_time_ms: int = 500

    transactions: TransactionHolder | None = None  # the transactional workload, while it runs
    clients: ClientHolder | None = None  # the Java transactional clients' processes, while they run
    # Brokers a broker_controller_cut holds cut from every controller (scenarios.faults.quorum_links)
    cut_from_controllers: set[int] = field(default_factory=set)

    @property
    def bootstrap(self) -> str:
        """The brokers the admin requests go through: not one cut from the controllers.  A KRaft
        broker forwards DeleteTopics, CreateTopics, CreatePartitions, AlterPartitionReassignments,
        ... to the active controller (``maybeForwardToController``, KafkaApis.scala 3.9 line 209),
        and AdminClient sends them to the broker a Metadata answer names controller: in KRaft a
        random broker its answering broker's cache holds unfenced (``getRandomAliveBrokerId``,
        KafkaApis.scala 3.9 lines 1426-1429).  A cut broker's cache is stale -- itself unfenced --
        so asked first it may name itself, and its forward waits for a controller it cannot
        reach until the client times out (explore-7711-4 on 3.9.2: ``delete_topic`` _TIMED_OUT after
        15 s, no RemoveTopicRecord).  The others know it fenced and never name it."""
        cut = self.cut_from_controllers
        if not cut:
            return str(self.cluster.bootstrap_servers)
        reachable = [self.cluster.endpoint(b).bootstrap for b in self.cluster.broker_ids if b not in cut]
        return ",".join(reachable) if reachable else str(self.cluster.bootstrap_servers)

    @property
    def session_expiry_bound_s(self) -> float:
        """Upper bound on a dead session's expiry: timeout + one tick + margin for a loaded
        2-core machine (failover-timing.md: expiry lies in [2T/3, T + tick])."""
        return (self.session_timeout_ms + self.tick_time_ms) / 1000.0 + 10.0


@dataclass(frozen=True)
class StepTopics:
    """A step's topics: logical name (as scenarios write it) -> physical name and partitions."""

    names: Mapping[str, str]
    partitions: Mapping[str, Sequence[int]]

    def physical(self, kind: str, options: Mapping[str, Any]) -> str:
        logical = options.get("topic")
        if not isinstance(logical, str) or logical not in self.names:
            raise UsageError(f"{kind}: option 'topic' must be one of {sorted(self.names)}, not {logical!r}")
        return self.names[logical]

    def partitions_of(self, options: Mapping[str, Any]) -> Sequence[int]:
        return tuple(int(p) for p in (options.get("partitions") or self.partitions[options["topic"]]))


def reject_unknown_options(kind: str, options: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """One line naming the options ``kind`` does not take, and the ones it does."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise UsageError(f"{kind}: unknown option(s) {', '.join(map(repr, unknown))}: "
                         f"{'only ' if len(allowed) == 1 else ''}{', '.join(map(repr, allowed))}")


# An admin request Kafka is known not to answer in time (an election naming a partition without
# state, partitions added while an old one is leaderless) is given up on after this long,
# instead of the client's default timeout.
NO_ANSWER_WAIT_S = 10.0
ADMIN_TIMEOUT_S = 30.0  # any other admin request's bound

_R = TypeVar("_R")


def admin_request(request: Callable[[float], _R], *, unanswered: bool, what: str) -> _R | None:
    """``request(timeout)``, an AdminClient call; when Kafka is known to leave it unanswered
    (``unanswered``), waiting ``NO_ANSWER_WAIT_S`` and getting no answer is that outcome (None),
    not a failure of the step."""
    from kafka_chaos.harness.metadata import MetadataError

    try:
        return request(NO_ANSWER_WAIT_S if unanswered else ADMIN_TIMEOUT_S)
    except MetadataError as exc:
        if not unanswered:
            raise
        log.info("%s: no answer, as Kafka gives none here (%s)", what, exc)
        return None


@runtime_checkable
class Fault(Protocol):
    """Everything the step pipeline needs from a fault."""

    kind: ClassVar[str]
    # Capabilities the cluster must have (``harness.cluster.Capability``).
    requires: ClassVar[frozenset[Capability]]
    # Whether the oracle models every controller write on this fault's path, so the predicted
    # leader epoch is exact (kafka-3.9-zk-controller.md §2.1–2.3, 2.6, 2.7; a controller failover's
    # removal + election = +2, a reassignment's phases). A fault that says no is judged "strictly
    # increased where an election happened" (``checks.expectations.epochs_exact``).
    exact_epochs: ClassVar[bool]
    # Whether the step waits for the clients of the partitions it touched and measures their
    # client-visible windows (faults that leave brokers running but unreachable).
    client_windows: ClassVar[bool]
    target: Target

    @property
    def label(self) -> str:
        """Its name in records and reports: the kind, or kind/variant where variants differ."""

    @property
    def modes(self) -> frozenset[str]:
        """The cluster modes it applies to ("zookeeper", "kraft", "migration"): a fault that writes admin
        znodes or targets the controller broker is ZooKeeper mode's, one on the KRaft quorum
        KRaft's."""

    @property
    def holds(self) -> tuple[int, ...]:
        """Brokers this fault keeps faulted after ``inject`` (until healed)."""

    @property
    def releases(self) -> tuple[int, ...]:
        """Brokers this fault brings back (a ``start`` heals an earlier kill)."""

    @property
    def isr_rule(self) -> str | None:
        """A documented leader-side ISR rule the step is checked against on top of the oracle
        (:mod:`scenarios.model.isr_rules`), or None."""

    @property
    def offline_replicas(self) -> Mapping[int, frozenset[TopicPartition]]:
        """Replicas this fault keeps on failed log directories while active (the controller's
        ``replicasOnOfflineDirs``, which ZooKeeper does not show): later steps' oracle input."""

    @property
    def waits(self) -> FaultWaits:
        """Which time-ledger phases its action and its convergence wait are
        (:mod:`scenarios.model.ledger`): Kafka-dictated ones where it starts nodes or a session,
        heartbeat or election timeout decides how long it takes."""

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        """What the fault's own requests were answered, once injected, for the step's history
        record (``FaultTraits.outcome``; JSON-ready), or None: ``delete_records``' low watermarks."""

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        """Read from the cluster what :meth:`oracle_events` depends on (which of ``state``'s
        partitions a log directory holds); the pipeline calls it just before asking for the
        events, with the state the oracle predicts from."""

    def oracle_events(self) -> list[Event]: ...

    def inject(self, env: FaultEnv) -> None: ...

    def heal(self, env: FaultEnv) -> None: ...


FaultBuilder = Callable[[Target, Mapping[str, Any], StepTopics], Fault]

ZOOKEEPER_ONLY = frozenset({"zookeeper"})
KRAFT_ONLY = frozenset({"kraft"})
# A migrating cluster (harness.migration): ZooKeeper mode until its KRaft controller takes over.
MIGRATION_ONLY = frozenset({"migration"})
# Faults on KRaft controllers: a KRaft cluster's, or a migrating one's once provisioned.
QUORUM_MODES = KRAFT_ONLY | MIGRATION_ONLY
# Faults on brokers, topics and the Admin API: whichever controller is in charge.
ANY_MODE = ZOOKEEPER_ONLY | KRAFT_ONLY | MIGRATION_ONLY


@dataclass
class FaultBase:
    """What a fault class inherits unless it says otherwise: needs no capability, epochs exact,
    no client windows, holds and releases no broker, no ISR rule, no outcome, nothing to heal."""

    target: Target
    kind: ClassVar[str] = ""
    requires: ClassVar[frozenset[Capability]] = frozenset()
    exact_epochs: ClassVar[bool] = True
    client_windows: ClassVar[bool] = False
    mode_support: ClassVar[frozenset[str]] = ANY_MODE
    kafka_waits: ClassVar[FaultWaits] = PLAIN  # what ``waits`` says unless an option changes it
    # Healed before every other fault at teardown (Nemesis.heal_all): a voter cut, so no broker a
    # heal starts meets a cut voter (scenarios.faults.generation.ClusterModel.refusal, explore-7734-3)
    heals_first: ClassVar[bool] = False

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Self:
        return cls(target)

    @property
    def label(self) -> str:
        return self.kind

    @property
    def modes(self) -> frozenset[str]:
        return self.mode_support

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    @property
    def releases(self) -> tuple[int, ...]:
        return ()

    @property
    def isr_rule(self) -> str | None:
        return None

    @property
    def offline_replicas(self) -> Mapping[int, frozenset[TopicPartition]]:
        return {}

    @property
    def waits(self) -> FaultWaits:
        return self.kafka_waits

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        return None

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        return None

    def heal(self, env: FaultEnv) -> None:
        return None


class FaultClass(Protocol):
    """What :func:`register_fault` reads from a fault class (not an instance)."""

    kind: ClassVar[str]
    requires: ClassVar[frozenset[Capability]]

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Fault: ...


@dataclass(frozen=True)
class FaultKind:
    """One registry entry: how to build the kind's fault from a step, and what it needs."""

    kind: str
    build: FaultBuilder
    requires: frozenset[Capability]
    doc: str
    modes: frozenset[str] = ANY_MODE  # the class's (an option may narrow it: Fault.modes)


FAULTS: dict[str, FaultKind] = {}

_F = TypeVar("_F", bound=type[FaultClass])


def register_fault(cls: _F, *, build: FaultBuilder | None = None) -> _F:
    """Class decorator: register ``cls`` under ``cls.kind``, built by ``cls.from_step`` — or by
    ``build`` where one kind has several classes (a network cut and its heal)."""
    kind = cls.kind
    if kind in FAULTS:
        raise ValueError(f"fault kind {kind!r} registered twice")
    doc = (cls.__doc__ or kind).strip().splitlines()[0]
    modes = frozenset(getattr(cls, "mode_support", ANY_MODE))
    FAULTS[kind] = FaultKind(kind, build or cls.from_step, frozenset(cls.requires), doc, modes)
    return cls


def fault_kinds() -> tuple[str, ...]:
    return tuple(FAULTS)


def fault_kind(kind: str) -> FaultKind:
    entry = FAULTS.get(kind)
    if entry is None:
        raise UsageError(f"unknown fault kind {kind!r}; known: {', '.join(FAULTS)}")
    return entry


def make_fault(kind: str, target: Target, options: Mapping[str, Any], *,
               topic_names: Mapping[str, str], topic_partitions: Mapping[str, Sequence[int]]) -> Fault:
    """Build the fault of ``kind`` aimed at ``target``. ``options["topic"]`` is a logical topic
    name mapped through ``topic_names`` (logical -> physical)."""
    return fault_kind(kind).build(target, options, StepTopics(topic_names, topic_partitions))


def requirements_of(kinds: Sequence[str]) -> frozenset[Capability]:
    """The union of the capabilities the named fault kinds need."""
    needs: frozenset[Capability] = frozenset()
    for kind in kinds:
        needs |= fault_kind(kind).requires
    return needs


def require_capability(env: FaultEnv, capability: Capability, kind: str) -> ChaosCluster:
    """The cluster, when it has ``capability`` (the caller casts it to that capability's
    protocol, ``harness.cluster.CAPABILITY_PROTOCOLS``); a one-line error otherwise."""
    from kafka_chaos.harness.cluster import capabilities_of

    if capability not in capabilities_of(env.cluster):
        from kafka_chaos.harness.backends import BACKENDS, missing_capabilities

        backend = str(getattr(env.cluster, "backend", "this"))
        why = missing_capabilities(backend).get(capability) if backend in BACKENDS else None
        raise HarnessError(f"{kind}: {why or f'the {backend} launcher lacks the {capability.value} capability'}")
    return env.cluster


class Nemesis:
    """Applies faults, refusing a second fault on a broker that is already faulted, and heals
    every active fault at teardown (heal is idempotent)."""

    def __init__(self, env: FaultEnv) -> None:
        self.env = env
        self._active: dict[int, Fault] = {}
        self._injected_at: dict[int, float] = {}  # broker -> when the fault holding it began
        self._others: list[Fault] = []  # faults holding no broker but with something to undo
        # The last step's predicted controller memory of deleted replicas on down brokers
        # (ClusterState.deleted_offline_replicas) and the controller that holds it.
        self._deleted_offline: frozenset[tuple[TopicPartition, int]] = frozenset()
        self._forgotten: frozenset[str] = frozenset()  # ClusterState.deletions_forgotten
        self._memory_of: int | None = None

    @property
    def faulted_brokers(self) -> frozenset[int]:
        return frozenset(self._active)

    def episode_start(self, fault: Fault) -> float | None:
        """When the episode ``fault`` ends began — the earliest injection of a fault holding a
        broker it releases (a heal's client window covers the whole cut) — or None. Ask before
        injecting ``fault``: injecting it forgets what it releases."""
        return min((self._injected_at[b] for b in fault.releases if b in self._injected_at), default=None)

    def prepare(self, fault: Fault, state: ClusterState) -> list[Event]:
        """``fault``'s oracle events from ``state``, once it has read what they depend on from
        the cluster."""
        fault.prepare(self.env, state)
        return list(fault.oracle_events())

    def remember(self, predicted: ClusterState | None) -> None:
        """Keep the controller memory ``predicted`` (the expectation the last step converged
        to) carries into the next step; None (it did not converge) forgets it."""
        self._deleted_offline = predicted.deleted_offline_replicas if predicted is not None else frozenset()
        self._forgotten = predicted.deletions_forgotten if predicted is not None else frozenset()
        self._memory_of = predicted.controller if predicted is not None else None

    def with_controller_memory(self, state: ClusterState) -> ClusterState:
        """``state`` (read from ZooKeeper) plus what the controller remembers and ZooKeeper does
        not record: the replicas active faults keep on failed log directories, and the replicas
        of topics queued for deletion that the same controller deleted before their broker went
        down (kept as the last step's prediction had them)."""
        state = self._with_offline_replicas(state)
        kept = frozenset(
            (tp, r) for tp, r in self._deleted_offline
            if state.controller is not None and state.controller == self._memory_of
            and tp.topic in state.topics_being_deleted and state.has_partition(tp)
            and r in state.partition(tp).replicas and not state.is_replica_online(r, tp))
        # What a failover forgot holds for whichever broker won it (the prediction cannot name it).
        forgotten = frozenset(t for t in self._forgotten if state.controller is not None
                              and self._memory_of in (None, state.controller) and t in state.topics_being_deleted)
        return dataclasses.replace(state, deleted_offline_replicas=kept, deletions_forgotten=forgotten) \
            if kept or forgotten else state

    def _with_offline_replicas(self, state: ClusterState) -> ClusterState:
        """``state`` plus the replicas active faults keep on failed log directories: for live
        brokers and partitions ``state`` has."""
        offline: dict[int, set[TopicPartition]] = {b: set(tps) for b, tps in state.offline_replicas.items()}
        for fault in {id(f): f for f in self._active.values()}.values():
            for broker, tps in fault.offline_replicas.items():
                if broker in state.live_brokers:
                    offline.setdefault(broker, set()).update(
                        tp for tp in tps if state.has_partition(tp) and broker in state.partition(tp).replicas)
        if not any(offline.values()):
            return state
        return dataclasses.replace(state, offline_replicas={b: frozenset(t) for b, t in offline.items()})

    def inject(self, fault: Fault) -> float:
        """Inject ``fault``; return the wall-clock time just before the first signal."""
        busy = sorted(b for b in set(fault.holds) | set(fault.target.brokers)
                      if b in self._active and b not in fault.releases)
        if busy:
            raise HarnessError(
                f"refusing {fault.kind} on broker(s) {busy}: already faulted by "
                f"{', '.join(sorted({self._active[b].kind for b in busy}))}; heal it first")
        for b in fault.releases:
            self._active.pop(b, None)
            self._injected_at.pop(b, None)
        at = time.time()
        for b in fault.holds:
            self._active[b] = fault
            self._injected_at[b] = at
        if not fault.holds:
            self._others.append(fault)
        fault.inject(self.env)
        for b in list(self._active):  # faults that undo themselves (pause) release at once
            if self._active[b] is fault and b not in fault.holds:
                del self._active[b]
                self._injected_at.pop(b, None)
        return at

    def heal_all(self) -> list[str]:
        """Heal every fault (later ones first, those that heal first before them: ``heals_first``);
        return the errors met (heal goes on after one)."""
        errors: list[str] = []
        seen: list[Fault] = []
        faults = list(self._active.values())[::-1] + self._others[::-1]
        for fault in sorted(faults, key=lambda f: not getattr(f, "heals_first", False)):  # stable
            if any(fault is s for s in seen):
                continue
            seen.append(fault)
            try:
                fault.heal(self.env)
            except Exception as exc:  # noqa: BLE001 - keep healing the others
                log.warning("healing %s failed: %s", fault.kind, exc)
                errors.append(f"{fault.kind}: {exc}")
        self._active.clear()
        self._injected_at.clear()
        self._others.clear()
        return errors

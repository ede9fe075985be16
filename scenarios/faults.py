"""Faults: small objects with ``inject`` and ``heal``, applied by a :class:`Nemesis`.

As in Jepsen's ``nemesis.clj``: a fault has an effect (``inject``) and an undo (``heal``) that
is idempotent and also runs at teardown; the nemesis refuses a second fault on a broker that is
already faulted. As in kafkatest's ``replication_test.py`` the fault kinds are a small registry
(``FAULT_KINDS``) and *which* broker they hit is decided beforehand by a pure selector
(:mod:`scenarios.targets`).

Each fault also says which oracle events it corresponds to (``oracle_events``), so the runner
can ask the oracle what the cluster must look like afterwards *before* injecting it. Faults whose
effect is decided by partition leaders rather than the controller (a follower cut off from its
peers) name a documented leader-side rule instead (``isr_rule``, :mod:`scenarios.isr_rules`).

Network partitions (``network_partition``: cut from ``everyone`` / ``zookeeper`` / ``peers``, and
``heal``) need a cluster implementing ``harness.cluster.NetworkPartitioner`` (the containers
launcher); elsewhere injecting one is a one-line error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.config import UNCLEAN_LEADER_ELECTION_ENABLE
from harness.errors import HarnessError, UsageError
from oracle import (
    BrokerFailure,
    BrokerStartup,
    ControlledShutdown,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    TopicPartition,
    UncleanElection,
)
from scenarios.isr_rules import LEADER_ISR_EXPAND, LEADER_ISR_SHRINK
from scenarios.targets import Target

log = logging.getLogger(__name__)


@dataclass
class FaultEnv:
    """What faults act through: the cluster (``harness.cluster.Cluster`` + ``BrokerControl``),
    the ZooKeeper observer (writers, waits) and timing settings."""

    cluster: Any
    observer: Any
    session_timeout_ms: int = 6000
    tick_time_ms: int = 500

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def session_expiry_bound_s(self) -> float:
        """Upper bound on a dead session's expiry: timeout + one tick + margin for a loaded
        2-core machine (failover-timing.md: expiry lies in [2T/3, T + tick])."""
        return (self.session_timeout_ms + self.tick_time_ms) / 1000.0 + 10.0


class Fault(Protocol):
    kind: str
    target: Target

    @property
    def holds(self) -> tuple[int, ...]:
        """Brokers this fault keeps faulted after ``inject`` (until healed)."""

    @property
    def releases(self) -> tuple[int, ...]:
        """Brokers this fault brings back (a ``start`` heals an earlier kill)."""

    def oracle_events(self) -> list[Any]: ...

    def inject(self, env: FaultEnv) -> None: ...

    def heal(self, env: FaultEnv) -> None: ...


@dataclass
class _BrokerFault:
    """Common shape of faults that take brokers down; heal starts them again."""

    target: Target
    kind: str = ""
    _injected: bool = field(default=False, init=False)

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def releases(self) -> tuple[int, ...]:
        return ()

    def heal(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            if not env.cluster.broker_running(b):
                log.info("heal %s: starting broker %d", self.kind, b)
                env.cluster.start_broker(b)


@dataclass
class HardKill(_BrokerFault):
    """SIGKILL; the ZK session lives on until it expires (detection = session timeout)."""

    kind: str = "hard_kill"

    def oracle_events(self) -> list[Any]:
        return [BrokerFailure(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            env.cluster.kill_broker(b)


@dataclass
class ControllerKill(HardKill):
    kind: str = "controller_kill"


@dataclass
class ControlledShutdownFault(_BrokerFault):
    """SIGTERM with ``controlled.shutdown.enable=true``; returns when the process has exited."""

    kind: str = "controlled_shutdown"

    def oracle_events(self) -> list[Any]:
        return [ControlledShutdown(b) for b in self.target.brokers]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            env.cluster.stop_broker(b)


@dataclass
class Start:
    """Start brokers an earlier fault took down (waits for the old registration to vanish)."""

    target: Target
    kind: str = "start"

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    def oracle_events(self) -> list[Any]:
        return [BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            if env.cluster.broker_running(b):
                raise HarnessError(f"cannot start broker {b}: it is running")
            env.cluster.start_broker(b)

    def heal(self, env: FaultEnv) -> None:
        return None


@dataclass
class Restart:
    """Stop (controlled, or SIGKILL with ``hard``) then start again; the broker ends up live."""

    target: Target
    hard: bool = False
    kind: str = "restart"

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    @property
    def releases(self) -> tuple[int, ...]:
        return ()

    def oracle_events(self) -> list[Any]:
        down: list[Any] = ([BrokerFailure(tuple(self.target.brokers))] if self.hard
                           else [ControlledShutdown(b) for b in self.target.brokers])
        return down + [BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            (env.cluster.kill_broker if self.hard else env.cluster.stop_broker)(b)
            env.cluster.start_broker(b)

    def heal(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            if not env.cluster.broker_running(b):
                env.cluster.start_broker(b)


@dataclass
class Pause:
    """SIGSTOP long enough for ZooKeeper to expire the broker's session, then SIGCONT.

    The wait is event-driven (the broker's ``/brokers/ids/N`` disappearing) and bounded by the
    session timeout + tick + margin; the broker then re-registers by itself."""

    target: Target
    kind: str = "pause"
    _paused: set[int] = field(default_factory=set, init=False)

    @property
    def holds(self) -> tuple[int, ...]:
        return tuple(self._paused)

    @property
    def releases(self) -> tuple[int, ...]:
        return ()

    def oracle_events(self) -> list[Any]:
        return [BrokerFailure(tuple(self.target.brokers)), BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            env.cluster.pause_broker(b)
            self._paused.add(b)
        try:
            for b in self.target.brokers:
                env.observer.wait_broker_gone(b, timeout=env.session_expiry_bound_s)
        finally:
            self.heal(env)

    def heal(self, env: FaultEnv) -> None:
        for b in sorted(self._paused):
            env.cluster.resume_broker(b)
            self._paused.discard(b)


# Network partitions (``harness.cluster.NetworkPartitioner``): what a variant cuts the broker
# off from, as ``isolate`` keyword arguments. "everyone" includes the clients on the host.
CUTS: Mapping[str, Mapping[str, bool]] = {
    "everyone": {"from_zookeeper": True, "from_brokers": True, "from_clients": True},
    "zookeeper": {"from_zookeeper": True, "from_brokers": False, "from_clients": False},
    "peers": {"from_zookeeper": False, "from_brokers": True, "from_clients": False},
}
HEAL = "heal"
PARTITION_VARIANTS = (*CUTS, HEAL)


def _cut_loses_session(variant: str) -> bool:
    """Cut from ZooKeeper (alone or with everyone else) the broker's session expires: the
    controller sees ``onBrokerFailure`` (and ``onBrokerStartup`` once healed). Cut from its peers
    only, the session lives and the controller sees nothing."""
    return bool(CUTS[variant]["from_zookeeper"])


def _partitioner(env: FaultEnv) -> Any:
    from harness.cluster import NetworkPartitioner

    if not isinstance(env.cluster, NetworkPartitioner):
        raise HarnessError(f"network partitions need --backend containers: the "
                           f"{getattr(env.cluster, 'backend', 'this')} launcher cannot cut a broker's network")
    return env.cluster


@dataclass
class NetworkPartition:
    """Cut the target broker(s) off from ZooKeeper, its peers, or everyone (DROP both ways)
    until healed — by a later ``heal`` step or at teardown.

    Oracle events: cut from ZooKeeper (or everyone) → ``BrokerFailure`` once the session
    expires (the broker keeps running and, cut from ZooKeeper only, keeps serving clients with
    stale metadata). Cut from peers only → none: the controller sees nothing; the leaders
    shrink the ISR themselves (:data:`isr_rule`, checked as a documented rule, not by the
    oracle)."""

    target: Target
    variant: str
    kind: str = "network_partition"
    _cut: bool = field(default=False, init=False)

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.variant}"

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def releases(self) -> tuple[int, ...]:
        return ()

    @property
    def isr_rule(self) -> str | None:
        return None if _cut_loses_session(self.variant) else LEADER_ISR_SHRINK

    def oracle_events(self) -> list[Any]:
        return [BrokerFailure(tuple(self.target.brokers))] if _cut_loses_session(self.variant) else []

    def inject(self, env: FaultEnv) -> None:
        partitioner = _partitioner(env)
        self._cut = True  # set first: a half-made cut is healed too
        for b in self.target.brokers:
            partitioner.isolate(b, **CUTS[self.variant])

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            _partitioner(env).heal_network()
            self._cut = False


@dataclass
class NetworkHeal:
    """Remove the network partition of an earlier step (``heal_network`` removes every cut the
    cluster made; idempotent). ``healed`` names the variant being healed, which decides the
    oracle events: a broker whose session expired re-registers → ``BrokerStartup``; a follower
    that was cut from its peers only catches up and the leaders add it back
    (:data:`isr_rule`)."""

    target: Target
    healed: str
    kind: str = "network_partition"

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def isr_rule(self) -> str | None:
        return None if _cut_loses_session(self.healed) else LEADER_ISR_EXPAND

    def oracle_events(self) -> list[Any]:
        return [BrokerStartup(tuple(self.target.brokers))] if _cut_loses_session(self.healed) else []

    def inject(self, env: FaultEnv) -> None:
        _partitioner(env).heal_network()

    def heal(self, env: FaultEnv) -> None:
        return None


def _network_fault(target: Target, options: Mapping[str, Any]) -> Any:
    variant = options.get("variant")
    if variant not in PARTITION_VARIANTS:
        raise UsageError(f"network_partition: 'variant' must be one of {PARTITION_VARIANTS}, not {variant!r}")
    if variant != HEAL:
        return NetworkPartition(target, variant)
    healed = options.get("cut")
    if healed not in CUTS:
        raise UsageError(f"network_partition heal: 'cut' (the variant being healed) must be one of "
                         f"{tuple(CUTS)}, not {healed!r}")
    return NetworkHeal(target, healed)


def _partitions(options: Mapping[str, Any], topic: str, all_partitions: Sequence[int]) -> tuple[TopicPartition, ...]:
    parts = options.get("partitions") or all_partitions
    return tuple(TopicPartition(topic, int(p)) for p in parts)


def _admin_errors(result: Mapping[Any, str | None], what: str, tolerated: frozenset[str]) -> None:
    """An admin election's per-partition errors are outcomes the checks compare (e.g.
    ELECTION_NOT_NEEDED); only errors outside ``tolerated`` are a harness problem."""
    bad = {f"{k[0]}-{k[1]}" if isinstance(k, tuple) else str(k): e for k, e in result.items()
           if e is not None and e not in tolerated}
    if bad:
        log.warning("%s: partitions answered with errors %s", what, bad)


@dataclass
class ReassignmentFault:
    """Write ``/admin/reassign_partitions`` (the pre-2.4 ZooKeeper path the seeds describe)."""

    target: Target
    topic: str
    moves: tuple[tuple[int, tuple[int, ...]], ...]
    kind: str = "reassignment"
    holds: tuple[int, ...] = ()
    releases: tuple[int, ...] = ()

    def oracle_events(self) -> list[Any]:
        return [Reassign(self.topic, p, tuple(r)) for p, r in self.moves]

    def inject(self, env: FaultEnv) -> None:
        env.observer.write_reassignment([(self.topic, p, list(r)) for p, r in self.moves])

    def heal(self, env: FaultEnv) -> None:
        return None  # a finished reassignment is the new truth; nothing to undo


@dataclass
class PreferredElectionFault:
    """Preferred leader election by AdminClient ``elect_leaders`` (``via="admin"``) or by
    creating ``/admin/preferred_replica_election`` (``via="znode"``)."""

    target: Target
    topic: str
    partitions: tuple[TopicPartition, ...]
    via: str = "admin"
    kind: str = "preferred_election"
    holds: tuple[int, ...] = ()
    releases: tuple[int, ...] = ()

    def oracle_events(self) -> list[Any]:
        return [PreferredElection(self.partitions)]

    def inject(self, env: FaultEnv) -> None:
        pairs = [(tp.topic, tp.partition) for tp in self.partitions]
        if self.via == "znode":
            env.observer.write_preferred_election(pairs)
            return
        from harness.metadata import elect_leaders

        result = elect_leaders(env.bootstrap, "preferred", pairs)
        _admin_errors(result, "preferred election", frozenset({"ELECTION_NOT_NEEDED",
                                                                 "PREFERRED_LEADER_NOT_AVAILABLE"}))

    def heal(self, env: FaultEnv) -> None:
        return None


@dataclass
class UncleanElectionFault:
    """Unclean election by AdminClient ``elect_leaders(UNCLEAN)`` (``via="admin"``) or by
    enabling ``unclean.leader.election.enable`` on the topic (``via="config"``, undone by
    ``heal``)."""

    target: Target
    topic: str
    partitions: tuple[TopicPartition, ...]
    via: str = "admin"
    kind: str = "unclean_election"
    holds: tuple[int, ...] = ()
    releases: tuple[int, ...] = ()
    _config_set: bool = field(default=False, init=False)

    def oracle_events(self) -> list[Any]:
        if self.via == "config":
            return [TopicConfigChange(self.topic, {UNCLEAN_LEADER_ELECTION_ENABLE: "true"})]
        return [UncleanElection(self.partitions)]

    def inject(self, env: FaultEnv) -> None:
        if self.via == "config":
            self._config_set = True
            env.observer.set_topic_config(self.topic, {UNCLEAN_LEADER_ELECTION_ENABLE: "true"})
            return
        from harness.metadata import elect_leaders

        result = elect_leaders(env.bootstrap, "unclean", [(tp.topic, tp.partition) for tp in self.partitions])
        _admin_errors(result, "unclean election", frozenset({"ELECTION_NOT_NEEDED"}))

    def heal(self, env: FaultEnv) -> None:
        if self._config_set:
            env.observer.set_topic_config(self.topic, {UNCLEAN_LEADER_ELECTION_ENABLE: None})
            self._config_set = False


FAULT_KINDS = ("hard_kill", "controller_kill", "controlled_shutdown", "pause", "restart", "start",
               "reassignment", "preferred_election", "unclean_election", "network_partition")


def make_fault(kind: str, target: Target, options: Mapping[str, Any], *,
               topic_names: Mapping[str, str], topic_partitions: Mapping[str, Sequence[int]]) -> Any:
    """Build the fault of ``kind`` aimed at ``target``. ``options["topic"]`` is a logical topic
    name mapped through ``topic_names`` (logical -> physical)."""
    def physical() -> str:
        logical = options.get("topic")
        if logical not in topic_names:
            raise UsageError(f"{kind}: option 'topic' must be one of {sorted(topic_names)}, not {logical!r}")
        return topic_names[logical]

    if kind == "hard_kill":
        return HardKill(target)
    if kind == "controller_kill":
        return ControllerKill(target)
    if kind == "controlled_shutdown":
        return ControlledShutdownFault(target)
    if kind == "pause":
        return Pause(target)
    if kind == "restart":
        return Restart(target, hard=bool(options.get("hard", False)))
    if kind == "start":
        return Start(target)
    if kind == "network_partition":
        return _network_fault(target, options)
    if kind == "reassignment":
        moves = tuple((int(p), tuple(int(r) for r in replicas)) for p, replicas in options["moves"])
        return ReassignmentFault(target, physical(), moves)
    if kind in ("preferred_election", "unclean_election"):
        topic = physical()
        parts = _partitions(options, topic, topic_partitions[options["topic"]])
        via = options.get("via", "admin")
        allowed = ("admin", "znode") if kind == "preferred_election" else ("admin", "config")
        if via not in allowed:
            raise UsageError(f"{kind}: 'via' must be one of {allowed}, not {via!r}")
        cls = PreferredElectionFault if kind == "preferred_election" else UncleanElectionFault
        return cls(target, topic, parts, via)
    raise UsageError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")


def fault_label(fault: Any) -> str:
    """The fault's name in records and reports: its kind, or kind/variant where one kind has
    variants that behave differently (``network_partition/zookeeper``)."""
    return str(getattr(fault, "label", fault.kind))


class Nemesis:
    """Applies faults, refusing a second fault on a broker that is already faulted, and heals
    every active fault at teardown (heal is idempotent)."""

    def __init__(self, env: FaultEnv) -> None:
        self.env = env
        self._active: dict[int, Any] = {}
        self._others: list[Any] = []  # faults holding no broker but with something to undo

    @property
    def faulted_brokers(self) -> frozenset[int]:
        return frozenset(self._active)

    def inject(self, fault: Any) -> float:
        """Inject ``fault``; return the wall-clock time just before the first signal."""
        busy = sorted(b for b in set(fault.holds) | set(fault.target.brokers)
                      if b in self._active and b not in fault.releases)
        if busy:
            raise HarnessError(
                f"refusing {fault.kind} on broker(s) {busy}: already faulted by "
                f"{', '.join(sorted({self._active[b].kind for b in busy}))}; heal it first")
        for b in fault.releases:
            self._active.pop(b, None)
        for b in fault.holds:
            self._active[b] = fault
        if not fault.holds:
            self._others.append(fault)
        at = time.time()
        fault.inject(self.env)
        for b in list(self._active):  # faults that undo themselves (pause) release at once
            if self._active[b] is fault and b not in fault.holds:
                del self._active[b]
        return at

    def heal_all(self) -> list[str]:
        """Heal every fault (later ones first); return the errors met (heal goes on after one)."""
        errors: list[str] = []
        seen: list[Any] = []
        for fault in list(self._active.values())[::-1] + self._others[::-1]:
            if any(fault is s for s in seen):
                continue
            seen.append(fault)
            try:
                fault.heal(self.env)
            except Exception as exc:  # noqa: BLE001 - keep healing the others
                log.warning("healing %s failed: %s", fault.kind, exc)
                errors.append(f"{fault.kind}: {exc}")
        self._active.clear()
        self._others.clear()
        return errors

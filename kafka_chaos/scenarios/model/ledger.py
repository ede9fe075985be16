"""A step's (and a scenario iteration's) time ledger: where its wall time went, by phase.

The one place that names the phases. A ledger is a tuple of ``(phase, seconds)`` entries in
:data:`PHASES` order whose seconds add up to the wall time it covers: what no phase measured is
its ``other`` entry, so nothing is hidden. Pure (no clock): the runner measures with a
:class:`Stopwatch` it gives a clock to (``time.monotonic``).

A fault step (``StepObserved.ledger``; ``scenarios.run.step``):

* ``settle`` -- waiting for a settled state before the fault;
* ``predict`` -- the oracle's input built from that snapshot, the target resolved, the oracle asked;
* ``inject`` -- the fault's own action (signals, admin requests, iptables rules);
* ``broker_start`` -- the same, for faults whose action starts brokers or controllers: a JVM
  starting and registering is what Kafka takes, not the harness (Kafka-dictated);
* ``session_expiry`` -- waiting out a session, heartbeat or election timeout Kafka needs to
  notice the fault: the convergence wait of a kill or a cut from ZooKeeper, the action of a
  pause (it waits for the session to expire), a quorum leader's election (Kafka-dictated);
* ``converge`` -- from the fault to the predicted state, where no such timeout dictates it;
* ``metadata`` -- every unheld broker's metadata agreeing with ZooKeeper;
* ``clients`` -- waiting for the clients to get acks again (faults with client windows);
* ``measure`` -- the metrics scrape, controller logs, leader sightings, the migration's status.

Which of ``inject``/``broker_start``/``session_expiry`` and ``converge``/``session_expiry`` a fault's
time goes to, the fault declares (:class:`FaultWaits`, ``scenarios.faults.base.Fault.waits``).
Topic creation is a step too: its ledger has ``predict``, ``inject`` (the admin requests),
``converge`` and ``metadata``; it breaks down the iteration's ``create_topics``.

A scenario iteration (``ScenarioFinished.ledger`` / ``ScenarioAborted.ledger``; ``scenarios.run.runner``):
``cluster`` (a cluster from the pool: restored, or stopped and started afresh), ``create_topics``,
``workload_start`` (consumers and producers up, first acks), ``check`` (every step's checks, history
line and records), ``heal``, ``workload_stop`` (producers drained, consumers closed),
``settle_after_heal`` (stopped brokers started, settled), ``read_back``, ``delete_topics``; its
``other`` is what neither they nor its fault steps' ledgers (:data:`COUNTED_SCOPES`) measured, from
the iteration's start to the ledger's close (the iteration's last observation, after the topics
were deleted).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# --- a fault step
SETTLE = "settle"
PREDICT = "predict"
INJECT = "inject"
BROKER_START = "broker_start"
SESSION_EXPIRY = "session_expiry"
CONVERGE = "converge"
METADATA = "metadata"
CLIENTS = "clients"
MEASURE = "measure"
# --- a scenario iteration
CLUSTER = "cluster"
CREATE_TOPICS = "create_topics"
WORKLOAD_START = "workload_start"
CHECK = "check"
HEAL = "heal"
WORKLOAD_STOP = "workload_stop"
SETTLE_AFTER_HEAL = "settle_after_heal"
READ_BACK = "read_back"
DELETE_TOPICS = "delete_topics"
# --- either: what no phase measured
OTHER = "other"

STEP_PHASES = (SETTLE, PREDICT, INJECT, BROKER_START, SESSION_EXPIRY, CONVERGE, METADATA, CLIENTS, MEASURE)
ITERATION_PHASES = (CLUSTER, CREATE_TOPICS, WORKLOAD_START, CHECK, HEAL, WORKLOAD_STOP, SETTLE_AFTER_HEAL, READ_BACK,
                    DELETE_TOPICS)
PHASES = (*STEP_PHASES, *ITERATION_PHASES, OTHER)
# What Kafka's own timeouts and start-up take, not the harness.
KAFKA_DICTATED = frozenset({BROKER_START, SESSION_EXPIRY})

# What a ledger covers (the ``time_ledger`` measurement's ``scope``).
STEP = "step"
TOPIC_CREATION = "topic_creation"
ITERATION = "iteration"
SCOPES = (STEP, TOPIC_CREATION, ITERATION)
# The scopes whose ledgers partition an iteration's wall time between them; a topic creation's
# ledger breaks down its iteration's ``create_topics`` and is not counted again.
COUNTED_SCOPES = (STEP, ITERATION)

DECIMALS = 3  # milliseconds: what the history stores


@dataclass(frozen=True)
class FaultWaits:
    """Which ledger phase a fault's own action and its convergence wait go to."""

    inject: str = INJECT
    converge: str = CONVERGE

    def __post_init__(self) -> None:
        if self.inject not in (INJECT, BROKER_START, SESSION_EXPIRY) or self.converge not in (CONVERGE, SESSION_EXPIRY):
            raise ValueError(f"not a fault's phases: {self}")


# The faults' declarations (scenarios.faults): the usual, a fault that starts brokers or
# controllers, one whose convergence waits for a session to expire, one whose action does.
PLAIN = FaultWaits()
STARTS_NODES = FaultWaits(inject=BROKER_START)
DETECTED_BY_TIMEOUT = FaultWaits(converge=SESSION_EXPIRY)
WAITS_OUT_TIMEOUT = FaultWaits(inject=SESSION_EXPIRY)


@dataclass(frozen=True)
class TimeLedger:
    """``(phase, seconds)`` entries, each phase once, in :data:`PHASES` order; empty: not measured
    (a history written before version 6)."""

    entries: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        names = [name for name, _ in self.entries]
        unknown = sorted(set(names) - set(PHASES))
        if unknown:
            raise ValueError(f"unknown time-ledger phase(s) {unknown}; known: {', '.join(PHASES)}")
        if names != sorted(set(names), key=PHASES.index):
            raise ValueError(f"time-ledger phases repeated or out of order: {names}")

    def __bool__(self) -> bool:
        return bool(self.entries)

    @property
    def total(self) -> float:
        return round(sum(seconds for _, seconds in self.entries), DECIMALS)

    @property
    def kafka_dictated(self) -> float:
        return round(sum(seconds for name, seconds in self.entries if name in KAFKA_DICTATED), DECIMALS)

    def seconds(self, phase: str) -> float:
        return dict(self.entries).get(phase, 0.0)

    def as_dict(self) -> dict[str, float]:
        return dict(self.entries)

    def to_list(self) -> list[list[Any]]:
        return [[name, seconds] for name, seconds in self.entries]

    @classmethod
    def from_list(cls, value: Sequence[Sequence[Any]] | None) -> TimeLedger:
        return cls(tuple((str(name), float(seconds)) for name, seconds in value or ()))

    @classmethod
    def of(cls, spent: Mapping[str, float]) -> TimeLedger:
        """The phases of ``spent`` with any time, in order, rounded to milliseconds."""
        return cls(tuple((name, round(spent[name], DECIMALS)) for name in PHASES
                         if round(spent.get(name, 0.0), DECIMALS) > 0))


def summed(ledgers: Iterable[TimeLedger]) -> TimeLedger:
    """Every phase's seconds over ``ledgers``."""
    spent: dict[str, float] = {}
    for ledger in ledgers:
        for name, seconds in ledger.entries:
            spent[name] = spent.get(name, 0.0) + seconds
    return TimeLedger.of(spent)


@dataclass
class Stopwatch:
    """Measures phases on ``clock`` from its creation on; :meth:`ledger` closes the books."""

    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    _spent: dict[str, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def add(self, phase: str, seconds: float) -> None:
        if phase not in PHASES or phase == OTHER:
            raise ValueError(f"not a measured time-ledger phase: {phase!r}")
        self._spent[phase] = self._spent.get(phase, 0.0) + max(0.0, seconds)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """The block's time, into ``name`` (also when it raises)."""
        began = self.clock()
        try:
            yield
        finally:
            self.add(name, self.clock() - began)

    def ledger(self, accounted_elsewhere: float = 0.0) -> TimeLedger:
        """The phases so far, with ``other``: the wall time since creation that neither they nor
        ``accounted_elsewhere`` (seconds other ledgers cover, e.g. an iteration's steps) measured."""
        wall = self.clock() - self.started
        other = wall - sum(self._spent.values()) - accounted_elsewhere
        return TimeLedger.of({**self._spent, OTHER: max(0.0, other)})

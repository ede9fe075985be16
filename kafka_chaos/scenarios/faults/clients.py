"""Faults on the transactional workload's Java client processes (issue 43,
:mod:`scenarios.clients.java_txn_workload`): ``client_pause`` stops one with SIGSTOP for a while
and continues it (``repeat`` times, ``gap`` seconds apart), ``client_kill`` kills one (SIGKILL)
and starts it again after ``down`` seconds.

A pause is Jepsen's trigger for KAFKA-17754: the transaction protocol (before KIP-890 part 2,
Kafka 4.0 with ``transaction.version=2``) assumes that a producer's requests arrive in order;
a process stopped between sending a commit or abort and its completion (a GC, a SIGSTOP) can
have that request land after its next transaction began and end *that* one. A paused copier
also misses its group's heartbeats (``session.timeout.ms`` 10 s: ``createConsumer``) and may
outlive its ``transaction.timeout.ms``; a paused consumer is evicted from its group.

Oracle: no event. The oracle models what the controller decides about brokers and partitions
(leaders, ISRs, epochs); a client's pause or death changes none of it. The broker-side effects
it may have — a group rebalance (``GroupCoordinator.onExpireHeartbeat``), a transaction aborted
on timeout (``TransactionCoordinator.abortTimedOutTransactions``: markers written, the producer
epoch bumped), a fenced epoch at the restart's ``InitProducerId`` — are writes to
``__consumer_offsets`` / ``__transaction_state`` and data partitions, no leader or ISR change.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.oracle import Event
from kafka_chaos.scenarios.faults.base import FaultBase, FaultEnv, StepTopics, register_fault, reject_unknown_options
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import NoTarget, Target

CLIENTS = ("producer", "copier", "consumer")  # java_txn_workload.ROLES
PAUSE, KILL = "client_pause", "client_kill"
# The implementation these faults need (scenarios.plans.transactional.TXN_CLIENTS): librdkafka's
# clients run inside the harness's own process, which no signal can stop on its own.
JAVA_CLIENT = "java"
MAX_PAUSE_S = 120.0
MAX_REPEAT = 50


class PausableClient(Protocol):
    """A client process (:class:`harness.java_clients.ClientProcess`)."""

    @property
    def alive(self) -> bool: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def kill(self) -> None: ...

    def start(self) -> None: ...


class ClientHolder(Protocol):
    """What the client faults need of the workload: its processes by role."""

    @property
    def processes(self) -> Mapping[str, PausableClient]: ...


def _client(env: FaultEnv, kind: str, role: str) -> PausableClient:
    holder = env.clients
    if holder is None or role not in holder.processes:
        raise HarnessError(f"{kind}: the scenario runs no Java client {role!r} (a schedule's \"workload\": "
                           "{\"transactions\": true, \"client\": \"java\"}, or run --transactions --txn-client java)")
    return holder.processes[role]


def _number(kind: str, options: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise UsageError(f"{kind}: {name!r} must be a number in [{low:g}, {high:g}], not {value!r}")
    return float(value)


def _role(kind: str, options: Mapping[str, Any]) -> str:
    role = options.get("client", "copier")
    if role not in CLIENTS:
        raise UsageError(f"{kind}: 'client' must be one of {list(CLIENTS)}, not {role!r}")
    return str(role)


@register_fault
@dataclass
class ClientPause(FaultBase):
    """A Java client process stopped (SIGSTOP) for a while, then continued (SIGCONT)."""

    client: str = "copier"
    seconds: float = 10.0
    repeat: int = 1
    gap: float = 1.0
    kind: ClassVar[str] = PAUSE
    txn_client: ClassVar[str] = JAVA_CLIENT

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ClientPause:
        reject_unknown_options(PAUSE, options, ("client", "seconds", "repeat", "gap"))
        repeat = options.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
            raise UsageError(f"{PAUSE}: 'repeat' must be an integer in [1, {MAX_REPEAT}], not {repeat!r}")
        return cls(target, _role(PAUSE, options), _number(PAUSE, options, "seconds", 10.0, 0.05, MAX_PAUSE_S),
                   repeat, _number(PAUSE, options, "gap", 1.0, 0.0, 60.0))

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.client}"

    def oracle_events(self) -> list[Event]:
        return []  # a client's process: no broker, partition or controller changes (module doc)

    def inject(self, env: FaultEnv) -> None:
        process = _client(env, self.kind, self.client)
        for n in range(self.repeat):
            if n:
                time.sleep(self.gap)
            process.pause()
            try:
                time.sleep(self.seconds)
            finally:
                process.resume()

    def heal(self, env: FaultEnv) -> None:
        holder = env.clients
        if holder is not None and self.client in holder.processes:
            holder.processes[self.client].resume()  # idempotent: a continued process ignores SIGCONT


@register_fault
@dataclass
class ClientKill(FaultBase):
    """A Java client process killed (SIGKILL) and started again after `down` seconds."""

    client: str = "copier"
    down: float = 0.0
    kind: ClassVar[str] = KILL
    txn_client: ClassVar[str] = JAVA_CLIENT

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ClientKill:
        reject_unknown_options(KILL, options, ("client", "down"))
        return cls(target, _role(KILL, options), _number(KILL, options, "down", 0.0, 0.0, MAX_PAUSE_S))

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.client}"

    def oracle_events(self) -> list[Event]:
        return []  # a client's process (module doc)

    def inject(self, env: FaultEnv) -> None:
        process = _client(env, self.kind, self.client)
        process.kill()
        time.sleep(self.down)
        process.start()

    def heal(self, env: FaultEnv) -> None:
        holder = env.clients
        if holder is not None and self.client in holder.processes and not holder.processes[self.client].alive:
            holder.processes[self.client].start()


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def client_fault_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Legal on a schedule with the transactional workload, its options valid; it changes
    nothing the model tracks (the process runs again when the step ends)."""
    if not any(t.transactional for t in model.topics.values()):
        raise IllegalStep(f"{step.fault} needs the transactional workload (Java clients)")
    try:
        (ClientPause if step.fault == PAUSE else ClientKill).from_step(Target((), "a Java client"), step.options,
                                                                      StepTopics({}, {}))
    except UsageError as exc:
        raise IllegalStep(str(exc)) from None


def _pause_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if not any(t.transactional for t in model.topics.values()):
        return []
    return [Step(PAUSE, NoTarget("a Java client"), {"client": draw.rng.choice(CLIENTS),
                                                    "seconds": draw.rng.choice((2, 5, 12))})]


def _kill_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if not any(t.transactional for t in model.topics.values()):
        return []
    return [Step(KILL, NoTarget("a Java client"), {"client": draw.rng.choice(CLIENTS)})]


# Opt-in: only a schedule running the Java clients has processes to act on.
register_generator(GeneratorSide(PAUSE, 1, client_fault_rule, _pause_candidates, opt_in=True))
register_generator(GeneratorSide(KILL, 1, client_fault_rule, _kill_candidates, opt_in=True))

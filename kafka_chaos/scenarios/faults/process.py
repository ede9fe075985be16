"""Process faults on brokers: hard kill, controller kill, controlled shutdown, pause, restart,
start. Each needs the ``broker_control`` capability (``harness.cluster.BrokerControl``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, ControlledShutdown, Event
from kafka_chaos.scenarios.faults.base import ZOOKEEPER_ONLY, FaultBase, FaultEnv, StepTopics, register_fault
from kafka_chaos.scenarios.faults.generation import (
    Candidates,
    ClusterModel,
    Draw,
    GeneratorSide,
    IllegalStep,
    register_generator,
)
from kafka_chaos.scenarios.model.ledger import DETECTED_BY_TIMEOUT, PLAIN, STARTS_NODES, WAITS_OUT_TIMEOUT, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import (
    COORDINATOR_SELECTORS,
    Brokers,
    Controller,
    CoordinatorOf,
    EarlierTarget,
    GroupCoordinatorOf,
    Target,
)

log = logging.getLogger(__name__)

_BROKERS = frozenset({Capability.BROKER_CONTROL})
# The transactional workload's roles a generated step may aim a coordinator selector at
# (scenarios.clients.txn_workload.TxnWorkload: transactional ids p0, p1, copier; the copier's group).
TRANSACTIONAL_ROLES = ("p0", "p1", "copier")
COPIER_GROUP_ROLE = "copier"


@dataclass
class _ProcessFault(FaultBase):
    """Holds its target until healed, which starts the stopped brokers again."""

    requires: ClassVar[frozenset[Capability]] = _BROKERS

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    def heal(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            if not env.cluster.broker_running(b):
                log.info("heal %s: starting broker %d", self.kind, b)
                env.cluster.start_broker(b)


@register_fault
@dataclass
class HardKill(_ProcessFault):
    """SIGKILL; the ZK session lives on until it expires (detection = session timeout)."""

    kind: ClassVar[str] = "hard_kill"
    kafka_waits: ClassVar[FaultWaits] = DETECTED_BY_TIMEOUT  # the session expires, then the controller acts

    def oracle_events(self) -> list[Event]:
        return [BrokerFailure(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            env.cluster.kill_broker(b)


@register_fault
@dataclass
class ControllerKill(HardKill):
    """SIGKILL of the active controller: a controller failover on the survivors."""

    kind: ClassVar[str] = "controller_kill"
    # KRaft's controllers are no brokers: quorum_leader_kill (scenarios.faults.quorum)
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's


@register_fault
@dataclass
class ControlledShutdownFault(_ProcessFault):
    """SIGTERM with ``controlled.shutdown.enable=true``; returns when the process has exited."""

    kind: ClassVar[str] = "controlled_shutdown"

    def oracle_events(self) -> list[Event]:
        return [ControlledShutdown(b) for b in self.target.brokers]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            env.cluster.stop_broker(b)


@register_fault
@dataclass
class Start(_ProcessFault):
    """Start brokers an earlier fault took down (waits for the old registration to vanish)."""

    kind: ClassVar[str] = "start"
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    def oracle_events(self) -> list[Event]:
        return [BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            if env.cluster.broker_running(b):
                raise HarnessError(f"cannot start broker {b}: it is running")
            env.cluster.start_broker(b)

    def heal(self, env: FaultEnv) -> None:
        return None


@register_fault
@dataclass
class Restart(_ProcessFault):
    """Stop (controlled, or SIGKILL with ``hard``) then start again; the broker ends up live."""

    hard: bool = False
    kind: ClassVar[str] = "restart"
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Restart:
        return cls(target, hard=bool(options.get("hard", False)))

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    def oracle_events(self) -> list[Event]:
        # Started again at once after a SIGKILL, a new incarnation may register before the
        # controller fences the old one (BrokerFailure.restarting: the KRaft model's extra plans).
        down: list[Event] = ([BrokerFailure(tuple(self.target.brokers), restarting=True)] if self.hard
                             else [ControlledShutdown(b) for b in self.target.brokers])
        return down + [BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        for b in self.target.brokers:
            (env.cluster.kill_broker if self.hard else env.cluster.stop_broker)(b)
            env.cluster.start_broker(b)


@register_fault
@dataclass
class Pause(_ProcessFault):
    """SIGSTOP long enough for ZooKeeper to expire the broker's session, then SIGCONT.

    The wait is event-driven (the broker's ``/brokers/ids/N`` disappearing) and bounded by the
    session timeout + tick + margin; the broker then re-registers by itself."""

    kind: ClassVar[str] = "pause"
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the session to expire
    _paused: set[int] = field(default_factory=set, init=False)

    @property
    def holds(self) -> tuple[int, ...]:
        return tuple(self._paused)

    def oracle_events(self) -> list[Event]:
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


# A paused broker sends no ZooKeeper pings; the session survives a pause shorter than the
# client's read timeout (2/3 of the session timeout, ClientCnxn), whatever the server's ticks.
_SAFE_SHARE_OF_SESSION = 2 / 3


@register_fault
@dataclass
class ShortPause(Pause):
    """SIGSTOP shorter than the ZooKeeper session (option ``seconds``, default 2), then SIGCONT:
    the session survives, so the controller sees no ``BrokerChange`` and nothing moves.

    The pause must stay under 2/3 of ``zookeeper.session.timeout.ms`` (when the client would
    give up on the server) and under ``replica.lag.time.max.ms`` (default 30 s; longer, a paused
    follower leaves ISRs by the leaders' rule, which this fault does not predict)."""

    seconds: float = 2.0
    kind: ClassVar[str] = "short_pause"
    kafka_waits: ClassVar[FaultWaits] = PLAIN  # a deliberate sleep shorter than the session
    # Nothing moves in ZooKeeper: the clients' produce gap is the whole cost, so measure it.
    client_windows: ClassVar[bool] = True

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ShortPause:
        try:
            seconds = float(options.get("seconds", 2.0))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{cls.kind}: 'seconds' must be a number, not {options.get('seconds')!r}") from exc
        if not 0 < seconds <= 60:
            raise UsageError(f"{cls.kind}: 'seconds' must be in (0, 60], not {seconds}")
        return cls(target, seconds)

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        limit = env.session_timeout_ms / 1000.0 * _SAFE_SHARE_OF_SESSION
        if self.seconds >= limit:
            raise HarnessError(f"{self.kind}: {self.seconds:g} s would let the ZooKeeper session "
                               f"({env.session_timeout_ms} ms) expire; keep it under {limit:.1f} s or use pause")
        for b in self.target.brokers:
            env.cluster.pause_broker(b)
            self._paused.add(b)
        try:
            time.sleep(self.seconds)  # the fault itself: a bounded, deliberate stop
        finally:
            self.heal(env)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _coordinator_down(model: ClusterModel, step: Step, downs: bool) -> None:
    """A process fault on a coordinator (scenarios.model.targets.CoordinatorOf): which broker
    only the cluster knows, so no broker may be held (it may be that one) and one must stay up."""
    if model.any_held:
        raise IllegalStep(f"{step.fault} on {step.target} while a broker is held (it may be the coordinator)")
    if downs and model.spare < 1:
        raise IllegalStep(f"{step.fault} on {step.target} would leave no live broker")


def take_down(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if target is None and isinstance(step.target, COORDINATOR_SELECTORS):
        _coordinator_down(model, step, downs=True)
        model.unknown_down.append(len(model.targets))  # this step's index: `start` names it
        return
    if step.fault == ControllerKill.kind or (target is None and isinstance(step.target, Controller)):
        if target is not None or model.cut:  # a cut broker may be the controller ZK names
            raise IllegalStep(f"{step.fault} targets the controller, with no broker cut")
        if model.spare < 1:
            raise IllegalStep(f"{step.fault} would leave no live broker")
        model.unknown_down.append(len(model.targets))  # this step's index: `start` names it
        return
    hit = model.need_free(step.fault, target, downs=True)
    model.live -= set(hit)
    model.stopped |= set(hit)


def _bounce(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    # The broker comes back by itself; a pause or restart still takes it away for a while.
    if target is None and isinstance(step.target, COORDINATOR_SELECTORS):
        _coordinator_down(model, step, downs=step.fault != ShortPause.kind)
        return
    model.need_free(step.fault, target, downs=step.fault != ShortPause.kind)


def _start(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if target is None:  # the controller an earlier step killed
        if not isinstance(step.target, EarlierTarget) or step.target.step not in model.unknown_down:
            raise IllegalStep(f"start of the broker step {getattr(step.target, 'step', -1) + 1} killed: not down")
        model.unknown_down.remove(step.target.step)
        return
    if not target or any(b not in model.stopped for b in target):
        raise IllegalStep(f"start on {list(target)}: not stopped")
    model.stopped -= set(target)
    model.live |= set(target)


def down_candidates(kind: str, most_at_once: int) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        free, spare = model.drawable()
        if not free or spare < 1:
            return []
        most = min(spare, most_at_once, len(free))
        return ([Step(kind, Brokers(tuple(sorted(draw.rng.sample(free, draw.rng.randint(1, most))))))]
                + (_coordinator_candidates(kind, model, draw) if kind in _AT_COORDINATORS else []))
    return candidates


# The stopping kinds a generated step aims at a coordinator (the bouncing ones all may).
_AT_COORDINATORS = frozenset({HardKill.kind, ControlledShutdownFault.kind})


def _coordinator_candidates(kind: str, model: ClusterModel, draw: Draw) -> list[Step]:
    """With the transactional workload: the step aimed at the coordinator of one of its
    transactional ids, or of its copier's group (the workload's roles,
    ``scenarios.clients.txn_workload.TxnWorkload.transactional_ids`` / ``groups``)."""
    if not model.transactional or model.any_held or (model.spare < 1 and kind != ShortPause.kind):
        return []
    if draw.rng.random() < 0.75:
        return [Step(kind, CoordinatorOf(draw.rng.choice(TRANSACTIONAL_ROLES)))]
    return [Step(kind, GroupCoordinatorOf(COPIER_GROUP_ROLE))]


def controller_candidates(kind: str) -> Candidates:
    """A step of ``kind`` on the controller, while a broker can be spared and none is cut."""
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        _, spare = model.drawable()
        return [Step(kind, Controller())] if spare >= 1 and not model.cut else []
    return candidates


def _bounce_candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        free, spare = model.drawable()
        if not free or (spare < 1 and kind != ShortPause.kind):
            return []
        hard = {"hard": draw.rng.random() < 0.5} if kind == Restart.kind else {}
        return [Step(kind, Brokers((draw.rng.choice(free),)), hard),
                *(replace(c, options=hard) for c in _coordinator_candidates(kind, model, draw))]
    return candidates


def _start_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    steps = [Step(Start.kind, EarlierTarget(i)) for i in model.unknown_down]
    if model.stopped:
        chosen = draw.rng.sample(sorted(model.stopped), draw.rng.randint(1, len(model.stopped)))
        steps.append(Step(Start.kind, Brokers(tuple(sorted(chosen)))))
    return steps


# Weights: faults that move leaders most often. Registered in the order every draw walks.
register_generator(GeneratorSide(HardKill.kind, 4, take_down, down_candidates(HardKill.kind, 3)))
register_generator(GeneratorSide(ControllerKill.kind, 2, take_down, controller_candidates(ControllerKill.kind)))
register_generator(GeneratorSide(ControlledShutdownFault.kind, 3, take_down,
                                 down_candidates(ControlledShutdownFault.kind, 1)))
register_generator(GeneratorSide(Pause.kind, 1, _bounce, _bounce_candidates(Pause.kind)))
register_generator(GeneratorSide(ShortPause.kind, 1, _bounce, _bounce_candidates(ShortPause.kind)))
register_generator(GeneratorSide(Restart.kind, 2, _bounce, _bounce_candidates(Restart.kind)))
register_generator(GeneratorSide(Start.kind, 4, _start, _start_candidates))

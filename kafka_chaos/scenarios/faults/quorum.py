"""Faults on the KRaft controller quorum: the active controller killed or paused, and the whole
quorum lost for a while. Each needs the ``controller_quorum`` capability
(:class:`harness.cluster.ControllerQuorumControl`); the target is the quorum leader the settled
snapshot names (the ``controller`` selector).

The oracle's event for each is :class:`oracle.ControllerFailover`: no partition changes and no
broker is fenced, because a new active controller starts every broker's session afresh. The
fault returns once a quorum leader other than the one it hit is in the metadata log (bounded),
so the step measures the election, not only the kill.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, ControllerQuorumControl
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.oracle import ClusterState, Event
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.scenarios.faults.base import QUORUM_MODES, FaultBase, FaultEnv, StepTopics, register_fault, require_capability
from kafka_chaos.scenarios.faults.generation import (
    Candidates,
    ClusterModel,
    Draw,
    GeneratorSide,
    IllegalStep,
    register_generator,
)
from kafka_chaos.scenarios.model.ledger import STARTS_NODES, WAITS_OUT_TIMEOUT, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Controller, NoTarget, Target

log = logging.getLogger(__name__)

_QUORUM = frozenset({Capability.CONTROLLER_QUORUM})
# KRaft elects within controller.quorum.election.timeout.ms (1 s) of the fetch timeout
# (controller.quorum.fetch.timeout.ms, 2 s) running out; a loaded 2-core machine gets a margin.
NEW_LEADER_WAIT_S = 30.0


def _quorum(env: FaultEnv, kind: str) -> ControllerQuorumControl:
    return cast(ControllerQuorumControl, require_capability(env, Capability.CONTROLLER_QUORUM, kind))


def _quorum_view(env: FaultEnv) -> ZkSnapshot:
    """The metadata log's view: a migrating cluster's observer follows whichever controller is in
    charge, and before the metadata copy that is ZooKeeper's -- the quorum is then read from its
    own log (:meth:`harness.migration.observer.MigrationObserver.kraft_snapshot`)."""
    kraft = getattr(env.observer, "kraft_snapshot", None)
    view = kraft() if callable(kraft) else None
    return view if isinstance(view, ZkSnapshot) else env.observer.snapshot()


def _quorum_epoch(env: FaultEnv) -> int:
    epoch = _quorum_view(env).controller_epoch
    return -1 if epoch is None else epoch


def _wait_new_epoch(env: FaultEnv, old_epoch: int, kind: str) -> None:
    """Until the metadata log shows a leader of a later quorum epoch (LEADER_CHANGE record)."""
    def new_leader(s: ZkSnapshot) -> bool:
        return s.controller is not None and (s.controller_epoch or -1) > old_epoch

    if not callable(getattr(env.observer, "kraft_snapshot", None)):
        env.observer.wait_until(new_leader, timeout=NEW_LEADER_WAIT_S, description=f"a new quorum leader after {kind}")
        return
    deadline = time.monotonic() + NEW_LEADER_WAIT_S  # a migrating cluster: polled in the log itself
    while not new_leader(view := _quorum_view(env)):
        if time.monotonic() >= deadline:
            raise HarnessError(f"no new quorum leader within {NEW_LEADER_WAIT_S:.0f} s after {kind}: the log shows "
                               f"leader {view.controller} in epoch {view.controller_epoch}")
        time.sleep(0.1)


@dataclass
class _QuorumFault(FaultBase):
    requires: ClassVar[frozenset[Capability]] = _QUORUM
    mode_support: ClassVar[frozenset[str]] = QUORUM_MODES
    # Whether the KRaft controller decides the partitions (False: a migrating cluster before the
    # metadata copy, where the ZooKeeper controller does and the quorum's failover moves nothing).
    _kraft_decides: bool = field(default=True, init=False)

    @property
    def holds(self) -> tuple[int, ...]:
        return ()  # controllers are not brokers: no broker is excused from settling

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        self._kraft_decides = state.mode == Mode.KRAFT

    def oracle_events(self) -> list[Event]:
        return [ControllerFailover()] if self._kraft_decides else []

    def _leader(self, env: FaultEnv) -> int:
        """The quorum leader the target names -- or, when the target is the ZooKeeper controller
        (a migrating cluster before the copy: the ``controller`` selector named a broker), the
        one the metadata log names."""
        if len(self.target.brokers) != 1:
            raise UsageError(f"{self.kind} targets the one quorum leader (the 'controller' selector)")
        leader = self.target.brokers[0]
        if leader in _quorum(env, self.kind).controller_ids:
            return leader
        named = _quorum_view(env).controller
        if named is None:
            raise HarnessError(f"{self.kind}: the metadata log names no quorum leader")
        return named


@register_fault
@dataclass
class QuorumLeaderKill(_QuorumFault):
    """SIGKILL of the active controller; another voter wins the next epoch
    (``KafkaRaftClient``'s election after ``controller.quorum.fetch.timeout.ms``)."""

    kind: ClassVar[str] = "quorum_leader_kill"
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the next election
    _killed: int | None = field(default=None, init=False)

    def inject(self, env: FaultEnv) -> None:
        self._killed, epoch = self._leader(env), _quorum_epoch(env)
        _quorum(env, self.kind).kill_controller(self._killed)
        _wait_new_epoch(env, epoch, self.kind)

    def heal(self, env: FaultEnv) -> None:
        quorum = _quorum(env, self.kind)
        if self._killed is not None and self._killed in quorum.controller_ids \
                and not quorum.controller_running(self._killed):
            quorum.start_controller(self._killed)


@register_fault
@dataclass
class QuorumLeaderPause(_QuorumFault):
    """SIGSTOP of the active controller until a new leader is elected, then SIGCONT: the old
    leader wakes up in an old epoch, learns the new one and follows."""

    kind: ClassVar[str] = "quorum_leader_pause"
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the next election

    def inject(self, env: FaultEnv) -> None:
        leader, epoch = self._leader(env), _quorum_epoch(env)
        quorum = _quorum(env, self.kind)
        quorum.pause_controller(leader)
        try:
            _wait_new_epoch(env, epoch, self.kind)
        finally:
            quorum.resume_controller(leader)


@register_fault
@dataclass
class QuorumLoss(_QuorumFault):
    """Every controller killed for ``seconds`` (default 10: past the brokers' session timeout,
    so a controller that kept the old sessions' clocks would fence them all), then started
    again. The brokers keep serving on the metadata they have; once a leader is back nothing
    may change."""

    seconds: float = 10.0
    kind: ClassVar[str] = "quorum_loss"
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES  # the controllers start again within inject

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> QuorumLoss:
        try:
            seconds = float(options.get("seconds", 10.0))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{cls.kind}: 'seconds' must be a number, not {options.get('seconds')!r}") from exc
        if not 0 < seconds <= 120:
            raise UsageError(f"{cls.kind}: 'seconds' must be in (0, 120], not {seconds}")
        return cls(target, seconds)

    def inject(self, env: FaultEnv) -> None:
        quorum, epoch = _quorum(env, self.kind), _quorum_epoch(env)
        for c in quorum.controller_ids:
            if quorum.controller_running(c):  # an earlier quorum_leader_kill may hold one down
                quorum.kill_controller(c)
        time.sleep(self.seconds)  # the fault itself: a bounded, deliberate outage
        self.heal(env)
        _wait_new_epoch(env, epoch, self.kind)

    def heal(self, env: FaultEnv) -> None:
        quorum = _quorum(env, self.kind)
        errors = []
        for c in quorum.controller_ids:
            if not quorum.controller_running(c):
                try:
                    quorum.start_controller(c)
                except HarnessError as exc:
                    errors.append(str(exc))
        if errors:
            raise HarnessError("; ".join(errors))


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _quorum_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if not model.has_quorum:
        raise IllegalStep(f"{step.fault} needs KRaft controllers (a KRaft cluster, or a migration's once provisioned)")
    if step.fault == QuorumLoss.kind:
        model.controllers_down = 0  # it starts every controller again
        return
    if model.quorum_spare < 1:
        raise IllegalStep(f"{step.fault} would leave the quorum without a majority to elect a new leader")
    if step.fault == QuorumLeaderKill.kind:
        model.controllers_down += 1  # down until healed, or a quorum_loss starts it


def _quorum_candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        if not model.has_quorum:
            return []
        if kind == QuorumLoss.kind:
            return [Step(kind, NoTarget("every controller"), {"seconds": float(draw.rng.choice((3, 10)))})]
        return [Step(kind, Controller())] if model.quorum_spare >= 1 else []
    return candidates


# Opt-in: a ZooKeeper-mode seed's schedules never draw them; explore --mode kraft adds them.
for _kind, _weight in ((QuorumLeaderKill.kind, 2.0), (QuorumLeaderPause.kind, 1.0), (QuorumLoss.kind, 1.0)):
    register_generator(GeneratorSide(_kind, _weight, _quorum_rule, _quorum_candidates(_kind), opt_in=True))

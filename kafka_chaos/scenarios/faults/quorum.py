"""Faults on the KRaft controller quorum: the active controller killed or paused, and the whole
quorum lost for a while. Each needs the ``controller_quorum`` capability
(:class:`harness.cluster.ControllerQuorumControl`); the target is the quorum leader the settled
snapshot names (the ``controller`` selector).

The oracle's event for each is :class:`oracle.ControllerFailover`: no partition changes and no
broker is fenced, because a new active controller starts every broker's session afresh. The
fault returns once a quorum leader other than the one it hit is in the metadata log (bounded),
so the step measures the election, not only the kill.

Killing or pausing the leader when no majority of voters would be left (an earlier kill holds one
down, or the quorum has one voter) leaves the quorum without a leader: no candidate can win
(``KafkaRaftClient`` needs a majority of votes), no controller writes, so every broker carries on
with the metadata it has and none is fenced -- fencing is the active controller's
(``BrokerHeartbeatManager`` runs in it only). The step holds that outage for ``seconds`` (default
10: past the brokers' session timeout, so a controller that kept the old sessions' clocks would
fence them), watching that no leader is committed meanwhile, then the voters return -- the paused
leader resumed, the killed one started again -- and it waits for the leader they elect: the step
is checked like any failover (nothing changed, nobody fenced), the outage like ZooKeeper mode's
total one (nothing could change).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, ControllerQuorumControl
from kafka_chaos.harness.config import BROKER_SESSION_TIMEOUT_MS, TEST_SESSION_TIMEOUT_MS
from kafka_chaos.harness.kraft.dynamic_quorum import VoterChanges
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.oracle import ClusterState, Event
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.scenarios.faults.base import (
    QUORUM_MODES,
    FaultBase,
    FaultEnv,
    StepTopics,
    register_fault,
    reject_unknown_options,
    require_capability,
)
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
# A quorum left without a majority: how long the outage lasts by default, and at least (longer
# than the fetch timeout, so the voters left have campaigned and the return elects anew).
LEADERLESS_S = 10.0
MIN_LEADERLESS_S = 3.0


class LeaderWithoutMajority(HarnessError):
    """A quorum leader was committed while no majority of voters was up: Raft forbids it."""


def quorum_control(env: FaultEnv, kind: str) -> ControllerQuorumControl:
    return cast(ControllerQuorumControl, require_capability(env, Capability.CONTROLLER_QUORUM, kind))


def quorum_view(env: FaultEnv) -> ZkSnapshot:
    """The metadata log's view: a migrating cluster's observer follows whichever controller is in
    charge, and before the metadata copy that is ZooKeeper's -- the quorum is then read from its
    own log (:meth:`harness.migration.observer.MigrationObserver.kraft_snapshot`)."""
    kraft = getattr(env.observer, "kraft_snapshot", None)
    view = kraft() if callable(kraft) else None
    return view if isinstance(view, ZkSnapshot) else env.observer.snapshot()


def quorum_epoch(env: FaultEnv) -> int:
    epoch = quorum_view(env).controller_epoch
    return -1 if epoch is None else epoch


def wait_new_epoch(env: FaultEnv, old_epoch: int, kind: str, *, same_epoch: bool = False) -> None:
    """Until the metadata log shows a leader of a later quorum epoch (LEADER_CHANGE record);
    ``same_epoch``: or the leader of ``old_epoch`` again (a lone voter resumed keeps its epoch)."""
    def new_leader(s: ZkSnapshot) -> bool:
        epoch = -1 if s.controller_epoch is None else s.controller_epoch
        return s.controller is not None and (epoch > old_epoch or (same_epoch and epoch == old_epoch))

    if not callable(getattr(env.observer, "kraft_snapshot", None)):
        env.observer.wait_until(new_leader, timeout=NEW_LEADER_WAIT_S, description=f"a new quorum leader after {kind}")
        return
    deadline = time.monotonic() + NEW_LEADER_WAIT_S  # a migrating cluster: polled in the log itself
    while not new_leader(view := quorum_view(env)):
        if time.monotonic() >= deadline:
            raise HarnessError(f"no new quorum leader within {NEW_LEADER_WAIT_S:.0f} s after {kind}: the log shows "
                               f"leader {view.controller} in epoch {view.controller_epoch}")
        time.sleep(0.1)


def majority_left(voters: int, up: int) -> bool:
    """Pure: whether ``up`` running voters of ``voters`` can elect a leader (a strict majority,
    ``KafkaRaftClient``'s ``CandidateState.isVoteGranted``)."""
    return up > voters // 2


def counted_voters(quorum: ControllerQuorumControl, leader: int) -> tuple[int, ...]:
    """The voters a majority is counted over: a dynamic quorum's current set, as ``leader``'s own
    log holds it (a controller ``controller_remove`` took out may still run, as an observer: it
    never stands, ``KafkaRaftClient.pollUnattached`` 3.9.0 line 3125 polls as a voter only when
    ``quorum.isVoter()``), else every controller started (a static quorum's fixed
    ``controller.quorum.voters``)."""
    if isinstance(quorum, VoterChanges) and quorum.dynamic_quorum:
        seen = quorum.voter_sets().get(leader)
        if seen is not None:
            return seen.ids
    return tuple(quorum.controller_ids)


def lone_pause_fences(others_up: int, seconds: float, broker_session_timeout_ms: int) -> bool:
    """Pure: whether pausing the leader fences every broker when it resumes. A lone voter (no
    other voter up) resumes in its own epoch with its brokers' last heartbeats as old as the pause
    (``BrokerHeartbeatManager`` keeps them), so the first ``maybeFenceOneStaleBroker`` after it
    fences each broker whose session ran out (3.9.2 ``QuorumController`` line 1331); any other
    voter up elects a leader of a later epoch on the return, which starts every session afresh.
    Not modelled yet (docs/findings.md §12)."""
    return others_up == 0 and seconds * 1000 >= broker_session_timeout_ms


def leaderless_seconds(kind: str, options: Mapping[str, Any]) -> float:
    """The ``seconds`` option: how long a quorum left without a majority stays so."""
    reject_unknown_options(kind, options, ("seconds",))
    try:
        seconds = float(options.get("seconds", LEADERLESS_S))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{kind}: 'seconds' must be a number, not {options.get('seconds')!r}") from exc
    if not MIN_LEADERLESS_S <= seconds <= 120:
        raise UsageError(f"{kind}: 'seconds' must be in [{MIN_LEADERLESS_S:g}, 120] (longer than the quorum's "
                         f"2 s fetch timeout), not {seconds:g}")
    return seconds


@dataclass
class QuorumFault(FaultBase):
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
        if leader in quorum_control(env, self.kind).controller_ids:
            return leader
        named = quorum_view(env).controller
        if named is None:
            raise HarnessError(f"{self.kind}: the metadata log names no quorum leader")
        return named


@dataclass
class _LeaderFault(QuorumFault):
    """A fault on the quorum leader alone; ``seconds``: how long the quorum stays leaderless when
    it leaves no majority up (module docstring)."""

    seconds: float = LEADERLESS_S

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Self:
        return cls(target, leaderless_seconds(cls.kind, options))

    def _others_up(self, env: FaultEnv, leader: int) -> int:
        """How many voters other than ``leader`` are running."""
        quorum = quorum_control(env, self.kind)
        return sum(1 for c in counted_voters(quorum, leader) if c != leader and quorum.controller_running(c))

    def _majority_left_without(self, env: FaultEnv, leader: int) -> bool:
        voters = counted_voters(quorum_control(env, self.kind), leader)
        return majority_left(len(voters), self._others_up(env, leader))

    def _hold_leaderless(self, env: FaultEnv, leader: int, epoch: int) -> None:
        """The outage: ``seconds`` with no majority up, LeaderWithoutMajority if a leader of a
        later epoch is committed meanwhile."""
        log.info("%s: no majority of voters left without %d: the quorum stays leaderless for %.0f s",
                 self.kind, leader, self.seconds)
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            view = quorum_view(env)
            if view.controller is not None and view.controller_epoch is not None and view.controller_epoch > epoch:
                raise LeaderWithoutMajority(
                    f"{self.kind}: quorum leader {view.controller} committed in epoch {view.controller_epoch} "
                    f"while {leader} was down and no majority of voters was up")
            time.sleep(0.1)

    def _others_campaigned(self, env: FaultEnv, leader: int) -> bool:
        """Whether another voter ran during the outage (it timed out fetching and stood in later
        epochs, so the leader the return elects has a later one)."""
        return self._others_up(env, leader) > 0


@register_fault
@dataclass
class QuorumLeaderKill(_LeaderFault):
    """SIGKILL of the active controller; another voter wins the next epoch
    (``KafkaRaftClient``'s election after ``controller.quorum.fetch.timeout.ms``) -- or, with no
    majority left, the quorum stays leaderless for ``seconds`` and the killed voter is started
    again (the module docstring)."""

    kind: ClassVar[str] = "quorum_leader_kill"
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the next election
    _killed: int | None = field(default=None, init=False)

    def inject(self, env: FaultEnv) -> None:
        leader, epoch = self._leader(env), quorum_epoch(env)
        quorum = quorum_control(env, self.kind)
        if self._majority_left_without(env, leader):
            self._killed = leader
            self._take_down(env, leader)
            wait_new_epoch(env, epoch, self.kind)
            return
        self._take_down(env, leader)
        try:
            self._hold_leaderless(env, leader, epoch)
        finally:
            quorum.start_controller(leader)  # the voters return
        wait_new_epoch(env, epoch, self.kind)  # restarted, it stands as a candidate in a later epoch

    def _take_down(self, env: FaultEnv, leader: int) -> None:
        quorum_control(env, self.kind).kill_controller(leader)

    def heal(self, env: FaultEnv) -> None:
        quorum = quorum_control(env, self.kind)
        if self._killed is not None and self._killed in quorum.controller_ids \
                and not quorum.controller_running(self._killed):
            quorum.start_controller(self._killed)


@register_fault
@dataclass
class QuorumLeaderPause(_LeaderFault):
    """SIGSTOP of the active controller until a new leader is elected, then SIGCONT: the old
    leader wakes up in an old epoch, learns the new one and follows -- or, with no majority left,
    it is resumed after ``seconds`` of a leaderless quorum (the module docstring)."""

    kind: ClassVar[str] = "quorum_leader_pause"
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the next election

    def _refuse_what_is_not_modelled(self, env: FaultEnv, leader: int) -> None:
        """A lone voter paused past the brokers' session timeout fences them all when it resumes,
        which no prediction says yet: refused before anything happens (one line), not mispredicted."""
        timeout_ms = int(env.cluster.broker_settings().get(BROKER_SESSION_TIMEOUT_MS, TEST_SESSION_TIMEOUT_MS))
        if lone_pause_fences(self._others_up(env, leader), self.seconds, timeout_ms):
            raise UsageError(f"{self.kind}: pausing the lone voter {leader} for {self.seconds:g} s, at or past the "
                             f"brokers' {timeout_ms / 1000:g} s session timeout, fences every broker when it "
                             f"resumes, which is not modelled yet (docs/findings.md §12): give 'seconds' below "
                             f"{timeout_ms / 1000:g}")

    def inject(self, env: FaultEnv) -> None:
        leader, epoch = self._leader(env), quorum_epoch(env)
        quorum = quorum_control(env, self.kind)
        majority = self._majority_left_without(env, leader)
        self._refuse_what_is_not_modelled(env, leader)
        quorum.pause_controller(leader)
        try:
            if majority:
                wait_new_epoch(env, epoch, self.kind)
                return
            self._hold_leaderless(env, leader, epoch)
        finally:
            quorum.resume_controller(leader)
        # A lone voter resumes its own leadership in its epoch; with others up, they stood in
        # later epochs meanwhile and the leader they elect with it has one.
        wait_new_epoch(env, epoch, self.kind, same_epoch=not self._others_campaigned(env, leader))


@register_fault
@dataclass
class QuorumLoss(QuorumFault):
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
        quorum, epoch = quorum_control(env, self.kind), quorum_epoch(env)
        for c in quorum.controller_ids:
            if quorum.controller_running(c):  # an earlier quorum_leader_kill may hold one down
                quorum.kill_controller(c)
        time.sleep(self.seconds)  # the fault itself: a bounded, deliberate outage
        self.heal(env)
        wait_new_epoch(env, epoch, self.kind)

    def heal(self, env: FaultEnv) -> None:
        quorum = quorum_control(env, self.kind)
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

# Kinds whose step leaves the leader's voter down until healed (scenarios.faults.disks adds its
# power failure of the quorum leader).
KILLS_ITS_VOTER: set[str] = {QuorumLeaderKill.kind}

def quorum_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """A step on the quorum: legal with controllers and no voter cut; a leader kill (or power
    failure: ``KILLS_ITS_VOTER``) leaves its voter down when another can lead."""
    if not model.has_quorum:
        raise IllegalStep(f"{step.fault} needs KRaft controllers (a KRaft cluster, or a migration's once provisioned)")
    if model.quorum_cut:
        raise IllegalStep(f"{step.fault} while a voter is cut from the others: the model could not say who is left")
    if step.fault == QuorumLoss.kind:
        model.controllers_down = 0  # it starts every controller again
        return
    if step.fault in KILLS_ITS_VOTER and model.quorum_spare >= 1:
        model.controllers_down += 1  # down until healed, or a quorum_loss starts it
    # Without a spare voter the step holds a leaderless quorum, then starts (or resumes) its voter.


def quorum_candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        if not model.has_quorum or model.quorum_cut:
            return []
        if kind == QuorumLoss.kind:
            return [Step(kind, NoTarget("every controller"), {"seconds": float(draw.rng.choice((3, 10)))})]
        return [Step(kind, Controller())]
    return candidates


# Opt-in: a ZooKeeper-mode seed's schedules never draw them; explore --mode kraft adds them.
for _kind, _weight in ((QuorumLeaderKill.kind, 2.0), (QuorumLeaderPause.kind, 1.0), (QuorumLoss.kind, 1.0)):
    register_generator(GeneratorSide(_kind, _weight, quorum_rule, quorum_candidates(_kind), opt_in=True))

"""Voter changes of a dynamic KRaft quorum (KIP-853; a cluster started with ``quorum: "dynamic"``,
Kafka 3.9+): a controller added, a voter removed (the quorum leader included), a removed voter
started again. Each needs the ``controller_quorum`` capability and a launcher that changes voters
(:class:`harness.kraft.dynamic_quorum.VoterChanges`: the local one).

* ``controller_add``: a new controller, formatted with ``--no-initial-controllers``, started and
  made a voter with ``kafka-metadata-quorum add-controller`` (it must catch up first:
  ``AddVoterHandler`` refuses a lagging one, raft 4.1.2).
* ``controller_remove``: ``remove-controller`` of the quorum leader (``voter: "leader"``, the
  default) or of a follower voter (``"follower"``). The leader resigns once the VotersRecord
  without it commits (``RemoveVoterHandler.highWatermarkUpdated``) and the others elect a new
  one; the removed controller keeps running, an observer.
* ``removed_voter_restart``: the controller the latest ``controller_remove`` took out, killed and
  started again: its log's newest VotersRecord leaves it out, so it stays an observer and the
  quorum keeps its leader and epoch (``controller.quorum.auto.join.enable`` false by default,
  ``QuorumConfig`` 4.1.2 line 109).

Oracle side: a voter change is a VotersRecord in the metadata log; no partition changes and no
broker is fenced. A leader's removal is a controller failover (:class:`oracle.ControllerFailover`,
as ``quorum_leader_kill``); the other changes move nothing. Each fault ends by observing, bounded,
every running controller's voter set (its own log) and the leader's DescribeQuorum answer, and
records them with the voter set expected (its ``outcome``), which the ``quorum_voters`` check
judges (:mod:`scenarios.checks.voters`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, ControllerQuorumControl
from kafka_chaos.harness.kraft.dynamic_quorum import VoterChanges
from kafka_chaos.oracle import ClusterState, Event
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.scenarios.faults.base import (
    KRAFT_ONLY,
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
from kafka_chaos.scenarios.faults.quorum import wait_new_epoch
from kafka_chaos.scenarios.model.ledger import STARTS_NODES, WAITS_OUT_TIMEOUT, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import NoTarget, Target
from kafka_chaos.scenarios.model.voters import FOLLOWER, LEADER, VOTER_CHANGE, removal_target

log = logging.getLogger(__name__)

_QUORUM = frozenset({Capability.CONTROLLER_QUORUM})
# How long the voters' logs and the leader may take to agree on the new set once the tool was
# answered (a new leader's election after a leader's removal: fetch timeout 2 s + election 1 s).
SETTLE_S = 30.0
# A removed voter started again: how long it is watched not to disturb the quorum -- past the
# fetch timeout (2 s) and an election timeout (1 s) after it has caught up, twice.
UNDISTURBED_S = 6.0


class Quorum(VoterChanges, ControllerQuorumControl):
    """What these faults act on."""


def voter_control(env: FaultEnv, kind: str) -> Quorum:
    """The cluster as a dynamic quorum's voter changer; one line when it is not one."""
    cluster = require_capability(env, Capability.CONTROLLER_QUORUM, kind)
    if not isinstance(cluster, VoterChanges):
        raise HarnessError(f"{kind}: the {getattr(cluster, 'backend', 'this')} launcher cannot change a quorum's "
                           f"voters (the local launcher can)")
    if not cluster.dynamic_quorum:
        raise UsageError(f"{kind}: the cluster's KRaft quorum is static (controller.quorum.voters): give the "
                         f"schedule's cluster \"quorum\": \"dynamic\" (Kafka 3.9+)")
    return cast(Quorum, cluster)


def described_leader(cluster: Quorum) -> tuple[int | None, int | None, tuple[int, ...] | None]:
    """The running controller that answers DescribeQuorum as leader: its id, epoch and voters."""
    from kafka_chaos.harness.metadata import MetadataError, running_voters_quorum

    for _, answer in running_voters_quorum(cluster):
        if not isinstance(answer, MetadataError) and answer.error_code == 0:
            return answer.leader_id, answer.leader_epoch, tuple(sorted(v for v, _ in answer.voters))
    return None, None, None


def current_voters(cluster: Quorum) -> tuple[int, ...]:
    """The voter set the leader acts on, read from its log (the leader's DescribeQuorum when its
    log cannot be read); HarnessError when no leader answers."""
    leader, _, described = described_leader(cluster)
    if leader is None or described is None:
        raise HarnessError("no controller answers DescribeQuorum as the quorum's leader")
    seen = cluster.voter_sets().get(leader)
    return seen.ids if seen is not None else described


def observe(cluster: Quorum, expected: tuple[int, ...], *, keep: tuple[int | None, int | None] | None = None,
            settle_s: float = SETTLE_S) -> dict[str, Any]:
    """Wait (bounded) until every running expected voter's log and the leader's DescribeQuorum name
    ``expected`` (and, given ``keep``, the leader and epoch are those), then record what was seen,
    converged or not: the ``quorum_voters`` check judges it."""
    deadline = time.monotonic() + settle_s
    while True:
        running = sorted(c for c in cluster.controller_ids if cluster.controller_running(c))
        logs = {str(c): (None if s is None else list(s.ids)) for c, s in cluster.voter_sets().items()}
        leader, epoch, described = described_leader(cluster)
        settled = (leader in expected and described == tuple(sorted(expected))
                   and all(logs.get(str(c)) == sorted(expected) for c in running if c in expected)
                   and (keep is None or (leader, epoch) == keep))
        if settled or time.monotonic() >= deadline:
            seen: dict[str, Any] = {"expected": sorted(expected), "logs": logs, "running": running,
                                    "leader": leader, "leader_epoch": epoch,
                                    "described": None if described is None else list(described)}
            if keep is not None:
                seen.update(keep_epoch=True, leader_before=keep[0], epoch_before=keep[1])
            if not settled:
                log.warning("voters did not settle on %s within %.0f s: %s", list(expected), settle_s, seen)
            return seen
        time.sleep(0.2)


@dataclass
class VoterFault(FaultBase):
    requires: ClassVar[frozenset[Capability]] = _QUORUM
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    _seen: dict[str, Any] | None = field(default=None, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Self:
        """A voter change that takes no option."""
        reject_unknown_options(cls.kind, options, ())
        return cls(target)

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        return None if self._seen is None else {VOTER_CHANGE: self._seen}

    def oracle_events(self) -> list[Event]:
        return []


@register_fault
@dataclass
class ControllerAdd(VoterFault):
    """A new controller formatted with --no-initial-controllers, started and made a voter
    (kafka-metadata-quorum add-controller): it catches up, then every voter's log names it."""

    kind: ClassVar[str] = "controller_add"
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES
    added: int | None = field(default=None, init=False)

    def inject(self, env: FaultEnv) -> None:
        cluster = voter_control(env, self.kind)
        before = current_voters(cluster)
        self.added = cluster.add_controller()
        self._seen = observe(cluster, (*before, self.added))


@register_fault
@dataclass
class ControllerRemove(VoterFault):
    """remove-controller of the quorum leader (``voter: "leader"``, the default) or a follower
    voter (``"follower"``) by id and directory id; a removed leader resigns once the change
    commits and the others elect a new one. The removed controller keeps running."""

    kind: ClassVar[str] = "controller_remove"
    voter: str = LEADER
    removed: int | None = field(default=None, init=False)
    _was_leader: bool = field(default=True, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Self:
        reject_unknown_options(cls.kind, options, ("voter",))
        voter = options.get("voter", LEADER)
        if voter not in (LEADER, FOLLOWER):
            raise UsageError(f"{cls.kind}: 'voter' must be {LEADER!r} or {FOLLOWER!r}, not {voter!r}")
        return cls(target, str(voter))

    @property
    def waits(self) -> FaultWaits:
        return WAITS_OUT_TIMEOUT if self.voter == LEADER else self.kafka_waits  # the next election

    def oracle_events(self) -> list[Event]:
        return [ControllerFailover()] if self.voter == LEADER else []

    def inject(self, env: FaultEnv) -> None:
        cluster = voter_control(env, self.kind)
        leader, epoch, _ = described_leader(cluster)
        if leader is None or epoch is None:
            raise HarnessError(f"{self.kind}: no controller answers DescribeQuorum as the quorum's leader")
        voters = current_voters(cluster)
        if len(voters) < 2:
            raise UsageError(f"{self.kind}: the quorum has one voter ({voters[0]}): none would be left")
        self.removed = removal_target(self.voter, leader, voters)
        cluster.remove_controller(self.removed)
        if self.removed == leader:
            wait_new_epoch(env, epoch, self.kind)
        self._seen = observe(cluster, tuple(v for v in voters if v != self.removed))


@register_fault
@dataclass
class RemovedVoterRestart(VoterFault):
    """The controller the latest controller_remove took out, killed and started again: it stays an
    observer (its log's voter set leaves it out) and the quorum keeps its leader and epoch."""

    kind: ClassVar[str] = "removed_voter_restart"
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES
    restarted: int | None = field(default=None, init=False)

    def inject(self, env: FaultEnv) -> None:
        cluster = voter_control(env, self.kind)
        voters = current_voters(cluster)
        removed = [c for c in cluster.controller_ids if c not in voters]
        if not removed:
            raise UsageError(f"{self.kind}: no removed controller (every controller is a voter: "
                             f"{list(voters)}); a controller_remove step comes first")
        self.restarted = removed[-1]
        leader, epoch, _ = described_leader(cluster)
        if cluster.controller_running(self.restarted):
            cluster.kill_controller(self.restarted)
        cluster.start_controller(self.restarted)
        time.sleep(UNDISTURBED_S)  # the window in which a campaigning observer would show
        self._seen = observe(cluster, voters, keep=(leader, epoch))


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def voter_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Voter changes need a dynamic quorum, which only a schedule's cluster section asks for: a
    generated schedule's model (a static quorum) never has one, so they are never drawn."""
    if not model.has_quorum or model.mode != "kraft":
        raise IllegalStep(f"{step.fault} needs a KRaft cluster")
    if not model.dynamic_quorum:
        raise IllegalStep(f"{step.fault} needs a dynamic quorum (the cluster's \"quorum\": \"dynamic\")")


def voter_candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        if not model.dynamic_quorum or model.quorum_cut:
            return []
        if kind == ControllerRemove.kind:
            return [Step(kind, NoTarget("a voter"), {"voter": draw.rng.choice((LEADER, FOLLOWER))})]
        return [Step(kind, NoTarget("a controller"))]
    return candidates


# Opt-in, and legal only on a dynamic quorum: no seed's schedules draw them.
for _kind in (ControllerAdd.kind, ControllerRemove.kind, RemovedVoterRestart.kind):
    register_generator(GeneratorSide(_kind, 1.0, voter_rule, voter_candidates(_kind), opt_in=True))

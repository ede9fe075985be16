"""A KRaft voter cut from the other voters: the active controller's links to them dropped (both
directions), its brokers' and the clients' kept, until a heal step. It needs the
``quorum_link_partition`` capability (:class:`harness.cluster.QuorumLinkPartitioner`) beside
``controller_quorum``; the target is the quorum leader the settled snapshot names (the
``controller`` selector).

KAFKA-15489's trigger: before 3.7.0 a leader that no majority fetches from stays leader of its
epoch, while the voters it cannot reach elect another -- two active controllers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, QuorumLinkPartitioner
from kafka_chaos.scenarios.faults.base import KRAFT_ONLY, Fault, FaultEnv, StepTopics, register_fault, reject_unknown_options, require_capability
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.faults.quorum import QuorumFault, quorum_control, quorum_epoch, wait_new_epoch
from kafka_chaos.scenarios.model.ledger import WAITS_OUT_TIMEOUT, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Controller, Target

log = logging.getLogger(__name__)

LEADER_CUT = "quorum_leader_cut"
HEAL = "heal"
# How long the cut holds before the step is measured: past GRACE_S of the one_quorum_leader check
# (scenarios.checks.quorum), so that a leader cut off has had time to resign (from 3.7.0: within
# 1.5 x controller.quorum.fetch.timeout.ms of its last majority fetch) and one that has not shows.
CUT_HOLD_S = 7.0
_LINKS = frozenset({Capability.CONTROLLER_QUORUM, Capability.QUORUM_LINK_PARTITION})


def _links(env: FaultEnv, kind: str) -> QuorumLinkPartitioner:
    return cast(QuorumLinkPartitioner, require_capability(env, Capability.QUORUM_LINK_PARTITION, kind))


@dataclass
class QuorumLeaderCut(QuorumFault):
    """The active controller cut from the other voters -- both directions, its brokers' and the
    clients' links kept -- until a later ``heal`` step (or teardown). The other voters stop hearing
    from it, time out (``controller.quorum.fetch.timeout.ms``) and elect a leader of a later epoch;
    the brokers go on fetching from the cut one. From 3.7.0 it resigns within 1.5 fetch timeouts
    (``KafkaRaftClient.pollLeader``'s check-quorum, KAFKA-15489), the brokers find the new leader,
    which starts every broker's session afresh (``ClusterControlManager.activate``), so nothing
    else changes: :class:`oracle.ControllerFailover`. Before it, the cut one leads its epoch for
    as long as the cut lasts -- two active controllers, which the ``one_quorum_leader`` check sees.
    The step returns once a leader of a later epoch is committed and :data:`CUT_HOLD_S` have passed
    since the cut. KRaft clusters only (a migration's hybrid brokers are not modelled under it)."""

    kind: ClassVar[str] = LEADER_CUT
    requires: ClassVar[frozenset[Capability]] = _LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the next election
    _cut: bool = field(default=False, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> Self:
        reject_unknown_options(cls.kind, options, ("variant",))
        return cls(target)

    @property
    def label(self) -> str:
        return f"{self.kind}/leader_from_voters"

    def inject(self, env: FaultEnv) -> None:
        leader, epoch = self._leader(env), quorum_epoch(env)
        others = [c for c in quorum_control(env, self.kind).controller_ids if c != leader]
        if not others:
            raise UsageError(f"{self.kind}: the quorum has one voter, there is nobody to cut {leader} from")
        cut_at = time.monotonic()
        self._cut = True  # set first: a half-made cut is healed too
        _links(env, self.kind).cut_links(leader, others)
        log.info("%s: voter %d cut from voters %s", self.kind, leader, others)
        wait_new_epoch(env, epoch, self.kind)
        time.sleep(max(0.0, cut_at + CUT_HOLD_S - time.monotonic()))  # the fault itself: a bounded hold

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            _links(env, self.kind).heal_network()
            self._cut = False


@dataclass
class QuorumLeaderCutHeal(QuorumFault):
    """Remove the cut of an earlier ``quorum_leader_cut`` step (``heal_network``; idempotent). The
    voter that was cut stood as a candidate in ever later epochs meanwhile (no pre-vote before 4.0,
    KIP-996), so its return may force an election: :class:`oracle.ControllerFailover`, any voter
    may win (the target is the quorum's leader now). Held :data:`CUT_HOLD_S`, so that the step is
    measured once that election is over and a leader the heal left behind has learnt the new epoch."""

    kind: ClassVar[str] = LEADER_CUT
    requires: ClassVar[frozenset[Capability]] = _LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits out the election it may force

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    def inject(self, env: FaultEnv) -> None:
        healed_at = time.monotonic()
        _links(env, self.kind).heal_network()
        time.sleep(CUT_HOLD_S)  # the fault itself: a bounded hold
        log.info("%s: healed %.1f s ago", self.kind, time.monotonic() - healed_at)


def quorum_leader_cut(target: Target, options: Mapping[str, Any], topics: StepTopics) -> Fault:
    """One kind, two classes: ``variant`` ``heal`` builds a :class:`QuorumLeaderCutHeal`, none
    (or ``leader_from_voters``) a :class:`QuorumLeaderCut`."""
    reject_unknown_options(LEADER_CUT, options, ("variant",))
    variant = options.get("variant", "leader_from_voters")
    if variant == HEAL:
        return QuorumLeaderCutHeal(target)
    if variant != "leader_from_voters":
        raise UsageError(f"{LEADER_CUT}: 'variant' must be 'leader_from_voters' or '{HEAL}', not {variant!r}")
    return QuorumLeaderCut(target)


register_fault(QuorumLeaderCut, build=quorum_leader_cut)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _leader_cut_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if model.mode != "kraft":
        raise IllegalStep(f"{LEADER_CUT} needs a KRaft cluster")
    if step.options.get("variant") == HEAL:
        if not model.quorum_cut:
            raise IllegalStep(f"{LEADER_CUT} heal: no cut to heal")
        model.quorum_cut = False
        return
    if model.quorum_cut or model.controllers < 3 or model.controllers_down:
        raise IllegalStep(f"{LEADER_CUT}: needs every voter of 3 or more up and none cut")
    model.quorum_cut = True


def _leader_cut_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.mode != "kraft":
        return []
    if model.quorum_cut:
        return [Step(LEADER_CUT, Controller(), {"variant": HEAL})]
    return [Step(LEADER_CUT, Controller())] if model.controllers >= 3 and not model.controllers_down else []


register_generator(GeneratorSide(LEADER_CUT, 1.0, _leader_cut_rule, _leader_cut_candidates, opt_in=True))

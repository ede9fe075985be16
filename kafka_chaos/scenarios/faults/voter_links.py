"""A follower voter of a KRaft quorum cut from the other voters (the ``quorum_link_partition``
capability, beside ``controller_quorum``; :mod:`scenarios.faults.quorum_links` has the leader's
cut and a broker's from the controllers). The leader keeps its majority, so nothing changes while
the cut lasts; the cut voter stands as a candidate in ever later epochs (no pre-vote before 4.0,
KIP-996) and, healed, forces one more election it cannot win. Its own module, imported after the
others, so that its generator side is walked after every kind registered before it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import ClassVar

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.oracle import Event
from kafka_chaos.scenarios.faults.base import KRAFT_ONLY, FaultEnv, register_fault
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.faults.quorum import QuorumFault, quorum_control, quorum_epoch, quorum_view
from kafka_chaos.scenarios.faults.quorum_links import CUT_HOLD_S, HEAL, LINKS, controller_cut, cut_or_heal, links
from kafka_chaos.scenarios.model.ledger import WAITS_OUT_TIMEOUT, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Controller

log = logging.getLogger(__name__)

FOLLOWER_CUT = "quorum_follower_cut"
FOLLOWER_FROM_VOTERS = "follower_from_voters"


def cut_follower(leader: int, voters: list[int]) -> int:
    """Pure: the follower voter :class:`QuorumFollowerCut` cuts -- the first voter after the
    leader in id order, wrapping (deterministic for a given leader)."""
    ordered = sorted(voters)
    later = [v for v in ordered if v > leader]
    return (later or [v for v in ordered if v != leader])[0]


@dataclass
class QuorumFollowerCut(QuorumFault):
    """A follower voter cut from the other voters -- both directions, its brokers' and the clients'
    links kept -- until a later ``heal`` step (or teardown); the target is the quorum leader (the
    ``controller`` selector), which stays: it keeps the majority of the other follower, its fetches
    arriving (``LeaderState``: a majority of voters fetching), so nothing changes -- no oracle event,
    and ``one_quorum_leader`` expects that one leader. The cut follower (:func:`cut_follower`) hears
    no leader for ``controller.quorum.fetch.timeout.ms`` and stands as a candidate in ever later
    epochs whose Vote requests are dropped (3.6.2 and 3.9.2 alike: no pre-vote before 4.0, KIP-996).
    The step holds :data:`CUT_HOLD_S`, past that timeout and an election timeout, so it is measured
    with the follower standing. Needs 3 voters or more, every one up."""

    kind: ClassVar[str] = FOLLOWER_CUT
    requires: ClassVar[frozenset[Capability]] = LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # held past the follower's fetch timeout
    # Its heal comes first at teardown (Nemesis.heal_all): a broker a power failure's or a kill's
    # heal starts while a voter is cut follows the cut candidate's epochs on 3.x and never catches
    # up (explore-7734-3 on 3.9.2: broker 5 started before this heal, Unattached epochs 5..31 in step
    # with cut voter 3000, "Received a fatal error while waiting for the controller to acknowledge
    # that we are caught up" after 60 s; ClusterModel.refusal keeps the same out of the steps)
    heals_first: ClassVar[bool] = True
    _cut: bool = field(default=False, init=False)

    @property
    def label(self) -> str:
        return f"{self.kind}/{FOLLOWER_FROM_VOTERS}"

    def oracle_events(self) -> list[Event]:
        return []  # the leader keeps its majority: nothing changes, the same leader

    def inject(self, env: FaultEnv) -> None:
        leader, epoch = self._leader(env), quorum_epoch(env)
        quorum = quorum_control(env, self.kind)
        voters = list(quorum.controller_ids)
        if len(voters) < 3:
            raise UsageError(f"{self.kind}: the quorum has {len(voters)} voter(s); a follower cut from the others "
                             "needs 3 or more (with fewer the leader would lose its majority)")
        down = [v for v in voters if not quorum.controller_running(v)]
        if down:
            raise UsageError(f"{self.kind}: voter(s) {down} down; with one more cut off the leader may lose its majority")
        follower = cut_follower(leader, voters)
        self._cut = True  # set first: a half-made cut is healed too
        links(env, self.kind).cut_links(follower, [v for v in voters if v != follower])
        log.info("%s: follower voter %d cut from voters %s (leader %d, epoch %d)", self.kind, follower,
                 [v for v in voters if v != follower], leader, epoch)
        time.sleep(CUT_HOLD_S)  # the fault itself: a bounded hold
        view = quorum_view(env)
        log.info("%s: after %.0f s the metadata log names leader %s in epoch %s", self.kind, CUT_HOLD_S,
                 view.controller, view.controller_epoch)

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            links(env, self.kind).heal_network()
            self._cut = False


@dataclass
class QuorumFollowerCutHeal(QuorumFault):
    """Remove the cut of an earlier ``quorum_follower_cut`` step (``heal_network``; idempotent).
    The follower stood in later epochs meanwhile; its first Vote request that arrives carries one
    above the quorum's, so the leader and the other follower move to it and resign
    (``KafkaRaftClient.handleVoteRequest``), and with its shorter log it cannot win the election
    that follows: one more election, any voter but it may lead -- :class:`oracle.ControllerFailover`
    (the target is the quorum's leader now). Held :data:`CUT_HOLD_S`, so that the step is measured
    once that election is over."""

    kind: ClassVar[str] = FOLLOWER_CUT
    requires: ClassVar[frozenset[Capability]] = LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits out the election it forces

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    def inject(self, env: FaultEnv) -> None:
        links(env, self.kind).heal_network()
        time.sleep(CUT_HOLD_S)  # the fault itself: a bounded hold
        view = quorum_view(env)
        log.info("%s: healed; the metadata log names leader %s in epoch %s", self.kind, view.controller,
                 view.controller_epoch)


quorum_follower_cut = cut_or_heal(FOLLOWER_CUT, FOLLOWER_FROM_VOTERS, QuorumFollowerCut, QuorumFollowerCutHeal)
register_fault(QuorumFollowerCut, build=quorum_follower_cut)


def _follower_cut_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if model.mode != "kraft":
        raise IllegalStep(f"{FOLLOWER_CUT} needs a KRaft cluster")
    if step.options.get("variant") == HEAL:
        if not model.follower_cut:
            raise IllegalStep(f"{FOLLOWER_CUT} heal: no follower cut to heal")
        model.quorum_cut = model.follower_cut = False
        return
    if model.quorum_cut or model.controllers < 3 or model.controllers_down or controller_cut(model):
        raise IllegalStep(f"{FOLLOWER_CUT}: needs every voter of 3 or more up and nothing cut")
    model.quorum_cut = model.follower_cut = True


def _follower_cut_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.mode != "kraft":
        return []
    if model.follower_cut:
        return [Step(FOLLOWER_CUT, Controller(), {"variant": HEAL})]
    if model.quorum_cut or model.controllers < 3 or model.controllers_down or controller_cut(model):
        return []
    return [Step(FOLLOWER_CUT, Controller())]


register_generator(GeneratorSide(FOLLOWER_CUT, 1.0, _follower_cut_rule, _follower_cut_candidates, opt_in=True))

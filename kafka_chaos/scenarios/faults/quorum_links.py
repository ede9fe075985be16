"""Cuts between KRaft nodes (the ``quorum_link_partition`` capability,
:class:`harness.cluster.QuorumLinkPartitioner`, beside ``controller_quorum``): every packet between
a node and the peers named dropped, both directions, the other links and the clients' kept, until
a heal step (or teardown).

``quorum_leader_cut``: the active controller cut from the other voters; the target is the quorum
leader the settled snapshot names (the ``controller`` selector). KAFKA-15489's trigger: before
3.7.0 a leader that no majority fetches from stays leader of its epoch, while the voters it cannot
reach elect another -- two active controllers.

``broker_controller_cut``: a broker cut from every controller, its links to the other brokers and
the clients kept. It cannot heartbeat, so the active controller fences it when its session expires
-- the same records as a killed broker's -- while it goes on running, replicating and answering
clients on the metadata it had; healed, its next heartbeat unfences it.

A broker cut from its peer brokers: :mod:`scenarios.faults.broker_links`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, QuorumLinkPartitioner
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, Event
from kafka_chaos.scenarios.faults.base import (
    KRAFT_ONLY,
    Fault,
    FaultBase,
    FaultEnv,
    StepTopics,
    register_fault,
    reject_unknown_options,
    require_capability,
)
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.faults.quorum import QuorumFault, quorum_control, quorum_epoch, wait_new_epoch
from kafka_chaos.scenarios.model.ledger import DETECTED_BY_TIMEOUT, PLAIN, WAITS_OUT_TIMEOUT, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, Controller, Target

log = logging.getLogger(__name__)

LEADER_CUT = "quorum_leader_cut"
HEAL = "heal"
# How long the cut holds before the step is measured: past GRACE_S of the one_quorum_leader check
# (scenarios.checks.quorum), so that a leader cut off has had time to resign (from 3.7.0: within
# 1.5 x controller.quorum.fetch.timeout.ms of its last majority fetch) and one that has not shows.
CUT_HOLD_S = 7.0
LINKS = frozenset({Capability.CONTROLLER_QUORUM, Capability.QUORUM_LINK_PARTITION})


def links(env: FaultEnv, kind: str) -> QuorumLinkPartitioner:
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
    requires: ClassVar[frozenset[Capability]] = LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits for the next election
    # Its heal comes first at teardown (Nemesis.heal_all): a broker a power failure's or a kill's
    # heal starts while a voter is cut follows the cut candidate's epochs on 3.x and never catches
    # up (explore-7734-3 on 3.9.2: broker 5 started before this heal, Unattached epochs 5..31 in step
    # with cut voter 3000, "Received a fatal error while waiting for the controller to acknowledge
    # that we are caught up" after 60 s; ClusterModel.refusal keeps the same out of the steps)
    heals_first: ClassVar[bool] = True
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
        links(env, self.kind).cut_links(leader, others)
        log.info("%s: voter %d cut from voters %s", self.kind, leader, others)
        wait_new_epoch(env, epoch, self.kind)
        time.sleep(max(0.0, cut_at + CUT_HOLD_S - time.monotonic()))  # the fault itself: a bounded hold

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            links(env, self.kind).heal_network()
            self._cut = False


@dataclass
class QuorumLeaderCutHeal(QuorumFault):
    """Remove the cut of an earlier ``quorum_leader_cut`` step (``heal_network``; idempotent). The
    voter that was cut stood as a candidate in ever later epochs meanwhile (no pre-vote before 4.0,
    KIP-996), so its return may force an election: :class:`oracle.ControllerFailover`, any voter
    may win (the target is the quorum's leader now). Held :data:`CUT_HOLD_S`, so that the step is
    measured once that election is over and a leader the heal left behind has learnt the new epoch."""

    kind: ClassVar[str] = LEADER_CUT
    requires: ClassVar[frozenset[Capability]] = LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = WAITS_OUT_TIMEOUT  # inject waits out the election it may force

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    def inject(self, env: FaultEnv) -> None:
        healed_at = time.monotonic()
        links(env, self.kind).heal_network()
        time.sleep(CUT_HOLD_S)  # the fault itself: a bounded hold
        log.info("%s: healed %.1f s ago", self.kind, time.monotonic() - healed_at)


def cut_or_heal(kind: str, cut_variant: str, cut: Callable[[Target], Fault],
                heal: Callable[[Target], Fault]) -> Callable[[Target, Mapping[str, Any], StepTopics], Fault]:
    """The builder of a link-cut kind with two classes: ``variant`` ``heal`` builds ``heal``, none
    (or ``cut_variant``) ``cut``; any other variant or option is one UsageError line."""
    def build(target: Target, options: Mapping[str, Any], topics: StepTopics) -> Fault:
        reject_unknown_options(kind, options, ("variant",))
        variant = options.get("variant", cut_variant)
        if variant == HEAL:
            return heal(target)
        if variant != cut_variant:
            raise UsageError(f"{kind}: 'variant' must be '{cut_variant}' or '{HEAL}', not {variant!r}")
        return cut(target)

    return build


quorum_leader_cut = cut_or_heal(LEADER_CUT, "leader_from_voters", QuorumLeaderCut, QuorumLeaderCutHeal)
register_fault(QuorumLeaderCut, build=quorum_leader_cut)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _leader_cut_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if model.mode != "kraft":
        raise IllegalStep(f"{LEADER_CUT} needs a KRaft cluster")
    if step.options.get("variant") == HEAL:
        if not model.quorum_cut or model.follower_cut:
            raise IllegalStep(f"{LEADER_CUT} heal: no leader cut to heal")
        model.quorum_cut = False
        return
    if model.quorum_cut or model.controllers < 3 or model.controllers_down:
        raise IllegalStep(f"{LEADER_CUT}: needs every voter of 3 or more up and none cut")
    if model.cut:  # its heal would heal that cut too (heal_network undoes every cut)
        raise IllegalStep(f"{LEADER_CUT} while a broker is cut from the controllers or its peers")
    model.quorum_cut = True


def _leader_cut_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.mode != "kraft":
        return []
    if model.quorum_cut:
        return [] if model.follower_cut else [Step(LEADER_CUT, Controller(), {"variant": HEAL})]
    if model.cut:
        return []
    return [Step(LEADER_CUT, Controller())] if model.controllers >= 3 and not model.controllers_down else []


register_generator(GeneratorSide(LEADER_CUT, 1.0, _leader_cut_rule, _leader_cut_candidates, opt_in=True))


# --- a broker cut from the controllers ------------------------------------------------------------

BROKER_CUT = "broker_controller_cut"
FROM_CONTROLLERS = "from_controllers"
# What ClusterModel.cut records for a broker this kind cut (network_partition's variants are others).
CUT_FROM_CONTROLLERS = "controllers"


@dataclass
class BrokerControllerCut(FaultBase):
    """The target broker(s) cut from every KRaft controller -- both directions, its links to the
    other brokers and the clients kept -- until a later ``heal`` step (or teardown). It can send
    no heartbeat, so once ``broker.session.timeout.ms`` has passed since its last one the active
    controller fences it (``maybeFenceOneStaleBroker`` -> ``handleBrokerFenced``: every ISR
    without it, its leaderships moved, a BrokerRegistrationChangeRecord; ReplicationControlManager
    3.9.2 lines 1633-1646 and 1319-1336, ``BrokerHeartbeatManager.findOneStaleBroker`` lines
    453-464; 3.6.2: lines 1480-1492 and 1226-1243): the records of a killed broker,
    :class:`oracle.BrokerFailure`. Unlike a killed one it keeps running on the metadata it had:
    it goes on fetching as a follower, leads its old partitions in its own view and answers the
    clients' metadata requests with it; a leader that learnt of the fence does not take it back
    into an ISR (``Partition.isReplicaIsrEligible``, 3.9.2 Partition.scala lines 1060-1085: a
    fenced broker is not eligible) and its own AlterPartition requests cannot reach the
    controller. The fault holds it, so its own metadata, logs and disk are not judged while cut
    (as a ZooKeeper-mode broker cut from ZooKeeper, ``network_partition``). KRaft clusters only
    (a migration's hybrid brokers are not modelled under it)."""

    kind: ClassVar[str] = BROKER_CUT
    requires: ClassVar[frozenset[Capability]] = LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = DETECTED_BY_TIMEOUT  # nothing moves until its session expires
    # A broker running but cut off: the clients' gap is measured (the partitions it led stall
    # until they find the new leaders).
    client_windows: ClassVar[bool] = True
    _cut: bool = field(default=False, init=False)

    @property
    def label(self) -> str:
        return f"{self.kind}/{FROM_CONTROLLERS}"

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    def oracle_events(self) -> list[Event]:
        return [BrokerFailure(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        controllers = _controllers_of(env, self.kind, self.target.brokers)
        partitioner = links(env, self.kind)
        self._cut = True  # set first: a half-made cut is healed too
        # admin requests go through the other brokers from now on (FaultEnv.bootstrap)
        env.cut_from_controllers.update(self.target.brokers)
        for broker in self.target.brokers:
            partitioner.cut_links(broker, controllers)
        log.info("%s: broker(s) %s cut from controllers %s", self.kind, list(self.target.brokers), controllers)

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            links(env, self.kind).heal_network()
            env.cut_from_controllers.clear()  # heal_network undoes every cut
            self._cut = False


@dataclass
class BrokerControllerCutHeal(FaultBase):
    """Remove the cut of an earlier ``broker_controller_cut`` step (``heal_network``, which undoes
    every cut the cluster made; idempotent); target: the brokers it cut (``{"earlier": i}``). The
    broker's next heartbeat asks to be unfenced (``wantFence`` false: it is RUNNING,
    BrokerLifecycleManager.scala 3.9.2 line 460) with a metadata offset past its registration
    record -- it has not re-registered -- so the controller unfences it at once
    (``BrokerHeartbeatManager.calculateNextBrokerState``, 3.9.2 lines 542-563, 3.6.2 lines
    545-566; ``handleBrokerUnfenced``: leaderless partitions whose ISR holds it elect it) and it
    catches up with the metadata log, turns follower where another leads now (truncating what
    only it wrote), and rejoins the ISRs through its leaders: :class:`oracle.BrokerStartup`, judged
    as the ``start`` of a killed broker is."""

    kind: ClassVar[str] = BROKER_CUT
    requires: ClassVar[frozenset[Capability]] = LINKS
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = PLAIN  # the next heartbeat, every broker.heartbeat.interval.ms
    client_windows: ClassVar[bool] = True  # a heal's window covers the whole cut

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    def oracle_events(self) -> list[Event]:
        return [BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        links(env, self.kind).heal_network()
        env.cut_from_controllers.clear()  # heal_network undoes every cut
        log.info("%s: healed broker(s) %s", self.kind, list(self.target.brokers))


def _controllers_of(env: FaultEnv, kind: str, brokers: tuple[int, ...]) -> list[int]:
    """The controllers to cut ``brokers`` from: every voter; a one-line error for a target that
    names none, or names a controller."""
    controllers = list(quorum_control(env, kind).controller_ids)
    if not brokers:
        raise UsageError(f"{kind} needs brokers to cut (a broker selector)")
    named = sorted(set(brokers) & set(controllers))
    if named:
        raise UsageError(f"{kind} cuts brokers from the controllers, and {named} are controllers "
                         f"({LEADER_CUT} cuts a voter from the others)")
    return controllers


broker_controller_cut = cut_or_heal(BROKER_CUT, FROM_CONTROLLERS, BrokerControllerCut, BrokerControllerCutHeal)
register_fault(BrokerControllerCut, build=broker_controller_cut)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def controller_cut(model: ClusterModel) -> list[int]:
    """The brokers an earlier step cut from the controllers, not healed yet."""
    return sorted(b for b, how in model.cut.items() if how == CUT_FROM_CONTROLLERS)


def broker_cut_side(kind: str, how: str, from_what: str, *, one_broker: bool) -> GeneratorSide:
    """The generator side of a cut of brokers (``how``: the ``ClusterModel.cut`` variant it holds
    them in) healed by a later step: drawn and legal only while no other cut holds (one
    ``heal_network`` undoes every cut), on a free broker that may go down (fenced by the cut from
    the controllers, or leading alone when cut from its peers, it counts as down: another must stay);
    ``one_broker``: one target broker, not several."""

    def rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
        if model.mode != "kraft":
            raise IllegalStep(f"{kind} needs a KRaft cluster")
        if step.options.get("variant") == HEAL:
            if not target or any(model.cut.get(b) != how for b in target):
                raise IllegalStep(f"{kind} heal of {target}: not cut from {from_what}")
            for b in target:
                del model.cut[b]
            return
        if model.quorum_cut or model.delayed:
            raise IllegalStep(f"{kind} while a voter is cut or links are delayed")
        if model.cut:
            raise IllegalStep(f"{kind}: one cut at a time (its heal heals every cut)")
        if one_broker and (target is None or len(target) != 1):
            raise IllegalStep(f"{kind} cuts one broker from the others, not {target}")
        for b in model.need_free(step.fault, target, downs=True):
            model.cut[b] = how

    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        if model.mode != "kraft":
            return []
        cut = sorted(b for b, held in model.cut.items() if held == how)
        if cut:
            return [Step(kind, Brokers(tuple(cut)), {"variant": HEAL})]
        free, spare = model.drawable()
        if not free or spare < 1 or model.quorum_cut or model.delayed or model.cut:
            return []
        return [Step(kind, Brokers((draw.rng.choice(free),)))]

    return GeneratorSide(kind, 1.0, rule, candidates, opt_in=True)


register_generator(broker_cut_side(BROKER_CUT, CUT_FROM_CONTROLLERS, "the controllers", one_broker=False))

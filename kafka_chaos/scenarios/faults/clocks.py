"""Clock faults: one node's wall clock jumps (``clock_jump``) or runs fast or slow
(``clock_drift``) until a ``variant: heal`` step (or teardown) puts it back on the host's clock
(``harness.cluster.ClockController``; the local launcher's libfaketime, :mod:`harness.local.clocks`).
Only ``CLOCK_REALTIME`` moves, as in a real clock step: Kafka's ``Time.milliseconds``; its
``Time.nanoseconds`` (``System.nanoTime``) does not.

The target: a broker selector (``leader_of``, ``brokers``, ``controller``: in KRaft the quorum
leader), or with ``"zookeeper": "leader"`` / a server id a ZooKeeper server (target ``none``).

What Kafka 3.9 does with it, read from its source, decides the oracle's answer -- no controller
event, every leader, ISR and leader epoch as before once settled:

* A partition leader's ISR expiry is the one wall-clock deadline on the replication path:
  ``ReplicaManager`` schedules ``maybeShrinkIsr`` every ``replica.lag.time.max.ms / 2`` (the
  scheduler's period is monotonic), and ``Partition.getOutOfSyncReplicas`` drops a follower when
  ``ReplicaState.isCaughtUp`` fails: its log end differs from the leader's *and*
  ``time.milliseconds - lastCaughtUpTimeMs > replica.lag.time.max.ms``. After a forward jump
  larger than the lag, a follower looks out of sync only until its next caught-up fetch sets
  ``lastCaughtUpTimeMs`` from the jumped clock (``Replica.updateFetchStateOrThrow``); under the
  workload that is within one fetch. A shrink needs the expiry check to land in that window, then
  ``maybeExpandIsr`` adds the follower back at its next fetch: a transient ISR change
  (AlterPartition, leader epoch unchanged; +1 partition epoch each way in KRaft), not a settled
  one. A backward jump cannot shrink (``lastCaughtUpTimeMs`` is a max, so it stays ahead of the
  clock); its heal is a forward jump of the same size, by the rule above.
* Not modelled, a Kafka defect: a follower's fetch backoff is wall-clock (``DelayedItem``:
  ``Time.SYSTEM.milliseconds + replica.fetch.backoff.ms``). A forward jump beyond
  ``request.timeout.ms`` fails the fetches in flight, which backs off every partition of the
  fetcher; an idle partition keeps that spent backoff (only a response with records for it
  clears it), so a later jump *back* (a heal) re-arms it for the jump's size: the broker stops
  fetching those partitions and leaves the ISR of each that gets records (seen in the durability
  suite, docs/clocks.md; apache/kafka#8517). Which partitions are idle is the workload's, so the
  oracle cannot name them: the ISR check fails where it shows.
* Not modelled, a Kafka defect: the KRaft leader's append linger is wall-clock
  (``BatchAccumulator.maybeResetLinger``: ``time.milliseconds() + linger``). A jump back on the
  active controller while a batch lingers leaves it undrained for up to the jump: no metadata
  commit, heartbeats (answered after a commit) time out, live brokers get fenced, elections wait
  (docs/clocks.md: shown with a 1 s linger; at the default 25 ms about one jump back in twenty).
* KRaft's broker heartbeats are judged on the controller's monotonic clock
  (``BrokerHeartbeatManager``: ``lastContactNs``, ``time.nanoseconds``), so a controller's jump
  fences no broker; the broker's heartbeat schedule is monotonic too (``BrokerLifecycleManager``'s
  event queue deadlines). ``KafkaRaftClient`` runs its fetch and check-quorum timers on
  ``time.milliseconds``: a single voter never expires (``LeaderState.timeUntilCheckQuorumExpires``),
  but a voter of a 3-voter quorum may start an election the oracle cannot name, so clock faults on
  KRaft controllers are refused unless the quorum has one voter.
* ZooKeeper sessions (client pings and the server's expiry queue) run on
  ``Time.currentElapsedTime``, monotonic: no session expires, on a broker or a ZooKeeper server.

So epochs are judged "never back, moved only where predicted" (``exact_epochs`` False): the
race above may move a KRaft partition epoch by 2; leaders and ISRs are judged exactly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import (
    Capability,
    ClockController,
    ControllerQuorumControl,
    ZooKeeperEnsembleControl,
    capabilities_of,
)
from kafka_chaos.oracle import ClusterState, Event
from kafka_chaos.scenarios.faults.base import (
    ANY_MODE,
    MIGRATION_ONLY,
    ZOOKEEPER_ONLY,
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
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, Target

log = logging.getLogger(__name__)

CLOCK_JUMP = "clock_jump"
CLOCK_DRIFT = "clock_drift"
MAX_JUMP_S = 3600.0
MAX_RATE = 10.0
# A new offset reaches the node's JVM once libfaketime's 1 s cache lapses (measured <= 2.2 s,
# harness.local.clocks.FELT_WITHIN_S); the step looks only after that, so the ISR race of a
# forward jump (the module's docstring) is over or under way when it does.
FELT_WITHIN_S = 3.0
# ``hold_s``: how long the step keeps the clock off before it looks, so the leaders'
# isr-expiration check (every replica.lag.time.max.ms / 2, 15 s on test clusters) runs under it.
MAX_HOLD_S = 600.0
_CLOCKS = frozenset({Capability.CLOCK_CONTROL})


@dataclass(frozen=True)
class ClockNode:
    """Whose clock: a role of ``harness.cluster.ClockController`` and an id."""

    role: str
    node_id: int

    def __str__(self) -> str:
        return f"{self.role} {self.node_id}"


def _zookeeper_option(options: Mapping[str, Any], kind: str) -> str | int | None:
    """``zookeeper``: ``"leader"`` or a server id (the clock of a ZooKeeper server), or absent."""
    value = options.get("zookeeper")
    if value is None:
        return None
    if value == "leader" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return cast("str | int", value)
    raise UsageError(f"{kind}: 'zookeeper' must be \"leader\" or a server id >= 1, not {value!r}")


def _variant(options: Mapping[str, Any], kind: str, action: str) -> bool:
    variant = options.get("variant", action)
    if variant not in (action, "heal"):
        raise UsageError(f"{kind}: 'variant' must be {action!r} or 'heal', not {variant!r}")
    return bool(variant == "heal")


def _hold(options: Mapping[str, Any], kind: str) -> float:
    """``hold_s``: seconds the step waits after setting the clock (at least until it is felt)."""
    value = options.get("hold_s", FELT_WITHIN_S)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_HOLD_S:
        raise UsageError(f"{kind}: 'hold_s' must be seconds in [0, {MAX_HOLD_S:.0f}], not {value!r}")
    return float(value)


def _number(options: Mapping[str, Any], name: str, kind: str) -> float:
    value = options.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{kind}: give {name!r} as a number, not {value!r}")
    return float(value)


@dataclass
class _ClockFault(FaultBase):
    """A clock set off the host's (or, healing, back on it) on one node; holds no broker (the
    node keeps serving: other faults may hit it), healed at teardown."""

    requires: ClassVar[frozenset[Capability]] = _CLOCKS
    # The ISR race may move a KRaft partition epoch (the module's docstring).
    exact_epochs: ClassVar[bool] = False
    healing: bool = False
    zookeeper: str | int | None = None
    hold_s: float = FELT_WITHIN_S
    _node: ClockNode | None = None

    @property
    def modes(self) -> frozenset[str]:
        return ZOOKEEPER_ONLY | MIGRATION_ONLY if self.zookeeper is not None else ANY_MODE

    def oracle_events(self) -> list[Event]:
        return []  # no controller event: the module's docstring

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        self._node = self._resolve(env)

    def _resolve(self, env: FaultEnv) -> ClockNode:
        """The node the target names: a ZooKeeper server, a KRaft controller (a single voter
        only), or a broker."""
        cluster = env.cluster
        if self.zookeeper is not None:
            return ClockNode("zookeeper", self._zookeeper_server(env))
        if len(self.target.brokers) != 1:
            raise UsageError(f"{self.kind}: aim it at one node, not {list(self.target.brokers)}")
        node_id = self.target.brokers[0]
        if Capability.CONTROLLER_QUORUM in capabilities_of(cluster):
            voters = cast(ControllerQuorumControl, cluster).controller_ids
            if node_id in voters:
                if len(voters) > 1:
                    raise UsageError(
                        f"{self.kind}: a clock fault on a voter of a {len(voters)}-voter quorum is not modelled "
                        f"(KafkaRaftClient's fetch and check-quorum timers run on the wall clock: an election "
                        f"may follow); use a single controller")
                return ClockNode("controller", node_id)
        return ClockNode("broker", node_id)

    def _zookeeper_server(self, env: FaultEnv) -> int:
        if isinstance(self.zookeeper, int):
            return self.zookeeper
        if Capability.ZOOKEEPER_ENSEMBLE in capabilities_of(env.cluster):
            leader = cast(ZooKeeperEnsembleControl, env.cluster).zookeeper_leader()
            if leader is None:
                raise HarnessError(f"{self.kind}: the ZooKeeper ensemble has no leader now")
            return leader
        return 1  # a lone server

    def _clock(self, env: FaultEnv) -> ClockController:
        return cast(ClockController, require_capability(env, Capability.CLOCK_CONTROL, self.kind))

    def _node_of(self, env: FaultEnv) -> ClockNode:
        if self._node is None:
            self._node = self._resolve(env)
        return self._node

    def inject(self, env: FaultEnv) -> None:
        node = self._node_of(env)
        offset_s, rate = self.setting()
        self._clock(env).set_clock(node.role, node.node_id, offset_s=offset_s, rate=rate)
        hold = max(FELT_WITHIN_S, self.hold_s)
        log.info("%s on %s: %s; holding %.0f s before the step looks", self.kind, node, self.describe(), hold)
        time.sleep(hold)

    def heal(self, env: FaultEnv) -> None:
        node = self._node
        if node is not None and Capability.CLOCK_CONTROL in capabilities_of(env.cluster):
            cast(ClockController, env.cluster).set_clock(node.role, node.node_id)

    def setting(self) -> tuple[float, float]:
        """(offset_s, rate) the node's clock gets."""
        raise NotImplementedError

    def describe(self) -> str:
        offset_s, rate = self.setting()
        if self.healing:
            return "back on the host's clock"
        return f"{offset_s:+g} s" if rate == 1.0 else f"running at x{rate:g}"


@register_fault
@dataclass
class ClockJump(_ClockFault):
    """Jump one node's wall clock by ``seconds`` (+ ahead, - back) until healed (``variant:
    heal``: back on the host's clock, itself a jump the other way); its monotonic clock stays."""

    kind: ClassVar[str] = CLOCK_JUMP
    seconds: float = 0.0

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ClockJump:
        reject_unknown_options(CLOCK_JUMP, options, ("seconds", "variant", "zookeeper", "hold_s"))
        healing = _variant(options, CLOCK_JUMP, "jump")
        seconds = 0.0 if healing else _number(options, "seconds", CLOCK_JUMP)
        if not healing and not (0 < abs(seconds) <= MAX_JUMP_S):
            raise UsageError(f"{CLOCK_JUMP}: 'seconds' must be non-zero and within ±{MAX_JUMP_S:.0f}, not {seconds:g}")
        return cls(target, healing=healing, zookeeper=_zookeeper_option(options, CLOCK_JUMP),
                   hold_s=_hold(options, CLOCK_JUMP), seconds=seconds)

    @property
    def label(self) -> str:
        return f"{CLOCK_JUMP}/heal" if self.healing else f"{CLOCK_JUMP}/{'ahead' if self.seconds > 0 else 'back'}"

    def setting(self) -> tuple[float, float]:
        return (0.0, 1.0) if self.healing else (self.seconds, 1.0)


@register_fault
@dataclass
class ClockDrift(_ClockFault):
    """Make one node's wall clock run at ``rate`` times the host's (1.5: 50 % fast) from now until
    healed (``variant: heal``: back on the host's clock, a jump back by what it gained)."""

    kind: ClassVar[str] = CLOCK_DRIFT
    rate: float = 1.0

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ClockDrift:
        reject_unknown_options(CLOCK_DRIFT, options, ("rate", "variant", "zookeeper", "hold_s"))
        healing = _variant(options, CLOCK_DRIFT, "drift")
        rate = 1.0 if healing else _number(options, "rate", CLOCK_DRIFT)
        if not healing and not (0 < rate <= MAX_RATE and rate != 1.0):
            raise UsageError(f"{CLOCK_DRIFT}: 'rate' must lie in (0, {MAX_RATE:g}] and differ from 1, not {rate:g}")
        return cls(target, healing=healing, zookeeper=_zookeeper_option(options, CLOCK_DRIFT),
                   hold_s=_hold(options, CLOCK_DRIFT), rate=rate)

    @property
    def label(self) -> str:
        return f"{CLOCK_DRIFT}/heal" if self.healing else CLOCK_DRIFT

    def setting(self) -> tuple[float, float]:
        return (0.0, 1.0) if self.healing else (0.0, self.rate)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# What a generated step may do to a clock: jumps either way across replica.lag.time.max.ms (30 s
# on test clusters) and below it, and a fast and a slow clock; one clock off at a time, healed by
# a later step. Opt-in: a schedule that may draw it runs on fake clocks (a cluster of its own).
GENERATED_JUMPS_S = (-45, -5, 5, 60)
GENERATED_RATES = (0.5, 1.5)


def _clock_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """One named broker's clock off at a time (it stays live and free: other faults may hit it);
    a heal names that broker with the same kind. ZooKeeper servers and controllers are for
    schedules written by hand."""
    if "zookeeper" in step.options:
        raise IllegalStep(f"{step.fault} on a ZooKeeper server is not generated")
    if target is None or len(target) != 1:
        raise IllegalStep(f"{step.fault} acts on one named broker")
    if step.options.get("variant") == "heal":
        if model.clocks.get(target[0]) != step.fault:
            raise IllegalStep(f"{step.fault} heal of broker {target[0]}: its clock is not off by {step.fault}")
        if target[0] not in model.free:
            # The nemesis refuses any step naming a broker another fault holds (a power failure
            # until its start): `explore --mode kraft --seed 7732` on 3.9.2, a clock jump of 8,
            # a power failure of 8, then the jump's heal, refused.
            raise IllegalStep(f"{step.fault} heal of broker {target[0]}: not live, or held by another fault")
        del model.clocks[target[0]]
        return
    if model.clocks:
        raise IllegalStep(f"{step.fault} while broker {next(iter(model.clocks))}'s clock is off")
    hit = model.need_free(step.fault, target, downs=False)
    model.clocks[hit[0]] = step.fault


def _candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        off = [b for b, k in sorted(model.clocks.items()) if k == kind]
        if off:  # healed once no other fault holds the broker
            return [Step(kind, Brokers((off[0],)), {"variant": "heal"})] if off[0] in model.free else []
        if model.clocks or model.unknown_down or not model.free:
            return []
        broker = draw.rng.choice(model.free)
        options: dict[str, Any] = ({"seconds": draw.rng.choice(GENERATED_JUMPS_S)} if kind == CLOCK_JUMP
                                   else {"rate": draw.rng.choice(GENERATED_RATES)})
        return [Step(kind, Brokers((broker,)), options)]
    return candidates


register_generator(GeneratorSide(CLOCK_JUMP, 1, _clock_rule, _candidates(CLOCK_JUMP), opt_in=True))
register_generator(GeneratorSide(CLOCK_DRIFT, 1, _clock_rule, _candidates(CLOCK_DRIFT), opt_in=True))

__all__ = ["CLOCK_DRIFT", "CLOCK_JUMP", "ClockDrift", "ClockJump", "ClockNode"]

"""Network partitions: cut a broker off from ZooKeeper, its peers, or everyone, and heal.

They need the ``network_partition`` capability (``harness.cluster.NetworkPartitioner``: the
containers launcher gives each broker its own network namespace); elsewhere the suites leave
the scenarios out, and injecting one anyway is a one-line error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, NetworkPartitioner
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, Event
from kafka_chaos.scenarios.faults.base import ZOOKEEPER_ONLY, Fault, FaultBase, FaultEnv, StepTopics, register_fault, require_capability
from kafka_chaos.scenarios.model.isr_rules import LEADER_ISR_EXPAND, LEADER_ISR_REJOIN, LEADER_ISR_SHRINK
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.ledger import DETECTED_BY_TIMEOUT, PLAIN, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, Target

# What a variant cuts the broker off from, as ``isolate`` keyword arguments. "everyone"
# includes the clients on the host.
CUTS: Mapping[str, Mapping[str, bool]] = {
    "everyone": {"from_zookeeper": True, "from_brokers": True, "from_clients": True},
    "zookeeper": {"from_zookeeper": True, "from_brokers": False, "from_clients": False},
    "peers": {"from_zookeeper": False, "from_brokers": True, "from_clients": False},
}
HEAL = "heal"
PARTITION_VARIANTS = (*CUTS, HEAL)
KIND = "network_partition"
_NETWORK = frozenset({Capability.NETWORK_PARTITION})


def _cut_loses_session(variant: str) -> bool:
    """Cut from ZooKeeper (alone or with everyone else) the broker's session expires: the
    controller sees ``onBrokerFailure`` (and ``onBrokerStartup`` once healed). Cut from its peers
    only, the session lives and the controller sees nothing."""
    return bool(CUTS[variant]["from_zookeeper"])


@dataclass
class _NetworkFault(FaultBase):
    kind: ClassVar[str] = KIND
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's
    requires: ClassVar[frozenset[Capability]] = _NETWORK
    client_windows: ClassVar[bool] = True


@dataclass
class NetworkPartition(_NetworkFault):
    """Cut the target broker(s) off from ZooKeeper, its peers, or everyone (DROP both ways)
    until healed — by a later ``heal`` step or at teardown.

    Oracle events: cut from ZooKeeper (or everyone) → ``BrokerFailure`` once the session
    expires (the broker keeps running and, cut from ZooKeeper only, keeps serving clients with
    stale metadata). Cut from peers only → none: the controller sees nothing; the leaders
    shrink the ISR themselves (:attr:`isr_rule`, checked as a documented rule, not by the
    oracle). Options: ``variant`` (``everyone``/``zookeeper``/``peers``/``heal``) and, for
    ``heal``, ``cut``: the variant being healed (built by :func:`network_fault`)."""

    variant: str = "everyone"
    _cut: bool = field(default=False, init=False)

    @property
    def label(self) -> str:
        return f"{KIND}/{self.variant}"

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def isr_rule(self) -> str | None:
        if not _cut_loses_session(self.variant):
            return LEADER_ISR_SHRINK
        # cut from ZooKeeper only: still fetching, re-added by its leaders on releases that do not
        # fence its stale leader epoch (isr_rules.rejoin_unregistered: before 2.5, KAFKA-9338)
        return LEADER_ISR_REJOIN if self.variant == "zookeeper" else None

    @property
    def waits(self) -> FaultWaits:
        # cut from ZooKeeper: nothing moves until its session expires
        return DETECTED_BY_TIMEOUT if _cut_loses_session(self.variant) else PLAIN

    def oracle_events(self) -> list[Event]:
        return [BrokerFailure(tuple(self.target.brokers))] if _cut_loses_session(self.variant) else []

    def inject(self, env: FaultEnv) -> None:
        partitioner = cast(NetworkPartitioner, require_capability(env, Capability.NETWORK_PARTITION, self.label))
        self._cut = True  # set first: a half-made cut is healed too
        for b in self.target.brokers:
            partitioner.isolate(b, **CUTS[self.variant])

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            cast(NetworkPartitioner, require_capability(env, Capability.NETWORK_PARTITION, self.label)).heal_network()
            self._cut = False


@dataclass
class NetworkHeal(_NetworkFault):
    """Remove the network partition of an earlier step (``heal_network`` removes every cut the
    cluster made; idempotent). ``healed`` names the variant being healed, which decides the
    oracle events: a broker whose session expired re-registers → ``BrokerStartup``; a follower
    that was cut from its peers only catches up and the leaders add it back (:attr:`isr_rule`).
    Built by :func:`network_fault` for ``variant: heal``."""

    healed: str = "everyone"

    @property
    def label(self) -> str:
        return f"{KIND}/{HEAL}"

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def isr_rule(self) -> str | None:
        return None if _cut_loses_session(self.healed) else LEADER_ISR_EXPAND

    def oracle_events(self) -> list[Event]:
        return [BrokerStartup(tuple(self.target.brokers))] if _cut_loses_session(self.healed) else []

    def inject(self, env: FaultEnv) -> None:
        cast(NetworkPartitioner, require_capability(env, Capability.NETWORK_PARTITION, self.label)).heal_network()


def network_fault(target: Target, options: Mapping[str, Any], topics: StepTopics) -> Fault:
    """One kind, two classes: ``variant`` ``heal`` (with ``cut``, the variant healed) builds a
    :class:`NetworkHeal`, any other variant a :class:`NetworkPartition`."""
    variant = options.get("variant")
    if not isinstance(variant, str) or variant not in PARTITION_VARIANTS:
        raise UsageError(f"{KIND}: 'variant' must be one of {PARTITION_VARIANTS}, not {variant!r}")
    if variant != HEAL:
        return NetworkPartition(target, variant)
    healed = options.get("cut")
    if not isinstance(healed, str) or healed not in CUTS:
        raise UsageError(f"{KIND} heal: 'cut' (the variant being healed) must be one of "
                         f"{tuple(CUTS)}, not {healed!r}")
    return NetworkHeal(target, healed)


register_fault(NetworkPartition, build=network_fault)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# What a generated cut may cut: from peers only would need a short replica.lag.time.max.ms, which
# makes a cut from everyone nondeterministic.
GENERATED_CUTS = ("zookeeper", "everyone")


def _network(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    variant = step.options.get("variant")
    if variant == HEAL:
        if target is None or not target or any(model.cut.get(b) != step.options.get("cut") for b in target):
            raise IllegalStep(f"heal of {target}: not cut that way")
        for b in target:
            del model.cut[b]
        return
    if model.delayed:  # one heal_network undoes both: the model could not say what is left
        raise IllegalStep("a cut while links are delayed")
    hit = model.need_free(step.fault, target, downs=True)
    for b in hit:
        model.cut[b] = str(variant)


def _network_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.cut:
        b, variant = draw.rng.choice(sorted(model.cut.items()))
        return [Step(KIND, Brokers((b,)), {"variant": HEAL, "cut": variant})]
    free, spare = model.drawable()
    if free and spare >= 1 and not model.unknown_down and not model.delayed:
        return [Step(KIND, Brokers((draw.rng.choice(free),)), {"variant": draw.rng.choice(GENERATED_CUTS)})]
    return []


register_generator(GeneratorSide(KIND, 2, _network, _network_candidates, opt_in=True))

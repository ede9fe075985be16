"""Degraded links: lose a percentage of a broker's packets to ZooKeeper, its peers or clients,
and/or limit their bandwidth, until healed (``harness.cluster.NetworkDegrader``; local launcher
as root: iptables ``statistic`` drops and an HTB class on lo, docs/local-network.md).

Whether a degradation crosses a threshold is the scenario's claim, stated in the ``expect``
option and then checked:

* ``session_expiry`` — the broker's ZooKeeper link is bad enough that its client hears nothing
  for 2/3 of the session and cannot re-establish it in time (ZooKeeper 3.8 ``ClientCnxn``
  readTimeout): the session expires → ``BrokerFailure`` (oracle); healed → ``BrokerStartup``;
* ``isr_shrink`` — a follower's replication links are bad enough that it does not catch up for
  ``replica.lag.time.max.ms``: the leaders shrink the ISR (Kafka 3.9
  ``Partition.maybeShrinkIsr``/``getOutOfSyncReplicas``; documented rule
  ``rule_leader_isr_shrink``); healed → ``rule_leader_isr_expand``;
* ``nothing`` — below both thresholds: no event, leaders, ISRs and epochs unchanged, observed
  one session window after the fault.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, ChaosCluster, NetworkDegrader, NetworkHealer
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, Event
from kafka_chaos.scenarios.faults.base import ZOOKEEPER_ONLY, FaultBase, FaultEnv, StepTopics, register_fault, require_capability
from kafka_chaos.scenarios.faults.zookeeper import session_window_s
from kafka_chaos.scenarios.model.isr_rules import LEADER_ISR_EXPAND, LEADER_ISR_SHRINK
from kafka_chaos.scenarios.model.targets import Target

KIND = "network_degrade"
LINKS: Mapping[str, Mapping[str, bool]] = {
    "zookeeper": {"to_zookeeper": True, "to_brokers": False, "to_clients": False},
    "peers": {"to_zookeeper": False, "to_brokers": True, "to_clients": False},
    "clients": {"to_zookeeper": False, "to_brokers": False, "to_clients": True},
    "everyone": {"to_zookeeper": True, "to_brokers": True, "to_clients": True},
}
EXPECTS = ("nothing", "isr_shrink", "session_expiry")


def _number(options: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise UsageError(f"{KIND}: {name!r} must be a number in [{low:g}, {high:g}], not {value!r}")
    return float(value)


class LinkFault(FaultBase):
    """What the link faults (:class:`NetworkDegrade`, ``scenarios.faults.delay.NetworkDelay``)
    share: a step that worsens the target broker's links and a ``variant: heal`` step that
    undoes them (``heal_network``). With an ``expect`` other than ``nothing`` the broker stays
    held until the heal; with ``session_expiry`` the oracle sees its failure, and at the heal its
    startup. With ``nothing`` the step holds one session window, so a threshold crossed after
    all would show. Subclasses are dataclasses with ``expect`` and ``healing`` fields."""

    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's
    expect: str
    healing: bool
    link_capability: ClassVar[Capability]

    @property
    def holds(self) -> tuple[int, ...]:
        return () if self.healing or self.expect == "nothing" else self.target.brokers

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers if self.healing else ()

    @property
    def isr_rule(self) -> str | None:
        """``isr_shrink``: the leaders drop the follower (and add it back at the heal)."""
        if self.expect != "isr_shrink":
            return None
        return LEADER_ISR_EXPAND if self.healing else LEADER_ISR_SHRINK

    def oracle_events(self) -> list[Event]:
        if self.expect != "session_expiry":
            return []
        brokers = tuple(self.target.brokers)
        return [BrokerStartup(brokers)] if self.healing else [BrokerFailure(brokers)]

    def inject(self, env: FaultEnv) -> None:
        cluster = require_capability(env, self.link_capability, self.label)
        if self.healing:
            cast(NetworkHealer, cluster).heal_network()
            return
        for broker in self.target.brokers:
            self.worsen(cluster, broker)
        if self.expect == "nothing":
            time.sleep(session_window_s(env))  # a threshold crossed after all would show by now

    def heal(self, env: FaultEnv) -> None:
        if not self.healing:
            cast(NetworkHealer, env.cluster).heal_network()

    def worsen(self, cluster: ChaosCluster, broker: int) -> None:
        raise NotImplementedError


@register_fault
@dataclass
class NetworkDegrade(LinkFault):
    """Lose ``loss_pct`` % of the target broker's packets on its ``links`` (``zookeeper``,
    ``peers``, ``clients``, ``everyone``) and/or limit them to ``rate_kbit``; ``variant: heal``
    removes it. ``expect`` states which threshold the degradation crosses (``nothing``,
    ``isr_shrink``, ``session_expiry``) and so the oracle events / ISR rule it is checked
    against."""

    kind: ClassVar[str] = KIND
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.NETWORK_DEGRADE,
                                                           Capability.NETWORK_PARTITION})
    link_capability: ClassVar[Capability] = Capability.NETWORK_DEGRADE
    client_windows: ClassVar[bool] = True
    links: str = "peers"
    loss_pct: float = 0.0
    rate_kbit: int | None = None
    expect: str = "nothing"
    healing: bool = False

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> NetworkDegrade:
        links = options.get("links", "peers")
        if links not in LINKS:
            raise UsageError(f"{KIND}: 'links' must be one of {tuple(LINKS)}, not {links!r}")
        expect = options.get("expect", "nothing")
        if expect not in EXPECTS:
            raise UsageError(f"{KIND}: 'expect' must be one of {EXPECTS}, not {expect!r}")
        healing = options.get("variant", "degrade") == "heal"
        if options.get("variant", "degrade") not in ("degrade", "heal"):
            raise UsageError(f"{KIND}: 'variant' must be 'degrade' or 'heal', not {options.get('variant')!r}")
        loss = _number(options, "loss_pct", 0, 100) or 0.0
        rate = _number(options, "rate_kbit", 8, 10_000_000)
        if not healing and loss <= 0 and rate is None:
            raise UsageError(f"{KIND}: give 'loss_pct' and/or 'rate_kbit'")
        return cls(target, str(links), loss, int(rate) if rate is not None else None, str(expect), healing)

    @property
    def label(self) -> str:
        return f"{KIND}/heal" if self.healing else f"{KIND}/{self.links}"

    def worsen(self, cluster: ChaosCluster, broker: int) -> None:
        cast(NetworkDegrader, cluster).degrade(broker, loss_pct=self.loss_pct, rate_kbit=self.rate_kbit, **LINKS[self.links])

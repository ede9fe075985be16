"""Delayed links: a broker's links to ZooKeeper, its peers and/or clients slowed by ``delay_ms`` ±
``jitter_ms`` each way (order kept), until healed (``harness.cluster.LinkDelayer``; the local
launcher's link proxies, :mod:`harness.link_proxy` — no netem on this kernel; ZooKeeper links
need no root, peer and client links are redirected to the proxy by nat rules as root,
docs/local-network.md).

Whether the delay crosses a threshold is the scenario's claim (``expect``), then checked:

``session_expiry`` (``to: zookeeper``).  Whether and when a one-way delay on every ZooKeeper link
of the broker expires its session is R5 (docs/zookeeper-faults.md), derived from ZooKeeper 3.8's
``ClientCnxn.SendThread.run`` once, in :func:`scenarios.model.zk_delay_rule.predict`.  Expiry:
``/brokers/ids/N`` vanishes → the controller's ``onBrokerFailure`` (oracle ``BrokerFailure``);
after the heal the broker reads ``Expired`` and re-registers (``BrokerStartup``).
:meth:`NetworkDelay.prepare` refuses a claim R5 refutes for the cluster's session, tick and
servers.

``isr_shrink`` (``to: peers``, a follower).  Kafka 3.9 ``Replica.updateFetchStateOrThrow``: a
fetch at the leader asking for the leader's log end is caught up now; one asking for the log end
as of the previous fetch t_{k-1} is caught up as of t_{k-1}; ``Partition.getOutOfSyncReplicas``
(``isReplicaOutOfSync``, every ``replica.lag.time.max.ms / 2`` by ``maybeShrinkIsr``) drops it
once ``now - lastCaughtUpTimeMs > replica.lag.time.max.ms`` while the leader's log end moved.
With a one-way delay D on the follower's peer links its fetches are a round trip 2D apart: the
lag reaches ≈ 4D under arbitrary traffic, but ≈ 2D under one ``acks=all`` producer (the
broker reads a connection's next request only after answering the previous one,
``SocketServer.Processor``, and the answer waits for the follower's fetch, so the leader's log
moves in step with the fetches), which is the harness's workload: the ISR shrinks once 2D
exceeds ``replica.lag.time.max.ms``, never below D = lag / 4 (measured: docs/local-network.md;
documented rule ``rule_leader_isr_shrink``; healed, ``Partition.maybeExpandIsr`` adds it back,
``rule_leader_isr_expand``).  Peer links include the controller's channel to the follower,
which only makes its LeaderAndIsr late.

``nothing``: below the thresholds — no event, observed one session window after the fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.oracle import ClusterState
from kafka_chaos.harness.cluster import Capability, ChaosCluster, LinkDelayer
from kafka_chaos.scenarios.faults.base import FaultEnv, StepTopics, register_fault
from kafka_chaos.scenarios.faults.degrade import LINKS, LinkFault
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, Target
from kafka_chaos.scenarios.model.zk_delay_rule import ZkTiming, refuted_claim

KIND = "network_delay"
EXPECTS = ("nothing", "session_expiry", "isr_shrink")
TO = tuple(LINKS)  # zookeeper, peers, clients, everyone
MAX_DELAY_MS = 60_000


def _milliseconds(options: Mapping[str, Any], name: str) -> float:
    value = options.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_DELAY_MS:
        raise UsageError(f"{KIND}: {name!r} must be milliseconds in [0, {MAX_DELAY_MS}], not {value!r}")
    return float(value)


def delay_arguments(to: str) -> dict[str, bool]:
    """``to`` (zookeeper, peers, clients, everyone) as ``LinkDelayer.delay_links`` arguments."""
    if to not in LINKS:
        raise UsageError(f"{KIND}: 'to' must be one of {TO}, not {to!r}")
    return dict(LINKS[to])


@register_fault
@dataclass
class NetworkDelay(LinkFault):
    """Delay both directions of the target broker's links (``to``: ``zookeeper``, ``peers``,
    ``clients``, ``everyone``) by ``delay_ms`` ± ``jitter_ms``; ``variant: heal`` removes it.
    ``expect`` states which threshold the delay crosses (``nothing``, ``session_expiry``,
    ``isr_shrink``) and so the oracle events / ISR rule it is checked against."""

    kind: ClassVar[str] = KIND
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.LINK_DELAY})
    link_capability: ClassVar[Capability] = Capability.LINK_DELAY
    client_windows: ClassVar[bool] = True
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    expect: str = "nothing"
    healing: bool = False
    to: str = "zookeeper"

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> NetworkDelay:
        variant = options.get("variant", "delay")
        if variant not in ("delay", "heal"):
            raise UsageError(f"{KIND}: 'variant' must be 'delay' or 'heal', not {variant!r}")
        to = str(options.get("to", "zookeeper"))
        delay_arguments(to)
        expect = options.get("expect", "nothing")
        if expect not in EXPECTS:
            raise UsageError(f"{KIND}: 'expect' must be one of {EXPECTS}, not {expect!r}")
        healing = variant == "heal"
        if not healing and expect == "session_expiry" and not LINKS[to]["to_zookeeper"]:
            raise UsageError(f"{KIND}: 'expect: session_expiry' needs the ZooKeeper links delayed, not 'to: {to}'")
        if not healing and expect == "isr_shrink" and not LINKS[to]["to_brokers"]:
            raise UsageError(f"{KIND}: 'expect: isr_shrink' needs the peer links delayed, not 'to: {to}'")
        delay, jitter = _milliseconds(options, "delay_ms"), _milliseconds(options, "jitter_ms")
        if not healing and delay <= 0:
            raise UsageError(f"{KIND}: give 'delay_ms' > 0")
        return cls(target, delay, jitter, str(expect), healing, to)

    @property
    def label(self) -> str:
        return f"{KIND}/heal" if self.healing else f"{KIND}/{self.to}"

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        """Before the oracle is asked: a ``session_expiry``/``nothing`` claim on the ZooKeeper
        links that R5 refutes for this cluster's session, tick and servers is a schedule error."""
        if self.healing or not LINKS[self.to]["to_zookeeper"]:  # zookeeper and everyone
            return
        servers = len(str(env.cluster.zookeeper_connect).split(","))
        timing = ZkTiming(env.session_timeout_ms, env.tick_time_ms, servers)
        problem = refuted_claim(self.expect, self.delay_ms, self.jitter_ms, timing)
        if problem is not None:
            raise UsageError(f"{KIND}: {problem}")

    def worsen(self, cluster: ChaosCluster, broker: int) -> None:
        cast(LinkDelayer, cluster).delay_links(broker, delay_ms=self.delay_ms, jitter_ms=self.jitter_ms, **delay_arguments(self.to))


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# Delays a generated step may add (links, one-way ms, ± jitter ms), each well below every
# threshold, so the oracle's answer is "no event" whatever else the schedule does: a ZooKeeper
# round trip of ~0.6 s against the 4 s readTimeout of a 6 s session (docs/zookeeper-faults.md R5;
# also slow enough for a delayed controller's ZooKeeper writes to settle within the step's
# bounded waits), a follower's lag of ~4 × 250 ms against replica.lag.time.max.ms.  A schedule
# that may delay links runs with link proxies.
GENERATED_DELAYS: tuple[tuple[str, int, int], ...] = (
    ("zookeeper", 300, 100), ("peers", 200, 50), ("clients", 200, 50), ("everyone", 200, 50))
DELAY_LINKS = tuple(links for links, _, _ in GENERATED_DELAYS)


def _delay(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Delay one free broker's links below every threshold (it is not held: later steps may
    kill, pause or restart it), or heal them.  Never with a cut: ``heal_network`` heals both."""
    if step.options.get("variant") == "heal":
        if target is None or len(target) != 1 or target[0] not in model.delayed:
            raise IllegalStep(f"heal of {target}: no delayed links there")
        del model.delayed[target[0]]
        return
    if target is None or len(target) != 1:
        raise IllegalStep("network_delay acts on one named broker")
    if model.delayed or model.cut:
        raise IllegalStep("network_delay while links are delayed or cut")
    if step.options.get("expect", "nothing") != "nothing":
        raise IllegalStep("a generated network_delay stays below every threshold (expect: nothing)")
    hit = model.need_free(step.fault, target, downs=False)
    model.delayed[hit[0]] = str(step.options.get("to", "zookeeper"))


def _delay_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.delayed:
        return [Step(KIND, Brokers((draw.rng.choice(sorted(model.delayed)),)), {"variant": "heal"})]
    delays = [d for d in GENERATED_DELAYS if d[0] in draw.delay_links]
    if not delays or model.cut or model.unknown_down or not model.free:
        return []
    links, delay_ms, jitter_ms = draw.rng.choice(delays)
    return [Step(KIND, Brokers((draw.rng.choice(model.free),)),
                 {"to": links, "delay_ms": delay_ms, "jitter_ms": jitter_ms, "expect": "nothing"})]


register_generator(GeneratorSide(KIND, 1, _delay, _delay_candidates, opt_in=True, link_proxies=True))

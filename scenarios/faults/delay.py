"""Delayed links: a broker's ZooKeeper links slowed by ``delay_ms`` ± ``jitter_ms`` each way
(order kept), until healed (``harness.cluster.LinkDelayer``; the local launcher's link proxies,
:mod:`harness.link_proxy` — no root, no netem).

Whether the delay crosses the session-expiry threshold is the scenario's claim (``expect``),
then checked.  The threshold, from ZooKeeper 3.8 ``ClientCnxn.SendThread.run`` with a one-way
delay D on every link of the broker (docs/zookeeper-faults.md, "R5"):

the session lives while the server hears from the client at least once per session timeout
(:func:`scenarios.zk_delay_rule.predict`, where the derivation is).  A non-controller broker's
idle client pings every ``readTimeout/2 = session/3`` (2 s of our 6 s), so the first ping sent
after the onset reaches the server ``session/3 + D`` after the last undelayed one: from ``D ≥
2/3 × session`` (+ up to one tick, by the server's expiry buckets) the session expires 4–6.5 s
after the onset.  Below that it survives the onset; the client gives up connections (Kafka 3.9's
``ZooKeeperClient`` ignores ``Disconnected``) and, with one server, once ``2D ≥ connectTimeout
= session`` no reconnect completes and its ConnectRequests arrive > 7 s apart: the session
expires ~``D + 9`` to ``D + 12.6`` s after the onset.  Expiry: ``/brokers/ids/N`` vanishes → the
controller's ``onBrokerFailure`` (oracle ``BrokerFailure``); after the heal the broker reads
``Expired`` and re-registers (``BrokerStartup``).  :meth:`NetworkDelay.prepare` refuses a claim
R5 refutes for the cluster's session, tick and servers.

``expect``: ``nothing`` (no event, observed one session window after the fault) or
``session_expiry``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from common.errors import UsageError
from harness.cluster import Capability
from scenarios.faults.base import FaultEnv, StepTopics, register_fault
from scenarios.faults.degrade import LinkFault
from scenarios.targets import Target
from scenarios.zk_delay_rule import ZkTiming, refuted_claim

KIND = "network_delay"
EXPECTS = ("nothing", "session_expiry")
TO = ("zookeeper",)  # peers advertise one address: a per-link proxy cannot stand in for it
MAX_DELAY_MS = 60_000


def _milliseconds(options: Mapping[str, Any], name: str) -> float:
    value = options.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_DELAY_MS:
        raise UsageError(f"{KIND}: {name!r} must be milliseconds in [0, {MAX_DELAY_MS}], not {value!r}")
    return float(value)


@register_fault
@dataclass
class NetworkDelay(LinkFault):
    """Delay both directions of the target broker's ZooKeeper links by ``delay_ms`` ±
    ``jitter_ms`` (``to: zookeeper``); ``variant: heal`` removes it. ``expect`` states whether the
    session expires (``nothing``, ``session_expiry``) and so the oracle events it is checked
    against."""

    kind: ClassVar[str] = KIND
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.LINK_DELAY})
    link_capability: ClassVar[Capability] = Capability.LINK_DELAY
    client_windows: ClassVar[bool] = True
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    expect: str = "nothing"
    healing: bool = False

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> NetworkDelay:
        variant = options.get("variant", "delay")
        if variant not in ("delay", "heal"):
            raise UsageError(f"{KIND}: 'variant' must be 'delay' or 'heal', not {variant!r}")
        to = options.get("to", "zookeeper")
        if to not in TO:
            raise UsageError(f"{KIND}: 'to' must be one of {TO}, not {to!r} (peer links cannot be proxied)")
        expect = options.get("expect", "nothing")
        if expect not in EXPECTS:
            raise UsageError(f"{KIND}: 'expect' must be one of {EXPECTS}, not {expect!r}")
        delay, jitter = _milliseconds(options, "delay_ms"), _milliseconds(options, "jitter_ms")
        healing = variant == "heal"
        if not healing and delay <= 0:
            raise UsageError(f"{KIND}: give 'delay_ms' > 0")
        return cls(target, delay, jitter, str(expect), healing)

    @property
    def label(self) -> str:
        return f"{KIND}/heal" if self.healing else f"{KIND}/zookeeper"

    def prepare(self, env: FaultEnv, state: Any) -> None:
        """Before the oracle is asked: a ``session_expiry``/``nothing`` claim on the ZooKeeper
        links that R5 refutes for this cluster's session, tick and servers is a schedule error."""
        if self.healing or self.label != f"{KIND}/zookeeper":
            return
        servers = len(str(env.cluster.zookeeper_connect).split(","))
        timing = ZkTiming(env.session_timeout_ms, env.tick_time_ms, servers)
        problem = refuted_claim(self.expect, self.delay_ms, self.jitter_ms, timing)
        if problem is not None:
            raise UsageError(f"{KIND}: {problem}")

    def worsen(self, cluster: Any, broker: int) -> None:
        cluster.delay_links(broker, delay_ms=self.delay_ms, jitter_ms=self.jitter_ms)

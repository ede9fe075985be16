"""Delayed links: a broker's ZooKeeper links slowed by ``delay_ms`` ± ``jitter_ms`` each way
(order kept), until healed (``harness.cluster.LinkDelayer``; the local launcher's link proxies,
:mod:`harness.link_proxy` — no root, no netem).

Whether the delay crosses the session-expiry threshold is the scenario's claim (``expect``),
then checked.  The threshold, from ZooKeeper 3.8 ``ClientCnxn.SendThread.run`` with a one-way
delay D on every link of the broker (docs/zookeeper-faults.md, "R5"):

* the client pings after ``readTimeout/2 - 1 s`` of send silence (1 s of our 6 s session) and
  gives up on a connection after ``readTimeout = 2/3 × session`` (4 s) without a byte: a reply
  2D late drops the connection once D ≳ 1.5 s, and the client reconnects;
* a reconnect waits ``connectTimeout = session / servers`` (6 s with one server) for the
  ConnectResponse; while 2D < connectTimeout it gets one and its ConnectRequest — like every
  ping, which the server receives D late but at the same rate — keeps touching the session on
  the server (``SessionTrackerImpl.touchSession``): the session lives (the client may flap
  Disconnected/SyncConnected, which Kafka 3.9's ``ZooKeeperClient`` ignores);
* once 2D ≥ connectTimeout no reconnect completes, the server hears only a ConnectRequest per
  connectTimeout + up to 1 s of back-off, more than the session timeout apart, and expires the
  session: ``/brokers/ids/N`` vanishes → the controller's ``onBrokerFailure`` (oracle
  ``BrokerFailure``).  The broker learns ``Expired`` only after the heal and re-registers
  (``BrokerStartup``).

``expect``: ``nothing`` (no event, observed one session window after the fault) or
``session_expiry``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from common.errors import UsageError
from harness.cluster import Capability
from scenarios.faults.base import StepTopics, register_fault
from scenarios.faults.degrade import LinkFault
from scenarios.targets import Target

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

    def worsen(self, cluster: Any, broker: int) -> None:
        cluster.delay_links(broker, delay_ms=self.delay_ms, jitter_ms=self.jitter_ms)

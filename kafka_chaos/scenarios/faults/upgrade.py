"""Rolling upgrades: one broker at a time moved to another Kafka release or another
``inter.broker.protocol.version``, as the Kafka upgrade notes prescribe for ZooKeeper mode
(``docs/upgrade.html``, "Upgrading from 2.x/3.x"): pin the IBP to the running release on every
broker, roll the brokers one by one onto the new binaries (controlled shutdown, new jars, start),
then raise the IBP and roll again. Faults between the rolls are other steps of the schedule.

Needs the ``broker_releases`` capability (``harness.cluster.ReleaseRoller``: the local launcher).
The oracle sees a restart (a controlled shutdown, then a startup); which release's rules it
applies follows the controller's broker (``scenarios.run.step``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, ReleaseRoller
from kafka_chaos.harness.distribution import check_zookeeper_version
from kafka_chaos.oracle import BrokerStartup, ControlledShutdown, Event
from kafka_chaos.oracle.release import INTER_BROKER_PROTOCOL_VERSION
from kafka_chaos.scenarios.faults.base import ZOOKEEPER_ONLY, FaultBase, FaultEnv, StepTopics, register_fault, require_capability
from kafka_chaos.scenarios.model.ledger import STARTS_NODES, FaultWaits
from kafka_chaos.scenarios.model.targets import Target

KIND = "roll"


@register_fault
@dataclass
class RollBroker(FaultBase):
    """Controlled shutdown, then the broker starts on release ``to`` and/or with IBP ``ibp``
    (options; at least one). Not undone at heal: an upgrade stays."""

    to: str | None = None
    ibp: str | None = None
    kind: ClassVar[str] = KIND
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES  # a restart on another release
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.BROKER_CONTROL, Capability.BROKER_RELEASES})

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> RollBroker:
        unknown = sorted(set(options) - {"to", "ibp"})
        if unknown:
            raise UsageError(f"{KIND}: unknown option(s) {', '.join(map(repr, unknown))}: 'to' and 'ibp'")
        to, ibp = options.get("to"), options.get("ibp")
        if to is None and ibp is None:
            raise UsageError(f"{KIND}: name the release to roll to ('to') or the protocol version ('ibp')")
        if to is not None and not isinstance(to, str) or ibp is not None and not isinstance(ibp, str):
            raise UsageError(f"{KIND}: 'to' and 'ibp' are strings like \"3.9.2\" and \"3.9\"")
        return cls(target, to=check_zookeeper_version(to) if to is not None else None, ibp=ibp)

    @property
    def label(self) -> str:
        return f"{KIND}/" + (f"to {self.to}" if self.to else "") + (" " if self.to and self.ibp else "") + \
            (f"ibp {self.ibp}" if self.ibp else "")

    @property
    def holds(self) -> tuple[int, ...]:
        return ()

    def oracle_events(self) -> list[Event]:
        down: list[Event] = [ControlledShutdown(b) for b in self.target.brokers]
        return down + [BrokerStartup(tuple(self.target.brokers))]

    def inject(self, env: FaultEnv) -> None:
        roller = cast(ReleaseRoller, require_capability(env, Capability.BROKER_RELEASES, self.label))
        for b in self.target.brokers:
            env.cluster.stop_broker(b)
            overrides = {INTER_BROKER_PROTOCOL_VERSION: self.ibp} if self.ibp is not None else {}
            roller.set_broker_release(b, self.to or roller.broker_version(b), overrides)
            env.cluster.start_broker(b)

    def heal(self, env: FaultEnv) -> None:
        for b in self.target.brokers:  # a roll interrupted between stop and start
            if not env.cluster.broker_running(b):
                env.cluster.start_broker(b)

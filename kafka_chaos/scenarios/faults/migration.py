"""The ZooKeeper→KRaft migration's phases as steps of a schedule (KIP-866; ``docs/ops.html``
3.9, "ZooKeeper to KRaft Migration"), so faults can be placed between and around them:

* ``migration_provision`` -- KRaft controllers formatted with the ZooKeeper cluster's id and
  started with ``zookeeper.metadata.migration.enable``; done once their driver waits for the
  brokers (``WAIT_FOR_BROKERS`` in the active controller's log);
* ``migration_roll`` (``to``: hybrid, kraft or zk) -- each target broker stopped (a controlled
  shutdown), given the phase's properties and started; when it leaves every broker in migration
  mode, the step also waits for the metadata copy (driver ``DUAL_WRITE``, the log's
  ``ZkMigrationStateRecord`` MIGRATION);
* ``migration_finalize`` -- the controllers restarted without the flag (``POST_MIGRATION``);
* ``migration_deprovision`` -- the rollback's middle: the controllers removed, ``/controller``
  and ``/migration`` deleted, so a broker becomes the ZooKeeper controller again; refused once
  finalised or while a broker still runs as a KRaft broker (the documented order).

Every phase is observed from what Kafka wrote (:mod:`harness.migration.status`), not assumed, and
the status after each step goes into the history. Each needs the ``zk_migration`` capability
(:class:`harness.cluster.MigrationControl`: the local launcher's ``--mode migration`` cluster).

The oracle sees a roll as a controlled shutdown then a startup of each broker, predicted by the
model of whichever controller is in charge before the step (ZooKeeper's, or KRaft's with the
migration's rules); provisioning changes no partition; finalising and deprovisioning are a
controller failover.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, MigrationControl
from kafka_chaos.harness.migration.properties import BROKER_ROLES, HYBRID, KRAFT, ZK
from kafka_chaos.harness.migration.status import DUAL_WRITE, POST_MIGRATION, WAIT_FOR_BROKERS, MigrationStatus
from kafka_chaos.oracle import BrokerStartup, ControlledShutdown, Event
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.scenarios.faults.base import (
    MIGRATION_ONLY,
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
from kafka_chaos.scenarios.model.ledger import PLAIN, STARTS_NODES, FaultWaits
from kafka_chaos.scenarios.model.snapshots import is_settled
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, NoTarget, Target

log = logging.getLogger(__name__)

_MIGRATION = frozenset({Capability.ZK_MIGRATION, Capability.BROKER_CONTROL})
# The driver's phases take milliseconds on a small cluster; the bound covers JVM start-up of the
# controllers and a loaded 2-core machine.
PHASE_WAIT_S = 90.0


def migration_control(env: FaultEnv, kind: str) -> MigrationControl:
    return cast(MigrationControl, require_capability(env, Capability.ZK_MIGRATION, kind))


def _copy_done(status: MigrationStatus) -> bool:
    return status.driver_state == DUAL_WRITE and status.kraft_controller_in_charge


@dataclass
class _MigrationStep(FaultBase):
    requires: ClassVar[frozenset[Capability]] = _MIGRATION
    mode_support: ClassVar[frozenset[str]] = MIGRATION_ONLY
    # provisioning, rolls and finalising start controllers or brokers and wait for them
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES


@register_fault
@dataclass
class MigrationProvision(_MigrationStep):
    """Provision the KRaft controllers with the migration on; done when their driver waits for
    the ZooKeeper brokers (``KRaftMigrationDriver`` WAIT_FOR_BROKERS)."""

    kind: ClassVar[str] = "migration_provision"

    def oracle_events(self) -> list[Event]:
        return []  # the ZooKeeper controller still decides: nothing changes

    def inject(self, env: FaultEnv) -> None:
        control = migration_control(env, self.kind)
        control.provision_controllers()
        control.wait_migration(WAIT_FOR_BROKERS, lambda s: s.driver_state == WAIT_FOR_BROKERS, PHASE_WAIT_S)


@register_fault
@dataclass
class MigrationRoll(_MigrationStep):
    """Roll the target brokers, one at a time, into the phase ``to`` (hybrid: ZooKeeper mode with
    the migration on; kraft: a KRaft broker; zk: plain ZooKeeper mode, the rollback's last roll),
    each once the one before is back in every ISR (a rolling restart: the oracle's events are
    each broker's shutdown and start, the ISRs whole in between); the roll that completes the
    hybrid phase also waits for the metadata copy."""

    to: str = HYBRID
    kind: ClassVar[str] = "migration_roll"

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> MigrationRoll:
        reject_unknown_options(cls.kind, options, ("to",))
        to = options.get("to", HYBRID)
        if to not in BROKER_ROLES:
            raise UsageError(f"{cls.kind}: 'to' is one of {', '.join(BROKER_ROLES)}, not {to!r}")
        return cls(target, to=str(to))

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.to}"

    def oracle_events(self) -> list[Event]:
        """One broker at a time: its controlled shutdown, then its start (in its new role)."""
        events: list[Event] = []
        for b in self.target.brokers:
            events += [ControlledShutdown(b), BrokerStartup((b,), kraft_brokers=(b,) if self.to == KRAFT else ())]
        return events

    def inject(self, env: FaultEnv) -> None:
        control = migration_control(env, self.kind)
        if self.to != ZK and not control.controllers_provisioned:
            raise HarnessError(f"{self.label}: no KRaft controllers are provisioned (a migration_provision step first)")
        for i, b in enumerate(self.target.brokers):
            if i:  # a rolling restart: the next broker goes down once the last one is back in every ISR
                env.observer.wait_until(lambda s: is_settled(s, None), timeout=PHASE_WAIT_S,
                                        description=f"every ISR whole again before rolling broker {b}")
            env.cluster.stop_broker(b)
            control.set_broker_role(b, self.to)
            env.cluster.start_broker(b)
        roles = {b: control.broker_role(b) for b in env.cluster.broker_ids}
        if self.to == HYBRID and set(roles.values()) == {HYBRID}:
            control.wait_migration("the metadata copy (DUAL_WRITE)", _copy_done, PHASE_WAIT_S)

    def heal(self, env: FaultEnv) -> None:
        for b in self.target.brokers:  # a roll interrupted between stop and start
            if not env.cluster.broker_running(b):
                env.cluster.start_broker(b)


@register_fault
@dataclass
class MigrationFinalize(_MigrationStep):
    """Restart the controllers without the migration flag, one at a time; done at
    POST_MIGRATION. Refused unless every broker runs as a KRaft broker (the documented order)."""

    kind: ClassVar[str] = "migration_finalize"

    def oracle_events(self) -> list[Event]:
        return [ControllerFailover()]  # the quorum restarts; no partition changes

    def inject(self, env: FaultEnv) -> None:
        control = migration_control(env, self.kind)
        not_kraft = [b for b in env.cluster.broker_ids if control.broker_role(b) != KRAFT]
        if not_kraft:
            raise HarnessError(f"{self.kind}: brokers {not_kraft} are not KRaft brokers yet; finalising now "
                               "would leave them without a controller")
        control.finalize_controllers()
        control.wait_migration("POST_MIGRATION", lambda s: s.zk_migration_state == POST_MIGRATION, PHASE_WAIT_S)


@register_fault
@dataclass
class MigrationDeprovision(_MigrationStep):
    """The rollback's middle step (ops.html 3.9, "Reverting to ZooKeeper mode During the
    Migration"): with every broker in migration mode (hybrid), remove the KRaft controllers and
    delete ``/controller`` and ``/migration`` so a broker becomes the ZooKeeper controller; the
    brokers' roll back to zk is the next step."""

    # KAFKA-20488 (every release up to 3.9.2; documented, not fixed): with the KRaft controller
    # epoch above /controller_epoch the new ZooKeeper controller refuses to elect for the
    # partitions the KRaft controller wrote. True: raise /controller_epoch first (as the updated
    # guide has operators check and work around); False: roll back as the 3.9.2 guide says.
    raise_controller_epoch: bool = True
    kind: ClassVar[str] = "migration_deprovision"
    kafka_waits: ClassVar[FaultWaits] = PLAIN  # stops the controllers, starts nothing

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> MigrationDeprovision:
        reject_unknown_options(cls.kind, options, ("raise_controller_epoch",))
        raise_epoch = options.get("raise_controller_epoch", True)
        if not isinstance(raise_epoch, bool):
            raise UsageError(f"{cls.kind}: 'raise_controller_epoch' is true or false, not {raise_epoch!r}")
        return cls(target, raise_epoch)

    @property
    def label(self) -> str:
        return self.kind if self.raise_controller_epoch else f"{self.kind}/as-documented"

    def oracle_events(self) -> list[Event]:
        return [ControllerFailover()]  # the ZooKeeper controller takes over the state as written

    def inject(self, env: FaultEnv) -> None:
        control = migration_control(env, self.kind)
        status = control.migration_status()
        if status.zk_migration_state == POST_MIGRATION:
            raise HarnessError(f"{self.kind}: the migration is finalised (POST_MIGRATION): there is no way back")
        kraft = [b for b in env.cluster.broker_ids if control.broker_role(b) == KRAFT]
        if kraft:
            raise HarnessError(f"{self.kind}: brokers {kraft} run as KRaft brokers; roll them to hybrid first "
                               "(the documented order)")
        kraft_epoch = status.kraft_controller_epoch
        control.deprovision_controllers()
        held = control.clear_migration_znodes(
            controller_epoch_above=kraft_epoch if self.raise_controller_epoch and kraft_epoch is not None else None)
        log.info("rollback: /migration held %s", held)
        env.observer.wait_until(lambda s: s.controller is not None and s.controller in env.cluster.broker_ids,
                                timeout=PHASE_WAIT_S, description="a broker elected ZooKeeper controller again")


# --- generator side (scenarios.faults.generation) ------------------------------------------------
# A migration schedule walks the phases forward (or back, before finalising) one legal step at a
# time, with the other faults of the repertoire drawn between them: each migration step needs
# every broker live and unheld (a roll waits for whole ISRs; the copy waits for every broker in
# migration mode), and the quorum's faults join once the controllers are provisioned.

_NEXT = {ZK: HYBRID, HYBRID: KRAFT}


def _everyone_up(model: ClusterModel, kind: str) -> None:
    if model.mode != "migration":
        raise IllegalStep(f"{kind} needs a migrating cluster (mode migration)")
    busy = [b for b in model.brokers if b not in model.free]
    if busy or model.unknown_down:
        raise IllegalStep(f"{kind} while brokers {busy or 'of earlier steps'} are down or held")


def _migration_rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    _everyone_up(model, step.fault)
    if step.fault == MigrationProvision.kind:
        if model.provisioned or model.finalized:
            raise IllegalStep("the controllers are provisioned already")
        model.provisioned = True
        return
    if step.fault == MigrationFinalize.kind:
        if not model.provisioned or model.finalized or any(model.role(b) != KRAFT for b in model.brokers):
            raise IllegalStep("finalising needs every broker a KRaft broker and the migration not finalised")
        model.finalized, model.controllers_down = True, 0  # every controller is restarted
        return
    if step.fault == MigrationDeprovision.kind:
        if not model.provisioned or model.finalized or any(model.role(b) != HYBRID for b in model.brokers):
            raise IllegalStep("a rollback deprovisions the controllers with every broker in migration mode")
        model.provisioned, model.controllers_down = False, 0
        return
    to = str(step.options.get("to", HYBRID))
    if not target:
        raise IllegalStep(f"{step.fault} needs named brokers")
    for b in target:
        was = model.role(b)
        forward = _NEXT.get(was) == to
        back = (was, to) in ((KRAFT, HYBRID), (HYBRID, ZK))
        if not (forward or back):
            raise IllegalStep(f"broker {b} cannot roll from {was} to {to}")
        if to == HYBRID and not model.provisioned or to == ZK and model.provisioned:
            raise IllegalStep(f"rolling to {to} {'needs' if to == HYBRID else 'comes after deprovisioning'} the controllers")
        if to == KRAFT and any(model.role(o) == ZK for o in model.brokers):
            raise IllegalStep("a broker moves to KRaft once the metadata is copied (every broker in migration mode)")
        if model.finalized:
            raise IllegalStep("after finalising every broker stays a KRaft broker")
    for b in target:
        model.roles[b] = to


def _migration_candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        if model.mode != "migration" or model.finalized or any(b not in model.free for b in model.brokers):
            return []
        roles = {b: model.role(b) for b in model.brokers}
        if kind == MigrationProvision.kind:
            return [] if model.provisioned or set(roles.values()) != {ZK} else [
                Step(kind, NoTarget("the KRaft controllers"))]
        if kind == MigrationFinalize.kind:
            return [Step(kind, NoTarget("the KRaft controllers"))] if set(roles.values()) == {KRAFT} else []
        if kind == MigrationDeprovision.kind:
            # a rollback is drawn now and then, never before a controller has led through a fault
            return [Step(kind, NoTarget("the KRaft controllers"))] if (
                model.provisioned and set(roles.values()) == {HYBRID} and draw.rng.random() < 0.3) else []
        if not model.provisioned:
            to, movable = ZK, [b for b, r in roles.items() if r == HYBRID]
        elif any(r == ZK for r in roles.values()):
            to, movable = HYBRID, [b for b, r in roles.items() if r == ZK]
        elif draw.rng.random() < 0.15 and any(r == KRAFT for r in roles.values()):
            to, movable = HYBRID, [b for b, r in roles.items() if r == KRAFT]  # on the way back
        else:
            to, movable = KRAFT, [b for b, r in roles.items() if r == HYBRID]
        if not movable:
            return []
        chosen = sorted(draw.rng.sample(movable, draw.rng.randint(1, len(movable))))
        return [Step(kind, Brokers(tuple(chosen)), {"to": to})]
    return candidates


# Opt-in: only `explore --mode migration` draws them. As heavy as all faults together, so a schedule
# of a dozen steps usually reaches dual-write or a rollback, with faults between the phases.
for _kind in (MigrationProvision.kind, MigrationRoll.kind, MigrationFinalize.kind, MigrationDeprovision.kind):
    register_generator(GeneratorSide(_kind, 25.0, _migration_rule, _migration_candidates(_kind), opt_in=True))

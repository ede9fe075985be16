"""The migration's invariants, as pure functions of what a step observed
(:mod:`scenarios.history.migration`):

* ``migration_phase`` -- each migration step reached the phase the operations guide says it
  leads to (ops.html 3.9), as Kafka reported it: provisioning → the driver waits for the brokers
  (PRE_MIGRATION); the roll completing migration mode → the copy done (MIGRATION, driver
  DUAL_WRITE); the last roll to KRaft → dual-write with KRaft brokers; finalising →
  POST_MIGRATION; deprovisioning → no KRaft controller and no ``/migration``;
* ``migration_dual_write`` -- while dual-writing, ZooKeeper's partition state equals the metadata
  log's once the write-behind caught up (leader, leader epoch, ISR, replicas), within a bound;
* ``migration_rollback_allowed`` -- a rollback starts only from a phase the guide allows it in:
  not finalised, every broker back in migration mode;
* ``leader_epochs_monotone``, ``isr_within_replicas`` -- across every step of a migrating
  cluster: a leader epoch never goes back, the ISR is a subset of the replicas (that a topic keeps
  its id is checked in every mode: :mod:`scenarios.checks.topic_ids`);
* ``migration_timeline`` -- a measurement, no verdict: the phase before and after each step, how
  long the step took and how long ZooKeeper lagged the log (the report's phase timeline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.history.migration import MigrationObserved, PartitionView, dual_write_view

TIMELINE = "migration_timeline"

# What each migration step's phase must be afterwards: (ZkMigrationState, driver state) -- None
# where any value is right. "dual-write"/"hybrid" are MigrationStatus.phase's names.
PHASE_AFTER: Mapping[str, tuple[str | None, str | None]] = {
    "migration_provision": ("PRE_MIGRATION", "WAIT_FOR_BROKERS"),
    "migration_finalize": ("POST_MIGRATION", None),
}


def expected_phase(kind: str, label: str, after: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(ZkMigrationState, driver state, phase) the step must leave the cluster in."""
    if kind in PHASE_AFTER:
        state, driver = PHASE_AFTER[kind]
        return state, driver, None
    if kind == "migration_deprovision":
        return "ZK", None, "zookeeper"
    if kind == "migration_roll":
        roles = set(dict(after.get("broker_roles") or {}).values())
        if label.endswith("/hybrid") and roles == {"hybrid"}:
            return "MIGRATION", "DUAL_WRITE", "hybrid"
        if label.endswith("/kraft") and roles == {"kraft"}:
            return "MIGRATION", "DUAL_WRITE", "dual-write"
    return None, None, None


def check_migration_phase(kind: str, label: str, after: Mapping[str, Any]) -> list[CheckResult]:
    """The phase the step leads to, as Kafka reported it after the step (nothing for a step
    that promises none: a roll that leaves brokers in two phases, a fault)."""
    state, driver, phase = expected_phase(kind, label, after)
    if state is None and driver is None and phase is None:
        return []
    got = {"zk_migration_state": after.get("zk_migration_state"), "driver_state": after.get("driver_state"),
           "phase": after.get("phase")}
    problems = [f"{name} {got[name]}, expected {want}" for name, want in
                (("zk_migration_state", state), ("driver_state", driver), ("phase", phase))
                if want is not None and got[name] != want]
    if kind == "migration_deprovision" and after.get("migration_znode") is not None:
        problems.append("/migration still exists")
    return [CheckResult("migration_phase", not problems, {"zk_migration_state": state, "driver_state": driver,
                                                          "phase": phase}, got, "; ".join(problems))]


def check_dual_write(zookeeper: ZkSnapshot | None, kraft: ZkSnapshot | None, topics: Sequence[str],
                     write_behind_s: float | None, bound_s: float) -> CheckResult:
    """ZooKeeper's partition state equals the metadata log's (leader, leader epoch, ISR,
    replicas) once the KRaft controller's write-behind caught up, within ``bound_s``."""
    if zookeeper is None or kraft is None:
        return CheckResult("migration_dual_write", None, detail="not observed")
    zk_view, kraft_view = dual_write_view(zookeeper, topics), dual_write_view(kraft, topics)

    def shown(v: PartitionView | None) -> object:
        return None if v is None else (v[0], v[1], list(v[2]), list(v[3]))

    differing = [f"{t}-{p}: ZooKeeper {shown(zk_view.get((t, p)))}, log {shown(kraft_view.get((t, p)))}"
                 for t, p in sorted(set(zk_view) | set(kraft_view)) if zk_view.get((t, p)) != kraft_view.get((t, p))]
    passed = not differing and write_behind_s is not None
    detail = ("; ".join(differing[:5]) + (f" (+{len(differing) - 5} more)" if len(differing) > 5 else "")
              + f" after {bound_s:.0f} s") if differing else ""
    return CheckResult("migration_dual_write", passed, "ZooKeeper = metadata log",
                       {"write_behind_s": None if write_behind_s is None else round(write_behind_s, 3),
                        "differing": len(differing)}, detail)


def check_rollback_allowed(before: Mapping[str, Any]) -> CheckResult:
    """ops.html 3.9 "Reverting to ZooKeeper mode": not after finalising, and (the documented order)
    every broker back in migration mode before the quorum is deprovisioned."""
    roles = dict(before.get("broker_roles") or {})
    problems = []
    if before.get("zk_migration_state") == "POST_MIGRATION":
        problems.append("the migration was finalised")
    kraft = sorted(int(b) for b, r in roles.items() if r == "kraft")
    if kraft:
        problems.append(f"brokers {kraft} still ran as KRaft brokers")
    return CheckResult("migration_rollback_allowed", not problems, "not finalised, no KRaft broker",
                       {"zk_migration_state": before.get("zk_migration_state"), "broker_roles": roles},
                       "; ".join(problems))


def check_rollback_controller_epoch(after: ZkSnapshot, topics: Sequence[str]) -> CheckResult:
    """After a rollback the ZooKeeper controller can act on every partition: no partition state znode
    carries a controller epoch above its own (``PartitionStateMachine`` 3.9 lines 385-389 refuses to
    elect for those: KAFKA-20488)."""
    epoch = after.controller_epoch
    above = [f"{t}-{p}: {s.controller_epoch}" for (t, p), s in sorted(after.partitions.items())
             if t in topics and epoch is not None and s.controller_epoch > epoch]
    return CheckResult("migration_rollback_controller_epoch", epoch is not None and not above,
                       f"partition controller epochs <= {epoch}", len(above),
                       ("written by a later controller than ZooKeeper's: " + "; ".join(above)) if above
                       else ("" if epoch is not None else "no ZooKeeper controller epoch"))


def check_leader_epochs_monotone(before: ZkSnapshot, after: ZkSnapshot, topics: Sequence[str]) -> CheckResult:
    back = [f"{t}-{p}: {b.leader_epoch} → {after.partitions[(t, p)].leader_epoch}"
            for (t, p), b in sorted(before.partitions.items())
            if t in topics and (t, p) in after.partitions and after.partitions[(t, p)].leader_epoch < b.leader_epoch]
    return CheckResult("leader_epochs_monotone", not back, "no leader epoch goes back", len(back), "; ".join(back))


def check_isr_within_replicas(after: ZkSnapshot, topics: Sequence[str]) -> CheckResult:
    outside = [f"{t}-{p}: ISR {list(s.isr)} ⊄ replicas {list(s.replicas)}"
               for (t, p), s in sorted(after.partitions.items()) if t in topics and not set(s.isr) <= set(s.replicas)]
    return CheckResult("isr_within_replicas", not outside, "ISR ⊆ replicas", len(outside), "; ".join(outside))


def migration_timeline(label: str, m: MigrationObserved, seconds: float) -> CheckResult:
    """The step's place in the migration: phase before and after (as Kafka reported them), the
    migration state and driver state after, the KRaft controller in charge, the step's
    seconds from fault to measurement, the dual-write lag."""
    observed = {"phase_before": m.before.get("phase"), "phase_after": m.after.get("phase"),
                "zk_migration_state": m.after.get("zk_migration_state"), "driver_state": m.after.get("driver_state"),
                "kraft_controller": m.after.get("kraft_controller"), "seconds": round(seconds, 3),
                "write_behind_s": None if m.write_behind_s is None else round(m.write_behind_s, 3)}
    return CheckResult(TIMELINE, None, None, observed, label, kind="measurement")

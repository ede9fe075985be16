"""The migration's invariants (scenarios.checks.migration): tables."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.scenarios.checks.migration import (
    check_dual_write,
    check_isr_within_replicas,
    check_leader_epochs_monotone,
    check_migration_phase,
    check_rollback_allowed,
    check_rollback_controller_epoch,
)


def part(leader: int = 1, epoch: int = 3, isr: tuple[int, ...] = (1, 2), replicas: tuple[int, ...] = (1, 2),
         controller_epoch: int = 2) -> PartitionZkState:
    return PartitionZkState(topic="t", partition=0, replicas=replicas, leader=leader, leader_epoch=epoch, isr=isr,
                            controller_epoch=controller_epoch, leader_recovery_state=0, version=5)


def snap(p: PartitionZkState, *, topic_id: str = "id-1", controller_epoch: int = 2) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers={1: 1, 2: 2}, controller=1, controller_epoch=controller_epoch,
                      partitions={("t", 0): p}, topic_configs={}, pending_reassignment=False,
                      pending_preferred_election=False, topic_ids={"t": topic_id})


def status(state: str, driver: str | None, roles: dict[str, str], **extra: Any) -> dict[str, Any]:
    phase = {"PRE_MIGRATION": "pre-migration", "POST_MIGRATION": "finalized", "ZK": "zookeeper"}.get(
        state, "dual-write" if set(roles.values()) == {"kraft"} else "hybrid")
    return {"zk_migration_state": state, "driver_state": driver, "phase": phase, "broker_roles": roles,
            "migration_znode": None, **extra}


@pytest.mark.parametrize(("kind", "label", "after", "passed"), [
    ("migration_provision", "migration_provision", status("PRE_MIGRATION", "WAIT_FOR_BROKERS", {"1": "zk"}), True),
    ("migration_provision", "migration_provision", status("ZK", None, {"1": "zk"}), False),
    ("migration_roll", "migration_roll/hybrid", status("MIGRATION", "DUAL_WRITE", {"1": "hybrid", "2": "hybrid"}), True),
    ("migration_roll", "migration_roll/hybrid", status("PRE_MIGRATION", "WAIT_FOR_BROKERS",
                                                       {"1": "hybrid", "2": "hybrid"}), False),
    ("migration_roll", "migration_roll/kraft", status("MIGRATION", "DUAL_WRITE", {"1": "kraft", "2": "kraft"}), True),
    ("migration_finalize", "migration_finalize", status("POST_MIGRATION", "DUAL_WRITE", {"1": "kraft"}), True),
    ("migration_finalize", "migration_finalize", status("MIGRATION", "DUAL_WRITE", {"1": "kraft"}), False),
    ("migration_deprovision", "migration_deprovision", status("ZK", None, {"1": "hybrid"}), True),
    ("migration_deprovision", "migration_deprovision",
     status("ZK", None, {"1": "hybrid"}, migration_znode={"version": 0}), False),
])
def test_each_migration_step_reaches_its_phase(kind: str, label: str, after: dict[str, Any], passed: bool) -> None:
    [result] = check_migration_phase(kind, label, after)
    assert result.passed is passed


@pytest.mark.parametrize(("kind", "label", "roles"), [
    ("migration_roll", "migration_roll/hybrid", {"1": "hybrid", "2": "zk"}),  # half-rolled: no promise
    ("hard_kill", "hard_kill", {"1": "hybrid"}),
])
def test_steps_that_promise_no_phase_are_not_checked(kind: str, label: str, roles: dict[str, str]) -> None:
    assert check_migration_phase(kind, label, status("PRE_MIGRATION", "WAIT_FOR_BROKERS", roles)) == []


@pytest.mark.parametrize(("zookeeper", "lag", "passed"), [
    (part(), 0.02, True),
    (part(isr=(1,)), None, False),  # ISR never written behind
    (part(epoch=2), None, False),
    (part(leader=2), None, False),
    (part(isr=(2, 1)), 0.0, True),  # ISR order is not state
])
def test_zookeeper_must_equal_the_log_while_dual_writing(zookeeper: PartitionZkState, lag: float | None,
                                                         passed: bool) -> None:
    result = check_dual_write(snap(zookeeper), snap(part()), ["t"], lag, 15.0)
    assert result.passed is passed
    assert check_dual_write(None, snap(part()), ["t"], None, 15.0).passed is None


@pytest.mark.parametrize(("before", "passed"), [
    ({"zk_migration_state": "MIGRATION", "broker_roles": {"1": "hybrid", "2": "hybrid"}}, True),
    ({"zk_migration_state": "MIGRATION", "broker_roles": {"1": "hybrid", "2": "kraft"}}, False),
    ({"zk_migration_state": "POST_MIGRATION", "broker_roles": {"1": "hybrid"}}, False),
])
def test_a_rollback_starts_only_where_the_guide_allows(before: dict[str, Any], passed: bool) -> None:
    assert check_rollback_allowed(before).passed is passed


@pytest.mark.parametrize(("partition_epoch", "zk_epoch", "passed"), [(3, 4, True), (4, 4, True), (5, 4, False)])
def test_after_a_rollback_no_partition_is_written_by_a_later_controller(partition_epoch: int, zk_epoch: int,
                                                                       passed: bool) -> None:
    after = snap(part(controller_epoch=partition_epoch), controller_epoch=zk_epoch)
    assert check_rollback_controller_epoch(after, ["t"]).passed is passed


def test_leader_epochs_and_isr_invariants() -> None:
    before, same = snap(part()), snap(part(epoch=4))
    assert check_leader_epochs_monotone(before, same, ["t"]).passed
    assert not check_leader_epochs_monotone(before, snap(part(epoch=2)), ["t"]).passed
    assert check_isr_within_replicas(same, ["t"]).passed
    assert not check_isr_within_replicas(snap(replace(part(), isr=(1, 3))), ["t"]).passed

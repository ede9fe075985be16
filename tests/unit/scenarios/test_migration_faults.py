"""The migration's steps as faults (scenarios.faults.migration): options, the documented order
they refuse to break, and the oracle events a roll gives -- against a fake cluster."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.migration.status import MigrationStatus
from kafka_chaos.oracle import BrokerStartup, ControlledShutdown
from kafka_chaos.scenarios.faults import FaultEnv, make_fault
from kafka_chaos.scenarios.model.targets import Target


@dataclass
class FakeMigration:
    """The MigrationControl and BrokerControl surface the steps use."""

    roles: dict[int, str] = field(default_factory=lambda: {1: "zk", 2: "zk"})
    controllers_provisioned: bool = False
    finalized: bool = False
    calls: list[str] = field(default_factory=list)
    state: int | None = None

    @staticmethod
    def capability_problems() -> dict[Capability, str]:
        return {}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.roles)

    def broker_role(self, b: int) -> str:
        return self.roles[b]

    def set_broker_role(self, b: int, role: str) -> None:
        self.calls.append(f"role {b} {role}")
        self.roles[b] = role

    def stop_broker(self, b: int) -> None:
        self.calls.append(f"stop {b}")

    def start_broker(self, b: int) -> None:
        self.calls.append(f"start {b}")

    def migration_status(self) -> MigrationStatus:
        return MigrationStatus(self.state, "DUAL_WRITE", broker_roles=dict(self.roles))

    def deprovision_controllers(self) -> None:
        self.calls.append("deprovision")

    def finalize_controllers(self) -> None:
        self.calls.append("finalize")

    @property
    def planned_controller_ids(self) -> list[int]:
        return [3000]

    def provision_controllers(self) -> None:
        self.calls.append("provision")

    def clear_migration_znodes(self, *, controller_epoch_above: int | None = None) -> dict[str, object]:
        self.calls.append(f"clear {controller_epoch_above}")
        return {}

    def wait_migration(self, predicate_name, predicate, timeout: float) -> MigrationStatus:
        return self.migration_status()


class Env:
    def __init__(self, cluster: FakeMigration) -> None:
        self.cluster = cluster


def step(kind: str, brokers: tuple[int, ...] = (), **options: object):
    return make_fault(kind, Target(brokers, "x"), options, topic_names={}, topic_partitions={})


@pytest.mark.parametrize(("kind", "options", "message"), [
    ("migration_roll", {"to": "kafka"}, "'to' is one of zk, hybrid, kraft"),
    ("migration_roll", {"too": "kraft"}, "unknown option(s) 'too': only 'to'"),
    ("migration_deprovision", {"raise_controller_epoch": "no"}, "true or false"),
])
def test_bad_options_are_one_line_each(kind: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        step(kind, (1,), **options)


def test_a_roll_is_each_brokers_shutdown_then_its_start_and_to_kraft_names_it_a_kraft_broker() -> None:
    assert step("migration_roll", (1, 2), to="kraft").oracle_events() == [
        ControlledShutdown(1), BrokerStartup((1,), kraft_brokers=(1,)),
        ControlledShutdown(2), BrokerStartup((2,), kraft_brokers=(2,))]
    assert step("migration_roll", (1,), to="hybrid").oracle_events() == [ControlledShutdown(1), BrokerStartup((1,))]
    assert step("migration_roll", (1,), to="kraft").label == "migration_roll/kraft"


def _inject(kind: str, cluster: FakeMigration, brokers: tuple[int, ...] = (), **options: object) -> None:
    fault = step(kind, brokers, **options)
    env = FaultEnv(cluster, None, None)  # type: ignore[arg-type]
    fault.inject(env)


def test_the_steps_refuse_to_break_the_documented_order() -> None:
    cluster = FakeMigration()
    with pytest.raises(HarnessError, match="no KRaft controllers are provisioned"):
        _inject("migration_roll", cluster, (1,), to="hybrid")
    cluster.roles = {1: "kraft", 2: "hybrid"}
    with pytest.raises(HarnessError, match=r"brokers \[2\] are not KRaft brokers yet"):
        _inject("migration_finalize", cluster)
    with pytest.raises(HarnessError, match=r"brokers \[1\] run as KRaft brokers"):
        _inject("migration_deprovision", cluster)
    cluster.state = 3  # POST_MIGRATION
    with pytest.raises(HarnessError, match="no way back"):
        _inject("migration_deprovision", cluster)
    assert "deprovision" not in cluster.calls and "finalize" not in cluster.calls

"""The fault registry: one class per kind declares everything the pipeline reads."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.oracle import BrokerFailure, Event
from kafka_chaos.scenarios import faults as faults_pkg
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.plans.spec import Scenario, validate_steps
from kafka_chaos.scenarios.faults import FAULTS, Fault, FaultEnv, StepTopics, fault_kinds, make_fault, register_fault, requirements_of
from kafka_chaos.scenarios.model.targets import Target

ROOT = Path(__file__).resolve().parents[3] / "kafka_chaos"
ONE = Target((1,), "broker 1")
TOPICS = {"topic_names": {"t": "phys-t"}, "topic_partitions": {"t": (0, 1)}}
OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "network_partition": {"variant": "zookeeper"},
    "reassignment": {"topic": "t", "moves": ((0, (2, 1)),)},
    "preferred_election": {"topic": "t"},
    "unclean_election": {"topic": "t"},
    "network_degrade": {"loss_pct": 5},
    "network_delay": {"delay_ms": 100},
    "delete_topic": {"topic": "t"},
    "add_partitions": {"topic": "t", "add": ((2, (1,)),)},
    "roll": {"to": "3.9.2"},
    "topic_config": {"topic": "t", "set": {"retention.ms": 3600000}},
    "recreate_topic": {"topic": "t", "assignment": {"0": [1, 2]}},
    "broker_config": {"broker": 1, "set": {"follower.replication.throttled.rate": 1}},
    "delete_records": {"topic": "t"},
    "clock_jump": {"seconds": 60},
    "clock_drift": {"rate": 1.5},
}


def test_the_kinds_and_their_declared_traits() -> None:
    traits = {k: (f.requires, make_fault(k, ONE, OPTIONS.get(k, {}), **TOPICS).exact_epochs) for k, f in FAULTS.items()}
    brokers, network = frozenset({Capability.BROKER_CONTROL}), frozenset({Capability.NETWORK_PARTITION})
    ensemble = frozenset({Capability.ZOOKEEPER_ENSEMBLE})
    quorum = frozenset({Capability.CONTROLLER_QUORUM})
    assert traits == {
        "hard_kill": (brokers, True), "controller_kill": (brokers, True), "controlled_shutdown": (brokers, True),
        "start": (brokers, True), "restart": (brokers, True), "pause": (brokers, True),
        "short_pause": (brokers, True),
        "network_partition": (network, True), "reassignment": (frozenset(), True),
        "preferred_election": (frozenset(), True), "unclean_election": (frozenset(), True),
        "delete_topic": (frozenset(), True), "add_partitions": (frozenset(), True),
        "topic_config": (frozenset(), True), "broker_config": (frozenset(), True),
        "recreate_topic": (frozenset(), True), "delete_records": (frozenset(), True),
        "zookeeper_server": (ensemble, True), "zookeeper_quorum_loss": (ensemble | brokers, True),
        "zookeeper_leader_cut": (ensemble | network | {Capability.ZOOKEEPER_LINK_PARTITION}, True),
        "network_degrade": (network | {Capability.NETWORK_DEGRADE}, True),
        "log_dir_failure": (brokers | {Capability.LOG_DIR_FAILURE}, True),
        "network_delay": (frozenset({Capability.LINK_DELAY}), True),
        "roll": (brokers | {Capability.BROKER_RELEASES}, True),
        "quorum_leader_kill": (quorum, True), "quorum_leader_pause": (quorum, True), "quorum_loss": (quorum, True),
        "quorum_leader_cut": (quorum | {Capability.QUORUM_LINK_PARTITION}, True),
        "broker_controller_cut": (quorum | {Capability.QUORUM_LINK_PARTITION}, True),
        "quorum_follower_cut": (quorum | {Capability.QUORUM_LINK_PARTITION}, True),
        "broker_peer_cut": (frozenset({Capability.QUORUM_LINK_PARTITION}), True),
        **{k: (brokers | {Capability.ZK_MIGRATION}, True) for k in (
            "migration_provision", "migration_roll", "migration_finalize", "migration_deprovision")},
        "clock_jump": (frozenset({Capability.CLOCK_CONTROL}), False),
        "clock_drift": (frozenset({Capability.CLOCK_CONTROL}), False),
        "txn_past_timeout": (frozenset(), True),
        "power_failure": (brokers | {Capability.POWER_FAILURE}, True),
        "controller_power_failure": (brokers | {Capability.POWER_FAILURE}, True),
        "quorum_leader_power_failure": (quorum | {Capability.POWER_FAILURE}, True),
        "disk_stall": (frozenset({Capability.DISK_FAULTS}), True),
        "disk_error": (brokers | {Capability.LOG_DIR_FAILURE, Capability.DISK_FAULTS}, True),
        "client_pause": (frozenset(), True), "client_kill": (frozenset(), True),
        "kraft_roll": (quorum | {Capability.ZK_MIGRATION, Capability.BROKER_CONTROL}, True),
        "kraft_finalize": (frozenset({Capability.ZK_MIGRATION}), True),
        **{k: (quorum, True) for k in ("controller_add", "controller_remove", "removed_voter_restart")},
    }


def test_which_cluster_modes_each_kind_applies_to() -> None:
    """ZooKeeper's own faults, those writing admin znodes and those aimed at the controller
    broker are ZooKeeper mode's; the quorum's faults KRaft's and a migrating cluster's; the
    migration's steps a migrating cluster's; the rest apply to every mode (reassignment through the
    Admin API wherever a KRaft controller is in charge)."""
    modes = {k: make_fault(k, ONE, OPTIONS.get(k, {}), **TOPICS).modes for k in FAULTS}
    zookeeper = {k for k, m in modes.items() if m == {"zookeeper"}}
    quorum = {k for k, m in modes.items() if m == {"kraft", "migration"}}
    migration = {k for k, m in modes.items() if m == {"migration"}}
    kraft = {k for k, m in modes.items() if m == {"kraft"}}
    # a failed log directory: ZooKeeper mode's and KRaft's (JBOD, KIP-858), not a migrating
    # cluster's (its ZooKeeper brokers halt on any failed directory)
    log_dirs = {k for k, m in modes.items() if m == {"zookeeper", "kraft"}}
    assert zookeeper == {"controller_kill", "network_partition", "zookeeper_server",
                         "zookeeper_quorum_loss", "zookeeper_leader_cut", "network_degrade", "network_delay",
                         "roll", "controller_power_failure"}
    assert log_dirs == {"log_dir_failure", "disk_error"}
    assert quorum == {"quorum_leader_kill", "quorum_leader_pause", "quorum_loss"}
    assert migration == {"migration_provision", "migration_roll", "migration_finalize", "migration_deprovision",
                         "kraft_roll", "kraft_finalize"}
    # a migration's hybrid brokers under them are not modelled
    assert kraft == {"quorum_leader_cut", "broker_controller_cut", "quorum_follower_cut", "quorum_leader_power_failure",
                     "controller_add", "controller_remove", "removed_voter_restart", "broker_peer_cut"}
    assert all(m == {"zookeeper", "kraft", "migration"} for k, m in modes.items()
               if k not in zookeeper | quorum | migration | kraft | log_dirs)
    # an option can make a kind ZooKeeper mode's: the znode variants
    assert make_fault("preferred_election", ONE, {"topic": "t", "via": "znode"}, **TOPICS).modes == {"zookeeper"}
    # and a reassignment's cancellation (ZooKeeper mode's and KRaft's models; a migration's is not modelled)
    cancel = {"topic": "t", "moves": [[0, None]], "via": "admin"}
    assert make_fault("reassignment", ONE, cancel, **TOPICS).modes == {"zookeeper", "kraft"}


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_every_kind_builds_a_fault_that_meets_the_protocol(kind: str) -> None:
    fault = make_fault(kind, ONE, OPTIONS.get(kind, {}), **TOPICS)
    assert isinstance(fault, Fault) and fault.kind == kind and fault.label.startswith(kind)
    assert type(fault).requires == FAULTS[kind].requires
    assert isinstance(fault.holds, tuple) and isinstance(fault.releases, tuple)
    assert fault.client_windows == (kind in ("network_partition", "short_pause", "network_degrade",
                                            "network_delay", "topic_config", "broker_config",
                                            "broker_controller_cut", "disk_stall", "broker_peer_cut"))
    assert FAULTS[kind].doc and "\n" not in FAULTS[kind].doc


def test_requirements_and_unknown_kinds() -> None:
    assert requirements_of(["hard_kill", "reassignment"]) == {Capability.BROKER_CONTROL}
    assert requirements_of(["hard_kill", "network_partition"]) == {Capability.BROKER_CONTROL,
                                                                   Capability.NETWORK_PARTITION}
    assert requirements_of([]) == frozenset()
    with pytest.raises(UsageError, match="unknown fault kind 'flood'; known: hard_kill"):
        requirements_of(["flood"])


def test_a_new_kind_is_one_registered_class(monkeypatch) -> None:
    """What adding a fault kind takes: one class with @register_fault. The registry, scenario
    validation, requirements and the pipeline's traits all follow from it."""
    monkeypatch.setattr(faults_pkg.base, "FAULTS", dict(FAULTS))

    @register_fault
    @dataclass
    class ZooKeeperPause:
        """Pause ZooKeeper for a while (an example kind)."""

        target: Target
        kind: ClassVar[str] = "zookeeper_pause_example"
        requires: ClassVar[frozenset[Capability]] = frozenset({Capability.ZOOKEEPER_CONTROL})
        exact_epochs: ClassVar[bool] = True
        client_windows: ClassVar[bool] = False
        label = "zookeeper_pause_example"
        modes = frozenset({"zookeeper"})
        holds: tuple[int, ...] = ()
        releases: tuple[int, ...] = ()
        isr_rule = None

        @classmethod
        def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> "ZooKeeperPause":
            return cls(target)

        def oracle_events(self) -> list[Event]:
            return []

        def inject(self, env: FaultEnv) -> None: ...

        def heal(self, env: FaultEnv) -> None: ...

    assert "zookeeper_pause_example" in fault_kinds()
    assert requirements_of(["zookeeper_pause_example"]) == {Capability.ZOOKEEPER_CONTROL}
    s = Scenario("example", "doc", (TopicSpec("t", {0: (1, 2)}),), (Step("zookeeper_pause_example"),),
                 frozenset({"conformance"}))
    validate_steps(s)
    assert s.requirements == {Capability.ZOOKEEPER_CONTROL}
    with pytest.raises(ValueError, match="registered twice"):
        register_fault(ZooKeeperPause)


def test_a_misspelt_step_fails_validation_not_a_run() -> None:
    bad = Scenario("bad", "doc", (TopicSpec("t", {0: (1, 2)}),),
                   (Step("network_partition", options={"variant": "carrier-pigeon"}),), frozenset({"conformance"}))
    with pytest.raises(TypeError, match="scenario bad: network_partition: 'variant'"):
        validate_steps(bad)


def test_oracle_events_come_from_the_fault() -> None:
    assert make_fault("hard_kill", Target((1, 2), "b"), {}, **TOPICS).oracle_events() == [BrokerFailure((1, 2))]


def _fault_class_names() -> set[str]:
    names = set()
    for path in (ROOT / "scenarios" / "faults").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
    return names


def test_no_code_outside_the_fault_package_tests_a_fault_class() -> None:
    """The pipeline reads declared traits, never ``isinstance(fault, SomeFault)``."""
    classes = _fault_class_names() - {"FaultEnv", "StepTopics", "FaultKind", "Nemesis"}
    offenders = []
    for folder in ("scenarios", "cli", "results", "harness"):
        for path in (ROOT / folder).rglob("*.py"):
            if "faults" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"
                        and len(node.args) == 2 and {n.id for n in ast.walk(node.args[1])
                                                     if isinstance(n, ast.Name)} & classes):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders

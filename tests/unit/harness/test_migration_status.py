"""The migration's phase as Kafka reports it, and each phase's node properties: tables."""

from __future__ import annotations

import json

import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.kraft.image import MetadataImage
from kafka_chaos.harness.kraft.records import LogEntry, ZkMigrationStateChanged, decode_record_value
from kafka_chaos.harness.migration.properties import (
    hybrid_broker_properties,
    kraft_broker_properties,
    migration_controller_properties,
)
from kafka_chaos.harness.migration.status import (
    MigrationStatus,
    active_driver_state,
    driver_transitions,
    last_driver_state,
    parse_json_znode,
)

# KRaftMigrationDriver.transitionTo's line, as a 3.9.2 controller logged it on this machine.
LINE = ("[2026-11-26 07:00:23,263] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from "
        "KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)")


def test_the_driver_state_is_the_last_transition_logged() -> None:
    lines = [LINE.replace("KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE", "INACTIVE to WAIT_FOR_CONTROLLER_QUORUM"),
             "[..] INFO unrelated line", LINE]
    transitions = driver_transitions(lines)
    assert [(t.node_id, t.from_state, t.to_state) for t in transitions] == [
        (3000, "INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM"), (3000, "KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE")]
    assert last_driver_state(lines) == "DUAL_WRITE"
    assert last_driver_state(["nothing"]) is None


def _transition(node: int, at: str, to: str) -> str:
    return LINE.replace("3000 transitioning", f"{node} transitioning").replace(
        "07:00:23,263", at).replace("KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE", f"X to {to}")


# run --suite migration --seed 7: provisioned 3 controllers, 3000 active (WAIT_FOR_BROKERS); the
# standbys 3001 and 3002 logged "to INACTIVE" and went on logging other lines later, so their files
# were the newest and the step read INACTIVE.
LOGS = {3000: [_transition(3000, "07:00:20,100", "INACTIVE"), _transition(3000, "07:00:21,000", "WAIT_FOR_BROKERS")],
        3001: [_transition(3001, "07:00:20,200", "INACTIVE"), "[2026-11-26 07:00:30,000] INFO later"],
        3002: [_transition(3002, "07:00:20,300", "INACTIVE")]}
KRAFT_CLAIMED = {"version": 2, "brokerid": 3001, "kraftControllerEpoch": 4}
ZK_CONTROLLER = {"version": 2, "brokerid": 2, "kraftControllerEpoch": -1}


@pytest.mark.parametrize(("logs", "leader", "znode", "state"), [
    (LOGS, 3000, ZK_CONTROLLER, "WAIT_FOR_BROKERS"),  # the quorum leader's, whatever the standbys logged
    (LOGS, 3002, KRAFT_CLAIMED, "INACTIVE"),  # a new leader whose driver has not moved yet: its own
    (LOGS, None, KRAFT_CLAIMED, "INACTIVE"),  # no leader known: the one /controller names (3001)
    (LOGS, None, ZK_CONTROLLER, "WAIT_FOR_BROKERS"),  # neither: the latest transition by its own time
    (LOGS, None, None, "WAIT_FOR_BROKERS"),
    ({3000: ["no transition"]}, 3000, None, None),
    ({}, None, None, None),
])
def test_the_driver_state_is_the_active_controllers(logs: dict[int, list[str]], leader: int | None,
                                                    znode: dict[str, int] | None, state: str | None) -> None:
    assert active_driver_state(logs, leader, znode) == state


def test_the_migration_state_record_is_decoded_and_replayed() -> None:
    # MetadataRecordSerde frame: frame version 1, api key 21, version 0, ZkMigrationState int8, tagged fields 0
    for value, state in ((1, 1), (2, 2), (3, 3)):
        record = decode_record_value(bytes([1, 21, 0, value, 0]))
        assert record == ZkMigrationStateChanged(state)
    image = MetadataImage()
    assert image.zk_migration_state is None
    image.apply(LogEntry(0, 1, 0.0, ZkMigrationStateChanged(2)))
    image.apply(LogEntry(1, 1, 0.0, ZkMigrationStateChanged(1)))
    assert image.zk_migration_state == 1


@pytest.mark.parametrize(("state", "driver", "roles", "phase", "in_charge"), [
    (None, None, {1: "zk"}, "zookeeper", False),
    (2, "WAIT_FOR_BROKERS", {1: "zk", 2: "hybrid"}, "pre-migration", False),
    (1, "DUAL_WRITE", {1: "hybrid", 2: "kraft"}, "hybrid", True),
    (1, "DUAL_WRITE", {1: "kraft", 2: "kraft"}, "dual-write", True),
    (3, "DUAL_WRITE", {1: "kraft", 2: "kraft"}, "finalized", True),
])
def test_the_phase_follows_what_kafka_wrote(state: int | None, driver: str | None, roles: dict[int, str],
                                            phase: str, in_charge: bool) -> None:
    status = MigrationStatus(state, driver, broker_roles=roles)
    assert status.phase == phase and status.kraft_controller_in_charge == in_charge


def test_a_kraft_controller_is_named_only_by_a_kraft_epoch() -> None:
    # a 3.9 ZooKeeper controller writes kraftControllerEpoch -1 (KafkaController.elect)
    zk = MigrationStatus(None, None, controller_znode={"version": 2, "brokerid": 3, "kraftControllerEpoch": -1})
    kraft = MigrationStatus(1, "DUAL_WRITE", controller_znode={"version": 2, "brokerid": 3000,
                                                              "kraftControllerEpoch": 4}, zk_controller_epoch=2)
    assert (zk.kraft_controller_id, zk.kraft_controller_epoch) == (None, None)
    assert (kraft.kraft_controller_id, kraft.kraft_controller_epoch) == (3000, 4)
    assert kraft.to_json()["zk_controller_epoch"] == 2 and kraft.to_json()["zk_migration_state"] == "MIGRATION"


@pytest.mark.parametrize(("data", "parsed"), [
    (None, None), (b"", None), (b"not json", None), (b"[1]", None),
    (json.dumps({"version": 0, "kraft_metadata_offset": 30}).encode(), {"version": 0, "kraft_metadata_offset": 30}),
])
def test_znodes_parse_or_are_absent(data: bytes | None, parsed: dict[str, int] | None) -> None:
    assert parse_json_znode(data) == parsed


VOTERS = {3000: "127.0.0.1:9093"}
MIGRATING = ClusterConfig(brokers=3, mode="migration", controllers=1)


def test_a_controller_ready_for_the_migration_carries_the_flag_and_zookeeper() -> None:
    props = migration_controller_properties(MIGRATING, 3000, voters=VOTERS, address="127.0.0.1:9093", log_dir="/d",
                                            zookeeper_connect="127.0.0.1:2181", kafka_version="3.9.2")
    assert props["zookeeper.metadata.migration.enable"] == "true"
    assert props["zookeeper.connect"] == "127.0.0.1:2181"
    assert props["process.roles"] == "controller" and props["node.id"] == "3000"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert "PLAINTEXT:PLAINTEXT" in props["listener.security.protocol.map"]
    final = migration_controller_properties(MIGRATING, 3000, voters=VOTERS, address="127.0.0.1:9093", log_dir="/d",
                                            zookeeper_connect="127.0.0.1:2181", kafka_version="3.9.2", migrating=False)
    assert "zookeeper.metadata.migration.enable" not in final and "zookeeper.connect" not in final


def test_a_hybrid_broker_keeps_its_zookeeper_properties_and_adds_the_quorum() -> None:
    zk = {"broker.id": "2", "zookeeper.connect": "z:1", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}
    props = hybrid_broker_properties(zk, VOTERS)
    assert props["broker.id"] == "2" and props["zookeeper.connect"] == "z:1"
    assert props["zookeeper.metadata.migration.enable"] == "true"
    assert props["controller.quorum.voters"] == "3000@127.0.0.1:9093"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert hybrid_broker_properties(props, VOTERS)["listener.security.protocol.map"] == props["listener.security.protocol.map"]


def test_a_migrated_broker_keeps_its_id_and_data_and_drops_zookeeper() -> None:
    props = kraft_broker_properties(MIGRATING, 2, voters=VOTERS, address="127.0.0.1:9092", log_dirs="/data/b2",
                                    kafka_version="3.9.2")
    assert props["node.id"] == "2" and props["process.roles"] == "broker" and props["log.dirs"] == "/data/b2"
    assert not any(k.startswith("zookeeper.") for k in props) and "broker.id" not in props


@pytest.mark.parametrize("kafka_version, debug", [
    # KRaftMigrationDriver.transitionTo logs at DEBUG up to 3.6.1 (KRaftMigrationDriver.java 3.6.1
    # line 318), at INFO from 3.6.2 (line 323; 3.9 line 338)
    ("3.6.0", True), ("3.6.1", True), ("3.6.2", False), ("3.9.2", False), ("3.10.0", False),
])
def test_the_driver_logger_is_raised_to_debug_where_transitions_are_debug(kafka_version, debug) -> None:
    from kafka_chaos.harness.migration.properties import CONTROLLER_CHANNEL_DEBUG, DRIVER_LOGGER_DEBUG, migration_log4j

    assert migration_log4j(kafka_version) == (DRIVER_LOGGER_DEBUG if debug else "") + CONTROLLER_CHANNEL_DEBUG

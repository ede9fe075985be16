"""The properties each node carries in each phase of the migration, as Kafka 3.9's operations
guide gives them (``docs/ops.html`` 3.9, "ZooKeeper to KRaft Migration"):

* a KRaft controller ready for the migration: the KRaft controller properties plus
  ``zookeeper.metadata.migration.enable=true``, the ZooKeeper client settings, and
  ``inter.broker.listener.name`` naming the ZooKeeper brokers' listener it sends RPCs to;
* a ZooKeeper broker in migration mode ("hybrid"): its ZooKeeper properties plus the flag,
  ``controller.quorum.voters``, ``controller.listener.names`` and the CONTROLLER listener in
  ``listener.security.protocol.map``;
* a broker moved to KRaft: ``process.roles=broker``, ``node.id`` = its ``broker.id``, no
  ZooKeeper settings, the quorum settings kept, its data directories unchanged;
* a finalised controller: the flag and ``zookeeper.connect`` removed.

Pure: the local launcher writes what these return.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kafka_chaos.harness.config import (
    CONTROLLER_LISTENER,
    ClusterConfig,
    broker_property_names,
    kraft_node_properties,
    release_defaults,
)

MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"
ZOOKEEPER_CONNECT = "zookeeper.connect"
CONTROLLER_QUORUM_VOTERS = "controller.quorum.voters"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"
LISTENER_SECURITY_PROTOCOL_MAP = "listener.security.protocol.map"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
BROKER_LISTENER = "PLAINTEXT"

# The phases a broker goes through, in order; a rollback walks them back.
ZK, HYBRID, KRAFT = "zk", "hybrid", "kraft"
BROKER_ROLES = (ZK, HYBRID, KRAFT)


# ``KRaftMigrationDriver.transitionTo`` logs its state changes at DEBUG up to 3.6.1
# (KRaftMigrationDriver.java 3.6.1 line 318) and at INFO from 3.6.2 (line 323, 3.9 line 338); the
# migration status reads them, so older controllers get that one logger at DEBUG.
DRIVER_LOGGER_DEBUG = "log4j.logger.org.apache.kafka.metadata.migration.KRaftMigrationDriver=DEBUG\n"
FIRST_INFO_TRANSITIONS = (3, 6, 2)


# Where a ZooKeeper broker's AlterPartition requests go and what answers them: the channel moves
# from the ZooKeeper controller to the KRaft one at DEBUG only (NodeToControllerRequestThread.
# maybeResetNetworkClient, 3.9.2; BrokerToControllerRequestThread up to 3.6.x), and
# DefaultAlterPartitionManager.sendRequest logs each request and response at DEBUG. A broker whose
# ISR changes were refused for minutes during a migration (docs/findings.md §11) said at INFO only
# that they failed, not to whom it had sent them.
CONTROLLER_CHANNEL_DEBUG = ("log4j.logger.kafka.server.NodeToControllerRequestThread=DEBUG\n"
                            "log4j.logger.kafka.server.BrokerToControllerRequestThread=DEBUG\n"
                            "log4j.logger.kafka.server.DefaultAlterPartitionManager=DEBUG\n")


def migration_log4j(kafka_version: str) -> str:
    """The log4j lines a migrating cluster's nodes need: the driver's transitions logged (the
    migration status reads them), and the brokers' controller channel's (for triage)."""
    release = tuple(int(part) for part in re.findall(r"\d+", kafka_version)[:3])
    return ("" if release >= FIRST_INFO_TRANSITIONS else DRIVER_LOGGER_DEBUG) + CONTROLLER_CHANNEL_DEBUG


def voters_string(voters: Mapping[int, str]) -> str:
    return ",".join(f"{v}@{hp}" for v, hp in sorted(voters.items()))


def migration_controller_properties(config: ClusterConfig, node_id: int, *, voters: Mapping[int, str],
                                    address: str, log_dir: str, zookeeper_connect: str, kafka_version: str,
                                    migrating: bool = True) -> dict[str, str]:
    """A KRaft controller of a migrating cluster; ``migrating`` False is the finalised one
    (ops.html 3.9 "Finalizing the migration": the flag and the ZooKeeper settings removed)."""
    props = kraft_node_properties(config, node_id, voters=voters, address=address, log_dir=log_dir,
                                  kafka_version=kafka_version)
    if not migrating:
        return props
    zk_settings = {k: v for k, v in release_defaults(config.brokers, broker_property_names(kafka_version)).items()
                   if k.startswith("zookeeper.")}
    zk_settings.update({k: v for k, v in config.cluster_overrides.items() if k.startswith("zookeeper.")})
    props.update(zk_settings)
    props.update({
        MIGRATION_ENABLE: "true",
        ZOOKEEPER_CONNECT: zookeeper_connect,
        # the ZooKeeper brokers' listener the controller sends LeaderAndIsr / UpdateMetadata on
        INTER_BROKER_LISTENER_NAME: BROKER_LISTENER,
        LISTENER_SECURITY_PROTOCOL_MAP: f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
    })
    return dict(sorted(props.items()))


def hybrid_broker_properties(zk_properties: Mapping[str, str], voters: Mapping[int, str]) -> dict[str, str]:
    """A ZooKeeper broker's properties in migration mode (ops.html 3.9 "Enter Migration Mode on the
    Brokers"): the flag, the quorum, the controller listener name and its protocol."""
    props = dict(zk_properties)
    protocols = props.get(LISTENER_SECURITY_PROTOCOL_MAP, f"{BROKER_LISTENER}:PLAINTEXT")
    if f"{CONTROLLER_LISTENER}:" not in protocols:
        protocols += f",{CONTROLLER_LISTENER}:PLAINTEXT"
    props.update({MIGRATION_ENABLE: "true", CONTROLLER_QUORUM_VOTERS: voters_string(voters),
                  CONTROLLER_LISTENER_NAMES: CONTROLLER_LISTENER, LISTENER_SECURITY_PROTOCOL_MAP: protocols})
    return dict(sorted(props.items()))


def kraft_broker_properties(config: ClusterConfig, broker_id: int, *, voters: Mapping[int, str], address: str,
                            log_dirs: str, kafka_version: str) -> dict[str, str]:
    """A migrated broker (ops.html 3.9 "Migrating brokers to KRaft"): ``node.id`` = its
    ``broker.id``, ``process.roles=broker``, no ZooKeeper settings, on its old ``log.dirs``."""
    props = kraft_node_properties(config, broker_id, voters=voters, address=address, log_dir=log_dirs,
                                  kafka_version=kafka_version)
    return props

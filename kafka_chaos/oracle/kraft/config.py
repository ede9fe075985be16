"""The KRaft controller's settings and metadata-version switches its partition decisions read.

Values are the active controller's (``ClusterState.config`` in KRaft mode): ``KafkaConfig`` of a
``process.roles=controller`` node; topic overrides come from ``TopicState.config``.  The
metadata version is the cluster's finalized ``metadata.version`` feature (``kafka-storage format
--release-version``, ``kafka-features upgrade``), not a broker setting; the oracle reads it from
``config["metadata.version"]`` when given (``"3.9-IV0"``, ``"3.5"``), else the release's default
(``MetadataVersion.LATEST_PRODUCTION``: 3.9-IV0 in 3.9, server-common MetadataVersion.java 3.9
line 247).  ZooKeeper migration mode (``config["zookeeper.metadata.migration.enable"]``,
``config["oracle.migrating.zk.brokers"]``) is read by :mod:`oracle.kraft.migration`.
"""

from __future__ import annotations

from typing import Mapping

from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle.release import LATEST_IV, ProtocolVersion, Release, parse_protocol_version

METADATA_VERSION = "metadata.version"
# The 3.9 release's MetadataVersion.LATEST_PRODUCTION (MetadataVersion.java 3.9 line 247).
LATEST_PRODUCTION_3_9 = ProtocolVersion(3, 9, 0, 0)


def metadata_version(config: Mapping[str, object], release: Release) -> ProtocolVersion:
    """The cluster's metadata version: ``config["metadata.version"]`` if it parses, else the
    release's LATEST_PRODUCTION (3.9-IV0 for 3.9; an unparsable value is Kafka's to refuse)."""
    value = config.get(METADATA_VERSION)
    if isinstance(value, str):
        parsed = parse_protocol_version(value)
        if parsed is not None:
            return parsed
    if release.at_least(3, 9):
        return LATEST_PRODUCTION_3_9
    return ProtocolVersion(release.major, release.minor, 0, LATEST_IV)


def leader_epoch_bump_required_on_isr_shrink(mv: ProtocolVersion) -> bool:
    """``MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink`` (MetadataVersion.java 3.9 lines
    331-333): below 3.6-IV0 every ISR shrink bumps the leader epoch (KAFKA-15021); from 3.6-IV0
    only a leader change does.  The builder also bumps while the controller runs in ZooKeeper
    migration mode (``zkMigrationEnabled``, PartitionChangeBuilder.java line 397): the guard as a
    whole is :func:`oracle.kraft.migration.isr_shrink_bumps_leader_epoch`."""
    return not mv.at_least(3, 6, 0)


def leader_recovery_supported(mv: ProtocolVersion) -> bool:
    """``MetadataVersion.isLeaderRecoverySupported`` (lines 315-317): 3.2-IV0+ (KIP-704)."""
    return mv.at_least(3, 2, 0)


def directory_assignment_supported(mv: ProtocolVersion) -> bool:
    """``MetadataVersion.isDirectoryAssignmentSupported`` (lines 343-345): 3.7-IV2+ (KIP-858,
    JBOD in KRaft): the heartbeat's ``offlineLogDirs`` reach ``handleDirectoriesOffline``."""
    return mv.at_least(3, 7, 2)


def unclean_leader_election_enabled(controller_config: Mapping[str, object], topic_config: Mapping[str, object]) -> bool:
    """``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`` (ConfigurationControlManager.java
    3.9 lines 511-518): the topic's effective value (its override, else the controller's dynamic
    and static config) read with ``Boolean.parseBoolean`` -- "true" in any case, *not* trimmed:
    " true" is false here, while ZooKeeper mode's LogConfig trims it."""
    merged = {**controller_config, **topic_config}
    value = merged.get(cfg.UNCLEAN_LEADER_ELECTION_ENABLE, False)
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.lower() == "true"


def auto_leader_rebalance_enabled(config: Mapping[str, object]) -> bool:
    """``auto.leader.rebalance.enable`` (default true): when false ``ControllerServer`` gives the
    QuorumController no ``leaderImbalanceCheckIntervalNs`` (ControllerServer.scala 3.9 lines
    232-236) and ``maybeBalancePartitionLeaders`` is never scheduled (QuorumController.java lines
    1346-1349)."""
    return cfg.auto_leader_rebalance_enabled(config)


def delete_topic_enabled(config: Mapping[str, object]) -> bool:
    """``delete.topic.enable`` of the controller: false -> ``ControllerApis.deleteTopics`` refuses
    the request (TopicDeletionDisabledException, ControllerApis.scala 3.9 lines 229-236)."""
    return cfg.delete_topic_enabled(config)

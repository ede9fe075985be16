"""The KRaft controller's settings and metadata-version switches its partition decisions read.

Values are the active controller's (``ClusterState.config`` in KRaft mode): ``KafkaConfig`` of a
``process.roles=controller`` node; topic overrides come from ``TopicState.config``.  The
metadata version is the cluster's finalized ``metadata.version`` feature (``kafka-storage format
--release-version``, ``kafka-features upgrade``), not a broker setting; the oracle reads it from
``config["metadata.version"]`` when given (``"3.9-IV0"``, ``"3.5"``), else the release's default
(``MetadataVersion.LATEST_PRODUCTION``: 3.9-IV0 in 3.9, server-common MetadataVersion.java 3.9
line 247; 3.6 has no LATEST_PRODUCTION and formats with ``MetadataVersion.latest()``, 3.6-IV2).
ZooKeeper migration mode (``config["zookeeper.metadata.migration.enable"]``,
``config["oracle.migrating.zk.brokers"]``) is read by :mod:`oracle.kraft.migration`.

The model covers 3.6.x to 3.9.x (``oracle.kraft.interleavings.MODELLED_LINES``).  Every rule that
changed between 3.6.1 and 3.9 (``git diff 3.6.1 3.9`` of the controller package) is keyed here by
the release it landed in -- :func:`unclean_leader_election_configurable`,
:func:`isr_shrink_bump_reads_target_isr`, :func:`reassignment_completes_when_adding_in_isr`,
:func:`partition_directories_supported` -- or by the metadata version, as Kafka keys it.  3.7.x
and 3.8.x were audited on their own (issue 45): the released sources (Maven Central
``kafka-metadata``/``kafka-server-common``/``kafka_2.13`` 3.6.2, 3.7.2, 3.8.1, 3.9.0 sources jars;
the mirror's branches ``3.7`` and ``3.8`` hold the same controller package as 3.7.2 and 3.8.1)
diffed pairwise, 3.7.0/3.7.1 and 3.8.0 against their branch.  What they add and the model does not
model -- eligible leader replicas (KIP-966) and the controller's side of unclean-shutdown detection
(KAFKA-15586) -- needs a metadata version above each release's production default (and, for ELR,
``eligible.leader.replicas.enable``): :func:`check_elr_not_in_effect` refuses it.
"""

from __future__ import annotations

from typing import Mapping

from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle.release import LATEST_IV, ProtocolVersion, Release, parse_protocol_version

METADATA_VERSION = "metadata.version"
# The 3.9 release's MetadataVersion.LATEST_PRODUCTION (MetadataVersion.java 3.9 line 247).
LATEST_PRODUCTION_3_9 = ProtocolVersion(3, 9, 0, 0)
# The metadata version ``kafka-storage format`` writes without --release-version, per release:
# 3.6.x has no LATEST_PRODUCTION, StorageTool uses MetadataVersion.latest() (StorageTool.scala 3.6.1
# line 148), the last constant, IBP_3_6_IV2 (MetadataVersion.java 3.6.1 lines 186, 499-501; the
# same in 3.6.0 and 3.6.2); 3.7.x and 3.8.x format with MetadataVersion.LATEST_PRODUCTION
# (StorageTool.scala 3.7.0 line 162, 3.7.2 line 191, 3.8.1 line 250): IBP_3_7_IV4 in 3.7.0, 3.7.1
# and 3.7.2 (MetadataVersion.java line 231 in each), IBP_3_8_IV0 in 3.8.0 and 3.8.1 (line 239).
_DEFAULT_METADATA_VERSION = {
    (3, 6): ProtocolVersion(3, 6, 0, 2),
    (3, 7): ProtocolVersion(3, 7, 0, 4),
    (3, 8): ProtocolVersion(3, 8, 0, 0),
    (3, 9): LATEST_PRODUCTION_3_9,
    # Kafka 4.x (docs/kraft-4x-audit.md section 0): MetadataVersion.LATEST_PRODUCTION, which
    # Formatter.calculateEffectiveReleaseVersion writes without --release-version (metadata
    # Formatter.java 4.0.0 lines 269-285): IBP_4_0_IV3 (server-common MetadataVersion.java 4.0.0
    # line 135, 4.0.2 the same), IBP_4_1_IV1 (4.1.0 line 160), IBP_4_2_IV1 (4.2.0 line 151),
    # IBP_4_3_IV0 (4.3.0 line 154), IBP_4_4_IV2 (4.4.0 has no sources jar: its MetadataVersion
    # <clinit> bytecode stores IBP_4_4_IV2 into LATEST_PRODUCTION).
    (4, 0): ProtocolVersion(4, 0, 0, 3),
    (4, 1): ProtocolVersion(4, 1, 0, 1),
    (4, 2): ProtocolVersion(4, 2, 0, 1),
    (4, 3): ProtocolVersion(4, 3, 0, 0),
    (4, 4): ProtocolVersion(4, 4, 0, 2),
}
# The newest MetadataVersion constant each release knows (``MetadataVersion.fromVersionString``
# refuses anything newer): 3.6.x ends at IBP_3_6_IV2 (MetadataVersion.java 3.6.1 line 186), 3.7.x
# at IBP_3_8_IV0 (3.7.0 line 205), 3.8.x at IBP_3_9_IV0 (3.8.0 line 213).  3.9 is not checked.
_NEWEST_KNOWN_METADATA_VERSION = {
    (3, 6): ProtocolVersion(3, 6, 0, 2),
    (3, 7): ProtocolVersion(3, 8, 0, 0),
    (3, 8): ProtocolVersion(3, 9, 0, 0),
}


# ``metadata.version``'s feature levels (what a FeatureLevelRecord carries) and the versions they
# name: ``MetadataVersion`` (server-common MetadataVersion.java 4.3.1 lines 50-133: IBP_3_3_IV3 = 7
# ... IBP_4_3_IV0 = 30, IBP_4_4_IV0 = 31; 3.9.0 the same up to IBP_3_9_IV0 = 21); 4.4.0 publishes no
# sources jar: IBP_4_4_IV1 = 32 and IBP_4_4_IV2 = 33 from its bytecode and its own
# ``kafka-features version-mapping --release-version 4.4`` ("metadata.version=33 (4.4)").
METADATA_VERSION_LEVELS: Mapping[int, str] = {
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1",
    14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0",
    21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1",
    28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}


def finalized_feature_config(features: Mapping[str, int]) -> dict[str, str]:
    """What the metadata log's finalized features (FeatureLevelRecords: name -> level) put into the
    oracle's config: ``metadata.version`` by name (:data:`METADATA_VERSION_LEVELS`) and
    ``eligible.leader.replicas.version``'s level. A feature the log finalized no level for is at
    level 0 (``FeatureControlManager.finalizedVersions.getOrDefault(name, 0)``, 4.3.1 line 249;
    ``kafka-features upgrade`` never writes a 0: FeatureCommand 4.3.0 lines 313-317) -- so once the
    log shows ``metadata.version``, an absent ELR feature is off, whatever the release's format
    default: a 3.9 cluster rolled onto 4.x keeps ELR off until a finalize turns it on. Nothing when
    the log showed no ``metadata.version`` (the image is not from the log's start)."""
    level = features.get(METADATA_VERSION)
    if level is None:
        return {}
    out = {ELR_FEATURE: str(features.get(ELR_FEATURE, 0))}
    name = METADATA_VERSION_LEVELS.get(level)
    if name is not None:
        out[METADATA_VERSION] = name
    return out


def metadata_version(config: Mapping[str, object], release: Release) -> ProtocolVersion:
    """The cluster's metadata version: ``config["metadata.version"]`` if it parses, else the
    release's default (3.6-IV2 for 3.6, 3.7-IV4 for 3.7, 3.8-IV0 for 3.8, 3.9-IV0 for 3.9, then
    4.0-IV3, 4.1-IV1, 4.2-IV1, 4.3-IV0, 4.4-IV2; an unparsable value is Kafka's to refuse)."""
    value = config.get(METADATA_VERSION)
    if isinstance(value, str):
        parsed = parse_protocol_version(value)
        if parsed is not None:
            return parsed
    default = _DEFAULT_METADATA_VERSION.get((release.major, release.minor))
    if default is not None:
        return default
    if release.at_least(3, 9) and not release.at_least(4, 0):
        return LATEST_PRODUCTION_3_9
    return ProtocolVersion(release.major, release.minor, 0, LATEST_IV)


def check_metadata_version_known(mv: ProtocolVersion, release: Release) -> None:
    """Refuse a metadata version newer than ``release`` knows: its controller could not read the
    FeatureLevelRecord, nor ``kafka-storage format`` write it (``MetadataVersion.fromVersionString``
    throws).  ``"3.6"`` without an IV names 3.6's newest, which is known."""
    newest = _NEWEST_KNOWN_METADATA_VERSION.get((release.major, release.minor))
    if newest is None:
        return
    same_line = (mv.major, mv.minor) == (newest.major, newest.minor)
    if (mv.major, mv.minor) > (newest.major, newest.minor) or (same_line and newest.iv < mv.iv < LATEST_IV):
        raise ValueError(f"metadata.version {mv.major}.{mv.minor}-IV{mv.iv} is unknown to Kafka {release}: its "
                         f"newest is {newest.major}.{newest.minor}-IV{newest.iv} (MetadataVersion.java)")


ELIGIBLE_LEADER_REPLICAS_ENABLE = "eligible.leader.replicas.enable"
# The first metadata version whose ``MetadataVersion.isElrSupported`` holds, per release line:
# 3.7.x IBP_3_8_IV0 (MetadataVersion.java 3.7.2 lines 325-327, KAFKA-15581 af747fbfed7), 3.8.x
# IBP_3_9_IV0 (3.8.1 lines 339-341; moved by b20a7356e21, first in 3.8.0), 3.9.x IBP_4_0_IV0 (3.9.0
# lines 347-349).  Each is above the release's LATEST_PRODUCTION (3.7-IV4, 3.8-IV0, 3.9-IV0): only a
# cluster formatted or upgraded with ``unstable.metadata.versions.enable`` reaches it.  3.6.x has no
# ELR at all (no isElrSupported, no BrokersToElrs).
_FIRST_ELR_METADATA_VERSION = {
    (3, 7): ProtocolVersion(3, 8, 0, 0),
    (3, 8): ProtocolVersion(3, 9, 0, 0),
    (3, 9): ProtocolVersion(4, 0, 0, 0),
}


def elr_supported(mv: ProtocolVersion, release: Release) -> bool:
    """``MetadataVersion.isElrSupported`` as ``release`` defines it (:data:`_FIRST_ELR_METADATA_VERSION`):
    the threshold moved up one line per release (3.8-IV0 in 3.7.x, 3.9-IV0 in 3.8.x, 4.0-IV0 in
    3.9.x), never below the release's production default; never on 3.6.x."""
    first = _FIRST_ELR_METADATA_VERSION.get((release.major, release.minor))
    return first is not None and mv >= first


def elr_enabled(config: Mapping[str, object], mv: ProtocolVersion, release: Release) -> bool:
    """``ReplicationControlManager.isElrEnabled``: the controller's ``eligible.leader.replicas.enable``
    (KafkaConfig.scala 3.7.2 line 1264, BOOLEAN default false; 3.8/3.9 ``KRaftConfigs.ELR_ENABLED_CONFIG``;
    ControllerServer.scala 3.7.2 line 268 ``setEligibleLeaderReplicasEnabled(config.elrEnabled)``)
    *and* :func:`elr_supported` (ReplicationControlManager.java 3.7.2 lines 1005-1007, 3.8.1 lines
    1017-1019).  Only then does a builder populate ELR, write an empty ISR or elect from the ELR
    (PartitionChangeBuilder.java 3.7.2 lines 326-330, 440-444, 490-560)."""
    return (cfg.parse_bool(config.get(ELIGIBLE_LEADER_REPLICAS_ENABLE, False)) is True) and elr_supported(mv, release)


def unclean_shutdown_leaves_isrs(mv: ProtocolVersion, release: Release) -> bool:
    """Whether a broker registering after an unclean shutdown is taken out of every ISR (and ELR)
    by the controller.  3.7.0 added the broker side (KAFKA-15582, 14029e2ddd1: the registration
    carries ``previousBrokerEpoch``), but 3.7.x's controller only logs it (``registerBroker``,
    ClusterControlManager.java 3.7.2 lines 340-343: ``// TODO(KIP-966)``).  From 3.8.0
    (KAFKA-15586, 376e9e20dbf) ``registerBroker`` (3.8.1 lines 356-359; 3.9.0 on every new
    incarnation, lines 461-463) calls ``handleBrokerUncleanShutdown`` (ReplicationControlManager.java
    3.8.1 lines 1395-1401: ``generateLeaderAndIsrUpdates`` with the broker unacceptable and left out of the target ISR), which returns at once unless :func:`elr_supported` -- whatever
    ``eligible.leader.replicas.enable`` says."""
    return release.at_least(3, 8) and elr_supported(mv, release)


def check_elr_not_in_effect(config: Mapping[str, object], mv: ProtocolVersion, release: Release) -> None:
    """Refuse a controller whose partition decisions use KIP-966, which the model leaves out: ELR
    enabled (:func:`elr_enabled`), or a metadata version at which a restarted broker's registration
    removes it from every ISR (:func:`unclean_shutdown_leaves_isrs`).  Neither holds at any
    release's default metadata version."""
    if elr_enabled(config, mv, release):
        raise ValueError(f"{ELIGIBLE_LEADER_REPLICAS_ENABLE}=true at metadata.version {mv.major}.{mv.minor}-IV{mv.iv} "
                         f"turns on eligible leader replicas (KIP-966) on Kafka {release}: not modelled")
    if unclean_shutdown_leaves_isrs(mv, release):
        raise ValueError(f"metadata.version {mv.major}.{mv.minor}-IV{mv.iv} on Kafka {release} supports ELR: a broker "
                         "registering after an unclean shutdown leaves every ISR (handleBrokerUncleanShutdown, "
                         "KAFKA-15586): not modelled")


ELR_FEATURE = "eligible.leader.replicas.version"


def elr_feature_enabled(config: Mapping[str, object], release: Release) -> bool:
    """KIP-966 on a Kafka 4.x controller: ``FeatureControlManager.isElrFeatureEnabled`` (4.1.0
    lines 470-473; 4.0.0 line 393): the finalized ``eligible.leader.replicas.version`` >= 1.  The
    harness puts the level the cluster's metadata log finalized (FeatureLevelRecord) into
    ``config[ELR_FEATURE]``; without it, what ``kafka-storage format`` finalizes by default:
    ``Feature.defaultLevel(LATEST_PRODUCTION)`` -- 0 on 4.0.x (ELRV_1's bootstrap metadata version
    is 4.1-IV0, EligibleLeaderReplicasVersion.java 4.0.0 line 28, above 4.0-IV3), 1 from 4.1.0
    (MetadataVersion.java 4.1.0 lines 108-111, "Enables ELR by default for new clusters").  Never
    on 3.x, whose switch is ``eligible.leader.replicas.enable`` (:func:`elr_enabled`, refused)."""
    if not release.at_least(4, 0):
        return False
    value = config.get(ELR_FEATURE)
    if value is not None:
        try:
            return int(str(value).strip()) >= 1
        except ValueError:
            pass
    return release.at_least(4, 1)


def registration_runs_shutdown_handler(release: Release) -> bool:
    """From 4.0.0 every new incarnation's registration runs ``handleBrokerShutdown``
    (ClusterControlManager.java 4.1.2 lines 362, 434-436: clean iff the request's
    ``previousBrokerEpoch`` -- the epoch the broker's clean-shutdown file kept, read by
    BrokerLifecycleManager.scala 4.1.2 lines 202-229, 381 -- is the stored one;
    ReplicationControlManager.java 4.1.2 lines 1438-1451): with ELR on and an unclean shutdown
    the broker leaves every ISR and ELR (``brokerWithUncleanShutdown``), else the fence builder
    runs again over its ISR partitions.  3.8/3.9 ran it only where ELR was supported
    (:func:`unclean_shutdown_leaves_isrs`, refused)."""
    return release.at_least(4, 0)


def last_known_leader_must_be_acceptable(release: Release) -> bool:
    """KAFKA-19522, fixed in 4.1.0: 4.0.x's ``canElectLastKnownLeader`` (PartitionChangeBuilder.java
    4.0.0 lines 290-319) only logs when the last known leader is acceptable and returns true either
    way, so a fenced last known leader is elected; 4.1.0 (lines 314-318) returns false.  Matters
    only with ELR switched on by hand on 4.0."""
    return release.at_least(4, 1)


def last_known_leader_simplified(release: Release) -> bool:
    """PR #20629 "MINOR: simplify last known elr update" (4.1.1 and 4.2.0): ``maybeUpdateLastKnownLeader``
    (PartitionChangeBuilder.java 4.1.2 lines 495-504) sets LKE = [leader] when the record writes
    leader -1 and LKE is empty, clears it when the record names a leader >= 0; 4.1.0 (lines 495-506)
    sets it when the record writes an empty ISR and LKE is not [leader], clears it when the
    partition keeps or gets a leader."""
    return release.at_least(4, 1, 1)


def unclean_leader_election_configurable(release: Release) -> bool:
    """Whether the KRaft controller reads ``unclean.leader.election.enable`` at all: from 3.9.0
    (KAFKA-12670, commit 7356328f530).  Before, ``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic``
    is ``return false; // TODO: support configuring unclean leader election.`` (ConfigurationControlManager.java
    3.6.1 lines 478-480; 3.7.2 and 3.8.1 lines 498-500; KAFKA-12670 is on no 3.7/3.8 branch): no fence, unfence, controlled shutdown or
    AlterPartition builder is ever UNCLEAN, and there is no periodic ``maybeElectUncleanLeaders``
    (absent from ReplicationControlManager.java 3.6.1; 3.9 lines 1684-1720).  Only an admin
    ``ElectLeaders`` with ElectionType.UNCLEAN (``electLeader``, 3.6.1 lines 1368-1412) elects
    outside the ISR."""
    return release.at_least(3, 9)


def isr_shrink_bump_reads_target_isr(release: Release) -> bool:
    """Before 3.8.0 (KAFKA-16624, commit a3f24149905) the ISR-shrink leader-epoch bump is decided
    on the builder's *target* ISR, before the ISR is written: ``triggerLeaderEpochBumpIfNeeded``
    (PartitionChangeBuilder.java 3.6.1 lines 289-301, called at line 333, the ISR set at lines
    335-338) tests ``!Replicas.contains(targetIsr, partition.isr)``.  An empty target ISR -- the
    last ISR member of a partition already without a leader removed, e.g. the SHUTDOWN_NOW
    ``handleBrokerFenced`` after a controlled shutdown -- is a "shrink": the record sets the
    leader (-1 again) although the ISR is not written, so a useless record bumps both epochs.
    From 3.8.0 ``triggerLeaderEpochBumpForIsrShrinkIfNeeded`` (3.9 lines 396-423, called at line
    471 after the ISR is set) reads ``record.isr()``: no ISR field, no bump, no record.  Only
    matters when the bump is on at all (MV < 3.6-IV0 or ZooKeeper migration mode).  3.7.x still
    reads the target ISR (3.7.2 lines 392-405, called at line 438, the ISR set at lines 443-451);
    3.8.x has the split (3.8.1 lines 395-420, called at line 473)."""
    return not release.at_least(3, 8)


def reassignment_completes_when_adding_in_isr(release: Release) -> bool:
    """Before 3.8.0 (KAFKA-15665, commit 756f44a3e58) a reassignment completes once the target ISR
    minus the removing replicas is non-empty and holds every *adding* replica
    (``PartitionReassignmentReplicas.maybeCompleteReassignment``, PartitionReassignmentReplicas.java
    3.6.1 lines 98-133, the check at lines 123-125); from 3.8.0 it must hold every *target* replica
    (3.9 lines 97-126: ``newTargetIsr.containsAll(newTargetReplicas)``).  They differ when a target
    replica that is not being added (it was a replica already) is out of the ISR.  3.7.2: the
    *adding* loop (lines 123-125); 3.8.1: ``containsAll(newTargetReplicas)`` (line 122)."""
    return not release.at_least(3, 8)


def reassignment_completes_kafka_19975(release: Release) -> bool:
    """From 4.3.0 (KAFKA-19975, PR #21114; 4.4.0 the same bytecode) a reassignment completes once
    every *adding* replica is in the ISR, and every target replica only when it removes more
    replicas than it adds (``maybeCompleteReassignment``, PartitionReassignmentReplicas.java 4.3.0
    lines 122-129); 3.8.0-4.2.x wait for every target replica (:func:`reassignment_completes_when_adding_in_isr`)."""
    return release.at_least(4, 3)


def partition_directories_supported(release: Release) -> bool:
    """Partition registrations carry replica directories from 3.7.0 (KIP-858): 3.6's
    ``PartitionRegistration`` has no ``directories`` (PartitionRegistration.java 3.6.1 lines
    159-188: ``merge`` knows replicas, ISR, adding, removing, leader, epochs, recovery state only),
    no ``LeaderAcceptor``, no ``handleAssignReplicasToDirs`` and no ``handleDirectoriesOffline``.
    3.7.0 has them all (ReplicationControlManager.java 3.7.2: ``handleDirectoriesOffline`` lines
    1387-1412, ``handleAssignReplicasToDirs`` 2078-2151, ``LeaderAcceptor`` 2258-2282; 3.8.1 lines
    1415-1440, 2119-2192, 2313-2337), gated on metadata version 3.7-IV2 as in 3.9
    (:func:`directory_assignment_supported`)."""
    return release.at_least(3, 7)


def leader_epoch_bump_required_on_isr_shrink(mv: ProtocolVersion) -> bool:
    """``MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink`` (MetadataVersion.java 3.9 lines
    331-333; 3.6.1 lines 274-276, the same): below 3.6-IV0 every ISR shrink bumps the leader epoch (KAFKA-15021); from 3.6-IV0
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


def unclean_leader_election_enabled(controller_config: Mapping[str, object], topic_config: Mapping[str, object],
                                    release: Release) -> bool:
    """``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`` (ConfigurationControlManager.java
    3.9 lines 511-518): the topic's effective value (its override, else the controller's dynamic
    and static config) read with ``Boolean.parseBoolean`` -- "true" in any case, *not* trimmed:
    " true" is false here, while ZooKeeper mode's LogConfig trims it.  Always false before 3.9.0
    (:func:`unclean_leader_election_configurable`)."""
    if not unclean_leader_election_configurable(release):
        return False
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

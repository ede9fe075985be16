"""What a ZooKeeper -> KRaft migration (KIP-866) changes in the 3.9 KRaft controller's partition
decisions, pure.

The phases the harness sees once the metadata is migrated (``ZkMigrationStateRecord`` MIGRATION,
written by ``QuorumController.MigrationRecordConsumer.completeMigration``, QuorumController.java
lines 1033-1046): *hybrid* -- the KRaft controller active, some or all brokers still ZooKeeper-mode
brokers registered with it as migrating ZK brokers -- and *dual-write* -- every broker KRaft, the
controller still mirroring its metadata into ZooKeeper.  In both the controller is the KRaft
quorum controller of :mod:`oracle.kraft`; what differs is read from ``ClusterState.config``:

* ``"zookeeper.metadata.migration.enable"`` (:data:`MIGRATION_ENABLE`): the **active controller's**
  static setting (``KRaftConfigs.MIGRATION_ENABLED_CONFIG``, KRaftConfigs.java 3.9 line 119,
  BOOLEAN default false, line 147; ``KafkaConfig.migrationEnabled``, KafkaConfig.scala line 325).
  With it -- and a metadata version that supports migration, 3.4-IV0+ -- every
  ``PartitionChangeBuilder`` the controller builds bumps the leader epoch on an ISR shrink
  (:func:`isr_shrink_bumps_leader_epoch`).  It is what the controller was *started* with, not
  the migration state: on in hybrid and dual-write, off once the controllers are rolled without
  it (finalisation), and still on for a controller that has not been rolled yet, even after
  another one wrote POST_MIGRATION (ActivationRecordsGenerator.java lines 196-202 only log
  "Ignoring"; ``zkRegistrationAllowed`` does not read the state).
* ``"oracle.migrating.zk.brokers"`` (:data:`MIGRATING_ZK_BROKERS`, the oracle's own key, not a Kafka
  setting): the broker ids whose current registration has ``isMigratingZkBroker`` set
  (``RegisterBrokerRecord``, ClusterControlManager.java lines 422-427), comma-separated
  (``"1,2"``).  For leader/ISR purposes a ZooKeeper broker is a KRaft broker (registration,
  heartbeats, fencing, unfencing, controlled shutdown: see ``oracle/README.md``, "KRaft during a
  ZooKeeper migration"); it differs in two places only: a failed log directory halts it
  (:func:`log_dir_failure_halts`) and a controller without migration refuses its registration
  (:func:`zk_registration_allowed`).

Line numbers are those of apache/kafka branch ``3.9`` (commit ``c821449fb7c1``), files under
``metadata/src/main/java/org/apache/kafka/controller/`` unless said otherwise.

3.6.x: the same migration-mode switch (``triggerLeaderEpochBumpIfNeeded``, PartitionChangeBuilder.java
3.6.1 line 291: ``isLeaderEpochBumpRequiredOnIsrShrink() || zkMigrationEnabled``, KAFKA-15109,
in 3.6.0 already), the same ``zkRegistrationAllowed`` (ClusterControlManager.java 3.6.1 lines
308-310, the registration check at lines 342-344) and the same builders (ReplicationControlManager.java
3.6.1 lines 1013, 1401, 1537, 1758, 1871, 1929).  What differs: a migrating ZooKeeper broker's
failed log directory halts it for another reason (:func:`log_dir_failure_halts`).  The model is
the controller's: up to 3.6.1 a ZooKeeper *broker* ignores a LeaderAndIsr that does not raise the
leader epoch (``ReplicaManager.becomeLeaderOrFollower``, ReplicaManager.scala 3.6.1 line 1821;
KAFKA-16121, fixed in 3.6.2 by commit 7486223d9e3, which changed no controller code), so a
reassignment in hybrid mode is predicted as the controller decides it -- completed once the
new replicas join -- and a 3.6.1 cluster that stalls fails the oracle check: the known-bad
finding of docs/findings.md §7.

3.7.x and 3.8.x (audited from the 3.7.2 and 3.8.1 sources jars): the same switch
(``triggerLeaderEpochBumpIfNeeded``, PartitionChangeBuilder.java 3.7.2 lines 392-405; 3.8.1
``triggerLeaderEpochBumpForIsrShrinkIfNeeded`` lines 395-420), the same ``zkRegistrationAllowed``
(ClusterControlManager.java 3.7.2 lines 319-321, 3.8.1 lines 334-336), the same six builders that
set it (ReplicationControlManager.java 3.7.2 lines 1074, 1505, 1647, 1863, 1979, 2041; 3.8.1 lines
1086, 1533, 1675, 1901, 2020, 2082), the same ``iterateTopics`` (ZkTopicMigrationClient.scala 3.7.2
and 3.8.1 lines 51-96) and the 3.9 halt of a migrating ZooKeeper broker on a failed log directory
(ReplicaManager.scala 3.7.2 lines 2618-2621, 3.8.1 lines 2496-2499; KAFKA-15357, first in 3.7.0).
The KAFKA-16121 broker fix is in 3.7.0 (4280df48161) and 3.8.0 (d0f845a5e1a).  What differs is
not the partition decisions: KAFKA-17457 (619aa479635 on 3.7, e1c877a808a on 3.8: first released in
3.7.2 and 3.8.1) makes a controller with an empty log enter pre-migration only from metadata
version 3.6-IV1 (ActivationRecordsGenerator.java 3.7.2 lines 91-92), and the migration driver's
race fixes (KAFKA-16667, KAFKA-17506) are the driver's, which the model does not cover.
"""

from __future__ import annotations

from typing import Mapping

from kafka_chaos.oracle import config as cfg
from kafka_chaos.oracle.kraft import config as kcfg
from kafka_chaos.oracle.release import ProtocolVersion, Release
from kafka_chaos.oracle.state import NO_LEADER, RECOVERED, PartitionPhase, PartitionState

MIGRATION_ENABLE = cfg.ZOOKEEPER_METADATA_MIGRATION_ENABLE
MIGRATING_ZK_BROKERS = "oracle.migrating.zk.brokers"


def zk_migration_enabled(config: Mapping[str, object]) -> bool:
    """``KafkaConfig.migrationEnabled`` of the active controller (KafkaConfig.scala 3.9 line 325),
    handed to the QuorumController by ``ControllerServer`` (ControllerServer.scala line 262,
    ``setZkMigrationEnabled(config.migrationEnabled)``) and on to ``ClusterControlManager``
    (QuorumController.java line 1934).  Read as ``ConfigDef.parseType(BOOLEAN)`` (ConfigDef.java
    lines 699-706: trimmed, case-insensitive); absent: false.  Any other value: ValueError --
    the controller refuses to start (ConfigException)."""
    value = config.get(MIGRATION_ENABLE, False)
    parsed = cfg.parse_bool(value)
    if parsed is None:
        raise ValueError(f"{MIGRATION_ENABLE}={value!r} is not true or false: the controller would not start")
    return parsed


def migration_supported(mv: ProtocolVersion) -> bool:
    """``MetadataVersion.isMigrationSupported`` (server-common MetadataVersion.java 3.9 lines
    373-375): 3.4-IV0+ (KIP-866)."""
    return mv.at_least(3, 4, 0)


def zk_registration_allowed(config: Mapping[str, object], mv: ProtocolVersion) -> bool:
    """``ClusterControlManager.zkRegistrationAllowed`` (ClusterControlManager.java lines 352-354):
    the controller's ``zookeeper.metadata.migration.enable`` and a metadata version supporting
    migration.  It is both the ``zkMigrationEnabled`` every partition builder gets
    (ReplicationControlManager.java lines 1073, 1520, 1669, 1939, 2058, 2120) and the condition
    for a migrating ZK broker's registration (``registerBroker`` lines 385-387: else
    BrokerIdNotRegisteredException, the broker stays unregistered / fenced)."""
    return zk_migration_enabled(config) and migration_supported(mv)


def isr_shrink_bumps_leader_epoch(config: Mapping[str, object], mv: ProtocolVersion) -> bool:
    """The guard of ``PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded``
    (PartitionChangeBuilder.java lines 396-409): ``metadataVersion.isLeaderEpochBumpRequiredOnIsrShrink()
    || zkMigrationEnabled``.  Below metadata version 3.6-IV0 always (KAFKA-15021,
    MetadataVersion.java lines 331-333); from it, only "during ZK migration ... in order to
    maintain compatibility with migrating brokers that are still in ZK mode" (lines 404-405),
    i.e. while :func:`zk_registration_allowed`.  When it holds, a record whose ISR loses a member
    and that does not change the leader writes the *same* leader (lines 410-422): leader epoch +1
    (``PartitionRegistration.merge``).  The builder's default is false (line 121): only the six
    ReplicationControlManager builders above set it -- every one that can shrink an ISR (the
    AssignReplicasToDirs builder, lines 2196-2206, only moves a replica's directory)."""
    return kcfg.leader_epoch_bump_required_on_isr_shrink(mv) or zk_registration_allowed(config, mv)


def parse_broker_ids(value: object) -> frozenset[int] | None:
    """``"1,2"`` (spaces allowed, empty: none) -> {1, 2}; a list or set of ints too; None if it is
    neither."""
    if isinstance(value, (list, tuple, set, frozenset)):
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
            return frozenset(value)
        return None
    if not isinstance(value, str):
        return None
    ids: set[int] = set()
    for part in value.split(","):
        text = part.strip()
        if not text:
            continue
        if not text.isdigit():
            return None
        ids.add(int(text))
    return frozenset(ids)


def migrating_zk_brokers(config: Mapping[str, object]) -> frozenset[int]:
    """The brokers registered as migrating ZooKeeper brokers (:data:`MIGRATING_ZK_BROKERS`); none
    when absent.  A value that is not a broker-id list: ValueError."""
    value = config.get(MIGRATING_ZK_BROKERS, "")
    parsed = parse_broker_ids(value)
    if parsed is None:
        raise ValueError(f"{MIGRATING_ZK_BROKERS}={value!r} is not a comma-separated list of broker ids")
    return parsed


def log_dir_failure_halts(config: Mapping[str, object], broker: int) -> bool:
    """A migrating ZooKeeper broker (it runs with ``zookeeper.metadata.migration.enable=true``,
    which its registration as a ZK broker needs: KafkaServer.scala 3.9 lines 417-429) halts on
    *any* failed log directory: ``ReplicaManager.handleLogDirFailure`` (ReplicaManager.scala 3.9
    lines 2507-2511: "Shutdown broker because some log directory has failed during migration
    mode", ``Exit.halt(1)``; the 3.9 docs' migration limitations, KAFKA-16431).  ``Exit.halt``
    runs no shutdown hook: no controlled shutdown, the controller fences it when its session
    expires (``broker.session.timeout.ms``) -- a ``BrokerFailure`` of that broker, whatever the
    metadata version (no ``handleDirectoriesOffline``).

    3.6.x has no such halt (added in 3.7.0 by KAFKA-15357, commit a03a71d7b5f; ReplicaManager.scala
    3.6.1 lines 2316-2353 only stops the replicas and writes ``/log_dir_event_notification``, which
    the KRaft controller does not read) -- but a ZooKeeper broker in migration mode has exactly one
    log directory (``require(logDirs.size == 1, "Cannot enable ZooKeeper migration when multiple
    log directories (aka JBOD) are in use.")``, KafkaConfig.scala 3.6.1 line 2376), and when the
    last live directory fails ``LogManager.handleLogDirFailure`` halts the broker ("Shutdown broker
    because all log dirs ... have failed", ``Exit.halt(1)``, LogManager.scala 3.6.1 lines 214-219).
    Same prediction."""
    return broker in migrating_zk_brokers(config)


def topics_queued_for_deletion_migrated(release: Release) -> bool:
    """Whether the migration copies topics queued for deletion (``/admin/delete_topics``) into
    KRaft: 3.6.0 does (``iterateTopics`` reads ``getAllTopicsInCluster``, ZkTopicMigrationClient.scala
    3.6.0 lines 50-51); from 3.6.1 (KAFKA-15605, commit 1de84590c47) they are left out
    (ZkTopicMigrationClient.scala 3.6.1 lines 50-60) and the brokers delete their logs."""
    return not release.at_least(3, 6, 1)


def check_supported(config: Mapping[str, object], mv: ProtocolVersion) -> None:
    """Refuse what no 3.9 controller runs: a migration setting that does not parse, migration on a
    metadata version below 3.4-IV0 (``ActivationRecordsGenerator.recordsForNonEmptyLog`` throws,
    ActivationRecordsGenerator.java lines 155-157; an empty log even needs 3.6-IV1 for a new
    migration, lines 91-107), a malformed :data:`MIGRATING_ZK_BROKERS`."""
    enabled = zk_migration_enabled(config)
    if enabled and not migration_supported(mv):
        raise ValueError(f"{MIGRATION_ENABLE}=true needs metadata.version 3.4-IV0 or later: the controller "
                         "refuses to activate (ActivationRecordsGenerator)")
    migrating_zk_brokers(config)


def migrated_partition(zk: PartitionState, state_znode_version: int | None) -> PartitionState:
    """The registration the migration writes for a partition read from ZooKeeper (``zk``: the
    ZooKeeper model's partition; its leader and ISR are ignored without a state znode)
    (``ZkTopicMigrationClient.iterateTopics``, core/src/main/scala/kafka/zk/migration/ZkTopicMigrationClient.scala
    3.9 lines 70-99): replicas, adding and removing replicas from the topic znode; leader, ISR,
    leader epoch and recovery state from the state znode, and as partition epoch the state
    znode's ``version`` (``TopicPartitionStateZNode.decode``, core/.../zk/ZkData.scala lines
    400-413: ``LeaderAndIsr.partitionEpoch = stat.getVersion``).  No state znode
    (``state_znode_version`` None, a ZooKeeper NewPartition): leader = the first replica, ISR =
    all replicas, both epochs 0, RECOVERED (lines 88-96) -- whatever the brokers' state.  Topics
    queued for deletion are not migrated (lines 51-60).  Directories: MIGRATING for every replica
    (``PartitionRegistration(PartitionRecord)``, metadata/.../PartitionRegistration.java lines
    198-207), which ``DirectoryId.isOnline`` counts as online."""
    if state_znode_version is None:
        return PartitionState(
            replicas=zk.replicas, leader=zk.replicas[0], isr=zk.replicas, leader_epoch=0,
            leader_recovery_state=RECOVERED, adding_replicas=zk.adding_replicas,
            removing_replicas=zk.removing_replicas, partition_epoch=0,
        )
    if state_znode_version < 0:
        raise ValueError(f"a znode version is never negative, got {state_znode_version}")
    if zk.phase is PartitionPhase.NEW:
        raise ValueError("a NewPartition has no state znode: pass state_znode_version=None")
    phase = PartitionPhase.OFFLINE if zk.leader == NO_LEADER else PartitionPhase.ONLINE
    return zk.with_changes(partition_epoch=state_znode_version, phase=phase)

"""The few broker and topic settings the controller's decisions depend on, with Kafka 3.9 defaults.

Values are Kafka strings (``"true"``); Python booleans and ints are accepted too.  The names are
repeated here rather than imported from ``harness.config`` because the oracle must stay pure.
"""

from __future__ import annotations

from typing import Mapping

from kafka_chaos.oracle.release import NEWEST, Release, protocol_version

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"  # default false
AUTO_LEADER_REBALANCE_ENABLE = "auto.leader.rebalance.enable"  # default true
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = "leader.imbalance.per.broker.percentage"  # default 10
CONTROLLED_SHUTDOWN_ENABLE = "controlled.shutdown.enable"  # default true
CONTROLLED_SHUTDOWN_MAX_RETRIES = "controlled.shutdown.max.retries"  # default 3
DELETE_TOPIC_ENABLE = "delete.topic.enable"  # default true (KafkaConfig.deleteTopicEnable)
# KRaft controller only (oracle.kraft.migration): KIP-866 migration mode, default false
ZOOKEEPER_METADATA_MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"

BOOLEAN_SETTINGS = frozenset(
    {UNCLEAN_LEADER_ELECTION_ENABLE, AUTO_LEADER_REBALANCE_ENABLE, CONTROLLED_SHUTDOWN_ENABLE, DELETE_TOPIC_ENABLE,
     ZOOKEEPER_METADATA_MIGRATION_ENABLE}
)
INTEGER_SETTINGS = frozenset({LEADER_IMBALANCE_PER_BROKER_PERCENTAGE, CONTROLLED_SHUTDOWN_MAX_RETRIES})


def parse_bool(value: object) -> bool | None:
    """``ConfigDef.parseType(..., BOOLEAN)`` (clients ``ConfigDef.java``): trims, then case-insensitive
    "true"/"false"; None if it is neither.  How ``KafkaConfig`` and ``LogConfig`` read settings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def scala_to_boolean(value: object) -> bool | None:
    """Scala 2.13 ``StringOps.toBoolean``: case-insensitive "true"/"false" *without* trimming
    (" true" throws).  Checked with scala-library-2.13.15.jar and kafka-clients-3.9.2.jar in jshell:
    ``scala.collection.StringOps$.MODULE$.toBoolean$extension(" true")`` throws, while
    ``ConfigDef.parseType("unclean.leader.election.enable", " true", BOOLEAN)`` is true."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def parse_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _bool_setting(config: Mapping[str, object], name: str, default: bool) -> bool:
    parsed = parse_bool(config.get(name, default))
    return default if parsed is None else parsed


def _int_setting(config: Mapping[str, object], name: str, default: int) -> int:
    parsed = parse_int(config.get(name, default))
    return default if parsed is None else parsed


def unclean_leader_election_enabled(broker_config: Mapping[str, object], topic_config: Mapping[str, object]) -> bool:
    """``LogConfig`` of the topic: its ``/config/topics/<t>`` overrides merged over the controller's
    broker config (``ZkPartitionStateMachine.collectUncleanLeaderElectionState`` →
    ``zkClient.getLogConfigs(topics, config.originals())``)."""
    merged = {**broker_config, **topic_config}
    return _bool_setting(merged, UNCLEAN_LEADER_ELECTION_ENABLE, False)


def topic_override_enables_unclean(topic_config: Mapping[str, object]) -> bool:
    """``TopicConfigHandler.processConfigChanges`` (ConfigHandler.scala 3.9 lines 145-147): only the
    topic's own override, parsed with ``Try(...toBoolean).getOrElse(false)``, sends
    ``TopicUncleanLeaderElectionEnable`` to the controller.  ``toBoolean`` does not trim: " true"
    sends nothing, although the topic's LogConfig (which trims) then allows unclean elections at the
    next election of that partition."""
    return scala_to_boolean(topic_config.get(UNCLEAN_LEADER_ELECTION_ENABLE)) is True


FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"


def throttled_followers(topic_config: Mapping[str, object], partition: int) -> frozenset[int] | None:
    """The brokers whose follower replica of ``partition`` the topic's
    ``follower.replication.throttled.replicas`` throttles (``"partition:broker,..."``), None for
    ``*`` (every one): ``TopicConfigHandler.parseThrottledPartitions`` (ConfigHandler.scala 3.9 line
    150; a follower reads the entries naming itself). Such a follower fetches at its broker's
    ``follower.replication.throttled.rate`` while out of the ISR
    (``RemoteLeaderEndPoint.shouldFollowerThrottle``, 3.9 line 236; 3.4 line 231): at a few bytes
    a second it never catches up."""
    value = str(topic_config.get(FOLLOWER_THROTTLED_REPLICAS, "")).strip()
    if value == "*":
        return None
    named = (entry.split(":") for entry in value.split(",") if entry.count(":") == 1)
    return frozenset(int(b) for p, b in named
                     if p.strip().isdigit() and b.strip().isdigit() and int(p) == partition)


def follower_throttled(topic_config: Mapping[str, object], partition: int, broker: int) -> bool:
    """Whether the topic throttles ``broker``'s follower replica of ``partition``."""
    if FOLLOWER_THROTTLED_REPLICAS not in topic_config:
        return False
    named = throttled_followers(topic_config, partition)
    return named is None or broker in named


def auto_leader_rebalance_enabled(config: Mapping[str, object]) -> bool:
    return _bool_setting(config, AUTO_LEADER_REBALANCE_ENABLE, True)


def leader_imbalance_per_broker_percentage(config: Mapping[str, object]) -> int:
    return _int_setting(config, LEADER_IMBALANCE_PER_BROKER_PERCENTAGE, 10)


def controlled_shutdown_enabled(config: Mapping[str, object]) -> bool:
    return _bool_setting(config, CONTROLLED_SHUTDOWN_ENABLE, True)


def delete_topic_enabled(config: Mapping[str, object]) -> bool:
    """``delete.topic.enable``: when false, ``processTopicDeletion`` only removes the
    ``/admin/delete_topics`` entries (KafkaController.scala 3.9 lines 1806-1810)."""
    return _bool_setting(config, DELETE_TOPIC_ENABLE, True)


def controlled_shutdown_max_retries(config: Mapping[str, object]) -> int:
    return _int_setting(config, CONTROLLED_SHUTDOWN_MAX_RETRIES, 3)


def leader_recovery_supported(config: Mapping[str, object], release: Release = NEWEST) -> bool:
    """``ZkPartitionStateMachine.isLeaderRecoverySupported``: IBP >= 3.2-IV0 (KIP-704; the default
    IBP is the release's own, so releases before 3.2 never write RECOVERING)."""
    return release.at_least(3, 2) and protocol_version(config, release).at_least(3, 2, 0)

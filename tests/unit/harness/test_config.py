"""Config layering and validation (no processes)."""

from __future__ import annotations

import re

import pytest

from kafka_chaos.harness import config as c
from kafka_chaos.harness.config import ClusterConfig, broker_properties, parse_set_options, zookeeper_properties
from kafka_chaos.harness.errors import UsageError


def props(cfg: ClusterConfig, broker_id: int = 1) -> dict[str, str]:
    return broker_properties(cfg, broker_id, zookeeper_connect="127.0.0.1:2181",
                             listeners={"PLAINTEXT": "127.0.0.1:9092"}, log_dir="/data")


def test_defaults_fit_a_three_broker_test_cluster() -> None:
    p = props(ClusterConfig())
    assert p[c.BROKER_ID] == "1"
    assert p[c.ZOOKEEPER_CONNECT] == "127.0.0.1:2181"
    assert p[c.LISTENERS] == "PLAINTEXT://127.0.0.1:9092"
    assert p[c.ADVERTISED_LISTENERS] == "PLAINTEXT://127.0.0.1:9092"
    assert p[c.LOG_DIRS] == "/data"
    assert p[c.ZOOKEEPER_SESSION_TIMEOUT_MS] == "6000"
    assert p[c.AUTO_LEADER_REBALANCE_ENABLE] == "false"  # scenarios ask for it (docs/recall.md)
    assert p[c.CONTROLLED_SHUTDOWN_ENABLE] == "true"
    assert p[c.OFFSETS_TOPIC_REPLICATION_FACTOR] == "3"
    assert p[c.TRANSACTION_STATE_LOG_REPLICATION_FACTOR] == "3"
    assert list(p) == sorted(p)


@pytest.mark.parametrize("brokers, replication, min_isr", [(1, "1", "1"), (2, "2", "2"), (5, "3", "2")])
def test_internal_topics_fit_the_broker_count(brokers: int, replication: str, min_isr: str) -> None:
    p = props(ClusterConfig(brokers=brokers))
    assert p[c.OFFSETS_TOPIC_REPLICATION_FACTOR] == replication
    assert p[c.TRANSACTION_STATE_LOG_REPLICATION_FACTOR] == replication
    assert p[c.TRANSACTION_STATE_LOG_MIN_ISR] == min_isr


def test_layers_defaults_then_cluster_then_broker() -> None:
    cfg = ClusterConfig(
        cluster_overrides={c.UNCLEAN_LEADER_ELECTION_ENABLE: "true", c.REPLICA_LAG_TIME_MAX_MS: "5000"},
        broker_overrides={2: {c.REPLICA_LAG_TIME_MAX_MS: "7000"}})
    assert props(cfg, 1)[c.UNCLEAN_LEADER_ELECTION_ENABLE] == "true"
    assert props(cfg, 1)[c.REPLICA_LAG_TIME_MAX_MS] == "5000"
    assert props(cfg, 2)[c.REPLICA_LAG_TIME_MAX_MS] == "7000"
    assert props(cfg, 3)[c.REPLICA_LAG_TIME_MAX_MS] == "5000"
    assert c.shared_broker_settings(cfg)[c.REPLICA_LAG_TIME_MAX_MS] == "5000"


def test_a_default_can_be_overridden() -> None:
    cfg = ClusterConfig(cluster_overrides={c.AUTO_LEADER_REBALANCE_ENABLE: "true"})
    assert props(cfg)[c.AUTO_LEADER_REBALANCE_ENABLE] == "true"


def test_misspelled_property_is_refused_with_a_suggestion() -> None:
    with pytest.raises(UsageError, match="zookeeper.session.tmeout.ms.*did you mean 'zookeeper.session.timeout.ms'"):
        ClusterConfig(cluster_overrides={"zookeeper.session.tmeout.ms": "6000"})


def test_misspelled_per_broker_property_is_refused() -> None:
    with pytest.raises(UsageError, match="broker 2 property 'unclean.leader.election'"):
        ClusterConfig(broker_overrides={2: {"unclean.leader.election": "true"}})


@pytest.mark.parametrize("key", [c.BROKER_ID, c.LISTENERS, c.LOG_DIRS, c.ZOOKEEPER_CONNECT])
def test_launcher_properties_cannot_be_overridden(key: str) -> None:
    with pytest.raises(UsageError, match="set by the launcher"):
        ClusterConfig(cluster_overrides={key: "x"})


def test_internal_and_per_listener_properties_are_known() -> None:
    ClusterConfig(cluster_overrides={c.LOG_INITIAL_TASK_DELAY_MS: "0",
                                     "listener.name.plaintext.max.connections": "100"})


def test_every_name_constant_is_a_known_broker_property() -> None:
    names = {v for k, v in vars(c).items() if k.isupper() and isinstance(v, str) and "." in v
             and not k.startswith(("_", "ZK_", "KNOWN_"))}
    assert names and names <= c.KNOWN_BROKER_PROPERTIES


@pytest.mark.parametrize("bad", [
    {"brokers": 0}, {"brokers": 10}, {"broker_heap": "lots"}, {"zk_tick_time_ms": 0},
    {"broker_overrides": {4: {c.MIN_INSYNC_REPLICAS: "2"}}},
    {"cluster_overrides": {c.MIN_INSYNC_REPLICAS: "2\nbroker.id=9"}},
])
def test_bad_config_is_refused_before_start(bad: dict) -> None:
    with pytest.raises(UsageError):
        ClusterConfig(**bad)


def test_session_timeout_must_be_grantable_by_zookeeper() -> None:
    with pytest.raises(UsageError, match="2 x tickTime"):
        ClusterConfig(zk_tick_time_ms=2000, cluster_overrides={c.ZOOKEEPER_SESSION_TIMEOUT_MS: "3000"})


def test_zookeeper_honours_the_broker_session_timeout() -> None:
    zk = zookeeper_properties(ClusterConfig(), port=2181, data_dir="/zk")
    tick = int(zk[c.ZK_TICK_TIME])
    assert int(zk[c.ZK_MIN_SESSION_TIMEOUT]) <= 6000 <= int(zk[c.ZK_MAX_SESSION_TIMEOUT])
    assert tick == 500 and zk[c.ZK_ADMIN_ENABLE_SERVER] == "false"
    long_session = ClusterConfig(cluster_overrides={c.ZOOKEEPER_SESSION_TIMEOUT_MS: "30000"})
    assert int(zookeeper_properties(long_session, port=1, data_dir="/")[c.ZK_MAX_SESSION_TIMEOUT]) >= 30000


def test_unknown_broker_id_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown broker id 4"):
        props(ClusterConfig(), 4)


def test_first_broker_id_numbers_the_brokers() -> None:
    cfg = ClusterConfig(brokers=3, first_broker_id=4, broker_overrides={6: {c.NUM_IO_THREADS: "2"}})
    assert cfg.broker_ids() == [4, 5, 6]
    assert props(cfg, 4)[c.BROKER_ID] == "4" and props(cfg, 6)[c.NUM_IO_THREADS] == "2"
    with pytest.raises(UsageError, match="unknown broker id 1: the brokers are 4, 5, 6"):
        props(cfg, 1)
    with pytest.raises(UsageError, match="override for broker 1"):
        ClusterConfig(brokers=3, first_broker_id=4, broker_overrides={1: {c.NUM_IO_THREADS: "2"}})


@pytest.mark.parametrize("bad", [-1, True, "4"])
def test_first_broker_id_must_be_a_non_negative_int(bad: object) -> None:
    with pytest.raises(UsageError, match="first_broker_id"):
        ClusterConfig(first_broker_id=bad)  # type: ignore[arg-type]


def test_set_options_split_cluster_and_broker_overrides() -> None:
    cluster, per_broker = parse_set_options(["min.insync.replicas=2", "2:replica.lag.time.max.ms=5000",
                                             "log.dirs.x=a=b"])
    assert cluster == {"min.insync.replicas": "2", "log.dirs.x": "a=b"}
    assert per_broker == {2: {"replica.lag.time.max.ms": "5000"}}
    with pytest.raises(UsageError, match="key=value"):
        parse_set_options(["novalue"])


def test_rendered_properties_escape_what_java_would_misread() -> None:
    text = c.render_properties({"b.key": "x", "a:key": "C:\\dir"})
    assert text == "a\\:key=C:\\\\dir\nb.key=x\n"


def test_control_plane_listener_is_a_second_plaintext_listener_named_by_kip_291() -> None:
    cfg = ClusterConfig(control_plane_listener=True)
    p = broker_properties(cfg, 1, zookeeper_connect="127.0.0.1:2181", log_dir="/data",
                          listeners={"PLAINTEXT": "127.0.0.1:9092", c.CONTROL_PLANE_LISTENER: "127.0.0.1:9093"})
    assert p[c.LISTENERS] == "PLAINTEXT://127.0.0.1:9092,CONTROL_PLANE://127.0.0.1:9093"
    assert p[c.ADVERTISED_LISTENERS] == p[c.LISTENERS]
    assert p[c.LISTENER_SECURITY_PROTOCOL_MAP] == "PLAINTEXT:PLAINTEXT,CONTROL_PLANE:PLAINTEXT"
    assert p[c.CONTROL_PLANE_LISTENER_NAME] == "CONTROL_PLANE"
    # KafkaConfig.validateValues: it must differ from the inter-broker listener.
    assert p[c.INTER_BROKER_LISTENER_NAME] == "PLAINTEXT"
    assert c.CONTROL_PLANE_LISTENER_NAME not in props(ClusterConfig())


@pytest.mark.parametrize("listeners", [{"PLAINTEXT": "127.0.0.1:9092"},
                                       {"CONTROL_PLANE": "127.0.0.1:9093", "PLAINTEXT": "127.0.0.1:9092"}])
def test_control_plane_listener_needs_its_listener_after_the_inter_broker_one(listeners: dict[str, str]) -> None:
    with pytest.raises(c.HarnessError, match="CONTROL_PLANE"):
        broker_properties(ClusterConfig(control_plane_listener=True), 1, zookeeper_connect="z:1",
                          listeners=listeners, log_dir="/data")


def test_control_plane_listener_name_is_the_launchers() -> None:
    with pytest.raises(UsageError, match="set by the launcher"):
        ClusterConfig(cluster_overrides={c.CONTROL_PLANE_LISTENER_NAME: "CONTROL_PLANE"})


# --- per release ------------------------------------------------------------------------------

RELEASES = ["2.4.1", "2.5.1", "2.6.3", "2.7.2", "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2",
            "3.6.2", "3.7.2", "3.8.1", "3.9.2"]


def release_props(cfg: ClusterConfig, version: str) -> dict[str, str]:
    return broker_properties(cfg, 1, zookeeper_connect="127.0.0.1:2181", listeners={"PLAINTEXT": "127.0.0.1:9092"},
                             log_dir="/data", kafka_version=version)


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_has_its_own_names_and_every_setting_it_is_given(version: str) -> None:
    known = c.broker_property_names(version)
    assert known.kafka_version == version
    assert set(release_props(ClusterConfig(), version)) <= known.names | c.LAUNCHER_PROPERTIES


@pytest.mark.parametrize("version, has_delay", [("3.7.2", False), ("3.8.0", True), ("3.8.1", True), ("3.9.2", True),
                                                ("2.4.1", False)])
def test_a_default_the_release_lacks_is_not_written(version: str, has_delay: bool) -> None:
    # LogManager's initial task delay was a fixed 30 s (LogManager.InitialTaskDelayMs) until
    # log.initial.task.delay.ms appeared in 3.8.
    assert (c.LOG_INITIAL_TASK_DELAY_MS in release_props(ClusterConfig(), version)) is has_delay
    assert release_props(ClusterConfig(), version)[c.ZOOKEEPER_SESSION_TIMEOUT_MS] == "6000"


def test_an_override_the_release_lacks_is_refused_naming_the_releases_that_have_it() -> None:
    cfg = ClusterConfig(cluster_overrides={c.LOG_INITIAL_TASK_DELAY_MS: "0"})  # some release has it: accepted
    with pytest.raises(UsageError, match=r"not a Kafka 3\.4\.1 broker config \(Kafka 3\.8\.1 to 4\.4\.0 have it\)"):
        release_props(cfg, "3.4.1")
    assert release_props(cfg, "3.9.2")[c.LOG_INITIAL_TASK_DELAY_MS] == "0"


def test_a_name_only_old_releases_know_is_accepted_there_only() -> None:
    cfg = ClusterConfig(cluster_overrides={"zookeeper.sync.time.ms": "2000"})
    assert release_props(cfg, "2.8.2")["zookeeper.sync.time.ms"] == "2000"
    with pytest.raises(UsageError, match="not a Kafka 3.9.2 broker config"):
        release_props(cfg, "3.9.2")


def test_a_typo_is_refused_before_any_release_is_known() -> None:
    with pytest.raises(UsageError, match=r"did you mean 'zookeeper.session.timeout.ms'.*Kafka 2\.4-4\.4"):
        ClusterConfig(cluster_overrides={"zookeeper.session.tmeout.ms": "6000"})


def test_inter_broker_protocol_version_is_settable_on_every_release() -> None:
    for version in RELEASES:
        cfg = ClusterConfig(cluster_overrides={"inter.broker.protocol.version": "2.4"})
        assert release_props(cfg, version)["inter.broker.protocol.version"] == "2.4"


@pytest.mark.parametrize("version, session, lag", [("2.4.1", "6000", "10000"), ("2.4.0", "6000", "10000"),
                                                   ("2.5.0", "18000", "30000"), ("3.9.2", "18000", "30000")])
def test_the_timeouts_a_release_ships(version: str, session: str, lag: str) -> None:
    # KIP-537 (2.5.0) raised both: KafkaConfig.Defaults 2.4.1 vs 2.5.0
    assert c.shipped_timeouts(version) == {c.ZOOKEEPER_SESSION_TIMEOUT_MS: session, c.REPLICA_LAG_TIME_MAX_MS: lag}
    cfg = ClusterConfig(cluster_overrides=c.shipped_timeouts(version))  # a ZooKeeper that grants it
    assert int(zookeeper_properties(cfg, port=2181, data_dir="/z")[c.ZK_MAX_SESSION_TIMEOUT]) >= int(session)


# ---------------------------------------------------------------- Kafka 4.x (KRaft only)

RELEASES_4 = ["4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"]
# What 4.0 removed that layer 2 or a 3.9 user sets (AbstractKafkaConfig.CONFIG_DEF 4.0.2 lacks
# them: dumped into kafka_broker_properties.json): ZooKeeper, the IBP (KRaft: metadata.version),
# the message format (KIP-724), the ZooKeeper controller's controlled-shutdown retries and
# imbalance percentage.
REMOVED_IN_4_0 = ["zookeeper.session.timeout.ms", "zookeeper.connect", "inter.broker.protocol.version",
                  "log.message.format.version", "controlled.shutdown.max.retries",
                  "controlled.shutdown.retry.backoff.ms", "leader.imbalance.per.broker.percentage"]


def kraft_props(cfg: ClusterConfig, node_id: int, version: str) -> dict[str, str]:
    return c.kraft_node_properties(cfg, node_id, voters={3000: "127.0.0.1:1"}, address="127.0.0.1:9",
                                   log_dir="/d", kafka_version=version)


@pytest.mark.parametrize("version", RELEASES_4)
def test_each_4_x_release_has_its_own_names_without_what_4_0_removed(version: str) -> None:
    known = c.broker_property_names(version)
    assert known.kafka_version == version
    assert not known.names & set(REMOVED_IN_4_0)
    assert {"node.id", "process.roles", "controller.quorum.voters", "broker.session.timeout.ms",
            "unclean.leader.election.enable", "log.initial.task.delay.ms"} <= known.names


@pytest.mark.parametrize("version", RELEASES_4)
@pytest.mark.parametrize("node_id", [1, 3000])  # a broker, a controller
def test_a_4_x_node_is_given_only_names_its_release_has(version: str, node_id: int) -> None:
    props = kraft_props(ClusterConfig(mode="kraft"), node_id, version)
    assert set(props) <= c.broker_property_names(version).names
    assert props["broker.session.timeout.ms"] == "6000" and props["unclean.leader.election.enable"] == "false"


@pytest.mark.parametrize("name", ["inter.broker.protocol.version", "log.message.format.version"])
def test_a_setting_4_0_removed_is_refused_on_4_x_naming_the_releases_that_have_it(name: str) -> None:
    cfg = ClusterConfig(mode="kraft", cluster_overrides={name: "3.9"})
    assert kraft_props(cfg, 1, "3.9.2")[name] == "3.9"
    with pytest.raises(UsageError, match=rf"^cluster property '{re.escape(name)}' is not a Kafka 4\.0\.2 broker "
                                         rf"config \(Kafka 2\.4\.1 to 3\.9\.2 have it\)$"):
        kraft_props(cfg, 1, "4.0.2")


def test_a_name_only_4_x_knows_is_accepted_there_only() -> None:
    name = next(iter(sorted(c.broker_property_names("4.0.2").names - c.broker_property_names("3.9.2").names)))
    cfg = ClusterConfig(mode="kraft", cluster_overrides={name: "1"})
    assert kraft_props(cfg, 1, "4.0.2")[name] == "1"
    with pytest.raises(UsageError, match=r"not a Kafka 3\.9\.2 broker config \(Kafka 4\.0\.2 to 4\.4\.0 have it\)"):
        kraft_props(cfg, 1, "3.9.2")


@pytest.mark.parametrize("mode, version, line", [
    ("zookeeper", "4.0.0", "Kafka 4.0.0 has no ZooKeeper mode (removed in 4.0, KIP-833): use --mode kraft, "
                           "or a 2.4-3.9 release for --mode zookeeper"),
    ("migration", "4.1.2", "Kafka 4.1.2 cannot migrate from ZooKeeper (4.0 removed ZooKeeper mode: migrate on "
                           "3.9.x, then upgrade): use --mode kraft, or a 2.4-3.9 release for --mode migration"),
    ("kraft", "3.5.2", "--mode kraft runs Kafka 3.6.x, 3.7.x, 3.8.x and 3.9.x (the releases the KRaft model covers) "
                       "and 4.x (KRaft only), not 3.5.2"),
    ("kraft", "4.0.0", None), ("kraft", "4.4.0", None), ("kraft", "3.9.2", None), ("zookeeper", "3.9.2", None),
])
def test_4_x_runs_kraft_only_and_anything_else_is_one_line(mode: str, version: str, line: str | None) -> None:
    if line is None:
        c.check_kraft_release(mode, version)
        return
    with pytest.raises(UsageError) as info:
        c.check_kraft_release(mode, version)
    assert str(info.value) == line


@pytest.mark.parametrize("version, modes, default", [
    ("4.0.0", {"kraft"}, "kraft"), ("4.4.0", {"kraft"}, "kraft"),
    ("3.9.2", {"zookeeper", "kraft", "migration"}, None),
    ("3.6.1", {"zookeeper", "kraft", "migration"}, None),
    ("3.5.2", {"zookeeper"}, None), ("2.4.1", {"zookeeper"}, None),
])
def test_modes_and_default_mode(version: str, modes: set[str], default: str | None) -> None:
    assert c.modes_running(version) == modes
    assert c.default_mode(version) == default
    assert c.default_mode(None) is None


# JBOD in KRaft (KIP-858): a broker's log.dirs as ZooKeeper mode's, its metadata log in a directory
# of its own (a failed metadata log directory halts the broker: ReplicaManager.scala 3.9 branch
# lines 2502-2505); controllers keep one; before 3.7 refused in one line.
@pytest.mark.parametrize("version, node_id, dirs, expected", [
    ("3.9.2", 1, 2, {"log.dirs": "/d/a,/d/b", "metadata.log.dir": "/d/metadata"}),
    ("3.7.2", 1, 2, {"log.dirs": "/d/a,/d/b", "metadata.log.dir": "/d/metadata"}),
    ("4.4.0", 1, 3, {"log.dirs": "/d/a,/d/b,/d/c", "metadata.log.dir": "/d/metadata"}),
    ("3.9.2", 3000, 2, {"log.dirs": "/d"}),  # a controller: its metadata log only
    ("3.9.2", 1, 1, {"log.dirs": "/d"}),  # the metadata log in the one directory, as before
    ("3.6.2", 1, 1, {"log.dirs": "/d"}),
])
def test_kraft_brokers_get_their_log_dirs_and_a_metadata_dir_apart(version: str, node_id: int, dirs: int,
                                                                   expected: dict[str, str]) -> None:
    props = kraft_props(ClusterConfig(mode="kraft", log_dirs=dirs), node_id, version)
    assert {k: v for k, v in props.items() if k in ("log.dirs", "metadata.log.dir")} == expected


@pytest.mark.parametrize("version", ["3.6.0", "3.6.2"])
def test_kraft_jbod_before_3_7_is_refused_in_one_line(version: str) -> None:
    with pytest.raises(UsageError, match=f"needs Kafka 3.7 or later, not {version}") as info:
        kraft_props(ClusterConfig(mode="kraft", log_dirs=2), 1, version)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("release, args", [
    ("4.0.2", ["--feature", "eligible.leader.replicas.version=1", "--feature", "group.version=1"]),
    ("3.8.1", ["--feature", "eligible.leader.replicas.version=1", "--feature", "group.version=1"]),  # StorageTool 3.8.0 l. 227
    ("3.7.2", None),  # no --feature before 3.8
])
def test_format_feature_args_per_release(release: str, args: list[str] | None) -> None:
    from kafka_chaos.harness.config import format_feature_args

    config = ClusterConfig(mode="kraft", features=(("eligible.leader.replicas.version", 1), ("group.version", 1)))
    if args is None:
        with pytest.raises(UsageError, match="need Kafka 3.8 or later, not 3.7.2"):
            format_feature_args(config, release)
    else:
        assert format_feature_args(config, release) == args
    assert format_feature_args(ClusterConfig(mode="kraft"), release) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"features": (("eligible.leader.replicas.version", 1),)}, "are a KRaft cluster's (--mode kraft), not --mode zookeeper's"),
    ({"mode": "kraft", "features": (("eligible.leader.replicas.version", -1),)}, "a name and a level >= 0"),
    ({"mode": "kraft", "features": (("", 1),)}, "a name and a level >= 0"),
])
def test_feature_levels_are_a_kraft_clusters(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ClusterConfig(**kwargs)


def test_the_containers_launcher_refuses_format_features_in_one_line() -> None:
    from pathlib import Path

    from kafka_chaos.harness.backends import open_cluster
    from kafka_chaos.harness.distribution import KafkaDistribution

    config = ClusterConfig(mode="kraft", features=(("eligible.leader.replicas.version", 1),))
    with pytest.raises(UsageError, match="run on the local launcher only so far"):
        open_cluster("containers", config, KafkaDistribution("4.0.2", Path("/nonexistent"), "test"))

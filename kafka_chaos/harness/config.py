"""Broker and ZooKeeper settings of a test cluster, layered and checked before anything starts.

Layers, later wins (as kafkatest's ``services/kafka/kafka.py`` ``prop_file``):

1. what the launcher decides per node (``broker.id``, ``zookeeper.connect``, listeners,
   ``log.dirs``) — not overridable, the launcher depends on them;
2. :func:`chaos_cluster_defaults` — small and fast, after Kafka's own
   ``TestUtils.createBrokerConfig``, plus the settings the oracle reads stated explicitly;
3. ``ClusterConfig.cluster_overrides`` (``--set key=value``);
4. ``ClusterConfig.broker_overrides[id]`` (``--set ID:key=value``).

Property names are constants here (a typo such as ``zookeeper.session.tmeout.ms`` is silently
ignored by Kafka), and every key of layers 3 and 4 must be a name the release's broker accepts:
every release's broker ``ConfigDef`` names (internal configs included) are dumped once into
``kafka_broker_properties.json`` (3.9's in full, each older release as what it lacks and adds) so
validation needs no JVM; :func:`dump_broker_property_names` re-derives them from a distribution
(an integration test keeps the file honest). A ``ClusterConfig`` is checked against every
release's names, the rendered ``server.properties`` against its own release's. Values are not
checked here: Kafka refuses bad values at start-up, and the launcher then reports that node's
log.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.harness.errors import HarnessError, UsageError

if TYPE_CHECKING:
    from kafka_chaos.harness.distribution import KafkaDistribution

# ---------------------------------------------------------------- broker property names
BROKER_ID = "broker.id"
ZOOKEEPER_CONNECT = "zookeeper.connect"
ZOOKEEPER_SESSION_TIMEOUT_MS = "zookeeper.session.timeout.ms"
ZOOKEEPER_CONNECTION_TIMEOUT_MS = "zookeeper.connection.timeout.ms"
LISTENERS = "listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
LISTENER_SECURITY_PROTOCOL_MAP = "listener.security.protocol.map"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
CONTROL_PLANE_LISTENER_NAME = "control.plane.listener.name"
# KIP-291's listener, when ClusterConfig.control_plane_listener: the controller's requests
# (LeaderAndIsr, UpdateMetadata, StopReplica) get their own acceptor, processor, queue and
# handler thread (3.9 SocketServer.controlPlaneRequestChannelOpt, KafkaServer's
# controlPlaneRequestHandlerPool); ControllerChannelManager.addNewBroker connects to it.
CONTROL_PLANE_LISTENER = "CONTROL_PLANE"
LOG_DIR = "log.dir"
LOG_DIRS = "log.dirs"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
AUTO_LEADER_REBALANCE_ENABLE = "auto.leader.rebalance.enable"
LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = "leader.imbalance.check.interval.seconds"
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = "leader.imbalance.per.broker.percentage"
CONTROLLED_SHUTDOWN_ENABLE = "controlled.shutdown.enable"
CONTROLLED_SHUTDOWN_MAX_RETRIES = "controlled.shutdown.max.retries"
CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS = "controlled.shutdown.retry.backoff.ms"
REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms"
INTER_BROKER_PROTOCOL_VERSION = "inter.broker.protocol.version"
CONTROLLER_SOCKET_TIMEOUT_MS = "controller.socket.timeout.ms"
REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS = "replica.high.watermark.checkpoint.interval.ms"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
DEFAULT_REPLICATION_FACTOR = "default.replication.factor"
OFFSETS_TOPIC_REPLICATION_FACTOR = "offsets.topic.replication.factor"
OFFSETS_TOPIC_NUM_PARTITIONS = "offsets.topic.num.partitions"
TRANSACTION_STATE_LOG_REPLICATION_FACTOR = "transaction.state.log.replication.factor"
TRANSACTION_STATE_LOG_MIN_ISR = "transaction.state.log.min.isr"
TRANSACTION_STATE_LOG_NUM_PARTITIONS = "transaction.state.log.num.partitions"
GROUP_INITIAL_REBALANCE_DELAY_MS = "group.initial.rebalance.delay.ms"
NUM_NETWORK_THREADS = "num.network.threads"
NUM_IO_THREADS = "num.io.threads"
BACKGROUND_THREADS = "background.threads"
NUM_RECOVERY_THREADS_PER_DATA_DIR = "num.recovery.threads.per.data.dir"
LOG_CLEANER_DEDUPE_BUFFER_SIZE = "log.cleaner.dedupe.buffer.size"
LOG_INITIAL_TASK_DELAY_MS = "log.initial.task.delay.ms"
DELETE_TOPIC_ENABLE = "delete.topic.enable"
AUTO_CREATE_TOPICS_ENABLE = "auto.create.topics.enable"

# KRaft (process.roles): what a KRaft node is and where its quorum is.
NODE_ID = "node.id"
PROCESS_ROLES = "process.roles"
CONTROLLER_QUORUM_VOTERS = "controller.quorum.voters"
# KIP-853's dynamic quorum (3.9+): the nodes find the voters through these, the voter set is in the log
CONTROLLER_QUORUM_BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"
METADATA_LOG_DIR = "metadata.log.dir"
BROKER_SESSION_TIMEOUT_MS = "broker.session.timeout.ms"
BROKER_HEARTBEAT_INTERVAL_MS = "broker.heartbeat.interval.ms"
CONTROLLER_LISTENER = "CONTROLLER"

# Set by the launcher for each node; an override would break it (ports, data, ZK address, quorum).
LAUNCHER_PROPERTIES = frozenset({BROKER_ID, ZOOKEEPER_CONNECT, LISTENERS, ADVERTISED_LISTENERS,
                                 LOG_DIR, LOG_DIRS, CONTROL_PLANE_LISTENER_NAME, NODE_ID, PROCESS_ROLES,
                                 CONTROLLER_QUORUM_VOTERS, CONTROLLER_LISTENER_NAMES, METADATA_LOG_DIR,
                                 CONTROLLER_QUORUM_BOOTSTRAP_SERVERS})
# Per-listener overrides ("listener.name.<name>.<config>") are not in CONFIG_DEF by name.
KNOWN_PROPERTY_PREFIXES = ("listener.name.",)

# ---------------------------------------------------------------- ZooKeeper property names
ZK_TICK_TIME = "tickTime"
ZK_DATA_DIR = "dataDir"
ZK_CLIENT_PORT = "clientPort"
ZK_CLIENT_PORT_ADDRESS = "clientPortAddress"
ZK_MAX_CLIENT_CNXNS = "maxClientCnxns"
ZK_MIN_SESSION_TIMEOUT = "minSessionTimeout"
ZK_MAX_SESSION_TIMEOUT = "maxSessionTimeout"
ZK_ADMIN_ENABLE_SERVER = "admin.enableServer"
ZK_4LW_WHITELIST = "4lw.commands.whitelist"

# Kafka's default when zookeeper.session.timeout.ms is unset (KIP-537).
KAFKA_DEFAULT_SESSION_TIMEOUT_MS = 18000
# ReplicationConfigs.CONTROLLER_SOCKET_TIMEOUT_MS_DEFAULT (3.9).
KAFKA_DEFAULT_CONTROLLER_SOCKET_TIMEOUT_MS = 30000
TEST_SESSION_TIMEOUT_MS = 6000
MAX_BROKERS = 9
MAX_LOG_DIRS = 4
# JVM flags for every node: serial GC and C1 only start faster and use less CPU and memory on
# a small shared machine than G1 + C2 (benchmarks/cluster_startup.py measures it).
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)

_HEAP = re.compile(r"^\d+[kmgKMG]$")
_PROPERTIES_FILE = "kafka_broker_properties.json"


@dataclass(frozen=True)
class BrokerPropertyNames:
    """The broker config names one Kafka release accepts (its minor release's list, dumped from
    the patch release ``kafka_version``: names come and go with minor releases)."""

    kafka_version: str
    names: frozenset[str]


def _release(kafka_version: str) -> str:
    return ".".join(kafka_version.split(".")[:2])


def _load_known_properties() -> tuple[BrokerPropertyNames, dict[str, BrokerPropertyNames]]:
    """The newest release's names, and every release's: each older one stored as what it lacks
    of the newest and what it has besides."""
    text = resources.files("kafka_chaos.harness").joinpath(_PROPERTIES_FILE).read_text(encoding="utf-8")
    doc = json.loads(text)
    newest = BrokerPropertyNames(str(doc["kafka_version"]), frozenset(doc["names"]))
    releases = {release: BrokerPropertyNames(str(entry["kafka_version"]),
                                             (newest.names - set(entry["lacks"])) | set(entry["adds"]))
                for release, entry in doc.get("releases", {}).items()}
    releases[_release(newest.kafka_version)] = newest
    return newest, releases


NEWEST_PROPERTIES, RELEASE_PROPERTIES = _load_known_properties()
KNOWN_PROPERTIES_VERSION, KNOWN_BROKER_PROPERTIES = NEWEST_PROPERTIES.kafka_version, NEWEST_PROPERTIES.names
ANY_RELEASE_PROPERTIES = frozenset().union(*(r.names for r in RELEASE_PROPERTIES.values()))
_DUMPED = sorted(RELEASE_PROPERTIES, key=lambda r: tuple(int(x) for x in r.split(".")))
_DUMPED_RELEASES = f"{_DUMPED[0]}-{_DUMPED[-1]}"  # "2.4-4.4"


def broker_property_names(kafka_version: str) -> BrokerPropertyNames:
    """The names ``kafka_version`` accepts (the newest release's for a release not dumped)."""
    return RELEASE_PROPERTIES.get(_release(kafka_version), NEWEST_PROPERTIES)


def check_property_name(name: str, where: str = "broker property", known: BrokerPropertyNames | None = None) -> None:
    """UsageError unless ``name`` is a broker property the launcher allows and Kafka knows: the
    release ``known`` (None: any release dumped, 2.4 to 4.4, before the release is resolved)."""
    if name in LAUNCHER_PROPERTIES:
        raise UsageError(f"{where} {name!r} is set by the launcher for each node and cannot be overridden")
    names = known.names if known is not None else ANY_RELEASE_PROPERTIES
    if name in names or name.startswith(KNOWN_PROPERTY_PREFIXES):
        return
    if known is not None and name in ANY_RELEASE_PROPERTIES:
        others = sorted((r for r in RELEASE_PROPERTIES.values() if name in r.names),
                        key=lambda r: tuple(int(x) for x in r.kafka_version.split(".")))
        raise UsageError(f"{where} {name!r} is not a Kafka {known.kafka_version} broker config "
                         f"(Kafka {others[0].kafka_version} to {others[-1].kafka_version} have it)")
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    which = f"Kafka {known.kafka_version}" if known is not None else f"Kafka {_DUMPED_RELEASES}"
    raise UsageError(f"unknown {where} {name!r}{hint}: not a {which} broker config")


def _check_overrides(overrides: Mapping[str, str], where: str,
                     known: BrokerPropertyNames | None = None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for key, value in overrides.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(f"{where}: {key!r}={value!r}: keys and values must be strings")
        check_property_name(key, f"{where} property", known)
        if "\n" in value or "\r" in value:
            raise UsageError(f"{where}: value of {key!r} must be one line")
        checked[key] = value
    return checked


# The file a broker JAAS configuration (ClusterConfig.broker_jaas) is written to, in the cluster's
# own directory (local launcher) or the broker's container (containers launcher).
# (A file name, not a broker property: kept out of the str constants the property names are.)
BROKER_JAAS_FILE = Path("broker_jaas.conf")
_JAAS_CONFIG_PROPERTY = "java.security.auth.login.config"


def check_broker_jaas(text: object, where: str) -> str:
    """A broker JAAS configuration's text: a non-empty string (UsageError, one line, otherwise).
    Its syntax is the JVM's to judge: a broker that cannot parse it fails to start and says why."""
    if not isinstance(text, str):
        raise UsageError(f"{where} must be the text of a JAAS configuration (a string), not {type(text).__name__}")
    if not text.strip():
        raise UsageError(f"{where} must be the text of a JAAS configuration, not an empty string")
    if "\0" in text:
        raise UsageError(f"{where} must not contain a NUL character")
    return text


def jaas_option(path: str | Path) -> str:
    """The JVM flag that makes ``path`` the JVM's JAAS configuration."""
    return f"-D{_JAAS_CONFIG_PROPERTY}={path}"


ZOOKEEPER_ENSEMBLE_SIZES = (1, 3, 5)  # odd: a majority survives the loss of a minority
ZOOKEEPER_MODE, KRAFT_MODE = "zookeeper", "kraft"
# A ZooKeeper-mode cluster whose schedule migrates it to KRaft (KIP-866, harness.migration): it
# starts as ZooKeeper mode with ``controllers`` KRaft controllers planned, provisioned by a step.
MIGRATION_MODE = "migration"
MODES = (ZOOKEEPER_MODE, KRAFT_MODE, MIGRATION_MODE)
PLAIN_FILESYSTEM = "plain"
LAZY_FILESYSTEM = "lazyfs"
FILESYSTEMS = (PLAIN_FILESYSTEM, LAZY_FILESYSTEM)
CONTROLLER_QUORUM_SIZES = (1, 3)
# A KRaft quorum's voters: "static" (controller.quorum.voters, fixed at format time) or "dynamic"
# (KIP-853: formatted with --initial-controllers, voters added and removed while it runs; 3.9+,
# StorageTool.runFormatCommand 3.9.2/4.0.2, harness.kraft.dynamic_quorum).
STATIC_QUORUM, DYNAMIC_QUORUM = "static", "dynamic"
QUORUMS = (STATIC_QUORUM, DYNAMIC_QUORUM)
FIRST_DYNAMIC_QUORUM_RELEASE = (3, 9)
# JBOD in KRaft (KIP-858): a broker with several log.dirs tells the controller which directory
# failed (heartbeat offlineLogDirs -> ReplicationControlManager.handleDirectoriesOffline, 3.7
# branch lines 1387-1412) only from 3.7.0; 3.6 has neither.
FIRST_KRAFT_JBOD_RELEASE = (3, 7)
# A KRaft broker with several log.dirs keeps its metadata log in a directory of its own: by default
# it is the first of log.dirs, and its failure halts the broker (ReplicaManager.handleLogDirFailure,
# 3.9 branch lines 2502-2505: "Shutdown broker because the metadata log dir ... has failed"), so a
# failed data directory would halt the broker or not depending on which one it is.
KRAFT_METADATA_SUBDIR = "metadata"
# The first KRaft controller's node id; controllers take the next ids, past any broker's.
FIRST_CONTROLLER_ID = 3000
# The release lines the KRaft model covers (oracle.kraft.interleavings.MODELLED_LINES, which the
# harness may not import; tests/unit/harness/test_kraft_log.py keeps the two equal): KRaft and
# migrating clusters run these.
KRAFT_RELEASE_LINES = ((3, 6), (3, 7), (3, 8), (3, 9))

# Kafka 4.0 removed ZooKeeper mode (KIP-833): a 4.x release runs KRaft clusters only (no
# migration either), judged by the KRaft model's 4.x lines (oracle.kraft.interleavings.MODELLED_LINES).
FIRST_KRAFT_ONLY_MAJOR = 4


@dataclass(frozen=True)
class ClusterConfig:
    """What to start; validated on construction, so a bad config never starts a JVM."""

    brokers: int = 3  # 1..9
    cluster_overrides: Mapping[str, str] = field(default_factory=dict)
    broker_overrides: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    zk_tick_time_ms: int = 500  # ZooKeeper grants sessions in [2, 20] ticks: 6 s needs tick <= 3 s
    broker_heap: str = "384m"
    zookeeper_heap: str = "128m"
    first_broker_id: int = 1
    # Explicit broker ids (distinct, >= 0, gaps allowed: generated schedules use them); empty:
    # first_broker_id .. first_broker_id + brokers - 1.
    ids: tuple[int, ...] = ()
    jvm_options: tuple[str, ...] = DEFAULT_JVM_OPTIONS
    zookeepers: int = 1  # ZooKeeper ensemble size (harness.zk_ensemble): 1, 3 or 5
    # Log directories per broker (``log.dirs``): 1 keeps ``<data>``; more give ``<data>/a,<data>/b``
    # so one can fail while the broker keeps running (``ReplicaManager.handleLogDirFailure``).
    log_dirs: int = 1
    # Local launcher: each broker reaches each ZooKeeper server through a link proxy of its own
    # (harness.link_proxy), so its ZooKeeper links can be delayed or cut without root.
    link_proxies: bool = False
    # KIP-291: each broker also listens on CONTROL_PLANE_LISTENER (its own port), named by
    # control.plane.listener.name, so controller requests do not queue behind data requests.
    control_plane_listener: bool = False
    # "zookeeper" (ZooKeeper + brokers) or "kraft": ``controllers`` KRaft controllers
    # (process.roles=controller, node ids from FIRST_CONTROLLER_ID) and the brokers.
    mode: str = ZOOKEEPER_MODE
    controllers: int = 1
    # The text of a JAAS configuration every broker JVM gets (the launcher writes it to a file of
    # the cluster's own and passes ``-Djava.security.auth.login.config=<file>``), as SASL brokers
    # whose ZooKeeper is unauthenticated run: a ``KafkaServer`` section and no ``Client`` one.
    # Listeners stay PLAINTEXT and ZooKeeper unauthenticated; None: no JAAS file.
    broker_jaas: str | None = None
    # "lazyfs": each node's data directory lives on the crash-consistency layer (harness.lazyfs),
    # so a power failure can drop what the node did not fsync and its I/O can be delayed or
    # failed; "plain": the host's filesystem.
    filesystem: str = PLAIN_FILESYSTEM

    # Every node runs under libfaketime (harness.local.clocks) so clock faults can set its wall
    # clock; False: nodes start as they always did.
    fake_clocks: bool = False

    # A KRaft cluster's quorum: STATIC_QUORUM or DYNAMIC_QUORUM (KIP-853, Kafka 3.9+)
    quorum: str = STATIC_QUORUM
    # KRaft: feature levels the storage format finalizes (``kafka-storage format --feature
    # name=level``), sorted (name, level) pairs, e.g. eligible.leader.replicas.version=1 on 4.0.x,
    # whose format default is 0; empty: the release's defaults (:func:`format_feature_args`).
    features: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.quorum not in QUORUMS:
            raise UsageError(f"quorum must be one of {', '.join(QUORUMS)}, got {self.quorum!r}")
        if self.quorum == DYNAMIC_QUORUM and self.mode != KRAFT_MODE:
            raise UsageError(f"a dynamic quorum is a KRaft cluster's (--mode kraft), not --mode {self.mode}'s")
        if isinstance(self.controllers, bool) or self.controllers not in CONTROLLER_QUORUM_SIZES:
            raise UsageError(f"controllers must be one of {', '.join(map(str, CONTROLLER_QUORUM_SIZES))}, "
                             f"got {self.controllers!r}")
        if self.features and self.mode != KRAFT_MODE:
            raise UsageError(f"feature levels at format time are a KRaft cluster's (--mode kraft), not --mode {self.mode}'s")
        for name, level in self.features:
            if not name or isinstance(level, bool) or not isinstance(level, int) or level < 0:
                raise UsageError(f"a feature is a name and a level >= 0, not {name!r}={level!r}")
        if self.mode == KRAFT_MODE:
            for what, bad in (("ZooKeeper ensemble", self.zookeepers != 1), ("link proxies", self.link_proxies),
                              ("control-plane listener", self.control_plane_listener),
                              ("broker JAAS file", self.broker_jaas is not None)):
                if bad:
                    raise UsageError(f"--mode kraft has no {what} (a ZooKeeper-mode feature)")
        if isinstance(self.log_dirs, bool) or not isinstance(self.log_dirs, int) or not 1 <= self.log_dirs <= MAX_LOG_DIRS:
            raise UsageError(f"log_dirs must be between 1 and {MAX_LOG_DIRS}, got {self.log_dirs!r}")
        if self.zookeepers not in ZOOKEEPER_ENSEMBLE_SIZES or isinstance(self.zookeepers, bool):
            raise UsageError(f"zookeepers must be one of {', '.join(map(str, ZOOKEEPER_ENSEMBLE_SIZES))}, "
                             f"got {self.zookeepers!r}")
        if isinstance(self.brokers, bool) or not isinstance(self.brokers, int) or not 1 <= self.brokers <= MAX_BROKERS:
            raise UsageError(f"brokers must be between 1 and {MAX_BROKERS}, got {self.brokers!r}")
        if (isinstance(self.first_broker_id, bool) or not isinstance(self.first_broker_id, int)
                or self.first_broker_id < 0):
            raise UsageError(f"first_broker_id must be an integer >= 0, got {self.first_broker_id!r}")
        if self.ids and (len(self.ids) != self.brokers or len(set(self.ids)) != len(self.ids)
                         or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in self.ids)):
            raise UsageError(f"ids must be {self.brokers} distinct broker ids >= 0, got {list(self.ids)!r}")
        if self.filesystem not in FILESYSTEMS:
            raise UsageError(f"filesystem must be one of {', '.join(FILESYSTEMS)}, got {self.filesystem!r}")
        if self.zk_tick_time_ms <= 0:
            raise UsageError(f"zk_tick_time_ms must be positive, got {self.zk_tick_time_ms}")
        if self.broker_jaas is not None:
            check_broker_jaas(self.broker_jaas, "broker_jaas")
        for name in ("broker_heap", "zookeeper_heap"):
            if not _HEAP.match(getattr(self, name)):
                raise UsageError(f"{name} {getattr(self, name)!r} is not a JVM size like 384m or 1g")
        _check_overrides(self.cluster_overrides, "cluster")
        for broker_id, overrides in self.broker_overrides.items():
            if broker_id not in self.broker_ids():
                raise UsageError(f"override for broker {broker_id}, but the brokers are "
                                 f"{', '.join(map(str, self.broker_ids()))}")
            _check_overrides(overrides, f"broker {broker_id}")
        session = session_timeout_ms(self)
        if session < 2 * self.zk_tick_time_ms:
            raise UsageError(f"{ZOOKEEPER_SESSION_TIMEOUT_MS}={session} is below ZooKeeper's minimum of "
                             f"2 x tickTime ({2 * self.zk_tick_time_ms} ms): lower zk_tick_time_ms")

    def controller_ids(self) -> list[int]:
        """The KRaft controllers' node ids (none in ZooKeeper mode; in migration mode the ones
        a step provisions)."""
        if self.mode not in (KRAFT_MODE, MIGRATION_MODE):
            return []
        first = max([FIRST_CONTROLLER_ID, *(b + 1 for b in self.broker_ids())])
        return list(range(first, first + self.controllers))

    def broker_ids(self) -> list[int]:
        if self.ids:
            return list(self.ids)
        return list(range(self.first_broker_id, self.first_broker_id + self.brokers))


def chaos_cluster_defaults(brokers: int) -> dict[str, str]:
    """Layer 2: fast, small, deterministic; every value here may be overridden."""
    replication = str(min(3, brokers))
    return {
        ZOOKEEPER_SESSION_TIMEOUT_MS: str(TEST_SESSION_TIMEOUT_MS),
        # The oracle's inputs, stated even where they equal Kafka's defaults.
        # Off here, unlike Kafka (true): with it on every ZooKeeper-mode step waits for the
        # controller's scheduled imbalance checks (scenarios.model.imbalance_checks), which made
        # the test command 285 s longer (docs/recall.md). The catalogue's runs (`kafka-chaos run`,
        # `explore`, the main job) state Kafka's true back where a mode's model covers it
        # (kafka_default_overrides); the test command's clusters keep it off.
        AUTO_LEADER_REBALANCE_ENABLE: "false",
        UNCLEAN_LEADER_ELECTION_ENABLE: "false",
        CONTROLLED_SHUTDOWN_ENABLE: "true",
        LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: "300",
        LEADER_IMBALANCE_PER_BROKER_PERCENTAGE: "10",
        REPLICA_LAG_TIME_MAX_MS: "30000",
        MIN_INSYNC_REPLICAS: "1",
        # Internal topics fit the cluster (a 1-broker cluster could not create RF 3 ones).
        OFFSETS_TOPIC_REPLICATION_FACTOR: replication,
        OFFSETS_TOPIC_NUM_PARTITIONS: "5",
        TRANSACTION_STATE_LOG_REPLICATION_FACTOR: replication,
        TRANSACTION_STATE_LOG_MIN_ISR: str(min(2, brokers)),
        TRANSACTION_STATE_LOG_NUM_PARTITIONS: "5",
        # Kafka's TestUtils.createBrokerConfig: quick and light.
        GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
        CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS: "100",
        LOG_INITIAL_TASK_DELAY_MS: "100",
        NUM_NETWORK_THREADS: "2",
        NUM_IO_THREADS: "2",
        BACKGROUND_THREADS: "2",
        NUM_RECOVERY_THREADS_PER_DATA_DIR: "1",
        LOG_CLEANER_DEDUPE_BUFFER_SIZE: str(2 * 1024 * 1024),  # default 128 MiB > our heap share
    }


def kafka_default_overrides(mode: str, *, fake_clocks: bool = False, release: str | None = None) -> dict[str, str]:
    """The settings layer 2 turns away from Kafka's own defaults only to keep the test command
    quick, at Kafka's values again, for a ``mode`` cluster: what a catalogue run states as a
    scenario's override where the scenario states nothing (``scenarios.plans.spec.with_kafka_defaults``).

    ZooKeeper mode: ``auto.leader.rebalance.enable=true``. The controller's leader-imbalance
    checks run at times a step reads from ``/controller`` (``scenarios.model.imbalance_checks``).
    KRaft on every ``release`` the KRaft model covers (:data:`KRAFT_RELEASE_LINES`, and 4.x) too.
    4.x: the active controller balances every interval from its activation (the periodic task
    "electPreferred", QuorumController 4.0.0 L1617-1618), timed from the epoch's LEADER_CHANGE
    record in the metadata log. 3.6-3.9: it balances ``leader.imbalance.check.interval.seconds``
    after the write that first left a leader off its first replica
    (``QuorumController.maybeScheduleNextBalancePartitionLeaders``, called after every write
    event: 3.6.2 L1308, 3.9.0 L1346), a time ``StepCore._wait_off_imbalance_check`` replays from
    the metadata log's append times (``scenarios.model.kraft_balances``). Not KRaft of an unknown
    release (``--kafka-home``, ``explore``'s schedules, which name none): which rule applies is
    not known. Not a migration: its controllers change from ZooKeeper's to KRaft's mid-run. Not
    on ``fake_clocks`` (clock faults): the checks' times are counted from ``/controller``'s
    timestamp, the controller's wall clock when elected (3.9
    ``KafkaZkClient.registerControllerAndIncrementControllerEpoch`` line 124), which a clock
    fault moves, while its scheduler keeps the monotonic one
    (``KafkaController.scheduleAutoLeaderRebalanceTask``, line 499); in KRaft the metadata log's
    append times are the node's wall clock as well."""
    if fake_clocks:
        return {}
    if mode == ZOOKEEPER_MODE or (mode == KRAFT_MODE and release is not None and _kraft_modelled(release)):
        return {AUTO_LEADER_REBALANCE_ENABLE: "true"}
    return {}


def _kraft_modelled(release: str) -> bool:
    line = version_tuple(release)[:2]
    return line in KRAFT_RELEASE_LINES or line >= (FIRST_KRAFT_ONLY_MAJOR, 0)


def broker_properties(config: ClusterConfig, broker_id: int, *, zookeeper_connect: str,
                      listeners: Mapping[str, str], log_dir: str,
                      bind_listeners: Mapping[str, str] | None = None,
                      kafka_version: str = KNOWN_PROPERTIES_VERSION) -> dict[str, str]:
    """The layered ``server.properties`` of one broker, sorted by key.

    ``listeners`` maps a listener name to the ``host:port`` clients are told (advertised);
    ``bind_listeners`` (default: the same) to where the broker binds.  The first listener is
    the inter-broker one; every listener is PLAINTEXT.  With ``config.control_plane_listener``
    ``listeners`` must hold :data:`CONTROL_PLANE_LISTENER` (not first: 3.9
    ``KafkaConfig.validateValues`` requires it to differ from the inter-broker listener).
    Rendered for ``kafka_version``: a default that release lacks is left out (before 3.8 there is
    no ``log.initial.task.delay.ms``), an override it lacks is refused.
    """
    known = broker_property_names(kafka_version)
    if broker_id not in config.broker_ids():
        raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                         f"{', '.join(map(str, config.broker_ids()))}")
    if not listeners:
        raise HarnessError("broker_properties needs at least one listener")
    bind = dict(bind_listeners) if bind_listeners is not None else dict(listeners)
    if set(bind) != set(listeners):
        raise HarnessError(f"bind listeners {sorted(bind)} differ from advertised {sorted(listeners)}")
    props = {
        BROKER_ID: str(broker_id),
        ZOOKEEPER_CONNECT: zookeeper_connect,
        LISTENERS: ",".join(f"{name}://{bind[name]}" for name in listeners),
        ADVERTISED_LISTENERS: ",".join(f"{name}://{address}" for name, address in listeners.items()),
        LISTENER_SECURITY_PROTOCOL_MAP: ",".join(f"{name}:PLAINTEXT" for name in listeners),
        INTER_BROKER_LISTENER_NAME: next(iter(listeners)),
        LOG_DIRS: ",".join(log_dir_paths(log_dir, config.log_dirs)),
    }
    if config.control_plane_listener:
        if CONTROL_PLANE_LISTENER not in listeners or next(iter(listeners)) == CONTROL_PLANE_LISTENER:
            raise HarnessError(f"control_plane_listener needs a {CONTROL_PLANE_LISTENER} listener after the "
                               f"inter-broker one, got {list(listeners)}")
        props[CONTROL_PLANE_LISTENER_NAME] = CONTROL_PLANE_LISTENER
    props.update(release_defaults(config.brokers, known))
    props.update(_check_overrides(config.cluster_overrides, "cluster", known))
    props.update(_check_overrides(config.broker_overrides.get(broker_id, {}), f"broker {broker_id}", known))
    return dict(sorted(props.items()))


def kraft_defaults() -> dict[str, str]:
    """Layer 2's KRaft part: the broker session the controller fences a silent broker after,
    matched to ZooKeeper mode's test session (6 s; Kafka's default is 9 s,
    ``KRaftConfigs.BROKER_SESSION_TIMEOUT_MS_DEFAULT``), the heartbeat at Kafka's 2 s."""
    return {BROKER_SESSION_TIMEOUT_MS: str(TEST_SESSION_TIMEOUT_MS), BROKER_HEARTBEAT_INTERVAL_MS: "2000"}


def kraft_releases_text() -> str:
    """The KRaft release lines as refusals name them: "3.6.x, 3.7.x, 3.8.x and 3.9.x"."""
    lines = [f"{major}.{minor}.x" for major, minor in KRAFT_RELEASE_LINES]
    return ", ".join(lines[:-1]) + " and " + lines[-1]


def kraft_only(kafka_version: str) -> bool:
    """Kafka 4.0 removed ZooKeeper mode (KIP-833): a 4.x release runs KRaft clusters only, and no
    migration (a ZooKeeper cluster migrates on 3.9 and is upgraded after)."""
    return version_tuple(kafka_version)[:1] >= (FIRST_KRAFT_ONLY_MAJOR,)


def modes_running(kafka_version: str) -> frozenset[str]:
    """The cluster modes a release runs in here: every one on the lines the KRaft model covers
    (:data:`KRAFT_RELEASE_LINES`), KRaft only on 4.x (:func:`kraft_only`), ZooKeeper mode only on
    the others."""
    if kraft_only(kafka_version):
        return frozenset({KRAFT_MODE})
    if version_tuple(kafka_version)[:2] in KRAFT_RELEASE_LINES:
        return frozenset(MODES)
    return frozenset({ZOOKEEPER_MODE})


def default_mode(kafka_version: str | None) -> str | None:
    """The mode a run takes when no ``--mode`` is given: KRaft on a 4.x release (the only one it
    has), else None (each scenario's own)."""
    return KRAFT_MODE if kafka_version is not None and kraft_only(kafka_version) else None


def check_kraft_release(mode: str, kafka_version: str) -> None:
    """A KRaft or migrating cluster runs only the releases the KRaft model covers
    (:data:`KRAFT_RELEASE_LINES`, and 4.0.x-4.4.x), a 4.x
    release only KRaft: one UsageError line otherwise."""
    if mode in modes_running(kafka_version):
        return
    if kraft_only(kafka_version):
        what = ("has no ZooKeeper mode (removed in 4.0, KIP-833)" if mode == ZOOKEEPER_MODE else
                "cannot migrate from ZooKeeper (4.0 removed ZooKeeper mode: migrate on 3.9.x, then upgrade)")
        raise UsageError(f"Kafka {kafka_version} {what}: use --mode kraft, or a 2.4-3.9 release for --mode {mode}")
    also = " and 4.x (KRaft only)" if mode == KRAFT_MODE else ""
    raise UsageError(f"--mode {mode} runs Kafka {kraft_releases_text()} (the releases the KRaft model covers){also}, "
                     f"not {kafka_version}")


def check_dynamic_quorum(kafka_version: str) -> None:
    """A dynamic quorum needs Kafka 3.9+ (KIP-853: ``kafka-storage format --initial-controllers``,
    ``controller.quorum.bootstrap.servers``): one UsageError line otherwise."""
    if version_tuple(kafka_version)[:2] < FIRST_DYNAMIC_QUORUM_RELEASE:
        raise UsageError(f"a dynamic KRaft quorum (KIP-853) needs Kafka 3.9 or later, not {kafka_version}: "
                         f"use the static quorum")


# The storage tool's ``--feature name=level`` (StorageTool.scala 3.8.0 line 227; 3.9.0 line 200).
FIRST_FORMAT_FEATURES_RELEASE = (3, 8)


def format_feature_args(config: ClusterConfig, kafka_version: str) -> list[str]:
    """``--feature name=level`` for each of ``config.features``, as every node's format takes them;
    one UsageError line on a release whose storage tool has no ``--feature``."""
    if not config.features:
        return []
    if version_tuple(kafka_version)[:2] < FIRST_FORMAT_FEATURES_RELEASE:
        raise UsageError(f"feature levels at format time (kafka-storage format --feature) need Kafka 3.8 or later, "
                         f"not {kafka_version}")
    return [arg for name, level in config.features for arg in ("--feature", f"{name}={level}")]


def check_kraft_jbod(kafka_version: str) -> None:
    """Several log directories per KRaft broker need Kafka 3.7 or later (KIP-858): one UsageError
    line otherwise."""
    if version_tuple(kafka_version)[:2] < FIRST_KRAFT_JBOD_RELEASE:
        raise UsageError(f"a KRaft broker with several log directories (JBOD, KIP-858) needs Kafka 3.7 or later, "
                         f"not {kafka_version}: the controller of {kafka_version} never learns of a failed directory")


def kraft_node_properties(config: ClusterConfig, node_id: int, *, voters: Mapping[int, str], address: str,
                          log_dir: str, kafka_version: str = KNOWN_PROPERTIES_VERSION,
                          listeners: Mapping[str, str] | None = None,
                          bind_listeners: Mapping[str, str] | None = None,
                          controller: bool | None = None) -> dict[str, str]:
    """The layered ``server.properties`` of one KRaft node, sorted: a controller when ``node_id``
    is one of ``voters`` (node id -> host:port of its CONTROLLER listener; it binds ``address``),
    else a broker on ``address`` -- or, given ``listeners`` (name -> advertised host:port, the
    first the inter-broker one) and ``bind_listeners`` (name -> where it binds), on those (the
    containers launcher). The ZooKeeper-only names of layer 2 are left out; layers 3 and 4 apply to
    both roles (a controller reads the topic defaults, ``auto.leader.rebalance.enable`` and
    ``unclean.leader.election.enable`` itself: it elects). A dynamic quorum (``config.quorum``)
    names ``voters`` in ``controller.quorum.bootstrap.servers`` instead; ``controller``: a
    controller that is not one of them (one to add to a dynamic quorum)."""
    if config.mode not in (KRAFT_MODE, MIGRATION_MODE):
        raise HarnessError("kraft_node_properties needs a ClusterConfig with mode kraft or migration")
    check_kraft_release(config.mode, kafka_version)
    known = broker_property_names(kafka_version)
    controller = node_id in voters if controller is None else controller
    dynamic = config.quorum == DYNAMIC_QUORUM
    if dynamic:
        check_dynamic_quorum(kafka_version)
    advertised = dict(listeners) if listeners else {CONTROLLER_LISTENER if controller else "PLAINTEXT": address}
    bind = dict(bind_listeners) if bind_listeners else dict(advertised)
    names = [CONTROLLER_LISTENER, *(n for n in advertised if n != CONTROLLER_LISTENER)]
    props = {
        NODE_ID: str(node_id),
        PROCESS_ROLES: "controller" if controller else "broker",
        **({CONTROLLER_QUORUM_BOOTSTRAP_SERVERS: ",".join(hp for _, hp in sorted(voters.items()))} if dynamic else
           {CONTROLLER_QUORUM_VOTERS: ",".join(f"{v}@{hp}" for v, hp in sorted(voters.items()))}),
        CONTROLLER_LISTENER_NAMES: CONTROLLER_LISTENER,
        LISTENERS: ",".join(f"{name}://{bind[name]}" for name in advertised),
        LISTENER_SECURITY_PROTOCOL_MAP: ",".join(f"{name}:PLAINTEXT" for name in names),
        LOG_DIRS: log_dir,
    }
    if not controller and config.log_dirs > 1:
        check_kraft_jbod(kafka_version)
        props[LOG_DIRS] = ",".join(log_dir_paths(log_dir, config.log_dirs))
        props[METADATA_LOG_DIR] = f"{log_dir.rstrip('/')}/{KRAFT_METADATA_SUBDIR}"
    if not controller:
        props[ADVERTISED_LISTENERS] = ",".join(f"{name}://{hp}" for name, hp in advertised.items())
        props[INTER_BROKER_LISTENER_NAME] = next(iter(advertised))
    props.update({k: v for k, v in release_defaults(config.brokers, known).items()
                  if not k.startswith("zookeeper.") and not k.startswith("controlled.shutdown.")})
    props.update(kraft_defaults())
    props.update(_check_overrides(config.cluster_overrides, "cluster", known))
    if not controller:
        props.update(_check_overrides(config.broker_overrides.get(node_id, {}), f"broker {node_id}", known))
    return dict(sorted(props.items()))


def version_tuple(kafka_version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in _release(kafka_version).split(".") if x.isdigit())


def broker_session_timeout_ms(config: ClusterConfig) -> int:
    """KRaft: how long the controller waits for a broker's heartbeat before fencing it."""
    raw = config.cluster_overrides.get(BROKER_SESSION_TIMEOUT_MS, kraft_defaults()[BROKER_SESSION_TIMEOUT_MS])
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"{BROKER_SESSION_TIMEOUT_MS}={raw!r} is not a number of milliseconds") from None


def shipped_timeouts(kafka_version: str) -> dict[str, str]:
    """The failure-detection timeouts as a release ships them, for measuring it the way its users
    run it (layer 2 replaces them with the project's test values). KIP-537 raised both in 2.5.0:
    ``KafkaConfig.Defaults`` 2.4.1 ``ZkSessionTimeoutMs = 6000``, ``ReplicaLagTimeMaxMs = 10000L``;
    2.5.0 18000 and 30000 (3.9: ``ReplicationConfigs.REPLICA_LAG_TIME_MAX_MS_DEFAULT = 30000L``)."""
    old = tuple(int(x) for x in _release(kafka_version).split(".")) < (2, 5)
    return {ZOOKEEPER_SESSION_TIMEOUT_MS: "6000" if old else "18000", REPLICA_LAG_TIME_MAX_MS: "10000" if old else "30000"}


def release_defaults(brokers: int, known: BrokerPropertyNames) -> dict[str, str]:
    """Layer 2 as one release takes it: only the names it has."""
    return {k: v for k, v in chaos_cluster_defaults(brokers).items() if k in known.names}


def log_dir_paths(data_dir: str, count: int) -> list[str]:
    """A broker's ``log.dirs`` under its data directory, in order: the directory itself when it
    has one (as before log directories could fail), else ``<data>/a``, ``<data>/b``, ..."""
    if count <= 1:
        return [data_dir]
    return [f"{data_dir.rstrip('/')}/{chr(ord('a') + i)}" for i in range(count)]


def shared_broker_settings(config: ClusterConfig, kafka_version: str = KNOWN_PROPERTIES_VERSION) -> dict[str, str]:
    """Layers 2 and 3: what every broker has in common (``Cluster.broker_settings``)."""
    props = release_defaults(config.brokers, broker_property_names(kafka_version))
    if config.mode == KRAFT_MODE:
        props = {k: v for k, v in props.items()
                 if not k.startswith("zookeeper.") and not k.startswith("controlled.shutdown.")}
        props.update(kraft_defaults())
    props.update(config.cluster_overrides)
    return dict(sorted(props.items()))


def session_timeout_ms(config: ClusterConfig) -> int:
    """The session timeout the brokers ask for (the cluster-wide value)."""
    raw = config.cluster_overrides.get(ZOOKEEPER_SESSION_TIMEOUT_MS, str(TEST_SESSION_TIMEOUT_MS))
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"{ZOOKEEPER_SESSION_TIMEOUT_MS}={raw!r} is not a number of milliseconds") from None


def tick_time_ms(config: ClusterConfig) -> int:
    return config.zk_tick_time_ms


def zookeeper_properties(config: ClusterConfig, *, port: int, data_dir: str,
                         host: str = "127.0.0.1") -> dict[str, str]:
    """A standalone ZooKeeper that honours the brokers' session timeout.

    ZooKeeper clamps a requested session timeout to [min, max]SessionTimeout, 2 and 20 ticks by
    default; the maximum is raised so a longer ``zookeeper.session.timeout.ms`` override is
    honoured rather than silently clamped.
    """
    tick = config.zk_tick_time_ms
    longest = max([session_timeout_ms(config)] + [
        int(o[ZOOKEEPER_SESSION_TIMEOUT_MS]) for o in config.broker_overrides.values()
        if ZOOKEEPER_SESSION_TIMEOUT_MS in o and o[ZOOKEEPER_SESSION_TIMEOUT_MS].isdigit()])
    return {
        ZK_TICK_TIME: str(tick),
        ZK_DATA_DIR: data_dir,
        ZK_CLIENT_PORT: str(port),
        ZK_CLIENT_PORT_ADDRESS: host,
        ZK_MAX_CLIENT_CNXNS: "0",
        ZK_MIN_SESSION_TIMEOUT: str(2 * tick),
        ZK_MAX_SESSION_TIMEOUT: str(max(20 * tick, longest)),
        ZK_ADMIN_ENABLE_SERVER: "false",  # else it binds :8080
        ZK_4LW_WHITELIST: "ruok,srvr,stat,mntr,cons",  # readiness probe and debugging
    }


def render_properties(props: Mapping[str, str]) -> str:
    """``key=value`` lines, sorted, escaped as java.util.Properties reads them."""
    def escape(text: str, is_key: bool) -> str:
        text = text.replace("\\", "\\\\")
        if is_key:
            text = text.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
        return text
    return "".join(f"{escape(k, True)}={escape(v, False)}\n" for k, v in sorted(props.items()))


def parse_set_options(items: Iterable[str], config_brokers: Iterable[int] | None = None
                      ) -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    """``--set key=value`` (every broker) and ``--set ID:key=value`` (broker ID only)."""
    cluster: dict[str, str] = {}
    per_broker: dict[int, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: expected key=value or BROKER_ID:key=value")
        key = key.strip()
        target, colon, name = key.partition(":")
        if colon and target.isdigit():
            per_broker.setdefault(int(target), {})[name] = value
        else:
            cluster[key] = value
    return cluster, per_broker


_DUMP_SOURCE = """
public class DumpBrokerConfigNames {
    public static void main(String[] args) throws Exception {
        java.util.Set<String> names;
        try {  // 3.7+: the broker's ConfigDef is in the server module
            Object def = Class.forName("org.apache.kafka.server.config.AbstractKafkaConfig")
                .getField("CONFIG_DEF").get(null);
            names = ((org.apache.kafka.common.config.ConfigDef) def).names();
        } catch (ClassNotFoundException | NoSuchFieldException e) {  // before: object KafkaConfig's configNames
            String text = Class.forName("kafka.server.KafkaConfig").getMethod("configNames").invoke(null).toString();
            names = new java.util.TreeSet<>(java.util.Arrays.asList(
                text.substring(text.indexOf('(') + 1, text.lastIndexOf(')')).split(", ")));
        }
        new java.util.TreeSet<>(names).forEach(System.out::println);
    }
}
"""


def dump_broker_property_names(distribution: KafkaDistribution, java: str | None = None) -> list[str]:
    """Every broker config name the distribution's Kafka accepts (needs a JDK: java runs a
    source file).  Used to regenerate ``kafka_broker_properties.json`` and to test it."""
    from kafka_chaos.harness.distribution import java_executable

    with tempfile.TemporaryDirectory(prefix="kafka-config-names-") as tmp:
        source = Path(tmp) / "DumpBrokerConfigNames.java"
        source.write_text(_DUMP_SOURCE)
        done = subprocess.run([java or java_executable(), "-cp", distribution.classpath, str(source)],
                              capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise HarnessError(f"could not list Kafka {distribution.version}'s broker configs: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]

"""The cluster contract shared by every launcher (local JVMs, Testcontainers).

Scenarios depend only on these protocols.  Optional capabilities are separate small protocols
(as Jepsen's ``db.clj`` does with ``Kill`` and ``Pause``) so a launcher that cannot, say, cut
the network simply does not implement :class:`NetworkPartitioner`.  Each optional protocol is
one :class:`Capability`; :func:`capabilities_of` says which a cluster has, and callers gate on
that (one mechanism for any number of capabilities) rather than on launcher classes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Protocol, Self, runtime_checkable

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.lazyfs.mount import IoRule, PowerFailReport
from kafka_chaos.harness.migration.status import MigrationStatus


@dataclass(frozen=True)
class BrokerEndpoint:
    """Where a client reaches one broker, and what runs it."""

    broker_id: int
    host: str
    port: int
    pid: int | None = None  # local launcher only
    container: str | None = None  # containers launcher only
    metrics_port: int | None = None  # the JMX exporter's /metrics on ``host`` (harness.metrics)
    # KIP-291's CONTROL_PLANE listener as advertised (host:port), when the cluster has one: the
    # controller's requests arrive there (containers: an address on the run network only)
    control_plane: str | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


@runtime_checkable
class Cluster(Protocol):
    """One ZooKeeper and N brokers that scenarios can start, break and read."""

    backend: str  # "local" or "containers"

    @property
    def kafka_version(self) -> str: ...

    def start(self) -> None:
        """Start ZooKeeper and every broker; return once all are ready (bounded wait)."""

    def destroy(self) -> None:
        """Stop everything this cluster started and remove its data. Idempotent."""

    @property
    def broker_ids(self) -> list[int]: ...

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def zookeeper_connect(self) -> str: ...

    def endpoint(self, broker_id: int) -> BrokerEndpoint: ...

    def broker_settings(self) -> dict[str, str]:
        """The effective broker properties shared by all brokers (session timeout, ...)."""

    def log_files(self) -> dict[str, Path]:
        """Node name ("zookeeper", "broker-1", ...) -> a local file with that node's log."""

    def session_timeout_s(self) -> float:
        """The brokers' ``zookeeper.session.timeout.ms``, in seconds."""


@runtime_checkable
class BrokerControl(Protocol):
    """Process-level faults on one broker."""

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL; returns once the process is gone (its ZK session lives on until expiry)."""

    def stop_broker(self, broker_id: int) -> None:
        """SIGTERM (controlled shutdown); returns once the process has exited (bounded)."""

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP / docker pause."""

    def resume_broker(self, broker_id: int) -> None:
        """SIGCONT / docker unpause."""

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped broker with its old data; waits until its old ZK registration is
        gone first (else NODEEXISTS) and until it has registered again."""

    def broker_running(self, broker_id: int) -> bool:
        """True while the broker's JVM exists, paused or not."""

    def broker_paused(self, broker_id: int) -> bool:
        """True while the broker is SIGSTOPped / docker-paused."""


@runtime_checkable
class ZooKeeperControl(Protocol):
    """Process-level faults on the ZooKeeper node."""

    def pause_zookeeper(self) -> None:
        """SIGSTOP / docker pause: every session stays open but nothing answers."""

    def resume_zookeeper(self) -> None:
        """SIGCONT / docker unpause."""

    def zookeeper_paused(self) -> bool: ...

    def stop_zookeeper(self) -> None:
        """SIGTERM / docker stop; returns once it has exited (bounded). There is no restart:
        used to end a cluster cleanly (a JVM writes its class-data archive only then)."""


@runtime_checkable
class NetworkPartitioner(Protocol):
    """Network faults; only launchers that give brokers their own network namespace have it."""

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        """Drop traffic between the broker and the named peers, in both directions."""

    def heal_network(self) -> None:
        """Remove every partition this cluster made. Idempotent."""


@runtime_checkable
class ZooKeeperEnsembleControl(Protocol):
    """Faults on single ZooKeeper servers of an ensemble (1, 3 or 5 servers, ids 1..N)."""

    def zookeeper_servers(self) -> list[int]:
        """The ensemble's server ids (``myid``)."""

    def zookeeper_client_ports(self) -> dict[int, int]:
        """Server id -> the port clients reach it on (what ``wait_serving`` polls)."""

    def zookeeper_leader(self) -> int | None:
        """The server leading now; None while no quorum serves."""

    def zookeeper_server_running(self, server_id: int) -> bool: ...

    def kill_zookeeper_server(self, server_id: int) -> None:
        """SIGKILL one server; returns once its process is gone."""

    def start_zookeeper_server(self, server_id: int, *, wait_serving: bool = True) -> None:
        """Start a killed server on its data; with ``wait_serving`` return once it serves."""

    def pause_zookeeper_server(self, server_id: int) -> None:
        """SIGSTOP one server."""

    def resume_zookeeper_server(self, server_id: int) -> None:
        """SIGCONT one server."""


@runtime_checkable
class ZooKeeperLinkPartitioner(Protocol):
    """Cut one broker from one ZooKeeper server only (the rest of the network stays)."""

    def cut_from_zookeeper_server(self, broker_id: int, server_id: int) -> None:
        """Drop traffic between the broker and that server until ``heal_network`` (of
        :class:`NetworkPartitioner`, which a launcher with this capability also has)."""


@runtime_checkable
class NetworkDegrader(Protocol):
    """Lossy or slow links of one broker (heal: :meth:`NetworkPartitioner.heal_network`, which a
    launcher with this capability also has)."""

    def degrade(self, broker_id: int, *, to_zookeeper: bool = False, to_brokers: bool = False,
                to_clients: bool = False, loss_pct: float = 0.0, rate_kbit: int | None = None) -> None:
        """Drop ``loss_pct`` % of the named links' packets (both ways) and/or limit them to
        ``rate_kbit``, until ``heal_network``."""


@runtime_checkable
class LogDirFailer(Protocol):
    """Fail one log directory of a running broker the way its JVM sees it (:mod:`harness.log_dirs`),
    and repair it (the broker keeps it offline until restarted). Directories are numbered from 0
    in ``log.dirs`` order."""

    def log_dirs(self, broker_id: int) -> list[str]:
        """The broker's ``log.dirs`` as the broker names them."""

    def log_dir_partitions(self, broker_id: int, index: int) -> list[tuple[str, int]]:
        """The partitions whose replica on the broker lives in directory ``index``."""

    def fail_log_dir(self, broker_id: int, index: int) -> None:
        """Fail directory ``index``; returns at once (Kafka notices at its next write there)."""

    def failed_log_dirs(self, broker_id: int) -> list[int]:
        """The broker's directories failed and not yet repaired."""

    def repair_log_dirs(self, broker_id: int) -> list[int]:
        """Put the broker's failed directories back; the indexes repaired (idempotent)."""


@runtime_checkable
class ReplicaLogReader(Protocol):
    """Read a broker's replicas from their segment files (:mod:`harness.replica_logs`): where its
    log directories are, seen from this process."""

    def replica_log_dirs(self, broker_id: int) -> list[Path]:
        """The broker's ``log.dirs`` as this host reaches them, in ``log.dirs`` order (raises
        ``HarnessError`` when they cannot be reached now: a container that is not running)."""


@runtime_checkable
class LinkDelayer(Protocol):
    """Slow links of one broker through per-link proxies (:mod:`harness.link_proxy`) that delay
    each direction by ``delay_ms`` ± ``jitter_ms``, order preserved, until ``heal_network``.
    ZooKeeper links always (the broker's ``zookeeper.connect`` names its proxies); peer and
    client links where the launcher can redirect them (local: root with iptables' nat table)."""

    def delay_links(self, broker_id: int, *, delay_ms: float, jitter_ms: float = 0.0, to_zookeeper: bool = True,
                    to_brokers: bool = False, to_clients: bool = False) -> None:
        """Delay both directions of every named link between the broker and ZooKeeper / its
        peers / clients until ``heal_network`` (which every launcher with this capability also
        has)."""


@runtime_checkable
class ReleaseRoller(Protocol):
    """Capability ``BROKER_RELEASES``: a broker runs another Kafka release (or another
    ``inter.broker.protocol.version``) from its next start on -- a rolling upgrade, one broker
    at a time, on the data it has."""

    def broker_version(self, broker_id: int) -> str:
        """The release the broker runs (or will run from its next start)."""

    def broker_overrides(self, broker_id: int) -> dict[str, str]:
        """The broker's own properties on top of the cluster's (e.g. its IBP)."""

    def set_broker_release(self, broker_id: int, kafka_version: str, overrides: Mapping[str, str]) -> None:
        """From its next start the stopped broker runs ``kafka_version``'s jars with
        ``server.properties`` rendered for it, plus ``overrides``; a HarnessError while it runs."""


@runtime_checkable
class ControllerQuorumControl(Protocol):
    """Capability ``CONTROLLER_QUORUM``: process faults on the KRaft controllers (node ids apart
    from the brokers'); which one leads the quorum is the observer's to say."""

    @property
    def controller_ids(self) -> list[int]: ...

    def kill_controller(self, node_id: int) -> None:
        """SIGKILL; returns once the process is gone."""

    def stop_controller(self, node_id: int) -> None:
        """SIGTERM; returns once it has exited (bounded)."""

    def pause_controller(self, node_id: int) -> None: ...

    def resume_controller(self, node_id: int) -> None: ...

    def start_controller(self, node_id: int) -> None:
        """Start a killed or stopped controller on its metadata log."""

    def controller_running(self, node_id: int) -> bool: ...

    def controller_address(self, node_id: int) -> str:
        """host:port of the controller's CONTROLLER listener, reachable from the harness process."""


@runtime_checkable
class QuorumLinkPartitioner(Protocol):
    """Capability QUORUM_LINK_PARTITION: cuts between the nodes of a KRaft cluster -- controllers
    and brokers, named by node id -- both directions, until heal_network. The harness and the
    clients keep their links to every node."""

    def cut_links(self, node_id: int, peers: Sequence[int]) -> None:
        """Drop every packet between node_id and each of peers (controller or broker ids), both ways, until heal_network."""

    def heal_network(self) -> None:
        """Remove every cut this cluster made. Idempotent."""


@runtime_checkable
class ClockController(Protocol):
    """Capability CLOCK_CONTROL: a node's wall clock (``CLOCK_REALTIME``: Kafka's
    ``Time.milliseconds``) off the host's, its monotonic clock left alone, as a real clock step
    or a fast clock does (:mod:`harness.local.clocks`). Nodes are named by role -- ``broker``,
    ``controller`` (KRaft), ``zookeeper`` (server id) -- and id."""

    def set_clock(self, role: str, node_id: int, *, offset_s: float = 0.0, rate: float = 1.0) -> None:
        """From now on the node's clock is ``offset_s`` seconds off the host's and runs at
        ``rate`` from there; felt within a few seconds."""

    def heal_clocks(self) -> None:
        """Every node back on the host's clock. Idempotent."""


def quorum_cut_peers(node_id: int, peers: Sequence[int], node_ids: Sequence[int]) -> tuple[int, ...]:
    """Pure: the peers a :meth:`QuorumLinkPartitioner.cut_links` names, checked against the
    cluster's node ids (KRaft's one id space: controllers and brokers) and in their given order
    without repeats; a one-line UsageError for an unknown id, a node cut from itself or no peer."""
    known = set(node_ids)
    everyone = ", ".join(map(str, sorted(known)))
    unknown = [n for n in (node_id, *peers) if n not in known]
    if unknown:
        raise UsageError(f"cut_links: unknown node id {unknown[0]}: the nodes are {everyone}")
    if node_id in peers:
        raise UsageError(f"cut_links: node {node_id} cannot be cut from itself")
    if not peers:
        raise UsageError(f"cut_links: name at least one node to cut {node_id} from (the nodes are {everyone})")
    return tuple(dict.fromkeys(peers))


@runtime_checkable
class MigrationControl(Protocol):
    """Capability ``ZK_MIGRATION``: the ZooKeeper→KRaft migration driven phase by phase
    (``docs/ops.html`` 3.9; :mod:`harness.local.migration`), each phase observed from what Kafka
    wrote (:mod:`harness.migration.status`)."""

    @property
    def controllers_provisioned(self) -> bool: ...

    @property
    def finalized(self) -> bool: ...

    @property
    def planned_controller_ids(self) -> list[int]: ...

    def provision_controllers(self) -> None:
        """Format and start the KRaft controllers with the ZooKeeper cluster's id and the flag."""

    def deprovision_controllers(self) -> None:
        """Kill the controllers and remove them (rollback)."""

    def finalize_controllers(self) -> None:
        """Roll the controllers without the migration flag (no way back after)."""

    def clear_migration_znodes(self, *, controller_epoch_above: int | None = None) -> dict[str, object]:
        """Delete ``/controller`` and ``/migration`` (rollback), first raising ``/controller_epoch``
        to ``controller_epoch_above`` when given and lower; what ``/migration`` held."""

    def broker_role(self, broker_id: int) -> str: ...

    def set_broker_role(self, broker_id: int, role: str) -> None:
        """The stopped broker's next start runs as zk, hybrid or kraft."""

    def migration_status(self) -> MigrationStatus: ...

    def wait_migration(self, predicate_name: str, predicate: Callable[[MigrationStatus], bool],
                       timeout: float) -> MigrationStatus: ...


@runtime_checkable
class KraftReleaseRoller(Protocol):
    """A migrated cluster's KRaft nodes rolled to another release one at a time, and its features
    finalized (:mod:`harness.local.kraft_releases`; not a capability of its own: the migrating
    cluster's, ``ZK_MIGRATION``)."""

    def node_version(self, node_id: int) -> str: ...

    def node_versions(self) -> dict[int, str]: ...

    def set_node_release(self, node_id: int, kafka_version: str) -> None:
        """The stopped controller or KRaft broker runs ``kafka_version`` from its next start."""

    def server_log_size(self, node_id: int) -> int: ...

    def wait_controller_caught_up(self, node_id: int, since: int, timeout: float) -> None: ...

    def upgrade_features(self, release_version: str, tool_version: str,
                         features: Mapping[str, int] | None = None) -> str:
        """``kafka-features upgrade --release-version`` (or ``--feature``s) from ``tool_version``'s
        tools; what it printed, then :data:`DESCRIBE_MARK` and what ``describe`` printed after."""


DESCRIBE_MARK = "-- kafka-features describe"  # KraftReleaseRoller.upgrade_features' two outputs apart


@runtime_checkable
class PowerFailer(Protocol):
    """Capability POWER_FAILURE: a node loses power -- killed, and its data directory (on the
    crash-consistency layer, :mod:`harness.lazyfs`: ``filesystem="lazyfs"``) loses every write,
    new file and rename it had not fsynced; ``start_broker`` / ``start_controller`` start it
    again on what survived."""

    def power_fail_node(self, node_id: int) -> PowerFailReport:
        """SIGKILL the broker or controller ``node_id``, then drop its unsynced writes; what was
        dropped. A HarnessError when the node is not running or not on the layer."""


@runtime_checkable
class DiskFaulter(Protocol):
    """Capability DISK_FAULTS: slow or failing I/O under a node's data directory
    (:mod:`harness.lazyfs` rules: delay reads, writes or fsyncs; fail writes or fsyncs with EIO
    or ENOSPC), until :meth:`clear_disk_faults`."""

    def disk_fault(self, node_id: int, rules: Sequence[IoRule]) -> None:
        """From now on the node's I/O obeys ``rules`` (replacing its earlier ones)."""

    def clear_disk_faults(self) -> None:
        """Every node's I/O plain again. Idempotent."""


class NetworkHealer(Protocol):
    """Undo every cut, degradation and delay: what every launcher with a network capability
    (``NETWORK_PARTITION``, ``ZOOKEEPER_LINK_PARTITION``, ``NETWORK_DEGRADE``, ``LINK_DELAY``,
    ``QUORUM_LINK_PARTITION``) also has."""

    def heal_network(self) -> None: ...


@runtime_checkable
class ChaosCluster(Cluster, BrokerControl, Protocol):
    """What the step pipeline runs on: a cluster whose brokers it can stop and start (every
    launcher is one). Optional capabilities are checked with :func:`capabilities_of`."""


@runtime_checkable
class ManagedCluster(ChaosCluster, Protocol):
    """A launcher as the pool holds it: started by entering, torn down by leaving."""

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


@runtime_checkable
class BenchCluster(ManagedCluster, Protocol):
    """A launcher as the benchmarks drive it: brokers log to files this process reads, and a
    SIGTERMed broker gets ``stop_timeout`` seconds before SIGKILL."""

    stop_timeout: float

    def broker_log_dir(self, broker_id: int) -> Path:
        """The directory holding the broker's log4j files (controller, state-change, requests)."""


class Capability(StrEnum):
    """What an optional protocol lets a scenario do; one per optional protocol."""

    BROKER_CONTROL = "broker_control"
    NETWORK_PARTITION = "network_partition"
    ZOOKEEPER_CONTROL = "zookeeper_control"
    ZOOKEEPER_ENSEMBLE = "zookeeper_ensemble"
    ZOOKEEPER_LINK_PARTITION = "zookeeper_link_partition"
    NETWORK_DEGRADE = "network_degrade"
    LOG_DIR_FAILURE = "log_dir_failure"
    LINK_DELAY = "link_delay"
    BROKER_RELEASES = "broker_releases"
    CONTROLLER_QUORUM = "controller_quorum"
    ZK_MIGRATION = "zk_migration"
    REPLICA_LOGS = "replica_logs"
    QUORUM_LINK_PARTITION = "quorum_link_partition"
    CLOCK_CONTROL = "clock_control"
    POWER_FAILURE = "power_failure"
    DISK_FAULTS = "disk_faults"


CAPABILITY_PROTOCOLS: Mapping[Capability, type] = MappingProxyType({
    Capability.BROKER_CONTROL: BrokerControl,
    Capability.NETWORK_PARTITION: NetworkPartitioner,
    Capability.ZOOKEEPER_CONTROL: ZooKeeperControl,
    Capability.ZOOKEEPER_ENSEMBLE: ZooKeeperEnsembleControl,
    Capability.ZOOKEEPER_LINK_PARTITION: ZooKeeperLinkPartitioner,
    Capability.NETWORK_DEGRADE: NetworkDegrader,
    Capability.LOG_DIR_FAILURE: LogDirFailer,
    Capability.LINK_DELAY: LinkDelayer,
    Capability.BROKER_RELEASES: ReleaseRoller,
    Capability.CONTROLLER_QUORUM: ControllerQuorumControl,
    Capability.ZK_MIGRATION: MigrationControl,
    Capability.REPLICA_LOGS: ReplicaLogReader,
    Capability.QUORUM_LINK_PARTITION: QuorumLinkPartitioner,
    Capability.CLOCK_CONTROL: ClockController,
    Capability.POWER_FAILURE: PowerFailer,
    Capability.DISK_FAULTS: DiskFaulter,
})


def protocol_members(protocol: type) -> frozenset[str]:
    """The attribute and method names ``protocol`` declares (not those of ``Protocol`` itself)."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass in (object, Protocol) or klass.__name__ == "Generic":
            continue
        names.update(name for name in vars(klass) if not name.startswith("_"))
        names.update(name for name in getattr(klass, "__annotations__", {}) if not name.startswith("_"))
    return frozenset(names)


def implements(obj: object, protocol: type) -> bool:
    """Does ``obj`` have every member ``protocol`` declares?  Looked up statically
    (``inspect.getattr_static``), so no property runs: ``isinstance`` with a runtime protocol
    evaluates properties on Python 3.11, which raise on a cluster that is not started."""
    missing = object()
    return all(inspect.getattr_static(obj, name, missing) is not missing
               for name in protocol_members(protocol))


def capabilities_of(cluster: object) -> frozenset[Capability]:
    """The capabilities whose protocol ``cluster`` implements (started or not), less those its
    :func:`capability_problems` says this machine cannot provide."""
    declared = frozenset(capability for capability, protocol in CAPABILITY_PROTOCOLS.items()
                         if implements(cluster, protocol))
    return declared - frozenset(capability_problems(cluster))


def capability_problems(cluster: object) -> Mapping[Capability, str]:
    """Declared capabilities this machine lacks the means for, each with a one-line reason.

    A launcher whose capability depends on the host (the local launcher cuts loopback links
    only as root with iptables) says so in a static or class method ``capability_problems()``;
    the others implement everything they declare."""
    probe = inspect.getattr_static(cluster, "capability_problems", None)
    if not isinstance(probe, (staticmethod, classmethod)):
        return MappingProxyType({})
    problems: Mapping[Capability, str] = getattr(cluster, "capability_problems")()
    return problems

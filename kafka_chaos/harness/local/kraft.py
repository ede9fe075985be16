"""The local launcher in KRaft mode: 1 or 3 controllers (``process.roles=controller``) and N
brokers as JVMs on 127.0.0.1, from the same Kafka jars as ZooKeeper mode.

Layout of the run directory (a temporary one unless given)::

    <run_dir>/log4j.properties, jmx_exporter.yaml   shared, as in ZooKeeper mode (log4j2.properties
                                                    for Kafka 4.x: harness.distribution)
    <run_dir>/controller-<id>/   server.properties, data/ (its metadata log), logs/, stdout.log
    <run_dir>/broker-<id>/       server.properties, data/, logs/, stdout.log

Every node's storage is formatted by Kafka's own tool (``kafka.tools.StorageTool format``, as
``kafka-storage.sh format`` runs it) with one cluster id, all nodes at once. Readiness, bounded:
the controllers' metadata log (:class:`harness.kraft.observer.KraftObserver`) shows a quorum
leader and every broker registered and unfenced; then each broker's metadata lists them all.

Faults keep data; a killed or stopped node starts again on its directory and port. The
controllers are :class:`harness.cluster.ControllerQuorumControl`. As root with iptables, links
between nodes are cut on loopback (:class:`harness.cluster.QuorumLinkPartitioner`,
:mod:`harness.local.kraft_links`): the firewall is installed before the nodes start and removed
with the cluster.
"""

from __future__ import annotations

import atexit
import logging
import os
import weakref
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from types import TracebackType

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness import jmx_exporter, processes
from kafka_chaos.harness.node_logs import keep_failed_logs
from kafka_chaos.harness.cluster import BrokerEndpoint, Capability
from kafka_chaos.harness.config import ClusterConfig, format_feature_args, kraft_node_properties, render_properties
from kafka_chaos.harness.distribution import KafkaDistribution, java_executable, log4j_config_name
from kafka_chaos.harness.kraft.storage import KraftBasics, format_storage
from kafka_chaos.harness.kraft.records import random_cluster_id
from kafka_chaos.harness.local.cds_paths import archive_options
from kafka_chaos.harness.local.clocks import LocalClockControls, clock_problems
from kafka_chaos.harness.local.controllers import LocalControllerControls
from kafka_chaos.harness.local.disks import LocalDiskControls, disk_problems
from kafka_chaos.harness.local.dynamic_quorum import LocalDynamicQuorum
from kafka_chaos.harness.local.kraft_links import LocalQuorumLinkControls
from kafka_chaos.harness.local.log_dirs import LocalLogDirControls
from kafka_chaos.harness.local.network import partition_problem
from kafka_chaos.harness.local.state import read_kraft_state, render_kraft_state, write_state
from kafka_chaos.harness.local.nodes import HOST, KAFKA_MAIN, LocalNode, NodeStartFailed, broker_node_name, check_alive, jvm_command, signal_node
from kafka_chaos.harness.nodes import free_ports
from kafka_chaos.harness.observer import ConvergenceTimeout
from kafka_chaos.harness.readiness import wait_metadata_lists
from kafka_chaos.harness.zksnapshot import ZkSnapshot

log = logging.getLogger(__name__)



_owned: weakref.WeakSet[LocalKraftCluster] = weakref.WeakSet()
_owned_lock = threading.Lock()


def _register_owned(cluster: LocalKraftCluster) -> None:
    """Destroyed at interpreter exit too (its JVMs die with this process: harness.processes)."""
    with _owned_lock:
        if not _owned:
            atexit.register(_destroy_owned)
        _owned.add(cluster)
    processes.exit_on_termination_signals()


def _destroy_owned() -> None:
    for cluster in list(_owned):
        try:
            cluster.destroy()
        except Exception:  # at exit, keep destroying the others
            log.exception("destroying %s at exit failed", cluster)


def controller_node_name(node_id: int) -> str:
    return f"controller-{node_id}"


class LocalKraftCluster(LocalClockControls, LocalControllerControls, LocalQuorumLinkControls, LocalDiskControls,
                        LocalDynamicQuorum, LocalLogDirControls, KraftBasics):
    """:class:`harness.cluster.Cluster`, :class:`harness.cluster.BrokerControl`,
    :class:`harness.cluster.ControllerQuorumControl`, :class:`harness.cluster.LogDirFailer` (a
    broker's ``log.dirs``: ``data/a``, ``data/b`` with ``ClusterConfig.log_dirs`` = 2, its metadata
    log then in ``data/metadata``: ``harness.config.KRAFT_METADATA_SUBDIR``) and, as root with
    iptables, :class:`harness.cluster.QuorumLinkPartitioner` of a KRaft cluster on local JVMs."""

    backend = "local"

    @staticmethod
    def capability_problems() -> Mapping[Capability, str]:
        """Cuts need root and iptables with owner/connmark matching on this machine; power
        failures and disk faults root with /dev/fuse; clock faults libfaketime."""
        problem = partition_problem()
        problems: dict[Capability, str] = disk_problems() | clock_problems()
        return problems if problem is None else problems | {Capability.QUORUM_LINK_PARTITION: problem}

    def __init__(self, config: ClusterConfig, distribution: KafkaDistribution,
                 run_dir: str | os.PathLike[str] | None = None, *, start_timeout: float = 120.0,
                 stop_timeout: float = 60.0, class_data_sharing: bool = True, metrics: bool = True,
                 log4j_extra: str = "", detached: bool = False,
                 node_jvm_options: Mapping[str, Sequence[str]] | None = None) -> None:
        """``detached``: the nodes outlive this Python process (``cluster up --mode kraft``).
        ``node_jvm_options``: JVM flags added by role ("controller", "broker")."""
        if config.mode != "kraft":
            raise UsageError("LocalKraftCluster needs a ClusterConfig with mode='kraft'")
        self.config = config
        self.distribution = distribution
        self._requested_run_dir = Path(run_dir).absolute() if run_dir is not None else None
        self._run_dir: Path | None = None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._class_data_sharing = class_data_sharing
        self._metrics = metrics
        self._log4j_extra = log4j_extra
        self._controllers: dict[int, LocalNode] = {}
        self._brokers: dict[int, LocalNode] = {}
        self._cluster_id = random_cluster_id()
        self._lock = threading.RLock()
        self._destroyed = False
        self._detached = detached
        self._node_jvm_options = {role: tuple(flags) for role, flags in (node_jvm_options or {}).items()}

    def __repr__(self) -> str:
        return f"LocalKraftCluster({self.config.controllers} controllers, {self.config.brokers} brokers, run_dir={self._run_dir})"

    def __enter__(self) -> LocalKraftCluster:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and not isinstance(exc, KeyboardInterrupt):
            keep_failed_logs(self)
        self.destroy()

    # ---------------------------------------------------------------- Cluster

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    @property
    def run_dir(self) -> Path:
        if self._run_dir is None:
            raise HarnessError("the cluster has not been started")
        return self._run_dir

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self._broker(b).bootstrap for b in self.broker_ids)

    @property
    def controller_quorum(self) -> str:
        """``controller.quorum.voters`` as the nodes have it."""
        return ",".join(f"{c}@{self._controller(c).bootstrap}" for c in self.controller_ids)

    def endpoint(self, broker_id: int) -> BrokerEndpoint:
        node = self._broker(broker_id)
        return BrokerEndpoint(broker_id=broker_id, host=HOST, port=node.port, pid=node.running_pid(),
                              metrics_port=node.metrics_port)

    def log_files(self) -> dict[str, Path]:
        files = {node.name: node.server_log for _, node in sorted(self._controllers.items())}
        files.update({broker_node_name(b): self._broker(b).server_log for b in self.broker_ids})
        return files

    def broker_log_dir(self, broker_id: int) -> Path:
        return self._broker(broker_id).server_log.parent

    def controller_address(self, node_id: int) -> str:
        return self._controller(node_id).bootstrap

    def controller_pid(self, node_id: int) -> int | None:
        return self._controller(node_id).running_pid()

    def replica_log_dirs(self, broker_id: int) -> list[Path]:
        return self._log_dir_host_paths(broker_id)

    def metadata_log_dirs(self) -> list[Path]:
        """Each controller's metadata log directory (``__cluster_metadata-0``'s parent)."""
        return [node.directory / "data" for _, node in sorted(self._controllers.items())]

    # ---------------------------------------------------------------- start

    def start(self) -> None:
        with self._lock:
            if self._run_dir is not None:
                raise HarnessError("this LocalKraftCluster was already started; make a new one")
            try:
                self._start()
            except BaseException:
                self.destroy()
                raise

    def _start(self) -> None:
        began = time.monotonic()
        self._run_dir = self._make_run_dir()
        if not self._detached:
            _register_owned(self)
        controllers, brokers = self.controller_ids, self.broker_ids
        ports = free_ports(len(controllers) + 2 * len(brokers))
        controller_ports = dict(zip(controllers, ports))
        broker_ports = dict(zip(brokers, ports[len(controllers):len(controllers) + len(brokers)]))
        metrics_ports = dict(zip(brokers, ports[len(controllers) + len(brokers):]))
        voters = {c: f"{HOST}:{p}" for c, p in controller_ports.items()}
        # log4j.properties, or log4j2.properties for a 4.x node (it logs with log4j2: KIP-653)
        name = log4j_config_name(self.kafka_version)
        log4j = self._run_dir / name
        log4j.write_bytes(resources.files("kafka_chaos.harness").joinpath(name).read_bytes()
                          + self._log4j_extra.encode())
        java = java_executable()
        agent = (jmx_exporter.resolve_agent_jar(), jmx_exporter.write_config(self._run_dir)) if self._metrics else None
        for c in controllers:
            self._controllers[c] = self._prepare(controller_node_name(c), c, controller_ports[c], voters, java, log4j,
                                                 None, "controller")
        for b in brokers:
            agent_option = (jmx_exporter.agent_option(agent[0], metrics_ports[b], agent[1], HOST)
                            if agent is not None else None)
            self._brokers[b] = self._prepare(broker_node_name(b), b, broker_ports[b], voters, java, log4j,
                                             agent_option, "broker")
        self._format_storage()
        self._fake_clocks([*self._controllers.values(), *self._brokers.values()])
        self._mount_disks([*self._controllers.items(), *self._brokers.items()])
        self._install_quorum_firewall()  # before any node opens a connection: marks apply to new ones
        deadline = time.monotonic() + self.start_timeout
        log.info("starting %d KRaft controllers and %d Kafka %s brokers (run dir %s)", len(controllers), len(brokers),
                 self.kafka_version, self._run_dir)
        for node in [*self._controllers.values(), *self._brokers.values()]:
            self._spawn(node)
        self._wait_ready(brokers, deadline)
        self.write_state()
        log.info("KRaft cluster ready in %.1f s: bootstrap %s, controllers %s", time.monotonic() - began,
                 self.bootstrap_servers, self.controller_quorum)

    def _prepare(self, name: str, node_id: int, port: int, voters: Mapping[int, str], java: str, log4j: Path,
                 agent_option: str | None, role: str) -> LocalNode:
        directory = self.run_dir / name
        (directory / "data").mkdir(parents=True)
        (directory / "logs").mkdir()
        config_file = directory / "server.properties"
        props = kraft_node_properties(self.config, node_id, voters=voters, address=f"{HOST}:{port}",
                                      log_dir=str(directory / "data"), kafka_version=self.kafka_version)
        config_file.write_text(render_properties(props))
        options = [*self.config.jvm_options, *self._node_jvm_options.get(role, ())]
        if self._class_data_sharing:
            # the brokers' class-data archive fits a controller too: same class path and main
            options += archive_options(self.distribution, "broker", java)
        if agent_option is not None:
            options.append(agent_option)
        heap = self.config.broker_heap
        command = jvm_command(java, heap, options, self.distribution.classpath, log4j, directory / "logs",
                              KAFKA_MAIN, config_file)
        return LocalNode(name=name, directory=directory, port=port, config_file=config_file, command=command)

    def _format_storage(self) -> None:
        nodes = {n.name: n.config_file for n in [*self._controllers.values(), *self._brokers.values()]}
        quorum = self._quorum_format_args()
        features = format_feature_args(self.config, self.distribution.version)  # every node, as Kafka's docs format
        try:
            format_storage(self.distribution, self.config.jvm_options, self._cluster_id, nodes, self.run_dir,
                           extra_args={name: [*quorum.get(name, []), *features] for name in nodes})
        except HarnessError as exc:
            raise NodeStartFailed(str(exc)) from None

    def _wait_ready(self, brokers: Sequence[int], deadline: float, newer_than: Mapping[int, int] | None = None) -> None:
        starting = [self._brokers[b] for b in brokers]
        running = [n for n in self._controllers.values() if n.running()]
        old = newer_than or {}

        def ready(s: ZkSnapshot) -> bool:
            check_alive([*starting, *running])  # a node that died ends the wait with its log
            return s.controller is not None and all(s.live_brokers.get(b, -1) > old.get(b, -1) for b in brokers)

        with self.observer(topics=[]) as observer:
            try:
                snapshot = observer.wait_until(ready, timeout=max(0.0, deadline - time.monotonic()),
                                               description=f"a quorum leader and brokers {list(brokers)} unfenced")
            except ConvergenceTimeout as exc:
                raise NodeStartFailed(f"{exc}; " + "; ".join(n.describe_failure("was starting")
                                                             for n in starting)) from None
        expected = set(snapshot.live_brokers)
        for b in brokers:
            node = self._brokers[b]
            failure = wait_metadata_lists(node.bootstrap, expected, deadline=deadline,
                                          check_alive=lambda n=node: check_alive([n]))  # type: ignore[misc]
            if failure is not None:
                raise NodeStartFailed(node.describe_failure(f"was unfenced but its metadata did not answer ({failure})"))

    def _make_run_dir(self) -> Path:
        if self._requested_run_dir is None:
            return Path(tempfile.mkdtemp(prefix="kafka-chaos-kraft-"))
        run_dir = self._requested_run_dir
        if run_dir.exists() and any(run_dir.iterdir()):
            raise HarnessError(f"run directory {run_dir} is not empty")
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir

    def _spawn(self, node: LocalNode) -> None:
        node.process = processes.spawn(node.name, node.command, output=node.stdout_log, identity=node.identity,
                                       cwd=node.directory, detached=self._detached, group=node.group)

    # ---------------------------------------------------------------- BrokerControl

    def _disk_node(self, node_id: int) -> LocalNode:
        return self._controllers[node_id] if node_id in self._controllers else self._broker(node_id)

    def kill_broker(self, broker_id: int) -> None:
        self._signal(self._broker(broker_id), "kill")

    def stop_broker(self, broker_id: int) -> None:
        """SIGTERM: the broker's controlled shutdown (heartbeats asking to shut down) runs first."""
        self._signal(self._broker(broker_id), "stop")

    def pause_broker(self, broker_id: int) -> None:
        self._signal(self._broker(broker_id), "pause")

    def resume_broker(self, broker_id: int) -> None:
        self._signal(self._broker(broker_id), "resume")

    def broker_running(self, broker_id: int) -> bool:
        return self._broker(broker_id).running()

    def broker_paused(self, broker_id: int) -> bool:
        process = self._broker(broker_id).process
        return process is not None and process.paused()

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped or killed broker on its data; returns once it is unfenced with a new
        broker epoch (a KRaft broker re-registers at every start) and its metadata answers."""
        with self._lock:
            node = self._broker(broker_id)
            if node.running():
                raise HarnessError(f"broker {broker_id} is already running (pid {node.running_pid()})")
            with self.observer(topics=[]) as observer:
                old = observer.broker_epochs().get(broker_id, -1)
            log.info("starting %s on port %d", node.name, node.port)
            self._spawn(node)
            try:
                self._wait_ready([broker_id], time.monotonic() + self.start_timeout, newer_than={broker_id: old})
            finally:
                self.write_state()

    # ---------------------------------------------------------------- ControllerQuorumControl

    def _controller_started(self) -> None:
        self.write_state()

    # ---------------------------------------------------------------- teardown

    def any_running(self) -> bool:
        return any(n.running() for n in [*self._controllers.values(), *self._brokers.values()])

    def destroy(self) -> None:
        """Kill every node, remove the loopback firewall, then the run directory. Idempotent."""
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
            _owned.discard(self)
            errors: list[str] = []
            for node in [*self._brokers.values(), *self._controllers.values()]:
                if node.process is not None:
                    try:
                        node.process.kill()
                    except HarnessError as exc:
                        errors.append(str(exc))
            try:
                self._remove_quorum_firewall()
            except HarnessError as exc:
                errors.append(str(exc))
            errors.extend(self._unmount_disks())  # before the run directory, which holds the mounts
            if self._run_dir is not None:
                shutil.rmtree(self._run_dir, ignore_errors=True)
                if self._run_dir.exists():
                    errors.append(f"could not remove {self._run_dir}")
            if errors:
                raise HarnessError("; ".join(errors))

    # ---------------------------------------------------------------- state file

    def write_state(self) -> Path:
        """``cluster.json``: what another process needs to control this cluster (``cluster`` verbs),
        with each node's group id, so that a node another process restarts keeps its cuts and
        :meth:`destroy` of an attached cluster removes the firewall."""
        state = render_kraft_state(self.run_dir, self.config, self.distribution, self._cluster_id,
                                   self._controllers, self._brokers)
        for kind, nodes in (("controllers", self._controllers), ("brokers", self._brokers)):
            for entry in state[kind]:
                entry["group"] = nodes[int(entry["id"])].group  # read back by harness.local.state
        return write_state(self.run_dir, state)

    @classmethod
    def attach(cls, state_dir: str | os.PathLike[str]) -> LocalKraftCluster:
        """The cluster ``cluster up --mode kraft`` started in ``state_dir`` (its nodes may have died
        since: ``any_running()``); ``destroy`` kills them by pid and wipes the directory."""
        state_dir = Path(state_dir).absolute()
        parts = read_kraft_state(state_dir)
        cluster = cls(parts.config, parts.distribution, state_dir, detached=True)
        cluster._run_dir = state_dir
        cluster._cluster_id = parts.cluster_id
        cluster._controllers, cluster._brokers = dict(parts.controllers), dict(parts.brokers)
        return cluster

    # ---------------------------------------------------------------- lookups

    def _broker(self, broker_id: int) -> LocalNode:
        try:
            return self._brokers[broker_id]
        except KeyError:
            if not self._brokers:
                raise HarnessError("the cluster has not been started") from None
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}") from None

    def _signal(self, node: LocalNode, verb: str) -> None:
        signal_node(node, verb, self.stop_timeout)

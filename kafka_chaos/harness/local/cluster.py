"""The local launcher: one ZooKeeper and N Kafka brokers as JVMs on 127.0.0.1.

Everything of one cluster lives in its run directory (a temporary one unless given)::

    <run_dir>/cluster.json            what `LocalCluster.attach` and the CLI read back
    <run_dir>/log4j.properties        harness/log4j.properties, shared by every node
    <run_dir>/jmx_exporter.yaml       the brokers' JMX exporter agent configuration (harness.jmx_exporter)
    <run_dir>/zookeeper/              zookeeper.properties, data/, logs/server.log, stdout.log
    <run_dir>/broker-<id>/            server.properties, data/, logs/{server,controller,
                                      state-change}.log, stdout.log

Start-up waits on real readiness, bounded: ZooKeeper answers ``ruok``; then, with every broker
started at once, each is registered in ``/brokers/ids`` and a controller is elected (watched
through :class:`harness.observer.ZkObserver`), and each broker's metadata answers and lists
all brokers.  A node that dies or does not come up is reported with the tail of its log.

The nodes' layout and readiness are :mod:`harness.local.nodes`, ``cluster.json`` is
:mod:`harness.local.state`; this module coordinates them.

Faults keep data: ``kill``/``stop``/``start`` reuse the node's directory and port; only
:meth:`LocalCluster.destroy` wipes the run directory.  Clusters this process owns are destroyed
at interpreter exit too (and their JVMs die with the process, see :mod:`harness.processes`);
a *detached* cluster (``kafka-chaos cluster up``) outlives the command that started it.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness import jmx_exporter, processes
from kafka_chaos.harness.node_logs import keep_failed_logs
from kafka_chaos.harness.local.cds_paths import archive_options
from kafka_chaos.harness.cluster import BrokerEndpoint, Capability
from kafka_chaos.harness.config import ClusterConfig, session_timeout_ms, shared_broker_settings
from kafka_chaos.harness.distribution import KafkaDistribution, java_executable
from kafka_chaos.harness.local.disks import LocalDiskControls, disk_problems
from kafka_chaos.harness.local.clocks import LocalClockControls, clock_problems
from kafka_chaos.harness.local.ensemble import LocalEnsembleControls
from kafka_chaos.harness.local.link_proxies import ClusterLinkProxies, attach_link_proxies, start_link_proxies
from kafka_chaos.harness.local.links import LocalLinkControls
from kafka_chaos.harness.local.log_dirs import LocalLogDirControls
from kafka_chaos.harness.local.network import (
    LoopbackFirewall,
    node_mark,
    partition_problem,
    redirect_problem,
    remove_stale_chains,
)
from kafka_chaos.harness.local.nodes import (
    HOST,
    ZOOKEEPER,
    LocalNode,
    NodeLayout,
    NodeStartFailed,
    broker_node_name,
    prepare_broker,
    reprepare_broker,
    prepare_zookeeper,
    wait_brokers_ready,
    wait_zookeeper_answers,
)
from kafka_chaos.harness.local.state import STATE_FILE, read_state, render_state, write_state
from kafka_chaos.harness.nodes import free_ports, zookeeper_four_letter
from kafka_chaos.harness.processes import NodeProcess
from kafka_chaos.harness.readiness import registration_expiry_bound_s, wait_old_registration_gone
from kafka_chaos.harness.zk_ensemble import ZkServer, wait_serving

__all__ = ["STATE_FILE", "LocalCluster", "NodeStartFailed", "free_ports", "zookeeper_four_letter"]

log = logging.getLogger(__name__)

_owned_clusters: weakref.WeakSet[LocalCluster] = weakref.WeakSet()
_atexit_lock = threading.Lock()
_atexit_registered = False


def _destroy_owned_clusters() -> None:
    for cluster in list(_owned_clusters):
        try:
            cluster.destroy()
        except Exception:  # at exit, keep destroying the others
            log.exception("destroying %s at exit failed", cluster)


def _register_owned(cluster: LocalCluster) -> None:
    global _atexit_registered
    with _atexit_lock:
        if not _atexit_registered:
            atexit.register(_destroy_owned_clusters)
            _atexit_registered = True
        _owned_clusters.add(cluster)
    processes.exit_on_termination_signals()


class LocalCluster(LocalClockControls, LocalEnsembleControls, LocalLinkControls, LocalLogDirControls, LocalDiskControls):
    """:class:`harness.cluster.Cluster`, :class:`harness.cluster.BrokerControl`,
    :class:`harness.cluster.ZooKeeperControl`, the ZooKeeper-ensemble controls
    (:mod:`harness.local.ensemble`) and, as root with iptables, the network controls
    (:mod:`harness.local.links`) and failed log directories (:mod:`harness.local.log_dirs`)
    on local JVMs.

    Over ~300 lines because it is the one coordinator of the node layout, processes, state file
    and loopback firewall; each of those lives in its own module and this class only sequences
    them (every method is a few lines)."""

    backend = "local"

    @staticmethod
    def capability_problems() -> Mapping[Capability, str]:
        """Partitions need root and iptables with owner/connmark matching on this machine; power
        failures and disk faults root with /dev/fuse; clock faults libfaketime."""
        problem = partition_problem()
        problems: dict[Capability, str] = disk_problems() | clock_problems()
        if problem is not None:
            problems |= {Capability.NETWORK_PARTITION: problem, Capability.ZOOKEEPER_LINK_PARTITION: problem,
                         Capability.NETWORK_DEGRADE: problem}
        return problems

    def __init__(self, config: ClusterConfig, distribution: KafkaDistribution,
                 run_dir: str | os.PathLike[str] | None = None, *, detached: bool = False,
                 start_timeout: float = 120.0, stop_timeout: float = 60.0,
                 class_data_sharing: bool = True,
                 node_jvm_options: Mapping[str, Sequence[str]] | None = None, metrics: bool = True,
                 log4j_extra: str = "") -> None:
        """``detached``: the nodes outlive this Python process (``cluster up``).
        ``class_data_sharing``: use the archives of :mod:`harness.local.cds` when they exist.
        ``node_jvm_options``: extra JVM flags by role ("broker", "zookeeper").
        ``metrics``: every broker runs the JMX exporter agent (:mod:`harness.jmx_exporter`).
        ``log4j_extra``: lines appended to the nodes' log4j.properties (a benchmark's request log)."""
        self.config = config
        self.distribution = distribution
        self._requested_run_dir = Path(run_dir).absolute() if run_dir is not None else None
        self._run_dir: Path | None = None
        self._detached = detached
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._zookeeper: LocalNode | None = None  # server 1 of the ensemble: names the firewall
        self._zk_ensemble: dict[int, LocalNode] = {}
        self._brokers: dict[int, LocalNode] = {}
        self._link_proxies: ClusterLinkProxies | None = None  # config.link_proxies
        self._destroyed = False
        self._lock = threading.RLock()
        self._class_data_sharing = class_data_sharing
        self._node_jvm_options = {role: list(flags) for role, flags in (node_jvm_options or {}).items()}
        self._metrics = metrics
        self._log4j_extra = log4j_extra
        # rolled brokers (ReleaseRoller): their release and their config with their own overrides
        self._releases: dict[int, KafkaDistribution] = {}
        self._broker_configs: dict[int, ClusterConfig] = {}

    def __repr__(self) -> str:
        return f"LocalCluster({self.config.brokers} brokers, run_dir={self._run_dir})"

    # ---------------------------------------------------------------- context manager

    def __enter__(self) -> LocalCluster:
        self.start()  # cleans up itself when it fails
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and not isinstance(exc, KeyboardInterrupt):
            keep_failed_logs(self)
        self.destroy()

    # ---------------------------------------------------------------- Cluster

    @property
    def kafka_version(self) -> str:
        return self.distribution.version

    @property
    def run_dir(self) -> Path:
        if self._run_dir is None:
            raise HarnessError("the cluster has not been started")
        return self._run_dir

    @property
    def broker_ids(self) -> list[int]:
        return self.config.broker_ids()

    @property
    def zookeeper_connect(self) -> str:
        self._zk()
        return ",".join(f"{HOST}:{node.port}" for _, node in sorted(self._zk_ensemble.items()))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self._broker(b).bootstrap for b in self.broker_ids)

    @property
    def zookeeper_pid(self) -> int | None:
        return self._zk().running_pid()

    def broker_pid(self, broker_id: int) -> int | None:
        return self._broker(broker_id).running_pid()

    def endpoint(self, broker_id: int) -> BrokerEndpoint:
        node = self._broker(broker_id)
        plane = f"{HOST}:{node.control_plane_port}" if node.control_plane_port is not None else None
        return BrokerEndpoint(broker_id=broker_id, host=HOST, port=node.port, pid=self.broker_pid(broker_id),
                              metrics_port=node.metrics_port, control_plane=plane)

    def broker_settings(self) -> dict[str, str]:
        return shared_broker_settings(self.config, self.distribution.version)

    def log_files(self) -> dict[str, Path]:
        self._zk()
        files = {node.name: node.server_log for _, node in sorted(self._zk_ensemble.items())}
        files.update({broker_node_name(b): self._broker(b).server_log for b in self.broker_ids})
        return files

    def broker_log_dir(self, broker_id: int) -> Path:
        """The directory a broker's log4j files are in (server, controller, state-change)."""
        return self._broker(broker_id).server_log.parent

    def session_timeout_s(self) -> float:
        return session_timeout_ms(self.config) / 1000

    # ---------------------------------------------------------------- start

    def start(self) -> None:
        with self._lock:
            if self._run_dir is not None:
                raise HarnessError("this LocalCluster was already started; make a new one")
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
        layout = self._layout(self._run_dir)
        servers = self._plan_ensemble()
        n = self.config.brokers
        ensemble = [p for s in servers for p in (s.client_port, s.quorum_port, s.election_port) if p]
        ports = free_ports((3 if self.config.control_plane_listener else 2) * n, taken=ensemble)  # all distinct
        broker_ports, metrics_ports = ports[:n], ports[n:2 * n]
        control_ports: list[int | None] = list(ports[2 * n:]) or [None] * n  # KIP-291's listener
        for server in servers:
            self._zk_ensemble[server.server_id] = prepare_zookeeper(layout, self.config, server.client_port,
                                                                    server, servers)
        self._zookeeper = self._zk_ensemble[servers[0].server_id]
        connect = ",".join(f"{HOST}:{server.client_port}" for server in servers)
        if self.config.link_proxies:  # each broker reaches ZooKeeper through proxies of its own
            # As root also the peer and client links, redirected to the proxy by nat rules.
            peers = dict(zip(self.broker_ids, broker_ports)) if redirect_problem() is None else None
            planes = {b: p for b, p in zip(self.broker_ids, control_ports) if p is not None}
            self._link_proxies = start_link_proxies(self._run_dir, self.broker_ids,
                                                    {s.server_id: s.client_port for s in servers},
                                                    detached=self._detached, broker_ports=peers, control_ports=planes)
        for broker_id, port, metrics_port, control_port in zip(self.broker_ids, broker_ports, metrics_ports,
                                                               control_ports):
            broker_connect = self._link_proxies.connect_string(broker_id) if self._link_proxies else connect
            self._brokers[broker_id] = prepare_broker(layout, self.config, broker_id, port, broker_connect,
                                                      metrics_port, control_port)
        self._fake_clocks([*self._zk_ensemble.values(), *self._brokers.values()])
        self._mount_disks([(b, self._brokers[b]) for b in self.broker_ids])
        self._install_firewall()
        deadline = time.monotonic() + self.start_timeout
        log.info("starting ZooKeeper on %s (run dir %s)", connect, self._run_dir)
        for node in self._zk_ensemble.values():
            self._spawn(node)
        for node in self._zk_ensemble.values():
            wait_zookeeper_answers(node, deadline, self.start_timeout)
        if len(servers) > 1:
            wait_serving(self.zookeeper_client_ports(), list(self._zk_ensemble), deadline - time.monotonic())
        log.info("starting %d Kafka %s brokers on ports %s", self.config.brokers, self.kafka_version,
                 ", ".join(map(str, broker_ports)))
        for broker_id in self.broker_ids:  # all at once: JVM start-up dominates
            self._spawn(self._brokers[broker_id])
        wait_brokers_ready(self.zookeeper_connect, self._brokers, deadline, self.start_timeout)
        self.write_state()
        log.info("cluster ready in %.1f s: bootstrap %s, ZooKeeper %s", time.monotonic() - began,
                 self.bootstrap_servers, self.zookeeper_connect)

    def _plan_ensemble(self) -> list[ZkServer]:
        """Server ids 1..N with a client port each, and quorum and election ports in an ensemble."""
        count = self.config.zookeepers
        ports = free_ports(count if count == 1 else 3 * count)
        if count == 1:
            return [ZkServer(1, ports[0], 0, 0)]
        return [ZkServer(i + 1, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) for i in range(count)]

    def _layout(self, run_dir: Path, distribution: KafkaDistribution | None = None) -> NodeLayout:
        distribution = distribution or self.distribution
        log4j = run_dir / "log4j.properties"
        log4j.write_bytes(resources.files("kafka_chaos.harness").joinpath("log4j.properties").read_bytes()
                          + self._log4j_extra.encode())
        java = java_executable()
        agent = (jmx_exporter.resolve_agent_jar(), jmx_exporter.write_config(run_dir)) if self._metrics else None
        return NodeLayout(run_dir=run_dir, java=java, classpath=distribution.classpath, log4j=log4j,
                          kafka_version=distribution.version,
                          jvm_options={role: self._jvm_options(role, java, distribution)
                                       for role in ("broker", "zookeeper")},
                          metrics_agent=agent)

    def _jvm_options(self, role: str, java: str, distribution: KafkaDistribution | None = None) -> list[str]:
        options = list(self.config.jvm_options)
        if self._class_data_sharing:  # an archive matches one class path: none for another release
            options += archive_options(distribution or self.distribution, role, java)
        return options + self._node_jvm_options.get(role, [])

    def _make_run_dir(self) -> Path:
        if self._requested_run_dir is None:
            return Path(tempfile.mkdtemp(prefix="kafka-chaos-"))
        run_dir = self._requested_run_dir
        if run_dir.exists() and any(run_dir.iterdir()):
            raise HarnessError(f"run directory {run_dir} is not empty")
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir

    def _spawn(self, node: LocalNode) -> None:
        node.process = processes.spawn(node.name, node.command, output=node.stdout_log,
                                       identity=node.identity, cwd=node.directory,
                                       detached=self._detached, group=node.group)

    def _nodes(self) -> list[LocalNode]:
        return [*self._zk_ensemble.values(), *self._brokers.values()]

    def _install_firewall(self) -> None:
        """As root with iptables: mark every node's connections (it runs with a group id of its
        own) so links can be cut later; before any node starts, since a connection is marked
        when it opens.  First removes the chains a killed run left behind."""
        if partition_problem() is not None:
            return
        remove_stale_chains()
        nodes = self._nodes()
        for node in nodes:
            node.group = node_mark(node.port)
        proxies = self._link_proxies
        LoopbackFirewall(self._zk().port).install([n.port for n in nodes],
                                                  proxies.redirects() if proxies and proxies.peer_links else ())

    # ---------------------------------------------------------------- BrokerControl

    def kill_broker(self, broker_id: int) -> None:
        node, process = self._running(self._broker(broker_id), "kill")
        log.info("SIGKILL %s (pid %d)", node.name, process.pid)
        process.kill()

    def stop_broker(self, broker_id: int) -> None:
        node, process = self._running(self._broker(broker_id), "stop")
        log.info("SIGTERM %s (pid %d): controlled shutdown", node.name, process.pid)
        process.terminate(self.stop_timeout)

    def pause_broker(self, broker_id: int) -> None:
        node, process = self._running(self._broker(broker_id), "pause")
        log.info("SIGSTOP %s (pid %d)", node.name, process.pid)
        process.pause()

    def resume_broker(self, broker_id: int) -> None:
        node, process = self._running(self._broker(broker_id), "resume")
        log.info("SIGCONT %s (pid %d)", node.name, process.pid)
        process.resume()

    def broker_running(self, broker_id: int) -> bool:
        return self._broker(broker_id).running()

    # ---------------------------------------------------------------- ReleaseRoller

    def broker_version(self, broker_id: int) -> str:
        self._broker(broker_id)
        return self._releases.get(broker_id, self.distribution).version

    def broker_overrides(self, broker_id: int) -> dict[str, str]:
        return dict(self._broker_config(broker_id).broker_overrides.get(broker_id, {}))

    def set_broker_release(self, broker_id: int, kafka_version: str, overrides: Mapping[str, str]) -> None:
        """The stopped broker's next start runs ``kafka_version`` (its jars resolved as the
        cluster's were) with ``overrides`` on top of the cluster's properties."""
        from kafka_chaos.harness.distribution import resolve_distribution

        with self._lock:
            node = self._broker(broker_id)
            if node.running():
                raise HarnessError(f"broker {broker_id} runs: stop it before moving it to Kafka {kafka_version}")
            distribution = (self.distribution if kafka_version == self.distribution.version
                            else resolve_distribution(kafka_version))
            config = self._broker_config(broker_id)
            config = replace(config, broker_overrides={**config.broker_overrides,
                                                       broker_id: {**config.broker_overrides.get(broker_id, {}),
                                                                   **overrides}})
            if self._run_dir is None:
                raise HarnessError("this LocalCluster was not started")
            reprepare_broker(node, self._layout(self._run_dir, distribution), config, broker_id)
            self._releases[broker_id] = distribution
            self._broker_configs[broker_id] = config
            log.info("broker %d runs Kafka %s from its next start%s", broker_id, distribution.version,
                     f" with {dict(overrides)}" if overrides else "")

    def _controller_may_be_kraft(self) -> bool:
        """Whether ``/controller`` may name a KRaft controller (a migrating cluster's)."""
        return False

    def _broker_config(self, broker_id: int) -> ClusterConfig:
        return self._broker_configs.get(broker_id, self.config)

    def broker_paused(self, broker_id: int) -> bool:
        process = self._broker(broker_id).process
        return process is not None and process.paused()

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped or killed broker on its old data and port, once its old ZooKeeper
        registration is gone (:func:`harness.readiness.wait_old_registration_gone`)."""
        with self._lock:
            node = self._broker(broker_id)
            pid = node.running_pid()
            if pid is not None:
                raise HarnessError(f"broker {broker_id} is already running (pid {pid})")
            old_epoch = wait_old_registration_gone(self.zookeeper_connect, broker_id,
                                                   registration_expiry_bound_s(self.config))
            log.info("starting %s on port %d", node.name, node.port)
            self._spawn(node)
            try:
                wait_brokers_ready(self.zookeeper_connect, {broker_id: node},
                                   time.monotonic() + self.start_timeout, self.start_timeout,
                                   newer_than={broker_id: old_epoch if old_epoch is not None else -1},
                                   kraft_controller=self._controller_may_be_kraft())
            finally:
                if self._run_dir is not None and self._run_dir.exists():
                    self.write_state()

    # ---------------------------------------------------------------- ZooKeeperControl

    def pause_zookeeper(self) -> None:
        """SIGSTOP every ZooKeeper server: the whole service stops answering."""
        for node in self._zk_nodes():
            _, process = self._running(node, "pause")
            log.info("SIGSTOP %s (pid %d)", node.name, process.pid)
            process.pause()

    def stop_zookeeper(self) -> None:
        """SIGTERM every ZooKeeper server and wait for them to exit (bounded, then SIGKILL)."""
        for node in self._zk_nodes():
            _, process = self._running(node, "stop")
            log.info("SIGTERM %s (pid %d)", node.name, process.pid)
            process.terminate(self.stop_timeout)

    def zookeeper_paused(self) -> bool:
        processes_ = [node.process for node in self._zk_nodes()]
        return all(p is not None and p.paused() for p in processes_)

    def resume_zookeeper(self) -> None:
        for node in self._zk_nodes():
            _, process = self._running(node, "resume")
            log.info("SIGCONT %s (pid %d)", node.name, process.pid)
            process.resume()

    def _zk_nodes(self) -> list[LocalNode]:
        self._zk()
        return [node for _, node in sorted(self._zk_ensemble.items())]

    # ---------------------------------------------------------------- teardown

    def any_running(self) -> bool:
        return any(n.running() for n in self._nodes())

    def destroy(self) -> None:
        """Kill every node (paused ones too), then remove the run directory.  Idempotent.

        SIGKILL rather than SIGTERM: the data is wiped anyway, and a controlled shutdown of the
        last brokers would only wait for a quorum that is going away.
        """
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
            _owned_clusters.discard(self)
            errors: list[str] = []
            for node in [*self._brokers.values(), *self._zk_ensemble.values()]:
                if node.process is not None:
                    try:
                        node.process.kill()
                    except HarnessError as exc:
                        errors.append(str(exc))
            if self._zookeeper is not None and self._zookeeper.group is not None:
                self._firewall().remove()
            if self._link_proxies is not None:
                self._link_proxies.stop()
            errors.extend(self._unmount_disks())  # before the run directory, which holds the mounts
            if self._run_dir is not None:
                errors.extend(self._remove_run_dir(self._run_dir))
            if errors:
                raise HarnessError("; ".join(errors))

    @staticmethod
    def _remove_run_dir(run_dir: Path) -> list[str]:
        # Belt and braces: a node restarted by another process (CLI) that we hold no pid of.
        marker = f"{run_dir}{os.sep}"
        for pid in processes.processes_mentioning(marker):
            log.warning("killing leftover process %d of %s", pid, run_dir)
            processes.attach("leftover", pid, marker).kill()
        shutil.rmtree(run_dir, ignore_errors=True)
        return [f"could not remove {run_dir}"] if run_dir.exists() else []

    # ---------------------------------------------------------------- state file

    def state(self) -> dict[str, Any]:
        """What ``cluster.json`` holds: enough for another process to control the cluster."""
        state = render_state(self.run_dir, self.config, self.distribution, self._zk(),
                             {b: self._broker(b) for b in self.broker_ids}, self._zk_ensemble)
        if self._link_proxies is not None:
            state["link_proxy"] = self._link_proxies.state()
        return state

    def write_state(self) -> Path:
        return write_state(self.run_dir, self.state())

    @classmethod
    def attach(cls, state_dir: str | os.PathLike[str]) -> LocalCluster:
        """The cluster a ``kafka-chaos cluster up`` started in ``state_dir`` (its nodes may have
        died since: check ``any_running()``).  Controls work as on the original; ``destroy``
        kills the nodes by pid (checked against their start time and command lines) and wipes
        the directory."""
        state_dir = Path(state_dir).absolute()
        parts = read_state(state_dir)
        cluster = cls(parts.config, parts.distribution, state_dir, detached=True)
        cluster._run_dir = state_dir
        cluster._zookeeper = parts.zookeeper
        cluster._zk_ensemble = dict(parts.zookeepers)
        cluster._brokers = dict(parts.brokers)
        cluster._link_proxies = attach_link_proxies(json.loads((state_dir / STATE_FILE).read_text()).get("link_proxy"))
        return cluster

    # ---------------------------------------------------------------- lookups

    def _zk(self) -> LocalNode:
        if self._zookeeper is None:
            raise HarnessError("the cluster has not been started")
        return self._zookeeper

    def _disk_node(self, node_id: int) -> LocalNode:
        return self._broker(node_id)

    def _broker(self, broker_id: int) -> LocalNode:
        if self._zookeeper is None:
            raise HarnessError("the cluster has not been started")
        try:
            return self._brokers[broker_id]
        except KeyError:
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}") from None

    @staticmethod
    def _running(node: LocalNode, verb: str) -> tuple[LocalNode, NodeProcess]:
        """The node and its process; HarnessError when it is not running."""
        if node.process is None or not node.process.alive():
            what = ("ZooKeeper" if node.name == ZOOKEEPER else node.name if node.name.startswith(ZOOKEEPER)
                    else f"broker {node.name.removeprefix('broker-')}")
            raise HarnessError(f"cannot {verb} {what}: it is not running")
        return node, node.process

"""``ContainerCluster``: a ZooKeeper ensemble (1, 3 or 5 servers) and N brokers, each in a
Docker container.

The same contract as :class:`harness.local.cluster.LocalCluster` (``harness.cluster.Cluster``,
``BrokerControl``, the ZooKeeper ensemble and link controls, degraded links) plus
:class:`harness.cluster.NetworkPartitioner`, because every container has its own network
namespace.  Layout:

- a dedicated bridge network ``kafka-chaos-<run>`` on a subnet chosen for the run, every node on
  a fixed address of it (:mod:`harness.containers.nodes` says why); a lone ZooKeeper is
  ``zookeeper:2181``, an ensemble's servers ``zookeeper-N:2181``, and broker N is ``broker-N``;
- two listeners per broker: ``INTERNAL`` (port 9092, advertised as ``broker-N:9092``) carries
  inter-broker traffic over the network, ``EXTERNAL`` (port 9094) is published on
  ``127.0.0.1:<host port>`` and advertised as exactly that, for clients on the host.  Docker only
  tells a mapped port after start, so host ports are picked up front and bound explicitly.
  ``ClusterConfig(control_plane_listener=True)`` adds KIP-291's ``CONTROL_PLANE`` (port 9093,
  ``broker-N:9093``, not published), which the controller's requests arrive on;
- each ZooKeeper server's 2181 is published on ``127.0.0.1`` too, for the observer and for
  ``srvr`` (who leads: :mod:`harness.containers.ensemble`).

Broker properties come from :func:`harness.config.broker_properties` (the local launcher's
layering), only the listeners differ, so timeouts and therefore latencies compare.  Every
Docker object carries ``kafka-chaos.run``/``kafka-chaos.owner`` labels and is removed on
``destroy()`` — reached from ``with``, atexit and SIGTERM/SIGHUP (:mod:`.teardown`) — and
otherwise by ``kafka-chaos cluster prune``.

How each container is configured and started is :mod:`harness.containers.nodes`; this module
coordinates start order, readiness and the faults.

``ContainerCluster(..., state_dir=DIR)`` (``kafka-chaos cluster up --backend containers``) is
*detached*: its containers outlive this process (no teardown at exit, no Ryuk reaper, labels that
name ``DIR``: :func:`harness.containers.labels.detached_labels`) and ``DIR/cluster.json``
(:mod:`harness.containers.state`) lets :meth:`ContainerCluster.attach` control it from another
process.  ``broker_log_files=True`` (``kafka-chaos bench kip291``) mounts a host directory per
broker and logs there with the local launcher's file appenders (plus ``log4j_extra``), so the
request, controller and state-change logs are read as files, as on the local launcher.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.node_logs import keep_failed_logs
from kafka_chaos.harness.cluster import BrokerEndpoint, Capability
from kafka_chaos.harness.config import session_timeout_ms, shared_broker_settings
from kafka_chaos.harness.containers import teardown
from kafka_chaos.harness.containers.clocks import CLOCKS_SUBDIR, ContainerClockControls
from kafka_chaos.harness.containers.disks import ContainerDiskControls
from kafka_chaos.harness.containers.ensemble import ContainerEnsembleControls
from kafka_chaos.harness.containers.image import docker_client, ensure_kafka_image
from kafka_chaos.harness.containers.labels import detached_labels, new_run_id, run_labels
from kafka_chaos.harness.containers.log_dirs import ContainerLogDirControls, log_dir_problem
from kafka_chaos.harness.containers.network import (
    NamespaceFirewall,
    NamespaceShaper,
    Peers,
    addresses_to_cut,
    check_partition_tools,
)
from kafka_chaos.harness.containers.nodes import (
    CONTROL_PLANE_PORT,
    NodeStarter,
    address_on,
    broker_alias,
    broker_listeners,
    container_pid,
    container_state,
    gateway_on,
    kill_container,
    log_tail,
    zookeeper_alias,
)
from kafka_chaos.harness.containers.state import (
    ContainerState,
    NodeContainer,
    read_container_state,
    render_container_state,
)
from kafka_chaos.harness.local.disks import disk_problems
from kafka_chaos.harness.local.state import STATE_FILE, write_state
from kafka_chaos.harness.nodes import free_ports, zookeeper_four_letter
from kafka_chaos.harness.observer import ConvergenceTimeout, ZkObserver
from kafka_chaos.harness.readiness import (
    registration_expiry_bound_s,
    still_registered,
    wait_metadata_lists,
    wait_old_registration_gone,
    wait_registered,
)
from kafka_chaos.harness.zk_ensemble import wait_serving

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import KafkaDistribution

__all__ = ["ContainerCluster", "broker_alias", "broker_listeners"]

log = logging.getLogger(__name__)

# docker stop sends SIGTERM, then SIGKILL after this: long enough for a controlled shutdown
# (controlled.shutdown.max.retries x retry backoff, plus moving leaders away).
STOP_TIMEOUT_SECONDS = 60
START_TIMEOUT_SECONDS = 120.0


class ContainerCluster(ContainerLogDirControls, ContainerEnsembleControls, ContainerClockControls,
                       ContainerDiskControls):
    """See the module docstring.  Use as a context manager, or call ``start``/``destroy``.
    Failed log directories: :mod:`harness.containers.log_dirs`; nodes' clocks:
    :mod:`harness.containers.clocks`; power failures and disk faults: :mod:`harness.containers.disks`."""

    backend = "containers"

    @staticmethod
    def capability_problems() -> dict[Capability, str]:
        """Failing a container's log directory needs root (``/proc/<pid>/root``); the
        crash-consistency layer runs on the host (root, /dev/fuse, libfuse3)."""
        problem = log_dir_problem()
        return {**({Capability.LOG_DIR_FAILURE: problem} if problem else {}), **disk_problems()}

    def __init__(self, config: ClusterConfig, distribution: KafkaDistribution, *,
                 base_image: str | None = None, run_id: str | None = None,
                 start_timeout: float = START_TIMEOUT_SECONDS, class_data_sharing: bool = True,
                 metrics: bool = True, state_dir: Path | None = None, broker_log_files: bool = False,
                 log4j_extra: str = "", stop_timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """``class_data_sharing``: start the JVMs from the image's class-data archives
        (:mod:`harness.containers.cds`, built on first use); ``metrics``: every broker runs the
        JMX exporter agent (:mod:`harness.metrics`); ``state_dir``: detached, see the module
        docstring; ``broker_log_files``: brokers log to host files (:meth:`broker_log_dir`),
        with ``log4j_extra`` appended to their log4j configuration; ``stop_timeout``: seconds
        ``stop_broker`` gives a broker before SIGKILL (a big one's controlled shutdown and log
        closing take longer: :func:`benches.failover.stop_timeout_for`)."""
        self.config = config
        self.distribution = distribution
        self.base_image = base_image
        self.run_id = run_id or new_run_id()
        self.start_timeout = start_timeout
        self.image: str | None = None
        self.state_dir = state_dir.absolute() if state_dir is not None else None
        self.labels = detached_labels(self.run_id, self.state_dir) if self.state_dir else run_labels(self.run_id)
        self.stop_timeout = float(stop_timeout)
        self._client: docker.DockerClient | None = None
        self._starter: NodeStarter | None = None
        self._zookeepers: dict[int, Container] = {}  # server id (myid) -> container
        self._brokers: dict[int, Container] = {}
        self._zk_host_ports: dict[int, int] = {}
        self._broker_host_ports: dict[int, int] = {}
        self._metrics_host_ports: dict[int, int] = {}  # the brokers' JMX exporters (harness.metrics)
        self._cut: set[int] = set()  # brokers with partition or degradation rules in their namespace
        self._shaped: set[str] = set()  # peers rate-limited towards a degraded broker
        self._run_dir: Path | None = None
        self._destroyed = False
        self._class_data_sharing = class_data_sharing
        self._metrics = metrics
        self._network_name: str | None = None
        self._broker_log_files = broker_log_files
        self._log4j_extra = log4j_extra
        self._logs_root: Path | None = None  # host directory of the brokers' log files
        self._clocks_root: Path | None = None  # host directory of the nodes' clock control files

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> ContainerCluster:
        self.start()  # cleans up itself when it fails
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and not isinstance(exc, KeyboardInterrupt):
            keep_failed_logs(self)
        self.destroy()

    def start(self) -> None:
        """Build (or reuse) the image, then start ZooKeeper and every broker; returns once all
        are ready (bounded by ``start_timeout``).  Removes whatever it started when it fails."""
        if self._client is not None:
            raise HarnessError("this ContainerCluster was already started; make a new one")
        try:
            self._start()
        except BaseException:
            self.destroy()
            raise

    def _start(self) -> None:
        began = time.monotonic()
        disable_ryuk_unless_present(force=self.state_dir is not None)
        self._client = docker_client()
        self.image = ensure_kafka_image(self.distribution, base_image=self.base_image,
                                        client=self._client).tag
        with_archives = self._class_data_sharing and self._use_class_data_archives()
        teardown.register(self)  # from here on something may need removing
        servers = list(range(1, self.config.zookeepers + 1))
        brokers = self.config.broker_ids()
        ports = free_ports(len(servers) + 2 * len(brokers))
        self._zk_host_ports = dict(zip(servers, ports))
        self._broker_host_ports = dict(zip(brokers, ports[len(servers):]))
        self._metrics_host_ports = dict(zip(brokers, ports[len(servers) + len(brokers):]))
        self._starter = NodeStarter(self.run_id, self.image, self.labels, class_data_sharing=with_archives,
                                    kafka_version=self.distribution.version)
        self._network_name = self._starter.create_network().name
        if self._broker_log_files:
            self._logs_root = Path(tempfile.mkdtemp(prefix=f"kafka-chaos-{self.run_id}-logs-"))
        data_dirs = self._mount_disks(self.config.broker_ids())
        library = self._start_clocks(self._client, self.image,
                                     self.state_dir / CLOCKS_SUBDIR if self.state_dir is not None else None)
        for server_id in servers:
            self._zookeepers[server_id] = self._starter.start_zookeeper(
                self.config, self._zk_host_ports[server_id], server_id,
                clock=self._node_clock("zookeeper", server_id, library))
        self._wait_zookeeper_ready()
        log.info("starting %d Kafka %s broker containers", self.config.brokers, self.kafka_version)
        for broker_id in self.config.broker_ids():
            self._brokers[broker_id] = self._starter.start_broker(self.config, broker_id,
                                                                  self._broker_host_ports[broker_id],
                                                                  self._metrics_host_ports[broker_id]
                                                                  if self._metrics else None,
                                                                  log_files=self._log_files_of(broker_id),
                                                                  clock=self._node_clock("broker", broker_id, library),
                                                                  data_dir=data_dirs.get(broker_id))
        self._wait_brokers_ready(self.broker_ids, time.monotonic() + self.start_timeout)
        if self.state_dir is not None:
            self.write_state()
            teardown.unregister(self)  # started: it outlives this process from here on
        log.info("container cluster %s ready in %.1f s: bootstrap %s, ZooKeeper %s", self.run_id,
                 time.monotonic() - began, self.bootstrap_servers, self.zookeeper_connect)

    def _use_class_data_archives(self) -> bool:
        """Switch ``self.image`` to its class-data layer (built once, before this run's containers:
        one cluster at a time); False when it could not be made."""
        from kafka_chaos.harness.containers.cds import ensure_cds_image  # it starts a ContainerCluster itself

        assert self.image is not None and self._client is not None
        cds = ensure_cds_image(self.distribution, self.image, self.config, base_image=self.base_image,
                               client=self._client)
        if cds is None:
            return False
        self.image = cds
        return True

    def _clock_nodes(self) -> dict[str, list[int]]:
        """The brokers' and the ZooKeeper servers' clocks (:mod:`harness.containers.clocks`)."""
        return {"broker": self.config.broker_ids(), "zookeeper": list(range(1, self.config.zookeepers + 1))}

    def _log_files_of(self, broker_id: int) -> tuple[str, str] | None:
        """(host directory, log4j configuration) when the brokers log to host files."""
        if self._logs_root is None:
            return None
        from importlib import resources

        directory = self.broker_log_dir(broker_id)
        directory.mkdir(parents=True, exist_ok=True)
        text = resources.files("kafka_chaos.harness").joinpath("log4j.properties").read_text() + self._log4j_extra
        return str(directory), text

    def broker_log_dir(self, broker_id: int) -> Path:
        """The host directory a broker logs to (``broker_log_files=True`` only)."""
        if self._logs_root is None:
            raise HarnessError("this container cluster logs to stdout (docker logs), not to files")
        return self._logs_root / broker_alias(broker_id)

    # ------------------------------------------------------------------ detached (cluster up)

    def state(self) -> dict[str, object]:
        """What ``cluster.json`` holds (:mod:`harness.containers.state`)."""
        if self._network_name is None or self.image is None:
            raise HarnessError("the cluster has not been started")
        servers = len(self._zookeepers)
        described = ContainerState(
            run_id=self.run_id, image=self.image, network=self._network_name, config=self.config,
            distribution=self.distribution, base_image=self.base_image,
            zookeepers={z: NodeContainer(zookeeper_alias(z, servers), c.name, c.id, self._zk_host_ports[z])
                        for z, c in self._zookeepers.items()},
            brokers={b: NodeContainer(broker_alias(b), c.name, c.id, self._broker_host_ports[b],
                                      self._metrics_host_ports.get(b) if self._metrics else None)
                     for b, c in self._brokers.items()})
        planes = {b: e.control_plane for b in self.broker_ids if (e := self.endpoint(b)).control_plane}
        return render_container_state(described, bootstrap_servers=self.bootstrap_servers,
                                      zookeeper_connect=self.zookeeper_connect, control_plane=planes)

    def write_state(self) -> Path:
        if self.state_dir is None:
            raise HarnessError("only a detached cluster (state_dir=...) has a state file")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return write_state(self.state_dir, self.state())

    @classmethod
    def attach(cls, state_dir: Path) -> ContainerCluster:
        """The cluster a ``cluster up --backend containers`` left in ``state_dir`` (containers
        removed since are missing: check :meth:`any_running`).  Controls work as on the original;
        ``heal_network`` flushes every broker's rules (this process does not know which were cut);
        ``destroy`` removes the run's Docker objects by label and the state dir."""
        state_dir = state_dir.absolute()
        described = read_container_state(state_dir)
        cluster = cls(described.config, described.distribution, base_image=described.base_image,
                      run_id=described.run_id, state_dir=state_dir)
        cluster.image = described.image
        cluster._network_name = described.network
        cluster._client = docker_client()
        cluster._zookeepers = existing_containers(cluster._client, described.zookeepers, state_dir)
        cluster._brokers = existing_containers(cluster._client, described.brokers, state_dir)
        cluster._zk_host_ports = {z: e.host_port for z, e in described.zookeepers.items()}
        cluster._broker_host_ports = {b: e.host_port for b, e in described.brokers.items()}
        cluster._metrics_host_ports = {b: e.metrics_port for b, e in described.brokers.items()
                                       if e.metrics_port is not None}
        cluster._metrics = bool(cluster._metrics_host_ports)
        if (state_dir / CLOCKS_SUBDIR).is_dir():
            cluster._clocks_root = state_dir / CLOCKS_SUBDIR
        cluster._cut = set(cluster._brokers)
        cluster._shaped = {c.name for c in [*cluster._zookeepers.values(), *cluster._brokers.values()]}
        return cluster

    def any_running(self) -> bool:
        """Whether any node's container still runs (or is paused)."""
        return any(container_state(c) in ("running", "paused") for c in self.node_containers().values())

    def destroy(self) -> None:
        """Remove every container and the network of this run, and the local log dir (and a
        detached cluster's state dir). Idempotent."""
        if self._destroyed:
            return
        self._destroyed = True
        teardown.unregister(self)
        client = self._client
        if client is not None:
            from kafka_chaos.harness.containers.prune import remove_run

            remove_run(client, self.run_id)
            client.close()
        for problem in self._unmount_disks():  # once no container uses the mounts
            log.warning("crash-consistency layer: %s", problem)
        if self._starter is not None:
            self._starter.close()
        for directory in (self._run_dir, self._logs_root, self._clocks_root, self._lazy_root):
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
        if self.state_dir is not None:
            (self.state_dir / STATE_FILE).unlink(missing_ok=True)
            shutil.rmtree(self.state_dir, ignore_errors=True)
        self._brokers.clear()
        self._zookeepers = {}

    # ------------------------------------------------------------------ readiness

    def _wait_zookeeper_ready(self) -> None:
        """A lone ZooKeeper answers ``ruok``; an ensemble's servers all serve, with one leader
        (``srvr``).  Bounded; a dead container ends the wait."""
        def check_alive() -> None:
            for server_id, container in self._zookeepers.items():
                self._require_running(container, zookeeper_alias(server_id, len(self._zookeepers)))

        def ready() -> bool:
            check_alive()
            return zookeeper_four_letter("127.0.0.1", self._zk_host_ports[1], "ruok", timeout=1.0) == "imok"

        try:
            if len(self._zookeepers) > 1:
                wait_serving(self.zookeeper_client_ports(), list(self._zookeepers), self.start_timeout)
            else:
                wait_until(ready, timeout=self.start_timeout, interval=0.2, retry_on=(OSError,),
                           description="ZooKeeper to answer 'ruok'")
        except (WaitTimeout, HarnessError) as exc:
            tails = "; ".join(f"{zookeeper_alias(z, len(self._zookeepers))}: "
                              f"{log_tail(c)}" for z, c in sorted(self._zookeepers.items()))
            raise HarnessError(f"ZooKeeper did not serve within {self.start_timeout:.0f} s ({exc}); "
                               f"logs: {tails}") from None

    def _wait_brokers_ready(self, broker_ids: list[int], deadline: float,
                            newer_than: Mapping[int, int] | None = None) -> None:
        """As the local launcher: registered in /brokers/ids (with a newer epoch than
        ``newer_than`` gives), a live controller, then each broker's metadata, asked through its
        published port, lists every live broker.  Kafka registers before it enables request
        processing; until then docker-proxy resets client connections."""
        def check_alive() -> None:
            for broker_id in broker_ids:
                self._require_running(self._brokers[broker_id], broker_alias(broker_id))

        try:
            snapshot = wait_registered(self.zookeeper_connect, broker_ids, deadline=deadline,
                                       newer_than=newer_than, check_alive=check_alive)
        except ConvergenceTimeout as exc:
            tails = "; ".join(f"{broker_alias(b)}: {self._tail(broker_alias(b))}" for b in broker_ids)
            raise HarnessError(f"{exc}; logs: {tails}") from None
        with ZkObserver(self.zookeeper_connect, topics=[]) as observer:
            expected = still_registered(observer, set(snapshot.live_brokers))
            for broker_id in broker_ids:
                bootstrap = self.endpoint(broker_id).bootstrap
                # At least a second per broker: docker-proxy may still reset the first connections.
                failure = wait_metadata_lists(bootstrap, expected, deadline=max(deadline, time.monotonic() + 1.0),
                                              check_alive=check_alive)
                if failure is not None:
                    raise HarnessError(f"broker {broker_id} registered but its metadata on {bootstrap} did not "
                                       f"list the registered brokers in time ({failure}); "
                                       f"log: {self._tail(broker_alias(broker_id))}")

    def _require_running(self, container: Container | None, node: str) -> None:
        if container is None:
            raise HarnessError(f"{node} container was never created")
        if container_state(container) not in ("running", "paused"):
            raise HarnessError(f"{node} container exited; log: {self._tail(node)}")

    def _tail(self, node: str) -> str:
        return log_tail(self.node_containers().get(node))

    def node_containers(self) -> dict[str, Container]:
        """Every node's container by node name (``zookeeper[-N]``, ``broker-N``)."""
        nodes = {zookeeper_alias(z, len(self._zookeepers)): c for z, c in sorted(self._zookeepers.items())}
        nodes.update({broker_alias(b): c for b, c in sorted(self._brokers.items())})
        return nodes

    # ------------------------------------------------------------------ Cluster

    @property
    def kafka_version(self) -> str:
        return self.distribution.version

    @property
    def broker_ids(self) -> list[int]:
        return self.config.broker_ids()

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.endpoint(b).bootstrap for b in self.broker_ids)

    @property
    def zookeeper_connect(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for _, port in sorted(self._zk_host_ports.items()))

    def endpoint(self, broker_id: int) -> BrokerEndpoint:
        if broker_id not in self._broker_host_ports:
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}")
        plane = f"{broker_alias(broker_id)}:{CONTROL_PLANE_PORT}" if self.config.control_plane_listener else None
        return BrokerEndpoint(broker_id, "127.0.0.1", self._broker_host_ports[broker_id],
                              container=f"kafka-chaos-{self.run_id}-{broker_alias(broker_id)}",
                              metrics_port=self._metrics_host_ports.get(broker_id), control_plane=plane)

    def broker_settings(self) -> dict[str, str]:
        """The properties every broker shares — the same function the local launcher uses."""
        return shared_broker_settings(self.config, self.distribution.version)

    def session_timeout_s(self) -> float:
        return session_timeout_ms(self.config) / 1000

    def log_files(self) -> dict[str, Path]:
        """Each node's ``docker logs`` written to a local file now (containers log to stdout)."""
        if self._run_dir is None:
            self._run_dir = Path(tempfile.mkdtemp(prefix=f"kafka-chaos-{self.run_id}-"))
        files = {}
        for node, container in self.node_containers().items():
            if node.startswith("broker-") and self._logs_root is not None:
                # log4j's files; controller.log and state-change.log beside it (harness.node_logs)
                files[node] = self._logs_root / node / "server.log"
                continue
            path = self._run_dir / f"{node}.log"
            path.write_bytes(container.logs(stdout=True, stderr=True))
            files[node] = path
        return files

    # ------------------------------------------------------------------ BrokerControl

    def _broker(self, broker_id: int) -> Container:
        if broker_id in self._broker_host_ports and broker_id not in self._brokers:
            raise HarnessError(f"broker {broker_id}'s container is gone (removed outside kafka-chaos)")
        if broker_id not in self._brokers:
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}")
        return self._brokers[broker_id]

    def kill_broker(self, broker_id: int) -> None:
        """``docker kill`` (SIGKILL); returns once the container has exited."""
        kill_container(self._broker(broker_id))
        self._cut.discard(broker_id)

    def stop_broker(self, broker_id: int) -> None:
        """``docker stop`` (SIGTERM, controlled shutdown; SIGKILL after ``stop_timeout``)."""
        container = self._broker(broker_id)
        if container_state(container) == "paused":
            container.unpause()  # SIGTERM cannot be handled by a frozen JVM
        container.stop(timeout=math.ceil(self.stop_timeout))  # the API takes whole seconds
        self._cut.discard(broker_id)

    def pause_broker(self, broker_id: int) -> None:
        self._broker(broker_id).pause()

    def resume_broker(self, broker_id: int) -> None:
        self._broker(broker_id).unpause()

    def start_broker(self, broker_id: int) -> None:
        """``docker start`` the broker's container (same data, same published port) once its
        old ZooKeeper registration has expired (:func:`harness.readiness.wait_old_registration_gone`);
        returns when it serves again."""
        container = self._broker(broker_id)
        if container_state(container) in ("running", "paused"):
            raise HarnessError(f"broker {broker_id} is already running (container {container.name})")
        old_epoch = wait_old_registration_gone(self.zookeeper_connect, broker_id,
                                               registration_expiry_bound_s(self.config))
        log.info("docker start %s", container.name)
        container.start()
        self._wait_brokers_ready([broker_id], time.monotonic() + self.start_timeout,
                                 newer_than={broker_id: old_epoch if old_epoch is not None else -1})

    def broker_paused(self, broker_id: int) -> bool:
        return container_state(self._broker(broker_id)) == "paused"

    def broker_running(self, broker_id: int) -> bool:
        """True while the JVM exists, paused or not (as a SIGSTOPped local process)."""
        return container_state(self._broker(broker_id)) in ("running", "paused")

    # ------------------------------------------------------------------ ZooKeeperControl

    def _zookeeper_containers(self, verb: str) -> list[Container]:
        if not self._zookeepers:
            raise HarnessError(f"cannot {verb} ZooKeeper: the cluster has not been started")
        return [c for _, c in sorted(self._zookeepers.items())]

    def pause_zookeeper(self) -> None:
        """``docker pause`` every server: the whole service stops answering."""
        for container in self._zookeeper_containers("pause"):
            container.pause()

    def resume_zookeeper(self) -> None:
        for container in self._zookeeper_containers("resume"):
            container.unpause()

    def zookeeper_paused(self) -> bool:
        return bool(self._zookeepers) and all(container_state(c) == "paused" for c in self._zookeepers.values())

    def stop_zookeeper(self) -> None:
        """``docker stop`` every server (SIGTERM; SIGKILL after STOP_TIMEOUT_SECONDS)."""
        for container in self._zookeeper_containers("stop"):
            if container_state(container) == "paused":
                container.unpause()  # SIGTERM cannot be handled by a frozen JVM
            container.stop(timeout=STOP_TIMEOUT_SECONDS)

    # ------------------------------------------------------------------ NetworkPartitioner

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        """Drop all traffic between the broker and the named peers, both ways, until
        :meth:`heal_network` (or the broker's container restarts)."""
        check_partition_tools()
        container = self._broker(broker_id)
        addresses = addresses_to_cut(self._peers(broker_id), from_zookeeper=from_zookeeper,
                                     from_brokers=from_brokers, from_clients=from_clients)
        NamespaceFirewall(container_pid(container), broker_alias(broker_id)).drop(addresses)
        self._cut.add(broker_id)

    def heal_network(self) -> None:
        """Remove every cut, loss and rate limit (idempotent)."""
        for broker_id in sorted(self._cut):
            container = self._brokers.get(broker_id)
            if container is not None and container_state(container) in ("running", "paused"):
                NamespaceFirewall(container_pid(container), broker_alias(broker_id)).heal()
                NamespaceShaper(container_pid(container), broker_alias(broker_id)).remove()
        self._cut.clear()
        self._heal_shapers()

    def _peers(self, broker_id: int) -> Peers:
        if self._network_name is None or not self._zookeepers:
            raise HarnessError("the cluster has not been started")
        others = tuple(self._address(c) for b, c in sorted(self._brokers.items())
                       if b != broker_id and container_state(c) in ("running", "paused"))
        return Peers(zookeepers=tuple(self._address(c) for _, c in sorted(self._zookeepers.items())),
                     brokers=others, clients=self._gateway(broker_id))

    def _address(self, container: Container) -> str:
        if self._network_name is None:
            raise HarnessError("the cluster has not been started")
        return address_on(container, self._network_name)

    def _gateway(self, broker_id: int) -> str:
        if self._network_name is None:
            raise HarnessError("the cluster has not been started")
        return gateway_on(self._broker(broker_id), self._network_name)


def existing_containers(client: docker.DockerClient, entries: Mapping[int, NodeContainer],
                        state_dir: Path) -> dict[int, Container]:
    """The containers a detached cluster's ``cluster.json`` lists that still exist, by node id
    (``attach``: one removed since is missing, and said so in the log)."""
    import docker.errors

    found: dict[int, Container] = {}
    for key, entry in entries.items():
        try:
            found[key] = client.containers.get(entry.container_id)
        except docker.errors.NotFound:
            log.info("container %s of %s is gone", entry.name, state_dir)
    return found


def disable_ryuk_unless_present(force: bool = False) -> None:
    """Ryuk (testcontainers' reaper) cannot be pulled here; without its image we clean up
    ourselves (labels + teardown + prune).  An explicit user setting wins — except ``force``,
    for a detached cluster: Ryuk removes its session's containers when this process exits, and
    a ``cluster up``'s must stay."""
    from testcontainers.core.config import testcontainers_config

    if force:
        os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
        testcontainers_config.ryuk_disabled = True
        return
    if "TESTCONTAINERS_RYUK_DISABLED" in os.environ:
        return

    try:
        client = docker_client()
        try:
            client.images.get(testcontainers_config.ryuk_image)
        finally:
            client.close()
        return
    except Exception:
        os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
        testcontainers_config.ryuk_disabled = True
        log.info("Ryuk image %s not present: Ryuk disabled, cleanup by labels", testcontainers_config.ryuk_image)

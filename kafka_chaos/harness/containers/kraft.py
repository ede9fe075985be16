"""``ContainerKraftCluster``: KRaft controllers and brokers, each in a Docker container of the same
image as ZooKeeper mode (``--mode kraft --backend containers``).

Each node's data directory is a host directory (``<run dir>/<node>/data``) mounted at the broker
data path: it is formatted on the host by Kafka's own tool, from the same release's jars
(``StorageTool format``; the image has no shell to run it in), and the controllers' metadata logs
are read from the host by the observer (:class:`harness.kraft.observer.KraftObserver`) as on the
local launcher. With ``ClusterConfig.filesystem="lazyfs"`` that directory is a mount of the
crash-consistency layer on the host (:mod:`harness.containers.disks`, as ZooKeeper mode's brokers),
mounted after the format as the local KRaft launcher does (what was formatted is durable), for
controllers and brokers alike: ``power_fail_node`` is ``docker kill``, the drop and a fresh daemon
that the next ``docker start`` binds; the observer reads the metadata logs through the mounts.

Network: the ZooKeeper-mode layout (a run network with fixed addresses, brokers' ``INTERNAL``
listener on it and ``EXTERNAL`` published on 127.0.0.1); controller N is ``controller-N:9093`` on
the network, its CONTROLLER listener also published on 127.0.0.1 for the harness
(``controller_address``: the voters themselves use the network).

Capabilities: ``broker_control`` and ``controller_quorum`` (docker kill / stop / pause / start),
``replica_logs``, ``power_failure`` and ``disk_faults`` (as root with /dev/fuse and libfuse3), and
as root with iptables and nsenter ``quorum_link_partition``: ``cut_links`` adds DROP rules for each
peer's fixed address to the cut node's own namespace, both INPUT and OUTPUT
(:class:`harness.containers.network.NamespaceFirewall`, as ``isolate`` does in ZooKeeper mode). The
harness's and the clients' links arrive from the bridge gateway and are never cut. A cut lives in
the cut node's namespace: a peer that restarts comes back on its fixed address and stays cut, but
the cut node itself, once killed or stopped, comes back healed (its namespace died with its
process) -- as in ZooKeeper mode.

``ContainerKraftCluster(..., state_dir=DIR)`` (``kafka-chaos cluster up --backend containers --mode
kraft``) is *detached*, as ZooKeeper mode's :class:`harness.containers.cluster.ContainerCluster`:
its containers outlive this process (no teardown at exit, no Ryuk reaper, labels that name
``DIR``: :func:`harness.containers.labels.detached_labels`), its run directory -- the nodes' host
data directories, which the containers mount and the observer reads -- is ``DIR`` itself, and
``DIR/cluster.json`` (:mod:`harness.containers.kraft_state`) lets :meth:`ContainerKraftCluster.attach`
control it from another process. Not on the crash-consistency layer: its FUSE daemons are this
process's children and their mounts end with it.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.node_logs import keep_failed_logs
from kafka_chaos.harness.cluster import BrokerEndpoint, Capability, quorum_cut_peers
from kafka_chaos.harness.config import LAZY_FILESYSTEM, ClusterConfig, kraft_node_properties, render_properties
from kafka_chaos.harness.containers import teardown
from kafka_chaos.harness.containers.clocks import ContainerClockControls
from kafka_chaos.harness.containers.cluster import disable_ryuk_unless_present, existing_containers
from kafka_chaos.harness.containers.disks import ContainerDiskControls
from kafka_chaos.harness.containers.image import docker_client, ensure_kafka_image
from kafka_chaos.harness.containers.kraft_state import (
    ContainerKraftState,
    KraftNodeContainer,
    read_container_kraft_state,
    render_container_kraft_state,
)
from kafka_chaos.harness.containers.labels import detached_labels, new_run_id, run_labels
from kafka_chaos.harness.containers.network import (
    NamespaceFirewall,
    check_partition_tools,
    partition_tools_problem,
    peer_addresses,
)
from kafka_chaos.harness.containers.nodes import (  # noqa: I001
    BROKER_DATA_DIR,
    EXTERNAL_PORT,
    INTERNAL_PORT,
    METRICS_PORT,
    NodeStarter,
    address_on,
    broker_alias,
    container_pid,
    container_state,
    kill_container,
    log_tail,
)
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.kraft.storage import KraftBasics, format_storage
from kafka_chaos.harness.kraft.records import random_cluster_id
from kafka_chaos.harness.local.disks import DATA, disk_problems
from kafka_chaos.harness.local.state import write_state
from kafka_chaos.harness.nodes import free_ports
from kafka_chaos.harness.observer import ConvergenceTimeout
from kafka_chaos.harness.readiness import wait_metadata_lists
from kafka_chaos.harness.zksnapshot import ZkSnapshot

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

log = logging.getLogger(__name__)

CONTROLLER_PORT = 9093
START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 60


def controller_alias(node_id: int) -> str:
    return f"controller-{node_id}"


class ContainerKraftCluster(KraftBasics, ContainerClockControls, ContainerDiskControls):
    """:class:`harness.cluster.Cluster`, :class:`harness.cluster.BrokerControl`,
    :class:`harness.cluster.ControllerQuorumControl`, the brokers' and controllers' clocks
    (:mod:`harness.containers.clocks`) and power failures and disk faults
    (:mod:`harness.containers.disks`) in Docker containers; see the module docstring."""

    backend = "containers"
    _data_without_layer = "plain host directories"

    @staticmethod
    def capability_problems() -> Mapping[Capability, str]:
        """Cuts are iptables rules entered into a container's namespace: root, iptables, nsenter;
        the crash-consistency layer runs on the host (root, /dev/fuse, libfuse3)."""
        problem = partition_tools_problem()
        problems: dict[Capability, str] = disk_problems()
        return problems if problem is None else problems | {Capability.QUORUM_LINK_PARTITION: problem}

    def __init__(self, config: ClusterConfig, distribution: KafkaDistribution, *, base_image: str | None = None,
                 start_timeout: float = START_TIMEOUT_SECONDS, metrics: bool = True,
                 stop_timeout: float = STOP_TIMEOUT_SECONDS, state_dir: Path | None = None,
                 run_id: str | None = None) -> None:
        """``state_dir``: detached, its containers outliving this process (see the module docstring)."""
        if config.mode != "kraft":
            raise UsageError("ContainerKraftCluster needs a ClusterConfig with mode='kraft'")
        if state_dir is not None and config.filesystem == LAZY_FILESYSTEM:
            raise UsageError(f"a detached KRaft containers cluster cannot use filesystem '{LAZY_FILESYSTEM}': the "
                             "crash-consistency layer's mounts end with the process that made them")
        self.config = config
        self.distribution = distribution
        self.base_image = base_image
        self.run_id = run_id or new_run_id()
        self.state_dir = state_dir.absolute() if state_dir is not None else None
        self.labels = detached_labels(self.run_id, self.state_dir) if self.state_dir else run_labels(self.run_id)
        self.image: str | None = None
        self._network_name: str | None = None
        self.start_timeout = start_timeout
        self.stop_timeout = float(stop_timeout)
        self._metrics = metrics
        self._cluster_id = random_cluster_id()
        self._client: docker.DockerClient | None = None
        self._starter: NodeStarter | None = None
        self._run_dir: Path | None = None
        self._controllers: dict[int, Container] = {}
        self._brokers: dict[int, Container] = {}
        self._broker_ports: dict[int, int] = {}
        self._metrics_ports: dict[int, int] = {}
        self._controller_ports: dict[int, int] = {}  # each controller's CONTROLLER listener on 127.0.0.1
        self._addresses: dict[int, str] = {}  # node id -> its fixed address on the run network
        self._cut: set[int] = set()  # nodes with cut rules in their namespace
        self._properties: dict[str, dict[str, str]] = {}  # node -> server.properties (container paths)
        self._clocks_root: Path | None = None  # the nodes' clock control files (fake clocks only)
        self._clock_library: str | None = None  # libfaketime in the image (fake clocks only)
        self._destroyed = False

    def __enter__(self) -> ContainerKraftCluster:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and not isinstance(exc, KeyboardInterrupt):
            keep_failed_logs(self)
        self.destroy()

    # ---------------------------------------------------------------- Cluster

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self._broker_ports[b]}" for b in self.broker_ids)

    def endpoint(self, broker_id: int) -> BrokerEndpoint:
        container = self._broker(broker_id)
        return BrokerEndpoint(broker_id=broker_id, host="127.0.0.1", port=self._broker_ports[broker_id],
                              container=container.name, metrics_port=self._metrics_ports.get(broker_id))

    def log_files(self) -> dict[str, Path]:
        """Each node's container output, dumped now into the run directory."""
        files = {}
        for name, container in self._nodes().items():
            path = self._dir() / f"{name}.log"
            try:
                path.write_bytes(container.logs())
            except Exception as exc:  # noqa: BLE001 - a container removed meanwhile
                log.debug("logs of %s: %s", name, exc)
                continue
            files[name] = path
        return files

    def replica_log_dirs(self, broker_id: int) -> list[Path]:
        """The host directory the broker's container mounts as its data directory (on the layer:
        its mount, what the broker wrote)."""
        self._broker(broker_id)  # an unknown id is a one-line UsageError
        return [self._data_dir(broker_alias(broker_id))]

    def metadata_log_dirs(self) -> list[Path]:
        return [self._data_dir(controller_alias(c)) for c in self.controller_ids]

    def controller_address(self, node_id: int) -> str:
        """The controller's CONTROLLER listener as published on 127.0.0.1 (the voters reach one
        another as ``controller-N:9093`` on the run network, which the host cannot resolve)."""
        self._controller(node_id)
        return f"127.0.0.1:{self._controller_ports[node_id]}"

    # ---------------------------------------------------------------- start

    def start(self) -> None:
        if self._client is not None:
            raise HarnessError("this ContainerKraftCluster was already started; make a new one")
        try:
            self._start()
        except BaseException:
            self.destroy()
            raise

    def _start(self) -> None:
        began = time.monotonic()
        # Testcontainers' reaper cannot be pulled here: teardown is ours; a detached cluster's must
        # not be reaped when this process exits
        disable_ryuk_unless_present(force=self.state_dir is not None)
        self._client = docker_client()
        image = ensure_kafka_image(self.distribution, base_image=self.base_image, client=self._client).tag
        self.image = image
        teardown.register(self)
        self._run_dir = self._make_run_dir()
        self._clock_library = self._start_clocks(self._client, image, self._run_dir / "clocks")
        brokers, controllers = self.broker_ids, self.controller_ids
        ports = free_ports(2 * len(brokers) + len(controllers))
        self._broker_ports = dict(zip(brokers, ports))
        self._metrics_ports = dict(zip(brokers, ports[len(brokers):2 * len(brokers)])) if self._metrics else {}
        self._controller_ports = dict(zip(controllers, ports[2 * len(brokers):]))
        self._starter = NodeStarter(self.run_id, image, self.labels, kafka_version=self.kafka_version)
        self._network_name = self._starter.create_network().name
        voters = {c: f"{controller_alias(c)}:{CONTROLLER_PORT}" for c in self.controller_ids}
        for c in self.controller_ids:
            self._properties[controller_alias(c)] = kraft_node_properties(
                self.config, c, voters=voters, address=f"0.0.0.0:{CONTROLLER_PORT}", log_dir=BROKER_DATA_DIR,
                kafka_version=self.kafka_version)
        for b in brokers:
            self._properties[broker_alias(b)] = kraft_node_properties(
                self.config, b, voters=voters, address="", log_dir=BROKER_DATA_DIR, kafka_version=self.kafka_version,
                listeners={"INTERNAL": f"{broker_alias(b)}:{INTERNAL_PORT}",
                           "EXTERNAL": f"127.0.0.1:{self._broker_ports[b]}"},
                bind_listeners={"INTERNAL": f"0.0.0.0:{INTERNAL_PORT}", "EXTERNAL": f"0.0.0.0:{EXTERNAL_PORT}"})
        self._format_storage()
        # After the format, before any container binds the directories (as harness.local.kraft)
        self._mount_node_dirs({node_id: self._dir() / self._alias(node_id) for node_id in
                               [*self.controller_ids, *brokers]})
        for i, c in enumerate(self.controller_ids):
            self._controllers[c] = self._start_node(controller_alias(c), "controller", -(i + 1))
            self._addresses[c] = address_on(self._controllers[c], self._starter.network.name)
        for i, b in enumerate(brokers):
            self._brokers[b] = self._start_node(broker_alias(b), "broker", i)
            self._addresses[b] = address_on(self._brokers[b], self._starter.network.name)
        self._wait_ready(brokers, time.monotonic() + self.start_timeout)
        if self.state_dir is not None:
            self.write_state()
            teardown.unregister(self)  # started: it outlives this process from here on
        log.info("KRaft container cluster %s ready in %.1f s: bootstrap %s", self.run_id,
                 time.monotonic() - began, self.bootstrap_servers)

    def _make_run_dir(self) -> Path:
        """A detached cluster's is its state dir (the data outlives this process with the containers
        that mount it); a fresh temporary directory otherwise."""
        if self.state_dir is None:
            return Path(tempfile.mkdtemp(prefix=f"kafka-chaos-{self.run_id}-kraft-"))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return self.state_dir

    def _start_node(self, name: str, role: str, position: int) -> Container:
        assert self._starter is not None
        broker_id = int(name.removeprefix("broker-")) if role == "broker" else None
        host_ports = {}
        if broker_id is None:
            host_ports[CONTROLLER_PORT] = self._controller_ports[int(name.removeprefix("controller-"))]
        else:
            host_ports[EXTERNAL_PORT] = self._broker_ports[broker_id]
            if broker_id in self._metrics_ports:
                host_ports[METRICS_PORT] = self._metrics_ports[broker_id]
        return self._starter.start_kraft_node(self.config, name, role, self._properties[name], position=position,
                                              host_ports=host_ports, data_dir=str(self._data_dir(name)),
                                              metrics=broker_id in self._metrics_ports,
                                              clock=self._node_clock(role, int(name.rsplit("-", 1)[1]),
                                                                     self._clock_library))

    def _clock_nodes(self) -> dict[str, list[int]]:
        """Every Kafka node's clock: the brokers' and the controllers' (each a ``kafka.Kafka`` JVM)."""
        return {"broker": list(self.broker_ids), "controller": list(self.controller_ids)}

    def _format_storage(self) -> None:
        """On the host, into the directory each container mounts (the image has no shell)."""
        configs = {}
        for name, props in self._properties.items():
            data = self._data_dir(name)
            data.mkdir(parents=True)
            configs[name] = self._dir() / f"{name}.properties"  # the host's view of the same directory
            configs[name].write_text(render_properties({**props, "log.dirs": str(data)}))
        format_storage(self.distribution, self.config.jvm_options, self._cluster_id, configs, self._dir())

    def _wait_ready(self, brokers: Sequence[int], deadline: float, newer_than: Mapping[int, int] | None = None) -> None:
        old = newer_than or {}

        # the brokers being started (a controller a fault killed may rightly be down)
        starting = {broker_alias(b): self._brokers[b] for b in brokers}

        def ready(s: ZkSnapshot) -> bool:
            for name, container in starting.items():
                if container_state(container) == "exited":
                    raise HarnessError(f"{name} exited during start-up; last lines:\n{log_tail(container)}")
            return s.controller is not None and all(s.live_brokers.get(b, -1) > old.get(b, -1) for b in brokers)

        with self.observer(topics=[]) as observer:
            try:
                snapshot = observer.wait_until(ready, timeout=max(0.0, deadline - time.monotonic()),
                                               description=f"a quorum leader and brokers {list(brokers)} unfenced")
            except ConvergenceTimeout as exc:
                raise HarnessError(str(exc) + self._tails_of_brokers_not_up(brokers, old, exc.last)) from None
        for b in brokers:
            failure = wait_metadata_lists(self.endpoint(b).bootstrap, set(snapshot.live_brokers), deadline=deadline)
            if failure is not None:
                raise HarnessError(f"broker {b} was unfenced but its metadata did not answer ({failure})")

    def _tails_of_brokers_not_up(self, brokers: Sequence[int], old: Mapping[int, int], last: ZkSnapshot | None) -> str:
        """The last lines of each broker the metadata log did not show unfenced (why it did not come up)."""
        behind = [b for b in brokers if last is None or last.live_brokers.get(b, -1) <= old.get(b, -1)]
        return "".join(f"\n{broker_alias(b)}'s last lines:\n{log_tail(self._brokers[b])}" for b in behind)

    # ---------------------------------------------------------------- BrokerControl

    def kill_broker(self, broker_id: int) -> None:
        kill_container(self._running(self._broker(broker_id), f"broker {broker_id}"))
        self._cut.discard(broker_id)  # its namespace, and the cut in it, died with it

    def stop_broker(self, broker_id: int) -> None:
        self._running(self._broker(broker_id), f"broker {broker_id}").stop(timeout=int(self.stop_timeout))
        self._cut.discard(broker_id)

    def pause_broker(self, broker_id: int) -> None:
        self._running(self._broker(broker_id), f"broker {broker_id}").pause()

    def resume_broker(self, broker_id: int) -> None:
        self._broker(broker_id).unpause()

    def broker_running(self, broker_id: int) -> bool:
        return container_state(self._broker(broker_id)) in ("running", "paused")

    def broker_paused(self, broker_id: int) -> bool:
        return container_state(self._broker(broker_id)) == "paused"

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped or killed broker's container again (its data is the host directory);
        returns once it is unfenced with a new broker epoch and its metadata answers."""
        container = self._broker(broker_id)
        if self.broker_running(broker_id):
            raise HarnessError(f"broker {broker_id} is already running")
        with self.observer(topics=[]) as observer:
            old = observer.broker_epochs().get(broker_id, -1)
        container.start()
        self._wait_ready([broker_id], time.monotonic() + self.start_timeout, newer_than={broker_id: old})

    # ---------------------------------------------------------------- ControllerQuorumControl

    def kill_controller(self, node_id: int) -> None:
        kill_container(self._running(self._controller(node_id), controller_alias(node_id)))
        self._cut.discard(node_id)

    def stop_controller(self, node_id: int) -> None:
        self._running(self._controller(node_id), controller_alias(node_id)).stop(timeout=int(self.stop_timeout))
        self._cut.discard(node_id)

    def pause_controller(self, node_id: int) -> None:
        self._running(self._controller(node_id), controller_alias(node_id)).pause()

    def resume_controller(self, node_id: int) -> None:
        self._controller(node_id).unpause()

    def controller_running(self, node_id: int) -> bool:
        return container_state(self._controller(node_id)) in ("running", "paused")

    def controller_paused(self, node_id: int) -> bool:
        return container_state(self._controller(node_id)) == "paused"

    def container_name(self, node_id: int) -> str:
        """The container of a controller or broker (``cluster status``)."""
        return str(self._node(node_id).name)

    def start_controller(self, node_id: int) -> None:
        container = self._controller(node_id)
        if self.controller_running(node_id):
            raise HarnessError(f"controller {node_id} is already running")
        container.start()

    # ---------------------------------------------------------------- QuorumLinkPartitioner

    def cut_links(self, node_id: int, peers: Sequence[int]) -> None:
        """Drop every packet between ``node_id`` and each of ``peers`` (controller or broker ids),
        both ways, until :meth:`heal_network` or until ``node_id``'s container restarts."""
        chosen = quorum_cut_peers(node_id, peers, self._node_ids())
        check_partition_tools()
        container = self._node(node_id)
        NamespaceFirewall(container_pid(container), self._alias(node_id)).drop(peer_addresses(chosen, self._addresses))
        self._cut.add(node_id)
        log.info("node %d cut from nodes %s", node_id, ", ".join(map(str, chosen)))

    def heal_network(self) -> None:
        """Flush the cut rules of every container this cluster cut that still runs (idempotent)."""
        for node_id in sorted(self._cut):
            container = {**self._brokers, **self._controllers}.get(node_id)
            if container is not None and container_state(container) in ("running", "paused"):
                NamespaceFirewall(container_pid(container), self._alias(node_id)).heal()
        self._cut.clear()

    # ---------------------------------------------------------------- detached (cluster up)

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    def state(self) -> ContainerKraftState:
        """What ``cluster.json`` describes (:mod:`harness.containers.kraft_state`)."""
        if self._network_name is None or self.image is None or not self._controllers:
            raise HarnessError("the cluster has not been started")

        def entry(node_id: int, container: Container, port: int) -> KraftNodeContainer:
            alias = self._alias(node_id)
            return KraftNodeContainer(alias, str(container.name), str(container.id), port,
                                      self._metrics_ports.get(node_id), address=self._addresses[node_id],
                                      data_dir=self._data_dir(alias))

        return ContainerKraftState(
            run_id=self.run_id, image=self.image, network=self._network_name, config=self.config,
            distribution=self.distribution, cluster_id=self._cluster_id, base_image=self.base_image,
            controllers={c: entry(c, n, self._controller_ports[c]) for c, n in sorted(self._controllers.items())},
            brokers={b: entry(b, n, self._broker_ports[b]) for b, n in sorted(self._brokers.items())})

    def write_state(self) -> Path:
        """``state_dir/cluster.json`` (its content does not change after start: a container keeps its
        id, ports and address across docker stop and start)."""
        if self.state_dir is None:
            raise HarnessError("only a detached cluster (state_dir=...) has a state file")
        return write_state(self.state_dir, render_container_kraft_state(self.state()))

    @classmethod
    def attach(cls, state_dir: Path) -> ContainerKraftCluster:
        """The cluster a ``cluster up --backend containers --mode kraft`` left in ``state_dir``
        (containers removed since are missing: check :meth:`any_running`). Controls work as on the
        original; ``heal_network`` flushes every node's rules (this process does not know which were
        cut); ``destroy`` removes the run's Docker objects by label and the state dir."""
        state_dir = state_dir.absolute()
        described = read_container_kraft_state(state_dir)
        cluster = cls(described.config, described.distribution, base_image=described.base_image,
                      run_id=described.run_id, state_dir=state_dir)
        cluster.image = described.image
        cluster._network_name = described.network
        cluster._cluster_id = described.cluster_id
        cluster._run_dir = state_dir
        cluster._client = docker_client()
        cluster._controllers = existing_containers(cluster._client, described.controllers, state_dir)
        cluster._brokers = existing_containers(cluster._client, described.brokers, state_dir)
        cluster._controller_ports = {c: e.host_port for c, e in described.controllers.items()}
        cluster._broker_ports = {b: e.host_port for b, e in described.brokers.items()}
        cluster._metrics_ports = {b: e.metrics_port for b, e in described.brokers.items() if e.metrics_port is not None}
        cluster._metrics = bool(cluster._metrics_ports)
        cluster._addresses = {n: e.address for n, e in [*described.controllers.items(), *described.brokers.items()]}
        if described.config.fake_clocks and (state_dir / "clocks").is_dir():
            cluster._clocks_root = state_dir / "clocks"
        cluster._cut = set(cluster._addresses)
        return cluster

    # ---------------------------------------------------------------- teardown

    def any_running(self) -> bool:
        return any(container_state(c) in ("running", "paused") for c in self._nodes().values())

    def destroy(self) -> None:
        """Remove every container and the network of this run, and the host data. Idempotent."""
        if self._destroyed:
            return
        self._destroyed = True
        teardown.unregister(self)
        if self._client is not None:
            from kafka_chaos.harness.containers.prune import remove_run

            remove_run(self._client, self.run_id)
            self._client.close()
        for problem in self._unmount_disks():  # once no container binds the mounts, before the run dir
            log.warning("crash-consistency layer: %s", problem)
        if self._starter is not None:
            self._starter.close()
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
        self._brokers.clear()
        self._controllers.clear()

    # ---------------------------------------------------------------- lookups

    def _dir(self) -> Path:
        if self._run_dir is None:
            raise HarnessError("the cluster has not been started")
        return self._run_dir

    def _data_dir(self, name: str) -> Path:
        """Pure but for the run dir: node ``name``'s data directory on the host, which its
        container binds (the layer's mount point when on the layer)."""
        return self._dir() / name / DATA

    def _nodes(self) -> dict[str, Container]:
        return {**{controller_alias(c): n for c, n in self._controllers.items()},
                **{broker_alias(b): n for b, n in self._brokers.items()}}

    def _broker(self, broker_id: int) -> Container:
        try:
            return self._brokers[broker_id]
        except KeyError:
            if broker_id in self._broker_ports:  # attached, its container removed since
                raise HarnessError(f"broker {broker_id}'s container is gone (removed outside kafka-chaos)") from None
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}") from None

    def _node_ids(self) -> list[int]:
        if not self._controllers:
            raise HarnessError("the cluster has not been started")
        return sorted([*self._brokers, *self._controllers])

    def _node(self, node_id: int) -> Container:
        return self._controller(node_id) if node_id in self.controller_ids else self._broker(node_id)

    def _alias(self, node_id: int) -> str:
        """A configured node's name, whether or not its container exists yet."""
        return controller_alias(node_id) if node_id in self.controller_ids else broker_alias(node_id)

    def _disk_container(self, node_id: int) -> tuple[str, Container]:
        """Controllers are on the layer too: a quorum leader's power failure kills ``controller-N``."""
        return self._alias(node_id), self._node(node_id)

    def _controller(self, node_id: int) -> Container:
        try:
            return self._controllers[node_id]
        except KeyError:
            if node_id in self._controller_ports:  # attached, its container removed since
                raise HarnessError(f"controller {node_id}'s container is gone (removed outside kafka-chaos)") from None
            raise UsageError(f"unknown controller id {node_id}: the controllers are "
                             f"{', '.join(map(str, self.controller_ids))}") from None

    @staticmethod
    def _running(container: Container, what: str) -> Container:
        if container_state(container) not in ("running", "paused"):
            raise HarnessError(f"cannot act on {what}: it is not running")
        return container


__all__ = ["ContainerKraftCluster", "controller_alias"]

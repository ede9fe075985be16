"""The containers of a :class:`harness.containers.cluster.ContainerCluster`: how ZooKeeper and
each broker are configured and started (Testcontainers), and what the cluster reads of them
(state, logs, addresses on the run's network).

Kept apart from the cluster class, which only coordinates: start order, readiness, faults.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import (
    BROKER_JAAS_FILE,
    CONTROL_PLANE_LISTENER,
    KNOWN_PROPERTIES_VERSION,
    ClusterConfig,
    broker_properties,
    jaas_option,
    render_properties,
    zookeeper_properties,
)
from kafka_chaos.harness.containers.clocks import NodeClock
from kafka_chaos.harness.containers.image import (
    KAFKA_HOME,
    LIBS_DIR,
    METRICS_AGENT,
    METRICS_CONFIG,
    logging_config,
)
from kafka_chaos.harness.distribution import log4j_option
from kafka_chaos.harness.jmx_exporter import agent_option
from kafka_chaos.harness.node_logs import JVM_TIMEZONE_FLAG
from kafka_chaos.harness.containers.labels import BROKER_ID_LABEL, ROLE_LABEL
from kafka_chaos.harness.zk_ensemble import INIT_LIMIT_TICKS, SYNC_LIMIT_TICKS

if TYPE_CHECKING:
    from docker.models.containers import Container
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

log = logging.getLogger(__name__)

ZOOKEEPER_NAME = "zookeeper"
ZOOKEEPER_PORT = 2181
QUORUM_PORT = 2888
ELECTION_PORT = 3888
INTERNAL_PORT = 9092
# The class-data archives of harness.containers.cds, one per role, in the image's third layer.
CDS_DIR = f"{KAFKA_HOME}/cds"
CONTROL_PLANE_PORT = 9093  # KIP-291's listener (ClusterConfig.control_plane_listener), network only
EXTERNAL_PORT = 9094
METRICS_PORT = 9404  # the JMX exporter agent's /metrics (harness.metrics), published on loopback
BROKER_CONFIG = f"{KAFKA_HOME}/config/server.properties"
ZOOKEEPER_CONFIG = f"{KAFKA_HOME}/config/zookeeper.properties"
BROKER_DATA_DIR = "/var/lib/kafka/data"
# Broker logs as files (ContainerCluster(broker_log_files=True)): a host directory mounted here,
# written with the local launcher's log4j configuration (controller.log, state-change.log, ...).
BROKER_LOGS_DIR = f"{KAFKA_HOME}/logs"
FILE_LOG4J_CONFIG = f"{KAFKA_HOME}/config/log4j-files.properties"
# ClusterConfig.broker_jaas, copied into every broker's container (-Djava.security.auth.login.config)
BROKER_JAAS_CONFIG = f"{KAFKA_HOME}/config/{BROKER_JAAS_FILE}"
ZOOKEEPER_DATA_DIR = "/var/lib/zookeeper"


# Fixed addresses: a restarted container must come back on the address it had.  Docker frees a
# stopped container's address and hands it to the next container started, and a broker's JVM
# caches name lookups (30 s), so with dynamic addresses the controller can resolve "broker-2"
# to the address broker 1 just took and send broker 2's UpdateMetadata and LeaderAndIsr to
# broker 1, which applies the metadata and ignores the rest: broker 2 then never learns the
# cluster (seen in conformance on containers: "its metadata lists brokers []").
# Docker only accepts a chosen address on a network whose subnet was chosen too.
SUBNET_CANDIDATES = tuple(ipaddress.IPv4Network(f"10.231.{third}.0/24") for third in range(0, 256, 7))
SUBNET_ATTEMPTS = 12
FIRST_BROKER_HOST = 10  # .2-.9: ZooKeeper servers; brokers from .10 on (.1 is the gateway)


def broker_alias(broker_id: int) -> str:
    return f"broker-{broker_id}"


def zookeeper_alias(server_id: int, ensemble: int) -> str:
    """``zookeeper`` for a lone server (as before ensembles), ``zookeeper-N`` in an ensemble."""
    return ZOOKEEPER_NAME if ensemble <= 1 else f"{ZOOKEEPER_NAME}-{server_id}"


def zookeeper_connect_string(ensemble: int) -> str:
    """What the brokers connect to: every server, by its name on the run network."""
    return ",".join(f"{zookeeper_alias(z, ensemble)}:{ZOOKEEPER_PORT}" for z in range(1, ensemble + 1))


def container_ensemble_properties(ensemble: int) -> dict[str, str]:
    """The replicated-mode lines (``server.N``, init/sync limits) for servers named
    ``zookeeper-N`` on the run network; none for a lone server (standalone, as before)."""
    if ensemble <= 1:
        return {}
    props = {"initLimit": str(INIT_LIMIT_TICKS), "syncLimit": str(SYNC_LIMIT_TICKS)}
    for server_id in range(1, ensemble + 1):
        props[f"server.{server_id}"] = f"{zookeeper_alias(server_id, ensemble)}:{QUORUM_PORT}:{ELECTION_PORT}"
    return props


def free_subnets(taken: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> list[ipaddress.IPv4Network]:
    """The candidate subnets that overlap none of the networks Docker already has."""
    taken = list(taken)
    return [candidate for candidate in SUBNET_CANDIDATES
            if not any(candidate.version == used.version and candidate.overlaps(used) for used in taken)]


def zookeeper_address(subnet: ipaddress.IPv4Network, server_id: int) -> str:
    """ZooKeeper server N (1..5) is ``.1 + N``."""
    return str(subnet.network_address + 1 + server_id)


def node_address(subnet: ipaddress.IPv4Network, node_index: int) -> str:
    """ZooKeeper (server 1) is node 0 (``.2``); the broker at position i of the sorted ids is
    ``.10 + i`` (:func:`broker_address`)."""
    host = 2 + node_index if node_index == 0 else FIRST_BROKER_HOST + node_index - 1
    if host >= subnet.num_addresses - 1:
        raise HarnessError(f"too many nodes for the run's network {subnet}")
    return str(subnet.network_address + host)


def broker_listeners(broker_id: int, external_host_port: int, control_plane: bool = False) -> dict[str, str]:
    """Listener name -> advertised ``host:port`` (each binds 0.0.0.0 on its container port:
    :func:`bind_listeners`).  With ``control_plane`` also KIP-291's ``CONTROL_PLANE``, advertised
    at the container's name on the run network like ``INTERNAL``: only the controller connects to
    it (``ControllerChannelManager.addNewBroker``), from its own container, so it is not published."""
    listeners = {"INTERNAL": f"{broker_alias(broker_id)}:{INTERNAL_PORT}",
                 "EXTERNAL": f"127.0.0.1:{external_host_port}"}
    if control_plane:
        listeners[CONTROL_PLANE_LISTENER] = f"{broker_alias(broker_id)}:{CONTROL_PLANE_PORT}"
    return listeners


def bind_listeners(control_plane: bool = False) -> dict[str, str]:
    """Where each listener of :func:`broker_listeners` binds inside the container."""
    bind = {"INTERNAL": f"0.0.0.0:{INTERNAL_PORT}", "EXTERNAL": f"0.0.0.0:{EXTERNAL_PORT}"}
    if control_plane:
        bind[CONTROL_PLANE_LISTENER] = f"0.0.0.0:{CONTROL_PLANE_PORT}"
    return bind


def java_command(heap: str, jvm_options: Sequence[str], main_class: str, *args: str, log4j: str) -> list[str]:
    """No shell in the image: java expands the ``libs/*`` class path wildcard itself. ``log4j``:
    the logging configuration in the container (:func:`harness.containers.image.logging_config`),
    named by the flag its logging library reads (:func:`harness.distribution.log4j_option`, the
    local launcher's: ``-Dlog4j2.configurationFile`` for a log4j2 one, 4.x)."""
    return ["java", f"-Xmx{heap}", JVM_TIMEZONE_FLAG, *jvm_options,  # as harness.local.nodes.jvm_command
            log4j_option(Path(log4j)), "-cp", f"{LIBS_DIR}/*", main_class, *args]


def file_logging(host_dir: str, log4j_text: str) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """A broker logging to files in ``host_dir`` (mounted at BROKER_LOGS_DIR) with ``log4j_text``:
    (JVM options, files to copy in, volumes)."""
    return ([f"-Dkafka.logs.dir={BROKER_LOGS_DIR}"], {FILE_LOG4J_CONFIG: log4j_text}, {host_dir: BROKER_LOGS_DIR})


def archive_name(role: str) -> str:
    return f"{role}.jsa"


def archive_options(role: str, class_data_sharing: bool) -> list[str]:
    """``-XX:SharedArchiveFile`` of the role's archive when the image has them (Xshare:auto: one
    that does not match is a warning in the log, not a failed start)."""
    return [f"-XX:SharedArchiveFile={CDS_DIR}/{archive_name(role)}"] if class_data_sharing else []


def container_state(container: Container) -> str:
    """Docker's current status of the container ("running", "paused", "exited", ...)."""
    container.reload()
    return str(container.status)


def container_pid(container: Container) -> int:
    container.reload()
    return int(container.attrs["State"]["Pid"])


def address_on(container: Container, network: str) -> str:
    container.reload()
    return str(container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])


def gateway_on(container: Container, network: str) -> str:
    container.reload()
    return str(container.attrs["NetworkSettings"]["Networks"][network]["Gateway"])


def kill_container(container: Container) -> None:
    """``docker kill`` (SIGKILL); returns once the container has exited (bounded)."""
    paused = container_state(container) == "paused"
    log.info("docker kill %s", container.name)
    container.kill(signal="SIGKILL")
    if paused:  # a frozen cgroup dies only when thawed
        ignore_errors(container.unpause)
    container.wait(timeout=30)


def log_tail(container: Container | None, lines: int = 15) -> str:
    """The last ``lines`` of ``docker logs``, on one line (for error messages)."""
    if container is None:
        return "(no container)"
    try:
        text = container.logs(tail=lines).decode(errors="replace").strip()
    except Exception as exc:
        return f"(no log: {exc})"
    return " | ".join(text.splitlines()[-lines:]) or "(empty)"


def ignore_errors(action: Callable[[], object]) -> None:
    try:
        action()
    except Exception as exc:
        log.debug("ignored: %s", exc)


class NodeStarter:
    """Starts one run's containers on its network, labelled for clean-up, keeping the
    Testcontainers handles (their Docker clients need closing: :meth:`close`)."""

    def __init__(self, run_id: str, image: str, labels: Mapping[str, str], *, class_data_sharing: bool = False,
                 kafka_version: str = KNOWN_PROPERTIES_VERSION) -> None:
        self._run_id = run_id
        self._kafka_version = kafka_version  # server.properties are rendered for this release
        self._image = image
        self._class_data_sharing = class_data_sharing  # the image has harness.containers.cds's archives
        self._labels = dict(labels)
        self._network: Network | None = None
        self._subnet: ipaddress.IPv4Network | None = None
        self._wrappers: list[DockerContainer] = []

    def name(self, node: str) -> str:
        return f"kafka-chaos-{self._run_id}-{node}"

    @property
    def network(self) -> Network:
        if self._network is None:
            raise HarnessError("the run's network was not created")
        return self._network

    def create_network(self) -> Network:
        """A bridge network on a subnet no other Docker network uses (tried in turn: another
        run or program may take a candidate between the listing and the creation)."""
        import docker.errors
        from docker.types import IPAMConfig, IPAMPool
        from testcontainers.core.network import Network

        last_error: Exception | None = None
        for subnet in free_subnets(self._docker_subnets())[:SUBNET_ATTEMPTS]:
            ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet), gateway=str(subnet.network_address + 1))])
            network = Network(docker_network_kw={"driver": "bridge", "ipam": ipam,
                                                 "labels": {**self._labels, ROLE_LABEL: "network"}})
            network.name = self.name("net")  # a readable name instead of a bare uuid
            try:
                self._network = network.create()  # removed by label with the containers
            except docker.errors.APIError as exc:  # "Pool overlaps with other one on this address space"
                last_error = exc
                log.debug("subnet %s refused: %s", subnet, exc)
                continue
            self._subnet = subnet
            log.debug("run network %s on %s", network.name, subnet)
            return self._network
        raise HarnessError(f"no free subnet for the run's Docker network among {SUBNET_CANDIDATES[0]}…: "
                           f"{last_error or 'all candidates overlap existing networks'}")

    @staticmethod
    def _docker_subnets() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        import docker

        client = docker.from_env()
        try:
            return [ipaddress.ip_network(pool["Subnet"], strict=False)
                    for network in client.networks.list()
                    for pool in (network.attrs.get("IPAM") or {}).get("Config") or []
                    if pool.get("Subnet")]
        finally:
            client.close()

    def _subnet_or_fail(self) -> ipaddress.IPv4Network:
        if self._subnet is None:
            raise HarnessError("the run's network was not created")
        return self._subnet

    def _zookeeper_address(self, server_id: int) -> str:
        return zookeeper_address(self._subnet_or_fail(), server_id)

    def _broker_address(self, position: int) -> str:
        return node_address(self._subnet_or_fail(), 1 + position)

    def _endpoint(self, node: str, address: str) -> dict[str, object]:
        """The container's endpoint on the run network: its alias and its fixed address."""
        return {self.network.name: {"Aliases": [node], "IPAMConfig": {"IPv4Address": address}}}

    def start_zookeeper(self, config: ClusterConfig, host_port: int, server_id: int = 1, *,
                        clock: NodeClock | None = None) -> Container:
        """One server of the ensemble (``config.zookeepers`` of them; alone: ``zookeeper``);
        ``clock``: run on a fake clock (:mod:`harness.containers.clocks`)."""
        properties = zookeeper_properties(config, port=ZOOKEEPER_PORT, data_dir=ZOOKEEPER_DATA_DIR,
                                          host="0.0.0.0")
        properties.update(container_ensemble_properties(config.zookeepers))
        files = {ZOOKEEPER_CONFIG: render_properties(properties)}
        if config.zookeepers > 1:
            files[f"{ZOOKEEPER_DATA_DIR}/myid"] = f"{server_id}\n"
        return self._start(
            zookeeper_alias(server_id, config.zookeepers), "zookeeper",
            java_command(config.zookeeper_heap,
                         [*config.jvm_options, *archive_options("zookeeper", self._class_data_sharing)],
                         "org.apache.zookeeper.server.quorum.QuorumPeerMain", ZOOKEEPER_CONFIG,
                         log4j=logging_config(self._kafka_version)),
            address=self._zookeeper_address(server_id), host_ports={ZOOKEEPER_PORT: host_port}, files=files,
            volumes=clock.volumes if clock else None, environment=clock.environment if clock else None)

    def start_broker(self, config: ClusterConfig, broker_id: int, host_port: int,
                     metrics_host_port: int | None = None, *, log_files: tuple[str, str] | None = None,
                     clock: NodeClock | None = None, data_dir: str | None = None) -> Container:
        """``log_files``: (host directory, log4j configuration text) to log to files there
        instead of stdout (:func:`file_logging`); ``clock``: run on a fake clock
        (:mod:`harness.containers.clocks`); ``data_dir``: a host directory mounted as the data
        directory (:mod:`harness.containers.disks`) instead of the container's own."""
        # Only the listeners differ from the local launcher: INTERNAL (first, so inter-broker)
        # on the Docker network, EXTERNAL published on the host's loopback, and CONTROL_PLANE (when
        # asked) on the network.  Cuts select peers by address, so they cover it as they are.
        planes = config.control_plane_listener
        properties = broker_properties(
            config, broker_id,
            zookeeper_connect=zookeeper_connect_string(config.zookeepers),
            listeners=broker_listeners(broker_id, host_port, planes),
            bind_listeners=bind_listeners(planes),
            log_dir=BROKER_DATA_DIR, kafka_version=self._kafka_version)
        agent = [agent_option(METRICS_AGENT, METRICS_PORT, METRICS_CONFIG, "0.0.0.0")] if metrics_host_port else []
        published = {EXTERNAL_PORT: host_port, **({METRICS_PORT: metrics_host_port} if metrics_host_port else {})}
        logging_options, log_config, volumes = file_logging(*log_files) if log_files else ([], {}, {})
        if config.broker_jaas is not None:  # in the container itself: no host path to mount
            logging_options = [*logging_options, jaas_option(BROKER_JAAS_CONFIG)]
            log_config = {**log_config, BROKER_JAAS_CONFIG: config.broker_jaas}
        return self._start(
            broker_alias(broker_id), "broker",
            java_command(config.broker_heap,
                         [*config.jvm_options, *archive_options("broker", self._class_data_sharing), *agent,
                          *logging_options],
                         "kafka.Kafka", BROKER_CONFIG,
                         log4j=FILE_LOG4J_CONFIG if log_files else logging_config(self._kafka_version)),
            address=self._broker_address(config.broker_ids().index(broker_id)), host_ports=published,
            files={BROKER_CONFIG: render_properties(properties), **log_config},
            extra_labels={BROKER_ID_LABEL: str(broker_id)}, volumes={**volumes, **(clock.volumes if clock else {}),
                                                                  **({data_dir: BROKER_DATA_DIR} if data_dir else {})},
            environment=clock.environment if clock else None)

    def start_kraft_node(self, config: ClusterConfig, node: str, role: str, properties: Mapping[str, str], *,
                         position: int, host_ports: Mapping[int, int], data_dir: str,
                         metrics: bool = False, clock: NodeClock | None = None) -> Container:
        """A KRaft controller (``position`` < 0: -1, -2, ... on the ZooKeeper servers' addresses,
        which a KRaft run has none of) or broker (``position`` in the sorted broker ids) whose
        data directory is the host's ``data_dir``, formatted there already
        (:mod:`harness.containers.kraft`), mounted at BROKER_DATA_DIR; ``clock``: run on a fake clock
        (:mod:`harness.containers.clocks`)."""
        address = self._zookeeper_address(-position) if position < 0 else self._broker_address(position)
        agent = [agent_option(METRICS_AGENT, METRICS_PORT, METRICS_CONFIG, "0.0.0.0")] if metrics else []
        return self._start(
            node, role,
            java_command(config.broker_heap, [*config.jvm_options, *agent], "kafka.Kafka", BROKER_CONFIG,
                         log4j=logging_config(self._kafka_version)),
            address=address, host_ports=host_ports, files={BROKER_CONFIG: render_properties(properties)},
            volumes={data_dir: BROKER_DATA_DIR, **(clock.volumes if clock else {})},
            environment=clock.environment if clock else None)

    def _start(self, node: str, role: str, command: list[str], *, address: str, host_ports: Mapping[int, int],
               files: Mapping[str, str], extra_labels: Mapping[str, str] | None = None,
               volumes: Mapping[str, str] | None = None, environment: Mapping[str, str] | None = None) -> Container:
        from testcontainers.core.container import DockerContainer

        container = (DockerContainer(self._image)
                     .with_name(self.name(node))
                     .with_command(command)
                     .with_kwargs(labels={**self._labels, ROLE_LABEL: role, **(extra_labels or {})},
                                  # overrides Testcontainers' endpoint (alias only) with ours
                                  networking_config=self._endpoint(node, address),
                                  hostname=node,
                                  stop_signal="SIGTERM",
                                  init=False)
                     .with_network(self.network))
        self._wrappers.append(container)
        for container_port, host_port in host_ports.items():
            # docker-py accepts (ip, port): publish on loopback only, never on all interfaces
            # (testcontainers types the value as a bare port).
            container.ports[f"{container_port}/tcp"] = ("127.0.0.1", host_port)  # type: ignore[assignment]
        for path, text in files.items():
            container.with_copy_into_container(text.encode(), path)
        for host_dir, mount_point in (volumes or {}).items():
            container.with_volume_mapping(host_dir, mount_point, "rw")
        for name, value in (environment or {}).items():
            container.with_env(name, value)
        container.start()
        wrapped: Container = container.get_wrapped_container()
        wrapped.reload()
        return wrapped

    def close(self) -> None:
        """Close the Testcontainers handles' Docker clients (the containers are removed by label)."""
        for wrapper in self._wrappers:
            ignore_errors(wrapper.get_docker_client().client.close)
        self._wrappers.clear()
        self._network = None
        self._subnet = None

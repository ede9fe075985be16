"""The containers of a :class:`harness.containers.cluster.ContainerCluster`: how ZooKeeper and
each broker are configured and started (Testcontainers), and what the cluster reads of them
(state, logs, addresses on the run's network).

Kept apart from the cluster class, which only coordinates: start order, readiness, faults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from common.errors import HarnessError
from harness.config import ClusterConfig, broker_properties, render_properties, zookeeper_properties
from harness.containers.image import KAFKA_HOME, LIBS_DIR, LOG4J_CONFIG
from harness.containers.labels import BROKER_ID_LABEL, ROLE_LABEL

if TYPE_CHECKING:
    from docker.models.containers import Container
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

log = logging.getLogger(__name__)

ZOOKEEPER_NAME = "zookeeper"
ZOOKEEPER_PORT = 2181
INTERNAL_PORT = 9092
EXTERNAL_PORT = 9094
BROKER_CONFIG = f"{KAFKA_HOME}/config/server.properties"
ZOOKEEPER_CONFIG = f"{KAFKA_HOME}/config/zookeeper.properties"
BROKER_DATA_DIR = "/var/lib/kafka/data"
ZOOKEEPER_DATA_DIR = "/var/lib/zookeeper"


def broker_alias(broker_id: int) -> str:
    return f"broker-{broker_id}"


def broker_listeners(broker_id: int, external_host_port: int) -> dict[str, str]:
    """Listener name -> advertised ``host:port`` (each binds 0.0.0.0 on its container port)."""
    return {"INTERNAL": f"{broker_alias(broker_id)}:{INTERNAL_PORT}",
            "EXTERNAL": f"127.0.0.1:{external_host_port}"}


def java_command(heap: str, jvm_options: Sequence[str], main_class: str, *args: str) -> list[str]:
    """No shell in the image: java expands the ``libs/*`` class path wildcard itself."""
    return ["java", f"-Xmx{heap}", *jvm_options,  # as harness.local_nodes.jvm_command
            f"-Dlog4j.configuration=file:{LOG4J_CONFIG}", "-cp", f"{LIBS_DIR}/*", main_class, *args]


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

    def __init__(self, run_id: str, image: str, labels: Mapping[str, str]) -> None:
        self._run_id = run_id
        self._image = image
        self._labels = dict(labels)
        self._network: Network | None = None
        self._wrappers: list[DockerContainer] = []

    def name(self, node: str) -> str:
        return f"kafka-chaos-{self._run_id}-{node}"

    @property
    def network(self) -> Network:
        if self._network is None:
            raise HarnessError("the run's network was not created")
        return self._network

    def create_network(self) -> Network:
        from testcontainers.core.network import Network

        network = Network(docker_network_kw={"driver": "bridge", "labels": {**self._labels, ROLE_LABEL: "network"}})
        network.name = self.name("net")  # a readable name instead of a bare uuid
        self._network = network.create()  # removed by label with the containers
        return self._network

    def start_zookeeper(self, config: ClusterConfig, host_port: int) -> Container:
        properties = zookeeper_properties(config, port=ZOOKEEPER_PORT, data_dir=ZOOKEEPER_DATA_DIR,
                                          host="0.0.0.0")
        return self._start(
            ZOOKEEPER_NAME, "zookeeper",
            java_command(config.zookeeper_heap, config.jvm_options,
                         "org.apache.zookeeper.server.quorum.QuorumPeerMain", ZOOKEEPER_CONFIG),
            host_ports={ZOOKEEPER_PORT: host_port},
            files={ZOOKEEPER_CONFIG: render_properties(properties)})

    def start_broker(self, config: ClusterConfig, broker_id: int, host_port: int) -> Container:
        # Only the listeners differ from the local launcher: INTERNAL (first, so inter-broker)
        # on the Docker network, EXTERNAL published on the host's loopback.
        properties = broker_properties(
            config, broker_id,
            zookeeper_connect=f"{ZOOKEEPER_NAME}:{ZOOKEEPER_PORT}",
            listeners=broker_listeners(broker_id, host_port),
            bind_listeners={"INTERNAL": f"0.0.0.0:{INTERNAL_PORT}", "EXTERNAL": f"0.0.0.0:{EXTERNAL_PORT}"},
            log_dir=BROKER_DATA_DIR)
        return self._start(
            broker_alias(broker_id), "broker",
            java_command(config.broker_heap, config.jvm_options, "kafka.Kafka", BROKER_CONFIG),
            host_ports={EXTERNAL_PORT: host_port},
            files={BROKER_CONFIG: render_properties(properties)},
            extra_labels={BROKER_ID_LABEL: str(broker_id)})

    def _start(self, node: str, role: str, command: list[str], *, host_ports: Mapping[int, int],
               files: Mapping[str, str], extra_labels: Mapping[str, str] | None = None) -> Container:
        from testcontainers.core.container import DockerContainer

        container = (DockerContainer(self._image)
                     .with_name(self.name(node))
                     .with_command(command)
                     .with_network_aliases(node)
                     .with_kwargs(labels={**self._labels, ROLE_LABEL: role, **(extra_labels or {})},
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

"""``ContainerCluster``: one ZooKeeper and N brokers, each in a Docker container.

The same contract as :class:`harness.local.LocalCluster` (``harness.cluster.Cluster`` and
``BrokerControl``) plus :class:`harness.cluster.NetworkPartitioner`, because every container
has its own network namespace.  Layout:

- a dedicated bridge network ``kafka-chaos-<run>``; ZooKeeper is ``zookeeper:2181`` and broker N
  is ``broker-N`` on it;
- two listeners per broker: ``INTERNAL`` (port 9092, advertised as ``broker-N:9092``) carries
  inter-broker traffic over the network, ``EXTERNAL`` (port 9094) is published on
  ``127.0.0.1:<host port>`` and advertised as exactly that, for clients on the host.  Docker only
  tells a mapped port after start, so host ports are picked up front and bound explicitly;
- ZooKeeper's 2181 is published on ``127.0.0.1`` too, for the observer.

Broker properties come from :func:`harness.config.broker_properties` (the local launcher's
layering), only the listeners differ, so timeouts and therefore latencies compare.  Every
Docker object carries ``kafka-chaos.run``/``kafka-chaos.owner`` labels and is removed on
``destroy()`` — reached from ``with``, atexit and SIGTERM/SIGHUP (:mod:`.teardown`) — and
otherwise by ``kafka-chaos cluster prune``.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from common.errors import HarnessError, UsageError
from common.waits import WaitTimeout, wait_until
from harness.cluster import BrokerEndpoint
from harness.config import (
    broker_properties,
    render_properties,
    session_timeout_ms,
    shared_broker_settings,
    tick_time_ms,
    zookeeper_properties,
)
from harness.containers import teardown
from harness.containers.image import KAFKA_HOME, LIBS_DIR, LOG4J_CONFIG, docker_client, ensure_kafka_image
from harness.containers.labels import BROKER_ID_LABEL, ROLE_LABEL, new_run_id, run_labels
from harness.containers.network import NamespaceFirewall, Peers, addresses_to_cut, check_partition_tools
from harness.nodes import free_ports, zookeeper_four_letter

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

    from harness.config import ClusterConfig
    from harness.distribution import KafkaDistribution

log = logging.getLogger(__name__)

ZOOKEEPER_NAME = "zookeeper"
ZOOKEEPER_PORT = 2181
INTERNAL_PORT = 9092
EXTERNAL_PORT = 9094
BROKER_CONFIG = f"{KAFKA_HOME}/config/server.properties"
ZOOKEEPER_CONFIG = f"{KAFKA_HOME}/config/zookeeper.properties"
BROKER_DATA_DIR = "/var/lib/kafka/data"
ZOOKEEPER_DATA_DIR = "/var/lib/zookeeper"
# docker stop sends SIGTERM, then SIGKILL after this: long enough for a controlled shutdown
# (controlled.shutdown.max.retries x retry backoff, plus moving leaders away).
STOP_TIMEOUT_SECONDS = 60
START_TIMEOUT_SECONDS = 120.0
# Grace on top of the session timeout + 2 ticks before an old registration must have expired.
SESSION_EXPIRY_GRACE_SECONDS = 5.0


def broker_alias(broker_id: int) -> str:
    return f"broker-{broker_id}"


def broker_listeners(broker_id: int, external_host_port: int) -> dict[str, str]:
    """Listener name -> advertised ``host:port`` (each binds 0.0.0.0 on its container port)."""
    return {"INTERNAL": f"{broker_alias(broker_id)}:{INTERNAL_PORT}",
            "EXTERNAL": f"127.0.0.1:{external_host_port}"}


def java_command(heap: str, jvm_options: Sequence[str], main_class: str, *args: str) -> list[str]:
    """No shell in the image: java expands the ``libs/*`` class path wildcard itself."""
    return ["java", f"-Xmx{heap}", *jvm_options,  # as harness.local._jvm_command
            f"-Dlog4j.configuration=file:{LOG4J_CONFIG}", "-cp", f"{LIBS_DIR}/*", main_class, *args]


class ContainerCluster:
    """See the module docstring.  Use as a context manager, or call ``start``/``destroy``."""

    backend = "containers"

    def __init__(self, config: "ClusterConfig", distribution: "KafkaDistribution", *,
                 base_image: str | None = None, run_id: str | None = None,
                 start_timeout: float = START_TIMEOUT_SECONDS) -> None:
        self.config = config
        self.distribution = distribution
        self.kafka_version = distribution.version
        self.base_image = base_image
        self.run_id = run_id or new_run_id()
        self.start_timeout = start_timeout
        self.image: str | None = None
        self.labels = run_labels(self.run_id)
        self._client: "docker.DockerClient | None" = None
        self._network: "Network | None" = None
        self._wrappers: list["DockerContainer"] = []  # testcontainers handles: their clients need closing
        self._zookeeper: "Container | None" = None
        self._brokers: dict[int, "Container"] = {}
        self._zk_host_port = 0
        self._broker_host_ports: dict[int, int] = {}
        self._cut: set[int] = set()  # brokers with partition rules in their namespace
        self._run_dir: Path | None = None
        self._destroyed = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> ContainerCluster:
        self.start()  # cleans up itself when it fails
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
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
        _disable_ryuk_unless_present()
        self._client = docker_client()
        self.image = ensure_kafka_image(self.distribution, base_image=self.base_image,
                                        client=self._client).tag
        teardown.register(self)  # from here on something may need removing
        ports = free_ports(1 + len(self.config.broker_ids()))
        self._zk_host_port = ports[0]
        self._broker_host_ports = dict(zip(self.config.broker_ids(), ports[1:]))
        self._network = self._create_network()
        self._zookeeper = self._start_zookeeper()
        self._wait_zookeeper_ready()
        log.info("starting %d Kafka %s broker containers", self.config.brokers, self.kafka_version)
        for broker_id in self.config.broker_ids():
            self._brokers[broker_id] = self._start_broker_container(broker_id)
        self._wait_brokers_ready(self.broker_ids, time.monotonic() + self.start_timeout)
        log.info("container cluster %s ready in %.1f s: bootstrap %s, ZooKeeper %s", self.run_id,
                 time.monotonic() - began, self.bootstrap_servers, self.zookeeper_connect)

    def destroy(self) -> None:
        """Remove every container and the network of this run, and the local log dir. Idempotent."""
        if self._destroyed:
            return
        self._destroyed = True
        teardown.unregister(self)
        client = self._client
        if client is not None:
            self._remove_labelled(client)
            client.close()
        for wrapper in self._wrappers:
            _ignore_errors(wrapper.get_docker_client().client.close)
        self._wrappers.clear()
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
        self._brokers.clear()
        self._zookeeper = None
        self._network = None

    def _remove_labelled(self, client: "docker.DockerClient") -> None:
        # By label rather than by our handles: also catches a container created just before
        # an exception (or Ctrl-C) prevented us from keeping its handle.
        from harness.containers.prune import labelled_objects

        objects = labelled_objects(client, self.run_id)
        for container in objects["containers"]:
            try:
                container.remove(force=True, v=True)
            except Exception as exc:
                log.warning("removing container %s: %s", container.name, exc)
        for network in objects["networks"]:
            try:
                network.remove()
            except Exception as exc:
                log.warning("removing network %s: %s", network.name, exc)
        for volume in objects["volumes"]:
            try:
                volume.remove(force=True)
            except Exception as exc:
                log.warning("removing volume %s: %s", volume.name, exc)

    # ------------------------------------------------------------------ containers

    def _name(self, node: str) -> str:
        return f"kafka-chaos-{self.run_id}-{node}"

    def _create_network(self) -> "Network":
        from testcontainers.core.network import Network

        network = Network(docker_network_kw={"driver": "bridge", "labels": {**self.labels, ROLE_LABEL: "network"}})
        network.name = self._name("net")  # a readable name instead of a bare uuid
        return network.create()  # removed by label in destroy(), with the containers

    def _container(self, node: str, role: str, command: list[str], *, host_ports: Mapping[int, int],
                   files: Mapping[str, str], extra_labels: Mapping[str, str] = {}) -> "Container":
        from testcontainers.core.container import DockerContainer

        assert self._network is not None and self.image is not None
        container = (DockerContainer(self.image)
                     .with_name(self._name(node))
                     .with_command(command)
                     .with_network_aliases(node)
                     .with_kwargs(labels={**self.labels, ROLE_LABEL: role, **extra_labels},
                                  hostname=node,
                                  stop_signal="SIGTERM",
                                  init=False)
                     .with_network(self._network))
        self._wrappers.append(container)
        for container_port, host_port in host_ports.items():
            # docker-py accepts (ip, port): publish on loopback only, never on all interfaces.
            container.ports[f"{container_port}/tcp"] = ("127.0.0.1", host_port)  # type: ignore[assignment]
        for path, text in files.items():
            container.with_copy_into_container(text.encode(), path)
        container.start()
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        return wrapped

    def _start_zookeeper(self) -> "Container":
        properties = zookeeper_properties(self.config, port=ZOOKEEPER_PORT, data_dir=ZOOKEEPER_DATA_DIR,
                                          host="0.0.0.0")
        return self._container(
            ZOOKEEPER_NAME, "zookeeper",
            java_command(self.config.zookeeper_heap, self.config.jvm_options,
                         "org.apache.zookeeper.server.quorum.QuorumPeerMain", ZOOKEEPER_CONFIG),
            host_ports={ZOOKEEPER_PORT: self._zk_host_port},
            files={ZOOKEEPER_CONFIG: render_properties(properties)})

    def _broker_properties(self, broker_id: int) -> dict[str, str]:
        # Only the listeners differ from the local launcher: INTERNAL (first, so inter-broker)
        # on the Docker network, EXTERNAL published on the host's loopback.
        return broker_properties(
            self.config, broker_id,
            zookeeper_connect=f"{ZOOKEEPER_NAME}:{ZOOKEEPER_PORT}",
            listeners=broker_listeners(broker_id, self._broker_host_ports[broker_id]),
            bind_listeners={"INTERNAL": f"0.0.0.0:{INTERNAL_PORT}", "EXTERNAL": f"0.0.0.0:{EXTERNAL_PORT}"},
            log_dir=BROKER_DATA_DIR)

    def _start_broker_container(self, broker_id: int) -> "Container":
        return self._container(
            broker_alias(broker_id), "broker",
            java_command(self.config.broker_heap, self.config.jvm_options, "kafka.Kafka", BROKER_CONFIG),
            host_ports={EXTERNAL_PORT: self._broker_host_ports[broker_id]},
            files={BROKER_CONFIG: render_properties(self._broker_properties(broker_id))},
            extra_labels={BROKER_ID_LABEL: str(broker_id)})

    def _wait_zookeeper_ready(self) -> None:
        """ZooKeeper answers ``ruok`` on its published port (bounded; nothing to watch yet)."""
        def ready() -> bool:
            self._require_running(self._zookeeper, ZOOKEEPER_NAME)  # a dead container ends the wait
            return zookeeper_four_letter("127.0.0.1", self._zk_host_port, "ruok", timeout=1.0) == "imok"

        try:
            wait_until(ready, timeout=self.start_timeout, interval=0.2, retry_on=(OSError,),
                       description="ZooKeeper to answer 'ruok'")
        except WaitTimeout:
            raise HarnessError(f"ZooKeeper container did not answer within {self.start_timeout:.0f} s; "
                               f"log: {self._tail(ZOOKEEPER_NAME)}") from None

    def _wait_brokers_ready(self, broker_ids: list[int], deadline: float,
                            newer_than: Mapping[int, int] | None = None) -> None:
        """As the local launcher: registered in /brokers/ids (with a newer epoch than
        ``newer_than`` gives), a live controller, then each broker's metadata, asked through its
        published port, lists every live broker.  Kafka registers before it enables request
        processing; until then docker-proxy resets client connections."""
        from harness.observer import ConvergenceTimeout
        from harness.readiness import wait_metadata_lists, wait_registered

        def check_alive() -> None:
            for broker_id in broker_ids:
                self._require_running(self._brokers[broker_id], broker_alias(broker_id))

        try:
            snapshot = wait_registered(self.zookeeper_connect, broker_ids, deadline=deadline,
                                       newer_than=newer_than, check_alive=check_alive)
        except ConvergenceTimeout as exc:
            tails = "; ".join(f"{broker_alias(b)}: {self._tail(broker_alias(b))}" for b in broker_ids)
            raise HarnessError(f"{exc}; logs: {tails}") from None
        expected = set(snapshot.live_brokers)
        for broker_id in broker_ids:
            bootstrap = self.endpoint(broker_id).bootstrap
            # At least a second per broker: docker-proxy may still reset the first connections.
            failure = wait_metadata_lists(bootstrap, expected, deadline=max(deadline, time.monotonic() + 1.0),
                                          check_alive=check_alive)
            if failure is not None:
                raise HarnessError(f"broker {broker_id} registered but its metadata on {bootstrap} did not "
                                   f"list brokers {sorted(expected)} in time ({failure}); "
                                   f"log: {self._tail(broker_alias(broker_id))}")

    def _require_running(self, container: "Container | None", node: str) -> None:
        if container is None:
            raise HarnessError(f"{node} container was never created")
        if self._state(container) not in ("running", "paused"):
            raise HarnessError(f"{node} container exited; log: {self._tail(node)}")

    @staticmethod
    def _state(container: "Container") -> str:
        container.reload()
        return str(container.status)

    def _tail(self, node: str, lines: int = 15) -> str:
        container = self._zookeeper if node == ZOOKEEPER_NAME else self._brokers.get(int(node.split("-")[1]))
        if container is None:
            return "(no container)"
        try:
            text = container.logs(tail=lines).decode(errors="replace").strip()
        except Exception as exc:
            return f"(no log: {exc})"
        return " | ".join(text.splitlines()[-lines:]) or "(empty)"

    # ------------------------------------------------------------------ Cluster

    @property
    def broker_ids(self) -> list[int]:
        return self.config.broker_ids()

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.endpoint(b).bootstrap for b in self.broker_ids)

    @property
    def zookeeper_connect(self) -> str:
        return f"127.0.0.1:{self._zk_host_port}"

    def endpoint(self, broker_id: int) -> BrokerEndpoint:
        if broker_id not in self._broker_host_ports:
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}")
        return BrokerEndpoint(broker_id, "127.0.0.1", self._broker_host_ports[broker_id],
                              container=self._name(broker_alias(broker_id)))

    def broker_settings(self) -> dict[str, str]:
        """The properties every broker shares — the same function the local launcher uses."""
        return shared_broker_settings(self.config)

    def log_files(self) -> dict[str, Path]:
        """Each node's ``docker logs`` written to a local file now (containers log to stdout)."""
        if self._run_dir is None:
            self._run_dir = Path(tempfile.mkdtemp(prefix=f"kafka-chaos-{self.run_id}-"))
        nodes: dict[str, "Container | None"] = {ZOOKEEPER_NAME: self._zookeeper}
        nodes.update({broker_alias(b): c for b, c in self._brokers.items()})
        files = {}
        for node, container in nodes.items():
            if container is None:
                continue
            path = self._run_dir / f"{node}.log"
            path.write_bytes(container.logs(stdout=True, stderr=True))
            files[node] = path
        return files

    # ------------------------------------------------------------------ BrokerControl

    def _broker(self, broker_id: int) -> "Container":
        if broker_id not in self._brokers:
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}")
        return self._brokers[broker_id]

    def kill_broker(self, broker_id: int) -> None:
        """``docker kill`` (SIGKILL); returns once the container has exited."""
        container = self._broker(broker_id)
        paused = self._state(container) == "paused"
        container.kill(signal="SIGKILL")
        if paused:  # a frozen cgroup dies only when thawed
            _ignore_errors(container.unpause)
        container.wait(timeout=30)
        self._cut.discard(broker_id)

    def stop_broker(self, broker_id: int) -> None:
        """``docker stop`` (SIGTERM, controlled shutdown; SIGKILL after STOP_TIMEOUT_SECONDS)."""
        container = self._broker(broker_id)
        if self._state(container) == "paused":
            container.unpause()  # SIGTERM cannot be handled by a frozen JVM
        container.stop(timeout=STOP_TIMEOUT_SECONDS)
        self._cut.discard(broker_id)

    def pause_broker(self, broker_id: int) -> None:
        self._broker(broker_id).pause()

    def resume_broker(self, broker_id: int) -> None:
        self._broker(broker_id).unpause()

    def start_broker(self, broker_id: int) -> None:
        """``docker start`` the broker's container (same data, same published port) once its
        old ZooKeeper registration has expired (else NODEEXISTS; bounded by the session timeout
        plus two ticks and a grace, as the local launcher); returns when it serves again."""
        from harness.observer import ConvergenceTimeout, ZkObserver

        container = self._broker(broker_id)
        if self._state(container) in ("running", "paused"):
            raise HarnessError(f"broker {broker_id} is already running (container {container.name})")
        grace = self.session_timeout_s() + 2 * tick_time_ms(self.config) / 1000 + SESSION_EXPIRY_GRACE_SECONDS
        with ZkObserver(self.zookeeper_connect, topics=[]) as observer:
            old_epoch = observer.snapshot().live_brokers.get(broker_id)
            if old_epoch is not None:
                log.info("waiting up to %.0f s for broker %d's old ZooKeeper session to expire", grace, broker_id)
                try:
                    observer.wait_broker_gone(broker_id, grace)
                except ConvergenceTimeout as exc:
                    raise HarnessError(f"broker {broker_id} is still registered in /brokers/ids {grace:.0f} s "
                                       f"after it stopped; not restarting it: {exc}") from None
        log.info("docker start %s", container.name)
        container.start()
        self._wait_brokers_ready([broker_id], time.monotonic() + self.start_timeout,
                                 newer_than={broker_id: old_epoch if old_epoch is not None else -1})

    def broker_paused(self, broker_id: int) -> bool:
        return self._state(self._broker(broker_id)) == "paused"

    def broker_running(self, broker_id: int) -> bool:
        """True while the JVM exists, paused or not (as a SIGSTOPped local process)."""
        return self._state(self._broker(broker_id)) in ("running", "paused")

    # ------------------------------------------------------------------ ZooKeeperControl

    def _zookeeper_container(self, verb: str) -> "Container":
        if self._zookeeper is None:
            raise HarnessError(f"cannot {verb} ZooKeeper: the cluster has not been started")
        return self._zookeeper

    def pause_zookeeper(self) -> None:
        self._zookeeper_container("pause").pause()

    def resume_zookeeper(self) -> None:
        self._zookeeper_container("resume").unpause()

    def zookeeper_paused(self) -> bool:
        return self._zookeeper is not None and self._state(self._zookeeper) == "paused"

    def stop_zookeeper(self) -> None:
        """``docker stop`` (SIGTERM; SIGKILL after STOP_TIMEOUT_SECONDS)."""
        container = self._zookeeper_container("stop")
        if self._state(container) == "paused":
            container.unpause()  # SIGTERM cannot be handled by a frozen JVM
        container.stop(timeout=STOP_TIMEOUT_SECONDS)

    def session_timeout_s(self) -> float:
        return session_timeout_ms(self.config) / 1000

    # ------------------------------------------------------------------ NetworkPartitioner

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        """Drop all traffic between the broker and the named peers, both ways, until
        :meth:`heal_network` (or the broker's container restarts)."""
        check_partition_tools()
        container = self._broker(broker_id)
        peers = self._peers(broker_id)
        addresses = addresses_to_cut(peers, from_zookeeper=from_zookeeper, from_brokers=from_brokers,
                                     from_clients=from_clients)
        NamespaceFirewall(_pid(container), broker_alias(broker_id)).drop(addresses)
        self._cut.add(broker_id)

    def heal_network(self) -> None:
        for broker_id in sorted(self._cut):
            container = self._brokers.get(broker_id)
            if container is not None and self._state(container) in ("running", "paused"):
                NamespaceFirewall(_pid(container), broker_alias(broker_id)).heal()
        self._cut.clear()

    def _peers(self, broker_id: int) -> Peers:
        assert self._network is not None and self._zookeeper is not None
        network = self._network.name

        def address(container: "Container") -> str:
            container.reload()
            return str(container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])

        own = self._broker(broker_id)
        own.reload()
        gateway = str(own.attrs["NetworkSettings"]["Networks"][network]["Gateway"])
        others = tuple(address(c) for b, c in sorted(self._brokers.items())
                       if b != broker_id and self._state(c) in ("running", "paused"))
        return Peers(zookeeper=address(self._zookeeper), brokers=others, clients=gateway)


def _pid(container: "Container") -> int:
    container.reload()
    return int(container.attrs["State"]["Pid"])


def _ignore_errors(action: object) -> None:
    try:
        action()  # type: ignore[operator]
    except Exception as exc:
        log.debug("ignored: %s", exc)


def _disable_ryuk_unless_present() -> None:
    """Ryuk (testcontainers' reaper) cannot be pulled here; without its image we clean up
    ourselves (labels + teardown + prune).  An explicit user setting wins."""
    if "TESTCONTAINERS_RYUK_DISABLED" in os.environ:
        return
    from testcontainers.core.config import testcontainers_config

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

"""The nodes of a :class:`harness.local.cluster.LocalCluster`: one directory, port, command line and
(while started) process each; how they are laid out in the run directory, and how their
start-up is awaited and, when it fails, explained with the node's log.

Kept apart from the cluster class so it stays the thin coordinator of what is here, the
state file (:mod:`harness.local.state`) and the process controls (:mod:`harness.processes`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.config import (
    BROKER_JAAS_FILE,
    CONTROL_PLANE_LISTENER,
    ZOOKEEPER_CONNECT,
    ClusterConfig,
    broker_properties,
    jaas_option,
    render_properties,
    zookeeper_properties,
)
from kafka_chaos.harness.distribution import log4j_option
from kafka_chaos.harness.jmx_exporter import agent_option, metrics_port_of
from kafka_chaos.harness.node_logs import JVM_TIMEZONE_FLAG
from kafka_chaos.harness.nodes import zookeeper_four_letter
from kafka_chaos.harness.observer import ConvergenceTimeout, ZkObserver
from kafka_chaos.harness.processes import NodeProcess
from kafka_chaos.harness.readiness import READY_POLL_S, still_registered, wait_metadata_lists, wait_registered
from kafka_chaos.harness.zk_ensemble import ZkServer, ensemble_properties

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
LISTENER = "PLAINTEXT"
ZOOKEEPER = "zookeeper"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
KAFKA_MAIN = "kafka.Kafka"
LOG_TAIL_LINES = 25


class NodeStartFailed(HarnessError):
    """A node exited or did not become ready in time; the message ends with its log tail."""


def broker_node_name(broker_id: int) -> str:
    return f"broker-{broker_id}"


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return f"    ({path} is missing)"
    tail = text.splitlines()[-lines:]
    return "\n".join(f"    {line}" for line in tail) if tail else f"    ({path} is empty)"


@dataclass
class LocalNode:
    """One node's directory, port, command line and (while started) process."""

    name: str
    directory: Path
    port: int
    config_file: Path
    command: list[str]
    process: NodeProcess | None = None
    group: int | None = None  # the group id it runs with under the loopback firewall
    control_plane_port: int | None = None  # a broker's KIP-291 CONTROL_PLANE listener, when it has one

    @property
    def listening_ports(self) -> tuple[int, ...]:
        """Every port the node listens on for Kafka's protocol: ``port`` first."""
        return (self.port,) if self.control_plane_port is None else (self.port, self.control_plane_port)

    @property
    def server_log(self) -> Path:
        return self.directory / "logs" / "server.log"

    @property
    def stdout_log(self) -> Path:
        return self.directory / "stdout.log"

    @property
    def identity(self) -> str:
        # The config file path: unique to this node and run dir, and on its command line.
        return str(self.config_file)

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def metrics_port(self) -> int | None:
        """The JMX exporter's port (brokers only; read from the command line, which
        ``cluster.json`` keeps)."""
        return metrics_port_of(self.command)

    def running(self) -> bool:
        return self.process is not None and self.process.alive()

    def running_pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.alive() else None

    def running_since(self) -> float | None:
        """The process start time while it runs (cluster.json's pid-reuse guard)."""
        return self.process.started_at if self.process is not None and self.process.alive() else None

    def describe_failure(self, what: str) -> str:
        code = self.process.exit_code() if self.process is not None else None
        exited = f" (exited with code {code})" if code is not None else ""
        tail = log_tail(self.server_log)
        cause = next((line.strip() for line in tail.splitlines() if "Exception: " in line), None)
        text = f"{self.name} {what}{exited}" + (f": {cause}" if cause else "")
        text += f"; last lines of {self.server_log}:\n{tail}"
        # stdout.log holds what the JVM said before log4j was up (bad flags, missing classes).
        try:
            said = [line for line in self.stdout_log.read_text(errors="replace").splitlines()
                    if not line.startswith("---- ")]
        except OSError:
            said = []
        if said:
            text += f"\n  {self.stdout_log}:\n" + "\n".join(f"    {line}" for line in said[-8:])
        return text


# ---------------------------------------------------------------- laying the nodes out

def jvm_command(java: str, heap: str, options: Sequence[str], classpath: str, log4j: Path,
                logs_dir: Path, main_class: str, properties: Path) -> list[str]:
    return [java, f"-Xmx{heap}", JVM_TIMEZONE_FLAG, *options,
            f"-Dkafka.logs.dir={logs_dir}", log4j_option(log4j),
            "-cp", classpath, main_class, str(properties)]


@dataclass(frozen=True)
class NodeLayout:
    """What every node of one run shares: where, which JVM and class path, and the JVM flags
    by role ("broker", "zookeeper")."""

    run_dir: Path
    java: str
    classpath: str
    log4j: Path
    jvm_options: Mapping[str, Sequence[str]]
    kafka_version: str  # server.properties are rendered for this release (harness.config)
    # (agent jar, its configuration) of the brokers' JMX exporter (harness.jmx_exporter); None: none
    metrics_agent: tuple[Path, Path] | None = None


def _prepare_node(name: str, directory: Path, port: int, config_name: str, props: dict[str, str],
                  command: list[str]) -> LocalNode:
    (directory / "data").mkdir(parents=True)
    (directory / "logs").mkdir()
    config_file = directory / config_name
    config_file.write_text(render_properties(props))
    return LocalNode(name=name, directory=directory, port=port, config_file=config_file, command=command)


def zookeeper_node_name(server_id: int, ensemble_size: int) -> str:
    """``zookeeper`` for a lone server (as before ensembles), ``zookeeper-N`` in an ensemble."""
    return ZOOKEEPER if ensemble_size <= 1 else f"{ZOOKEEPER}-{server_id}"


def prepare_zookeeper(layout: NodeLayout, config: ClusterConfig, port: int,
                      server: ZkServer | None = None, ensemble: Sequence[ZkServer] = ()) -> LocalNode:
    """A ZooKeeper server's directory, ``zookeeper.properties`` (with the ensemble's
    ``server.N`` lines and ``myid`` when there are several) and command line (not started)."""
    name = zookeeper_node_name(server.server_id if server else 1, len(ensemble))
    zk_dir = layout.run_dir / name
    props = zookeeper_properties(config, port=port, data_dir=str(zk_dir / "data"))
    props.update(ensemble_properties(ensemble))
    node = _prepare_node(
        name, zk_dir, port, "zookeeper.properties", dict(sorted(props.items())),
        jvm_command(layout.java, config.zookeeper_heap, layout.jvm_options["zookeeper"], layout.classpath,
                    layout.log4j, zk_dir / "logs", ZOOKEEPER_MAIN, zk_dir / "zookeeper.properties"))
    if server is not None and len(ensemble) > 1:
        (zk_dir / "data" / "myid").write_text(f"{server.server_id}\n")
    return node


def prepare_broker(layout: NodeLayout, config: ClusterConfig, broker_id: int, port: int,
                   zookeeper_connect: str, metrics_port: int | None = None,
                   control_plane_port: int | None = None) -> LocalNode:
    """A broker's directory, ``server.properties`` and command line (not started); with the
    layout's JMX exporter agent serving on ``metrics_port`` when both are given, and KIP-291's
    control-plane listener on ``control_plane_port`` when given."""
    node_dir = layout.run_dir / broker_node_name(broker_id)
    props, command = _broker_files(layout, config, broker_id, port, zookeeper_connect, metrics_port,
                                   control_plane_port)
    node = _prepare_node(broker_node_name(broker_id), node_dir, port, "server.properties", props, command)
    node.control_plane_port = control_plane_port
    return node


def reprepare_broker(node: LocalNode, layout: NodeLayout, config: ClusterConfig, broker_id: int) -> None:
    """Rewrite a stopped broker's ``server.properties`` and command line for ``layout`` (another
    release's class path) and ``config``, keeping its directory, data, ports and ZooKeeper
    address: what its next start runs."""
    connect = _property(node.config_file, ZOOKEEPER_CONNECT)
    props, node.command = _broker_files(layout, config, broker_id, node.port, connect, node.metrics_port,
                                        node.control_plane_port)
    node.config_file.write_text(render_properties(props))


def signal_node(node: LocalNode, verb: str, stop_timeout: float) -> None:
    """``verb`` (kill, stop, pause, resume) the running ``node``: SIGKILL, SIGTERM (bounded by
    ``stop_timeout``), SIGSTOP, SIGCONT. HarnessError when it is not running."""
    process = node.process
    if process is None or not process.alive():
        raise HarnessError(f"cannot {verb} {node.name}: it is not running")
    log.info("%s %s (pid %d)", {"kill": "SIGKILL", "stop": "SIGTERM", "pause": "SIGSTOP",
                                "resume": "SIGCONT"}[verb], node.name, process.pid)
    if verb == "kill":
        process.kill()
    elif verb == "stop":
        process.terminate(stop_timeout)
    elif verb == "pause":
        process.pause()
    else:
        process.resume()


def read_properties(path: Path) -> dict[str, str]:
    """A ``.properties`` file as the harness writes them: ``key=value`` lines, ``#`` comments."""
    props = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.lstrip().startswith("#"):
            props[name.strip()] = value.strip()
    return props


def _property(path: Path, key: str) -> str:
    value = read_properties(path).get(key)
    if value is None:
        raise HarnessError(f"{path} has no {key}")
    return value


def _broker_files(layout: NodeLayout, config: ClusterConfig, broker_id: int, port: int, zookeeper_connect: str,
                  metrics_port: int | None, control_plane_port: int | None) -> tuple[dict[str, str], list[str]]:
    node_dir = layout.run_dir / broker_node_name(broker_id)
    listeners = {LISTENER: f"{HOST}:{port}"}
    if control_plane_port is not None:
        listeners[CONTROL_PLANE_LISTENER] = f"{HOST}:{control_plane_port}"
    props = broker_properties(config, broker_id, zookeeper_connect=zookeeper_connect,
                              listeners=listeners, log_dir=str(node_dir / "data"), kafka_version=layout.kafka_version)
    options = list(layout.jvm_options["broker"])
    if config.broker_jaas is not None:
        options.append(jaas_option(write_broker_jaas(layout.run_dir, config.broker_jaas)))
    if layout.metrics_agent is not None and metrics_port is not None:
        options.append(agent_option(layout.metrics_agent[0], metrics_port, layout.metrics_agent[1], HOST))
    return props, jvm_command(layout.java, config.broker_heap, options, layout.classpath,
                              layout.log4j, node_dir / "logs", KAFKA_MAIN, node_dir / "server.properties")


def write_broker_jaas(run_dir: Path, text: str) -> Path:
    """``ClusterConfig.broker_jaas`` as the file every broker JVM reads
    (``-Djava.security.auth.login.config``), in the cluster's own directory."""
    path = run_dir / BROKER_JAAS_FILE
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


# ---------------------------------------------------------------- readiness

def check_alive(nodes: Iterable[LocalNode]) -> None:
    """NodeStartFailed (with the log tail) for the first node that is no longer running."""
    for node in nodes:
        if not node.running():
            raise NodeStartFailed(node.describe_failure("exited during start-up"))


def wait_zookeeper_answers(node: LocalNode, deadline: float, start_timeout: float) -> None:
    """ZooKeeper answers ``ruok`` (bounded by the ``time.monotonic()`` ``deadline``)."""
    def probe() -> bool:
        check_alive([node])  # a node that died ends the wait
        if zookeeper_four_letter(HOST, node.port, "ruok", timeout=1.0) != "imok":
            raise ConnectionError("ZooKeeper does not answer imok yet")
        return True

    try:
        wait_until(probe, timeout=deadline - time.monotonic(), interval=READY_POLL_S, retry_on=(OSError,),
                   description="ZooKeeper to answer 'ruok'")
    except WaitTimeout:
        raise NodeStartFailed(node.describe_failure(
            f"did not answer 'ruok' on {HOST}:{node.port} within {start_timeout:.0f} s")) from None


def wait_brokers_ready(zookeeper_connect: str, brokers: Mapping[int, LocalNode], deadline: float,
                       start_timeout: float, newer_than: Mapping[int, int] | None = None, *,
                       kraft_controller: bool = False) -> None:
    """Registered in /brokers/ids (with a new epoch when ``newer_than`` gives the old one), a
    live controller (``kraft_controller``: or a migrating cluster's KRaft controller), and each
    broker's metadata answering with every live broker."""
    nodes = list(brokers.values())
    old = newer_than or {}
    try:
        snapshot = wait_registered(zookeeper_connect, list(brokers), deadline=deadline, newer_than=old,
                                   check_alive=lambda: check_alive(nodes), kraft_controller=kraft_controller)
    except ConvergenceTimeout as exc:
        raise _registration_failure(exc, brokers, old, start_timeout) from None
    with ZkObserver(zookeeper_connect, topics=[]) as observer:
        expected = still_registered(observer, set(snapshot.live_brokers))
        for node in nodes:
            failure = wait_metadata_lists(node.bootstrap, expected, deadline=deadline,
                                          check_alive=_alive_check(node))
            if failure is not None:
                raise NodeStartFailed(node.describe_failure(
                    f"registered but its metadata did not answer in time ({failure})"))


def _alive_check(node: LocalNode) -> Callable[[], None]:
    return lambda: check_alive([node])


def _registration_failure(exc: ConvergenceTimeout, brokers: Mapping[int, LocalNode], old: Mapping[int, int],
                          start_timeout: float) -> NodeStartFailed:
    last = exc.last
    live = dict(last.live_brokers) if last is not None else {}
    missing = [node for b, node in brokers.items() if live.get(b, -1) <= old.get(b, -1)]
    if missing:
        text = "; ".join(n.describe_failure(f"did not register in /brokers/ids within {start_timeout:.0f} s")
                         for n in missing)
    else:
        text = (f"no controller was elected within {start_timeout:.0f} s "
                f"(ZooKeeper showed controller={last.controller if last else None})")
    return NodeStartFailed(text)

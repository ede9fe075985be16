"""The local launcher: one ZooKeeper and N Kafka brokers as JVMs on 127.0.0.1.

Everything of one cluster lives in its run directory (a temporary one unless given)::

    <run_dir>/cluster.json            what `LocalCluster.attach` and the CLI read back
    <run_dir>/log4j.properties        harness/log4j.properties, shared by every node
    <run_dir>/zookeeper/              zookeeper.properties, data/, logs/server.log, stdout.log
    <run_dir>/broker-<id>/            server.properties, data/, logs/{server,controller,
                                      state-change}.log, stdout.log

Start-up waits on real readiness, bounded: ZooKeeper answers ``ruok``; then, with every broker
started at once, each is registered in ``/brokers/ids`` and a controller is elected (watched
through :class:`harness.observer.ZkObserver`), and each broker's metadata answers and lists
all brokers.  A node that dies or does not come up is reported with the tail of its log.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from common.errors import HarnessError, UsageError
from common.waits import WaitTimeout, wait_until
from harness import processes
from harness.cds_paths import archive_options
from harness.cluster import BrokerEndpoint
from harness.config import (
    ClusterConfig,
    broker_properties,
    render_properties,
    session_timeout_ms,
    shared_broker_settings,
    tick_time_ms,
    zookeeper_properties,
)
from harness.distribution import KafkaDistribution, java_executable
from harness.nodes import free_ports, zookeeper_four_letter
from harness.processes import NodeProcess

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
LISTENER = "PLAINTEXT"
STATE_FILE = "cluster.json"
STATE_FORMAT = 1
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
class _Node:
    """One node's directory, port, command line and (while started) process."""

    name: str
    directory: Path
    port: int
    config_file: Path
    command: list[str]
    process: NodeProcess | None = None

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

    def running(self) -> bool:
        return self.process is not None and self.process.alive()

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


def _started_at(node: _Node) -> float | None:
    """The node's process start time while it runs (cluster.json's pid-reuse guard)."""
    process = node.process
    return process.started_at if process is not None and process.alive() else None


def _jvm_command(java: str, heap: str, options: Sequence[str], classpath: str, log4j: Path,
                 logs_dir: Path, main_class: str, properties: Path) -> list[str]:
    return [java, f"-Xmx{heap}", *options,
            f"-Dkafka.logs.dir={logs_dir}", f"-Dlog4j.configuration=file:{log4j}",
            "-cp", classpath, main_class, str(properties)]


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


class LocalCluster:
    """:class:`harness.cluster.Cluster` and :class:`harness.cluster.BrokerControl` on local JVMs."""

    backend = "local"

    def __init__(self, config: ClusterConfig, distribution: KafkaDistribution,
                 run_dir: str | os.PathLike[str] | None = None, *, detached: bool = False,
                 start_timeout: float = 120.0, stop_timeout: float = 60.0,
                 class_data_sharing: bool = True,
                 node_jvm_options: Mapping[str, Sequence[str]] | None = None) -> None:
        """``detached``: the nodes outlive this Python process (``cluster up``).
        ``class_data_sharing``: use the archives of :mod:`harness.cds` when they exist.
        ``node_jvm_options``: extra JVM flags by role ("broker", "zookeeper")."""
        self.config = config
        self.distribution = distribution
        self._requested_run_dir = Path(run_dir).absolute() if run_dir is not None else None
        self._run_dir: Path | None = None
        self._detached = detached
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._zookeeper: _Node | None = None
        self._brokers: dict[int, _Node] = {}
        self._destroyed = False
        self._lock = threading.RLock()
        self._class_data_sharing = class_data_sharing
        self._node_jvm_options = {role: list(flags) for role, flags in (node_jvm_options or {}).items()}

    def __repr__(self) -> str:
        return f"LocalCluster({self.config.brokers} brokers, run_dir={self._run_dir})"

    # ---------------------------------------------------------------- context manager

    def __enter__(self) -> LocalCluster:
        self.start()  # cleans up itself when it fails
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
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
        return f"{HOST}:{self._zk().port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{HOST}:{self._broker(b).port}" for b in self.broker_ids)

    @property
    def zookeeper_pid(self) -> int | None:
        process = self._zk().process
        return process.pid if process is not None and process.alive() else None

    def broker_pid(self, broker_id: int) -> int | None:
        process = self._broker(broker_id).process
        return process.pid if process is not None and process.alive() else None

    def endpoint(self, broker_id: int) -> BrokerEndpoint:
        return BrokerEndpoint(broker_id=broker_id, host=HOST, port=self._broker(broker_id).port,
                              pid=self.broker_pid(broker_id))

    def broker_settings(self) -> dict[str, str]:
        return shared_broker_settings(self.config)

    def log_files(self) -> dict[str, Path]:
        files = {ZOOKEEPER: self._zk().server_log}
        files.update({broker_node_name(b): self._broker(b).server_log for b in self.broker_ids})
        return files

    def session_timeout_s(self) -> float:
        return session_timeout_ms(self.config) / 1000

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
        log4j = self._run_dir / "log4j.properties"
        log4j.write_bytes(resources.files("harness").joinpath("log4j.properties").read_bytes())
        java = java_executable()
        classpath = self.distribution.classpath
        zk_port, *broker_ports = free_ports(1 + self.config.brokers)

        zk_dir = self._run_dir / ZOOKEEPER
        self._zookeeper = self._prepare_node(
            ZOOKEEPER, zk_dir, zk_port, "zookeeper.properties",
            zookeeper_properties(self.config, port=zk_port, data_dir=str(zk_dir / "data")),
            _jvm_command(java, self.config.zookeeper_heap, self._jvm_options("zookeeper", java), classpath,
                         log4j, zk_dir / "logs", ZOOKEEPER_MAIN, zk_dir / "zookeeper.properties"))
        broker_options = self._jvm_options("broker", java)
        for broker_id, port in zip(self.broker_ids, broker_ports):
            node_dir = self._run_dir / broker_node_name(broker_id)
            props = broker_properties(self.config, broker_id, zookeeper_connect=f"{HOST}:{zk_port}",
                                      listeners={LISTENER: f"{HOST}:{port}"},
                                      log_dir=str(node_dir / "data"))
            self._brokers[broker_id] = self._prepare_node(
                broker_node_name(broker_id), node_dir, port, "server.properties", props,
                _jvm_command(java, self.config.broker_heap, broker_options, classpath, log4j,
                             node_dir / "logs", KAFKA_MAIN, node_dir / "server.properties"))
        deadline = time.monotonic() + self.start_timeout
        log.info("starting ZooKeeper on %s:%d (run dir %s)", HOST, zk_port, self._run_dir)
        self._spawn(self._zookeeper)
        self._wait_zookeeper_ready(deadline)
        log.info("starting %d Kafka %s brokers on ports %s", self.config.brokers, self.kafka_version,
                 ", ".join(map(str, broker_ports)))
        for broker_id in self.broker_ids:  # all at once: JVM start-up dominates
            self._spawn(self._brokers[broker_id])
        self._wait_brokers_ready(self.broker_ids, deadline)
        self.write_state()
        log.info("cluster ready in %.1f s: bootstrap %s, ZooKeeper %s", time.monotonic() - began,
                 self.bootstrap_servers, self.zookeeper_connect)

    def _jvm_options(self, role: str, java: str) -> list[str]:
        options = list(self.config.jvm_options)
        if self._class_data_sharing:
            options += archive_options(self.distribution, role, java)
        return options + self._node_jvm_options.get(role, [])

    def _make_run_dir(self) -> Path:
        if self._requested_run_dir is None:
            return Path(tempfile.mkdtemp(prefix="kafka-chaos-"))
        run_dir = self._requested_run_dir
        if run_dir.exists() and any(run_dir.iterdir()):
            raise HarnessError(f"run directory {run_dir} is not empty")
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir

    def _prepare_node(self, name: str, directory: Path, port: int, config_name: str,
                      props: dict[str, str], command: list[str]) -> _Node:
        (directory / "data").mkdir(parents=True)
        (directory / "logs").mkdir()
        config_file = directory / config_name
        config_file.write_text(render_properties(props))
        return _Node(name=name, directory=directory, port=port, config_file=config_file, command=command)

    def _spawn(self, node: _Node) -> None:
        node.process = processes.spawn(node.name, node.command, output=node.stdout_log,
                                       identity=node.identity, cwd=node.directory,
                                       detached=self._detached)

    # ---------------------------------------------------------------- readiness

    def _check_alive(self, nodes: Iterable[_Node]) -> None:
        for node in nodes:
            if not node.running():
                raise NodeStartFailed(node.describe_failure("exited during start-up"))

    def _wait_zookeeper_ready(self, deadline: float) -> None:
        node = self._zk()

        def probe() -> bool:
            self._check_alive([node])  # a node that died ends the wait
            if zookeeper_four_letter(HOST, node.port, "ruok", timeout=1.0) != "imok":
                raise ConnectionError("ZooKeeper does not answer imok yet")
            return True

        try:
            wait_until(probe, timeout=deadline - time.monotonic(), interval=0.1, retry_on=(OSError,),
                       description="ZooKeeper to answer 'ruok'")
        except WaitTimeout:
            raise NodeStartFailed(node.describe_failure(
                f"did not answer 'ruok' on {HOST}:{node.port} within {self.start_timeout:.0f} s")) from None

    def _wait_brokers_ready(self, broker_ids: Sequence[int], deadline: float,
                            newer_than: dict[int, int] | None = None) -> None:
        """Registered in /brokers/ids (with a new epoch when ``newer_than`` gives the old one), a
        live controller, and each broker's metadata answering with every live broker."""
        from harness.observer import ConvergenceTimeout
        from harness.readiness import wait_registered

        nodes = [self._broker(b) for b in broker_ids]
        old = newer_than or {}
        try:
            snapshot = wait_registered(self.zookeeper_connect, broker_ids, deadline=deadline, newer_than=old,
                                       check_alive=lambda: self._check_alive(nodes))
        except ConvergenceTimeout as exc:
            raise self._registration_failure(exc, broker_ids, old) from None
        expected = set(snapshot.live_brokers)
        for node, broker_id in zip(nodes, broker_ids):
            self._wait_metadata(node, broker_id, expected, deadline)

    def _registration_failure(self, exc: Any, broker_ids: Sequence[int],
                              old: dict[int, int]) -> NodeStartFailed:
        last = exc.last
        live = dict(last.live_brokers) if last is not None else {}
        missing = [self._broker(b) for b in broker_ids if live.get(b, -1) <= old.get(b, -1)]
        if missing:
            text = "; ".join(n.describe_failure(f"did not register in /brokers/ids within "
                                                f"{self.start_timeout:.0f} s") for n in missing)
        else:
            text = (f"no controller was elected within {self.start_timeout:.0f} s "
                    f"(ZooKeeper showed controller={last.controller if last else None})")
        return NodeStartFailed(text)

    def _wait_metadata(self, node: _Node, broker_id: int, expected: set[int], deadline: float) -> None:
        from harness.readiness import wait_metadata_lists

        failure = wait_metadata_lists(f"{HOST}:{node.port}", expected, deadline=deadline,
                                      check_alive=lambda: self._check_alive([node]))
        if failure is not None:
            raise NodeStartFailed(node.describe_failure(
                f"registered but its metadata did not answer in time ({failure})"))

    # ---------------------------------------------------------------- BrokerControl

    def kill_broker(self, broker_id: int) -> None:
        node = self._running_broker(broker_id, "kill")
        log.info("SIGKILL %s (pid %d)", node.name, node.process.pid)  # type: ignore[union-attr]
        node.process.kill()  # type: ignore[union-attr]

    def stop_broker(self, broker_id: int) -> None:
        node = self._running_broker(broker_id, "stop")
        log.info("SIGTERM %s (pid %d): controlled shutdown", node.name, node.process.pid)  # type: ignore[union-attr]
        node.process.terminate(self.stop_timeout)  # type: ignore[union-attr]

    def pause_broker(self, broker_id: int) -> None:
        node = self._running_broker(broker_id, "pause")
        log.info("SIGSTOP %s (pid %d)", node.name, node.process.pid)  # type: ignore[union-attr]
        node.process.pause()  # type: ignore[union-attr]

    def resume_broker(self, broker_id: int) -> None:
        node = self._running_broker(broker_id, "resume")
        log.info("SIGCONT %s (pid %d)", node.name, node.process.pid)  # type: ignore[union-attr]
        node.process.resume()  # type: ignore[union-attr]

    def broker_running(self, broker_id: int) -> bool:
        return self._broker(broker_id).running()

    def broker_paused(self, broker_id: int) -> bool:
        process = self._broker(broker_id).process
        return process is not None and process.paused()

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped or killed broker on its old data and port.

        After a kill its old session holds ``/brokers/ids/<id>`` until ZooKeeper expires it;
        starting before that fails with NODEEXISTS, so wait (bounded by the session timeout
        plus two ticks and a grace period), as kafkatest's ``hard_bounce`` does.
        """
        from harness.observer import ConvergenceTimeout, ZkObserver

        with self._lock:
            node = self._broker(broker_id)
            if node.running():
                raise HarnessError(f"broker {broker_id} is already running (pid {node.process.pid})")  # type: ignore[union-attr]
            grace = self.session_timeout_s() + 2 * tick_time_ms(self.config) / 1000 + 5.0
            with ZkObserver(self.zookeeper_connect, topics=[]) as observer:
                old_epoch = observer.snapshot().live_brokers.get(broker_id)
                if old_epoch is not None:
                    log.info("waiting up to %.0f s for broker %d's old ZooKeeper session to expire",
                             grace, broker_id)
                    try:
                        observer.wait_broker_gone(broker_id, grace)
                    except ConvergenceTimeout as exc:
                        raise HarnessError(f"broker {broker_id} is still registered in /brokers/ids "
                                           f"{grace:.0f} s after it stopped; not restarting it (it would "
                                           f"fail with NODEEXISTS): {exc}") from None
            log.info("starting %s on port %d", node.name, node.port)
            self._spawn(node)
            try:
                self._wait_brokers_ready([broker_id], time.monotonic() + self.start_timeout,
                                         newer_than={broker_id: old_epoch if old_epoch is not None else -1})
            finally:
                if self._run_dir is not None and self._run_dir.exists():
                    self.write_state()

    # ---------------------------------------------------------------- ZooKeeper

    def pause_zookeeper(self) -> None:
        node = self._zk()
        if not node.running():
            raise HarnessError("cannot pause ZooKeeper: it is not running")
        log.info("SIGSTOP zookeeper (pid %d)", node.process.pid)  # type: ignore[union-attr]
        node.process.pause()  # type: ignore[union-attr]

    def stop_zookeeper(self) -> None:
        """SIGTERM ZooKeeper and wait for it to exit (bounded, then SIGKILL)."""
        node = self._zk()
        if not node.running():
            raise HarnessError("cannot stop ZooKeeper: it is not running")
        log.info("SIGTERM zookeeper (pid %d)", node.process.pid)  # type: ignore[union-attr]
        node.process.terminate(self.stop_timeout)  # type: ignore[union-attr]

    def zookeeper_paused(self) -> bool:
        process = self._zk().process
        return process is not None and process.paused()

    def resume_zookeeper(self) -> None:
        node = self._zk()
        if not node.running():
            raise HarnessError("cannot resume ZooKeeper: it is not running")
        log.info("SIGCONT zookeeper (pid %d)", node.process.pid)  # type: ignore[union-attr]
        node.process.resume()  # type: ignore[union-attr]

    # ---------------------------------------------------------------- teardown

    def any_running(self) -> bool:
        nodes = [self._zookeeper, *self._brokers.values()]
        return any(n is not None and n.running() for n in nodes)

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
            for node in [*self._brokers.values(), self._zookeeper]:
                if node is not None and node.process is not None:
                    try:
                        node.process.kill()
                    except HarnessError as exc:
                        errors.append(str(exc))
            if self._run_dir is not None:
                # Belt and braces: a node restarted by another process (CLI) that we hold no pid of.
                marker = f"{self._run_dir}{os.sep}"
                for pid in processes.processes_mentioning(marker):
                    log.warning("killing leftover process %d of %s", pid, self._run_dir)
                    processes.attach("leftover", pid, marker).kill()
                shutil.rmtree(self._run_dir, ignore_errors=True)
                if self._run_dir.exists():
                    errors.append(f"could not remove {self._run_dir}")
            if errors:
                raise HarnessError("; ".join(errors))

    # ---------------------------------------------------------------- state file

    def state(self) -> dict[str, Any]:
        """What ``cluster.json`` holds: enough for another process to control the cluster."""
        zk = self._zk()
        return {
            "format": STATE_FORMAT,
            "run_dir": str(self.run_dir),
            "kafka_version": self.kafka_version,
            "distribution": {"version": self.distribution.version,
                             "libs_dir": str(self.distribution.libs_dir),
                             "source": self.distribution.source},
            "zookeeper": self.zookeeper_connect,
            "zookeeper_pid": self.zookeeper_pid,
            "zookeeper_started_at": _started_at(zk),
            "bootstrap_servers": self.bootstrap_servers,
            "brokers": [{"id": b, "pid": self.broker_pid(b), "started_at": _started_at(self._broker(b)),
                         "port": self._broker(b).port,
                         "dir": str(self._broker(b).directory),
                         "config_file": str(self._broker(b).config_file),
                         "command": self._broker(b).command} for b in self.broker_ids],
            "zookeeper_node": {"port": zk.port, "dir": str(zk.directory),
                               "config_file": str(zk.config_file), "command": zk.command},
            "session_timeout_ms": session_timeout_ms(self.config),
            "tick_time_ms": tick_time_ms(self.config),
            "broker_settings": self.broker_settings(),
            "config": {
                "brokers": self.config.brokers,
                "cluster_overrides": dict(self.config.cluster_overrides),
                "broker_overrides": {str(b): dict(o) for b, o in self.config.broker_overrides.items()},
                "zk_tick_time_ms": self.config.zk_tick_time_ms,
                "broker_heap": self.config.broker_heap,
                "zookeeper_heap": self.config.zookeeper_heap,
                "first_broker_id": self.config.first_broker_id,
                "jvm_options": list(self.config.jvm_options),
            },
        }

    def write_state(self) -> Path:
        path = self.run_dir / STATE_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.state(), indent=2) + "\n")
        tmp.replace(path)
        return path

    @classmethod
    def attach(cls, state_dir: str | os.PathLike[str]) -> LocalCluster:
        """The cluster a ``kafka-chaos cluster up`` started in ``state_dir`` (its nodes may have
        died since: check ``any_running()``).  Controls work as on the original; ``destroy``
        kills the nodes by pid (checked against their command lines) and wipes the directory."""
        state_dir = Path(state_dir).absolute()
        path = state_dir / STATE_FILE
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise UsageError(f"no cluster in {state_dir} (no {STATE_FILE}); start one with "
                             f"`kafka-chaos cluster up --state-dir {state_dir}`") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise HarnessError(f"cannot read {path}: {exc}") from exc
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise HarnessError(f"{path} was not written by this version of kafka-chaos")
        try:
            return cls._from_state(state, state_dir)
        except (KeyError, TypeError, ValueError) as exc:
            raise HarnessError(f"{path} is incomplete or damaged ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _from_state(cls, state: dict[str, Any], state_dir: Path) -> LocalCluster:
        c = state["config"]
        config = ClusterConfig(
            brokers=int(c["brokers"]), cluster_overrides=dict(c["cluster_overrides"]),
            broker_overrides={int(b): dict(o) for b, o in c["broker_overrides"].items()},
            zk_tick_time_ms=int(c["zk_tick_time_ms"]), broker_heap=c["broker_heap"],
            zookeeper_heap=c["zookeeper_heap"], first_broker_id=int(c["first_broker_id"]),
            jvm_options=tuple(c["jvm_options"]))
        d = state["distribution"]
        distribution = KafkaDistribution(version=d["version"], libs_dir=Path(d["libs_dir"]), source=d["source"])
        cluster = cls(config, distribution, state_dir, detached=True)
        cluster._run_dir = state_dir
        zk = state["zookeeper_node"]
        cluster._zookeeper = cls._attached_node(ZOOKEEPER, zk, state.get("zookeeper_pid"),
                                                state.get("zookeeper_started_at"))
        for b in state["brokers"]:
            cluster._brokers[int(b["id"])] = cls._attached_node(broker_node_name(int(b["id"])), b, b.get("pid"),
                                                                b.get("started_at"))
        if sorted(cluster._brokers) != config.broker_ids():
            raise ValueError(f"brokers {sorted(cluster._brokers)} do not match the config")
        return cluster

    @staticmethod
    def _attached_node(name: str, entry: dict[str, Any], pid: int | None, started_at: float | None) -> _Node:
        node = _Node(name=name, directory=Path(entry["dir"]), port=int(entry["port"]),
                     config_file=Path(entry["config_file"]), command=list(entry["command"]))
        if pid is not None:
            node.process = processes.attach(name, int(pid), node.identity,
                                            float(started_at) if started_at is not None else None)
        return node

    # ---------------------------------------------------------------- lookups

    def _zk(self) -> _Node:
        if self._zookeeper is None:
            raise HarnessError("the cluster has not been started")
        return self._zookeeper

    def _broker(self, broker_id: int) -> _Node:
        if self._zookeeper is None:
            raise HarnessError("the cluster has not been started")
        try:
            return self._brokers[broker_id]
        except KeyError:
            raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                             f"{', '.join(map(str, self.broker_ids))}") from None

    def _running_broker(self, broker_id: int, verb: str) -> _Node:
        node = self._broker(broker_id)
        if not node.running():
            raise HarnessError(f"cannot {verb} broker {broker_id}: it is not running")
        return node

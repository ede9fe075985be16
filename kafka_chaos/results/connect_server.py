"""A local Spark Connect server that outlives the command: ``kafka-chaos spark up|status|down``.

pip's pyspark (4.x) ships the server (``jars/spark-connect_*.jar``) and ``bin/spark-submit``; the
server is ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`` in a
session of its own (so ``down`` stops it and nothing it started), its output in a log file.
Reports then run through it (``kafka-chaos report --master sc://...``, :mod:`results.spark_connect`)
without starting a JVM each.  Its state (pid and start time, address, master, log) is
``DIR/spark.json``; every wait is bounded, and an ``up`` that fails stops what it started.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.results.spark_connect import DEFAULT_PORT, SCHEME, accepts_connections

log = logging.getLogger(__name__)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STATE_FILE = "spark.json"
LOG_FILE = "connect-server.log"
DEFAULT_STATE_DIR = Path(".kafka-chaos") / "spark"
STATE_DIR_ENV = "KAFKA_CHAOS_SPARK_STATE_DIR"
DEFAULT_HOST = "127.0.0.1"  # Spark Connect has no authentication unless configured: loopback only
DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "2g"
START_TIMEOUT_S = 120.0  # a cold Spark driver starts in 10-20 s on this 2-core machine, more under load
STOP_TIMEOUT_S = 30.0  # SIGTERM: Spark's shutdown hooks stop the context (and a cluster's executors)
KILL_TIMEOUT_S = 10.0
WARM_UP_TIMEOUT_S = 120.0  # the first query of a cold server: 7 s here; a cluster's executors start first
LOG_TAIL_LINES = 200  # how much of the log a failed start is explained from

# The server-wide settings a report's session cannot set itself (results.spark_session.spark_config
# has the same for a local report).
SERVER_CONFIG: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
    "spark.driver.maxResultSize": "768m",
    # Fail on a taken port instead of quietly moving to the next one: the URL printed is the one.
    "spark.connect.grpc.port.maxRetries": "0",
}


@dataclass(frozen=True)
class ServerState:
    """What ``spark.json`` records of a running server; ``create_time`` guards against the pid
    having been reused by another process since."""

    pid: int
    create_time: float
    host: str
    port: int
    master: str
    log: str
    started_at: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{SCHEME}://{host}:{self.port}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, where: Path) -> "ServerState":
        """Parse ``spark.json``; a HarnessError naming ``where`` when it is not one."""
        try:
            data = json.loads(text)
            state = cls(pid=int(data["pid"]), create_time=float(data["create_time"]), host=str(data["host"]),
                        port=int(data["port"]), master=str(data["master"]), log=str(data["log"]),
                        started_at=str(data["started_at"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"{where}: not a Spark Connect server state file ({type(exc).__name__}: {exc}); "
                               f"remove it if no server is running") from None
        if state.pid <= 0 or not 0 < state.port < 65536:
            raise HarnessError(f"{where}: not a Spark Connect server state file (pid {state.pid}, port {state.port})")
        return state


def default_state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def parse_confs(items: Sequence[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` items (Spark's own form) as a mapping; UsageError on a malformed one."""
    confs: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key.strip() or not key.startswith("spark."):
            raise UsageError(f"--conf {item}: expected spark.KEY=VALUE")
        confs[key.strip()] = value
    return confs


def spark_home() -> Path:
    """pip's pyspark is a Spark distribution of its own (bin/, jars/)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def server_command(home: Path, *, host: str, port: int, master: str, driver_memory: str = DEFAULT_DRIVER_MEMORY,
                   confs: Mapping[str, str] = {}, java_options: Sequence[str] = ()) -> list[str]:
    """The ``spark-submit`` command line of the server; ``confs`` override :data:`SERVER_CONFIG`."""
    settings = {**SERVER_CONFIG, "spark.connect.grpc.binding.address": host,
                "spark.connect.grpc.binding.port": str(port), **_loopback_driver(master), **confs}
    command = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "kafka-chaos Spark Connect server",
               "--master", master, "--driver-memory", driver_memory]
    if java_options:
        command += ["--driver-java-options", " ".join(java_options)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command


def _loopback_driver(master: str) -> dict[str, str]:
    """A local master, or one on this machine's loopback: the driver listens on loopback too (no
    host-name lookup; executors of a 127.0.0.1 master reach it there)."""
    on_loopback = master.startswith("local") or any(
        master.startswith(f"spark://{host}:") for host in ("127.0.0.1", "localhost"))
    return {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"} if on_loopback else {}


def read_state(state_dir: Path) -> ServerState | None:
    path = state_dir / STATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read it ({exc.strerror})") from None
    return ServerState.from_json(text, path)


def is_running(state: ServerState) -> bool:
    """Whether the recorded server process still runs (the same process: same start time)."""
    import psutil

    try:
        process = psutil.Process(state.pid)
        return abs(process.create_time() - state.create_time) < 0.01 and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def start_server(state_dir: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, master: str = DEFAULT_MASTER,
                 driver_memory: str = DEFAULT_DRIVER_MEMORY, confs: Mapping[str, str] = {},
                 timeout: float = START_TIMEOUT_S) -> ServerState:
    """Start the server, wait (at most ``timeout`` s) until it accepts connections, warm it up
    (:func:`_warm_up`, at most ``WARM_UP_TIMEOUT_S``); record it in ``state_dir``.  A HarnessError
    when one is already recorded there and running, when the port is taken, or when the server
    exits, does not open its port or fails its warm-up in time — after stopping its process
    group and removing the state."""
    state_dir = state_dir.absolute()
    previous = read_state(state_dir)
    if previous is not None and is_running(previous):
        raise HarnessError(f"a Spark Connect server is already running at {previous.url} (pid {previous.pid}); "
                           f"`kafka-chaos spark down --state-dir {state_dir}` first")
    if previous is not None:
        log.info("the server %s recorded (pid %d) is gone: replacing its state", previous.url, previous.pid)
    _require_free_port(host, port)
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / LOG_FILE
    command = server_command(spark_home(), host=host, port=port, master=master, driver_memory=driver_memory,
                             confs=confs, java_options=_server_java_options())
    log.debug("starting %s", " ".join(command))
    with open(log_path, "ab") as output:
        output.write(f"\n==> {_now()} {' '.join(command)}\n".encode())
        output.flush()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=_server_env())
    state = ServerState(pid=process.pid, create_time=_create_time(process.pid), host=host, port=port, master=master,
                        log=str(log_path), started_at=_now())
    try:
        # Recorded before the wait: a start interrupted by the user is still found by `spark down`.
        _write_state(state_dir, state)
        _wait_until_serving(process, state, timeout)
        _warm_up(state, WARM_UP_TIMEOUT_S)
    except BaseException:
        _stop_group(process.pid, lambda: process.poll() is not None)
        process.wait(timeout=KILL_TIMEOUT_S)
        (state_dir / STATE_FILE).unlink(missing_ok=True)
        raise
    log.info("Spark Connect server on %s (pid %d, master %s), log %s", state.url, state.pid, master, log_path)
    return state


def stop_server(state_dir: Path) -> ServerState | None:
    """Stop the recorded server (SIGTERM to its process group, SIGKILL after ``STOP_TIMEOUT_S``)
    and remove its state; the state it had (None: nothing recorded).  The log is kept."""
    state_dir = state_dir.absolute()
    state = read_state(state_dir)
    if state is None:
        return None
    if is_running(state):
        import psutil

        def gone() -> bool:
            try:
                psutil.Process(state.pid).wait(timeout=0)
                return True
            except psutil.TimeoutExpired:
                return False
            except psutil.NoSuchProcess:
                return True

        _stop_group(state.pid, gone)
    else:
        log.info("the server recorded (pid %d) was not running any more", state.pid)
    (state_dir / STATE_FILE).unlink(missing_ok=True)
    return state


def _stop_group(pgid: int, gone: Callable[[], bool]) -> None:
    """SIGTERM the process group, SIGKILL it when ``gone()`` is not true within the timeout."""
    for sig, timeout in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, KILL_TIMEOUT_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if gone():
                _kill_stragglers(pgid)
                return
            time.sleep(0.2)
    raise HarnessError(f"the Spark Connect server (pid {pgid}) did not stop after SIGKILL")


def _kill_stragglers(pgid: int) -> None:
    """The server's own children (the launcher's helpers) die with it; anything left in its
    group is killed too."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_until_serving(process: "subprocess.Popen[bytes]", state: ServerState, timeout: float) -> None:
    """Until the server accepts connections; a HarnessError as soon as it exits, or after ``timeout`` s."""
    def serving() -> bool:
        code = process.poll()
        if code is not None:  # not retried: ends the wait at once
            raise HarnessError(f"the Spark Connect server exited during start-up (exit code {code}): "
                               f"{_log_reason(Path(state.log))} (log: {state.log})")
        return accepts_connections(state.host, state.port)

    try:
        wait_until(serving, timeout=timeout, interval=0.5, description=f"the Spark Connect server on {state.url}")
    except WaitTimeout:
        raise HarnessError(f"the Spark Connect server did not open {state.host}:{state.port} within "
                           f"{timeout:.0f} s (log: {state.log})") from None


def _warm_up(state: ServerState, timeout: float) -> None:
    """The report's query once (:func:`results.aggregate.warm_up`), through Connect as a report
    sends it: the first report is then as fast as the next ones, and a server that cannot run a
    query (a cluster master without workers) fails ``up`` instead of the first report."""
    from kafka_chaos.results.aggregate import warm_up
    from kafka_chaos.results.spark_connect import close_quietly, connect_session, reason, within

    started = time.monotonic()
    # A local master's executors read this machine's files: the warm-up reads one, as reports do.
    scratch = Path(state.log).parent / "warm-up" if state.master.startswith("local") else None
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)  # the generator appends
    session = connect_session(state.url)
    try:
        within(timeout, lambda: warm_up(session, scratch),
               f"the Spark Connect server ran no query within {timeout:.0f} s (no executors? log: {state.log})")
    except Exception as exc:
        close_quietly(session)  # no release request to a server that failed: it is stopped next
        if isinstance(exc, HarnessError):
            raise
        raise HarnessError(f"the Spark Connect server failed its first query: {reason(exc)} (log: {state.log})") from exc
    session.stop()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    log.debug("warmed up in %.1f s", time.monotonic() - started)


def _log_reason(log_path: Path) -> str:
    """The last error line of the server's log (what to tell the user about a failed start)."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_TAIL_LINES:]
    except OSError:
        return "no log"
    found = [line.strip() for line in lines if "Exception" in line or "Error" in line or " ERROR " in line]
    return found[-1] if found else (lines[-1].strip() if lines else "empty log")


def _require_free_port(host: str, port: int) -> None:
    if not 0 < port < 65536:
        raise UsageError(f"--port {port}: not a TCP port (1-65535)")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise HarnessError(f"cannot serve on {host}:{port}: {exc.strerror}; choose another --port") from None


def _server_java_options() -> list[str]:
    """Quiet logging (errors only, into the log file) and the report's class-data archive when
    built (results.spark_cds: a faster start; a JVM that cannot use it warns in the log)."""
    from kafka_chaos.results.spark_cds import archive_options
    from kafka_chaos.results.spark_session import QUIET_LOG4J

    return [f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}", *archive_options()]


def _server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home())
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)  # a client setting; the server is a classic driver
    env.pop("SPARK_REMOTE", None)
    return env


def _create_time(pid: int) -> float:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0  # already gone: the wait says why


def _write_state(state_dir: Path, state: ServerState) -> None:
    temp = state_dir / f".{STATE_FILE}.tmp"
    temp.write_text(state.to_json(), encoding="utf-8")
    os.replace(temp, state_dir / STATE_FILE)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")

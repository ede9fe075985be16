"""Kafka's own Java test clients (the ones its system tests drive: ``VerifiableProducer``,
``VerifiableConsumer``, ``TransactionalMessageCopier``) run as processes of their own, one JVM
each, that a fault can pause (SIGSTOP / SIGCONT), kill and start again like a broker.

Where the classes are: ``org.apache.kafka.tools`` in the ``kafka-tools`` artifact on every release
the harness runs (2.4 to 3.9: ``tools/src/main/java/org/apache/kafka/tools/`` at each tag); a
Kafka tarball ships that jar and its dependencies in ``libs/`` (``build.gradle``:
``from(project(':tools').jar)`` and its runtime classpath), the broker's Maven classpath
(:mod:`harness.distribution`) does not: ``org.apache.kafka:kafka-tools:<version>`` with its runtime
dependencies (argparse4j, jackson, kafka-clients, ...) and the reload4j binding is fetched once
into ``~/.cache/kafka-chaos/kafka-<version>/tools-libs``.

A process prints JSON lines on stdout (each handed to ``on_line`` with the harness's clock at
its arrival) and its log4j output on stderr (kept in ``log_path``). Every process is started with
``PR_SET_PDEATHSIG`` (it dies with the harness, whatever ends it; forked by one spawner thread
that lives as long as the harness, since the signal follows the forking thread) and is remembered until
stopped, so :func:`stop_all` at exit leaves none behind.
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from xml.sax.saxutils import escape

from kafka_chaos.harness.distribution import (
    COMPLETE_MARKER,
    DEPENDENCY_PLUGIN,
    KafkaDistribution,
    cache_root,
    java_executable,
    log4j_option,
    logging_artifacts,
    maven_executable,
)
from kafka_chaos.harness.errors import HarnessError, UsageError

log = logging.getLogger(__name__)

TOOLS_PACKAGE = "org.apache.kafka.tools"
VERIFIABLE_PRODUCER = f"{TOOLS_PACKAGE}.VerifiableProducer"
VERIFIABLE_CONSUMER = f"{TOOLS_PACKAGE}.VerifiableConsumer"
TRANSACTIONAL_MESSAGE_COPIER = f"{TOOLS_PACKAGE}.TransactionalMessageCopier"
_TOOLS_JAR = "kafka-tools-{version}.jar"
_MVN_TIMEOUT_S = 900
_STOP_WAIT_S = 20.0
# A small heap and the C1 compiler only: three client JVMs share two cores with the cluster.
JVM_OPTIONS = ("-Xms32m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
_PR_SET_PDEATHSIG = 1
# Kafka 4.x's tools log with log4j2 (KIP-653), which ignores a log4j 1 configuration and would
# log its errors to stdout, where the tools print their JSON lines: every client JVM also gets
# this stderr-only log4j2 configuration (each framework ignores the other's flag).
LOG4J2_STDERR = """status = warn
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stderr.ref = stderr
"""


# The options the workload passes exist from 2.5.0 on: TransactionalMessageCopier's --group-mode and
# --use-group-metadata (KIP-447), VerifiableProducer's and VerifiableConsumer's --bootstrap-server.
OLDEST_TOOLS_RELEASE = (2, 5)


def check_tools_release(version: str) -> None:
    """One line when ``version``'s test clients lack the options the workload runs them with."""
    release = tuple(int(x) for x in version.split(".")[:2])
    if release < OLDEST_TOOLS_RELEASE:
        raise UsageError(f"the Java transactional clients need Kafka 2.5 or later (TransactionalMessageCopier "
                         f"--group-mode, --bootstrap-server), not {version}: use --txn-client librdkafka")


# --- the classpath -------------------------------------------------------------------------------

def tools_classpath(distribution: KafkaDistribution) -> str:
    """The classpath the test clients run from: a tarball's ``libs/`` when it holds the tools
    jar, else the tools artifact fetched from Maven Central (once)."""
    if (distribution.libs_dir / _TOOLS_JAR.format(version=distribution.version)).is_file():
        return distribution.classpath
    libs = tools_libs(distribution.version)
    return os.pathsep.join(str(p) for p in sorted(libs.glob("*.jar")))


def tools_pom(version: str) -> str:
    """A throw-away pom whose runtime classpath is ``kafka-tools``' with the logging binding."""
    deps = "".join(f"<dependency><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
                   f"<version>{escape(v)}</version></dependency>"
                   for g, a, v in (("org.apache.kafka", "kafka-tools", version), *logging_artifacts(version)))
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>kafka-chaos</groupId><artifactId>kafka-tools-libs</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n")


def tools_libs(version: str) -> Path:
    """``~/.cache/kafka-chaos/kafka-<version>/tools-libs``, fetched with Maven the first time
    (one fetch at a time; a marker written last)."""
    home = cache_root() / f"kafka-{version}"
    libs = home / "tools-libs"
    marker = home / f"tools{COMPLETE_MARKER}"
    if marker.is_file():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".tools.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.is_file():
            _fetch_tools(version, libs)
            marker.write_text("\n".join(sorted(p.name for p in libs.glob("*.jar"))) + "\n")
    return libs


def _fetch_tools(version: str, libs: Path) -> None:
    log.info("fetching org.apache.kafka:kafka-tools:%s (+ runtime dependencies) into %s", version, libs)
    with tempfile.TemporaryDirectory(prefix="fetch-tools-", dir=libs.parent) as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(tools_pom(version))
        staging = Path(work) / "libs"
        cmd = [maven_executable(), "-q", "-B", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
               f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"fetching kafka-tools {version} with Maven took over {_MVN_TIMEOUT_S} s") from exc
        jar = _TOOLS_JAR.format(version=version)
        if done.returncode != 0 or not (staging / jar).is_file():
            last = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
            raise HarnessError(f"Maven could not fetch org.apache.kafka:kafka-tools:{version}: "
                               f"{(last[-1] if last else 'no output')[:300]}")
        if libs.exists():
            shutil.rmtree(libs)
        staging.rename(libs)


# --- one client process --------------------------------------------------------------------------

_LIVE: set[ClientProcess] = set()
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="java-clients-spawner")
_LIVE_LOCK = threading.Lock()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the harness dies (prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class ClientProcess:
    """One Java client: ``main_class`` on ``classpath`` with ``args(n)`` for its ``n``-th start
    (1, 2, ...: a restart may need new arguments). :meth:`start` (again after :meth:`kill`), :meth:`pause` / :meth:`resume`,
    :meth:`terminate` (SIGTERM: the tools' shutdown hooks close their clients; SIGKILL after a
    bounded wait). With ``respawn``, a process that ends by itself is started again after
    ``respawn_delay_s`` until it is killed or terminated: ``TransactionalMessageCopier`` copies
    what its input held when it was assigned and exits (``runEventLoop``: ``remainingMessages``),
    and exits 1 on any error it does not abort on (a fenced producer among them)."""

    def __init__(self, name: str, main_class: str, args: Callable[[int], Sequence[str]], *, classpath: str, log_path: Path,
                 on_line: Callable[[str, float], None], log4j_config: Path | None = None,
                 respawn: bool = False, respawn_delay_s: float = 1.0) -> None:
        self.name = name
        self.main_class = main_class
        self.args = args
        self.classpath = classpath
        self.log_path = log_path
        self.on_line = on_line
        self.log4j_config = log4j_config
        self.respawn = respawn
        self.respawn_delay_s = respawn_delay_s
        self.starts = 0
        self.respawns = 0
        self.paused = False
        self._lock = threading.RLock()
        self._wanted = False  # started and neither killed nor terminated since: a clean exit respawns
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    def _log4j2_config(self) -> Path:
        """:data:`LOG4J2_STDERR` beside ``log4j_config``, written once (for 4.x's tools)."""
        assert self.log4j_config is not None
        path = self.log4j_config.with_name(f"log4j2-{self.log4j_config.stem}.properties")  # log4j_option: by name
        if not path.is_file():
            path.write_text(LOG4J2_STDERR)
        return path

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, start: int) -> list[str]:
        logging_opt = [log4j_option(self.log4j_config), log4j_option(self._log4j2_config())] if self.log4j_config else []
        return [java_executable(), *JVM_OPTIONS, *logging_opt, "-cp", self.classpath, self.main_class,
                *self.args(start)]

    def start(self) -> None:
        with self._lock:
            self._start()
            self._wanted = True

    def _start(self) -> None:
        if self.alive:
            raise HarnessError(f"client {self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as err:
            err.write(f"--- start {self.starts + 1} at {time.time():.3f}\n".encode())
            err.flush()
            # PR_SET_PDEATHSIG fires when the *thread* that forked exits: every process is forked
            # by the one long-lived spawner thread, not by a step's or a reader's.
            self._proc = _SPAWNER.submit(subprocess.Popen, self.command(self.starts + 1), stdout=subprocess.PIPE,
                                         stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=_die_with_parent).result(_STOP_WAIT_S)
        self.starts += 1
        self.paused = False
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._reader = threading.Thread(target=self._read, args=(self._proc,), name=f"java-{self.name}", daemon=True)
        self._reader.start()
        log.info("client %s started (pid %d)", self.name, self._proc.pid)

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with open(self.log_path.with_suffix(".out"), "ab") as kept:  # the JSON lines as printed, for evidence
            for raw in proc.stdout:
                kept.write(raw)
                try:
                    self.on_line(raw.decode(errors="replace").rstrip("\n"), time.time())
                except Exception:  # noqa: BLE001 - one bad line must not stop the reading
                    log.exception("client %s: line %r", self.name, raw[:200])
        self._after_exit(proc)

    def _after_exit(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            code = proc.wait(_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            return
        if code != 0:
            log.info("client %s (pid %d) exited with %d", self.name, proc.pid, code)
        if self.respawn:
            time.sleep(self.respawn_delay_s)
            with self._lock:
                if self._wanted and self._proc is proc:
                    self.respawns += 1
                    self._start()

    def _signal(self, sig: signal.Signals) -> None:
        if self._proc is None or self._proc.poll() is not None:
            raise HarnessError(f"client {self.name} is not running")
        os.kill(self._proc.pid, sig)

    def pause(self) -> None:
        """SIGSTOP; a respawning process between two runs is waited for (bounded)."""
        deadline = time.monotonic() + _STOP_WAIT_S
        while self.respawn and self._wanted and not self.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        with self._lock:
            self._signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
            self.paused = False

    def kill(self) -> None:
        """SIGKILL and wait for it (a paused process dies too); its last lines read."""
        with self._lock:
            self._wanted = False
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        self._wait(proc, _STOP_WAIT_S)

    def terminate(self, grace_s: float = _STOP_WAIT_S) -> bool:
        """SIGTERM (continued first if paused), SIGKILL after ``grace_s``. Whether it ended by itself."""
        with self._lock:
            self._wanted = False
            proc = self._proc
        if proc is None:
            return True
        clean = True
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                clean = False
                os.kill(proc.pid, signal.SIGKILL)
        self._wait(proc, _STOP_WAIT_S)
        return clean

    def _wait(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"client {self.name} (pid {proc.pid}) still running {timeout:.0f} s after SIGKILL") from exc
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout)
        self.paused = False
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def restart(self) -> None:
        self.kill()
        self.start()


def stop_all() -> None:
    """SIGKILL every client process still running (at exit: nothing is left behind)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for client in live:
        try:
            client.kill()
        except (HarnessError, OSError) as exc:
            log.warning("client %s: %s", client.name, exc)


atexit.register(stop_all)

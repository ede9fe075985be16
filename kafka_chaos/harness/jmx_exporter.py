"""The Prometheus JMX exporter java agent every broker runs: where its jar comes
from, its configuration, and the JVM flag that loads it.

The jar is ``io.prometheus.jmx:jmx_prometheus_javaagent`` from Maven Central, copied once into
``~/.cache/kafka-chaos/jmx-exporter-<version>/`` by ``mvn dependency:copy`` (as
:mod:`harness.distribution` fetches Kafka's jars).  It is *not* put on the broker's class path:
``-javaagent:<jar>=<host>:<port>:<config>`` loads it, and it serves ``/metrics`` over HTTP on
that port.  The configuration (``harness/jmx_exporter.yaml``) lists only the controller and
replica-manager MBeans measured around faults (:mod:`harness.metrics` scrapes them).
"""

from __future__ import annotations

import fcntl
import logging
import re
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from kafka_chaos.harness.distribution import DEPENDENCY_PLUGIN, cache_root, maven_executable
from kafka_chaos.harness.errors import HarnessError

log = logging.getLogger(__name__)

AGENT_GROUP = "io.prometheus.jmx"
AGENT_ARTIFACT = "jmx_prometheus_javaagent"
AGENT_VERSION = "1.0.1"
CONFIG_RESOURCE = "jmx_exporter.yaml"
_MVN_TIMEOUT_S = 300
# -javaagent:<jar>=[host:]port:<config>, as the agent parses its argument.
_AGENT_FLAG = re.compile(rf"^-javaagent:\S*{AGENT_ARTIFACT}[^=]*=(?:[^:]+:)?(\d+):")


def agent_jar_name(version: str = AGENT_VERSION) -> str:
    return f"{AGENT_ARTIFACT}-{version}.jar"


def resolve_agent_jar(version: str = AGENT_VERSION) -> Path:
    """The agent jar in the cache, fetched with Maven the first time (one fetch at a time)."""
    home = cache_root() / f"jmx-exporter-{version}"
    jar = home / agent_jar_name(version)
    if jar.is_file():
        return jar
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not jar.is_file():
            _fetch(version, home)
    return jar


def _fetch(version: str, home: Path) -> None:
    coordinates = f"{AGENT_GROUP}:{AGENT_ARTIFACT}:{version}"
    log.info("fetching %s from Maven Central into %s", coordinates, home)
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=home) as work:
        cmd = [maven_executable(), "-q", "-B", f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={coordinates}",
               f"-DoutputDirectory={work}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, cwd=work)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"fetching {coordinates} with Maven took over {_MVN_TIMEOUT_S} s") from exc
        fetched = Path(work) / agent_jar_name(version)
        if done.returncode != 0 or not fetched.is_file():
            said = next((line for line in (done.stdout + done.stderr).splitlines() if "[ERROR]" in line),
                        f"exit code {done.returncode}")
            raise HarnessError(f"Maven could not fetch {coordinates}: {said.strip()[:300]}")
        fetched.rename(home / agent_jar_name(version))  # same file system: atomic


def config_text() -> str:
    return resources.files("kafka_chaos.harness").joinpath(CONFIG_RESOURCE).read_text()


def write_config(directory: Path) -> Path:
    """The exporter configuration as a file the agent can read (one per run directory)."""
    path = directory / CONFIG_RESOURCE
    path.write_text(config_text())
    return path


def agent_option(jar: Path | str, port: int, config: Path | str, host: str = "127.0.0.1") -> str:
    """The JVM flag that loads the agent serving ``http://host:port/metrics``."""
    return f"-javaagent:{jar}={host}:{port}:{config}"


def metrics_port_of(command: Sequence[str]) -> int | None:
    """The exporter port a node's command line gives its agent (None: no agent), so a cluster
    re-attached from ``cluster.json`` knows it without storing it twice."""
    for arg in command:
        match = _AGENT_FLAG.match(arg)
        if match:
            return int(match.group(1))
    return None

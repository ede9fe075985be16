"""Which Kafka jars the brokers and ZooKeeper run from.

Two sources, both ending in one flat directory of jars (what an Apache Kafka tarball's
``libs/`` holds):

* ``kafka_home`` (``--kafka-home`` / ``$KAFKA_HOME``): an extracted ``kafka_2.13-X.Y.Z.tgz``;
  the version is read from the ``kafka_2.13-X.Y.Z.jar`` in its ``libs/``.
* Maven Central: ``org.apache.kafka:kafka_2.13:<version>`` with its runtime dependencies, plus
  the logging binding the release's tarball ships (Kafka's pom carries none): reload4j
  (``slf4j-reload4j`` + ``reload4j``) up to 3.9, log4j2 (``log4j-slf4j-impl`` + ``log4j-core``)
  from 4.0 (:func:`logging_artifacts`), copied by ``mvn dependency:copy-dependencies`` into
  ``~/.cache/kafka-chaos/kafka-<version>/libs`` once.  A ``.complete`` marker written last makes
  an interrupted fetch start again instead of leaving a half-filled classpath.

Releases 2.4 to 4.x are accepted: ``kafka_2.13`` is on Maven Central from 2.4.0. Kafka 4.0
removed ZooKeeper mode (KIP-833), so a 4.x release runs KRaft clusters only
(``harness.config.modes_running``), and it moved from log4j 1 to log4j2 (KIP-653): its nodes get
``harness/log4j2.properties`` (the same files: server.log, controller.log, state-change.log) through
``-Dlog4j2.configurationFile`` (:func:`log4j_config_name`, :func:`log4j_option`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from kafka_chaos.harness.config import version_tuple
from kafka_chaos.harness.errors import HarnessError, UsageError

log = logging.getLogger(__name__)

DEFAULT_KAFKA_VERSION = "3.9.2"
SCALA_BINARY_VERSION = "2.13"
# The logging binding Kafka 3.9's tarball ships in libs/ (build.gradle: `slf4jReload4j`, `reload4j`).
LOGGING_ARTIFACTS = (
    ("org.slf4j", "slf4j-reload4j", "1.7.36"),
    ("ch.qos.reload4j", "reload4j", "1.2.25"),
)
# Kafka 4.0 logs with log4j2 (KIP-653): its tarball ships log4j-api, log4j-core and the slf4j 1.7
# binding log4j-slf4j-impl, all 2.24.3 (4.0.0's gradle/dependencies.gradle `log4j2`); every 4.x
# still declares slf4j-api 1.7.36 (kafka-clients-4.x.pom), so the 1.7 binding fits them all.
# Declared here, so they win over the log4j2 release a 4.x pom pulls in itself (4.4.0's
# kafka-server: log4j-core 2.25.5): one logging stack for every 4.x node.
LOG4J2_VERSION = "2.24.3"
LOG4J2_ARTIFACTS = (
    ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J2_VERSION),
    ("org.apache.logging.log4j", "log4j-core", LOG4J2_VERSION),
    ("org.apache.logging.log4j", "log4j-api", LOG4J2_VERSION),
)
# The first release with log4j2 (KIP-653).
FIRST_LOG4J2_RELEASE = (4, 0)
NEWEST_MAJOR = 4
# The nodes' logging configurations (package resources of kafka_chaos.harness), by framework.
LOG4J_CONFIG = "log4j.properties"
LOG4J2_CONFIG = "log4j2.properties"
# Pinned so every Maven version copies the same way (the super-POM default differs between them).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
COMPLETE_MARKER = ".complete"
CACHE_ENV = "KAFKA_CHAOS_CACHE"  # overrides ~/.cache/kafka-chaos (tests, CI caches)

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
_KAFKA_JAR = re.compile(rf"^kafka_{re.escape(SCALA_BINARY_VERSION)}-(\d+\.\d+\.\d+)\.jar$")
_MVN_TIMEOUT_S = 900


@dataclass(frozen=True)
class KafkaDistribution:
    version: str  # "3.9.2"
    libs_dir: Path  # flat directory of every jar the broker and ZooKeeper need
    source: str  # "maven" | "kafka_home"

    @property
    def jars(self) -> list[Path]:
        return sorted(p for p in self.libs_dir.iterdir() if p.suffix == ".jar")

    @property
    def classpath(self) -> str:
        return os.pathsep.join(str(p) for p in self.jars)


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` when set, else ``java`` on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise HarnessError("Java not found: install a JRE 11+ (e.g. apt-get install openjdk-17-jre-headless) "
                           "or set JAVA_HOME")
    return found


def maven_executable() -> str:
    found = shutil.which("mvn")
    if found is None:
        raise HarnessError("Maven (mvn) not found: install it (apt-get install maven) to fetch Kafka, "
                           "or point --kafka-home / KAFKA_HOME at an extracted Kafka 3.x tarball")
    return found


OLDEST_KAFKA_VERSION = (2, 4)  # the first kafka_2.13 on Maven Central


def check_version(version: str) -> str:
    """Accept X.Y.Z from 2.4 (the first ``kafka_2.13`` on Maven Central) to 4.x (KRaft only:
    ``harness.config.check_kraft_release`` refuses ZooKeeper mode on it); anything else is one
    clear line."""
    match = _VERSION.match(version.strip())
    if match is None:
        raise UsageError(f"Kafka version {version!r} is not of the form X.Y.Z (e.g. {DEFAULT_KAFKA_VERSION})")
    release = (int(match.group(1)), int(match.group(2)))
    if release[0] > NEWEST_MAJOR:
        raise UsageError(f"Kafka {version} is not supported: use a 2.4-3.9 release, e.g. {DEFAULT_KAFKA_VERSION}, "
                         f"or a 4.x one in KRaft mode")
    if release < OLDEST_KAFKA_VERSION:
        raise UsageError(f"Kafka {version} is not supported: kafka_{SCALA_BINARY_VERSION} is on Maven Central "
                         f"from 2.4.0; use a 2.4-3.9 release, e.g. {DEFAULT_KAFKA_VERSION}")
    return version.strip()


def check_zookeeper_version(version: str) -> str:
    """:func:`check_version` for a release that must run in ZooKeeper mode (a rolling upgrade's
    target): 4.x is one clear line too. Which releases lack ZooKeeper mode is
    ``harness.config.kraft_only``'s to say; that 4.0 also brought log4j2 is a coincidence."""
    from kafka_chaos.harness.config import kraft_only

    checked = check_version(version)
    if kraft_only(checked):
        raise UsageError(f"Kafka {checked} has no ZooKeeper mode (removed in 4.0, KIP-833): "
                         f"use a 2.4-3.9 release, e.g. {DEFAULT_KAFKA_VERSION}")
    return checked


def uses_log4j2(version: str) -> bool:
    """Whether ``version``'s nodes log with log4j2 (4.0+, KIP-653) rather than reload4j."""
    return version_tuple(version.strip())[:2] >= FIRST_LOG4J2_RELEASE


def logging_artifacts(version: str) -> tuple[tuple[str, str, str], ...]:
    """The slf4j binding and backend ``version``'s tarball ships in libs/ (Maven fetches them
    beside Kafka's own pom, which has none)."""
    return LOG4J2_ARTIFACTS if uses_log4j2(version) else LOGGING_ARTIFACTS


def log4j_config_name(version: str) -> str:
    """The harness's logging configuration for ``version``'s nodes: a log4j2 one from 4.0
    (log4j 1 properties would be ignored, every line then on the console)."""
    return LOG4J2_CONFIG if uses_log4j2(version) else LOG4J_CONFIG


def log4j_option(config: Path) -> str:
    """The JVM flag that makes ``config`` the node's logging configuration: log4j2 reads
    ``log4j2.configurationFile`` (a path), log4j 1 / reload4j ``log4j.configuration`` (a URL)."""
    if config.name.startswith("log4j2"):
        return f"-Dlog4j2.configurationFile={config}"
    return f"-Dlog4j.configuration=file:{config}"


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-chaos"


def resolve_distribution(version: str | None = None,
                         kafka_home: str | os.PathLike[str] | None = None) -> KafkaDistribution:
    """The jars to run, fetching them with Maven the first time (see the module doc)."""
    java_executable()  # fail before any download: nothing can run without it
    if kafka_home is None:
        kafka_home = os.environ.get("KAFKA_HOME") or None
    if kafka_home is not None:
        return distribution_from_kafka_home(Path(kafka_home), version)
    return distribution_from_maven(check_version(version or DEFAULT_KAFKA_VERSION))


def distribution_from_kafka_home(kafka_home: Path, version: str | None = None) -> KafkaDistribution:
    libs = kafka_home / "libs"
    try:
        names = [p.name for p in libs.iterdir()]
    except OSError as exc:
        raise HarnessError(f"KAFKA_HOME {kafka_home} is not readable as an extracted Kafka tarball "
                           f"(no readable libs/ directory: {exc.strerror or exc})") from exc
    found = sorted({m.group(1) for n in names if (m := _KAFKA_JAR.match(n))})
    if not found:
        raise HarnessError(f"KAFKA_HOME {kafka_home}: no kafka_{SCALA_BINARY_VERSION}-X.Y.Z.jar in libs/ "
                           "(is it an extracted Apache Kafka tarball?)")
    if len(found) > 1:
        raise HarnessError(f"KAFKA_HOME {kafka_home}: several Kafka versions in libs/ ({', '.join(found)})")
    home_version = check_version(found[0])
    if version is not None and check_version(version) != home_version:
        raise UsageError(f"--kafka-version {version} does not match KAFKA_HOME {kafka_home} (Kafka {home_version})")
    return KafkaDistribution(version=home_version, libs_dir=libs, source="kafka_home")


def distribution_from_maven(version: str) -> KafkaDistribution:
    home = cache_root() / f"kafka-{version}"
    libs = home / "libs"
    if not (home / COMPLETE_MARKER).is_file():
        home.mkdir(parents=True, exist_ok=True)
        # One fetch at a time per version: parallel test sessions share the cache.
        with open(home / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (home / COMPLETE_MARKER).is_file():
                _fetch_with_maven(version, home)
    return KafkaDistribution(version=version, libs_dir=libs, source="maven")


def _artifacts(version: str) -> list[tuple[str, str, str]]:
    return [("org.apache.kafka", f"kafka_{SCALA_BINARY_VERSION}", version), *logging_artifacts(version)]


def maven_pom(version: str) -> str:
    """A throw-away pom whose runtime classpath is the broker's."""
    deps = "".join(
        f"<dependency><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
        f"<version>{escape(v)}</version></dependency>"
        for g, a, v in _artifacts(version))
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>kafka-chaos</groupId><artifactId>kafka-libs</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n")


def _fetch_with_maven(version: str, home: Path) -> None:
    mvn = maven_executable()
    coordinates = ", ".join(":".join(a) for a in _artifacts(version))
    log.info("fetching Kafka %s from Maven Central into %s: %s (+ runtime dependencies)",
             version, home / "libs", coordinates)
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=home) as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(maven_pom(version))
        staging = Path(work) / "libs"
        cmd = [mvn, "-q", "-B", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
               f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"fetching Kafka {version} with Maven took over {_MVN_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            raise HarnessError(f"Maven could not fetch Kafka {version}: {_mvn_error(done.stdout + done.stderr)}")
        jars = sorted(p.name for p in staging.glob("*.jar")) if staging.is_dir() else []
        if f"kafka_{SCALA_BINARY_VERSION}-{version}.jar" not in jars:
            raise HarnessError(f"Maven finished but kafka_{SCALA_BINARY_VERSION}-{version}.jar is not among "
                               f"the {len(jars)} jars it copied")
        libs = home / "libs"
        if libs.exists():  # a half-done earlier fetch
            shutil.rmtree(libs)
        staging.rename(libs)
    (home / COMPLETE_MARKER).write_text("\n".join(jars) + "\n")
    log.info("fetched %d jars for Kafka %s", len(jars), version)


def _mvn_error(output: str) -> str:
    """Maven's first [ERROR] line, shortened: the CLI prints errors as one line."""
    for line in output.splitlines():
        if "[ERROR]" in line and line.strip() != "[ERROR]":
            return line.replace("[ERROR]", "").strip()[:300]
    lines = [line for line in output.splitlines() if line.strip()]
    return (lines[-1][:300] if lines else "no output")

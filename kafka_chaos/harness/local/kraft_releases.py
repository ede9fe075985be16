"""A migrated cluster's KRaft nodes moved to another Kafka release, one at a time, and its
features finalized: the rest of the journey off ZooKeeper (docs/journey.md).

Kafka 4.x's upgrade notes (``docs/upgrade.html`` 4.4, "Upgrading Servers to 4.4.0 from any version
3.3.x through 4.3.0"; 4.3's the same from 3.3.x through 4.2.0): a ZooKeeper cluster is migrated to
KRaft first; then each node is shut down, given the new code and restarted, one at a time; then
``bin/kafka-features.sh --bootstrap-server ... upgrade --release-version 4.x`` finalizes the
metadata version (and every other feature's default level for it).

The local launcher's side (:class:`LocalKraftReleases`, a mixin of
:class:`harness.local.migration.LocalMigrationCluster`): a stopped controller or KRaft broker gets
the release's class path, its logging configuration (log4j2 from 4.0, KIP-653) and
``server.properties`` rendered with the release's property names (:mod:`harness.config`); its
directory, data, ports, node id and JMX exporter stay. The class-data archive is the old class
path's, so the rolled node runs without one. :func:`command_for_release` is the pure part.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.cluster import DESCRIBE_MARK
from kafka_chaos.harness.config import KRAFT_MODE, ClusterConfig, render_properties
from kafka_chaos.harness.distribution import (
    KafkaDistribution,
    java_executable,
    log4j_config_name,
    log4j_option,
    resolve_distribution,
)
from kafka_chaos.harness.local.nodes import HOST, LocalNode, read_properties
from kafka_chaos.harness.migration.properties import (
    KRAFT,
    kraft_broker_properties,
    migration_controller_properties,
)

log = logging.getLogger(__name__)

# What a KRaft controller logs once its metadata loader has replayed the log up to the quorum's
# high watermark: MetadataLoader.maybePublishMetadata, "The loader finished catching up to the
# current high water mark of {}" (metadata MetadataLoader.java 3.9.0 line 249, 4.0.0 line 247,
# 4.3.1 line 270). A voter rolled before the previous one caught up could leave no majority.
CAUGHT_UP = "The loader finished catching up to the current high water mark"
FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"  # what kafka-features.sh runs
FEATURE_TOOL_TIMEOUT_S = 120.0
_ARCHIVE_FLAG = "-XX:SharedArchiveFile="


def _run_tool(argv: Sequence[str]) -> tuple[int, str]:
    """Run a Kafka tool to its end (bounded); its exit code and what it printed, logging lines
    (SLF4J's, log4j2's status logger) left out."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=FEATURE_TOOL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{' '.join(argv[4:])} did not finish within {FEATURE_TOOL_TIMEOUT_S:.0f} s") from None
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if line.strip() and not line.startswith(("SLF4J", "ERROR StatusLogger", "WARN StatusLogger"))]
    return done.returncode, "\n".join(lines)


def command_for_release(command: Sequence[str], classpath: str, logging_flag: str) -> list[str]:
    """Pure: a node's JVM command line (:func:`harness.local.nodes.jvm_command`) for another
    release -- its ``-cp`` replaced by ``classpath``, its logging flag (``-Dlog4j.configuration=``
    or ``-Dlog4j2.configurationFile=``) by ``logging_flag``, and its class-data archive dropped (an
    archive fits one class path only); every other flag (heap, JMX agent, logs dir) and the main
    class and properties file kept."""
    out: list[str] = []
    replace_next = False
    for arg in command:
        if replace_next:
            out.append(classpath)
            replace_next = False
        elif arg == "-cp":
            out.append(arg)
            replace_next = True
        elif arg.startswith(("-Dlog4j.configuration=", "-Dlog4j2.configurationFile=")):
            out.append(logging_flag)
        elif not arg.startswith(_ARCHIVE_FLAG):
            out.append(arg)
    if "-cp" not in out or replace_next:
        raise HarnessError(f"a node command line without a class path: {' '.join(command)}")
    return out


class LocalKraftReleases:
    """:class:`harness.cluster.KraftReleaseRoller` for the migrating cluster's nodes once the
    migration is finalised (``set_node_release`` is refused before: a 4.x node cannot migrate)."""

    config: ClusterConfig
    distribution: KafkaDistribution
    _controllers: dict[int, LocalNode]
    _brokers: dict[int, LocalNode]
    _roles: dict[int, str]
    _voters: dict[int, str]
    _lock: threading.RLock
    if TYPE_CHECKING:  # the launcher's own (declared for the type checker only: a definition would shadow theirs)
        @property
        def zookeeper_connect(self) -> str: ...

        @property
        def run_dir(self) -> Path: ...

        @property
        def finalized(self) -> bool: ...

    def _node_releases(self) -> dict[int, KafkaDistribution]:
        """Node id -> the release a roll moved it to (absent: the cluster's)."""
        releases: dict[int, KafkaDistribution] | None = getattr(self, "_rolled", None)
        if releases is None:
            releases = {}
            setattr(self, "_rolled", releases)
        return releases

    def node_version(self, node_id: int) -> str:
        """The release the controller or broker ``node_id`` runs (or runs from its next start)."""
        self._release_target(node_id)
        return self._node_releases().get(node_id, self.distribution).version

    def node_versions(self) -> dict[int, str]:
        """Every provisioned controller's and every broker's release."""
        return {n: self.node_version(n) for n in [*sorted(self._controllers), *sorted(self._brokers)]}

    def set_node_release(self, node_id: int, kafka_version: str) -> None:
        """The stopped controller or KRaft broker ``node_id`` runs ``kafka_version`` from its next
        start: the release's jars (resolved as the cluster's were), logging configuration and
        property names; everything else as it was."""
        with self._lock:
            node = self._release_target(node_id)
            if node_id in self._brokers and self._roles.get(node_id) != KRAFT:
                raise HarnessError(f"broker {node_id} runs as {self._roles.get(node_id)}, not as a KRaft broker")
            if not self.finalized:
                raise HarnessError(f"node {node_id}: the migration is not finalised; a node moves to another release "
                                   "once every node is a KRaft node (the 4.x upgrade notes' order)")
            if node.running():
                raise HarnessError(f"node {node_id} runs: stop it before moving it to Kafka {kafka_version}")
            distribution = (self.distribution if kafka_version == self.distribution.version
                            else resolve_distribution(kafka_version))
            config = replace(self.config, mode=KRAFT_MODE)  # a KRaft node now, on any release
            if node_id in self._controllers:
                props = migration_controller_properties(
                    config, node_id, voters=self._voters, address=self._voters[node_id],
                    log_dir=str(node.directory / "data"), zookeeper_connect=self.zookeeper_connect,
                    kafka_version=distribution.version, migrating=False)
            else:
                props = kraft_broker_properties(config, node_id, voters=self._voters, address=f"{HOST}:{node.port}",
                                                log_dirs=read_properties(node.config_file)["log.dirs"],
                                                kafka_version=distribution.version)
            node.config_file.write_text(render_properties(props))
            node.command = command_for_release(node.command, distribution.classpath,
                                               log4j_option(self._logging_config(distribution.version)))
            self._node_releases()[node_id] = distribution
            log.info("node %d runs Kafka %s from its next start", node_id, distribution.version)

    def _logging_config(self, kafka_version: str) -> Path:
        """The run directory's logging configuration for ``kafka_version``'s nodes, written once."""
        name = log4j_config_name(kafka_version)
        path = self.run_dir / name
        if not path.exists():
            path.write_bytes(resources.files("kafka_chaos.harness").joinpath(name).read_bytes())
        return path

    def wait_controller_caught_up(self, node_id: int, since: int, timeout: float) -> None:
        """Until the controller's server.log, past byte ``since``, says its metadata loader caught
        up with the quorum's high watermark (:data:`CAUGHT_UP`); HarnessError after ``timeout``."""
        node = self._controllers.get(node_id)
        if node is None:
            raise HarnessError(f"{node_id} is not a controller here")
        deadline = time.monotonic() + timeout
        while True:
            if self._caught_up(node.server_log, since):
                return
            if not node.running():
                raise HarnessError(node.describe_failure("exited while catching up with the quorum"))
            if time.monotonic() >= deadline:
                raise HarnessError(f"controller {node_id} did not catch up with the quorum within {timeout:.0f} s")
            time.sleep(0.2)

    @staticmethod
    def _caught_up(server_log: Path, since: int) -> bool:
        try:
            with open(server_log, "rb") as f:
                f.seek(since)
                return CAUGHT_UP.encode() in f.read()
        except OSError:
            return False

    def server_log_size(self, node_id: int) -> int:
        """How many bytes the node's server.log holds now (where a later wait starts reading)."""
        node = self._release_target(node_id)
        try:
            return node.server_log.stat().st_size
        except OSError:
            return 0

    def upgrade_features(self, release_version: str, tool_version: str,
                         features: Mapping[str, int] | None = None) -> str:
        """``kafka-features.sh --bootstrap-server <brokers> upgrade --release-version X`` run from
        ``tool_version``'s tools (``org.apache.kafka.tools.FeatureCommand``); with ``features``,
        ``upgrade --feature name=level ...`` instead. Returns what the tool printed; HarnessError
        with it when the tool fails."""
        from kafka_chaos.harness.java_clients import tools_classpath

        distribution = self.distribution if tool_version == self.distribution.version else resolve_distribution(tool_version)
        bootstrap = ",".join(node.bootstrap for _, node in sorted(self._brokers.items()) if node.running())
        if features:
            what = [arg for name, level in sorted(features.items()) for arg in ("--feature", f"{name}={level}")]
        else:
            what = ["--release-version", release_version]
        tool = [java_executable(), "-Xmx256m", "-cp", tools_classpath(distribution), FEATURE_COMMAND,
                "--bootstrap-server", bootstrap]
        log.info("finalizing: upgrade %s", " ".join(what))
        code, said = _run_tool([*tool, "upgrade", *what])
        if code != 0:
            raise HarnessError(f"kafka-features upgrade {' '.join(what)} exited {code}: "
                               f"{' | '.join(said.splitlines()[-6:])}")
        # what the cluster finalized, kraft.version included (a control record, not a FeatureLevelRecord)
        _, described = _run_tool([*tool, "describe"])
        (self.run_dir / "kafka-features-upgrade.log").write_text(f"{said}\n{DESCRIBE_MARK}\n{described}\n")
        return f"{said}\n{DESCRIBE_MARK}\n{described}"

    def _release_target(self, node_id: int) -> LocalNode:
        node = self._controllers.get(node_id) or self._brokers.get(node_id)
        if node is None:
            raise HarnessError(f"no node {node_id}: the controllers are {sorted(self._controllers)}, "
                               f"the brokers {sorted(self._brokers)}")
        return node

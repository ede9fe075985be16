"""What both KRaft launchers share: formatting every node's storage with Kafka's own tool, and
the cluster properties that follow from the configuration alone."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.config import ClusterConfig, broker_session_timeout_ms, shared_broker_settings
from kafka_chaos.harness.distribution import KafkaDistribution, java_executable
from kafka_chaos.harness.kraft.observer import KraftObserver

STORAGE_TOOL = "kafka.tools.StorageTool"  # what kafka-storage.sh runs
FORMAT_TIMEOUT_S = 90.0


def format_storage(distribution: KafkaDistribution, jvm_options: Sequence[str], cluster_id: str,
                   configs: Mapping[str, Path], logs: Path,
                   extra_args: Mapping[str, Sequence[str]] | None = None) -> None:
    """``kafka-storage.sh format --cluster-id=<cluster id> -c <server.properties>`` for every node at once
    (name -> its properties, whose ``log.dirs`` the tool formats), plus the node's ``extra_args``
    (a dynamic quorum's ``--initial-controllers ...``); each tool's output in
    ``logs/<name>-format.log``. One HarnessError naming every node that failed."""
    java = java_executable()
    started = []
    for name, config_file in configs.items():
        out_path = logs / f"{name}-format.log"
        out = open(out_path, "wb")
        # "--cluster-id=<id>", not "-t <id>": a ZooKeeper cluster's id (a migration's) starts with
        # '-' one time in 64, and the tool's parser then reads it as an option (findings §8).
        argv = [java, "-Xmx256m", *jvm_options, "-cp", distribution.classpath, STORAGE_TOOL,
                "format", f"--cluster-id={cluster_id}", "-c", str(config_file), *(extra_args or {}).get(name, ())]
        started.append((name, out_path, subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT), out))
    failures = []
    for name, out_path, proc, out in started:
        try:
            code: int | None = proc.wait(timeout=FORMAT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
        finally:
            out.close()
        if code != 0:
            said = out_path.read_text(errors="replace").strip().splitlines()
            failures.append(f"{name}: storage format {'timed out' if code is None else f'exited {code}'}"
                            f"{': ' + said[-1] if said else ''}")
    if failures:
        raise HarnessError("; ".join(failures))


class KraftBasics:
    """The cluster properties both KRaft launchers derive from their configuration."""

    config: ClusterConfig
    distribution: KafkaDistribution
    mode = "kraft"

    @property
    def kafka_version(self) -> str:
        return self.distribution.version

    @property
    def broker_ids(self) -> list[int]:
        return self.config.broker_ids()

    @property
    def controller_ids(self) -> list[int]:
        return self.config.controller_ids()

    @property
    def zookeeper_connect(self) -> str:
        raise HarnessError("a KRaft cluster has no ZooKeeper")

    def broker_settings(self) -> dict[str, str]:
        return shared_broker_settings(self.config, self.distribution.version)

    def session_timeout_s(self) -> float:
        """The brokers' ``broker.session.timeout.ms``: KRaft's counterpart of the ZooKeeper session."""
        return broker_session_timeout_ms(self.config) / 1000

    def metadata_log_dirs(self) -> list[Path]:
        raise NotImplementedError

    def observer(self, topics: Sequence[str] | None = None) -> KraftObserver:
        """An unstarted observer of this cluster's metadata log."""
        return KraftObserver(self.metadata_log_dirs(), topics=topics)

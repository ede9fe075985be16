"""A failed log directory on a real KRaft cluster (JBOD, KIP-858): ``leader_log_dir_failure_kraft``
through the ordinary runner on Kafka 3.9.2, 1 controller and 3 brokers with two log directories
each (the metadata log in a third: ``harness.config.KRAFT_METADATA_SUBDIR``). The directory holding
t-0 on its leader is moved aside; the broker's heartbeat lists it in ``offlineLogDirs`` and the
controller's ``handleDirectoriesOffline`` moves what the broker led from it -- every check passes
against the KRaft model, partition epochs included -- and says so in its own log ("Directories
[...] in broker N marked offline, remaining directories: [...]", ReplicationControlManager.java 3.9
branch line 1424). The repair restarts the broker, which registers both directories again.
"""

from __future__ import annotations

import re
from pathlib import Path

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import KafkaDistribution
from kafka_chaos.harness.local.kraft import LocalKraftCluster

RELEASE = "3.9.2"
MARKED_OFFLINE = re.compile(r"Directories \[(\S+)\] in broker (\d+) marked offline, remaining directories: \[(\S+)\]")


class LogKeepingKraftCluster(LocalKraftCluster):
    """Keeps its controllers' log lines (read before its run directory goes)."""

    controller_lines: list[str] = []

    def destroy(self) -> None:
        if self._run_dir is not None and self._run_dir.exists():
            for path in sorted(self._run_dir.glob("controller-*/logs/*.log")):
                LogKeepingKraftCluster.controller_lines += path.read_text(errors="replace").splitlines()
        super().destroy()


def test_a_failed_log_directory_moves_what_it_led_as_the_kraft_model_says(tmp_path: Path) -> None:
    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.records.writer import read_records
    from kafka_chaos.scenarios.plans import catalogue

    LogKeepingKraftCluster.controller_lines = []

    def keeping(backend: str, config: ClusterConfig, distribution: KafkaDistribution) -> LocalKraftCluster:
        assert (backend, config.mode, config.log_dirs) == ("local", "kraft", 2)
        return LogKeepingKraftCluster(config, distribution, run_dir=tmp_path / "cluster")

    results = tmp_path / "run"
    scenarios = catalogue.by_names(["leader_log_dir_failure_kraft"])
    rc = run_scenarios(scenarios, seed=4701, results_dir=results, report=False, open_cluster=keeping,
                       kafka_version=RELEASE)
    records = read_records(results).records
    failed = [(r.fault, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    # judged at the failure and at the repair, partition epochs exactly
    assert {r.fault for r in records if r.check == "oracle_leader"} >= {"log_dir_failure", "log_dir_failure/heal"}
    assert any(r.check == "oracle_partition_epoch" and r.fault == "log_dir_failure" and r.expected["rule"] == "exact"
               and r.expected["predicted"] > r.expected["before"] for r in records)
    # the controller's own word: one directory of one broker offline, the other left
    offline = [m for m in map(MARKED_OFFLINE.search, LogKeepingKraftCluster.controller_lines) if m]
    assert len(offline) == 1, LogKeepingKraftCluster.controller_lines[-40:]
    assert offline[0].group(1) != offline[0].group(3)

"""A broker's *only* log directory failed by hand on a real cluster (``kafka-chaos cluster
fail-log-dir``), then repaired (``repair-log-dir``): Kafka 3.9 halts the broker once it notices
(``LogManager.handleLogDirFailure``: no live directory left, ``Exit.halt(1)``), ZooKeeper then
shows what the oracle predicts for ``BrokerFailure``, and the repair starts it again on its data.
(A broker with two directories that keeps running is the catalogue's ``leader_log_dir_failure`` and
``follower_log_dir_failure``, run by the conformance suite.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness import metadata
from kafka_chaos.harness.local.cluster import STATE_FILE, LocalCluster
from kafka_chaos.harness.observer import ZkObserver
from kafka_chaos.harness.processes import processes_mentioning
from kafka_chaos.oracle import BrokerFailure, predict
from kafka_chaos.scenarios.model.snapshots import cluster_state_of, mismatches


def kafka_chaos(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", *args], capture_output=True, text=True,
                          timeout=240, cwd=Path(__file__).parents[2])


def test_the_only_log_directory_fails_the_broker_halts_and_the_repair_restarts_it(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    sd = ["--state-dir", str(state_dir)]
    try:
        up = kafka_chaos("cluster", "up", "--brokers", "2", *sd,
                         "--set", "replica.high.watermark.checkpoint.interval.ms=500")
        assert up.returncode == 0, up.stderr
        cluster = LocalCluster.attach(state_dir)
        topic = "ld"
        with ZkObserver(cluster.zookeeper_connect, topics=[topic]) as observer:
            metadata.create_topic(cluster.bootstrap_servers, topic, {0: (1, 2), 1: (2, 1)})
            before = observer.wait_until(lambda s: s.has_topic(topic) and len(s.topic_partitions(topic)) == 2 and all(
                len(p.isr) == 2 for p in s.topic_partitions(topic)), timeout=30, description="topic in sync")
            want = predict(cluster_state_of(before, [topic], {}), [BrokerFailure((1,))]).state

            wait_until(lambda: (topic, 0) in cluster.log_dir_partitions(1, 0), timeout=30, interval=0.1,
                       description="broker 1 to create ld-0's log")  # a moment after the ISR znode
            wrong = kafka_chaos("cluster", "fail-log-dir", "1", "--dir", "1", *sd)
            assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1 and "0..0" in wrong.stderr
            failed = kafka_chaos("cluster", "fail-log-dir", "1", *sd)
            assert failed.returncode == 0, failed.stderr
            assert "last live directory: the broker halts" in failed.stdout and "ld-0" in failed.stdout
            data = Path(cluster.log_dirs(1)[0])
            assert data.is_file()

            wait_until(lambda: not cluster.broker_running(1), timeout=30, interval=0.2,
                       description="broker 1 to halt")
            log = (state_dir / "broker-1" / "logs" / "server.log").read_text(errors="replace")
            assert "have failed" in log  # "Shutdown broker because all log dirs in ... have failed"
            observer.wait_until(lambda s: not mismatches(s, want, [topic]), timeout=30,
                                description="the predicted state once broker 1's session expired")
            status = kafka_chaos("cluster", "status", *sd)
            assert status.returncode == 0 and "log dir(s) 0 FAILED" in status.stdout, status.stdout

            repaired = kafka_chaos("cluster", "repair-log-dir", "1", *sd)
            assert repaired.returncode == 0, repaired.stderr
            assert data.is_dir() and json.loads((state_dir / STATE_FILE).read_text())["brokers"][0]["pid"]
            observer.wait_until(lambda s: 1 in s.live_brokers and all(
                len(p.isr) == 2 for p in s.topic_partitions(topic)), timeout=60,
                description="broker 1 back in every ISR")
            again = kafka_chaos("cluster", "repair-log-dir", "1", *sd)
            assert again.returncode == 2 and "no failed log directory" in again.stderr
        down = kafka_chaos("cluster", "down", *sd)
        assert down.returncode == 0, down.stderr
    finally:
        for pid in processes_mentioning(f"{state_dir}{os.sep}"):
            os.kill(pid, signal.SIGKILL)

"""`kafka-chaos cluster up --backend containers`: its containers outlive the command, later verbs
re-attach through cluster.json, `cluster prune` keeps them while the state dir names the run, and
`cluster down` removes everything.  One broker, to keep it to seconds; every other verb on
containers runs in benchmarks/cluster_cli_bench.py (3 brokers, the control-plane listener)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from tests.containers.conftest import assert_nothing_left

ROOT = Path(__file__).resolve().parents[2]


def test_cluster_up_outlives_the_command_and_down_removes_it(
        kafka_image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_chaos.harness.containers.cluster import ContainerCluster
    from kafka_chaos.harness.containers.prune import prune
    from kafka_chaos.harness.metadata import fetch_metadata

    state_dir = tmp_path / "cluster"
    # A process of its own: what it started must survive its exit (no atexit teardown, no Ryuk).
    up = subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", "cluster", "up", "--backend", "containers",
                         "--brokers", "1", "--state-dir", str(state_dir)],
                        cwd=ROOT, capture_output=True, text=True, timeout=180,
                        env={**os.environ, "TESTCONTAINERS_RYUK_DISABLED": "false"})
    assert up.returncode == 0, up.stderr[-2000:]
    state = json.loads((state_dir / "cluster.json").read_text())
    run_id = state["run_id"]
    try:
        assert state["backend"] == "containers" and state["image"].startswith("kafka-chaos-kafka:")
        assert f"bootstrap servers: {state['bootstrap_servers']}" in up.stdout
        # The containers still serve after `up` exited.
        assert sorted(fetch_metadata(state["bootstrap_servers"], topics=[]).brokers) == [1]
        cluster = ContainerCluster.attach(state_dir)
        assert cluster.any_running() and cluster.bootstrap_servers == state["bootstrap_servers"]
        assert run_id not in prune().runs  # its creator is gone, its state file keeps it
        assert main(["cluster", "pause", "1", "--state-dir", str(state_dir)]) == 0
        assert main(["cluster", "status", "--state-dir", str(state_dir)]) == 0
        assert f"container kafka-chaos-{run_id}-broker-1  PAUSED" in capsys.readouterr().out
        assert main(["cluster", "resume", "1", "--state-dir", str(state_dir)]) == 0
        assert main(["cluster", "delay", "1", "--ms", "10", "--state-dir", str(state_dir)]) == 2
        assert "containers launcher cannot delay links" in capsys.readouterr().err
        assert main(["cluster", "status", "--state-dir", str(state_dir)]) == 0
        assert "running, registered" in capsys.readouterr().out
        assert main(["cluster", "down", "--state-dir", str(state_dir)]) == 0
        assert not state_dir.exists()
    finally:
        if state_dir.exists():
            main(["cluster", "down", "--state-dir", str(state_dir)])
    assert_nothing_left(run_id)

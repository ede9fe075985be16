"""`kafka-chaos cluster up --backend containers --mode kraft`: a Kafka 4.x KRaft cluster whose
containers outlive the command, later verbs re-attaching through cluster.json (status with the
quorum leader, a broker killed and started, a controller paused and resumed, the ZooKeeper-mode
verbs refused in one line), `cluster prune` keeping it while the state dir names the run, and
`cluster down` removing every container, the network and the state dir. One controller and one
broker, to keep it short."""

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
RELEASE = "4.4.0"  # KRaft only (ZooKeeper mode ended with 3.9)


def test_kraft_cluster_up_on_containers_outlives_the_command_and_down_removes_it(
        kafka_image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.containers.prune import prune
    from kafka_chaos.harness.metadata import fetch_metadata

    state_dir = tmp_path / "cluster"
    # A process of its own: what it started must survive its exit (no atexit teardown, no Ryuk).
    up = subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", "cluster", "up", "--backend", "containers",
                         "--mode", "kraft", "--kafka-version", RELEASE, "--brokers", "1",
                         "--state-dir", str(state_dir)],
                        cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env={**os.environ, "TESTCONTAINERS_RYUK_DISABLED": "false"})
    assert up.returncode == 0, up.stderr[-2000:]
    state = json.loads((state_dir / "cluster.json").read_text())
    run_id = state["run_id"]
    try:
        assert (state["backend"], state["mode"], state["kafka_version"]) == ("containers", "kraft", RELEASE)
        assert f"bootstrap servers: {state['bootstrap_servers']}" in up.stdout
        [controller] = state["controller_containers"]
        assert Path(controller["data_dir"]).is_dir()  # the metadata log, on the host, in the state dir
        # The containers still serve after `up` exited.
        assert sorted(fetch_metadata(state["bootstrap_servers"], topics=[]).brokers) == [1]
        cluster = ContainerKraftCluster.attach(state_dir)
        assert cluster.any_running() and cluster.bootstrap_servers == state["bootstrap_servers"]
        assert cluster.cluster_id == state["cluster_id"]
        assert run_id not in prune().runs  # its creator is gone, its state file keeps it

        def cli(*verb: str) -> tuple[int, str, str]:
            rc = main(["cluster", *verb, "--state-dir", str(state_dir)])
            out = capsys.readouterr()
            return rc, out.out, out.err

        rc, out, _ = cli("status")
        assert rc == 0 and f"quorum leader: {controller['controller']} " in out, out
        assert f"container kafka-chaos-{run_id}-broker-1  running, active" in out
        assert cli("kill", "1")[:2] == (0, "broker 1 killed\n")
        assert f"container kafka-chaos-{run_id}-broker-1  DOWN" in cli("status")[1]
        assert cli("start", "1")[:2] == (0, "broker 1 started\n")  # once unfenced with a new epoch
        assert cli("pause", "controller-leader")[0] == 0
        assert f"container kafka-chaos-{run_id}-controller-{controller['controller']}  PAUSED  (leader)" \
            in cli("status")[1]
        assert cli("resume", f"controller-{controller['controller']}")[0] == 0
        rc, _, err = cli("cut", "1")
        assert rc == 2 and err.strip().endswith("is a KRaft one: this verb is ZooKeeper mode's"), err
        assert cli("down")[:2] == (0, f"cluster in {state_dir.absolute()} stopped and removed\n")
        assert not state_dir.exists()
    finally:
        if state_dir.exists():
            main(["cluster", "down", "--state-dir", str(state_dir)])
    assert_nothing_left(run_id)

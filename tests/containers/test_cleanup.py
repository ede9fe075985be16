"""A container run leaves nothing behind — after an error, on Ctrl-C, on SIGTERM — and
``prune`` removes what a SIGKILLed run left, but not a live run's objects."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.errors import HarnessError
from tests.containers.conftest import assert_nothing_left

ONE_BROKER = ClusterConfig(brokers=1)


def test_a_failed_start_removes_what_it_started(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.containers.cluster import ContainerCluster

    # Kafka refuses to start with a non-numeric thread count: the broker container exits.
    broken = ClusterConfig(brokers=1, cluster_overrides={"num.io.threads": "many"})
    cluster = ContainerCluster(broken, kafka_distribution)
    with pytest.raises(HarnessError, match="broker-1"):
        with cluster:
            pass
    assert_nothing_left(cluster.run_id)


def test_ctrl_c_inside_the_with_block_removes_everything(kafka_image: str, kafka_distribution) -> None:  # type: ignore[no-untyped-def]
    from kafka_chaos.harness.containers.cluster import ContainerCluster

    cluster = ContainerCluster(ONE_BROKER, kafka_distribution)
    with pytest.raises(KeyboardInterrupt):
        with cluster:
            assert cluster.broker_running(1)
            raise KeyboardInterrupt
    assert_nothing_left(cluster.run_id)


def _child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=os.getcwd())


def _read_run_id(child: subprocess.Popen[str], timeout: float = 180) -> str:
    """The child prints its run id once its objects exist."""
    assert child.stdout is not None
    deadline = time.monotonic() + timeout
    line = child.stdout.readline()  # blocks until the child prints or exits
    if not line.startswith("run ") or time.monotonic() > deadline:
        child.kill()
        _, err = child.communicate(timeout=30)
        pytest.fail(f"child did not start its cluster: {line!r} {err[-2000:]}")
    return line.split()[1]


def test_sigterm_tears_the_cluster_down(kafka_image: str) -> None:
    child = _child("""
        import sys, time
        from kafka_chaos.harness.config import ClusterConfig
        from kafka_chaos.harness.containers.cluster import ContainerCluster
        from kafka_chaos.harness.distribution import resolve_distribution
        cluster = ContainerCluster(ClusterConfig(brokers=1), resolve_distribution())
        cluster.start()  # no `with`: teardown's atexit + SIGTERM handling must clean up
        print("run", cluster.run_id, flush=True)
        time.sleep(300)
    """)
    run_id = _read_run_id(child)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=120) == 128 + signal.SIGTERM
    assert_nothing_left(run_id)


def test_prune_removes_a_killed_runs_objects_and_keeps_live_ones(docker_engine: None) -> None:
    from kafka_chaos.harness.containers.image import docker_client
    from kafka_chaos.harness.containers.labels import new_run_id, run_labels
    from kafka_chaos.harness.containers.prune import labelled_objects, prune

    # A run whose owner dies by SIGKILL: no handler runs, its network stays.
    child = _child("""
        from kafka_chaos.harness.containers.image import docker_client
        from kafka_chaos.harness.containers.labels import new_run_id, run_labels
        run = new_run_id()
        docker_client().networks.create(f"kafka-chaos-{run}-net", labels=run_labels(run))
        print("run", run, flush=True)
        import time; time.sleep(300)
    """)
    dead_run = _read_run_id(child, timeout=60)
    child.kill()
    child.wait(timeout=30)
    client = docker_client()
    live_run = new_run_id()  # owned by this (living) pytest process
    client.networks.create(f"kafka-chaos-{live_run}-net", labels=run_labels(live_run))
    try:
        # Only these two runs: other engineers' or jobs' runs on this engine are not ours to judge.
        report = prune(runs={dead_run, live_run}, client=client)
        assert report.runs == (dead_run,) and report.kept_live_runs == (live_run,)
        assert_nothing_left(dead_run)
        assert labelled_objects(client, live_run)["networks"]
        assert prune(all_runs=True, runs={live_run}, client=client).runs == (live_run,)
        assert_nothing_left(live_run)
    finally:
        for network in labelled_objects(client, live_run)["networks"]:
            network.remove()
        client.close()

"""explore starts the next schedule's cluster once the current schedule has healed
(``ClusterPool.prepare``): the next schedule runs on it, and nothing of either cluster, nor of
one prepared for a schedule that never runs, outlives the pool."""

from __future__ import annotations

import uuid
from pathlib import Path

import psutil
import pytest

from kafka_chaos.app.explore import Explorer, ShrinkBudget, explore_one
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.processes import processes_mentioning
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate
from kafka_chaos.scenarios.run.pool import ClusterPool
from kafka_chaos.scenarios.run.runner import RunOptions

SEED = 5
CONFIG = GeneratorConfig(steps=1, brokers=3, max_partitions=2, topics=1, faults=("preferred_election",))
NO_SHRINKING = ShrinkBudget(0.0, confirm=0)
def cluster_nodes() -> set[int]:
    """The JVMs this test process started (ZooKeeper, brokers: the pool's nodes are its children).
    Not every process mentioning a run directory's prefix: a ``flock /tmp/kafka-chaos-cluster.lock``
    waiter, or a JVM of the CI's other lane whose class path is in ``/tmp/kafka-chaos-ci.*``."""
    nodes = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "java" and child.status() != psutil.STATUS_ZOMBIE:
                nodes.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return nodes


@pytest.mark.nightly  # the test command's budget: explore runs in test_explore_shrink.py (docs/nightly.md)
def test_the_next_schedule_runs_on_a_cluster_started_while_the_last_one_drained(tmp_path: Path) -> None:
    needs = [generate(SEED, i, CONFIG).scenario().needs for i in range(3)]
    assert len(set(needs)) == 3, "each schedule needs a cluster of its own (broker ids differ)"
    before = cluster_nodes()
    lines: list[str] = []
    distribution = resolve_distribution(None, None)
    options = RunOptions(run_id=uuid.uuid4().hex[:12], seed=SEED, results_dir=tmp_path,
                         kafka_version=distribution.version)
    pool = ClusterPool("local", distribution, lines.append)
    explorer = Explorer(tmp_path, pool, options, lines.append)
    try:
        first = explore_one(explorer, SEED, 0, CONFIG, NO_SHRINKING, then=1)
        first_dir = pool.held().run_dir
        # Its nodes were spawned by the pool's worker thread, which outlives the start: a node's
        # PR_SET_PDEATHSIG fires when the thread that spawned it exits.
        second = explore_one(explorer, SEED, 1, CONFIG, NO_SHRINKING, then=2)
        second_dir = pool.held().run_dir
        assert processes_mentioning(f"{second_dir}/"), "the second cluster's nodes are running"
    finally:
        pool.release()  # also destroys the cluster prepared for schedule 2, which never runs
    assert not first.get("failed") and first["steps_checked"] == 1
    assert not second.get("failed") and second["steps_checked"] == 1
    started = [line for line in lines if line.startswith(("starting a local cluster", "starting the next local"))]
    assert started == [f"starting a local cluster: {needs[0].describe()}",
                       f"starting the next local cluster meanwhile: {needs[1].describe()}",
                       f"starting the next local cluster meanwhile: {needs[2].describe()}"]
    assert first_dir != second_dir
    assert not first_dir.exists() and not second_dir.exists()
    outlived = {pid: " ".join(psutil.Process(pid).cmdline())[:300] for pid in cluster_nodes() - before}
    assert not outlived, f"nodes of the pool's clusters outlived it: {outlived}"

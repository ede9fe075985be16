"""Degraded links on the local launcher (root + iptables), through `kafka-chaos run`: 80 % loss on
a follower's peer links crosses the ISR-shrink threshold (documented rule checks).  ~15 s of
cluster time; the `network` suite adds the ZooKeeper-link scenario.  The other cell of the
loss matrix, 2 % (below the threshold: oracle no event), is ``nightly`` (docs/nightly.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.harness.local.network import partition_problem, remove_htb
from kafka_chaos.records.writer import read_records

pytestmark = pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))


def run_scenario(name: str, results: Path) -> set[tuple[str, str]]:
    """``kafka-chaos run --scenario NAME`` passes; the (scenario, rule check) pairs it recorded."""
    # --harness-defaults: no waits for the controller's imbalance checks (the test command's budget).
    rc = main(["run", "--backend", "local", "--seed", "13", "--results", str(results), "--no-report",
               "--harness-defaults", "--scenario", name])
    read = read_records(results)
    failed = [(r.scenario, r.check, r.topic, r.partition, r.detail) for r in read.records
              if r.kind == "check" and r.passed is not True]
    assert rc == 0, failed
    remove_htb()  # nothing of ours is left on lo
    return {(r.scenario, r.check) for r in read.records if r.kind == "check" and r.check.startswith("rule_")}


def test_loss_above_the_isr_threshold_shrinks_the_isr_and_the_heal_expands_it(tmp_path: Path) -> None:
    ruled = run_scenario("follower_peer_links_lossy", tmp_path / "results")
    assert ("follower_peer_links_lossy", "rule_leader_isr_shrink") in ruled
    assert ("follower_peer_links_lossy", "rule_leader_isr_expand") in ruled


@pytest.mark.nightly
def test_loss_below_the_isr_threshold_changes_nothing(tmp_path: Path) -> None:
    """A matrix cell, ``nightly`` (about 11 s): 2 % loss, the oracle's no event holds one session
    window later. The test command runs the 80 % cell above."""
    assert not run_scenario("follower_peer_links_lightly_lossy", tmp_path / "results")

"""Degraded links on the local launcher (root + iptables), through `kafka-chaos run` on one
cluster: 80 % loss on a follower's peer links crosses the ISR-shrink threshold (documented rule
checks), 2 % does not (oracle: no event).  ~60 s of cluster time; the `network` suite adds the
ZooKeeper-link scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.harness.local.network import partition_problem, remove_htb
from kafka_chaos.records.writer import read_records

pytestmark = pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))


def test_loss_above_the_isr_threshold_shrinks_and_below_it_does_not(tmp_path: Path) -> None:
    results = tmp_path / "results"
    rc = main(["run", "--backend", "local", "--seed", "13", "--results", str(results), "--no-report",
               "--scenario", "follower_peer_links_lossy", "--scenario", "follower_peer_links_lightly_lossy"])
    read = read_records(results)
    failed = [(r.scenario, r.check, r.topic, r.partition, r.detail) for r in read.records
              if r.kind == "check" and r.passed is not True]
    assert rc == 0, failed
    ruled = {(r.scenario, r.check) for r in read.records if r.kind == "check" and r.check.startswith("rule_")}
    assert ("follower_peer_links_lossy", "rule_leader_isr_shrink") in ruled
    assert ("follower_peer_links_lossy", "rule_leader_isr_expand") in ruled
    assert not any(name == "follower_peer_links_lightly_lossy" for name, _ in ruled)
    remove_htb()  # nothing of ours is left on lo

"""A power failure on a real ZooKeeper-mode 3.9.2 cluster whose data directories are on the
crash-consistency layer (``cluster.filesystem: "lazyfs"``), as a schedule file runs it: brokers
1 and 2 -- every ISR member of t-0 and t-3 -- lose power at once under producer load, then start
on what their disks kept. Kafka fsyncs no append by default, so t-0 and t-3 lose the
acknowledged records they had (permitted by Kafka's contract, counted apart); t's other
partitions and every partition of f (``flush.messages=1``: each append fsynced before it is
acknowledged) lose nothing, and every other check passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_chaos.harness.lazyfs.mount import lazyfs_available
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.checks.triage import CLIENT, classify
from tests.integration.test_schedule_files import run_schedule

LAYOUT = {"0": [1, 2], "1": [2, 3], "2": [3, 1], "3": [2, 1], "4": [3, 2], "5": [1, 3]}
SCHEDULE = {
    "schedule_version": 1,
    "name": "rack_power_failure_two_flush_settings",
    "doc": "brokers 1 and 2 lose power at once, then start; t fsyncs nothing, f every append",
    "cluster": {"brokers": [1, 2, 3], "filesystem": "lazyfs"},
    "topics": [{"name": "t", "assignment": LAYOUT},
               {"name": "f", "assignment": LAYOUT, "config": {"flush.messages": "1"}}],
    "steps": [
        {"fault": "power_failure", "target": {"brokers": [1, 2]}},
        {"fault": "start", "target": {"earlier": 0}},
    ],
}


@pytest.mark.skipif(lazyfs_available() is not None, reason=f"no crash-consistency layer: {lazyfs_available()}")
def test_a_rack_power_failure_loses_only_the_unflushed_records_the_contract_permits(tmp_path: Path) -> None:
    results = run_schedule(SCHEDULE, tmp_path, seed=4403)

    history = [json.loads(line) for line in (results / "history.jsonl").read_text().splitlines()]
    [failure] = [obs for obs in history if obs["type"] == "step" and obs["traits"]["kind"] == "power_failure"]
    dropped = failure["traits"]["outcome"]["dropped"]
    assert sorted(dropped) == ["1", "2"] and all(d["files_truncated"] > 0 for d in dropped.values()), dropped

    records = read_records(results).records
    by_topic = {r.topic.rpartition("-")[2] if r.topic else None: r for r in records if r.check == "delivery"}
    # A duplicate is at most the producer's own resend (librdkafka#4953, which run_schedule
    # tolerates): the power failure leads to no other delivery failure.
    assert set(by_topic) == {"t", "f"}
    assert all(r.passed or classify(r, records).klass == CLIENT for r in by_topic.values()), by_topic
    assert by_topic["t"].expected["power_failure_partitions"] == [0, 3]
    assert "power_failure_partitions" not in by_topic["f"].expected and by_topic["f"].observed["lost"] == 0
    [permitted] = [r for r in records if r.check == "delivery_power_failure_loss"]
    assert permitted.topic == by_topic["t"].topic and permitted.observed["lost_total"] > 0
    assert set(permitted.observed["lost_by_partition"]) <= {"0", "3"}

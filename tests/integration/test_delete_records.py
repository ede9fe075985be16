"""``delete_records`` on a real ZooKeeper-mode 3.9.2 cluster under producer load, as a schedule file
runs it (``kafka-chaos run --schedule``): DeleteRecords to each leader moves the log starts, the
controller does nothing (every oracle check passes on "nothing changes"), the in-sync replicas'
logs still agree, and the acknowledged messages below the recorded low watermarks are counted
deleted, not lost — the read-back starts at the recorded low watermark."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.clients.ops import READBACK
from tests.integration.test_schedule_files import run_schedule

SCHEDULE = {
    "schedule_version": 1,
    "name": "delete_records_under_load",
    "doc": "all of partition 0 up to its high watermark, a leader killed and started, then half of every partition",
    "cluster": {"brokers": [1, 2, 3]},
    "topics": [{"name": "t", "assignment": {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]}}],
    "steps": [
        {"fault": "delete_records", "options": {"topic": "t", "partitions": [0]}},
        {"fault": "hard_kill", "target": {"leader_of": {"topic": "t", "partition": 1}}},
        {"fault": "start", "target": {"earlier": 1}},
        {"fault": "delete_records", "options": {"topic": "t", "before": 0.5}},
    ],
}


def test_delete_records_under_load_passes_and_the_read_back_starts_at_the_low_watermark(tmp_path: Path) -> None:
    results = run_schedule(SCHEDULE, tmp_path, seed=42)

    history = [json.loads(line) for line in (results / "history.jsonl").read_text().splitlines()]
    recorded: dict[str, int] = {}  # "t-p" -> the highest low watermark recorded
    for obs in history:
        outcome = obs.get("traits", {}).get("outcome") if obs["type"] == "step" else None
        if outcome is None:
            continue
        assert obs["traits"]["kind"] == "delete_records" and obs["oracle_events"] == []
        for name, answer in outcome["partitions"].items():
            assert answer["error"] is None and answer["low_watermark"] > 0, (name, answer)
            recorded[name] = max(recorded.get(name, 0), answer["low_watermark"])
    assert len(recorded) == 3 and sorted(int(n.rpartition("-")[2]) for n in recorded) == [0, 1, 2]
    [finished] = [obs for obs in history if obs["type"] == "finished"]
    for name, low_watermark in recorded.items():
        read_back = [p[1] for p in finished["ops"][name]["polls"] if p[0] == READBACK]
        assert read_back and min(read_back) == low_watermark, (name, low_watermark, read_back[:3])

    records = read_records(results).records
    delivery = [r for r in records if r.check == "delivery"]
    assert len(delivery) == 1 and delivery[0].passed
    assert delivery[0].observed["deleted"] == sum(recorded.values()) and delivery[0].observed["lost"] == 0
    unseen = [r for r in records if r.check == "history_unseen"]
    assert unseen and unseen[0].passed and unseen[0].observed["deleted"] == sum(recorded.values())
    steps = [r for r in records if str(r.fault).startswith("delete_records") and r.kind == "check"]
    assert {"oracle_outcome", "replica_logs_agree"} <= {r.check for r in steps} and all(r.passed for r in steps)

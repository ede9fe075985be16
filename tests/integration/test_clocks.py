"""A partition leader's wall clock 60 s ahead on a real ZooKeeper-mode 3.9.2 cluster, as a schedule
file runs it: the nodes start under libfaketime (the schedule has a clock fault), the jump step
passes the oracle's "nothing changes" (scenarios/faults/clocks.py), and the broker's own log
shows the jump: the line it writes on becoming the leader of a partition added afterwards is
stamped a minute after the step began by this process's clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_chaos.harness.local.clocks import libfaketime_path
from tests.integration.test_schedule_files import run_schedule

JUMP_S = 60
SCHEDULE = {
    "schedule_version": 1,
    "name": "leader_clock_jump",
    "doc": "broker 1 (t-0's leader) 60 s ahead, then a partition it leads added, then its clock healed",
    "cluster": {"brokers": [1, 2, 3]},
    "topics": [{"name": "t", "assignment": {"0": [1, 2, 3]}}],
    "steps": [
        {"fault": "clock_jump", "target": {"brokers": [1]}, "options": {"seconds": JUMP_S}},
        {"fault": "add_partitions", "options": {"topic": "t", "add": [[1, [1, 2, 3]]]}},
        {"fault": "clock_jump", "target": {"earlier": 0}, "options": {"variant": "heal"}},
    ],
}


@pytest.mark.skipif(libfaketime_path() is None, reason="needs libfaketime (scripts/setup.sh installs it as root)")
def test_a_leaders_clock_jump_passes_and_the_broker_feels_it(tmp_path: Path) -> None:
    results = run_schedule(SCHEDULE, tmp_path, seed=44)

    steps = [json.loads(line) for line in (results / "history.jsonl").read_text().splitlines()]
    steps = [s for s in steps if s["type"] == "step" and s["index"] is not None]  # not the topics' creation
    assert len(steps) == 3 and steps[0]["oracle_events"] == [] and steps[2]["oracle_events"] == []
    # [time, kind, node, topic, partition, ...]: broker 1's "Leader t-1 ... starts at leader epoch 0"
    started = [line for line in steps[1]["controller_log"] or [] if line[1] == "leader_started" and line[2] == 1
               and line[4] == 1]
    assert started, steps[1]["controller_log"]
    ahead = started[0][0] - steps[1]["fault_at"]
    assert JUMP_S - 10 < ahead < JUMP_S + 30, ahead

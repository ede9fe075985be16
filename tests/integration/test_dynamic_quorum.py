"""A dynamic KRaft quorum (KIP-853) on a real 4.4.0 cluster, as a user runs it
(``kafka-chaos run --schedule docs/schedules/kraft_dynamic_quorum.json --kafka-version 4.4.0``):
3 voters formatted with ``--initial-controllers``, a 4th controller added, the quorum leader
removed, the removed controller started again. Every check passes, ``quorum_voters`` at each of
the three steps with the voter set the change leads to; the removal's step shows a new leader of
a later epoch, the restart's the same leader and epoch.

``nightly`` (docs/nightly.md): the run takes over 30 s (a cluster start, three catch-ups, an election).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.app.runs import run_scenarios
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.plans.schedule import load

SCHEDULE = Path(__file__).parents[2] / "docs" / "schedules" / "kraft_dynamic_quorum.json"
RELEASE = "4.4.0"


@pytest.mark.nightly
def test_voters_added_removed_and_a_removed_one_restarted(tmp_path: Path) -> None:
    results = tmp_path / "results"
    rc = run_scenarios([load(SCHEDULE).scenario()], seed=4531, results_dir=results, report=False,
                       kafka_version=RELEASE, sources={"kraft_dynamic_quorum": str(SCHEDULE)}, tolerate="client")
    records = [r for r in read_records(results).records if r.kind == "check"]
    failed = [(r.check, r.detail) for r in records if r.passed is not True]
    assert rc == 0 and not failed, failed
    voters = [r for r in records if r.check == "quorum_voters"]
    assert [r.passed for r in voters] == [True, True, True]
    added, removed, restarted = (r.observed for r in voters)
    assert len(added["described"]) == 4
    assert len(removed["described"]) == 3 and removed["leader_epoch"] > added["leader_epoch"]
    assert (restarted["leader"], restarted["leader_epoch"]) == (removed["leader"], removed["leader_epoch"])

"""KRaft on the containers launcher: a kill of a partition leader and a kill of the quorum leader
on one 3-voter, 3-broker cluster in containers (data directories formatted on the host and
mounted, the metadata log read from the host), every check passing against the KRaft model, and
nothing left afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.containers.conftest import assert_nothing_left


# The KRaft × containers cell of the launcher matrix: KRaft's own integration tests run on the
# local launcher in the test command (tests/integration/test_kraft.py), this one nightly.
@pytest.mark.nightly
def test_kraft_steps_pass_on_containers_and_leave_nothing(kafka_image: str, tmp_path: Path, monkeypatch) -> None:
    import kafka_chaos.harness.containers.kraft as kraft_module
    from kafka_chaos.cli.main import main
    from kafka_chaos.records.writer import read_records

    made: list[str] = []
    original = kraft_module.new_run_id

    def recording() -> str:
        made.append(original())
        return made[-1]

    monkeypatch.setattr(kraft_module, "new_run_id", recording)
    results = tmp_path / "results"
    rc = main(["run", "--backend", "containers", "--mode", "kraft", "--controllers", "3", "--seed", "12",
               "--no-report", "--results", str(results),
               "--scenario", "leader_hard_kill_kraft", "--scenario", "quorum_leader_kill"])
    records = read_records(results).records
    failed = [(r.scenario, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    assert {r.scenario for r in records if r.check == "oracle_partition_epoch"} >= {"leader_hard_kill_kraft"}
    assert len(made) == 1  # one cluster for both
    for run_id in made:
        assert_nothing_left(run_id)

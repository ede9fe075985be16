"""KRaft on the containers launcher: a kill of a partition leader and a kill of the quorum leader
on one 3-voter, 3-broker cluster in containers (data directories formatted on the host and
mounted, the metadata log read from the host), every check passing against the KRaft model, and
nothing left afterwards -- on 3.9.2 and on 4.4.0 (log4j2: the nodes' `docker logs` still hold the
lines the controller-log parser reads). And power failures there (root with /dev/fuse): every node's data
directory on the host's crash-consistency layer, bind-mounted into its container -- the quorum
leader's container killed and its metadata log's unsynced writes dropped, then brokers'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.containers.conftest import assert_nothing_left

DOCS_SCHEDULES = Path(__file__).parents[2] / "docs" / "schedules"
# The releases of the KRaft × containers cells: the newest 3.x (log4j 1) and the newest 4.x
# (KRaft only, log4j2: harness.containers.image.logging_config); `-k 4_4_0` picks one.
KRAFT_RELEASES = [pytest.param("3.9.2", id="3_9_2"), pytest.param("4.4.0", id="4_4_0")]


# The KRaft × containers cells of the launcher matrix: KRaft's own integration tests run on the
# local launcher in the test command (tests/integration/test_kraft.py), these nightly.
@pytest.mark.nightly
@pytest.mark.parametrize("kafka_version", KRAFT_RELEASES)
def test_kraft_steps_pass_on_containers_and_leave_nothing(kafka_image: str, tmp_path: Path, monkeypatch,
                                                          kafka_version: str) -> None:
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
    rc = main(["run", "--backend", "containers", "--mode", "kraft", "--kafka-version", kafka_version,
               "--controllers", "3", "--seed", "12", "--no-report", "--results", str(results),
               "--scenario", "leader_hard_kill_kraft", "--scenario", "quorum_leader_kill"])
    records = read_records(results).records
    failed = [(r.scenario, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    assert {r.scenario for r in records if r.check == "oracle_partition_epoch"} >= {"leader_hard_kill_kraft"}
    # the new leaders' lines, read from the brokers' `docker logs` (a log4j2 node with no log4j2
    # configuration prints errors only, and this would be empty)
    history = [json.loads(line) for line in (results / "history.jsonl").read_text().splitlines()]
    [kill] = [obs for obs in history if obs["type"] == "step" and obs["traits"]["kind"] == "hard_kill"]
    assert any(event[1] == "leader_started" for event in kill["controller_log"] or []), kill["controller_log"]
    assert len(made) == 1  # one cluster for both
    for run_id in made:
        assert_nothing_left(run_id)


# Power failures on KRaft containers (harness.containers.disks through harness.containers.kraft):
# the test command runs power failures on the local launcher (tests/integration/test_durability.py)
# and this launcher's KRaft wiring in unit tests (tests/unit/containers/test_container_disks.py);
# this cell, about 65 s, nightly.
@pytest.mark.nightly
def test_kraft_power_failures_pass_on_containers_and_leave_no_container_or_mount(  # type: ignore[no-untyped-def]
        kafka_image: str, tmp_path: Path, monkeypatch) -> None:
    import kafka_chaos.harness.containers.kraft as kraft_module
    from kafka_chaos.cli.main import main
    from kafka_chaos.harness.lazyfs.mount import lazyfs_available

    problem = lazyfs_available()
    if problem is not None:
        pytest.skip(f"no crash-consistency layer: {problem}")
    made: list[str] = []
    original = kraft_module.new_run_id

    def recording() -> str:
        made.append(original())
        return made[-1]

    monkeypatch.setattr(kraft_module, "new_run_id", recording)
    results = tmp_path / "results"
    # --tolerate client: a rack power failure may make librdkafka resend a batch under a bumped
    # epoch (librdkafka#4953, tests/integration/test_schedule_files.py run_schedule)
    rc = main(["run", "--backend", "containers", "--schedule", str(DOCS_SCHEDULES / "kraft_power_failures.json"),
               "--seed", "7303", "--tolerate", "client", "--no-report", "--results", str(results)])
    assert rc == 0
    history = [json.loads(line) for line in (results / "history.jsonl").read_text().splitlines()]
    dropped = [(obs["traits"]["kind"], sorted(obs["traits"]["outcome"]["dropped"])) for obs in history
               if obs["type"] == "step" and "power_failure" in obs["traits"]["kind"]]
    # the quorum leader's container was killed and its layer dropped (a controller id, not a
    # broker's), then t-1's leader's, then t-0's ISR's at once
    [(kind, [controller]), (_, [leader]), (_, isr)] = dropped
    assert kind == "quorum_leader_power_failure" and int(controller) >= 3000, dropped
    assert leader in {"1", "2", "3"} and set(isr) <= {"1", "2", "3"} and len(isr) == 2, dropped
    assert len(made) == 1
    assert_nothing_left(made[0])
    mounts = Path("/proc/mounts").read_text()
    assert f"kafka-chaos-{made[0]}" not in mounts, "a crash-consistency mount outlived its cluster"

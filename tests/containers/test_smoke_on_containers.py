"""The `smoke` chaos suite (and a broker cut from everyone) on the containers launcher, and nothing
of it left afterwards: a
matrix cell, `nightly` (docs/nightly.md) -- the test command runs the same scenarios on the local
launcher (tests/integration/test_smoke_suite.py) and the containers launcher with the partition
scenarios (tests/containers/test_partition_scenarios.py)."""

from __future__ import annotations

import json

import pytest

from kafka_chaos.scenarios.plans.catalogue import suite
from tests.containers.conftest import NIGHTLY_SCENARIOS, SMOKE_SCENARIOS, SuiteRun, assert_nothing_left


def test_the_containers_run_holds_the_whole_smoke_suite() -> None:
    assert set(SMOKE_SCENARIOS) == {s.name for s in suite("smoke")}, "update SMOKE_SCENARIOS"


@pytest.mark.nightly
def test_smoke_suite_passes_on_containers_and_leaves_nothing(containers_smoke_run: SuiteRun) -> None:
    from kafka_chaos.harness.containers.image import docker_client
    from kafka_chaos.harness.containers.labels import OWNER_LABEL, current_owner

    run = containers_smoke_run
    failed = [(r.scenario, r.check, r.detail) for r in run.records if r.kind == "check" and r.passed is not True]
    assert run.rc == 0 and not failed, failed
    assert {r.scenario for r in run.records} == set(NIGHTLY_SCENARIOS)
    info = json.loads((run.results / "run.json").read_text())
    assert info["passed"] is True and info["backend"] == "containers"
    assert len(run.cluster_runs) == 1, "the smoke scenarios and the cut from everyone share one cluster"
    for run_id in run.cluster_runs:
        assert_nothing_left(run_id)
    client = docker_client()
    mine = {"label": f"{OWNER_LABEL}={current_owner()}"}
    left = [c.name for c in client.containers.list(all=True, filters=mine)] + \
           [n.name for n in client.networks.list(filters=mine)]
    client.close()
    assert not left, f"the run left {left}"

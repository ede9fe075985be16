"""The `smoke` chaos suite on the containers launcher, and nothing of it left afterwards (its
scenarios run in the session's shared containers run, tests/containers/conftest.py)."""

from __future__ import annotations

import json

from kafka_chaos.scenarios.plans.catalogue import suite
from tests.containers.conftest import SMOKE_SCENARIOS, SuiteRun


def test_the_shared_run_holds_the_whole_smoke_suite() -> None:
    assert set(SMOKE_SCENARIOS) == {s.name for s in suite("smoke")}, "update SMOKE_SCENARIOS"


def test_smoke_suite_passes_on_containers_and_leaves_nothing(containers_run: SuiteRun) -> None:
    from kafka_chaos.harness.containers.image import docker_client
    from kafka_chaos.harness.containers.labels import OWNER_LABEL, current_owner

    smoke = [r for r in containers_run.records if r.scenario in SMOKE_SCENARIOS]
    failed = [(r.scenario, r.check, r.detail) for r in smoke if r.kind == "check" and r.passed is not True]
    assert not failed
    assert {r.scenario for r in smoke} == set(SMOKE_SCENARIOS)
    info = json.loads((containers_run.results / "run.json").read_text())
    assert info["backend"] == "containers"
    client = docker_client()
    mine = {"label": f"{OWNER_LABEL}={current_owner()}"}
    left = [c.name for c in client.containers.list(all=True, filters=mine)] + \
           [n.name for n in client.networks.list(filters=mine)]
    client.close()
    assert not left, f"the run left {left}"

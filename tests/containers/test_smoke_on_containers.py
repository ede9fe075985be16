"""The `smoke` chaos suite on the containers launcher, and nothing of it left afterwards."""

from __future__ import annotations

import json
from pathlib import Path

from cli.main import main
from results.writer import read_records
from scenarios.catalogue import suite


def test_smoke_suite_passes_on_containers_and_leaves_nothing(kafka_image: str, tmp_path: Path) -> None:
    from harness.containers.image import docker_client
    from harness.containers.labels import OWNER_LABEL, current_owner

    results = tmp_path / "results"
    rc = main(["run", "--suite", "smoke", "--backend", "containers", "--seed", "7",
               "--results", str(results), "--no-report"])
    read = read_records(results)
    failed = [(r.scenario, r.check, r.detail) for r in read.records if r.kind == "check" and r.passed is not True]
    assert rc == 0, failed
    assert {r.scenario for r in read.records} == {s.name for s in suite("smoke")}
    info = json.loads((results / "run.json").read_text())
    assert info["backend"] == "containers" and info["passed"] is True
    client = docker_client()
    mine = {"label": f"{OWNER_LABEL}={current_owner()}"}
    left = [c.name for c in client.containers.list(all=True, filters=mine)] + \
           [n.name for n in client.networks.list(filters=mine)]
    client.close()
    assert not left, f"the run left {left}"

"""bench modes' summary (benches.modes): which scenario is which fault, mode and profile; latency
samples from the runner's records; the controller failover from the stored events; the table."""

from __future__ import annotations

import time

import pytest

from kafka_chaos.benches import modes
from kafka_chaos.records.schema import Record


def latency(scenario: str, **ms: float | None) -> Record:
    return Record(run_id="r", scenario=scenario, iteration=0, seed=1, backend="local", kafka_version="3.9.2",
                  brokers=3, partitions=6, kind="measurement", check="latency", passed=None, started_at=time.time(),
                  latency_ms=dict(ms))


@pytest.mark.parametrize("fault", list(modes.FAULTS))
@pytest.mark.parametrize("mode", modes.MODES)
@pytest.mark.parametrize("profile", list(modes.PROFILES))
def test_scenario_names_round_trip(fault: str, mode: str, profile: str) -> None:
    assert modes.parse_scenario(modes.scenario_name(fault, mode, profile)) == (fault, mode, profile)


def test_the_scenarios_exist_with_the_mode_they_are_named_for() -> None:
    from kafka_chaos.scenarios.plans.catalogue import by_names

    for names in modes.FAULTS.values():
        zk, kraft = by_names(list(names))
        assert (zk.needs.mode, kraft.needs.mode) == ("zookeeper", "kraft")
    assert modes.parse_scenario("leader_hard_kill") is None and modes.parse_scenario("leader_hard_kill.noon") is None


def test_summary_side_by_side() -> None:
    records = [latency(modes.scenario_name("hard_kill", "zookeeper", "matched"), detection=5000.0 + i,
                       election=5100.0 + i, propagation=None) for i in range(10)]
    records += [latency(modes.scenario_name("hard_kill", "kraft", "matched"), detection=4000.0 + 10 * i,
                        election=4000.0 + 10 * i) for i in range(10)]
    records.append(latency("leader_hard_kill", detection=1.0))  # not a bench scenario
    samples = modes.latency_samples(records)
    samples += modes.controller_samples([
        (modes.scenario_name("controller_failover", "kraft", "matched"), 100.0, 3000,
         [(99.0, 3001), (100.0, 3000), (102.5, 3002), (103.0, 3001)]),
        (modes.scenario_name("hard_kill", "kraft", "matched"), 100.0, 3000, [(101.0, 3001)]),  # not a failover
    ])
    cells = modes.summarise(samples)
    by = {(c.fault, c.mode, c.phase): c for c in cells}
    assert by[("hard_kill", "zookeeper", "detection")].n == 10
    assert by[("hard_kill", "zookeeper", "detection")].median_ms == 5004.0  # nearest rank
    assert by[("hard_kill", "kraft", "election")].p90_ms == 4080.0
    assert by[("controller_failover", "kraft", "new_controller")].median_ms == 2500.0
    assert ("hard_kill", "zookeeper", "propagation") not in by
    table = modes.table(cells)
    assert "| matched | hard_kill | detection | 5,004 / 5,008 (n=10) | 4,040 / 4,080 (n=10) |" in table
    assert "| matched | controller_failover | new_controller | – | 2,500 / 2,500 (n=1) |" in table

"""bench modes' summary (benches.modes): columns (a mode on a release) and their parsing; which
scenario is which fault, column and profile; the timeouts each profile sets in each column; latency
samples from the runner's records; the controller failover from the stored events; the tables."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kafka_chaos.benches import modes
from kafka_chaos.benches.modes import Column
from kafka_chaos.common.errors import UsageError
from kafka_chaos.records.schema import Record

ZK39, KRAFT39, KRAFT44 = Column("zookeeper", "3.9.2"), Column("kraft", "3.9.2"), Column("kraft", "4.4.0")


def latency(scenario: str, release: str = "3.9.2", **ms: float | None) -> Record:
    return Record(run_id="r", scenario=scenario, iteration=0, seed=1, backend="local", kafka_version=release,
                  brokers=3, partitions=6, kind="measurement", check="latency", passed=None, started_at=time.time(),
                  latency_ms=dict(ms))


@pytest.mark.parametrize("fault", list(modes.FAULTS))
@pytest.mark.parametrize("column", [ZK39, KRAFT39, KRAFT44, Column("kraft", "4.10.12")])
@pytest.mark.parametrize("profile", modes.PROFILES)
def test_scenario_names_round_trip(fault: str, column: Column, profile: str) -> None:
    name = modes.scenario_name(fault, column, profile)
    assert modes.parse_scenario(name) == (fault, column, profile)
    assert modes.parse_scenario(name, "3.1.2") == (fault, column, profile)  # the name's release wins


def test_names_of_runs_before_columns_take_the_records_release() -> None:
    assert modes.parse_scenario("leader_hard_kill_kraft.matched", "3.9.2") == ("hard_kill", KRAFT39, "matched")
    assert modes.parse_scenario("controller_kill.defaults", "3.9.2") == ("controller_failover", ZK39, "defaults")
    assert modes.parse_scenario("leader_hard_kill_kraft.matched") is None  # no release known


@pytest.mark.parametrize("name", ["leader_hard_kill", "leader_hard_kill.noon", "leader_hard_kill.matched.4.4",
                                  "leader_hard_kill.matched.x.y.z", "unknown_scenario.matched.3.9.2", ""])
def test_other_names_are_not_bench_scenarios(name: str) -> None:
    assert modes.parse_scenario(name, "3.9.2" if name.count(".") < 2 else None) is None


def test_the_scenarios_exist_with_the_mode_they_are_named_for() -> None:
    from kafka_chaos.scenarios.plans.catalogue import by_names

    for names in modes.FAULTS.values():
        zk, kraft = by_names(list(names))
        assert (zk.needs.mode, kraft.needs.mode) == ("zookeeper", "kraft")
        assert all(SEP not in n for n in names for SEP in modes.SEPARATOR)  # names split at the first dot


@pytest.mark.parametrize(("text", "column"), [("kraft:4.4.0", KRAFT44), (" zookeeper:3.9.2 ", ZK39)])
def test_parse_column(text: str, column: Column) -> None:
    assert modes.parse_column(text) == column


@pytest.mark.parametrize("text", ["kraft", "kraft:", "kraft:4.4", "migration:3.9.2", "4.4.0", "kraft:4.4.0-rc1",
                                  "zookeeper:3.9.2:x"])
def test_parse_column_refuses_in_one_line(text: str) -> None:
    with pytest.raises(UsageError, match="MODE:RELEASE") as e:
        modes.parse_column(text)
    assert "\n" not in str(e.value)


def test_columns_of() -> None:
    assert modes.columns_of([], [], "3.9.2") == [ZK39, KRAFT39]
    assert modes.columns_of([], ["4.4.0"], "3.9.2") == [ZK39, KRAFT39, KRAFT44]
    # ZooKeeper first, then KRaft by release (4.10 after 4.4), each once
    assert modes.columns_of(["kraft:4.10.0", "kraft:4.4.0", "zookeeper:3.9.2"], ["4.4.0"], "3.8.1") == [
        ZK39, KRAFT44, Column("kraft", "4.10.0")]
    assert modes.columns_of(["kraft:4.4.0"], [], "3.9.2") == [KRAFT44]


def test_matched_is_matched_in_every_column() -> None:
    """matched: every column detects a silent broker after the same 6 s, heartbeat 2 s in KRaft;
    defaults: as each release ships it (ZooKeeper 18 s since 2.5, KIP-537; KRaft 9 s / 2 s on 3.9 and 4.x)."""
    sessions = {col: modes.profile_overrides("matched", col).get(
        modes.ZOOKEEPER_SESSION_TIMEOUT_MS if col.mode == "zookeeper" else modes.BROKER_SESSION_TIMEOUT_MS)
        for col in (ZK39, KRAFT39, KRAFT44)}
    assert set(sessions.values()) == {"6000"}
    assert modes.profile_overrides("matched", KRAFT44) == modes.profile_overrides("matched", KRAFT39)
    assert modes.profile_overrides("defaults", ZK39) == {"zookeeper.session.timeout.ms": "18000"}
    assert modes.profile_overrides("defaults", Column("zookeeper", "2.4.1")) == {"zookeeper.session.timeout.ms": "6000"}
    for col in (KRAFT39, KRAFT44):
        assert modes.profile_overrides("defaults", col) == {"broker.session.timeout.ms": "9000",
                                                            "broker.heartbeat.interval.ms": "2000"}


def test_matched_equals_the_harness_test_values() -> None:
    from kafka_chaos.harness import config

    assert modes.MATCHED["kraft"] == config.kraft_defaults()
    assert modes.MATCHED["zookeeper"] == {config.ZOOKEEPER_SESSION_TIMEOUT_MS: str(config.TEST_SESSION_TIMEOUT_MS)}
    assert (modes.BROKER_SESSION_TIMEOUT_MS, modes.BROKER_HEARTBEAT_INTERVAL_MS) == (
        config.BROKER_SESSION_TIMEOUT_MS, config.BROKER_HEARTBEAT_INTERVAL_MS)


def cells_of_three_columns() -> list[modes.Cell]:
    records = [latency(modes.scenario_name("hard_kill", ZK39, "matched"), detection=5000.0 + i,
                       election=5100.0 + i, propagation=None) for i in range(10)]
    records += [latency(modes.scenario_name("hard_kill", KRAFT39, "matched"), detection=4000.0 + 10 * i,
                        election=4000.0 + 10 * i) for i in range(10)]
    records += [latency(modes.scenario_name("hard_kill", KRAFT44, "matched"), "4.4.0", detection=3000.0 + i)
                for i in range(3)]
    records.append(latency("leader_hard_kill_kraft.matched", "4.4.0", detection=7000.0))  # an old-style name
    records.append(latency("leader_hard_kill", detection=1.0))  # not a bench scenario
    samples = modes.latency_samples(records)
    samples += modes.controller_samples([
        (modes.scenario_name("controller_failover", KRAFT39, "matched"), "3.9.2", 100.0, 3000,
         [(99.0, 3001), (100.0, 3000), (102.5, 3002), (103.0, 3001)]),
        (modes.scenario_name("hard_kill", KRAFT39, "matched"), "3.9.2", 100.0, 3000, [(101.0, 3001)]),  # no failover
        ("quorum_leader_kill.defaults", "4.4.0", 50.0, 3001, [(51.25, 3002)]),
    ])
    return modes.summarise(samples)


def test_summary_side_by_side() -> None:
    cells = cells_of_three_columns()
    by = {(c.fault, c.mode, c.release, c.profile, c.phase): c for c in cells}
    assert by[("hard_kill", "zookeeper", "3.9.2", "matched", "detection")].n == 10
    assert by[("hard_kill", "zookeeper", "3.9.2", "matched", "detection")].median_ms == 5004.0  # nearest rank
    assert by[("hard_kill", "kraft", "3.9.2", "matched", "election")].p90_ms == 4080.0
    assert by[("hard_kill", "kraft", "4.4.0", "matched", "detection")].n == 4
    assert by[("controller_failover", "kraft", "3.9.2", "matched", "new_controller")].median_ms == 2500.0
    assert by[("controller_failover", "kraft", "4.4.0", "defaults", "new_controller")].median_ms == 1250.0
    assert ("hard_kill", "zookeeper", "3.9.2", "matched", "propagation") not in by
    assert modes.columns_in(cells) == [ZK39, KRAFT39, KRAFT44]
    table = modes.table(cells).splitlines()
    assert table[0] == ("| timeouts | fault | phase | ZooKeeper 3.9.2 median / p90 ms | KRaft 3.9.2 median / p90 ms "
                        "| KRaft 4.4.0 median / p90 ms |")
    assert table[1] == "| --- | --- | --- | --- | --- | --- |"
    assert ("| matched | hard_kill | detection | 5,004 / 5,008 (n=10) | 4,040 / 4,080 (n=10) | 3,001 / 7,000 (n=4) |"
            in table)
    assert "| matched | controller_failover | new_controller | – | 2,500 / 2,500 (n=1) | – |" in table
    assert table[-1] == "| defaults | controller_failover | new_controller | – | – | 1,250 / 1,250 (n=1) |"


def test_two_columns_as_before() -> None:
    cells = [c for c in cells_of_three_columns() if c.release == "3.9.2"]
    assert modes.table(cells).splitlines()[0] == (
        "| timeouts | fault | phase | ZooKeeper 3.9.2 median / p90 ms | KRaft 3.9.2 median / p90 ms |")


def test_settings_table() -> None:
    assert modes.settings_table([ZK39, KRAFT44], ["matched", "defaults"]).splitlines() == [
        "| timeouts | ZooKeeper 3.9.2 | KRaft 4.4.0 |",
        "| --- | --- | --- |",
        "| matched | `zookeeper.session.timeout.ms`=6000 | `broker.heartbeat.interval.ms`=2000, "
        "`broker.session.timeout.ms`=6000 |",
        "| defaults | `zookeeper.session.timeout.ms`=18000 | `broker.heartbeat.interval.ms`=2000, "
        "`broker.session.timeout.ms`=9000 |"]


def test_write_summary(tmp_path: Path) -> None:
    cells = cells_of_three_columns()
    modes.write_summary(tmp_path, cells)
    written = json.loads((tmp_path / "modes.json").read_text())
    assert written["columns"] == ["zookeeper:3.9.2", "kraft:3.9.2", "kraft:4.4.0"]
    assert written["settings"]["defaults"]["kraft:4.4.0"] == {"broker.session.timeout.ms": "9000",
                                                              "broker.heartbeat.interval.ms": "2000"}
    assert [modes.Cell(**c) for c in written["cells"]] == cells
    assert modes.table(cells) in (tmp_path / "modes.md").read_text()

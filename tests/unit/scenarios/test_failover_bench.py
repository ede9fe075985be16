"""The pure parts of `kafka-chaos bench failover` (benches.failover): the phases of one
failover from real controller logs (tests/unit/scenarios/data/controller_logs, see
test_controller_log), the scaling table, sizing, and the CLI's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.records.schema import Record
from kafka_chaos.benches import failover as fb
from kafka_chaos.scenarios.history.controller_log import parse_lines

DATA = Path(__file__).parent / "data" / "controller_logs"
HARD_KILL = 1795404797.484  # broker 2 SIGKILLed; it led t-1 and t-4
CONTROLLED = 1795404812.384  # broker 2 SIGTERMed (it led nothing then)


@pytest.fixture(scope="module")
def events() -> tuple[object, ...]:
    lines = [line for f in sorted(DATA.glob("*.log")) for line in f.read_text().splitlines()]
    return tuple(parse_lines(lines, 0.0))


def _iteration(events: tuple[object, ...], fault: str, at: float, moved: dict[tuple[str, int], int],
               detection: float | None) -> fb.Iteration:
    return fb.Iteration(fault, 2, 1, at, moved, detection, at + 6.2, events)  # type: ignore[arg-type]


def test_queue_wait_is_measured_from_zookeepers_session_expiry(events: tuple[object, ...]) -> None:
    from kafka_chaos.scenarios.history.controller_log import LogEvent
    start = HARD_KILL + fb.failover_phases(_iteration(events, "hard_kill", HARD_KILL, {("t", 1): 2}, None))[
        "controller_start"] / 1000.0  # type: ignore[operator]
    expiry = LogEvent(round(start - 0.021, 3), "session_expired", -1)
    with_expiry = tuple(sorted([*events, expiry], key=lambda e: e.at))  # type: ignore[attr-defined]
    late_watch = start + 0.05  # our watch fired after the controller had started
    phases = fb.failover_phases(_iteration(with_expiry, "hard_kill", HARD_KILL, {("t", 1): 2}, late_watch))
    assert phases["controller_queue"] is not None and 20.0 <= phases["controller_queue"] <= 22.0


def test_hard_kill_phases_come_in_failover_order(events: tuple[object, ...]) -> None:
    detection = HARD_KILL + 5.82
    phases = fb.failover_phases(_iteration(events, "hard_kill", HARD_KILL, {("t", 1): 2, ("t", 4): 2}, detection))
    assert phases["detection"] == 5820.0
    order = [phases[p] for p in ("controller_start", "zk_writes", "leader_and_isr", "leaders_ready")]
    assert all(v is not None for v in order) and order == sorted(order)  # type: ignore[type-var]
    assert phases["controller_queue"] is not None and 0 <= phases["controller_queue"] < 100
    assert phases["controller_init"] is None  # not a controller failover
    assert phases["update_metadata"] is not None and phases["metadata"] == 6200.0


def test_a_partition_never_rewritten_leaves_zk_writes_unknown(events: tuple[object, ...]) -> None:
    phases = fb.failover_phases(_iteration(events, "hard_kill", HARD_KILL, {("t", 1): 2, ("t", 99): 2}, None))
    assert phases["zk_writes"] is None and phases["leaders_ready"] is None
    assert phases["controller_queue"] is None  # no detection time


def test_controlled_shutdown_has_no_queue_phase(events: tuple[object, ...]) -> None:
    phases = fb.failover_phases(_iteration(events, "controlled_shutdown", CONTROLLED, {}, CONTROLLED + 0.4))
    assert phases["controller_start"] is not None and phases["controller_start"] < 500
    assert phases["controller_queue"] is None


def _record(fault: str, partitions: int, phases: dict[str, float | None]) -> Record:
    return Record(run_id="r", scenario=fb.SCENARIO, iteration=0, seed=0, backend="local", kafka_version="3.9.2",
                  brokers=3, partitions=partitions, kind="measurement", check=fb.CHECK, passed=None,
                  started_at=0.0, finished_at=1.0, fault=fault, latency_ms=phases)


def test_the_table_has_median_and_p99_per_fault_size_and_phase() -> None:
    records = [_record("hard_kill", 10, {"zk_writes": v, "metadata": None}) for v in (30.0, 10.0, 20.0)]
    records += [_record("hard_kill", 1000, {"zk_writes": 900.0}), _record("controller_kill", 10, {"zk_writes": 5.0})]
    cells = fb.summarise(records)
    assert [(c.fault, c.partitions, c.phase, c.samples, c.median_ms, c.p99_ms) for c in cells] == [
        ("hard_kill", 10, "zk_writes", 3, 20.0, 30.0), ("hard_kill", 1000, "zk_writes", 1, 900.0, 900.0),
        ("controller_kill", 10, "zk_writes", 1, 5.0, 5.0)]
    assert fb.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0 and fb.percentile([5.0], 99) == 5.0


def test_releases_are_never_pooled_and_the_default_is_not_named() -> None:
    from dataclasses import replace

    records = [replace(_record("hard_kill", 10, {"zk_writes": v}), kafka_version=k)
               for k, v in (("3.9.2", 10.0), ("2.4.1", 50.0), ("3.4.1", 30.0), ("2.4.1", 70.0))]
    cells = fb.summarise(records)
    assert [(c.label, c.samples, c.median_ms) for c in cells] == [
        ("hard_kill 2.4.1", 2, 60.0), ("hard_kill 3.4.1", 1, 30.0), ("hard_kill", 1, 10.0)]


def test_sizing_and_assignment() -> None:
    assert fb.broker_heap_for(10, 3) == "384m"
    assert int(fb.broker_heap_for(10000, 3)[:-1]) >= 1000
    assignment = fb.round_robin(6, [1, 2, 3])
    assert assignment[0] == [1, 2, 3] and assignment[1] == [2, 3, 1]
    assert sum(1 for r in assignment.values() if r[0] == 2) == 2  # a third of the preferred leaders each
    assert fb.round_robin(2, [1, 2]) == {0: [1, 2], 1: [2, 1]}


@pytest.mark.parametrize("argv", [
    ["bench", "failover", "--partitions", "0"],
    ["bench", "failover", "--partitions", "10", "--brokers", "12"],
    ["bench", "failover", "--partitions", "10", "--faults", "explode"],
    ["bench", "failover", "--partitions", "10", "--repeat", "0"],
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) if argv[-2] in ("--partitions", "--brokers") else _nothing():
        code = main(argv)
        assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "Traceback" not in "\n".join(err)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_spans_measure_from_the_controllers_start() -> None:
    phases = {"controller_start": 5000.0, "zk_writes": 5250.0, "leaders_ready": 6000.0, "metadata": None}
    assert fb.spans(phases) == {"zk_writes_after_start": 250.0, "leaders_ready_after_start": 1000.0,
                                "metadata_after_start": None}
    assert set(fb.spans({"zk_writes": 1.0}).values()) == {None}
    cells = fb.summarise([_record("hard_kill", 10, phases)])
    assert {c.phase for c in cells} >= {"zk_writes_after_start", "leaders_ready_after_start"}


def test_a_bigger_cluster_gets_longer_to_shut_down() -> None:
    assert fb.stop_timeout_for(10) < fb.stop_timeout_for(1000) < fb.stop_timeout_for(10_000)
    assert fb.stop_timeout_for(10) >= 60.0 and fb.stop_timeout_for(10_000) == 260.0


def _on(backend: str, fault: str, partitions: int, phases: dict[str, float | None]) -> Record:
    from dataclasses import replace

    return replace(_record(fault, partitions, phases), backend=backend)


def test_the_record_carries_the_launcher_it_ran_on(events: tuple[object, ...]) -> None:
    it = _iteration(events, "hard_kill", HARD_KILL, {("t", 1): 2}, HARD_KILL + 5.0)
    kwargs = dict(run_id="r", brokers=3, partitions=10, index=0, started_at=HARD_KILL, finished_at=HARD_KILL + 9,
                  settings={})
    assert fb.iteration_record(it, **kwargs).backend == "local"  # type: ignore[arg-type]
    assert fb.iteration_record(it, **kwargs, backend="containers").backend == "containers"  # type: ignore[arg-type]


def test_runs_on_either_launcher_are_summarised_apart_local_first() -> None:
    records = [_on("containers", "hard_kill", 10, {"zk_writes": 7.0}), _on("local", "hard_kill", 10, {"zk_writes": 30.0}),
               _on("local", "hard_kill", 10, {"zk_writes": 10.0}), _on("containers", "controller_kill", 10, {"zk_writes": 1.0})]
    cells = fb.summarise(records)
    assert [(c.label, c.backend, c.samples, c.median_ms) for c in cells] == [
        ("hard_kill", "local", 2, 20.0), ("hard_kill containers", "containers", 1, 7.0),
        ("controller_kill containers", "containers", 1, 1.0)]


def test_from_earlier_runs_the_table_and_chart_keep_the_launchers_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = {"local": tmp_path / "local", "containers": tmp_path / "containers"}
    for backend, directory in runs.items():
        directory.mkdir()
        record = _on(backend, "controlled_shutdown", 100, {"controller_start": 50.0, "zk_writes": 80.0})
        (directory / "records.jsonl").write_text(record.to_json() + "\n")
    out = tmp_path / "merged"
    assert main(["bench", "failover", "--from", *map(str, runs.values()), "--results", str(out)]) == 0
    table = capsys.readouterr().out
    assert "controlled_shutdown containers" in table
    rows = [line.split() for line in table.splitlines() if " zk_writes " in line]
    assert [r[:3] for r in rows] == [["controlled_shutdown", "3", "100"], ["controlled_shutdown", "containers", "3"]]
    import json
    assert {c["backend"] for c in json.loads((out / "scaling.json").read_text())} == {"local", "containers"}
    assert (out / "scaling.png").stat().st_size > 0


def test_an_unknown_backend_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "failover", "--partitions", "10", "--backend", "podman", "--results", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "unknown backend 'podman'" in err[0]

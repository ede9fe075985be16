"""``bench modes`` refuses in one line before any cluster starts: a column that is not
MODE:RELEASE, a ZooKeeper column on 4.x (KIP-833), a results dir without records; and re-summarises
earlier runs with ``--from``, merging chunks into one table with a column per (mode, release)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kafka_chaos.benches import modes
from kafka_chaos.benches.modes import Column
from kafka_chaos.cli.main import main
from kafka_chaos.records.schema import Record


@pytest.mark.parametrize(("argv", "says"), [
    (["--column", "kraft"], "expected MODE:RELEASE"),
    (["--column", "zookeeper:4.4.0"], "has no ZooKeeper mode"),
    (["--kraft-release", "4.4"], "expected MODE:RELEASE"),
    (["--kraft-release", "3.5.2"], "not 3.5.2"),
    (["--timeouts", "matched,noon"], "--timeouts: unknown noon"),
])
def test_refused_in_one_line(argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "modes", "--results", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_from_a_dir_without_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "modes", "--from", str(tmp_path), "--results", str(tmp_path / "out")]) == 2
    assert "no records.jsonl" in capsys.readouterr().err


def write_chunk(path: Path, column: Column, detection: float) -> None:
    path.mkdir()
    with open(path / "records.jsonl", "w", encoding="utf-8") as f:
        for i in range(3):
            r = Record(run_id=path.name, scenario=modes.scenario_name("hard_kill", column, "matched"), iteration=i,
                       seed=1, backend="local", kafka_version=column.release, brokers=3, partitions=6,
                       kind="measurement", check="latency", passed=None, started_at=time.time(),
                       latency_ms={"detection": detection + i})
            f.write(r.to_json() + "\n")


def test_from_merges_chunks_into_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    charted: list[list[Column]] = []
    # not drawn here: matplotlib stays out of the test process (tests/unit/results asserts the report
    # renders without it)
    def chart(out: Path, cells: list[modes.Cell]) -> Path:
        charted.append(modes.columns_in(cells))
        return out / "modes.png"

    monkeypatch.setattr(modes, "chart", chart)
    write_chunk(tmp_path / "a", Column("zookeeper", "3.9.2"), 5000.0)
    write_chunk(tmp_path / "b", Column("kraft", "3.9.2"), 4000.0)
    write_chunk(tmp_path / "c", Column("kraft", "4.4.0"), 3000.0)
    out = tmp_path / "merged"
    assert main(["bench", "modes", "--from", str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "c"),
                 "--results", str(out)]) == 0
    assert ("| matched | hard_kill | detection | 5,001 / 5,002 (n=3) | 4,001 / 4,002 (n=3) | 3,001 / 3,002 (n=3) |"
            in capsys.readouterr().out)
    assert json.loads((out / "modes.json").read_text())["columns"] == ["zookeeper:3.9.2", "kraft:3.9.2", "kraft:4.4.0"]
    assert charted == [[Column("zookeeper", "3.9.2"), Column("kraft", "3.9.2"), Column("kraft", "4.4.0")]]

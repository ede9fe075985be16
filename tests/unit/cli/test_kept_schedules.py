"""A run of schedule files keeps each in DIR/schedules/ (the report's replay command names it
there), also when it replays the kept file into the same results dir."""

from __future__ import annotations

from pathlib import Path

from kafka_chaos.app.runs import keep_schedules as _keep_schedules


def test_schedule_files_are_kept_in_the_results_dir_even_when_replayed_from_there(tmp_path: Path) -> None:
    mine = tmp_path / "mine.json"
    mine.write_text('{"name": "h"}')
    results = tmp_path / "results"
    _keep_schedules(results, {"h": str(mine)})
    kept = results / "schedules" / "h.json"
    assert kept.read_text() == '{"name": "h"}'
    _keep_schedules(results, {"h": str(kept)})  # replayed from the kept file: not copied onto itself
    assert kept.read_text() == '{"name": "h"}'
    _keep_schedules(results, {})
    assert [p.name for p in (results / "schedules").iterdir()] == ["h.json"]

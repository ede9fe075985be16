"""The schedule files docs/ hands users (docs/schedules/*.json, outside the corpus): each one
parses, names itself after its file, and round-trips, so a documented command never starts by
refusing its own file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_chaos.scenarios.plans.schedule import schedule_from_json, schedule_to_json

DOCS = Path(__file__).parents[3] / "docs" / "schedules"
FILES = sorted(DOCS.glob("*.json"))


def test_there_are_documented_schedules() -> None:
    assert len(FILES) >= 3


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_documented_schedule_parses_and_round_trips(path: Path) -> None:
    schedule = schedule_from_json(json.loads(path.read_text()), path.name)
    assert schedule.name == path.stem and schedule.doc
    assert schedule_from_json(schedule_to_json(schedule), path.name) == schedule

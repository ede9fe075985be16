"""kafka_chaos.records.schema: JSON round trip, version and required-field checks, docstring in sync."""

from __future__ import annotations

import json

import pytest

from kafka_chaos.records import schema
from kafka_chaos.records.schema import FIELD_NAMES, LATENCY_PHASES, REQUIRED_FIELDS, SCHEMA_VERSION, Record


def make_record(**overrides):
    values = dict(
        run_id="r1", scenario="leader_hard_kill", iteration=2, seed=42, backend="local",
        kafka_version="3.9.2", brokers=3, partitions=6, kind="check", check="oracle_leader",
        passed=False, started_at=1_767_225_600.25, finished_at=1_767_225_612.75, fault="hard_kill",
        expected={"leader": 2, "isr": [2, 3]}, observed=[1, "x", None], detail="leader 1 != 2",
        topic="t", partition=0, latency_ms={"detection": 5012.5, "election": None},
        timestamps={"fault": 1_767_225_601.0}, session_timeout_ms=6000, tick_time_ms=500,
        git_revision="abc",
    )
    values.update(overrides)
    return Record(**values)


def test_json_round_trip_keeps_every_field():
    record = make_record()
    assert Record.from_json(record.to_json()) == record


def test_to_json_is_one_line_with_every_field():
    line = make_record().to_json()
    assert "\n" not in line
    assert set(json.loads(line)) == set(FIELD_NAMES) - {"mode"}  # a ZooKeeper-mode record: version 1's fields


def test_a_kraft_record_is_version_2_and_a_zookeeper_one_stays_version_1():
    zookeeper, kraft = make_record(), make_record(mode="kraft")
    assert json.loads(zookeeper.to_json())["schema_version"] == 1 and "mode" not in json.loads(zookeeper.to_json())
    assert json.loads(kraft.to_json())["schema_version"] == SCHEMA_VERSION == 2
    assert json.loads(kraft.to_json())["mode"] == "kraft"
    for record in (zookeeper, kraft):
        assert Record.from_json(record.to_json()) == record
        assert Record.from_json(record.to_json()).to_json() == record.to_json()


def test_duration_is_derived_not_stored():
    record = make_record()
    assert record.duration_ms == pytest.approx(12_500.0)
    assert "duration_ms" not in json.loads(record.to_json())


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION + 1, None, "1"])
def test_unreadable_schema_version_is_refused(version):
    data = json.loads(make_record().to_json())
    data["schema_version"] = version
    with pytest.raises(ValueError, match="schema_version"):
        Record.from_dict(data)


def test_missing_required_field_is_named():
    data = json.loads(make_record().to_json())
    del data["scenario"]
    data["check"] = None
    with pytest.raises(ValueError, match="missing required field.*scenario, check"):
        Record.from_dict(data)


def test_unknown_extra_fields_are_ignored():
    data = json.loads(make_record().to_json())
    data["added_later"] = 1
    assert Record.from_dict(data) == make_record()


def test_from_json_refuses_a_non_object():
    with pytest.raises(ValueError, match="JSON object"):
        Record.from_json("[1, 2]")


def test_docstring_table_lists_every_field_in_sync():
    documented = [line.split()[0] for line in schema.__doc__.splitlines()
                  if line and not line.startswith((" ", "=")) and line.split()[0] in FIELD_NAMES]
    assert sorted(documented) == sorted(FIELD_NAMES)


def test_required_fields_and_phases_are_record_fields():
    assert set(REQUIRED_FIELDS) <= set(FIELD_NAMES)
    assert all(f'"{phase}"' in schema.__doc__ for phase in LATENCY_PHASES)

"""The release of a run of schedule files: ``--kafka-version``, or each file's own; a flag that
contradicts a file is refused (scenarios.plans.pins), files written for different releases run
side by side."""

from __future__ import annotations

import pytest

from kafka_chaos.scenarios.model.steps import TopicSpec
from kafka_chaos.scenarios.plans.pins import contradiction, option_pins, scenario_pins
from kafka_chaos.scenarios.plans.schedule import Schedule


def _schedule(version: str | None, name: str = "s") -> Schedule:
    return Schedule(name, (1, 2), (TopicSpec("t", {0: (1, 2)}),), (), kafka_version=version)


def _verdict(named: list[str | None], flag: str | None) -> str | None:
    schedules = [_schedule(v, f"s{i}") for i, v in enumerate(named)]
    return contradiction([*(pin for s in schedules for pin in scenario_pins(f"--schedule {s.name}.json", s.scenario())),
                          *option_pins(kafka_version=flag)])


@pytest.mark.parametrize("named, flag", [
    ([None], None),  # the run's default
    ([None, None], "3.4.1"),
    (["2.8.2"], None),  # the file's own: ClusterNeeds.kafka_version
    (["2.8.2", "3.4.1", None], None),  # each its own; the unnamed one the default
    (["2.8.2", "2.8.2"], "2.8.2"),
])
def test_releases_a_run_accepts(named: list[str | None], flag: str | None) -> None:
    assert _verdict(named, flag) is None
    assert [_schedule(v).needs.kafka_version for v in named] == named


@pytest.mark.parametrize("named, flag, line", [
    (["2.8.2"], "3.9.2", "--schedule s0.json contradicts --kafka-version 3.9.2: s0 is written for Kafka 2.8.2"),
    (["2.8.2", "3.4.1"], "2.8.2", "--schedule s1.json contradicts --kafka-version 2.8.2: s1 is written for Kafka 3.4.1"),
])
def test_a_flag_that_contradicts_a_file_is_refused(named: list[str], flag: str, line: str) -> None:
    assert _verdict(named, flag) == line

"""The release of a run of schedule files: ``--kafka-version``, or each file's own."""

from __future__ import annotations

import pytest

from kafka_chaos.cli.run import _schedules_release
from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.model.steps import TopicSpec
from kafka_chaos.scenarios.plans.schedule import Schedule


def _schedule(version: str | None) -> Schedule:
    return Schedule("s", (1, 2), (TopicSpec("t", {0: (1, 2)}),), (), kafka_version=version)


@pytest.mark.parametrize("named, flag, release", [
    ([None], None, None),  # the run's default
    ([None, None], "3.4.1", "3.4.1"),
    (["2.8.2"], None, None),  # the file's own: ClusterNeeds.kafka_version
    (["2.8.2", "3.4.1", None], None, None),  # each its own; the unnamed one the default
    (["2.8.2", "2.8.2"], "2.8.2", "2.8.2"),
])
def test_the_release_a_run_uses(named: list[str | None], flag: str | None, release: str | None) -> None:
    schedules = [_schedule(v) for v in named]
    assert _schedules_release(schedules, flag) == release
    assert [s.needs.kafka_version for s in schedules] == named


@pytest.mark.parametrize("named, flag, message", [
    (["2.8.2"], "3.9.2", "--kafka-version 3.9.2: the schedules are written for Kafka 2.8.2"),
    (["2.8.2", "3.4.1"], "2.8.2", "written for Kafka 2.8.2, 3.4.1"),
])
def test_a_flag_that_contradicts_a_file_is_refused(named: list[str], flag: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _schedules_release([_schedule(v) for v in named], flag)

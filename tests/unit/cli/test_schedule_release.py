"""One Kafka release per run: ``--kafka-version`` or the release the schedule files name."""

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
    (["2.8.2"], None, "2.8.2"),  # the file's
    (["2.8.2", None], None, "2.8.2"),
    (["2.8.2", "2.8.2"], "2.8.2", "2.8.2"),
])
def test_the_release_a_run_uses(named: list[str | None], flag: str | None, release: str | None) -> None:
    assert _schedules_release([_schedule(v) for v in named], flag) == release


@pytest.mark.parametrize("named, flag, message", [
    (["2.8.2", "3.4.1"], None, "written for Kafka 2.8.2, 3.4.1: one release per run"),
    (["2.8.2"], "3.9.2", "written for Kafka 2.8.2, not --kafka-version 3.9.2: one release per run"),
])
def test_schedules_of_other_releases_are_refused(named: list[str], flag: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _schedules_release([_schedule(v) for v in named], flag)

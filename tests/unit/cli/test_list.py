"""``kafka-chaos run --list``: the catalogue, or the scenarios of the ``--suite`` named (a user
looking for a suite's scenarios should not have to read the whole catalogue)."""

from __future__ import annotations

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.scenarios.plans import catalogue


def listed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["run", *argv, "--list"]) == 0
    return [line.split()[0] for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("suite", ["journey", "smoke", "kraft", "corpus"])
def test_a_suite_lists_its_own_scenarios(suite: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert listed(["--suite", suite], capsys) == [s.name for s in catalogue.suite(suite)]


def test_without_a_suite_the_whole_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert listed([], capsys) == [s.name for s in catalogue.all_scenarios()]

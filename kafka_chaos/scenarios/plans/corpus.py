"""The known-bug corpus: real Kafka bugs, each a schedule file in ``corpus/`` (``docs/schedules/corpus``
links here) whose ``known_bug`` names the last release that has it, the first with the fix and
the check that must fail on the former (docs/recall.md).

Each entry is two scenarios of the ``corpus`` suite: ``<name>_on_<affected>``, which passes only
by failing that check (:attr:`Scenario.expects`: a run on it says CAUGHT, or MISSED), and
``<name>_on_<fixed>``, an ordinary scenario that must pass. The files ship with the package so an
installed ``kafka-chaos run --suite corpus`` finds them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kafka_chaos.scenarios.plans.schedule import Schedule, load_all
from kafka_chaos.scenarios.plans.spec import Scenario

CORPUS_SUITE = "corpus"
CORPUS_DIR = Path(__file__).parent / "corpus"


def entries() -> list[Schedule]:
    """Every corpus file, by name; a file without ``known_bug`` is not an entry (a TypeError: the
    corpus is the package's own data, refused by its unit tests before it ships)."""
    schedules = load_all(sorted(CORPUS_DIR.glob("*.json")))
    for s in schedules:
        if s.known_bug is None:
            raise TypeError(f"corpus schedule {s.name} has no known_bug")
        if s.kafka_version is not None:
            raise TypeError(f"corpus schedule {s.name} pins cluster.kafka_version: its known_bug names the releases")
    return schedules


def _on(release: str) -> str:
    return "_on_" + release.replace(".", "_")


def scenarios() -> list[Scenario]:
    """Each entry on its affected release (expected to fail its ``caught_by`` check), then on its
    fixed one (expected to pass)."""
    built = []
    for s in entries():
        bug, base = s.known_bug, s.scenario()
        assert bug is not None  # entries() refuses the others
        suites = frozenset({CORPUS_SUITE})
        built += [replace(base, name=s.name + _on(bug.affected), suites=suites,
                          needs=replace(base.needs, kafka_version=bug.affected), expects=bug),
                  replace(base, name=s.name + _on(bug.fixed), suites=suites,
                          needs=replace(base.needs, kafka_version=bug.fixed))]
    return built

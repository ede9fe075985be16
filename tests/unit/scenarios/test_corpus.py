"""The known-bug corpus (scenarios.plans.corpus): its files, the two scenarios each becomes, and
how a run judges an entry on its affected release — CAUGHT only when the named check failed."""

from __future__ import annotations

import json
from dataclasses import replace
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kafka_chaos.app.runs import Case, summary_table
from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.config import check_kraft_release
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.checks.registry import CHECKS
from kafka_chaos.scenarios.checks.triage import _BY_CHECK
from kafka_chaos.scenarios.plans import catalogue, corpus
from kafka_chaos.scenarios.plans.schedule import schedule_from_json, schedule_to_json
from kafka_chaos.scenarios.plans.spec import KnownBug
from kafka_chaos.scenarios.run.junit import JUnitCase, junit_xml
from kafka_chaos.scenarios.run.runner import ScenarioOutcome

FILES = sorted(corpus.CORPUS_DIR.glob("*.json"))
CHECK_NAMES = {c.name for c in CHECKS} | set(_BY_CHECK)


def test_the_docs_link_is_the_packaged_corpus() -> None:
    docs = Path(__file__).parents[3] / "docs" / "schedules" / "corpus"
    assert docs.resolve() == corpus.CORPUS_DIR.resolve()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_entry_names_its_bug_releases_and_check_and_round_trips(path: Path) -> None:
    data = json.loads(path.read_text())
    schedule = schedule_from_json(data, path.name)
    bug = schedule.known_bug
    assert bug is not None and bug.jira in schedule.doc and bug.caught_by in CHECK_NAMES
    assert schedule.name == path.stem and schedule.kafka_version is None
    for release in (bug.affected, bug.fixed):  # both runnable in the entry's mode
        check_kraft_release(schedule.mode, release)
    assert schedule_from_json(schedule_to_json(schedule)) == schedule


def test_each_entry_is_two_scenarios_of_the_corpus_suite_the_affected_one_expecting_its_check() -> None:
    entries = corpus.entries()
    scenarios = catalogue.suite(corpus.CORPUS_SUITE)
    assert len(scenarios) == 2 * len(entries) >= 4
    by_name = {s.name: s for s in scenarios}
    for entry in entries:
        bug = entry.known_bug
        assert bug is not None
        affected = by_name[f"{entry.name}_on_{bug.affected.replace('.', '_')}"]
        fixed = by_name[f"{entry.name}_on_{bug.fixed.replace('.', '_')}"]
        assert (affected.needs.kafka_version, affected.expects) == (bug.affected, bug)
        assert (fixed.needs.kafka_version, fixed.expects) == (bug.fixed, None)
        assert affected.steps == fixed.steps == entry.steps


KNOWN = {"jira": "KAFKA-16120", "affected": "3.6.1", "fixed": "3.6.2", "caught_by": "replicas_on_disk"}


@pytest.mark.parametrize("bug, message", [
    ({**KNOWN, "jira": "16120"}, "schedule.known_bug.jira: must be a Kafka JIRA key like KAFKA-16120"),
    ({**KNOWN, "fixed": "3.6.1"}, "schedule.known_bug: the affected and the fixed release are both 3.6.1"),
    ({**KNOWN, "affected": "2.3.1"}, "schedule.known_bug.affected: Kafka 2.3.1 is not supported"),
    ({**KNOWN, "caught_by": ""}, "schedule.known_bug.caught_by: must be a non-empty string"),
    ({**KNOWN, "severity": "high"}, "schedule.known_bug: unknown field(s) 'severity'"),
    ({**KNOWN, "attempts": 0}, "schedule.known_bug.attempts: must be a whole number from 1 to 10, not 0"),
    ({**KNOWN, "attempts": 11}, "schedule.known_bug.attempts: must be a whole number from 1 to 10, not 11"),
    ({**KNOWN, "attempts": True}, "schedule.known_bug.attempts: must be a whole number from 1 to 10, not True"),
    ("KAFKA-16120", "schedule.known_bug: must be an object"),
])
def test_a_bad_known_bug_is_one_line_naming_the_field(bug: object, message: str) -> None:
    data = json.loads(FILES[0].read_text())
    with pytest.raises(UsageError) as info:
        schedule_from_json({**data, "known_bug": bug})
    assert message in str(info.value) and "\n" not in str(info.value)


BUG = KnownBug("KAFKA-16120", "3.6.1", "3.6.2", "replicas_on_disk")
STRAY = CheckResult("replicas_on_disk", False, detail="not assigned, still on disk: t-0 on broker 1")
OTHER = CheckResult("oracle_leader", False, detail="t-0: leader expected 2, observed 3")
OK = CheckResult("converged", True)


@pytest.mark.parametrize("results, error, expects, verdict, shown", [
    ([OK, STRAY], None, BUG, "caught", "CAUGHT"),
    ([OK, STRAY, OTHER], None, BUG, "caught", "CAUGHT"),  # the named check failed: what else did is evidence
    ([OK], None, BUG, "fail", "MISSED"),  # the release has the bug and the run passed: it went unseen
    ([OK, OTHER], None, BUG, "fail", "MISSED"),  # failed, but not the way the bug fails
    ([], "not settled before step 1", BUG, "fail", "MISSED"),
    ([OK], None, None, "pass", "PASS"),  # the fixed release
    ([OK, STRAY], None, None, "fail", "FAIL"),
])
def test_an_entry_on_its_affected_release_passes_only_by_failing_its_check(
        results: list[CheckResult], error: str | None, expects: KnownBug | None, verdict: str, shown: str) -> None:
    case = Case(ScenarioOutcome("kafka_16120_on_3_6_1", 0, 30.0, results, error), expects=expects)
    assert case.verdict == verdict
    assert summary_table([case]).splitlines()[2].split()[2] == shown
    junit = junit_xml([JUnitCase("kafka_16120_on_3_6_1", 0, 30.0, results, error, expects=expects)]).getroot()
    testcase = next(junit.iter("testcase"))
    assert (testcase.find("failure") is None) == (verdict != "fail"), ET.tostring(testcase)
    assert junit.get("failures") == ("1" if verdict == "fail" and (expects or results[-1].passed is False) else "0")
    if verdict == "caught":
        assert "KAFKA-16120 caught on 3.6.1: replicas_on_disk failed" in testcase.findtext("system-out", "")
    if expects is not None and verdict == "fail":
        assert testcase.find("failure").get("message") == "KAFKA-16120 not caught on 3.6.1: replicas_on_disk did not fail"


RACE = KnownBug("KAFKA-15653", "3.6.0", "3.6.1", "txn_transparent_operation", attempts=3)


@pytest.mark.parametrize("attempts, verdict", [
    ([[OK], [OK], [OK, STRAY]], "caught"),  # caught by its third and last attempt
    ([[OK, STRAY]], "caught"),  # caught at once: no repeat
    ([[OK], [OK], [OK]], "fail"),  # every attempt passed: missed
])
def test_an_intermittent_entry_is_caught_by_any_of_its_attempts(attempts: list[list[CheckResult]], verdict: str) -> None:
    race = KnownBug("KAFKA-16120", "3.6.1", "3.6.2", "replicas_on_disk", attempts=3)
    outcomes = [ScenarioOutcome("kafka_16120_on_3_6_1", 0, 30.0, r, None) for r in attempts]
    case = Case(outcomes[0], reruns=outcomes[1:], expects=race)
    assert case.verdict == verdict
    junit = junit_xml([JUnitCase("kafka_16120_on_3_6_1", 0, 30.0, attempts[0], None,
                                 tuple((r, None) for r in attempts[1:]), expects=race)]).getroot()
    assert (next(junit.iter("testcase")).find("failure") is None) == (verdict == "caught")


def test_attempts_round_trip_and_stay_out_of_a_deterministic_entry() -> None:
    assert RACE.to_json()["attempts"] == 3 and "attempts" not in BUG.to_json()
    data = json.loads(FILES[0].read_text())
    assert schedule_from_json({**data, "known_bug": RACE.to_json()}).known_bug == RACE


@pytest.mark.parametrize("release, present", [
    ("3.6.0", True), ("3.6.2", True), ("3.6.3", False), ("3.7.0", False), ("3.9.2", False), ("3.5.2", False),
    ("4.0.2", False), ("nonsense", False),
])
def test_a_known_bug_is_present_on_its_affected_line_up_to_the_affected_release(release: str, present: bool) -> None:
    assert KnownBug("KAFKA-15489", "3.6.2", "3.7.0", "one_quorum_leader").present_on(release) is present


def test_the_kraft_suites_quorum_leader_cut_expects_kafka_15489_on_3_6_only() -> None:
    """`run --suite kraft --kafka-version 3.6.2`: the cut leader keeps leading (KAFKA-15489), which
    the suite now expects there (CAUGHT) instead of failing; elsewhere the scenario is ordinary."""
    from kafka_chaos.scenarios.plans.catalogue import by_names
    from kafka_chaos.scenarios.plans.spec import expecting_known_bug

    cut = by_names(["quorum_leader_cut"])[0]
    on_3_6 = expecting_known_bug(cut, "3.6.2")
    assert on_3_6.expects is not None and (on_3_6.expects.jira, on_3_6.expects.caught_by) == ("KAFKA-15489", "one_quorum_leader")
    assert expecting_known_bug(cut, "3.7.2").expects is None and expecting_known_bug(cut, "4.4.0").expects is None
    corpus_run = replace(cut, expects=BUG)  # an explicit expectation (the corpus's) is kept
    assert expecting_known_bug(corpus_run, "3.6.2").expects == BUG

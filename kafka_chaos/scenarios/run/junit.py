"""JUnit XML for CI: one ``<testcase>`` per scenario iteration.

A case fails (``<failure>``) when any of its checks failed, lists failed checks' diffs in the
body; a case whose checks were only undecided, or that crashed before deciding, is an
``<error>`` — an unknown verdict is never shown as green.

Reruns (``kafka-chaos run --deflake N``) are reported the way Maven Surefire does (and Jenkins,
GitLab and pytest-rerunfailures' readers understand): a case that failed and then passed on a
rerun is a success carrying one ``<flakyFailure>`` per failed attempt; a case failing every
attempt keeps its ``<failure>`` and gets one ``<rerunFailure>`` per rerun.

A known-bug corpus entry on its affected release (``JUnitCase.expects``) is a success when its
named check failed (the failures as its output) and a ``<failure>`` when it did not.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.plans.spec import KnownBug


@dataclass(frozen=True)
class JUnitCase:
    scenario: str
    iteration: int
    seconds: float
    results: Sequence[CheckResult] = field(default_factory=tuple)
    error: str | None = None  # the run of the scenario itself broke (harness error, timeout)
    reruns: Sequence[tuple[Sequence[CheckResult], str | None]] = ()  # (results, error) per rerun
    # Every failed check is a known client-library defect the run tolerates (run --tolerate
    # client): reported as skipped with the failures as its text, so CI stays green and sees it.
    tolerated: str | None = None
    # Run on a release with a known Kafka bug (the corpus suite): a success only when its
    # ``caught_by`` check failed; passing means the bug went unseen, a failure.
    expects: KnownBug | None = None

    @property
    def caught(self) -> bool:
        """The named check failed in the run or in a repeat of it (an intermittent entry's)."""
        return self.expects is not None and any(self.expects.caught_in(r) for r in (self.results, *(r for r, _ in self.reruns)))

    @property
    def missed(self) -> bool:
        return self.expects is not None and not self.caught

    @property
    def flaky(self) -> bool:
        """Failed first, then passed on a rerun."""
        return bool(self.failed or self.error or self.unknown) and any(_passed(r, e) for r, e in self.reruns)

    @property
    def name(self) -> str:
        return f"{self.scenario}[{self.iteration}]"

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.passed is False]

    @property
    def unknown(self) -> list[CheckResult]:
        return [r for r in self.results if r.passed is None]


def _passed(results: Sequence[CheckResult], error: str | None) -> bool:
    return error is None and bool(results) and all(r.passed is True for r in results)


def _attempt_text(results: Sequence[CheckResult], error: str | None) -> tuple[str, str]:
    bad = [r for r in results if r.passed is not True]
    message = error or f"{sum(r.passed is False for r in bad)} check(s) failed, {sum(r.passed is None for r in bad)} undecided"
    return message.splitlines()[0][:300], "\n".join(([error] if error else []) + [_line(r) for r in bad])


def _line(r: CheckResult) -> str:
    where = f" {r.topic}-{r.partition}" if r.topic is not None and r.partition is not None else (
        f" {r.topic}" if r.topic else "")
    return f"{r.check}{where}: {r.verdict}: {r.detail or f'expected {r.expected!r}, observed {r.observed!r}'}"


def junit_xml(cases: Sequence[JUnitCase], suite: str = "kafka-chaos") -> ET.ElementTree:
    failures = sum(1 for c in cases if c.missed or (c.failed and not c.flaky and not c.tolerated and not c.caught))
    errors = sum(1 for c in cases if not c.failed and (c.error or c.unknown) and not c.flaky and not c.missed)
    root = ET.Element("testsuites", name=suite, tests=str(len(cases)), failures=str(failures),
                      errors=str(errors), time=f"{sum(c.seconds for c in cases):.3f}")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
                       errors=str(errors), time=f"{sum(c.seconds for c in cases):.3f}")
    for case in cases:
        tc = ET.SubElement(ts, "testcase", classname=f"{suite}.{case.scenario}", name=case.name,
                           time=f"{case.seconds:.3f}")
        if case.expects is not None:
            _known_bug_case(tc, case, case.expects)
            continue
        if case.flaky:  # a success: every failed attempt as a flakyFailure (Surefire)
            for results, error in [(case.results, case.error), *case.reruns]:
                if not _passed(results, error):
                    message, text = _attempt_text(results, error)
                    ET.SubElement(tc, "flakyFailure", message=message, type="CheckFailed").text = text
            continue
        if case.tolerated and case.failed:
            el = ET.SubElement(tc, "skipped", message=f"tolerated: {case.tolerated}"[:300])
            el.text = "\n".join(_line(r) for r in case.failed)
        elif case.failed:
            el = ET.SubElement(tc, "failure", message=f"{len(case.failed)} check(s) failed", type="CheckFailed")
            el.text = "\n".join(_line(r) for r in case.failed + case.unknown)
        elif case.error or case.unknown:
            msg = case.error or f"{len(case.unknown)} check(s) undecided"
            el = ET.SubElement(tc, "error", message=msg.splitlines()[0][:300], type="Unknown")
            el.text = "\n".join(([case.error] if case.error else []) + [_line(r) for r in case.unknown])
        for results, error in case.reruns:  # failed again: each rerun as a rerunFailure (Surefire)
            message, text = _attempt_text(results, error)
            ET.SubElement(tc, "rerunFailure", message=message, type="CheckFailed").text = text
        passed = [r for r in case.results if r.passed is True]
        if passed:
            out = ET.SubElement(tc, "system-out")
            out.text = "\n".join(_line(r) for r in passed)
    ET.indent(root)
    return ET.ElementTree(root)


def _known_bug_case(tc: ET.Element, case: JUnitCase, bug: KnownBug) -> None:
    """A corpus entry on its affected release: the failed checks are the evidence of a success,
    or of a failure when the named one is not among them."""
    lines = "\n".join(([case.error] if case.error else []) + [_line(r) for r in case.failed + case.unknown])
    if case.caught:
        ET.SubElement(tc, "system-out").text = f"{bug.jira} caught on {bug.affected}: {bug.caught_by} failed\n{lines}"
    else:
        ET.SubElement(tc, "failure", message=f"{bug.jira} not caught on {bug.affected}: {bug.caught_by} did not fail",
                      type="KnownBugMissed").text = lines


def write_junit(path: str | Path, cases: Sequence[JUnitCase], suite: str = "kafka-chaos") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    junit_xml(cases, suite).write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)
    return path

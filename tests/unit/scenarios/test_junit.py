"""JUnit XML: failures, unknowns (never green) and passes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.run.junit import JUnitCase, write_junit


def test_junit_cases(tmp_path) -> None:
    ok = CheckResult("oracle_leader", True, 2, 2, "", "t", 0)
    bad = CheckResult("oracle_leader", False, 2, 3, "t-0: leader expected 2, observed 3", "t", 0)
    unknown = CheckResult("metadata_agrees_zk", None, detail="broker 1: no answer")
    path = write_junit(tmp_path / "out" / "junit.xml", [
        JUnitCase("a", 0, 1.5, [ok]),
        JUnitCase("b", 0, 2.0, [ok, bad]),
        JUnitCase("c", 1, 0.5, [ok, unknown]),
        JUnitCase("d", 0, 0.1, [], error="cluster did not start"),
    ])
    root = ET.parse(path).getroot()
    assert root.get("tests") == "4" and root.get("failures") == "1" and root.get("errors") == "2"
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(cases) == {"a[0]", "b[0]", "c[1]", "d[0]"}
    assert cases["a[0]"].find("failure") is None and cases["a[0]"].find("error") is None
    assert "leader expected 2, observed 3" in cases["b[0]"].find("failure").text
    assert cases["c[1]"].find("error") is not None
    assert cases["d[0]"].find("error").get("message") == "cluster did not start"
    assert cases["b[0]"].get("classname") == "kafka-chaos.b"


def test_reruns_are_reported_the_surefire_way() -> None:
    import xml.etree.ElementTree as ET

    from kafka_chaos.scenarios.checks.functions import CheckResult
    from kafka_chaos.scenarios.run.junit import JUnitCase, junit_xml

    bad = (CheckResult("oracle_leader", False, 2, 1, "t-0: leader expected 2, observed 1", "t", 0),)
    good = (CheckResult("oracle_leader", True),)
    flaky = JUnitCase("s", 0, 1.0, bad, None, ((good, None),))
    failing = JUnitCase("f", 0, 1.0, bad, None, ((bad, None), ((), "aborted: not settled")))
    root = junit_xml([flaky, failing]).getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("errors") == "0"
    s, f = suite.findall("testcase")
    assert [e.tag for e in s] == ["flakyFailure"] and s.find("failure") is None
    assert "leader expected 2" in (s.find("flakyFailure").text or "")  # type: ignore[union-attr]
    assert [e.tag for e in f] == ["failure", "rerunFailure", "rerunFailure"]
    assert f.findall("rerunFailure")[1].get("message") == "aborted: not settled"
    assert flaky.flaky and not failing.flaky
    ET.tostring(root)  # serialises


def test_a_tolerated_client_defect_is_skipped_with_its_failures(tmp_path) -> None:
    dup = CheckResult("delivery", False, {"duplicated": 0}, {"duplicated": 1}, "duplicated messages (librdkafka#4953)", "t")
    path = write_junit(tmp_path / "junit.xml", [JUnitCase("a", 0, 1.0, [dup], tolerated="delivery: librdkafka#4953"),
                                                JUnitCase("b", 0, 1.0, [dup])])
    root = ET.parse(path).getroot()
    assert root.get("failures") == "1"  # b only
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    skipped = cases["a[0]"].find("skipped")
    assert cases["a[0]"].find("failure") is None and "librdkafka#4953" in skipped.get("message")
    assert "duplicated messages" in skipped.text


def test_only_an_iteration_whose_every_failure_is_the_clients_is_tolerated() -> None:
    from types import SimpleNamespace as NS

    from kafka_chaos.app.runs import client_defects_only

    def rec(check, observed, passed=False):
        return NS(kind="check", check=check, passed=passed, observed=observed, detail=check, fault=None,
                  started_at=5.0, topic="t", expected=None)

    delivery = rec("delivery", {"lost": 0, "duplicated": 1, "misplaced": 0, "resent_by_producer": 1})
    history = rec("history_duplicate", {"anomalies": 1})
    failing = NS(passed=False, error=None)
    assert "delivery" in client_defects_only(failing, [delivery, history, rec("oracle_leader", None, True)])
    assert client_defects_only(failing, [delivery, history, rec("oracle_leader", None)]) is None  # the model's too
    assert client_defects_only(NS(passed=False, error="aborted"), [delivery]) is None
    assert client_defects_only(NS(passed=True, error=None), []) is None

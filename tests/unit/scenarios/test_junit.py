"""JUnit XML: failures, unknowns (never green) and passes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from scenarios.checks import CheckResult
from scenarios.junit import JUnitCase, write_junit


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

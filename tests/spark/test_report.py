"""run_report end to end on a shared Spark session (the CLI in its own process, and failing
gates: tests/spark/test_baseline.py, whose CLI run covers both)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from kafka_chaos.results.phases import leader_switch_rows
from kafka_chaos.results.report import run_report
from kafka_chaos.results.synthetic import write_synthetic_results
from kafka_chaos.records.writer import RecordWriter
from tests.spark.helpers import record


@pytest.fixture(scope="module")
def results_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    write_synthetic_results(root / "nightly" / "run-1", 900, seed=1, records_per_run=300)
    with RecordWriter(root / "nightly" / "run-2") as writer:
        writer.write(record(run_id="manual", passed=False, detail="leader 3, expected 2",
                            expected={"leader": 2, "isr": [2, 3]}, observed={"leader": 3, "isr": [3]}))
        writer.write(record(run_id="manual", kind="measurement", check="latency", passed=None,
                            latency_ms={"detection": 1.0, "election": 2.0}))
    with open(root / "nightly" / "run-2" / "records.jsonl", "a", encoding="utf-8") as out:
        out.write('{"schema_version": 1, "run_id": "cut')  # a run killed mid-write
        out.write("\n" + json.dumps({"schema_version": 99, "run_id": "future"}) + "\n")
    (root / "nightly" / "run-3").mkdir()
    (root / "nightly" / "run-3" / "records.jsonl").write_text("")
    (root / "no-records").mkdir()
    return root


@pytest.fixture(scope="module")
def report(results_root, spark):
    out = results_root / "out"
    summary = run_report([results_root / "nightly", results_root / "no-records", results_root / "missing"], out,
                         min_pass_rate=0.5, max_latency=["hard_kill:election:p99=1e9"],
                         baseline=[results_root / "nightly" / "run-1"], spark=spark)
    return summary, json.loads((out / "summary.json").read_text())


def test_problems_are_counted_and_reported(report, results_root):
    summary, document = report
    run2 = results_root / "nightly" / "run-2" / "records.jsonl"
    problems = "\n".join(summary.problems)
    assert f"{results_root / 'missing'}: does not exist" in problems
    assert f"{results_root / 'no-records'}: no records.jsonl in it or below it" in problems
    assert f"{results_root / 'nightly' / 'run-3' / 'records.jsonl'}: empty (no records)" in problems
    assert f"{run2}: 1 malformed line(s) skipped" in problems
    assert f"{run2}: 1 record(s) rejected, first: schema_version 99 is not readable" in problems
    files = {row["source"]: row for row in document["files"]}
    assert (files[str(run2)]["valid"], files[str(run2)]["malformed"], files[str(run2)]["rejected"]) == (2, 1, 1)
    assert document["problems"] == list(summary.problems)


def test_summary_json_has_the_promised_tables(report, results_root):
    summary, document = report
    assert document["totals"]["records"] == 902
    for key in ("pass_rates", "latency", "latency_by_partitions", "latency_by_session_timeout",
                "trend_by_day", "trend_by_run", "failing_checks"):
        assert document[key], key
    assert set(document["pass_rates"][0]) >= {"scenario", "check", "backend", "kafka_version", "passed",
                                              "failed", "unknown", "pass_rate"}
    assert set(document["latency"][0]) >= {"fault", "phase", "count", "p50", "p90", "p99", "max"}
    manual = [f for f in document["failing_checks"] if f["run_id"] == "manual"]
    assert json.loads(manual[0]["observed"]) == {"leader": 3, "isr": [3]}
    assert manual[0]["detail"] == "leader 3, expected 2"
    assert summary.ok and summary.exit_code == 0 and document["gates"]["failures"] == []
    assert document["baseline"]["sources"] == [str(results_root / "nightly" / "run-1" / "records.jsonl")]
    assert {row["fault"] for row in document["latency_samples"]} >= {"hard_kill", "controlled_shutdown"}
    assert sum(document["latency_samples"][0]["counts"]) == document["latency_samples"][0]["count"]


def test_parquet_tables_and_html(report, spark):
    summary, document = report
    tables = summary.out / "tables"
    assert spark.read.parquet(str(tables / "pass_rates")).count() == len(document["pass_rates"])
    assert spark.read.parquet(str(tables / "failing_checks")).count() == document["failing_checks_total"]
    # written by pyarrow from the collected rows: the same rows, and Spark's column types
    trend = spark.read.parquet(str(tables / "trend_by_day"))
    assert [r.asDict() | {"day": r.day.isoformat()} for r in trend.collect()] == document["trend_by_day"]
    assert dict(trend.dtypes) == {"day": "date", "runs": "bigint", "passed": "bigint", "failed": "bigint",
                                  "unknown": "bigint", "pass_rate": "double", "ci_low": "double", "ci_high": "double"}
    page = summary.html.read_text()
    assert 'src="data:image/png' not in page  # every chart is inline SVG (no matplotlib)
    charts = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="chart"[^>]* aria-label="([^"]*)"', page)
    assert sum(label.startswith("Latency distribution") for label in charts) == len(
        {row["fault"] for row in leader_switch_rows(document["latency_histogram"])})  # one per fault
    assert {"Where a leader switch spends its time, per fault", "Pass rate over time (UTC)",
            "Pass rate per scenario and check"} <= set(charts)
    assert "Producer outage per fault" in " ".join(charts)  # the clients' own chart, apart
    assert "Failing checks" in page and "manual" in page


def _chromium() -> str | None:
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.environ.get("KAFKA_CHAOS_REQUIRE_BROWSER"):
        pytest.fail("KAFKA_CHAOS_REQUIRE_BROWSER is set but no chromium is installed (scripts/setup.sh --browser)")
    return found


def test_the_report_renders_in_a_real_headless_browser(report, results_root, tmp_path):
    """Chromium (Debian's) loads report.html with no network: the verdict is the first thing on
    the page, then the failing checks with their replay commands, the heatmap, the folded table."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium installed (scripts/setup.sh --browser installs it)")
    page = results_root / "out" / "report.html"
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    body = dom[dom.index("<body"):]
    order = [body.index(marker) for marker in ('id="verdict"', 'id="failing"', 'id="baseline"', 'id="heatmap"',
                                               "Pass rates per scenario × check × backend",
                                               "Latency of a leader switch")]
    assert order == sorted(order), "verdict, failing checks, baseline, heatmap, the folded table, then latency"
    baseline = body[body.index('id="baseline"'):body.index('id="heatmap"')]
    assert "Compared with baseline" in baseline and "Mann–Whitney U" in baseline and "not gating" in baseline
    assert "Latency per fault × phase, baseline → this run" in baseline
    assert "FAILED:" in body and "kafka-chaos run --scenario" in body
    shot = tmp_path / "first-screen.png"
    subprocess.run([*common, "--window-size=1280,900", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000


def test_a_second_report_takes_every_input_from_the_cache_and_starts_no_jvm(results_root, spark, tmp_path,
                                                                             monkeypatch):
    """The first report parses the two non-empty files and keeps their partials; the second,
    given no session, finds both cached: no Spark start, the same tables and problem examples."""
    monkeypatch.setenv("KAFKA_CHAOS_REPORT_CACHE", str(tmp_path / "cache"))
    run_report([results_root / "nightly"], tmp_path / "first", spark=spark)
    run_report([results_root / "nightly"], tmp_path / "second")
    first, second = (json.loads((tmp_path / name / "summary.json").read_text()) for name in ("first", "second"))
    assert first["timings"]["cached_inputs"] == 0
    assert (second["timings"]["cached_inputs"], second["timings"]["spark_start_s"]) == (2, 0)
    assert any(row["malformed_example"] for row in second["files"])
    for key in ("files", "problems", "totals", "pass_rates", "latency", "latency_histogram", "latency_samples",
                "failing_checks"):
        assert second[key] == first[key], key
    assert run_report([results_root / "nightly"], tmp_path / "third", spark=spark, use_cache=False)
    assert json.loads((tmp_path / "third" / "summary.json").read_text())["timings"]["cached_inputs"] == 0


def test_an_entry_unreadable_when_the_report_reads_it_starts_spark_after_all(results_root, spark, tmp_path,
                                                                             monkeypatch):
    """The cache holds both files when the report looks, but their entries turn out unreadable:
    the report starts its session then, reads the files and gives the same tables."""
    import contextlib

    import kafka_chaos.results.spark_session

    monkeypatch.setenv("KAFKA_CHAOS_REPORT_CACHE", str(tmp_path / "cache"))
    run_report([results_root / "nightly"], tmp_path / "first", spark=spark)
    for entry in (tmp_path / "cache").glob("*.arrow"):
        entry.write_bytes(entry.read_bytes()[:40])  # present, so counted as cached, but truncated
    started = []

    @contextlib.contextmanager
    def shared_session(*args, **kwargs):  # the module's session, left running for the other tests
        started.append(kwargs)
        yield spark

    monkeypatch.setattr(kafka_chaos.results.spark_session, "spark_session", shared_session)
    run_report([results_root / "nightly"], tmp_path / "second")
    first, second = (json.loads((tmp_path / name / "summary.json").read_text()) for name in ("first", "second"))
    assert len(started) == 1 and second["timings"]["cached_inputs"] == 0
    for key in ("files", "totals", "pass_rates", "latency", "failing_checks"):
        assert second[key] == first[key], key

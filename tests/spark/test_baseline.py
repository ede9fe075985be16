"""`report --baseline`: a real regression fails the gate, a run compared with itself passes, and
a summary.json baseline gives the same verdict as the records it was written from."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_chaos.results.report import run_report
from kafka_chaos.results.synthetic import write_synthetic_results

REPO = Path(__file__).resolve().parents[2]
RULES = ["*:election:p99=20%,p<0.01", "pass_rate"]


def slower_and_failing(source: Path, target: Path, factor: float) -> None:
    """The same records with every latency ``factor`` times longer and every leader_hard_kill
    oracle_leader check failed: a regression of both kinds."""
    target.mkdir(parents=True)
    with open(source, encoding="utf-8") as lines, open(target / "records.jsonl", "w", encoding="utf-8") as out:
        for line in lines:
            record = json.loads(line)
            if record["latency_ms"]:
                record["latency_ms"] = {k: v * factor if v is not None else None for k, v in record["latency_ms"].items()}
            if record["scenario"] == "leader_hard_kill" and record["check"] == "oracle_leader":
                record["passed"] = False
            out.write(json.dumps(record) + "\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("baseline")
    before = write_synthetic_results(root / "before", 1_500, seed=3, records_per_run=500)
    slower_and_failing(before, root / "after", 1.6)
    return root


@pytest.fixture(scope="module")
def before_report(runs, spark, tmp_path_factory):
    """``before`` compared with its own records under the gating rules; its summary.json is the
    baseline of the summary.json tests."""
    return run_report([runs / "before"], tmp_path_factory.mktemp("before-report"), baseline=[runs / "before"],
                      max_regression=RULES, spark=spark)


@pytest.fixture(scope="module")
def cli_process(runs, tmp_path_factory):
    """The one CLI run of tests/spark, started first and left running in its own process (a fresh
    process and JVM cost ~20 s; meanwhile this process's tests use the shared session): ``after``
    against ``before``'s records with every kind of gate failing at once — --min-pass-rate,
    --max-latency (one limit exceeded, one not) and the --max-regression rules."""
    work = tmp_path_factory.mktemp("cli")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen(
        [sys.executable, "-m", "kafka_chaos.cli.main", "report", str(runs / "after"), "--out", str(work / "out"),
         "--min-pass-rate", "0.999", "--max-latency", "*:election:p50=0.5",
         "--max-latency", "hard_kill:first_produce:max=1e9", "--baseline", str(runs / "before"),
         *[argument for rule in RULES for argument in ("--max-regression", rule)]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work, env=env, start_new_session=True,
    )
    yield work, process
    if process.poll() is None:  # a test failed before waiting for it: the CLI and its JVM go
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def cli(cli_process):
    work, process = cli_process
    stdout, stderr = process.communicate(timeout=600)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return work, done, json.loads((work / "out" / "summary.json").read_text())


def test_a_run_compared_with_itself_passes(cli_process, before_report):
    summary = before_report
    assert summary.exit_code == 0 and summary.regressions == ()
    assert "no regression" in summary.terminal


def test_the_gate_fails_on_a_real_regression(cli):
    work, done, document = cli
    failures = document["gates"]["failures"]
    assert done.returncode == 1, done.stderr
    latency = [f for f in failures if f.startswith("--max-regression *:election:p99=20%,p<0.01:")]
    assert {line.split(": ")[1].split(" election")[0] for line in latency} == {
        "controlled_shutdown", "hard_kill", "session_expiry", "unclean_election"}
    rates = [f for f in failures if f.startswith("--max-regression pass_rate:")]
    assert len(rates) == 1 and "leader_hard_kill oracle_leader pass rate" in rates[0]
    assert document["baseline"]["gating"]
    assert document["baseline"]["regressions"] == [f for f in failures if f.startswith("--max-regression")]
    assert document["gates"]["max_regression"] == RULES
    assert "compared with baseline" in done.stdout
    assert "5 regression(s), listed under the CI gate below" in done.stdout
    page = (work / "out" / "report.html").read_text()
    assert 'id="baseline"' in page and 'id="regressions"' in page


def test_a_summary_json_baseline_gives_the_same_comparison_and_no_rules_do_not_gate(
        runs, spark, before_report, cli, tmp_path):
    from_summary = run_report([runs / "after"], tmp_path, baseline=[before_report.summary_json], spark=spark)
    assert from_summary.exit_code == 0 and from_summary.regressions  # default rules flag, without gating
    assert "(not gating)" in from_summary.terminal and "regression(s):" in from_summary.terminal

    def tables(document):  # the statistics; which rows regressed depends on the rules
        return [[{k: v for k, v in row.items() if k != "regressed"} for row in document["baseline"][key]]
                for key in ("latency", "pass_rates")]

    assert tables(json.loads(from_summary.summary_json.read_text())) == tables(cli[2])


def test_cli_gates_exit_1_with_one_line_each_and_keep_spark_off_the_terminal(cli):
    work, done, document = cli
    failures = document["gates"]["failures"]
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [f"kafka-chaos: CI gate failed ({len(failures)} condition(s), listed above)"]
    assert any(f.startswith("overall pass rate") and "under --min-pass-rate 0.999" in f for f in failures)
    assert any("hard_kill election p50" in f for f in failures)
    assert not any("first_produce" in f for f in failures)
    assert "pass rate" in done.stdout and f"report: {work / 'out' / 'report.html'}" in done.stdout
    gate = done.stdout[done.stdout.index("CI gate FAILED:"):].splitlines()
    assert gate[1:len(failures) + 1] == [f"  {f}" for f in failures]
    regression = [line for line in gate if line.startswith("  --max-regression *:election:p99=20%,p<0.01: hard_kill ")]
    assert len(regression) == 1 and regression[0].startswith(
        "  --max-regression *:election:p99=20%,p<0.01: hard_kill election p99 ")
    assert "Mann–Whitney U one-sided p=" in regression[0]
    assert (work / "out" / "spark.log").is_file()
    assert sorted(p.name for p in work.iterdir()) == ["out"]  # no spark-warehouse / metastore_db litter

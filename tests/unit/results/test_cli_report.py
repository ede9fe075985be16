"""`kafka-chaos report` argument errors: one line, exit 2, before any JVM starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_chaos.cli.main import main


@pytest.mark.parametrize("extra, message", [
    (["--min-pass-rate", "2"], "between 0 and 1"),
    (["--max-latency", "hard_kill:election:p99"], "FAULT:PHASE:STAT=MS"),
    (["--max-latency", "hard_kill:nope:p99=1"], "unknown phase"),
    (["--max-regression", "pass_rate"], "--max-regression needs --baseline"),
    (["--baseline", "/nonexistent/run", "--max-regression", "pass_rate"], "--baseline /nonexistent/run: not found"),
    (["--baseline", ".", "--max-regression", "p95=10%"], "unknown statistic 'p95'"),
    (["--baseline", ".", "--max-regression", "p99=10"], "expected pass_rate[:ci=0.95] or"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, extra, message):
    (tmp_path / "records.jsonl").write_text("")
    assert main(["report", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("kafka-chaos: error:")


def test_missing_results_dir_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results dir not found" in err


def test_out_that_is_a_file_exits_2(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    (tmp_path / "records.jsonl").write_text("")
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "file")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_empty_results_dir_gives_an_empty_report_without_spark(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    assert main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "0 records" in out and "no records.jsonl in it or below it" in out
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "summary.json").is_file()


def test_gate_on_an_empty_report_fails(tmp_path):
    (tmp_path / "records.jsonl").write_text("")
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "out"), "--min-pass-rate", "0.5"]) == 1


def test_importing_the_report_api_does_not_load_spark_or_matplotlib():
    code = ("import sys, kafka_chaos.results.report, kafka_chaos.cli.report; "
            "heavy = [m for m in ('pyspark', 'matplotlib', 'py4j') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_baseline_without_records_or_summary_exits_2(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "records.jsonl").write_text("")
    (tmp_path / "old").mkdir()
    assert main(["report", str(tmp_path / "run"), "--baseline", str(tmp_path / "old")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no records.jsonl (with records) or summary.json in it or below it" in err


def test_a_summary_from_before_baselines_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "records.jsonl").write_text("")
    old = tmp_path / "summary.json"
    old.write_text('{"totals": {}, "pass_rates": []}')
    assert main(["report", str(tmp_path), "--baseline", str(old)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no latency_samples" in err and "pass the results directory instead" in err

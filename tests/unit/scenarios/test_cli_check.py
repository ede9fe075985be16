"""`kafka-chaos check` over a stored history (no cluster): the same records again, changed
verdicts listed, bad input one line."""

from __future__ import annotations

from pathlib import Path

from kafka_chaos.cli.main import main
from kafka_chaos.records.writer import RecordWriter, read_records
from kafka_chaos.scenarios.checks.registry import check_history, to_records
from kafka_chaos.scenarios.history.observations import HistoryWriter
from tests.unit.scenarios.histories import hard_kill_step, snapshot, zk_partition


def _stored_run(directory: Path, observations) -> None:
    """What `kafka-chaos run` leaves: history.jsonl plus the records of its checks."""
    history = HistoryWriter(directory)
    with RecordWriter(directory) as writer:
        for obs, results in check_history(observations):
            history.append(obs)
            for record in to_records(obs, results):
                writer.write(record)
    history.close()


def test_unchanged_checks_give_the_stored_records_again(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    _stored_run(run, [hard_kill_step()])
    assert main(["check", str(run), "--out", str(tmp_path / "out"), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "0 verdict(s) differ from the stored records" in out
    assert (sorted(r.to_json() for r in read_records(tmp_path / "out").records)
            == sorted(r.to_json() for r in read_records(run).records))


def test_a_stored_verdict_that_todays_checks_disagree_with_is_listed(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    _stored_run(run, [hard_kill_step()])
    # Yesterday's records said t-0's leader check failed (say, an oracle bug since fixed).
    stored = read_records(run).records
    (run / "records.jsonl").write_text("".join(
        (r.__class__(**{**r.__dict__, "passed": False}) if r.check == "oracle_leader" and r.partition == 0 else r)
        .to_json() + "\n" for r in stored))
    assert main(["check", str(run), "--out", str(tmp_path / "out"), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "1 verdict(s) differ" in out and "oracle_leader t-0 after hard_kill: FAIL -> pass" in out


def test_a_failing_history_exits_1(tmp_path: Path, capsys) -> None:
    wrong = snapshot((2, 3), [zk_partition(0, (1, 2), 1, (2,), 5, 2), zk_partition(1, (2, 3), 2, (2, 3), 0)])
    run = tmp_path / "run"
    _stored_run(run, [hard_kill_step(after=wrong, metadata=None)])
    assert main(["check", str(run), "--out", str(tmp_path / "out"), "--no-report"]) == 1
    assert "0 verdict(s) differ" in capsys.readouterr().out  # the stored run failed the same way


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["check", str(tmp_path / "nope"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no history.jsonl here" in err
    run = tmp_path / "run"
    _stored_run(run, [hard_kill_step()])
    assert main(["check", str(run), "--out", str(run), "--no-report"]) == 2
    assert "is an input dir" in capsys.readouterr().err

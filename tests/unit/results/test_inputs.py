"""kafka_chaos.results.inputs: which files a report reads; missing and empty inputs become problems."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.errors import UsageError
from kafka_chaos.results.inputs import empty_file_problems, locate_inputs, record_files


def test_run_dir_dir_of_runs_and_file(tmp_path):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "b" / "deep").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "records.jsonl").write_text("{}\n")
    (tmp_path / "runs" / "b" / "deep" / "records.jsonl").write_text("")
    single = tmp_path / "runs" / "a"
    inputs = locate_inputs([single, tmp_path / "runs", single / "records.jsonl"])
    assert [len(item.files) for item in inputs] == [1, 2, 1]
    files = record_files(inputs)
    assert len(files) == 2  # each file once
    assert empty_file_problems(files) == [f"{tmp_path / 'runs' / 'b' / 'deep' / 'records.jsonl'}: empty (no records)"]


def test_missing_and_empty_dirs_are_problems_not_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    inputs = locate_inputs([tmp_path / "empty", tmp_path / "missing"])
    assert [item.problem for item in inputs] == ["no records.jsonl in it or below it", "does not exist"]
    assert record_files(inputs) == []


def test_no_existing_dir_at_all_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="results dir not found: .*nope1, .*nope2"):
        locate_inputs([tmp_path / "nope1", tmp_path / "nope2"])

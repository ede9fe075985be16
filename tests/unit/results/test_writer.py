"""kafka_chaos.records.writer: durable, thread-safe append; run.json; reading back with bad lines sorted out."""

from __future__ import annotations

import json
import os
import threading

import pytest

from kafka_chaos.records.writer import RECORDS_FILE, RUN_INFO_FILE, RecordWriter, read_records
from tests.unit.results.test_schema import make_record


def test_written_records_read_back_equal(tmp_path):
    records = [make_record(iteration=i, passed=[True, False, None][i % 3]) for i in range(5)]
    with RecordWriter(tmp_path / "run") as writer:
        for record in records:
            writer.write(record)
    assert writer.written == 5
    result = read_records(tmp_path / "run")
    assert result.records == records
    assert result.malformed == [] and result.rejected == []


def test_every_record_is_fsynced(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    with RecordWriter(tmp_path) as writer:
        writer.write(make_record())
        # Durable before close: another reader sees it at once.
        assert (tmp_path / RECORDS_FILE).read_text().count("\n") == 1
        writer.write(make_record())
    assert len(synced) == 2


def test_a_batch_is_written_in_order_with_one_fsync(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    batch = [make_record(iteration=i) for i in range(4)]
    with RecordWriter(tmp_path) as writer:
        writer.write_all(batch)
        assert (tmp_path / RECORDS_FILE).read_text().count("\n") == 4  # durable before close
        writer.write_all([])
        assert writer.written == 4
    assert len(synced) == 1
    assert read_records(tmp_path).records == batch


def test_appends_to_an_existing_file(tmp_path):
    with RecordWriter(tmp_path) as writer:
        writer.write(make_record(iteration=0))
    with RecordWriter(tmp_path) as writer:
        writer.write(make_record(iteration=1))
    assert [r.iteration for r in read_records(tmp_path).records] == [0, 1]


def test_concurrent_writers_never_interleave_lines(tmp_path):
    writer = RecordWriter(tmp_path)
    threads = [threading.Thread(target=lambda t=t: [writer.write(make_record(iteration=t * 100 + i,
                                                                              detail="x" * 5000))
                                                    for i in range(50)])
               for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    result = read_records(tmp_path)
    assert result.malformed == []
    assert sorted(r.iteration for r in result.records) == sorted(t * 100 + i for t in range(4) for i in range(50))


def test_refuses_what_is_not_a_record_and_writes_after_close(tmp_path):
    writer = RecordWriter(tmp_path)
    with pytest.raises(TypeError, match="Record"):
        writer.write({"run_id": "x"})
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(make_record())


def test_run_info_is_written_whole(tmp_path):
    with RecordWriter(tmp_path) as writer:
        path = writer.write_run_info({"seed": 7, "argv": ["run", "--seed", "7"], "started": 1.5})
    assert path == tmp_path / RUN_INFO_FILE
    assert json.loads(path.read_text()) == {"seed": 7, "argv": ["run", "--seed", "7"], "started": 1.5}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_read_sorts_out_malformed_rejected_and_blank_lines(tmp_path):
    good = make_record().to_json()
    newer = json.loads(good) | {"schema_version": 99}
    missing = json.loads(good)
    del missing["run_id"]
    lines = [good, "", "not json", "[1, 2]", json.dumps(newer), json.dumps(missing),
             json.dumps(json.loads(good) | {"schema_version": True}), good[:40]]
    (tmp_path / RECORDS_FILE).write_text("\n".join(lines))  # the last line is truncated, no newline
    result = read_records(tmp_path / RECORDS_FILE)
    assert len(result.records) == 1
    assert [bad.line_number for bad in result.rejected] == [5]
    assert "99" in result.rejected[0].reason
    assert [bad.line_number for bad in result.malformed] == [3, 4, 6, 7, 8]
    assert "run_id" in result.malformed[2].reason

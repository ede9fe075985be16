"""kafka_chaos.results.partials_cache: per-file partial aggregates kept between reports (no Spark here: the
golden tests in tests/spark check what a cached report computes)."""

from __future__ import annotations

import logging
import os

import pyarrow as pa

from kafka_chaos.results.partials_cache import FilePartials, PartialsCache, merged


def records(tmp_path, name="records.jsonl", text='{"a": 1}\n'):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def partials(n=3, source="file:/x"):
    table = pa.table({"file_id": pa.array([7] * n, pa.int64()), "table": ["latency"] * n, "n": list(range(n))})
    return FilePartials(table, {(source, "malformed"): "missing run_id: {}"})


def test_a_stored_file_loads_back_whole_with_its_examples(tmp_path):
    cache = PartialsCache(tmp_path / "cache")
    path = records(tmp_path)
    assert cache.load(path) is None and cache.missing([path]) == [path]
    cache.store(path, partials(), cache.key(path))
    loaded = cache.load(path)
    assert loaded is not None and loaded.table.equals(partials().table)
    assert loaded.examples == partials().examples
    assert cache.missing([path]) == [] and cache.load_many([path, tmp_path / "gone"]) == {path: loaded}


def test_a_file_appended_to_or_replaced_is_a_miss(tmp_path):
    cache = PartialsCache(tmp_path / "cache")
    path = records(tmp_path)
    cache.store(path, partials(), cache.key(path))
    with open(path, "a", encoding="utf-8") as out:
        out.write('{"a": 2}\n')
    assert cache.load(path) is None
    cache.store(path, partials(), cache.key(path))
    replacement = records(tmp_path, "other.jsonl", path.read_text(encoding="utf-8"))
    os.utime(replacement, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    os.replace(replacement, path)  # same size and mtime, another inode
    assert cache.load(path) is None


def test_a_file_that_changed_while_it_was_read_is_not_stored(tmp_path):
    cache = PartialsCache(tmp_path / "cache")
    path = records(tmp_path)
    read_key = cache.key(path)
    with open(path, "a", encoding="utf-8") as out:  # a run still writing its records
        out.write('{"a": 2}\n')
    cache.store(path, partials(), read_key)
    assert cache.load(path) is None and not list((tmp_path / "cache").glob("*.arrow"))


def test_other_code_finds_none_of_the_entries(tmp_path, monkeypatch):
    cache = PartialsCache(tmp_path / "cache")
    path = records(tmp_path)
    cache.store(path, partials(), cache.key(path))
    monkeypatch.setattr("kafka_chaos.results.partials_cache.code_version", lambda: "another query")
    assert PartialsCache(tmp_path / "cache").load(path) is None


def test_an_unreadable_entry_is_a_miss_and_removed(tmp_path, caplog):
    cache = PartialsCache(tmp_path / "cache")
    path = records(tmp_path)
    cache.store(path, partials(), cache.key(path))
    (entry,) = (tmp_path / "cache").glob("*.arrow")
    entry.write_bytes(entry.read_bytes()[:40])
    with caplog.at_level(logging.WARNING):
        assert cache.load(path) is None
    assert not entry.exists() and "unreadable" in caplog.text


def test_the_least_recently_used_entries_go_beyond_the_limit(tmp_path):
    paths = [records(tmp_path, f"r{i}.jsonl") for i in range(3)]
    cache = PartialsCache(tmp_path / "cache", limit_bytes=1 << 30)
    for i, path in enumerate(paths):
        cache.store(path, partials(n=1000), cache.key(path))
        for entry in (tmp_path / "cache").glob("*.arrow"):  # the older the path, the older its entry
            os.utime(entry, ns=(entry.stat().st_mtime_ns - 10**9, entry.stat().st_mtime_ns - 10**9))
    assert cache.load(paths[0]) is not None  # used now: the most recent
    one = max(entry.stat().st_size for entry in (tmp_path / "cache").glob("*.arrow"))
    cache.limit_bytes = 2 * one
    cache.prune()
    assert [cache.has(path) for path in paths] == [True, False, True]


def test_a_cache_that_cannot_be_written_leaves_the_report_uncached(tmp_path, caplog):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the directory should be", encoding="utf-8")
    cache = PartialsCache(blocker)
    path = records(tmp_path)
    with caplog.at_level(logging.WARNING):
        cache.store(path, partials(), cache.key(path))
        cache.store(path, partials(), cache.key(path))
    assert cache.load(path) is None
    assert caplog.text.count("cannot write") == 1


def test_merged_partials_concatenate_rows_and_unite_examples():
    both = merged([partials(2, "file:/a"), partials(3, "file:/b")])
    assert both.table.num_rows == 5 and set(both.examples) == {("file:/a", "malformed"), ("file:/b", "malformed")}

"""Failing a log directory the way a running JVM sees it (harness.log_dirs), the brokers'
``log.dirs`` layout (harness.config) and the launchers' shared controls — on temporary
directories, no JVM."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness import config as c
from kafka_chaos.harness.local.log_dirs import LocalLogDirControls
from kafka_chaos.harness.log_dirs import fail_directory, is_failed, partition_of, partitions_in, repair_directory


@pytest.mark.parametrize(("count", "expected"), [
    (1, ["/d/data"]),
    (2, ["/d/data/a", "/d/data/b"]),
    (3, ["/d/data/a", "/d/data/b", "/d/data/c"]),
])
def test_log_dir_paths(count: int, expected: list[str]) -> None:
    assert c.log_dir_paths("/d/data", count) == expected


def test_two_log_dirs_reach_server_properties_and_one_keeps_the_old_layout() -> None:
    def props(dirs: int) -> dict[str, str]:
        return c.broker_properties(c.ClusterConfig(brokers=3, log_dirs=dirs), 1, zookeeper_connect="zk:2181",
                                   listeners={"PLAINTEXT": "127.0.0.1:9092"}, log_dir="/data")
    assert props(1)[c.LOG_DIRS] == "/data"
    assert props(2)[c.LOG_DIRS] == "/data/a,/data/b"


@pytest.mark.parametrize("bad", [0, 5, -1, True, "2"])
def test_log_dirs_out_of_range_are_refused(bad: object) -> None:
    with pytest.raises(UsageError, match="log_dirs"):
        c.ClusterConfig(log_dirs=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "expected"), [
    ("t-0", ("t", 0)),
    ("my-topic-12", ("my-topic", 12)),
    ("__consumer_offsets-3", ("__consumer_offsets", 3)),
    ("t-0.5f1e2d3c4b5a69788796a5b4c3d2e1f0-delete", None),
    ("t-1.5f1e2d3c4b5a69788796a5b4c3d2e1f0-future", None),
    ("replication-offset-checkpoint", None),
    ("t-01", None),
    ("-3", None),
    ("t", None),
])
def test_partition_of_a_directory_entry(name: str, expected: tuple[str, int] | None) -> None:
    assert partition_of(name) == expected


@given(st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20), st.integers(min_value=0, max_value=10**6))
def test_partition_directory_names_round_trip(topic: str, partition: int) -> None:
    # Kafka names a replica's directory <topic>-<partition> (UnifiedLog.logDirName)
    assert partition_of(f"{topic}-{partition}") == (topic, partition)


def _log_dir(tmp_path: Path) -> Path:
    d = tmp_path / "a"
    for name in ("t-0", "t-3", "__consumer_offsets-1", "u-2.abc-delete"):
        (d / name).mkdir(parents=True)
        (d / name / "00000000000000000000.log").write_bytes(b"data")
    (d / "replication-offset-checkpoint").write_text("0\n0\n")
    return d


def test_a_failed_directory_refuses_new_files_and_keeps_its_data_aside(tmp_path: Path) -> None:
    d = _log_dir(tmp_path)
    open_segment = open(d / "t-0" / "00000000000000000000.log", "ab")  # as the JVM holds it
    fail_directory(d)
    assert is_failed(d) and d.is_file()
    # What the broker's next checkpoint write meets (CheckpointFile writes <dir>/<name>.tmp):
    with pytest.raises(NotADirectoryError):
        (d / "replication-offset-checkpoint.tmp").write_text("x")
    open_segment.write(b"more")  # an open segment still takes appends: detection is the next new file
    open_segment.close()
    assert partitions_in(d) == [("__consumer_offsets", 1), ("t", 0), ("t", 3)]
    assert repair_directory(d) is True
    assert d.is_dir() and not is_failed(d)
    assert (d / "t-0" / "00000000000000000000.log").read_bytes() == b"datamore"
    assert repair_directory(d) is False  # idempotent


def test_failing_twice_or_a_missing_directory_is_one_clear_error(tmp_path: Path) -> None:
    d = _log_dir(tmp_path)
    fail_directory(d)
    with pytest.raises(HarnessError, match="already failed"):
        fail_directory(d)
    with pytest.raises(HarnessError, match="does not exist"):
        fail_directory(tmp_path / "nowhere")


class _Local(LocalLogDirControls):
    def __init__(self, root: Path, dirs: int) -> None:
        self.config = c.ClusterConfig(brokers=3, log_dirs=dirs)
        self._root = root

    def _broker(self, broker_id: int) -> SimpleNamespace:  # type: ignore[override]
        if broker_id not in (1, 2, 3):
            raise UsageError(f"unknown broker id {broker_id}")
        return SimpleNamespace(directory=self._root / f"broker-{broker_id}")


def test_local_controls_fail_and_repair_one_of_two_directories(tmp_path: Path) -> None:
    local = _Local(tmp_path, 2)
    assert local.log_dirs(2) == [str(tmp_path / "broker-2" / "data" / "a"), str(tmp_path / "broker-2" / "data" / "b")]
    for name in ("a/t-0", "b/t-1"):
        (tmp_path / "broker-2" / "data" / name).mkdir(parents=True)
    assert local.log_dir_partitions(2, 1) == [("t", 1)]
    local.fail_log_dir(2, 1)
    assert local.failed_log_dirs(2) == [1] and local.failed_log_dirs(1) == []
    assert local.log_dir_partitions(2, 1) == [("t", 1)]  # still known while failed
    assert local.repair_log_dirs(2) == [1]
    assert local.failed_log_dirs(2) == []
    with pytest.raises(UsageError, match="0..1"):
        local.fail_log_dir(2, 2)

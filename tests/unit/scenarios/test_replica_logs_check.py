"""The replica_logs_agree invariant: blocks of a replica's log (scenarios.history.replica_logs),
the pure check (scenarios.checks.replica_logs), and what the observation reads
(scenarios.run.log_view) from log directories in a temporary directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot
from kafka_chaos.harness.replica_logs import Batch
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.checks.replica_logs import check_partition_logs, check_replica_logs
from kafka_chaos.scenarios.history.observations import StepObserved, observation_from_json, observation_to_json
from kafka_chaos.scenarios.history.replica_logs import BLOCK_OFFSETS, PartitionLogs, compared_range, log_blocks
from kafka_chaos.scenarios.run.log_view import replica_logs
from tests.unit.harness.test_replica_logs import v2_batch
from tests.unit.scenarios.histories import hard_kill_step


def log_of(*sizes: int, start: int = 0, payload: bytes = b"r") -> list[Batch]:
    """Consecutive batches of ``sizes`` records from offset ``start``."""
    batches, offset = [], start
    for n in sizes:
        batches.append(Batch(offset, offset + n - 1, v2_batch(offset, n, payload)))
        offset += n
    return batches


LOG = log_of(*[1] * 3000)  # 3,000 single-record batches: three blocks


def partition(high: int = 2500, **replicas: list[Batch] | str) -> PartitionLogs:
    return PartitionLogs(1, 0, high, {int(b[1:]): r if isinstance(r, str) else log_blocks(r, 0, high)
                                      for b, r in replicas.items()})


def test_blocks_cut_the_range_by_base_offset_and_leave_out_batches_not_wholly_inside() -> None:
    blocks = log_blocks(log_of(10, 1020, 1100, 5), 10, 2130)
    assert [(b.start, b.batches, b.first_offset, b.last_offset) for b in blocks] == \
        [(0, 1, 10, 1029), (1024, 1, 1030, 2129)]  # the last batch ends past the range: left out
    assert log_blocks(log_of(10, 1020, 1100, 5), 11, 2130)[0].first_offset == 1030  # 10.. starts before


def test_the_range_runs_from_the_latest_log_start_to_the_lowest_checkpointed_high_watermark() -> None:
    assert compared_range([0, 40, 12], [900, 850, 2000]) == (40, 850)
    assert compared_range([], []) == (0, 0)


# Each case fires only on its own difference: (the follower's log, the verdict, in the detail).
CASES = {
    "alike": (LOG, True, "2 replicas alike: 2500 batches in offsets 0..2499"),
    "longer beyond the high watermark": (LOG + log_of(5, start=3000), True, "alike"),
    "one byte differs": (LOG[:1500] + log_of(1, start=1500, payload=b"x") + LOG[1501:], False,
                         "offsets 1024-2047: 1024 batch(es) 1024..2047 vs 1024 batch(es) 1024..2047, same offsets, different bytes"),
    "truncated below the high watermark": (LOG[:2000], False, "offsets 1024-2047: 976 batch(es) 1024..1999 vs 1024 batch(es) 1024..2047"),
    "batched differently": (LOG[:100] + log_of(2, start=100) + LOG[102:], False, "offsets 0-1023: 1023 batch(es)"),
    "a block missing": (LOG[:1024], False, "it lacks offsets 1024..2499"),
    "unreadable": ("cannot read /x/t-0/00000000000000000000.log: No such file or directory", None, "broker 2: cannot read"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_follower_against_the_leader(case: str) -> None:
    follower, verdict, detail = CASES[case]
    result = check_partition_logs("t", 0, partition(b1=LOG, b2=follower))
    assert (result.passed, result.topic, result.partition) == (verdict, "t", 0)
    assert detail in result.detail


def test_a_difference_names_the_follower_and_the_high_watermark_and_wins_over_an_unreadable_replica() -> None:
    result = check_partition_logs("t", 0, partition(b1=LOG, b2=LOG[:2000], b3="gone"))
    assert result.passed is False
    assert result.detail.startswith("broker 2's log differs from broker 1's below the high watermark 2500")


def test_the_leader_is_the_reference_unless_it_could_not_be_read() -> None:
    logs = partition(b1="gone", b2=LOG, b3=LOG[:10])
    assert "broker 3's log differs from broker 2's" in check_partition_logs("t", 0, logs).detail
    assert check_partition_logs("t", 0, partition(b1="gone", b2="gone")).passed is None


def test_one_verdict_per_partition_in_order() -> None:
    results = check_replica_logs({"t-x-1": partition(b1=LOG, b2=LOG), "t-x-0": partition(b1=LOG, b2=LOG[:5])})
    assert [(r.topic, r.partition, r.passed) for r in results] == [("t-x", 0, False), ("t-x", 1, True)]


@given(st.lists(st.integers(1, 300), min_size=1, max_size=40), st.integers(0, 12_000), st.data())
def test_equal_logs_always_agree_and_any_changed_batch_below_the_high_watermark_is_found(
        sizes: list[int], high: int, data: st.DataObject) -> None:
    log = log_of(*sizes)
    assert check_partition_logs("t", 0, partition(high, b1=log, b2=list(log))).passed is True
    inside = [i for i, b in enumerate(log) if b.last_offset < high]
    if inside:
        i = data.draw(st.sampled_from(inside))
        changed = log[:i] + [replace(log[i], data=log[i].data[:-1] + b"x")] + log[i + 1:]
        assert check_partition_logs("t", 0, partition(high, b1=log, b2=changed)).passed is False


def test_the_registered_check_judges_a_recorded_step_and_the_record_survives_the_history_file() -> None:
    step = hard_kill_step()
    assert [r for r in evaluate(step, CheckContext()) if r.check == "replica_logs_agree"] == []
    recorded = replace(step, replica_logs={"t-0": partition(b2=LOG, b3=LOG[:7])})
    back = observation_from_json(observation_to_json(recorded))
    assert isinstance(back, StepObserved) and back.replica_logs == recorded.replica_logs
    results = [r for r in evaluate(back, CheckContext()) if r.check == "replica_logs_agree"]
    assert [(r.passed, r.detail.split(":")[0]) for r in results] == \
        [(False, "broker 3's log differs from broker 2's below the high watermark 2500")]


# -- the observation, over log directories written here --------------------------------------

def state(topic: str, p: int, isr: tuple[int, ...], leader: int = 1) -> PartitionZkState:
    return PartitionZkState(topic, p, (1, 2, 3), leader, 1, isr, 1, 0, 1)


def snapshot(parts: list[PartitionZkState], live: tuple[int, ...] = (1, 2, 3),
             configs: dict[str, dict[str, str]] | None = None) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers={b: 100 + b for b in live}, controller=1, controller_epoch=1,
                      partitions={(p.topic, p.partition): p for p in parts}, topic_configs=configs or {},
                      pending_reassignment=False)


def NO_ANSWER(leaders: Mapping[int, Mapping[str, Sequence[int]]]) -> dict[tuple[str, int], int]:
    return {}  # no leader answered ListOffsets: the checkpoints bound the range


class Dirs:
    """A ReplicaLogReader over ``root/broker-N``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def replica_log_dirs(self, broker_id: int) -> list[Path]:
        return [self.root / f"broker-{broker_id}"]

    def write(self, broker: int, topic: str, p: int, log: list[Batch], high_watermark: int | None) -> None:
        directory = self.root / f"broker-{broker}" / f"{topic}-{p}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "00000000000000000000.log").write_bytes(b"".join(b.data for b in log))
        if high_watermark is not None:
            (self.root / f"broker-{broker}" / "replication-offset-checkpoint").write_text(
                f"0\n1\n{topic} {p} {high_watermark}\n")


def test_the_observation_compares_live_unheld_in_sync_replicas_up_to_the_lowest_checkpoint(tmp_path: Path) -> None:
    dirs = Dirs(tmp_path)
    small = log_of(*[1] * 50)
    dirs.write(1, "t", 0, small, 50)
    dirs.write(2, "t", 0, small[:40], 30)
    dirs.write(3, "t", 0, small[:10], 10)  # held by a fault: not read
    found = replica_logs(dirs, NO_ANSWER, snapshot([state("t", 0, (1, 2, 3))]), ["t"], held=(3,), timeout=0)
    assert list(found) == ["t-0"] and (found["t-0"].low, found["t-0"].high) == (0, 30)
    assert sorted(found["t-0"].replicas) == [1, 2]
    assert check_replica_logs(found)[0].passed is True


def two_replicas(root: Path, follower_batches: int, checkpointed: int) -> Dirs:
    """t-0 on brokers 1 (50 batches) and 2 (``follower_batches``), both checkpointed at ``checkpointed``."""
    dirs = Dirs(root)
    small = log_of(*[1] * 50)
    dirs.write(1, "t", 0, small, checkpointed)
    dirs.write(2, "t", 0, small[:follower_batches], checkpointed)
    return dirs


def test_the_leaders_high_watermark_bounds_the_range_when_it_answers(tmp_path: Path) -> None:
    dirs = two_replicas(tmp_path, 45, 10)
    asked: list[dict[int, dict[str, list[int]]]] = []

    def answer(leaders: Mapping[int, Mapping[str, Sequence[int]]]) -> dict[tuple[str, int], int]:
        asked.append({b: {t: list(ps) for t, ps in parts.items()} for b, parts in leaders.items()})
        return {("t", 0): 45}

    found = replica_logs(dirs, answer, snapshot([state("t", 0, (1, 2))]), ["t"], held=(), timeout=0)
    assert asked == [{1: {"t": [0]}}] and found["t-0"].high == 45
    assert check_replica_logs(found)[0].passed is True


def test_a_disagreement_is_read_again_until_the_timeout_then_kept(tmp_path: Path) -> None:
    dirs = two_replicas(tmp_path, 40, 50)
    calls: list[int] = []

    def answer(leaders: Mapping[int, Mapping[str, Sequence[int]]]) -> dict[tuple[str, int], int]:
        calls.append(1)
        return {}

    found = replica_logs(dirs, answer, snapshot([state("t", 0, (1, 2))]), ["t"], held=(), timeout=0.6)
    assert len(calls) == 2  # read, 0.5 s, read again, give up
    assert check_replica_logs(found)[0].passed is False


def test_the_observation_leaves_out_compacted_and_deleting_topics_lone_replicas_and_unknown_checkpoints(
        tmp_path: Path) -> None:
    dirs = Dirs(tmp_path)
    small = log_of(*[1] * 5)
    for b in (1, 2):
        for topic in ("c", "d", "u"):
            dirs.write(b, topic, 0, small, 5 if topic != "u" else None)
    parts = [state("c", 0, (1, 2)), state("d", 0, (1, 2)), state("u", 0, (1, 2)), state("t", 0, (1,))]
    after = replace(snapshot(parts, configs={"c": {"cleanup.policy": "compact,delete"}}),
                    topics_being_deleted=frozenset({"d"}))
    assert replica_logs(dirs, NO_ANSWER, after, ["c", "d", "u", "t"], held=(), timeout=0) == {}


def test_a_replica_without_a_log_directory_is_unreadable_and_the_verdict_unknown(tmp_path: Path) -> None:
    dirs = Dirs(tmp_path)
    small = log_of(*[1] * 5)
    dirs.write(1, "t", 0, small, 5)
    dirs.write(2, "t", 0, small, 5)
    (tmp_path / "broker-3").mkdir()
    found = replica_logs(dirs, NO_ANSWER, snapshot([state("t", 0, (1, 2, 3))]), ["t"], held=(), timeout=0)
    assert found["t-0"].replicas[3] == "no log directory of the partition"
    assert check_replica_logs(found)[0].passed is None
    assert BLOCK_OFFSETS == 1024

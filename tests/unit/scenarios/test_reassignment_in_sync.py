"""The ``reassignment_in_sync`` invariant: a reassignment completes only once every target
replica is in the ISR — it fires on a completion with a replica down throughout the step
(KAFKA-15665, KRaft before 3.8.0) and on nothing else."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import BrokerFailure, Reassign
from kafka_chaos.scenarios.checks.functions import check_reassignments_completed_in_sync
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from tests.unit.scenarios.histories import hard_kill_step


def part(replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...] = (),
         removing: tuple[int, ...] = ()) -> PartitionZkState:
    return PartitionZkState("t", 0, replicas, isr[0] if isr else -1, 3, isr, 1, 0, 4, adding, removing)


def snap(live: tuple[int, ...], p: PartitionZkState) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers={b: 100 + b for b in live}, controller=1, controller_epoch=1,
                      partitions={("t", 0): p}, topic_configs={}, pending_reassignment=False)


BEFORE = snap((1, 3), part((1, 2, 3), (1, 3)))  # broker 2 down, out of the ISR


@pytest.mark.parametrize("why, after, passed", [
    ("3.6's completion: 2 down throughout, not in the ISR", snap((1, 3), part((1, 2), (1,))), False),
    ("3.8+: still pending, nothing to judge", snap((1, 3), part((1, 2, 3), (1, 3), removing=(3,))), None),
    ("completed with every target in the ISR", snap((1, 2, 3), part((1, 3), (1, 3))), True),
    ("2 came back during the step and joined", snap((1, 2, 3), part((1, 2), (1, 2))), True),
    ("2 came back but is not in the ISR yet: it was not down throughout", snap((1, 2, 3), part((1, 2), (1,))), True),
    ("the replicas did not change", snap((1, 3), part((1, 2, 3), (1, 3))), None),
])
def test_a_completed_reassignment_with_a_target_down_throughout_fails(why: str, after: ZkSnapshot,
                                                                       passed: bool | None) -> None:
    results = check_reassignments_completed_in_sync(BEFORE, after, [("t", 0)])
    assert [r.passed for r in results] == ([] if passed is None else [passed]), why


def test_the_failure_names_the_replica_and_the_isr() -> None:
    [result] = check_reassignments_completed_in_sync(BEFORE, snap((1, 3), part((1, 2), (1,))), [("t", 0)])
    assert result.detail == "t-0: reassignment to [1, 2] completed with replica(s) [2] down throughout and out of the ISR [1]"


def test_only_reassigned_partitions_are_judged() -> None:
    """A topic deleted and re-created on a down broker changes replicas too: not a reassignment."""
    assert check_reassignments_completed_in_sync(BEFORE, snap((1, 3), part((1, 2), (1,))), []) == []


def test_the_registered_check_takes_the_steps_reassign_events_and_the_pending_ones() -> None:
    step = replace(hard_kill_step(), before=BEFORE, after=snap((1, 3), part((1, 2), (1,))))
    judged = lambda s: [r.passed for r in evaluate(s, CheckContext()) if r.check == "reassignment_in_sync"]  # noqa: E731
    assert judged(step) == []  # a broker failure reassigns nothing
    assert judged(replace(step, oracle_events=(Reassign("t", 0, (1, 2)),))) == [False]
    pending = snap((1, 3), part((1, 2, 3), (1, 3), removing=(3,)))
    assert judged(replace(step, before=pending, oracle_events=(BrokerFailure((3,)),))) == [False]


# KRaft 4.3.0+ (KAFKA-19975): only the adding replicas must be in the ISR, every target replica only
# when the move removes more replicas than it adds.  Before: t-0 on [1, 2, 3], broker 2 down.
@pytest.mark.parametrize("why, before, after, passed", [
    ("swap 3 for 4 with 2 down: 4.3+ completes without 2 (kraft_reassign_swap_target_out_of_isr, 4.4.0)",
     BEFORE, snap((1, 3, 4), part((1, 2, 4), (1, 4))), True),
    ("the same from the pending record [1, 2, 4, 3], adding [4], removing [3]",
     snap((1, 3, 4), part((1, 2, 4, 3), (1, 3, 4), adding=(4,), removing=(3,))),
     snap((1, 3, 4), part((1, 2, 4), (1, 4))), True),
    ("a shrinking move still needs every target replica: [1, 2, 3] -> [1, 2] with 2 down",
     BEFORE, snap((1, 3), part((1, 2), (1,))), False),
])
def test_kafka_19975_judges_the_adding_replicas_unless_the_move_shrinks(why: str, before: ZkSnapshot,
                                                                      after: ZkSnapshot, passed: bool | None) -> None:
    results = check_reassignments_completed_in_sync(before, after, [("t", 0)], kafka_19975=True)
    assert [r.passed for r in results] == ([] if passed is None else [passed]), why


def test_an_adding_replica_down_throughout_fails_under_kafka_19975() -> None:
    before = snap((1, 3), part((1, 3), (1, 3)))  # broker 2 down, not a replica yet
    [result] = check_reassignments_completed_in_sync(before, snap((1, 3), part((1, 3, 2), (1, 3))), [("t", 0)],
                                                     kafka_19975=True)
    assert result.passed is False and "[2] down throughout" in result.detail


def test_the_registered_check_keys_kafka_19975_by_mode_and_release() -> None:
    from kafka_chaos.oracle import Mode
    from kafka_chaos.oracle.release import Release
    swap = snap((1, 3, 4), part((1, 2, 4), (1, 4)))
    step = replace(hard_kill_step(), before=BEFORE, after=swap, oracle_events=(Reassign("t", 0, (1, 2, 4)),))
    judged = lambda s: [r.passed for r in evaluate(s, CheckContext()) if r.check == "reassignment_in_sync"]  # noqa: E731
    kraft = lambda release: replace(step, oracle_state=replace(step.oracle_state, mode=Mode.KRAFT,  # noqa: E731
                                                               release=release))
    assert judged(kraft(Release(4, 4, 0))) == [True]
    assert judged(kraft(Release(4, 3, 0))) == [True]
    assert judged(kraft(Release(4, 2, 2))) == [False]  # 3.8.0-4.2.x wait for every target replica
    assert judged(step) == [False]  # ZooKeeper mode: targetReplicas.subsetOf(isr)

"""When a 3.x KRaft active controller balances leaders on its own (scenarios.model.kraft_balances):
a replay of its metadata log's records and append times, against QuorumController 3.9's
``maybeScheduleNextBalancePartitionLeaders``. No cluster."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.kraft.records import (
    NO_LEADER_CHANGE,
    LeaderChange,
    LogEntry,
    PartitionChanged,
    PartitionCreated,
    TopicRemoved,
)
from kafka_chaos.scenarios.model.kraft_balances import BalanceReplay

T = 1_700_000_000.0
I = 300.0
TOPIC = "AAAAAAAAAAAAAAAAAAAAAA"


def lc(at: float, epoch: int = 1, leader: int = 3000) -> LogEntry:
    return LogEntry(0, epoch, at, LeaderChange(leader, (leader,)))


def created(at: float, p: int, replicas: tuple[int, ...], leader: int, epoch: int = 1) -> LogEntry:
    return LogEntry(0, epoch, at, PartitionCreated(TOPIC, p, replicas, replicas, (), (), leader, 0, 0, 0))


def moved(at: float, p: int, leader: int, epoch: int = 1, replicas: tuple[int, ...] | None = None) -> LogEntry:
    return LogEntry(0, epoch, at, PartitionChanged(TOPIC, p, None, leader, replicas, None, None, -1))


def isr_only(at: float, p: int, epoch: int = 1) -> LogEntry:
    return LogEntry(0, epoch, at, PartitionChanged(TOPIC, p, (1,), NO_LEADER_CHANGE, None, None, None, -1))


def replay(*entries: LogEntry) -> BalanceReplay:
    r = BalanceReplay(I)
    r.apply(entries)
    return r


BALANCED = (lc(T), created(T + 1, 0, (1, 2, 3), 1), created(T + 1, 1, (2, 3, 1), 2))


@pytest.mark.parametrize(("entries", "due", "balances"), [
    (BALANCED, None, []),  # every leader on its first replica: nothing scheduled
    # the write that first moves a leader off its first replica arms the balance an interval on
    ((*BALANCED, moved(T + 10, 0, 2)), T + 10 + I, []),
    # a later one does not move it (one is scheduled already)
    ((*BALANCED, moved(T + 10, 0, 2), moved(T + 50, 1, 3)), T + 10 + I, []),
    # a leaderless partition counts (leader -1 is not its first replica)
    ((*BALANCED, moved(T + 10, 0, -1)), T + 10 + I, []),
    # its leader back on its first replica by another write: the balance still runs (elects nothing)
    # and, all balanced, arms no next one
    ((*BALANCED, moved(T + 10, 0, 2), moved(T + 20, 0, 1), isr_only(T + 400, 1)), None, [T + 10 + I]),
    # the balance's batch: preferred elections just after the deadline; all balanced: none next
    ((*BALANCED, moved(T + 10, 0, 2), moved(T + 310.004, 0, 1)), None, [T + 310.004]),
    # a balance that could elect nothing (the preferred replica out of the ISR): re-armed an
    # interval after it while imbalanced
    ((*BALANCED, moved(T + 10, 0, 2), isr_only(T + 320, 1)), T + 10 + 2 * I, [T + 10 + I]),
    # a new epoch: the old schedule cancelled, the new controller armed at its activation
    ((*BALANCED, moved(T + 10, 0, 2), lc(T + 100, 2, 3001)), T + 100 + I, []),
    ((*BALANCED, lc(T + 100, 2, 3001)), None, []),
    # a removed topic's partitions leave the set
    ((*BALANCED, moved(T + 10, 0, 2), LogEntry(0, 1, T + 20, TopicRemoved(TOPIC)), isr_only(T + 400, 0)),
     None, [T + 10 + I]),
    # a reassignment's first replica changes: balanced if it now leads
    ((*BALANCED, moved(T + 10, 0, 2, replicas=(2, 1, 3))), None, []),
])
def test_when_the_balance_is_due(entries, due, balances) -> None:
    r = replay(*entries)
    assert r.due == (None if due is None else pytest.approx(due))
    assert r.balances == [pytest.approx(b) for b in balances]


def test_a_balance_electing_some_is_re_armed_from_its_run() -> None:
    """Partition 0's preferred replica comes back, partition 1's does not: the balance's batch
    elects partition 0 only, and 1 keeps the next one armed an interval after the run."""
    r = replay(*BALANCED, moved(T + 10, 0, 2), moved(T + 11, 1, 3), moved(T + 310.01, 0, 1))
    assert r.balances == [pytest.approx(T + 310.01)] and r.due == pytest.approx(T + 310.01 + I)


def test_a_write_that_is_no_balance_after_the_deadline() -> None:
    """An ISR change after the deadline is another write: the balance ran before it and elected
    nothing."""
    r = replay(*BALANCED, moved(T + 10, 0, 2), moved(T + 310.5, 1, 3))
    assert r.balances == [pytest.approx(T + 310)] and r.due == pytest.approx(T + 610)


@pytest.mark.parametrize(("now", "due"), [
    (T + 100, T + 310),
    (T + 312, T + 310),  # within the margin: the one that just ran
    (T + 320, T + 610),  # the log not yet past it: taken to have run, re-armed while imbalanced
    (T + 1000, T + 1210),
])
def test_the_next_due_balance(now: float, due: float) -> None:
    r = replay(*BALANCED, moved(T + 10, 0, 2))
    assert r.next_due(now, 3.0) == pytest.approx(due)


def test_nothing_due_when_balanced() -> None:
    assert replay(*BALANCED).next_due(T + 100, 3.0) is None

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


# A log with every kind of event: arming, a balance that elects nothing, one that elects, a new
# epoch, and write events of several records (one append time) that a poll may cut in two.
PIECES = (*BALANCED, created(T + 2, 2, (3, 1, 2), 3), created(T + 2, 3, (1, 3, 2), 1),
          moved(T + 10, 0, 2), moved(T + 10, 1, 3), isr_only(T + 10, 2),
          isr_only(T + 320, 3),  # the balance at T + 310 elected nothing: re-armed for T + 610
          moved(T + 610.004, 0, 1), moved(T + 610.004, 1, 2),  # the balance's batch
          moved(T + 700, 2, 1), moved(T + 700, 3, 3),
          lc(T + 800, 2, 3001), isr_only(T + 801, 0, epoch=2), isr_only(T + 801, 1, epoch=2),
          # a preferred election and an ISR change in one write event past the deadline: no
          # balance's batch (it ran at its deadline and elected nothing), though its first
          # record alone would read as one
          moved(T + 1100.004, 2, 3, epoch=2), isr_only(T + 1100.004, 0, epoch=2))


def _state(r: BalanceReplay) -> tuple[object, ...]:
    return r.due, r.balances, r.imbalanced, r.leaders, r.replicas


@pytest.mark.parametrize("cut", range(len(PIECES) + 1))
def test_the_log_fed_in_two_pieces_replays_as_it_does_whole(cut: int) -> None:
    """A step feeds the replay only what the observer read since the last step
    (StepCore._balance_replay): wherever the cut falls, inside a write event too, the replay ends
    as the whole log's."""
    pieces = BalanceReplay(I)
    pieces.apply(PIECES[:cut])
    pieces.apply(())
    pieces.apply(PIECES[cut:])
    assert _state(pieces) == _state(replay(*PIECES))


def test_the_log_fed_entry_by_entry_replays_as_it_does_whole() -> None:
    pieces = BalanceReplay(I)
    for entry in PIECES:
        pieces.apply([entry])
    whole = replay(*PIECES)
    assert _state(pieces) == _state(whole)
    assert whole.balances == [pytest.approx(T + 310), pytest.approx(T + 610.004), pytest.approx(T + 1100)]
    assert whole.due == pytest.approx(T + 1100 + I)  # from the deadline: partition 3 is still off


class _Log:
    """A KraftObserver's metadata_log_since over a list that grows, or is replaced (diverged)."""

    def __init__(self, entries: tuple[LogEntry, ...]) -> None:
        self.entries, self.replays, self.asked = list(entries), 0, []

    def metadata_log_since(self, position):
        from kafka_chaos.harness.kraft.observer import LogPosition, LogSlice

        self.asked.append(position)
        anew = position is None or position.replay != self.replays
        start = 0 if anew else position.offset
        fed = tuple(e for e in self.entries if e.offset >= start)
        return LogSlice(fed, LogPosition(self.replays, fed[-1].offset + 1 if fed else start), anew)


def test_a_step_feeds_the_replay_only_what_was_logged_since_the_last_step() -> None:
    """StepCore._balance_replay: one replay per scenario, fed the new entries at each step; a new
    one when the observer replayed a diverged log anew or the controller's interval differs."""
    from kafka_chaos.scenarios.run.step import StepCore

    numbered = tuple(LogEntry(i, e.epoch, e.at, e.record) for i, e in enumerate(PIECES))
    log = _Log(numbered[:5])
    core = StepCore(None, None, None, ["t"], None)  # type: ignore[arg-type]
    first = core._balance_replay(log, I)  # type: ignore[arg-type]
    log.entries = list(numbered)
    again = core._balance_replay(log, I)  # type: ignore[arg-type]
    assert again is first and _state(again) == _state(replay(*PIECES))
    assert [None if p is None else p.offset for p in log.asked] == [None, 5]
    log.replays += 1  # diverged: replayed anew from the log's start
    assert core._balance_replay(log, I) is not first  # type: ignore[arg-type]
    assert log.asked[-1].offset == len(PIECES)
    fresh = core._balance_replay(log, 60.0)  # type: ignore[arg-type]
    assert fresh.interval_s == 60.0 and log.asked[-1] is None

"""When a 3.x KRaft active controller balances partition leaders on its own: a pure replay of its
metadata log (the records' append times), for a step to wait off the balance as it does off a
ZooKeeper controller's scheduled check (:mod:`scenarios.model.imbalance_checks`). A step asks it
on a 3.x KRaft controller with the rebalance on (``StepCore._wait_off_imbalance_check``), as
catalogue runs have it (Kafka's default, ``harness.config.kafka_default_overrides``), one replay
per scenario fed the entries logged since the last step (``StepCore._balance_replay``); a 4.x
controller's balance is periodic from its activation and needs no replay
(:func:`imbalance_checks.first_check_delay_s`). The 3.6.2 controller is the same
(``maybeScheduleNextBalancePartitionLeaders`` L1308-1353, called at L825 and L1227, cancelled
at L1247; ``imbalancedPartitions`` kept at ReplicationControlManager L438-441, L485-488, L530),
except that its balance logs nothing at INFO.

The 3.9 rule (QuorumController on 3.9.0-rc3, the mirror's 3.9 branch the same):

* After every write event (``ControllerWriteEvent.run``, L858, records or none) and at the
  controller's activation (``CompleteActivationEvent.processBatchEndOffset``, L1263),
  ``maybeScheduleNextBalancePartitionLeaders`` (L1346-1397) schedules ``maybeBalancePartitionLeaders``
  ``leader.imbalance.check.interval.seconds`` later -- only if none is scheduled and some
  partition's leader is not its first replica (``arePartitionLeadersImbalanced``, the set kept by
  every PartitionRecord/PartitionChangeRecord replay, ReplicationControlManager 3.9 L484-488,
  L530-534, a removed topic's dropped at L580; ``hasPreferredLeader``: ``leader == replicas[0]``,
  PartitionRegistration L361-367, so a leaderless partition counts). The active controller
  replays its records as it writes them: the write that first leaves a leader off its first
  replica arms the balance, an interval after *that* write.
* The balance is itself a write event: it marks the schedule done, and the re-check after it
  arms the next one an interval on if partitions stay imbalanced (10 ms on when it filled
  ``maxElectionsPerImbalance``, 1,000 elections: not modelled, the harness's topics are small).
* Renouncing cancels it (``cancelMaybeBalancePartitionLeaders``, L1399-1401, from ``renounce``
  L1284): a new epoch starts afresh, armed at its activation if imbalanced. The epoch's
  LEADER_CHANGE stands for the activation (which follows it once committed: the step's margin
  covers the difference).

A balance that elects leaders writes them in one batch just after its deadline; one that can
elect none (the preferred replicas out of the ISR) writes nothing, and the log only shows that
it ran by going on past its deadline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kafka_chaos.harness.kraft.records import (
    NO_LEADER_CHANGE,
    LeaderChange,
    LogEntry,
    PartitionChanged,
    PartitionCreated,
    TopicRemoved,
)

# How long after its deadline a balance's batch is appended: the event queue runs a deferred
# event at its deadline; the batch's append time is taken when the batch starts
# (BatchAccumulator.startNewBatch, raft 3.9 L425-433).
RUN_SLACK_S = 1.0
# Append times are whole milliseconds.
CLOCK_EPS_S = 0.002

Partition = tuple[str, int]  # (topic id, partition)


@dataclass
class BalanceReplay:
    """The 3.x active controller's balance schedule, replayed from its metadata log entries in
    offset order (:meth:`apply`); :meth:`next_due` answers when the next balance comes."""

    interval_s: float
    replicas: dict[Partition, tuple[int, ...]] = field(default_factory=dict)
    leaders: dict[Partition, int] = field(default_factory=dict)
    imbalanced: set[Partition] = field(default_factory=set)
    due: float | None = None  # the scheduled balance's deadline (None: none scheduled)
    balances: list[float] = field(default_factory=list)  # when each replayed balance ran
    # the last write event replayed and the state before it: the next call's first entries may
    # belong to it (a poll that ended between two batches of one append time)
    _last: tuple[list[LogEntry], _State] | None = field(default=None, init=False, repr=False)

    def apply(self, entries: Iterable[LogEntry]) -> None:
        """Replay ``entries``, the ones after those replayed so far: each run of consecutive
        entries of one epoch and one append time is one write event, also when a run is split
        between two calls (the last event is replayed again, whole, from the state before it), so
        the log fed in pieces replays as it does whole."""
        events = _events(entries)
        if not events:
            return
        if self._last is not None and _same_event(self._last[0][-1], events[0][0]):
            event, state = self._last
            self._restore(state)
            events[0] = event + events[0]
        for event in events[:-1]:
            self._event(event)
        self._last = (events[-1], self._saved())
        self._event(events[-1])

    def next_due(self, now: float, margin_s: float) -> float | None:
        """The first scheduled balance at or after ``now - margin_s`` (None: none scheduled). A
        deadline the log has not gone past yet is taken to have run as it stands: re-armed an
        interval on while partitions stay imbalanced."""
        due = self.due
        while due is not None and due < now - margin_s:
            due = due + self.interval_s if self.imbalanced else None
        return due

    # ------------------------------------------------------------------ replay

    def _saved(self) -> _State:
        return _State(dict(self.replicas), dict(self.leaders), frozenset(self.imbalanced), self.due,
                      len(self.balances))

    def _restore(self, state: _State) -> None:
        self.replicas, self.leaders = dict(state.replicas), dict(state.leaders)
        self.imbalanced, self.due = set(state.imbalanced), state.due
        del self.balances[state.balances:]

    def _event(self, event: Sequence[LogEntry]) -> None:
        at = event[0].at
        if isinstance(event[0].record, LeaderChange):
            # a new epoch: the old controller renounced (its schedule cancelled), the new one
            # arms at its activation if imbalanced
            self.due = None
            self._arm(at)
            return
        while self.due is not None and self.due <= at + CLOCK_EPS_S:
            ran = self.due
            if at - ran <= RUN_SLACK_S and self._is_balance(event):
                self._replay(event)
                self.balances.append(at)
                self.due = None
                self._arm(at)
                return
            # it ran at its deadline and elected nothing: re-armed after it while imbalanced
            self.balances.append(ran)
            self.due = ran + self.interval_s if self.imbalanced else None
        self._replay(event)
        self._arm(at)

    def _arm(self, at: float) -> None:
        if self.due is None and self.imbalanced:
            self.due = at + self.interval_s

    def _is_balance(self, event: Sequence[LogEntry]) -> bool:
        """Whether every record of ``event`` elects an imbalanced partition's first replica, as
        ``maybeBalancePartitionLeaders``' PREFERRED elections do."""
        for entry in event:
            r = entry.record
            if not isinstance(r, PartitionChanged) or r.replicas is not None:
                return False
            key = (r.topic_id, r.partition)
            replicas = self.replicas.get(key)
            if key not in self.imbalanced or not replicas or r.leader != replicas[0]:
                return False
        return True

    def _replay(self, event: Sequence[LogEntry]) -> None:
        for entry in event:
            r = entry.record
            if isinstance(r, PartitionCreated):
                self._set((r.topic_id, r.partition), r.replicas, r.leader)
            elif isinstance(r, PartitionChanged):
                key = (r.topic_id, r.partition)
                if key not in self.replicas:
                    continue  # a change of a partition never seen created: a log gap
                self._set(key, self.replicas[key] if r.replicas is None else r.replicas,
                          self.leaders[key] if r.leader == NO_LEADER_CHANGE else r.leader)
            elif isinstance(r, TopicRemoved):
                for key in [k for k in self.replicas if k[0] == r.topic_id]:
                    del self.replicas[key], self.leaders[key]
                    self.imbalanced.discard(key)

    def _set(self, key: Partition, replicas: tuple[int, ...], leader: int) -> None:
        self.replicas[key], self.leaders[key] = replicas, leader
        preferred = replicas[0] if replicas else -1  # PartitionRegistration.preferredReplica
        if leader == preferred:
            self.imbalanced.discard(key)
        else:
            self.imbalanced.add(key)


@dataclass(frozen=True)
class _State:
    """What :meth:`BalanceReplay._saved` keeps to replay an event again."""

    replicas: dict[Partition, tuple[int, ...]]
    leaders: dict[Partition, int]
    imbalanced: frozenset[Partition]
    due: float | None
    balances: int  # how many balances had run


def _same_event(last: LogEntry, entry: LogEntry) -> bool:
    return (not isinstance(entry.record, LeaderChange) and not isinstance(last.record, LeaderChange)
            and (last.epoch, last.at) == (entry.epoch, entry.at))


def _events(entries: Iterable[LogEntry]) -> list[list[LogEntry]]:
    events: list[list[LogEntry]] = []
    for entry in entries:
        if events and _same_event(events[-1][-1], entry):
            events[-1].append(entry)
        else:
            events.append([entry])
    return events

"""The transactional workload's pure parts (issue 43): what a KafkaError from ``commit_transaction``
/ ``abort_transaction`` makes the client do and the outcome it records (real
``confluent_kafka.KafkaError`` objects, flagged as librdkafka flags them), a call that hangs
(librdkafka#5456: given up, recorded unknown, its instance fenced by a new one — on fake
producers whose coordinator fences as Kafka's does), the stretches a run stores and their merge,
the history's JSON forms (version 11, older histories still read), the schedule's opt-in, the
``transactions`` check and the copier's rewind (its group's committed offsets, asked again on an error)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.checks import transactions as tc
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.checks.triage import KAFKA, classify
from kafka_chaos.scenarios.clients.ops import ConsumerReset
from kafka_chaos.scenarios.clients.txn_ops import (
    ABORTED, COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, UNKNOWN, ReadBack, Txn, TxnConsumer, TxnHistory, TxnOffset,
    TxnRead, TxnSend,
)
from kafka_chaos.scenarios.clients.txn_workload import (
    ABORT, GIVE_UP, HUNG, RETRY, CallHung, call_bounded, committed_positions, error_name, hang_bound, hung_error,
    on_abort_error, on_commit_error, txn_outcome,
)
from kafka_chaos.scenarios.history.observations import (
    HISTORY_VERSION, ScenarioFinished, ScenarioRun, merged_txn, observation_from_json, observation_to_json,
)
from kafka_chaos.scenarios.plans.schedule import schedule_from_json, schedule_to_json
from kafka_chaos.scenarios.plans.transactional import TXN_IN, TXN_OUT, transactional_topics, with_transactions
from kafka_chaos.scenarios.model.steps import TopicSpec

E = KafkaError
TIMED_OUT = E(E._TIMED_OUT, "commit timed out", retriable=True)
FENCED = E(E._FENCED, "producer fenced", fatal=True)
PRODUCER_FENCED = E(E.PRODUCER_FENCED, "fenced by a newer instance", fatal=True)
ABORTABLE = E(E._INCONSISTENT, "a message failed", txn_requires_abort=True)
NOT_ENOUGH = E(E.NOT_ENOUGH_REPLICAS, "delivery failed", txn_requires_abort=True)
COORDINATOR = E(E.COORDINATOR_NOT_AVAILABLE, "retry", retriable=True)
STATE = E(E._STATE, "erroneous state")
FATAL_RETRIABLE = E(E._TIMED_OUT, "both flags", fatal=True, retriable=True)


@pytest.mark.parametrize("err, failed_before, action", [
    (TIMED_OUT, 0, RETRY), (TIMED_OUT, 2, RETRY), (TIMED_OUT, 3, GIVE_UP),  # the bound: 3 retries
    (COORDINATOR, 0, RETRY),
    (ABORTABLE, 0, ABORT), (NOT_ENOUGH, 2, ABORT),
    (FENCED, 0, GIVE_UP), (PRODUCER_FENCED, 0, GIVE_UP), (FATAL_RETRIABLE, 0, GIVE_UP),  # fatal wins
    (STATE, 0, GIVE_UP),  # neither retriable nor abortable
])
def test_commit_errors(err: KafkaError, failed_before: int, action: str) -> None:
    assert on_commit_error(err, failed_before) == action


@pytest.mark.parametrize("err, failed_before, action", [
    (TIMED_OUT, 0, RETRY), (TIMED_OUT, 3, GIVE_UP), (FENCED, 0, GIVE_UP), (FATAL_RETRIABLE, 0, GIVE_UP),
    (ABORTABLE, 0, GIVE_UP), (STATE, 0, GIVE_UP),
])
def test_abort_errors(err: KafkaError, failed_before: int, action: str) -> None:
    assert on_abort_error(err, failed_before) == action


@pytest.mark.parametrize("commit_called, committed, aborted, errors, outcome", [
    (True, True, False, (), COMMITTED),
    (True, True, False, ("_TIMED_OUT",), COMMITTED),  # a retried commit that returned
    (False, False, True, (), ABORTED),  # a planned abort
    (False, False, False, (), ABORTED),  # the commit never called (a produce failed), the abort failed too
    (True, False, True, ("_INCONSISTENT",), ABORTED),  # the commit required the abort, which returned
    (True, False, False, ("_INCONSISTENT",), UNKNOWN),  # ... and the abort failed
    (True, False, True, ("_TIMED_OUT", "_INCONSISTENT"), UNKNOWN),  # a timed-out commit may have gone on
    (True, False, False, ("_TIMED_OUT",) * 4, UNKNOWN),  # retries exhausted
    (True, False, False, ("_FENCED",), UNKNOWN),  # fenced: the coordinator may complete a prepared commit
])
def test_outcomes(commit_called: bool, committed: bool, aborted: bool, errors: tuple[str, ...], outcome: str) -> None:
    assert txn_outcome(commit_called, committed, aborted, errors) == outcome


@pytest.mark.parametrize("commit_called, committed, aborted, hung, outcome", [
    (False, False, False, True, UNKNOWN),  # send_offsets_to_transaction hung: the commit never called, yet unknown
    (False, False, False, False, ABORTED),  # ... where a failed one is aborted
    (True, False, False, True, UNKNOWN),  # commit_transaction hung
    (False, False, True, True, UNKNOWN),  # abort_transaction hung (aborted stays False in the client)
    (True, False, True, True, UNKNOWN),
    (True, True, False, False, COMMITTED),
])
def test_a_hung_call_makes_the_attempt_unknown(commit_called: bool, committed: bool, aborted: bool, hung: bool,
                                               outcome: str) -> None:
    assert txn_outcome(commit_called, committed, aborted, ("_INCONSISTENT",), hung=hung) == outcome


def test_hang_bounds_and_errors() -> None:
    assert hang_bound(10.0) == 20.0 and hang_bound(0.0, 2.0) == 2.0
    assert hung_error("send_offsets_to_transaction") == f"send_offsets_to_transaction:{HUNG}" \
        == "send_offsets_to_transaction:_HUNG"


def test_error_names() -> None:
    from confluent_kafka import KafkaException

    assert error_name(KafkaException(FENCED)) == "_FENCED"
    assert error_name(KafkaException(NOT_ENOUGH)) == "NOT_ENOUGH_REPLICAS"
    assert error_name(BufferError("full")) == "BufferError"


# --- stretches, merge, JSON ----------------------------------------------------------------------

CONSUMERS = (TxnConsumer("rc", READ_COMMITTED), TxnConsumer("ru", READ_UNCOMMITTED),
             TxnConsumer("copier", READ_COMMITTED, "g"))
T0 = Txn("p", 0, COMMITTED, (TxnSend("in", 0, "k0", 0), TxnSend("out", 0, "k1", 0)), began_at=1.0, committing_at=1.1,
         ended_at=1.2, producer_id=1000, epoch=0)
T1 = Txn("p", 1, ABORTED, (TxnSend("in", 0, "k2", 2),), error="_TIMED_OUT", began_at=2.0, ended_at=2.2)
C0 = Txn("c", 0, COMMITTED, (TxnSend("out", 0, "k0", 2),), (TxnOffset("g", "in", 0, 1),), began_at=3.0,
         committing_at=3.1, ended_at=3.2)
PART1 = TxnHistory((T0,), CONSUMERS, (TxnRead("rc", "in", 0, 0, "k0", 1.5), TxnRead("rc", "out", 0, 0, "k1", 1.5)),
                   (ConsumerReset("rc", 0.5, "assigned"),))
PART2 = TxnHistory((T1, C0), CONSUMERS, (TxnRead("ru", "in", 0, 2, "k2", 2.1), TxnRead("copier", "in", 0, 0, "k0", 2.5),
                                         TxnRead("rc", "out", 0, 2, "k0", 3.5)))
READBACK = (ReadBack("in", 0, 0, 4, 5.0, ((0, "k0"),)), ReadBack("out", 0, 0, 4, 5.0, ((0, "k1"), (2, "k0"))))
END = TxnHistory((), CONSUMERS, (), (), READBACK, (TxnOffset("g", "in", 0, 1),))


def test_merged_stretches_are_the_whole_history() -> None:
    whole = TxnHistory.merged([PART1, PART2, END])
    assert whole.txns == (T0, T1, C0) and whole.consumers == CONSUMERS
    assert whole.reads == PART1.reads + PART2.reads and whole.resets == PART1.resets
    assert whole.readback == READBACK and whole.group_offsets == END.group_offsets
    assert TxnHistory.merged([PART1]).readback is None
    assert not tc.fired(tc.check_transactions(whole))
    figures = tc.workload_figures(whole)
    assert figures.is_measurement and figures.observed["committed"] == 2 and figures.observed["aborted"] == 1
    assert figures.observed["reads"] == {"copier": 1, "rc": 3, "ru": 1} and figures.observed["readback"] == 3


RUN = ScenarioRun("r", "s", 0, 1, "local", "3.9.2", 3, 6, topics=("s-0-txn-in", "s-0-txn-out"))


def test_finished_with_txn_round_trips_and_older_histories_still_load() -> None:
    obs = ScenarioFinished(RUN, 1.0, 2.0, None, txn=END)
    line = observation_to_json(obs)
    assert json.loads(line)["history_version"] == HISTORY_VERSION == 11
    back = observation_from_json(line)
    assert back == obs and isinstance(back, ScenarioFinished) and back.txn == END
    plain = ScenarioFinished(RUN, 1.0, 2.0, None)
    assert "txn" not in json.loads(observation_to_json(plain))
    old = {**json.loads(observation_to_json(plain)), "history_version": 10}
    loaded = observation_from_json(json.dumps(old))
    assert isinstance(loaded, ScenarioFinished) and loaded.txn is None
    assert merged_txn([loaded]) is None


def test_the_transactions_check_judges_the_merged_stretches_and_fires_on_an_aborted_read() -> None:
    ctx = CheckContext()
    results = evaluate(ScenarioFinished(RUN, 1.0, 2.0, None, txn=TxnHistory.merged([PART1, PART2, END])), ctx)
    txn = [r for r in results if r.check.startswith("txn_")]
    assert [r.check for r in txn] == ["txn_workload", *tc.CLASSES, tc.G0]
    assert all(r.passed for r in txn if not r.is_measurement)
    bad = TxnHistory(reads=(TxnRead("rc", "in", 0, 2, "k2", 2.3),))  # a read_committed reader fed aborted k2
    results = evaluate(ScenarioFinished(RUN, 1.0, 2.0, None, txn=TxnHistory.merged([PART1, PART2, bad, END])),
                       CheckContext())
    assert {r.check for r in results if r.passed is False} == {tc.ABORTED_READ}
    assert not [r for r in evaluate(ScenarioFinished(RUN, 1.0, 2.0, None), CheckContext()) if r.check.startswith("txn")]


def test_txn_classes_triage_to_kafka() -> None:
    from kafka_chaos.scenarios.checks.registry import to_records

    obs = ScenarioFinished(RUN, 1.0, 2.0, None)
    for kind in tc.CLASSES:
        [record] = to_records(obs, [CheckResult(kind, False, detail="x")])
        assert classify(record).klass == KAFKA, kind


# --- the opt-in ----------------------------------------------------------------------------------

BASE = {"schedule_version": 1, "name": "s", "cluster": {"brokers": [1, 2, 3]},
        "topics": [{"name": "t", "assignment": {"0": [1, 2, 3], "1": [2, 3, 1]},
                    "config": {"unclean.leader.election.enable": "true", "min.insync.replicas": "2"}}],
        "steps": [{"fault": "hard_kill", "target": {"leader_of": {"topic": "txn_in", "partition": 1}}}]}


def test_a_schedule_opts_in_and_exports_its_topics() -> None:
    s = schedule_from_json({**BASE, "workload": {"transactions": True}})
    pair = transactional_topics(s.topics)
    assert pair is not None and [t.name for t in pair] == [TXN_IN, TXN_OUT]
    for t in pair:
        assert t.assignment == s.topics[0].assignment and not t.workload
        assert dict(t.config) == {"min.insync.replicas": "2"}  # never an unclean election on them
    exported = schedule_to_json(s)
    assert [t.get("workload") for t in exported["topics"]] == [None, "transactional", "transactional"]
    assert schedule_from_json(exported).topics == s.topics  # round trip, explicit topics
    assert transactional_topics(schedule_from_json({**BASE, "workload": {"transactions": False},
                                                    "steps": []}).topics) is None


@pytest.mark.parametrize("change, message", [
    ({"workload": {"transactions": "yes"}}, "workload.transactions: expected true or false"),
    ({"workload": {"colour": 1}}, "unknown field(s) 'colour'"),
    ({"workload": {"transactions": True}, "topics": [{"name": "txn_in", "assignment": {"0": [1]}}], "steps": []},
     "already the scenario's"),
    ({"topics": [{"name": "a", "assignment": {"0": [1]}, "workload": "transactional"}], "steps": []},
     "needs two topics"),
    ({"topics": [{"name": "a", "assignment": {"0": [1]}, "workload": "tx"}], "steps": []},
     "expected true, false or \"transactional\""),
])
def test_bad_opt_ins_are_refused_in_one_line(change: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=None) as exc:
        schedule_from_json({**BASE, **change})
    assert message in str(exc.value)


def test_run_transactions_adds_the_topics_once() -> None:
    s = schedule_from_json({**BASE, "steps": []}).scenario()
    once = with_transactions(s)
    assert [t.name for t in once.topics] == ["t", TXN_IN, TXN_OUT]
    assert with_transactions(once) == once and with_transactions(s, on=False) == s
    assert TopicSpec("x", {0: (1,)}).transactional is False


def test_consecutive_cuts_hold_everything_once() -> None:
    from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload

    w = TxnWorkload("127.0.0.1:1", "in", [0, 1], "out", [0], seed="1", client_id="unit")  # no client made yet
    assert [c.name for c in w.consumers] == ["rc", "ru", "rc_group", "copier"]
    w._record(T0, PART1.reads, ConsumerReset("rc", 0.5, "assigned"))
    first = w.cut()
    w._record(T1)
    w._record(C0, PART2.reads)
    second = w.cut()
    last = w.cut(READBACK, END.group_offsets)
    assert first.txns == (T0,) and first.reads == PART1.reads and len(first.resets) == 1
    assert second.txns == (T1, C0) and second.reads == PART2.reads and not second.resets
    assert not last.txns and last.readback == READBACK and last.group_offsets == END.group_offsets
    assert w.counts() == {COMMITTED: 2, ABORTED: 1, UNKNOWN: 0, "reads": 5}
    assert TxnHistory.merged([first, second, last]).txns == (T0, T1, C0)


def test_run_transactions_opts_every_scenario_in() -> None:
    from kafka_chaos.cli.main import build_parser
    from kafka_chaos.cli.run import _shaped
    from kafka_chaos.scenarios.plans import catalogue

    chosen = catalogue.by_names(["leader_hard_kill"])
    with_flag = _shaped(build_parser().parse_args(["run", "--transactions", "--scenario", "leader_hard_kill"]), chosen)
    without = _shaped(build_parser().parse_args(["run", "--scenario", "leader_hard_kill"]), chosen)
    assert [t.name for t in with_flag[0].topics][-2:] == [TXN_IN, TXN_OUT] and transactional_topics(with_flag[0].topics)
    assert without == chosen


# --- a call that hangs (librdkafka#5456) ---------------------------------------------------------

def test_call_bounded_hands_back_what_the_call_did() -> None:
    assert call_bounded("c", lambda: 7, 5.0) == 7
    with pytest.raises(KeyError):
        call_bounded("c", lambda: {}["x"], 5.0)
    release = threading.Event()
    with pytest.raises(CallHung) as hung:
        call_bounded("stuck", lambda: release.wait(30.0), 0.05)
    assert hung.value.call == "stuck" and hung.value.error == "stuck:_HUNG" and hung.value.result() == "still running"
    release.set()
    hung.value.thread.join(30.0)
    assert hung.value.result() == "returned" and hung.value.returned.value is True


def test_call_bounded_cleans_up_after_a_late_return_only() -> None:
    late: list[str] = []
    assert call_bounded("quick", lambda: 1, 5.0, late=lambda h: late.append(h.call)) == 1
    release = threading.Event()
    with pytest.raises(CallHung) as hung:
        call_bounded("slow", lambda: release.wait(30.0), 0.05, late=lambda h: late.append(h.result()))
    assert late == []
    release.set()
    hung.value.thread.join(30.0)
    assert late == ["returned"]


class FakeCoordinator:
    """One transactional.id's coordinator as the client sees it: ``init_transactions`` bumps the
    epoch and fences every older instance; a call named in ``hang`` blocks (once) as
    librdkafka#5456's does, until an instance with a newer epoch fences it, then raises _FENCED."""

    def __init__(self, hang: str | None = None, deaf: threading.Event | None = None) -> None:
        self.epoch = 0
        self.hang = hang
        self.deaf = deaf  # set: the stuck call hears of no fence, it returns when this is set
        self.changed = threading.Condition()
        self.instances: list[FakeProducer] = []
        self.committed: list[tuple[int, tuple[str, ...]]] = []

    def make(self, config: dict[str, object], logger: logging.Logger) -> FakeProducer:
        p = FakeProducer(self)
        self.instances.append(p)
        return p


class FakeProducer:
    def __init__(self, coord: FakeCoordinator) -> None:
        self.coord = coord
        self.epoch = -1
        self.calls: list[str] = []
        self.closed = False
        self.pending: list[tuple[str, int, Callable[[KafkaError | None, object], None]]] = []
        self.keys: list[str] = []

    def _call(self, call: str) -> None:
        assert not self.closed, f"{call} on a closed instance"
        self.calls.append(call)
        if self.coord.hang == call:
            self.coord.hang = None
            since = self.coord.epoch
            if self.coord.deaf is not None:
                assert self.coord.deaf.wait(30.0), "never released"
            with self.coord.changed:
                assert self.coord.changed.wait_for(lambda: self.coord.epoch > since, 30.0), "never fenced"
            raise KafkaException(FENCED)
        if self.epoch != self.coord.epoch and call != "init_transactions":
            raise KafkaException(FENCED)

    def init_transactions(self, timeout: float) -> None:
        self._call("init_transactions")
        with self.coord.changed:
            self.coord.epoch += 1
            self.epoch = self.coord.epoch
            self.coord.changed.notify_all()

    def begin_transaction(self) -> None:
        self._call("begin_transaction")
        self.keys = []

    def produce(self, topic: str, key: str, value: bytes, partition: int,
                on_delivery: Callable[[KafkaError | None, object], None]) -> None:
        self._call("produce")
        self.keys.append(key)
        self.pending.append((key, partition, on_delivery))

    def flush(self, timeout: float) -> int:
        self.poll(0)
        return 0

    def send_offsets_to_transaction(self, offsets: object, metadata: object, timeout: float) -> None:
        self._call("send_offsets_to_transaction")

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit_transaction")
        self.coord.committed.append((self.epoch, tuple(self.keys)))

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort_transaction")

    def poll(self, timeout: float) -> int:
        assert not self.closed
        self.calls.append("poll")
        done, self.pending = self.pending, []
        for n, (key, _partition, on_delivery) in enumerate(done):
            on_delivery(None, FakeMessage(10 + n))
        return len(done)

    def close(self) -> bool:
        self.calls.append("close")
        self.closed = True
        return True


@dataclass
class FakeMessage:
    at: int

    def offset(self) -> int:
        return self.at


def _copier_plan(producer: Any, sends: list[Any]) -> list[TxnOffset]:
    from kafka_chaos.scenarios.clients.txn_workload import produce

    produce(producer, sends, "out", 0, "k0")
    return [TxnOffset("g", "in", 0, 5)]


def _client(coord: FakeCoordinator, wait_stuck_s: float = 30.0) -> Any:
    from kafka_chaos.scenarios.clients.txn_workload import _TxnClient

    # a call's bound: far above what a call that does not hang takes, so only the hung one reaches it;
    # a stuck call that hears of its fence returns at once, well within wait_stuck_s
    return _TxnClient("127.0.0.1:1", "unit-copier", "unit", threading.Event(), make=coord.make, bound=lambda t: 0.5,
                      wait_stuck_s=wait_stuck_s)


@pytest.mark.parametrize("call, abort, error, commit_called", [
    ("send_offsets_to_transaction", False, "send_offsets_to_transaction:_HUNG", False),
    ("commit_transaction", False, "commit_transaction:_HUNG", True),
    ("abort_transaction", True, "abort_transaction:_HUNG", False),
])
def test_a_hung_call_is_recorded_unknown_and_its_instance_fenced_closed_and_never_used_again(
        call: str, abort: bool, error: str, commit_called: bool, caplog: pytest.LogCaptureFixture) -> None:
    coord = FakeCoordinator(hang=call)
    client = _client(coord)
    with caplog.at_level(logging.INFO, logger="kafka_chaos.scenarios.clients.txn_workload"):
        txn = client.transact(_copier_plan, abort, group_metadata=None)
    assert txn is not None and txn.outcome == UNKNOWN and txn.error == error and txn.seq == 0
    assert (txn.committing_at is not None) == commit_called
    assert txn.offsets == (TxnOffset("g", "in", 0, 5),) and txn.sends == (TxnSend("out", 0, "k0", 10),)  # the last poll's
    stuck, fresh = coord.instances
    assert stuck.calls[stuck.calls.index(call) + 1:] == ["poll", "close"] and stuck.closed  # nothing else after the hang
    assert "abort_transaction" not in stuck.calls or call == "abort_transaction"
    assert fresh.calls == ["init_transactions"] and fresh.epoch == coord.epoch == 2 and client.producer is fresh
    assert client.hangs == 1 and client.still_stuck(0.0) == []
    hangs = [r for r in caplog.records if "librdkafka#5456" in r.getMessage()]
    assert len(hangs) == 1 and hangs[0].levelno == logging.WARNING and call in hangs[0].getMessage()
    assert any(f"the stuck {call} returned: _FENCED; its instance closed" in r.getMessage() for r in caplog.records)
    # the copier goes on with the new instance
    again = client.transact(_copier_plan, False, group_metadata=None)
    assert again is not None and again.outcome == COMMITTED and again.seq == 1
    assert coord.committed == [(2, ("k0",))] and len(coord.instances) == 2


def test_a_call_still_stuck_after_the_fence_is_left_and_closed_when_it_returns() -> None:
    released = threading.Event()
    coord = FakeCoordinator(hang="send_offsets_to_transaction", deaf=released)
    client = _client(coord, wait_stuck_s=0.1)
    txn = client.transact(_copier_plan, False)
    assert txn.outcome == UNKNOWN and txn.sends == (TxnSend("out", 0, "k0", None),)  # no delivery report polled
    stuck, fresh = coord.instances
    assert client.still_stuck(0.0) == ["send_offsets_to_transaction"] and not stuck.closed
    assert client.transact(_copier_plan, False).outcome == COMMITTED  # the copier did not wait for it
    assert stuck.calls[-1] == "send_offsets_to_transaction"  # nothing called on it meanwhile
    released.set()
    assert client.still_stuck(30.0) == [] and stuck.closed and stuck.calls[-2:] == ["poll", "close"]


def test_a_hang_while_stopping_fences_with_one_instance_and_makes_no_working_one() -> None:
    from kafka_chaos.scenarios.clients.txn_workload import _TxnClient

    coord = FakeCoordinator(hang="commit_transaction")
    stopping = threading.Event()
    client = _TxnClient("127.0.0.1:1", "unit-copier", "unit", stopping, make=coord.make, bound=lambda t: 0.5,
                      wait_stuck_s=30.0)

    def plan(producer: Any, sends: list[Any]) -> list[TxnOffset]:
        stopping.set()  # the writers are told to stop while this attempt is under way
        return _copier_plan(producer, sends)

    txn = client.transact(plan, False)
    assert txn.outcome == UNKNOWN and txn.error == "commit_transaction:_HUNG"
    stuck, fencer = coord.instances
    assert fencer.calls == ["init_transactions"] and client.producer is None and stuck.closed


def test_a_hung_begin_or_init_leaves_no_attempt_and_a_fenced_instance() -> None:
    coord = FakeCoordinator(hang="begin_transaction")
    client = _client(coord)
    assert client.transact(_copier_plan, False) is None and client.seq == 0
    assert coord.instances[0].closed and client.producer is coord.instances[1] and client.hangs == 1
    assert client.transact(_copier_plan, False).outcome == COMMITTED

    coord = FakeCoordinator(hang="init_transactions")
    client = _client(coord)
    txn = client.transact(_copier_plan, False)
    assert txn.outcome == COMMITTED and txn.seq == 0 and client.hangs == 1
    assert client.still_stuck(5.0) == [] and coord.instances[0].calls == ["init_transactions", "poll", "close"]
    assert coord.committed == [(coord.instances[1].epoch, ("k0",))] and coord.instances[1].epoch == coord.epoch


def test_a_call_that_returns_is_no_hang() -> None:
    coord = FakeCoordinator()
    client = _client(coord)
    assert client.transact(_copier_plan, False).outcome == COMMITTED
    assert client.transact(_copier_plan, True).outcome == ABORTED
    assert client.hangs == 0 and len(coord.instances) == 1


# --- what the checker makes of an attempt left unknown by a hang -----------------------------------

C_OK = Txn("c", 0, COMMITTED, (TxnSend("out", 0, "a", 0),), (TxnOffset("g", "in", 0, 2),), began_at=1.0,
           committing_at=1.1, ended_at=1.2)


def _with_hung(acked: bool, visible: bool, group_offset: int) -> TxnHistory:
    hung = Txn("c", 1, UNKNOWN, (TxnSend("out", 0, "b", 1 if acked else None),), (TxnOffset("g", "in", 0, 4),),
               error="send_offsets_to_transaction:_HUNG", began_at=2.0, ended_at=22.0)
    records = ((0, "a"), (1, "b")) if visible else ((0, "a"),)
    return TxnHistory((C_OK, hung), CONSUMERS, (), (), (ReadBack("out", 0, 0, 3, 30.0, records),),
                      (TxnOffset("g", "in", 0, group_offset),))


@pytest.mark.parametrize("acked", [True, False])
@pytest.mark.parametrize("visible, group_offset, fired", [
    (False, 2, set()),  # aborted by the fence: neither its writes nor its offsets
    (True, 4, set()),  # committed: both
    (False, 4, {tc.OFFSETS_WITHOUT_WRITES}),  # one without the other: atomicity broken either way
    (True, 2, {tc.WRITES_WITHOUT_OFFSETS}),
])
def test_an_unknown_attempt_may_have_committed_or_aborted_nothing_more(acked: bool, visible: bool, group_offset: int,
                                                                       fired: set[str]) -> None:
    assert tc.fired(tc.check_transactions(_with_hung(acked, visible, group_offset))) == fired


def test_the_copier_asks_for_its_committed_offsets_again_and_never_rewinds_to_the_log_start() -> None:
    """An error (the request, or one partition: UNSTABLE_OFFSET_COMMIT once librdkafka's own
    retries are spent) is asked again; a seek to the log start for it would copy the input twice."""

    def tp(partition: int, offset: int, error: KafkaError | None = None) -> Any:  # TopicPartition.error is read-only
        return SimpleNamespace(topic="in", partition=partition, offset=offset, error=error)

    unstable = tp(1, -1001, E(E.UNSTABLE_OFFSET_COMMIT, "pending transactional offset commit"))
    answers: list[Any] = [KafkaException(E(E._TIMED_OUT, "coordinator gone")), [tp(0, 17), unstable],
                          [tp(0, 17), tp(1, 539)]]
    asked = []

    def fetch() -> list[Any]:
        asked.append(1)
        got = answers.pop(0)
        if isinstance(got, Exception):
            raise got
        return list(got)

    got = committed_positions(fetch, threading.Event(), retry_s=0.0)
    assert got is not None and [(t.partition, t.offset) for t in got] == [(0, 17), (1, 539)]
    assert len(asked) == 3
    stopping = threading.Event()
    stopping.set()
    assert committed_positions(fetch, stopping, retry_s=0.0) is None  # stopping: nothing asked, no seek
    assert len(asked) == 3

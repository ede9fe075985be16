"""The transactional workload's pure parts (issue 43): what a KafkaError from ``commit_transaction``
/ ``abort_transaction`` makes the client do and the outcome it records (real
``confluent_kafka.KafkaError`` objects, flagged as librdkafka flags them), the stretches a run
stores and their merge, the history's JSON forms (version 11, older histories still read), the
schedule's opt-in and the ``transactions`` check."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError

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
    ABORT, GIVE_UP, RETRY, error_name, on_abort_error, on_commit_error, txn_outcome,
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

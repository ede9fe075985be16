"""Kafka's Java test clients in the transactional workload (issue 43): their JSON lines read into
history ops (real lines captured from a run on 3.9.2, tests/unit/scenarios/data/java_clients/),
the copy check, and the client faults' options and legality."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.checks.copy import CLASSES, DUPLICATE, EXTRA, JAVA_COPIER, LOST, ORDER, check_copy
from kafka_chaos.scenarios.clients.java_lines import (
    consumer_read,
    consumer_reset,
    copier_progress,
    json_event,
    producer_txn,
)
from kafka_chaos.scenarios.clients.txn_ops import (
    COMMITTED,
    READ_COMMITTED,
    UNKNOWN,
    ReadBack,
    TxnConsumer,
    TxnHistory,
    TxnOffset,
)
from kafka_chaos.scenarios.faults.base import StepTopics
from kafka_chaos.scenarios.faults.clients import ClientKill, ClientPause, client_fault_rule
from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import NoTarget, Target

DATA = Path(__file__).parent / "data" / "java_clients"


def lines(role: str) -> list[str]:
    return (DATA / f"{role}.out").read_text().splitlines()


# --- the lines -----------------------------------------------------------------------------------

@pytest.mark.parametrize("line, expected", [
    ('{"timestamp":1,"name":"startup_complete"}', {"timestamp": 1, "name": "startup_complete"}),
    ("Bad data can't be written as json: boom", None),
    ("[2026-11-28 21:01:37,092] INFO something", None),
    ('{"truncated', None),
    ("[1, 2]", None),
])
def test_json_event(line: str, expected: object) -> None:
    assert json_event(line) == expected


@pytest.mark.parametrize("line, outcome, send", [
    ('{"timestamp":1795901240,"name":"producer_send_success","key":null,"value":"1.7","topic":"in","partition":1,'
     '"offset":3}', COMMITTED, ("in", 1, "1.7", 3)),
    ('{"timestamp":1795901240,"name":"producer_send_error","key":null,"value":"1.8","topic":"in",'
     '"exception":"class org.apache.kafka.common.errors.TimeoutException","message":"expired"}', UNKNOWN, None),
])
def test_producer_lines(line: str, outcome: str, send: tuple[str, int, str, int] | None) -> None:
    event = json_event(line)
    assert event is not None
    txn = producer_txn(event, "vp", 4, 12.5)
    assert txn is not None and txn.outcome == outcome and txn.name == "vp#4" and txn.ended_at == 12.5
    if send is None:
        assert txn.sends == () and txn.error == "TimeoutException"
    else:
        s = txn.sends[0]
        assert (s.topic, s.partition, s.key, s.offset) == send


def test_every_captured_producer_line_is_a_send_or_a_lifecycle_line() -> None:
    events = [e for e in map(json_event, lines("producer")) if e is not None]
    txns = [t for n, e in enumerate(events) if (t := producer_txn(e, "vp", n, 0.0)) is not None]
    others = {e["name"] for e in events if e["name"] not in ("producer_send_success", "producer_send_error")}
    assert txns and all(t.outcome == COMMITTED and len(t.sends) == 1 for t in txns)
    assert others <= {"startup_complete", "shutdown_complete", "tool_data"}
    values = [t.sends[0].key for t in txns]
    assert len(set(values)) == len(values)  # a value names one message


def test_captured_consumer_lines_give_reads_and_resets() -> None:
    events = [e for e in map(json_event, lines("consumer")) if e is not None]
    reads = [r for e in events if (r := consumer_read(e, "rc", 1.0)) is not None]
    resets = [r for e in events if (r := consumer_reset(e, "rc", 1.0)) is not None]
    assert reads and resets and [r.why for r in resets[:2]] == ["started", "assigned"]
    assert all(r.consumer == "rc" and r.offset >= 0 and "." in r.key for r in reads)
    # no record line is anything but a read; no assignment line anything but a reset
    assert len(reads) == sum(e["name"] == "record_data" for e in events)
    assert len(resets) == sum(e["name"] in ("startup_complete", "partitions_assigned", "partitions_revoked")
                              for e in events)


def test_captured_copier_lines_count_commits_and_restarts() -> None:
    total, committed, rebalances = 0, 0, 0
    for e in filter(None, map(json_event, lines("copier"))):
        p = copier_progress(e, total)
        assert p is not None  # the copier prints status lines only
        assert p.committed >= 0
        total, committed, rebalances = p.total, committed + p.committed, rebalances + p.rebalanced
    assert committed > 0 and rebalances > 0


@pytest.mark.parametrize("stage, total, before, committed, rebalanced", [
    ("ProcessLoop", 40, 20, 20, False),
    ("ProcessLoop", 20, 20, 0, False),
    ("RebalanceComplete", 0, 0, 0, True),
    ("ProcessLoop", 5, 60, 5, False),  # a new process counts from 0
])
def test_copier_progress(stage: str, total: int, before: int, committed: int, rebalanced: bool) -> None:
    p = copier_progress({"stage": stage, "totalProcessed": total}, before)
    assert p is not None and (p.committed, p.rebalanced, p.total) == (committed, rebalanced, total)


def test_not_a_copier_status_line() -> None:
    assert copier_progress({"name": "record_data"}, 0) is None


# --- the copy check -------------------------------------------------------------------------------

def _history(inp: dict[int, list[str]], out: dict[int, list[str]], committed: dict[int, int]) -> TxnHistory:
    rbs = [ReadBack("in", p, 0, len(v), 1.0, tuple(enumerate(v))) for p, v in inp.items()]
    rbs += [ReadBack("out", p, 0, len(v), 1.0, tuple(enumerate(v))) for p, v in out.items()]
    return TxnHistory(consumers=(TxnConsumer(JAVA_COPIER, READ_COMMITTED, "g"),), readback=tuple(rbs),
                      group_offsets=tuple(TxnOffset("g", "in", p, o) for p, o in committed.items()))


@pytest.mark.parametrize("out, committed, fires", [
    ({0: ["a", "b"], 1: ["c"]}, {0: 2, 1: 1}, set()),
    ({0: ["a"], 1: []}, {0: 1}, set()),  # copied up to its committed offsets only
    ({0: ["a"], 1: ["c"]}, {0: 2, 1: 1}, {LOST}),
    ({0: ["a", "b"], 1: ["c"]}, {0: 1, 1: 1}, {EXTRA}),  # b visible without its offset committed
    ({0: ["a", "b", "a"], 1: ["c"]}, {0: 2, 1: 1}, {DUPLICATE}),
    ({0: ["b", "a"], 1: ["c"]}, {0: 2, 1: 1}, {ORDER}),
    ({0: ["a", "b"], 1: ["c", "x"]}, {0: 2, 1: 1}, {EXTRA}),
])
def test_copy_classes_fire_only_on_their_case(out: dict[int, list[str]], committed: dict[int, int],
                                              fires: set[str]) -> None:
    results = check_copy(_history({0: ["a", "b"], 1: ["c"]}, out, committed))
    assert [r.check for r in results] == list(CLASSES)
    assert {r.check for r in results if r.passed is False} == fires
    assert all(r.passed is True for r in results if r.check not in fires)


def test_copy_not_judged_without_the_java_copier_or_its_offsets() -> None:
    assert check_copy(TxnHistory()) == []
    h = TxnHistory(consumers=(TxnConsumer(JAVA_COPIER, READ_COMMITTED, "g"),))
    assert {r.passed for r in check_copy(h)} == {None}


# --- the client faults ----------------------------------------------------------------------------

TOPICS = StepTopics({}, {})
TARGET = Target((), "a Java client")


@pytest.mark.parametrize("options, error", [
    ({"client": "copier", "seconds": 5}, None),
    ({"client": "producer", "seconds": 0.5, "repeat": 10, "gap": 0.2}, None),
    ({"client": "broker"}, "'client' must be one of"),
    ({"seconds": 0}, "'seconds' must be a number"),
    ({"seconds": True}, "'seconds' must be a number"),
    ({"repeat": 0}, "'repeat' must be an integer"),
    ({"gap": -1}, "'gap' must be a number"),
    ({"signal": "STOP"}, "unknown option"),
])
def test_client_pause_options(options: dict[str, object], error: str | None) -> None:
    if error is None:
        fault = ClientPause.from_step(TARGET, options, TOPICS)
        assert fault.oracle_events() == [] and fault.holds == () and fault.label.startswith("client_pause/")
    else:
        with pytest.raises(UsageError, match=error):
            ClientPause.from_step(TARGET, options, TOPICS)


@pytest.mark.parametrize("options, error", [
    ({"client": "consumer"}, None),
    ({"client": "copier", "down": 3}, None),
    ({"down": 500}, "'down' must be a number"),
    ({"seconds": 1}, "unknown option"),
])
def test_client_kill_options(options: dict[str, object], error: str | None) -> None:
    if error is None:
        assert ClientKill.from_step(TARGET, options, TOPICS).oracle_events() == []
    else:
        with pytest.raises(UsageError, match=error):
            ClientKill.from_step(TARGET, options, TOPICS)


def _model(transactional: bool) -> ClusterModel:
    topics = [TopicSpec("t", {0: (1, 2, 3)})]
    if transactional:
        topics += [TopicSpec(n, {0: (1, 2, 3)}, workload=False, transactional=True) for n in ("txn_in", "txn_out")]
    return ClusterModel((1, 2, 3), {t.name: t for t in topics}, live={1, 2, 3})


@pytest.mark.parametrize("fault, options, transactional, legal", [
    ("client_pause", {"client": "copier", "seconds": 5}, True, True),
    ("client_kill", {"client": "producer"}, True, True),
    ("client_pause", {"client": "copier"}, False, False),  # no workload, no process
    ("client_kill", {"client": "copier"}, False, False),
    ("client_pause", {"client": "zookeeper"}, True, False),
    ("client_pause", {"seconds": 600}, True, False),
])
def test_client_fault_legality(fault: str, options: dict[str, object], transactional: bool, legal: bool) -> None:
    model = _model(transactional)
    step = Step(fault, NoTarget("a Java client"), options)
    if legal:
        client_fault_rule(model, step, ())
        model.apply(step)  # through the registered generator side too; nothing the model tracks changes
        assert model.live == {1, 2, 3}
    else:
        with pytest.raises(IllegalStep):
            client_fault_rule(model, step, ())


# --- which releases ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version, ok", [("3.9.2", True), ("2.5.0", True), ("2.4.1", False), ("2.4.0", False)])
def test_the_java_clients_need_2_5_for_their_options(version: str, ok: bool) -> None:
    from kafka_chaos.harness.java_clients import check_tools_release

    if ok:
        check_tools_release(version)
    else:
        with pytest.raises(UsageError, match="2.5 or later"):
            check_tools_release(version)

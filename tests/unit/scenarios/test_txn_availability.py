"""The transactional workload's figures per fault step (scenarios.checks.txn_availability): which
attempts a step's window holds, how each is counted, commit latency and the longest stretch
without a commit; tables, then a property over random windows."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
from hypothesis import given, strategies as st

from kafka_chaos.scenarios.checks.registry import txn_transparent_operation as registry_check
from kafka_chaos.scenarios.checks.txn_availability import (
    CHECK,
    TRANSPARENT,
    check_transparent_operation,
    ended_within,
    longest_without_commit,
    measure,
    txn_availability,
)
from kafka_chaos.scenarios.clients.txn_ops import ABORTED, COMMITTED, UNKNOWN, Txn

FAULT, END = 100.0, 110.0


def txn(seq: int, outcome: str, ended: float | None, committing: float | None = None, error: str | None = None,
        txn_id: str = "p0") -> Txn:
    return Txn(txn_id, seq, outcome, error=error, began_at=None if ended is None else ended - 1.0,
               committing_at=committing, ended_at=ended)


@pytest.mark.parametrize("ended, inside", [
    (99.999, False),  # ended before the fault: the step before's
    (100.0, True), (105.0, True), (110.0, True),  # the window's ends belong to it
    (110.001, False),  # after the measurement: the next stretch's
    (None, False),  # never ended (the client gave up without a stamp)
])
def test_the_window_holds_the_attempts_that_ended_in_it(ended, inside) -> None:
    assert (ended_within([txn(0, COMMITTED, ended)], FAULT, END) != []) is inside


@pytest.mark.parametrize("outcome, error, counted", [
    (COMMITTED, None, "committed"),
    (ABORTED, None, "aborted"),  # every fifth attempt: the workload asked for it
    (ABORTED, "CONCURRENT_TRANSACTIONS", "failed"),  # a commit that required the abort
    (ABORTED, "_FENCED", "failed"),
    (UNKNOWN, "_TIMED_OUT", "unknown"),
    (UNKNOWN, None, "unknown"),
])
def test_each_outcome_is_counted_once_where_it_belongs(outcome, error, counted) -> None:
    w = measure([txn(0, outcome, 105.0, error=error)], FAULT, END)
    counts = {"committed": w.committed, "aborted": w.aborted, "failed": w.failed, "unknown": w.unknown}
    assert counts == {name: int(name == counted) for name in counts}
    assert w.failure_rate == (1.0 if counted in ("failed", "unknown") else 0.0)


def test_no_attempt_has_no_failure_rate_and_a_silence_the_window_long() -> None:
    w = measure([], FAULT, END)
    assert w.attempts == 0 and w.failure_rate is None
    assert w.latency_ms() == {"txn_commit_p50": None, "txn_commit_p99": None, "txn_no_commit": 10_000.0}


@pytest.mark.parametrize("commits, longest", [
    ([], 10_000.0),
    ([105.0], 5_000.0),
    ([101.0, 102.0, 109.5], 7_500.0),  # between two commits
    ([100.2, 100.4], 9_600.0),  # the silence still open at the window's end: a lower bound
    ([95.0, 112.0], 10_000.0),  # commits outside the window are no edges
])
def test_the_longest_stretch_without_a_commit_counts_the_window_ends(commits, longest) -> None:
    assert longest_without_commit(commits, FAULT, END) == pytest.approx(longest)


def test_commit_latency_is_from_the_call_to_the_return_of_committed_attempts_only() -> None:
    txns = [txn(i, COMMITTED, 101.0 + i, committing=101.0 + i - ms / 1000) for i, ms in enumerate([10, 20, 30, 5000])]
    txns += [txn(9, UNKNOWN, 106.0, committing=100.5, error="_TIMED_OUT"),  # not committed: no sample
             txn(10, COMMITTED, 107.0, committing=None)]  # Kafka's Java copier: no call stamp
    w = measure(txns, FAULT, END)
    assert w.commit_ms == pytest.approx((10.0, 20.0, 30.0, 5000.0))
    assert w.latency_ms()["txn_commit_p50"] == pytest.approx(20.0)  # nearest rank
    assert w.latency_ms()["txn_commit_p99"] == pytest.approx(5000.0)
    assert w.committed == 5 and w.unknown == 1


def test_the_measurement_names_the_fault_and_its_errors() -> None:
    txns = [txn(0, COMMITTED, 102.0, committing=101.99), txn(1, ABORTED, 103.0, error="_FENCED"),
            txn(2, ABORTED, 104.0, error="_FENCED"), txn(3, UNKNOWN, 105.0, error="_TIMED_OUT")]
    r = txn_availability(txns, FAULT, END, "txn_coordinator_kill")
    assert (r.check, r.kind, r.passed) == (CHECK, "measurement", None)
    assert r.observed["errors"] == {"_FENCED": 2, "_TIMED_OUT": 1}
    assert r.observed["failure_rate"] == 0.75
    assert r.detail.startswith("transactions during txn_coordinator_kill: 1 committed, 0 aborted as asked, "
                               "2 aborted by an error, 1 unknown (failure rate 75%)")
    assert r.timestamps == {"start": FAULT, "end": END}


outcomes = st.sampled_from([(COMMITTED, None), (ABORTED, None), (ABORTED, "_FENCED"), (UNKNOWN, "_TIMED_OUT")])


@given(st.lists(st.tuples(st.floats(90.0, 120.0), st.floats(0.0, 8.0), outcomes), max_size=30))
def test_any_window_counts_each_attempt_in_it_once_and_bounds_its_silence(attempts) -> None:
    txns = [txn(i, outcome, ended, committing=ended - took, error=error)
            for i, (ended, took, (outcome, error)) in enumerate(attempts)]
    w = measure(txns, FAULT, END)
    inside = [t for t in txns if FAULT <= t.ended_at <= END]
    assert w.attempts == len(inside)
    assert len(w.commit_ms) == sum(1 for t in inside if t.outcome == COMMITTED)
    assert 0.0 <= w.no_commit_ms <= (END - FAULT) * 1000.0 + 1e-6
    commits = sorted(t.ended_at for t in inside if t.outcome == COMMITTED)
    if commits:  # no stretch between the window's ends and its commits is longer than the longest
        edges = [FAULT, *commits, END]
        assert all((b - a) * 1000.0 <= w.no_commit_ms + 1e-6 for a, b in zip(edges, edges[1:]))
    else:
        assert w.no_commit_ms == pytest.approx((END - FAULT) * 1000.0)


# --- the verdict on planned operations ----------------------------------------------------------


@pytest.mark.parametrize("outcome, error, passed", [
    (COMMITTED, None, True),
    (ABORTED, None, True),  # asked for by the workload
    (ABORTED, "NETWORK_EXCEPTION", False),  # KAFKA-16692: verification refused by a 3.5 coordinator
    (UNKNOWN, "_TIMED_OUT", False),
    (UNKNOWN, None, False),
])
def test_a_planned_operation_fails_no_attempt(outcome, error, passed) -> None:
    r = check_transparent_operation([txn(0, COMMITTED, 101.0), txn(1, outcome, 105.0, error=error),
                                     txn(2, ABORTED, 111.0, error="NETWORK_EXCEPTION")],  # after the window
                                    FAULT, END, "roll/to 3.5.2")
    assert (r.check, r.passed, r.observed["attempts"]) == (TRANSPARENT, passed, 2)
    if not passed:
        assert r.detail == (f"1 of 2 attempt(s) ended by an error during roll/to 3.5.2, a planned operation: "
                            f"{error or outcome} x1 (first: p0#1)")


def step(kind: str, txns: list[Txn] | None, live: int = 3, excused: tuple[int, ...] = (),
         target: tuple[int, ...] = (2,), index: int | None = 1) -> NS:
    return NS(index=index, txn=None if txns is None else NS(txns=tuple(txns)),
              traits=NS(kind=kind, label=kind), before=NS(live_brokers=tuple(range(1, live + 1))),
              run=NS(brokers=3), excused=excused, target=NS(brokers=target), fault_at=FAULT, measured_at=END)


FAILED = [txn(0, ABORTED, 105.0, error="NETWORK_EXCEPTION")]


@pytest.mark.parametrize("obs, judged", [
    (step("roll", FAILED), True),
    (step("controlled_shutdown", FAILED, excused=(2,)), True),  # the broker it holds down is its target
    (step("preferred_election", FAILED, target=()), True),
    (step("reassignment", FAILED, target=()), True),
    (step("hard_kill", FAILED), False),  # not a planned operation
    (step("pause", FAILED), False),
    (step("txn_past_timeout", FAILED), False),
    (step("roll", FAILED, live=2), False),  # a broker already down
    (step("preferred_election", FAILED, excused=(3,), target=()), False),  # a broker still cut or paused
    (step("roll", None), False),  # no transactional workload
    (step("roll", FAILED, index=None), False),  # topic creation, not a fault step
])
def test_only_planned_operations_on_a_whole_cluster_are_judged(obs, judged) -> None:
    results = registry_check(obs, None)
    assert len(results) == int(judged)
    assert all(r.passed is False for r in results)

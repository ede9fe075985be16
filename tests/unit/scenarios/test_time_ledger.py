"""The time ledger (scenarios.model.ledger): its arithmetic, the stopwatch, which phases each
fault's waits are, the ``time_ledger`` measurement and records, and the run's end summary."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from kafka_chaos.app.time_summary import OUTSIDE, time_table
from kafka_chaos.harness.observer import ConvergenceTimeout
from kafka_chaos.oracle import CreateTopic
from kafka_chaos.scenarios.checks.registry import CheckContext, check_history, evaluate, to_records
from kafka_chaos.scenarios.checks.time_ledger import TIME_LEDGER, counted_ledgers, ledger_measurement, ledger_of
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.history.observations import ScenarioAborted, ScenarioFinished
from kafka_chaos.scenarios.model import ledger as L
from kafka_chaos.scenarios.model.ledger import FaultWaits, Stopwatch, TimeLedger, summed
from kafka_chaos.scenarios.model.targets import Target
from tests.unit.scenarios.histories import BEFORE, RUN, T0, hard_kill_step

STEP_LEDGER = TimeLedger((("settle", 1.5), ("predict", 0.25), ("inject", 0.01), ("session_expiry", 6.2),
                          ("metadata", 0.4), ("measure", 0.3), ("other", 0.04)))
ITERATION_LEDGER = TimeLedger((("cluster", 12.0), ("create_topics", 2.0), ("workload_start", 1.0), ("check", 0.5),
                               ("heal", 3.0), ("read_back", 4.0), ("other", 0.5)))


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# --- arithmetic ------------------------------------------------------------------------------------

def test_of_orders_rounds_and_leaves_out_phases_without_time() -> None:
    ledger = TimeLedger.of({"other": 0.0004, "converge": 2.00049, "settle": 1.0, "metadata": 0.0})
    assert ledger.entries == (("settle", 1.0), ("converge", 2.0))
    assert ledger.total == 3.0 and ledger.kafka_dictated == 0.0


@pytest.mark.parametrize(("entries", "total", "kafka"), [
    ((), 0.0, 0.0),
    ((("inject", 0.5),), 0.5, 0.0),
    ((("broker_start", 4.0), ("converge", 1.0)), 5.0, 4.0),
    ((("inject", 0.1), ("session_expiry", 6.2), ("other", 0.2)), 6.5, 6.2),
    (STEP_LEDGER.entries, 8.7, 6.2),
])
def test_total_and_kafka_dictated(entries, total, kafka) -> None:
    ledger = TimeLedger(entries)
    assert (ledger.total, ledger.kafka_dictated) == (total, kafka)
    assert bool(ledger) == bool(entries)


@pytest.mark.parametrize(("entries", "message"), [
    ((("coffee", 1.0),), "unknown time-ledger phase"),
    ((("converge", 1.0), ("settle", 1.0)), "out of order"),
    ((("settle", 1.0), ("settle", 2.0)), "repeated"),
])
def test_a_ledger_refuses_unknown_repeated_or_unordered_phases(entries, message) -> None:
    with pytest.raises(ValueError, match=message):
        TimeLedger(entries)


def test_summed_adds_each_phase_over_ledgers() -> None:
    total = summed([STEP_LEDGER, replace(STEP_LEDGER), ITERATION_LEDGER, TimeLedger()])
    assert total.seconds("session_expiry") == 12.4 and total.seconds("cluster") == 12.0
    assert total.seconds("other") == 0.58
    assert total.total == round(2 * STEP_LEDGER.total + ITERATION_LEDGER.total, 3)


def test_a_ledger_round_trips_as_a_list() -> None:
    assert TimeLedger.from_list(STEP_LEDGER.to_list()) == STEP_LEDGER
    assert TimeLedger.from_list(None) == TimeLedger() == TimeLedger.from_list([])


def test_every_phase_is_named_once_and_dictated_ones_are_step_phases() -> None:
    assert len(set(L.PHASES)) == len(L.PHASES) and L.PHASES[-1] == L.OTHER
    assert L.KAFKA_DICTATED <= set(L.STEP_PHASES)
    assert set(L.COUNTED_SCOPES) < set(L.SCOPES) and L.TOPIC_CREATION not in L.COUNTED_SCOPES


# --- the stopwatch ---------------------------------------------------------------------------------

def test_the_stopwatch_puts_what_no_phase_measured_in_other() -> None:
    clock = FakeClock()
    watch = Stopwatch(clock)
    clock.now += 1.0  # unmeasured
    with watch.phase("settle"):
        clock.now += 2.5
    with watch.phase("converge"):
        clock.now += 4.0
    watch.add("converge", 0.5)
    clock.now += 0.25
    ledger = watch.ledger()
    assert ledger.entries == (("settle", 2.5), ("converge", 4.5), ("other", 0.75))
    assert ledger.total == clock.now - 100.0  # the wall time, whole


def test_the_stopwatch_counts_a_phase_that_raised_and_leaves_out_time_accounted_elsewhere() -> None:
    clock = FakeClock()
    watch = Stopwatch(clock)
    with pytest.raises(RuntimeError), watch.phase("heal"):
        clock.now += 3.0
        raise RuntimeError("boom")
    clock.now += 10.0  # e.g. fault steps, each in its own ledger
    assert watch.ledger(accounted_elsewhere=9.0).entries == (("heal", 3.0), ("other", 1.0))
    assert watch.ledger(accounted_elsewhere=20.0).entries == (("heal", 3.0),)  # never negative


@pytest.mark.parametrize("phase", ["other", "coffee"])
def test_the_stopwatch_measures_only_named_phases(phase) -> None:
    with pytest.raises(ValueError, match="not a measured time-ledger phase"):
        Stopwatch(FakeClock()).add(phase, 1.0)


# --- which phases a fault's waits are --------------------------------------------------------------

def _fault(kind: str, brokers=(1,), **options):
    return make_fault(kind, Target(tuple(brokers), "b"), options, topic_names={"t": "phys-t"},
                      topic_partitions={"t": (0, 1)})


@pytest.mark.parametrize(("kind", "options", "inject", "converge"), [
    ("hard_kill", {}, "inject", "session_expiry"),
    ("controller_kill", {}, "inject", "session_expiry"),
    ("controlled_shutdown", {}, "inject", "converge"),
    ("start", {}, "broker_start", "converge"),
    ("restart", {"hard": True}, "broker_start", "converge"),
    ("pause", {}, "session_expiry", "converge"),
    ("short_pause", {"seconds": 1}, "inject", "converge"),
    ("network_partition", {"variant": "everyone"}, "inject", "session_expiry"),
    ("network_partition", {"variant": "zookeeper"}, "inject", "session_expiry"),
    ("network_partition", {"variant": "peers"}, "inject", "converge"),
    ("network_partition", {"variant": "heal", "cut": "everyone"}, "inject", "converge"),
    ("preferred_election", {"topic": "t"}, "inject", "converge"),
    ("quorum_leader_kill", {}, "session_expiry", "converge"),
    ("quorum_loss", {}, "broker_start", "converge"),
    ("migration_roll", {"to": "hybrid"}, "broker_start", "converge"),
    ("migration_deprovision", {}, "inject", "converge"),
])
def test_each_fault_declares_which_of_its_waits_kafka_dictates(kind, options, inject, converge) -> None:
    assert _fault(kind, **options).waits == FaultWaits(inject, converge)


def test_a_fault_cannot_declare_a_phase_that_is_not_a_wait_of_its_own() -> None:
    with pytest.raises(ValueError):
        FaultWaits(inject="settle")
    with pytest.raises(ValueError):
        FaultWaits(converge="broker_start")


# --- the measurement and its records -----------------------------------------------------------------

def test_the_measurement_carries_the_ledger_and_none_for_an_empty_one() -> None:
    [result] = ledger_measurement("step", STEP_LEDGER)
    assert result.is_measurement and result.passed is None and result.check == TIME_LEDGER
    assert result.observed == {"scope": "step", "phases": STEP_LEDGER.as_dict(), "seconds": 8.7,
                               "kafka_dictated_s": 6.2}
    assert result.detail.startswith("step 8.7 s: session_expiry 6.2 s, settle 1.5 s, metadata 0.4 s")
    assert ledger_measurement("iteration", TimeLedger()) == []
    with pytest.raises(ValueError, match="scope"):
        ledger_measurement("night", STEP_LEDGER)


def _records(observations):
    return [r for obs, results in check_history(observations) for r in to_records(obs, results)]


def test_every_ledger_becomes_a_record_the_summary_reads_back() -> None:
    observations = [
        hard_kill_step(index=None, label="create_topic", ledger=TimeLedger((("inject", 0.5), ("converge", 1.5)))),
        hard_kill_step(ledger=STEP_LEDGER),
        ScenarioFinished(RUN, T0 + 8, T0 + 9, None, ledger=ITERATION_LEDGER),
    ]
    ledgers = [ledger_of(r) for r in _records(observations) if r.check == TIME_LEDGER]
    assert ledgers == [("topic_creation", TimeLedger((("inject", 0.5), ("converge", 1.5)))),
                       ("step", STEP_LEDGER), ("iteration", ITERATION_LEDGER)]
    # topic creation breaks down the iteration's create_topics: not counted twice
    assert counted_ledgers(_records(observations)) == [STEP_LEDGER, ITERATION_LEDGER]


def test_an_aborted_iteration_has_its_ledger_too() -> None:
    results = evaluate(ScenarioAborted(RUN, T0, T0 + 1, "not settled", ITERATION_LEDGER), CheckContext())
    assert [(r.check, r.observed["scope"]) for r in results if r.is_measurement] == [(TIME_LEDGER, "iteration")]


def test_an_older_history_without_ledgers_gives_no_ledger_record() -> None:
    records = _records([hard_kill_step(), ScenarioFinished(RUN, T0, T0 + 1, None), ScenarioAborted(RUN, T0, T0, "x")])
    assert not [r for r in records if r.check == TIME_LEDGER]


# --- topic creation, timed (StepCore with a fake cluster) ---------------------------------------------

class _Cluster:
    kafka_version = "3.9.2"
    broker_ids = [1, 2, 3]

    def broker_settings(self):
        return {}


class _NeverConverges:
    def snapshot(self):
        return BEFORE

    def wait_until(self, predicate, timeout, description):
        time.sleep(0.05)
        raise ConvergenceTimeout(description, None, timeout)


def test_topic_creation_is_timed_phase_by_phase_and_adds_up_to_its_wall_time() -> None:
    from kafka_chaos.oracle import predict
    from kafka_chaos.scenarios.run.step import StepCore

    core = StepCore(_Cluster(), _NeverConverges(), None, ["t"], predict)  # type: ignore[arg-type]
    began = time.time()
    observed, _, converged = core.create_topics(RUN, [CreateTopic("t2", {0: (1, 2)}, {})],
                                                lambda: time.sleep(0.02))
    wall = time.time() - began
    assert not converged
    phases = observed.ledger.as_dict()
    assert set(phases) <= {"predict", "inject", "converge", "other"}
    assert phases["inject"] >= 0.02 and phases["converge"] >= 0.05
    assert observed.ledger.total == pytest.approx(observed.finished_at - observed.started_at, abs=0.005)
    assert observed.ledger.total <= wall + 0.005


# --- the end-of-run summary --------------------------------------------------------------------------

def test_the_summary_lists_each_phase_with_its_share_of_the_wall_time() -> None:
    text = time_table([STEP_LEDGER, ITERATION_LEDGER], wall_s=40.0, steps_checked=3)
    lines = text.splitlines()
    assert lines[0] == "where the time went (40 s wall; * Kafka-dictated: 6.2 s, 15.5 %):"
    assert [line.split()[0] for line in lines[1:-1]] == [
        "settle", "predict", "inject", "session_expiry", "metadata", "measure", "cluster", "create_topics",
        "workload_start", "check", "heal", "read_back", "other", OUTSIDE.split()[0]]
    assert "  session_expiry *       6.2 s  15.5 %" in lines
    assert f"  {OUTSIDE}            8.3 s  20.8 %" in lines  # 40 s less the 31.7 s the ledgers hold
    assert lines[-1] == "  3 checked step(s): 45.0 per 10 minutes"
    assert "checked step" not in time_table([], wall_s=0.0)


def test_the_offline_re_check_gives_the_same_ledger_records(tmp_path) -> None:
    from kafka_chaos.cli.main import main
    from kafka_chaos.records.writer import read_records
    from tests.unit.scenarios.test_cli_check import _stored_run

    run = tmp_path / "run"
    _stored_run(run, [hard_kill_step(ledger=STEP_LEDGER), ScenarioFinished(RUN, T0 + 8, T0 + 9, None,
                                                                           ledger=ITERATION_LEDGER)])
    assert main(["check", str(run), "--out", str(tmp_path / "out"), "--no-report"]) == 0
    stored = [r.to_json() for r in read_records(run).records if r.check == TIME_LEDGER]
    assert len(stored) == 2
    assert [r.to_json() for r in read_records(tmp_path / "out").records if r.check == TIME_LEDGER] == stored

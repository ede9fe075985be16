"""History v2: the clients' ops (sends, polls, resets) round-trip losslessly, version-1 lines
are still read (and give no client results), and the registered history checks and the
availability measurement read them."""

from __future__ import annotations

import json
from dataclasses import replace

from kafka_chaos.scenarios.checks.availability import measure, nearest_rank
from kafka_chaos.scenarios.checks.registry import check_history, to_records
from kafka_chaos.scenarios.clients.ops import ClientOps, ConsumerReset, FailedSend, Poll
from kafka_chaos.scenarios.clients.delivery import Ack, validate_delivery
from kafka_chaos.scenarios.history.observations import (
    HISTORY_VERSION,
    FaultTraits,
    ScenarioFinished,
    TopicDelivery,
    observation_from_json,
    observation_to_json,
)
from kafka_chaos.scenarios.model.targets import Target
from tests.unit.scenarios.histories import RUN, T0, hard_kill_step


def _ops(since: float, until: float | None, start: int, n: int, t: float) -> ClientOps:
    acks = tuple(Ack(0, i, f"r-0-{i}", t + 0.1 * (i - start)) for i in range(start, start + n))
    polls = tuple(Poll(c, i, f"r-0-{i}", t + 0.1 * (i - start) + 0.02, t + 0.1 * (i - start) - 0.005)
                  for c in ("assign", "group") for i in range(start, start + n))
    return ClientOps(since, until, acks, (FailedSend("r-0-x", "_MSG_TIMED_OUT", t),), polls,
                     (ConsumerReset("group", since + 0.001, "assigned"),) if start == 0 else ())


def _scenario(unseen: bool = False, implicit: int | None = None) -> list:
    """``implicit``: that message's acknowledgement named no offset (an idempotent producer's
    implicit acknowledgement), as the workload records it."""
    ops = _ops(T0 - 1, T0 + 7, 0, 50, T0 + 0.6)
    if implicit is not None:
        ops = replace(ops, acks=tuple(replace(a, offset=None) if a.key == f"r-0-{implicit}" else a for a in ops.acks))
    step = hard_kill_step(ops={"t-0": ops})
    last = _ops(T0 + 7, None, 50, 10, T0 + 8)
    if unseen:  # nobody reads the last acked message
        last = replace(last, polls=tuple(p for p in last.polls if p.offset != 59))
    read = [(0, i, f"r-0-{i}") for i in range(60 - unseen)]
    readback = tuple(Poll("readback", o, k, T0 + 30) for _, o, k in read)
    report = validate_delivery([a for o in (step.ops["t-0"], last) for a in o.acks], read)
    finished = ScenarioFinished(RUN, T0 + 20, T0 + 31, None, (TopicDelivery("t", report),),
                                {"t-0": replace(last, polls=last.polls + readback)})
    return [step, finished]


def test_ops_round_trip_under_the_current_version() -> None:
    for obs in _scenario():
        line = observation_to_json(obs)
        assert json.loads(line)["history_version"] == HISTORY_VERSION >= 2  # ops came with version 2
        assert observation_from_json(line) == obs


def test_an_acknowledgement_without_an_offset_round_trips_as_null_and_is_checked_clean() -> None:
    step, finished = _scenario(implicit=7)
    line = observation_to_json(step)
    assert json.loads(line)["history_version"] == HISTORY_VERSION >= 4  # null offsets came with version 4
    assert [None, "r-0-7"] == json.loads(line)["ops"]["t-0"]["acks"][7][1:3]
    assert observation_from_json(line) == step
    results = [r for _, rs in check_history([step, finished]) for r in rs]
    assert {"delivery", "history_duplicate", "history_inconsistent_offsets"} <= {r.check for r in results}
    assert [(r.check, r.detail) for r in results if r.passed is False] == []


def test_version_1_lines_are_read_without_ops_and_give_no_client_results() -> None:
    step, finished = _scenario()
    old = []
    for obs in (replace(step, ops={}), replace(finished, ops={})):
        data = json.loads(observation_to_json(obs))
        data["history_version"] = 1
        del data["ops"]
        old.append(observation_from_json(json.dumps(data)))
    assert old[0].ops == {} and old[1].ops == {}
    checks = {r.check for _, results in check_history(old) for r in results}
    assert not any(c.startswith("history_") or c == "client_availability" for c in checks)


def test_the_history_checks_pass_a_clean_scenario_and_fail_an_unseen_message() -> None:
    results = [r for _, rs in check_history(_scenario()) for r in rs if r.check.startswith("history_")]
    assert len(results) == 8 and all(r.passed is True for r in results), [r.detail for r in results]
    bad = [r for _, rs in check_history(_scenario(unseen=True)) for r in rs
           if r.passed is False and r.check.startswith("history_")]
    assert [r.check for r in bad] == ["history_unseen"] and "r-0-59" in bad[0].detail


def test_availability_measurement_records() -> None:
    (step, results), _ = check_history(_scenario())
    measured = [r for r in results if r.check == "client_availability"]
    assert len(measured) == 1 and measured[0].partition == 0
    record = to_records(step, measured)[0]
    assert record.kind == "measurement" and record.latency_ms is not None
    assert record.latency_ms["e2e_p50"] == 25.0  # created 5 ms before the ack, polled 20 ms after it
    # acks every 100 ms from T0+0.6 to T0+5.5 after the fault at T0+0.5; the window ends at T0+7
    assert record.latency_ms["unavailable"] == 1500.0
    # the producer's outage: no ack in the stretch before T0+0.6 (100 ms of it after the fault, a
    # failed send reported there too), and the 1.5 s still unanswered when the window ends
    assert record.latency_ms["produce_outage"] == 1600.0
    assert record.observed["produce_availability"] == 1.0 and record.observed["windows"] == 6


def test_availability_counts_windows_and_gaps() -> None:
    ops = ClientOps(0.0, 10.0, tuple(Ack(0, i, f"k{i}", t) for i, t in enumerate((0.5, 1.5, 4.2))),
                    polls=(Poll("assign", 0, "k0", 0.6, 0.45), Poll("group", 1, "k1", 3.0, 1.4)))
    a = measure([ops], 0.0, 5.0)
    assert a.windows == 5 and a.produce == 3 / 5 and a.consume == 1 / 5
    assert round(a.unavailable_ms, 6) == 2700.0 and [round(x, 6) for x in a.e2e_ms] == [150.0, 1600.0]
    assert a.latency_ms()["produce_unavailable"] == 2000.0
    assert nearest_rank([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0 and nearest_rank([], 0.5) is None


def _power_failure_of_t0(kind: str) -> list:
    """Brokers 1 and 2 -- every ISR member of t-0 -- struck at T0 + 0.5 (``kind``:
    ``power_failure``, or ``hard_kill``, which loses nothing). Before it, r-0-0..4 acked at 0..4
    and r-0-5 read at 5 unacknowledged; after it t-0's log restarts empty: r-0-5 appended again
    at 0 by the producer's retry, r-0-6..9 at 1..4, the read-back holding that log."""
    before = _ops(T0 - 1, T0 + 7, 0, 5, T0)
    before = replace(before, polls=before.polls + (Poll("group", 5, "r-0-5", T0 + 0.52, T0 + 0.45),))
    traits = FaultTraits(kind, kind, exact_epochs=True, holds=(1, 2))
    step = hard_kill_step(ops={"t-0": before}, traits=traits, target=Target((1, 2), "brokers 1, 2 (ISR of t-0)"))
    after = tuple(Ack(0, o, f"r-0-{5 + o}", T0 + 8 + 0.1 * o) for o in range(5))
    readback = tuple(Poll("readback", a.offset or 0, a.key, T0 + 30) for a in after)
    report = validate_delivery([*before.acks, *after], [(0, p.offset, p.key) for p in readback])
    finished = ScenarioFinished(RUN, T0 + 20, T0 + 31, None, (TopicDelivery("t", report),),
                                {"t-0": ClientOps(T0 + 7, None, after, (), readback, ())})
    return [step, finished]


def test_a_message_read_in_a_permitted_power_failure_loss_and_written_again_is_an_allowed_duplicate() -> None:
    results = {r.check: r for _, rs in check_history(_power_failure_of_t0("power_failure")) for r in rs}
    duplicate = results["history_duplicate"]
    assert duplicate.passed is True and duplicate.observed["allowed"] == 1 and duplicate.observed["anomalies"] == 0
    assert "power failure's permitted loss on ['t-0']" in duplicate.detail
    # the same history without a loss the contract permits: the duplicate fails
    results = {r.check: r for _, rs in check_history(_power_failure_of_t0("hard_kill")) for r in rs}
    assert results["history_duplicate"].passed is False and results["history_duplicate"].observed["allowed"] == 0

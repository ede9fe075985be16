"""The producer's outage (``produce_outage``): how long its sends to a partition went unanswered,
from its own delivery reports (scenarios.checks.availability.produce_stalls) — table tests of the
pure function, then the client_availability records of a step with several partitions."""

from __future__ import annotations

import pytest

from kafka_chaos.records.schema import STALL_S
from kafka_chaos.scenarios.checks.availability import Stall, measure, outage_ms, produce_stalls
from kafka_chaos.scenarios.checks.registry import check_history, to_records
from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.clients.ops import ClientOps, FailedSend
from tests.unit.scenarios.histories import T0, hard_kill_step

FAULT, END = 100.0, 110.0  # the window: the fault to the end of the step's measurement
SINCE = 90.0  # the recorded stretch began here


def paced(start: float, stop: float, every: float = 0.02) -> list[float]:
    """Acknowledgements at the workload's pace (50/s) from ``start`` to ``stop`` inclusive."""
    return [round(start + i * every, 6) for i in range(int(round((stop - start) / every)) + 1)]


CASES = [
    # (what, acks, failed-send reports, expected outage in ms, expected stalls (start, end, closed, failed))
    ("acks at the workload's pace throughout: no stall, 0", paced(95.0, 110.0), [], 0.0, []),
    ("the leader dies right after an ack: from it to the next ack, 5,300 ms",
     paced(95.0, 100.0) + paced(105.3, 110.0), [], 5300.0, [(100.0, 105.3, True, 0)]),
    ("a failed send reported after the last ack, the next success 300 ms after that ack: 300 ms",
     paced(95.0, 102.0) + paced(102.3, 110.0), [102.1], 300.0, [(102.0, 102.3, True, 1)]),
    ("a failed send reported before the fault is not this step's", paced(95.0, 110.0), [99.5], 0.0, []),
    ("one reported after the window is not either", paced(95.0, 110.0), [110.5], 0.0, []),
    ("a silence of exactly STALL_S is a stall", paced(95.0, 103.0) + paced(104.0, 110.0), [], 1000.0,
     [(103.0, 104.0, True, 0)]),
    ("a silence just under it is the workload's pace", paced(95.0, 103.0) + paced(103.999, 110.0), [], 0.0, []),
    ("a stall that began before the fault counts from the fault",
     paced(95.0, 99.0) + paced(101.5, 110.0), [], 1500.0, [(99.0, 101.5, True, 0)]),
    ("still stalled at the window's end: to the end, open", paced(95.0, 107.0), [], 3000.0,
     [(107.0, 110.0, False, 0)]),
    ("an ack exactly at the window's end closes the stall", paced(95.0, 107.0) + [110.0], [], 3000.0,
     [(107.0, 110.0, True, 0)]),
    ("a short silence left at the window's end is the pace, not a stall", paced(95.0, 109.5), [], 0.0, []),
    ("no ack in the whole stretch: the whole window", [], [], 10000.0, [(SINCE, 110.0, False, 0)]),
    ("no ack since the stretch began until 2 s after the fault", paced(102.0, 110.0), [], 2000.0,
     [(SINCE, 102.0, True, 0)]),
    ("two stalls add up", paced(95.0, 101.0) + paced(103.0, 105.0) + paced(106.5, 110.0), [], 3500.0,
     [(101.0, 103.0, True, 0), (105.0, 106.5, True, 0)]),
]


@pytest.mark.parametrize(("acks", "failed", "outage", "stalls"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_the_producers_outage(acks: list[float], failed: list[float], outage: float,
                              stalls: list[tuple[float, float, bool, int]]) -> None:
    found = produce_stalls(acks, failed, SINCE, FAULT, END)
    assert [(round(s.start, 6), round(s.end, 6), s.closed, s.failed) for s in found] == stalls
    assert round(outage_ms(found, FAULT, END), 6) == outage


def test_the_stall_threshold_is_one_second() -> None:
    assert STALL_S == 1.0  # docs/report.md and the report's notes say "1 s"


def test_measure_counts_the_producers_outage_from_its_ops() -> None:
    ops = ClientOps(SINCE, END, tuple(Ack(0, i, f"k{i}", t) for i, t in enumerate(paced(95.0, 100.0)
                                                                                   + paced(105.3, 110.0))),
                    (FailedSend("kx", "_MSG_TIMED_OUT", 104.0),))
    a = measure([ops], FAULT, END)
    assert a.stalls == (Stall(100.0, 105.3, True, 1),)
    assert a.latency_ms()["produce_outage"] == 5300.0
    # the 1 s windows count whole seconds without an ack: 101-105, four of them, not 5,300 ms
    assert a.latency_ms()["produce_unavailable"] == 4000.0


def test_each_partition_of_a_step_gets_its_own_outage() -> None:
    """t-0 led by the killed broker stalls from T0+0.48 to T0+5.7; t-1 kept its leader and never stalled."""
    stalled = ClientOps(T0 - 1, T0 + 7, tuple(Ack(0, i, f"r-0-{i}", t) for i, t in enumerate(
        paced(T0, T0 + 0.48) + paced(T0 + 5.7, T0 + 7.0))))
    steady = ClientOps(T0 - 1, T0 + 7, tuple(Ack(1, i, f"r-1-{i}", t) for i, t in enumerate(paced(T0, T0 + 7.0))))
    step = hard_kill_step(ops={"t-0": stalled, "t-1": steady})
    (_, results), = check_history([step])
    records = to_records(step, [r for r in results if r.check == "client_availability"])
    outages = {r.partition: r.latency_ms["produce_outage"] for r in records if r.latency_ms is not None}
    assert outages == {0: 5200.0, 1: 0.0}  # t-0: counted from the fault at T0+0.5 to the ack at T0+5.7
    assert "produce outage 5200.0 ms in 1 stall(s) of 1 s or more" in records[0].detail

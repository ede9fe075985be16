"""The min_isr_honoured invariant (scenarios.checks.min_isr), the refusals it reads from the
producer's own lines (scenarios.clients.producer_log.refusals), and the registered check."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.scenarios.checks.min_isr import Writes, check_min_isr_honoured, effective_min_isr
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.clients.producer_log import Refusal, refusals
from kafka_chaos.scenarios.history.observations import ClientActivity, StepObserved, observation_from_json, observation_to_json
from tests.unit.scenarios.histories import hard_kill_step

LINE = ("1795856706.579 MSGSET [kafka-chaos-s#producer-1] [thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: MessageSet "
        "with 1 message(s) (MsgId 68, BaseSeq 67) encountered error: Broker: Not enough in-sync replicas "
        "(actions Retry,MsgNotPersisted)")


def test_refusals_are_read_from_the_producers_failed_batches() -> None:
    timed_out = LINE.replace("Broker: Not enough in-sync replicas", "Local: Message timed out")
    assert refusals([LINE, timed_out, "noise"]) == [
        Refusal("t", 0, 1795856706.579, "Broker: Not enough in-sync replicas")]


@pytest.mark.parametrize("topic_config, default, expected", [
    ({}, None, 1), ({}, "2", 2), ({"min.insync.replicas": "3"}, "2", 3), ({"min.insync.replicas": "x"}, "2", 2),
])
def test_the_effective_minimum_is_the_topics_else_the_brokers_else_one(
        topic_config: dict[str, str], default: str | None, expected: int) -> None:
    assert effective_min_isr(topic_config, default) == expected


def after(isr: tuple[int, ...]) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers={1: 1, 2: 2}, controller=1, controller_epoch=1,
                      partitions={("t", 0): PartitionZkState("t", 0, (1, 2, 3), 1, 2, isr, 1, 0, 3)},
                      topic_configs={}, pending_reassignment=False)


TWO = {"min.insync.replicas": "2"}
# Each case fires only on its own: (ISR, topic config, refused at, acked at, verdicts).
CASES = {
    "refused while the ISR holds the minimum": ((1, 2), TWO, (12.0,), (), [False]),
    "refused while the ISR is below it": ((1,), TWO, (12.0,), (), [True]),
    "acknowledged while the ISR holds the minimum": ((1, 2), TWO, (), (12.0,), [True]),
    "acknowledged while the ISR is below it": ((1,), TWO, (), (12.0,), [False]),
    "refused before the grace ended": ((1, 2), {}, (9.0,), (), [True]),
    "acknowledged before the grace ended": ((1,), TWO, (), (9.0, 20.5), [True]),
    "nothing at all": ((1, 2), TWO, (), (), [True]),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_writes_against_the_settled_isr(case: str) -> None:
    isr, config, refused, acked, verdicts = CASES[case]
    results = check_min_isr_honoured(after(isr), {"t-0": Writes(refused, acked)}, 10.0, 20.0, None, {"t": config})
    assert [r.passed for r in results] == verdicts


def test_a_violation_names_the_leader_the_isr_and_the_minimum() -> None:
    [refused] = check_min_isr_honoured(after((1, 2)), {"t-0": Writes((12.0,), ())}, 10.0, 20.0, "2", {})
    assert (refused.topic, refused.partition) == ("t", 0)
    assert refused.detail.startswith("leader 1 refused acks=all writes with NOT_ENOUGH_REPLICAS 1 time(s), 4.0 s")
    assert refused.detail.endswith("while its ISR [1, 2] held min.insync.replicas=2")
    [acked] = check_min_isr_honoured(after((1,)), {"t-0": Writes((), (11.0, 13.0))}, 10.0, 20.0, "2", {})
    assert acked.detail.startswith("leader 1 acknowledged acks=all writes 2 time(s), 3.0 s to 5.0 s after")
    assert acked.detail.endswith("while its ISR [1] was below min.insync.replicas=2")


def test_the_registered_check_needs_recorded_refusals_and_a_converged_step() -> None:
    step = hard_kill_step()  # an older history: nothing recorded
    assert [r for r in evaluate(step, CheckContext()) if r.check == "min_isr_honoured"] == []
    clients = {k: replace(c, refused=()) for k, c in step.clients.items()}
    late = step.fault_at + step.waited_s + 3.0
    clients["t-0"] = replace(clients["t-0"], refused=(("Broker: Not enough in-sync replicas", late),))
    recorded = replace(step, clients=clients, measured_at=late + 1)
    back = observation_from_json(observation_to_json(recorded))
    assert isinstance(back, StepObserved) and back.clients == recorded.clients
    results = [r for r in evaluate(back, CheckContext()) if r.check == "min_isr_honoured"]
    # ISR [2] holds the default 1: the refusal fails; t-1's acks end before the grace does
    assert [(r.passed, r.topic, r.partition) for r in results] == [(False, "t", 0)]
    unconverged = replace(back, waited_s=back.convergence_timeout_s)
    assert [r for r in evaluate(unconverged, CheckContext()) if r.check == "min_isr_honoured"] == []
    assert ClientActivity().refused is None

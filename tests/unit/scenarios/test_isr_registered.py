"""The isr_registered invariant (scenarios.checks.isr_registered): a led partition's ISR names
registered brokers only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.harness.observer import PartitionZkState
from kafka_chaos.scenarios.checks.isr_registered import check_isr_registered
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from tests.unit.scenarios.histories import AFTER, hard_kill_step, snapshot, zk_partition


def after(live: tuple[int, ...], *parts: PartitionZkState):
    return snapshot(live, list(parts))


CASES = {
    "every member registered": (after((1, 2, 3), zk_partition(0, (1, 2, 3), 1, (1, 2, 3), 4)), True),
    # KAFKA-9338 (2.4.1): broker 3, cut from ZooKeeper only, added back by its leader
    "an unregistered member beside a live leader": (after((1, 2), zk_partition(0, (1, 2, 3), 1, (1, 2, 3), 5)), False),
    "the last member of an offline partition stays": (after((1, 2), zk_partition(0, (3,), -1, (3,), 5)), True),
    "a dead leader's partition is not judged": (after((1, 2), zk_partition(0, (3, 1), 3, (3, 1), 5)), True),
    "one bad partition among good ones": (after((1, 2), zk_partition(0, (1, 2), 1, (1, 2), 4),
                                                zk_partition(1, (2, 3), 2, (2, 3), 4)), False),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_isr_registered(case: str) -> None:
    snap, verdict = CASES[case]
    assert check_isr_registered(snap, ["t"]).passed is verdict


def test_other_topics_are_not_judged_and_the_stray_is_named() -> None:
    snap = after((1, 2), zk_partition(0, (1, 2, 3), 1, (1, 2, 3), 5))
    assert check_isr_registered(snap, ["u"]).passed is True
    assert check_isr_registered(snap, ["t"]).detail == "t-0: ISR names unregistered broker(s) [3] (registered: [1, 2])"


def test_the_registered_check_judges_a_step_that_converged_while_it_ran() -> None:
    def verdicts(obs: object) -> list[bool | None]:
        return [r.passed for r in evaluate(obs, CheckContext()) if r.check == "isr_registered"]  # type: ignore[arg-type]

    stray = replace(AFTER, partitions={**AFTER.partitions, ("t", 0): zk_partition(0, (1, 2), 2, (2, 1), 5, 2)})
    assert verdicts(hard_kill_step()) == [True]
    assert verdicts(hard_kill_step(after=stray)) == [False]  # whatever the oracle says of it
    # the wait ran out: the controller may not have taken the dead broker out yet
    assert verdicts(hard_kill_step(after=stray, waited_s=90.0, convergence_timeout_s=90.0)) == []

"""The producer_ids_unique invariant: the ids librdkafka logs it acquired
(scenarios.clients.producer_log) and the pure check (scenarios.checks.producer_ids)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, strategies as st

from kafka_chaos.harness.readiness import ProducerIdGrant
from kafka_chaos.scenarios.checks.producer_ids import check_producer_ids_unique
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.clients.debug_ring import DebugRing
from kafka_chaos.scenarios.clients.producer_log import ACQUIRED_PID, ProducerIdGiven, producer_ids_given
from kafka_chaos.scenarios.history.observations import ScenarioFinished, TopicDelivery, observation_from_json, observation_to_json
from kafka_chaos.scenarios.run.runner import harness_producer_ids
from tests.unit.scenarios.histories import RUN

# Lines as the workload's ring keeps them (a real 3.6.1 run's, shortened).
LINES = [
    "1795856706.579 GETPID [kafka-chaos-s#producer-1] [thrd:main]: Acquired PID{Id:1,Epoch:0}",
    "1795856706.579 NEWPID [kafka-chaos-s#producer-1] [thrd:127.0.0.1:31451/1]: t [0] changed PID{Invalid} "
    "-> PID{Id:1,Epoch:0} with base MsgId 1",
    "1795856716.100 GETPID [kafka-chaos-s#producer-1] [thrd:main]: Acquired PID{Id:1,Epoch:1}",
    "1795856720.000 GETPID [kafka-chaos-s#producer-3] [thrd:main]: Acquired PID{Id:1000,Epoch:0}",
]


def g(client: str, pid: int, epoch: int = 0, at: float = 0.0) -> ProducerIdGiven:
    return ProducerIdGiven(client, at, pid, epoch)


def test_the_acquired_ids_are_read_from_the_producers_lines_and_nothing_else() -> None:
    assert producer_ids_given(LINES) == [
        g("kafka-chaos-s#producer-1", 1, 0, 1795856706.579), g("kafka-chaos-s#producer-1", 1, 1, 1795856716.1),
        g("kafka-chaos-s#producer-3", 1000, 0, 1795856720.0)]


def test_the_ring_keeps_every_acquired_id_however_many_lines_follow() -> None:
    ring = DebugRing("test-ring", 3, keep=(ACQUIRED_PID,))
    for line in LINES[:1] + [f"line {i}" for i in range(10)]:
        ring.logger.debug(line.split(" ", 1)[1])
    assert len(ring.lines()) == 3 and len(ring.kept_lines()) == 1
    assert ring.kept_lines()[0].endswith("Acquired PID{Id:1,Epoch:0}")


CASES = {
    "distinct ids": ([g("a#producer-1", 1), g("b#producer-2", 2)], True),
    "one producer bumps its epoch": ([g("a#producer-1", 1), g("a#producer-1", 1, 1)], True),
    "the same id and epoch to two producers": ([g("a#producer-1", 5), g("a#producer-3", 5)], False),
    "the same id at another epoch": ([g("a#producer-1", 5, 1), g("b#producer-2", 5, 0)], False),
    "no id logged": ([], None),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_producer_ids(case: str) -> None:
    given_ids, verdict = CASES[case]
    assert check_producer_ids_unique(given_ids).passed is verdict


def test_a_shared_id_names_both_producers_and_when() -> None:
    result = check_producer_ids_unique([g("a#producer-3", 5, at=20.0), g("a#producer-1", 5, at=10.0)])
    assert result.detail == "producer id 5 given to a#producer-1 (epoch 0, at 10.000), a#producer-3 (epoch 0, at 20.000)"


@given(st.lists(st.tuples(st.integers(1, 5), st.integers(0, 3)), max_size=30))
def test_ids_given_to_one_producer_each_always_pass(grants: list[tuple[int, int]]) -> None:
    given_ids = [g(f"p#producer-{pid}", pid, epoch) for pid, epoch in grants]
    assert check_producer_ids_unique(given_ids).passed is (True if given_ids else None)


def finished(*deliveries: TopicDelivery) -> ScenarioFinished:
    return ScenarioFinished(RUN, 0.0, 1.0, None, deliveries)


def test_the_registered_check_takes_every_topics_producers_and_the_record_survives_the_history_file() -> None:
    assert [r for r in evaluate(finished(TopicDelivery("t", None, "x")), CheckContext())
            if r.check == "producer_ids_unique"] == []  # an older history: no ids recorded
    obs = finished(TopicDelivery("t", None, "x", producers=(g("a#producer-1", 7),)),
                   TopicDelivery("u", None, "x", producers=(g("a#producer-2", 7),)))
    back = observation_from_json(observation_to_json(obs))
    assert back == obs
    assert isinstance(back, ScenarioFinished)
    results = [r for r in evaluate(back, CheckContext()) if r.check == "producer_ids_unique"]
    assert [r.passed for r in results] == [False]
    assert [r.passed for r in evaluate(replace(back, deliveries=back.deliveries[:1]), CheckContext())
            if r.check == "producer_ids_unique"] == [True]


GRANT_CASES = {
    # KAFKA-15552: the block the last ZooKeeper-mode grant came from handed out again by the KRaft
    # controller, to a broker that restarted in the migration.
    "a block handed out twice": ((g("a#producer-1", 7),), (ProducerIdGrant("b1:9092", 1.0, 2000, 0),
                                                           ProducerIdGrant("b2:9092", 9.0, 2000, 0)), False),
    "the harness's id given to a client too": ((g("a#producer-1", 1000),),
                                               (ProducerIdGrant("b1:9092", 1.0, 1000, 0),), False),
    "every grant its own id": ((g("a#producer-1", 7),), (ProducerIdGrant("b1:9092", 1.0, 1000, 0),
                                                         ProducerIdGrant("b1:9092", 9.0, 1001, 0)), True),
    "grants alone, no workload": ((), (ProducerIdGrant("b1:9092", 1.0, 1000, 0),), True),
}


@pytest.mark.parametrize("case", GRANT_CASES, ids=list(GRANT_CASES))
def test_the_harness_grants_count_as_producers_and_survive_the_history_file(case: str) -> None:
    producers, grants, verdict = GRANT_CASES[case]
    obs = replace(finished(TopicDelivery("t", None, "x", producers=producers)), granted=harness_producer_ids(grants))
    back = observation_from_json(observation_to_json(obs))
    assert back == obs
    assert isinstance(back, ScenarioFinished)
    assert [r.passed for r in evaluate(back, CheckContext()) if r.check == "producer_ids_unique"] == [verdict]


def test_each_grant_is_its_own_producer_instance() -> None:
    grants = [ProducerIdGrant("b1:9092", 1.0, 5, 0), ProducerIdGrant("b1:9092", 2.0, 6, 0)]
    assert len({p.client for p in harness_producer_ids(grants)}) == 2

"""The shrinker against a fake runner: it keeps the failure, drops everything else, never runs
an illegal candidate, and stops at its budget."""

from __future__ import annotations

from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, REPERTOIRE, generate, problems
from kafka_chaos.scenarios.plans.schedule import Schedule
from kafka_chaos.scenarios.plans.shrink import failure_keys, legal, shrink
from kafka_chaos.scenarios.model.targets import Brokers, Controller, EarlierTarget, NoTarget
from kafka_chaos.scenarios.checks.triage import CLIENT, HARNESS, KAFKA, MODEL, UNKNOWN, classify, summary, triage

KEY = ("oracle_epoch", "controlled_shutdown")


def _fails_on_controlled_shutdown(calls: list[Schedule]):
    """A fake cluster run: the oracle_epoch check fails on every controlled shutdown."""
    def trial(s: Schedule) -> frozenset:
        assert legal(s), "the shrinker must never spend a cluster on an illegal schedule"
        calls.append(s)
        return frozenset({KEY} if any(st.fault == "controlled_shutdown" for st in s.steps) else set())
    return trial


def _schedule() -> Schedule:
    steps = (Step("hard_kill", Brokers((4,))), Step("controller_kill", Controller()), Step("start", EarlierTarget(1)),
             Step("preferred_election", NoTarget(), {"topic": "b", "via": "admin"}),
             Step("controlled_shutdown", Brokers((5,))), Step("start", Brokers((4, 5))),
             Step("reassignment", NoTarget(), {"topic": "a", "moves": [[1, [4, 6]]]}))
    topics = (TopicSpec("a", {p: (4, 5) for p in range(8)}), TopicSpec("b", {0: (6,)}))
    return Schedule("s", (4, 5, 6, 7), topics, steps)


def test_shrinks_to_the_one_step_that_fails_and_drops_topics_partitions_brokers() -> None:
    calls: list[Schedule] = []
    s = _schedule()
    assert problems(s) == []
    result = shrink(s, KEY, _fails_on_controlled_shutdown(calls), budget_s=60)
    assert [st.fault for st in result.schedule.steps] == ["controlled_shutdown"]
    [topic] = result.schedule.topics
    assert len(topic.assignment) == 1
    used = {b for r in topic.assignment.values() for b in r} | {5}
    assert set(result.schedule.brokers) == used  # the rest named by nothing any more
    assert not result.exhausted and result.runs == len(calls) and result.skipped > 0


def test_a_failure_that_needs_two_steps_keeps_both_and_their_order() -> None:
    def needs_kill_then_shutdown(s: Schedule) -> frozenset:
        faults = [st.fault for st in s.steps]
        ok = "hard_kill" in faults and "controlled_shutdown" in faults[faults.index("hard_kill"):]
        return frozenset({KEY} if ok else set())

    result = shrink(_schedule(), KEY, needs_kill_then_shutdown, budget_s=60)
    assert [st.fault for st in result.schedule.steps] == ["hard_kill", "controlled_shutdown"]


def test_another_failure_does_not_count_and_the_budget_is_kept() -> None:
    result = shrink(_schedule(), KEY, lambda s: frozenset({("delivery", None)}), budget_s=60)
    assert result.schedule == _schedule()
    ticks = iter(range(0, 1000, 10))
    result = shrink(_schedule(), KEY, _fails_on_controlled_shutdown([]), budget_s=25, clock=lambda: next(ticks))
    assert result.exhausted and result.runs <= 2


def test_dropping_a_step_drops_the_steps_naming_it_and_renumbers_the_rest() -> None:
    s = _schedule()
    # dropping the controller kill drops "start the target of step 2" with it; never an orphan
    calls: list[Schedule] = []
    shrink(s, KEY, _fails_on_controlled_shutdown(calls), budget_s=60)
    for c in calls:
        for st in c.steps:
            if isinstance(st.target, EarlierTarget):
                assert c.steps[st.target.step].fault == "controller_kill"


def test_generated_failing_schedules_shrink_to_at_most_two_steps() -> None:
    config = GeneratorConfig(faults=REPERTOIRE, steps=10)
    shrunk = 0
    for i in range(40):
        s = generate(5, i, config)
        if not any(st.fault == "controlled_shutdown" for st in s.steps):
            continue
        result = shrink(s, KEY, _fails_on_controlled_shutdown([]), budget_s=60)
        assert len(result.schedule.steps) <= 2 and problems(result.schedule) == []
        shrunk += 1
    assert shrunk >= 5


class R:
    def __init__(self, check, passed, fault="hard_kill", started_at=1.0, detail="", kind="check", topic="t"):
        self.check, self.passed, self.fault, self.started_at, self.detail, self.kind = check, passed, fault, started_at, detail, kind
        self.topic = topic
        self.expected = self.observed = None


def test_triage_classes() -> None:
    assert classify(R("oracle_leader", False)).klass == MODEL
    assert classify(R("delivery", False, detail="lost acknowledged messages")).klass == KAFKA
    assert classify(R("metadata_agrees_zk", False)).klass == KAFKA
    assert classify(R("scenario_completed", False)).klass == HARNESS
    assert classify(R("oracle_leader", None, detail="checker crashed")).klass == HARNESS
    run = [R("converged", False), R("oracle_isr", False)]
    assert classify(run[0], run).klass == MODEL
    assert classify(R("converged", False), [R("converged", False), R("single_controller", False)]).klass == KAFKA
    assert classify(R("converged", False), [R("converged", False)]).klass == UNKNOWN
    assert classify(R("mystery", False)).klass == UNKNOWN
    records = [R("oracle_leader", True), R("oracle_epoch", False), R("latency", None, kind="measurement"),
               R("healed", False)]
    assert summary(triage(records)) == {MODEL: 1, KAFKA: 0, CLIENT: 0, HARNESS: 1, UNKNOWN: 0}


def _delivery(misplaced: list[str], lost: int = 0) -> R:
    r = R("delivery", False, started_at=5.0)
    r.observed = {"lost": lost, "duplicated": 0, "misplaced": len(misplaced),
                  "misplaced_evidence": [{"key": f"k{i}", "classification": c} for i, c in enumerate(misplaced)]}
    return r


def test_a_delivery_report_naming_the_wrong_offset_is_the_clients() -> None:
    """Found by `kafka-chaos explore --seed 11`: librdkafka acknowledged a message at offset 0,
    which every reader saw holding another message; this one was at 155 all along. The same ack
    made the history checker report a duplicate, an inconsistent offset and a non-monotonic send."""
    client = _delivery(["client"])
    artefacts = [R(c, False, started_at=5.0) for c in ("history_duplicate", "history_inconsistent_offsets",
                                                       "history_nonmonotonic_send")]
    run = [client, *artefacts, R("history_lost_write", False, started_at=5.0)]
    assert [classify(r, run).klass for r in run] == [CLIENT, CLIENT, CLIENT, CLIENT, KAFKA]
    # anything else in the delivery record keeps it Kafka's
    for other in (_delivery(["client", "kafka"]), _delivery(["client"], lost=1), _delivery(["harness"])):
        assert classify(other, [other]).klass == KAFKA
        assert classify(artefacts[0], [other, artefacts[0]]).klass == KAFKA


def _duplicates(n: int, resent: int, lost: int = 0) -> R:
    r = R("delivery", False, started_at=5.0)
    r.observed = {"lost": lost, "duplicated": n, "misplaced": 0,
                  **({"resent_by_producer": resent, "client_evidence": [{"key": "k", "evidence": "librdkafka#4953"}]}
                     if resent else {})}
    return r


def _history_duplicates(n: int, topic: str = "t") -> R:
    r = R("history_duplicate", False, started_at=5.0, topic=topic)
    r.observed = {"anomalies": n}
    return r


def test_a_duplicate_the_producer_sent_again_under_a_bumped_epoch_is_the_clients() -> None:
    """librdkafka#4953: a possibly persisted batch re-sent after an epoch bump, by the producer's
    own lines (scenarios.clients.producer_log); anything the resends do not explain keeps it Kafka's."""
    delivery, history = _duplicates(1, 1), _history_duplicates(1)
    assert [classify(r, [delivery, history]).klass for r in (delivery, history)] == [CLIENT, CLIENT]
    for other in (_duplicates(2, 1), _duplicates(1, 0), _duplicates(1, 1, lost=1)):
        assert classify(other, [other]).klass == KAFKA
        assert classify(history, [other, history]).klass == KAFKA
    assert classify(_history_duplicates(2), [delivery, _history_duplicates(2)]).klass == KAFKA  # one more than resent
    assert classify(_history_duplicates(1, "u"), [delivery]).klass == KAFKA  # another topic's


def test_failure_keys_are_failed_checks_only() -> None:
    records = [R("oracle_leader", True), R("oracle_epoch", False, "controlled_shutdown"), R("x", None),
               R("latency", False, kind="measurement")]
    assert failure_keys(records) == {KEY}

"""Faults aimed at transactions (issue 43, item 3): the coordinator selectors and Kafka's
key-to-partition arithmetic they rest on, a producer held past its transaction.timeout.ms (the
fault's oracle events, options and generator legality), and the checker on such a transaction's
history."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.scenarios.checks import transactions as tc
from kafka_chaos.scenarios.clients.txn_ops import COMMITTED, UNKNOWN, Txn, TxnRead, TxnSend
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
from kafka_chaos.scenarios.faults.txn_timeout import TxnPastTimeout, hold_seconds
from kafka_chaos.scenarios.model.coordinators import java_string_hash, kafka_abs, partition_for
from kafka_chaos.scenarios.model.held_txn import HeldTransaction
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import (
    Brokers,
    CoordinatorOf,
    EarlierTarget,
    GroupCoordinatorOf,
    NoTarget,
    PartitionView,
    Target,
    TargetView,
)
from kafka_chaos.scenarios.plans.generator import GeneratorConfig, generate, problems
from kafka_chaos.scenarios.plans.schedule import Schedule, dumps, load, schedule_from_json, selector_to_json
from kafka_chaos.scenarios.plans.transactional import with_transactional_topics
from kafka_chaos.scenarios.run.step import ClientNames, StepNaming
from tests.unit.test_transactions_checker import BASE, READBACK, R

# --- Kafka's arithmetic ------------------------------------------------------------------------------
# Every row computed by real Java (jshell, Java 17): s.hashCode(), then Kafka's Utils.abs (0 for
# Integer.MIN_VALUE) modulo 5 (the harness's transaction.state.log.num.partitions) and 50 (Kafka's
# default offsets.topic.num.partitions).
JAVA = [
    ("", 0, 0, 0),
    ("a", 97, 2, 47),
    ("p0", 3520, 0, 20),
    ("copier", -1354729774, 4, 24),
    ("polygenelubricants", -2147483648, 0, 0),  # hashCode == Integer.MIN_VALUE: Math.abs stays negative
    ("GydZG_", -2147483648, 0, 0),
    ("kafka-chaos-txn_by_hand-1a2b3c4d-p0", 575688238, 3, 38),
    ("kafka-chaos-txn_leader_kill-0f1e2d3c-copier", -827386319, 4, 19),
    ("kafka-chaos-t-copier-deadbeef", 417802518, 3, 18),
    ("\u00e9t\u00e9", 227742, 2, 42),
    ("\u65e5\u672c", 835047, 2, 47),
    ("\U0001F600", 1772899, 4, 49),  # beyond the BMP: two UTF-16 code units, as Java hashes it
    ("AaAa", 2031744, 4, 44),
]


@pytest.mark.parametrize(("key", "hash_code", "of5", "of50"), JAVA)
def test_partition_for_is_javas_hash_code_and_kafkas_abs(key: str, hash_code: int, of5: int, of50: int) -> None:
    assert java_string_hash(key) == hash_code
    assert (partition_for(key, 5), partition_for(key, 50)) == (of5, of50)


def test_kafka_abs_of_the_smallest_int_is_zero_and_partition_for_refuses_no_partitions() -> None:
    assert (kafka_abs(-(2 ** 31)), kafka_abs(-5), kafka_abs(7)) == (0, 5, 7)
    with pytest.raises(ValueError):
        partition_for("x", 0)


@given(st.text(max_size=40), st.integers(min_value=1, max_value=200))
def test_the_hash_is_a_32_bit_int_and_the_partition_one_of_the_topics(key: str, partitions: int) -> None:
    h = java_string_hash(key)
    assert -(2 ** 31) <= h < 2 ** 31
    assert java_string_hash(key + "x") == ((31 * h + ord("x") + 2 ** 31) % 2 ** 32) - 2 ** 31
    assert 0 <= partition_for(key, partitions) < partitions


# --- the selectors --------------------------------------------------------------------------------

def _view(txn_leaders: Mapping[int, int] | None, offsets_leaders: Mapping[int, int], live: frozenset[int] = frozenset({1, 2, 3})) -> TargetView:
    parts = {("__consumer_offsets", p): PartitionView((1, 2, 3), leader, (1, 2, 3)) for p, leader in offsets_leaders.items()}
    if txn_leaders is not None:
        parts.update({("__transaction_state", p): PartitionView((1, 2, 3), leader, (1, 2, 3))
                      for p, leader in txn_leaders.items()})
    return TargetView(live, 1, parts, frozenset({1, 2, 3}))


TXN_LEADERS = {0: 1, 1: 2, 2: 3, 3: 2, 4: 3}  # five partitions
OFFSETS_LEADERS = {p: 1 + p % 3 for p in range(50)}


@pytest.mark.parametrize(("selector", "broker", "partition"), [
    (CoordinatorOf("kafka-chaos-txn_by_hand-1a2b3c4d-p0"), 2, "__transaction_state-3"),
    (CoordinatorOf("copier"), 3, "__transaction_state-4"),
    (CoordinatorOf("p0"), 1, "__transaction_state-0"),
    (CoordinatorOf("polygenelubricants"), 1, "__transaction_state-0"),
    (GroupCoordinatorOf("kafka-chaos-t-copier-deadbeef"), 1, "__consumer_offsets-18"),
    (GroupCoordinatorOf("\U0001F600"), 2, "__consumer_offsets-49"),
])
def test_a_coordinator_is_the_leader_of_the_partition_that_owns_the_key(selector: CoordinatorOf | GroupCoordinatorOf,
                                                                         broker: int, partition: str) -> None:
    target = selector.resolve(_view(TXN_LEADERS, OFFSETS_LEADERS), random.Random(0))
    assert target.brokers == (broker,) and partition in target.description


def test_no_transaction_state_or_no_live_leader_is_one_clear_line() -> None:
    with pytest.raises(UsageError, match="no __transaction_state in the observed state"):
        CoordinatorOf("p0").resolve(_view(None, OFFSETS_LEADERS), random.Random(0))
    with pytest.raises(UsageError, match="none live"):
        CoordinatorOf("p0").resolve(_view({**TXN_LEADERS, 0: -1}, OFFSETS_LEADERS), random.Random(0))
    with pytest.raises(UsageError, match="none live"):  # the model's leader is down: not this broker
        CoordinatorOf("p0").resolve(_view(TXN_LEADERS, OFFSETS_LEADERS, frozenset({2, 3})), random.Random(0))


def test_a_step_names_the_workloads_ids_by_role_and_the_run_renames_them() -> None:
    names = ClientNames({"p0": "kafka-chaos-txn_by_hand-1a2b3c4d-p0"}, {"copier": "kafka-chaos-t-copier-deadbeef"})
    naming = StepNaming(client_names=names)
    assert naming._physical(CoordinatorOf("p0")) == CoordinatorOf("kafka-chaos-txn_by_hand-1a2b3c4d-p0")
    assert naming._physical(CoordinatorOf("verbatim-id")) == CoordinatorOf("verbatim-id")
    assert naming._physical(GroupCoordinatorOf("copier")) == GroupCoordinatorOf("kafka-chaos-t-copier-deadbeef")


def _schedule(target: object, fault: str = "hard_kill") -> dict[str, object]:
    return {"schedule_version": 1, "name": "s", "cluster": {"brokers": [1, 2, 3]}, "workload": {"transactions": True},
            "topics": [{"name": "t", "assignment": {"0": [1, 2, 3]}}],
            "steps": [{"fault": fault, "target": target}, {"fault": "start", "target": {"earlier": 0}}]}


@pytest.mark.parametrize(("written", "selector"), [
    ({"coordinator_of": "p1"}, CoordinatorOf("p1")),
    ({"coordinator_of": {"transactional_id": "copier"}}, CoordinatorOf("copier")),
    ({"group_coordinator_of": "copier"}, GroupCoordinatorOf("copier")),
])
def test_schedules_write_the_selectors_and_read_them_back(written: object, selector: object) -> None:
    s = schedule_from_json(_schedule(written))
    assert s.steps[0].target == selector
    assert selector_to_json(selector) in ({"coordinator_of": getattr(selector, "transactional_id", None)},
                                          {"group_coordinator_of": getattr(selector, "group", None)})
    assert schedule_from_json(json.loads(dumps(s))) == s


@pytest.mark.parametrize("written", [{"coordinator_of": 5}, {"coordinator_of": ""},
                                     {"coordinator_of": {"group": "g"}}, {"group_coordinator_of": ["g"]}])
def test_a_bad_coordinator_target_is_one_line(written: object) -> None:
    with pytest.raises(UsageError) as err:
        schedule_from_json(_schedule(written))
    assert "\n" not in str(err.value) and "steps[0].target" in str(err.value)


def test_the_documented_schedule_loads_and_is_legal() -> None:
    from pathlib import Path

    s = load(Path(__file__).parents[3] / "docs" / "schedules" / "transaction_coordinators.json")
    assert not problems(s), problems(s)
    assert any(isinstance(st.target, CoordinatorOf) for st in s.steps)
    assert any(isinstance(st.target, GroupCoordinatorOf) for st in s.steps)
    assert any(st.fault == TxnPastTimeout.kind for st in s.steps)


# --- generator legality ---------------------------------------------------------------------------

def _plan(transactional: bool = True) -> Schedule:
    topics = (TopicSpec("t", {0: (1, 2, 3)}, {}),)
    return Schedule("s", (1, 2, 3), with_transactional_topics(topics) if transactional else topics, ())


LEGALITY = [
    ("kill a coordinator then start it", True, [Step("hard_kill", CoordinatorOf("p0")), Step("start", EarlierTarget(0))], None),
    ("shut the group coordinator down", True, [Step("controlled_shutdown", GroupCoordinatorOf("copier"))], None),
    ("pause a coordinator", True, [Step("pause", CoordinatorOf("copier")), Step("short_pause", CoordinatorOf("p1"))], None),
    ("no transactional workload", False, [Step("hard_kill", CoordinatorOf("p0"))], 1),
    ("a named broker while the coordinator is down", True,
     [Step("hard_kill", CoordinatorOf("p0")), Step("hard_kill", Brokers((2,)))], 2),
    ("a coordinator while a broker is cut", True,
     [Step("network_partition", Brokers((2,)), {"variant": "isolate"}), Step("restart", CoordinatorOf("p0"))], 2),
    ("two coordinators down at once: the second may be the first", True,
     [Step("hard_kill", CoordinatorOf("p0")), Step("hard_kill", CoordinatorOf("p1"))], 2),
    ("held past its timeout", True, [Step("txn_past_timeout", NoTarget("p"), {"producer": "p1"})], None),
    ("held past its timeout, no transactional workload", False, [Step("txn_past_timeout", NoTarget("p"))], 1),
    ("held past its timeout with a broker down", True,
     [Step("hard_kill", Brokers((3,))), Step("txn_past_timeout", NoTarget("p"))], 2),
    ("held past its timeout with a coordinator down", True,
     [Step("hard_kill", CoordinatorOf("p1")), Step("txn_past_timeout", NoTarget("p"))], 2),
]


@pytest.mark.parametrize(("what", "transactional", "steps", "illegal_step"), LEGALITY, ids=[c[0] for c in LEGALITY])
def test_generator_legality(what: str, transactional: bool, steps: list[Step], illegal_step: int | None) -> None:
    found = problems(replace(_plan(transactional), steps=tuple(steps)))
    if illegal_step is None:
        assert found == []
    else:
        assert found and found[0].startswith(f"step {illegal_step} ")


def test_the_generator_aims_process_faults_at_coordinators_only_with_the_workload() -> None:
    aimed, held = 0, 0
    for i in range(60):
        s = generate(11, i, GeneratorConfig(transactions=True, steps=8))
        assert not problems(s)
        assert sum(t.transactional for t in s.topics) == 2
        aimed += sum(isinstance(st.target, (CoordinatorOf, GroupCoordinatorOf)) for st in s.steps)
        held += sum(st.fault == TxnPastTimeout.kind for st in s.steps)
        plain = generate(11, i)
        assert not any(isinstance(st.target, (CoordinatorOf, GroupCoordinatorOf)) or st.fault == TxnPastTimeout.kind
                       for st in plain.steps)
    assert aimed > 20 and held > 5, (aimed, held)


def test_a_coordinator_kill_leaves_the_model_waiting_for_its_start() -> None:
    model = ClusterModel.of(_plan())
    model.apply(Step("hard_kill", CoordinatorOf("p0")))
    assert model.unknown_down == [0] and model.drawable() == ([], 0)
    with pytest.raises(IllegalStep):
        model.apply(Step("start", Brokers((1,))))
    model.apply(Step("start", EarlierTarget(0)))
    assert model.unknown_down == [] and model.free == [1, 2, 3]


# --- the fault -------------------------------------------------------------------------------------

TOPICS: dict[str, Mapping[str, object]] = {"topic_names": {"t": "t"}, "topic_partitions": {"t": (0,)}}


class FakeHolder:
    def __init__(self) -> None:
        self.asked: list[tuple[str, int, float]] = []

    @property
    def transactional_ids(self) -> Mapping[str, str]:
        return {"p0": "id-p0", "p1": "id-p1", "copier": "id-copier"}

    def hold_past_timeout(self, role: str, timeout_ms: int, hold_s: float) -> HeldTransaction:
        self.asked.append((role, timeout_ms, hold_s))
        return HeldTransaction(f"id-{role}#3", UNKNOWN, "_FENCED", timeout_ms, int(hold_s * 1000) - 5)


class FakeCluster:
    def __init__(self, settings: Mapping[str, str]) -> None:
        self.settings = settings

    def broker_settings(self) -> Mapping[str, str]:
        return self.settings


class FakeEnv:
    def __init__(self, holder: FakeHolder | None, settings: Mapping[str, str]) -> None:
        self.transactions = holder
        self.cluster = FakeCluster(settings)


def test_the_fault_predicts_nothing_holds_nothing_and_asks_the_workload_to_hold_past_the_abort_check() -> None:
    fault = make_fault("txn_past_timeout", Target((), "p"), {"producer": "p1", "timeout_ms": 4000}, **TOPICS)  # type: ignore[arg-type]
    assert isinstance(fault, TxnPastTimeout)
    assert fault.oracle_events() == [] and fault.holds == () and fault.releases == () and fault.outcome is None
    holder = FakeHolder()
    fault.inject(FakeEnv(holder, {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000"}))  # type: ignore[arg-type]
    assert holder.asked == [("p1", 4000, hold_seconds(4000, 2000))] and hold_seconds(4000, 2000) == 11.0
    assert fault.outcome == {"txn": "id-p1#3", "outcome": UNKNOWN, "error": "_FENCED", "timeout_ms": 4000,
                             "held_ms": 10995}
    default = make_fault("txn_past_timeout", Target((), "p"), {}, **TOPICS)  # type: ignore[arg-type]
    holder = FakeHolder()
    default.inject(FakeEnv(holder, {}))  # type: ignore[arg-type]
    assert holder.asked == [("p0", 5000, 20.0)]  # Kafka's 10 s abort check interval
    with pytest.raises(HarnessError, match="no transactional workload"):
        default.inject(FakeEnv(None, {}))  # type: ignore[arg-type]


@pytest.mark.parametrize("options", [{"producer": "copier"}, {"producer": "p2"}, {"timeout_ms": 500},
                                     {"timeout_ms": "5000"}, {"timeout_ms": True}, {"seconds": 3}])
def test_bad_options_are_one_line(options: Mapping[str, object]) -> None:
    with pytest.raises(UsageError) as err:
        make_fault("txn_past_timeout", Target((), "p"), options, **TOPICS)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


# --- the checker on a held transaction --------------------------------------------------------------

def _held(outcome: str, committing_at: float | None = 30.5, held_ms: int = 20_000) -> Txn:
    return Txn("p", 3, outcome, (TxnSend("in", 0, "h", 7),), error=None if outcome == COMMITTED else "_FENCED",
               began_at=10.0, committing_at=committing_at, ended_at=31.0, timeout_ms=5000, held_ms=held_ms)


def _with(h: Txn, read: TxnRead | None, in_readback: bool) -> tc.TxnHistory:
    readback = tuple(replace(rb, end=9, records=rb.records + (((7, "h"),) if in_readback else ()))
                     if rb.topic == "in" else rb for rb in READBACK)
    return replace(BASE, txns=BASE.txns + (h,), reads=BASE.reads + ((read,) if read else ()), readback=readback)


HELD_CASES = [
    ("refused commit, nothing of it read", _held(UNKNOWN), None, False, set()),
    ("refused commit, read at read_committed: the coordinator aborted it", _held(UNKNOWN), R("rc", "in", 7, "h", 32.0),
     False, {tc.ABORTED_READ}),
    ("refused commit, in the read-back", _held(UNKNOWN), None, True, {tc.ABORTED_READ}),
    ("refused commit, read at read_uncommitted: it was written", _held(UNKNOWN), R("ru", "in", 7, "h", 12.0), False, set()),
    ("held for less than its timeout: an ordinary unknown outcome", _held(UNKNOWN, held_ms=4000),
     R("rc", "in", 7, "h", 32.0), True, set()),
    ("the commit never called: unknown stays unknown", _held(UNKNOWN, committing_at=None), None, True, set()),
    ("told committed and visible", _held(COMMITTED), R("rc", "in", 7, "h", 32.0), True, set()),
    ("told committed, never visible", _held(COMMITTED), None, False, {tc.LOST_WRITE}),
]


@pytest.mark.parametrize(("what", "held", "read", "in_readback", "classes"), HELD_CASES, ids=[c[0] for c in HELD_CASES])
def test_the_checker_judges_a_held_transaction(what: str, held: Txn, read: TxnRead | None, in_readback: bool,
                                               classes: set[str]) -> None:
    h = _with(held, read, in_readback)
    assert tc.fired(tc.check_transactions(h)) == classes
    figures = tc.workload_figures(h).observed["held_past_timeout"]
    assert [f["judged"] for f in figures] == ([] if not held.held_past_timeout else
                                              ["aborted" if held.outcome == UNKNOWN and held.committing_at else held.outcome])


def test_a_held_transaction_keeps_its_timeout_in_the_history_and_older_lists_load() -> None:
    held = _held(UNKNOWN)
    assert Txn.from_list(json.loads(json.dumps(held.to_list()))) == held
    plain = BASE.txns[0]
    assert len(plain.to_list()) == 11 and Txn.from_list(plain.to_list()) == plain

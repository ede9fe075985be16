"""kafka_chaos.scenarios.faults.clocks (clock_jump, clock_drift): options, oracle events, which node's
clock they set (a recording stand-in for the ClockController capability; libfaketime itself is
tested in tests/unit/harness/test_clocks.py and on a real cluster in tests/integration/test_clocks.py),
the generator's legality rule, and the fake-clock cluster a scenario with them asks for."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, capabilities_of
from kafka_chaos.oracle import ClusterState
from kafka_chaos.scenarios.faults import clocks, make_fault
from kafka_chaos.scenarios.faults.base import FaultEnv
from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import Brokers, Controller, EarlierTarget, LeaderOf, NoTarget, Target
from kafka_chaos.scenarios.plans.spec import Scenario

TWO = Target((2,), "broker 2")
NOBODY = Target((), "the ZooKeeper server")
TOPICS: dict[str, Any] = {"topic_names": {}, "topic_partitions": {}}
STATE = ClusterState(frozenset({1, 2, 3}), {})  # prepare reads nothing of it


class RecordingClocks:
    """Has exactly the ClockController members, records the calls."""

    backend = "local"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def set_clock(self, role: str, node_id: int, *, offset_s: float = 0.0, rate: float = 1.0) -> None:
        self.calls.append((role, node_id, offset_s, rate))

    def heal_clocks(self) -> None:
        self.calls.append(("heal_clocks",))


class RecordingKraftClocks(RecordingClocks):
    """Also a KRaft quorum (ControllerQuorumControl) of the given voters."""

    def __init__(self, voters: list[int]) -> None:
        super().__init__()
        self._voters = voters

    @property
    def controller_ids(self) -> list[int]:
        return self._voters

    def kill_controller(self, node_id: int) -> None: ...

    def stop_controller(self, node_id: int) -> None: ...

    def pause_controller(self, node_id: int) -> None: ...

    def resume_controller(self, node_id: int) -> None: ...

    def start_controller(self, node_id: int) -> None: ...

    def controller_running(self, node_id: int) -> bool:
        return True

    def controller_address(self, node_id: int) -> str:
        return ""


def _env(cluster: RecordingClocks) -> FaultEnv:
    return FaultEnv(cluster=cluster, observer=None, admin=None)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The steps' holds, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(clocks.time, "sleep", slept.append)
    return slept


def test_the_step_holds_the_clock_off_at_least_until_it_is_felt(_no_wait: list[float]) -> None:
    cluster = RecordingClocks()
    for options in ({"seconds": 60, "hold_s": 20}, {"seconds": 60}, {"seconds": 60, "hold_s": 0}):
        make_fault("clock_jump", TWO, options, **TOPICS).inject(_env(cluster))
    assert _no_wait == [20.0, clocks.FELT_WITHIN_S, clocks.FELT_WITHIN_S]


@pytest.mark.parametrize(("kind", "target", "options", "label", "call"), [
    ("clock_jump", TWO, {"seconds": 60}, "clock_jump/ahead", ("broker", 2, 60.0, 1.0)),
    ("clock_jump", TWO, {"seconds": -45.5}, "clock_jump/back", ("broker", 2, -45.5, 1.0)),
    ("clock_jump", TWO, {"variant": "heal"}, "clock_jump/heal", ("broker", 2, 0.0, 1.0)),
    ("clock_drift", TWO, {"rate": 1.5}, "clock_drift", ("broker", 2, 0.0, 1.5)),
    ("clock_drift", TWO, {"rate": 0.5}, "clock_drift", ("broker", 2, 0.0, 0.5)),
    ("clock_drift", TWO, {"variant": "heal"}, "clock_drift/heal", ("broker", 2, 0.0, 1.0)),
    ("clock_jump", NOBODY, {"seconds": 60, "zookeeper": 3}, "clock_jump/ahead", ("zookeeper", 3, 60.0, 1.0)),
    ("clock_jump", NOBODY, {"seconds": 60, "zookeeper": "leader"}, "clock_jump/ahead", ("zookeeper", 1, 60.0, 1.0)),
])
def test_which_clock_it_sets_and_to_what(kind: str, target: Target, options: dict[str, Any], label: str,
                                         call: tuple[Any, ...]) -> None:
    """No controller event for any (the module's docstring: Kafka's source), epochs judged
    'never back', the node keeps serving (held by nothing); a lone ZooKeeper server is server 1."""
    fault = make_fault(kind, target, options, **TOPICS)
    cluster = RecordingClocks()
    fault.prepare(_env(cluster), STATE)
    fault.inject(_env(cluster))
    assert fault.label == label and fault.oracle_events() == [] and fault.holds == () and not fault.exact_epochs
    assert fault.requires == {Capability.CLOCK_CONTROL} and Capability.CLOCK_CONTROL in capabilities_of(cluster)
    assert cluster.calls == [call]
    fault.heal(_env(cluster))  # teardown: back on the host's clock
    assert cluster.calls[-1] == (call[0], call[1], 0.0, 1.0)


def test_a_zookeeper_servers_clock_is_zookeeper_modes_only() -> None:
    on_zookeeper = make_fault("clock_jump", NOBODY, {"seconds": 5, "zookeeper": 1}, **TOPICS)
    on_broker = make_fault("clock_jump", TWO, {"seconds": 5}, **TOPICS)
    assert on_zookeeper.modes == {"zookeeper", "migration"}
    assert on_broker.modes == {"zookeeper", "kraft", "migration"}


def test_a_kraft_controllers_clock_only_in_a_single_voter_quorum() -> None:
    """KafkaRaftClient's fetch and check-quorum timers run on the wall clock; a single voter
    never expires (LeaderState.timeUntilCheckQuorumExpires), a voter among three may be deposed."""
    single = RecordingKraftClocks([3000])
    fault = make_fault("clock_jump", Target((3000,), "controller 3000"), {"seconds": 60}, **TOPICS)
    fault.prepare(_env(single), STATE)
    fault.inject(_env(single))
    assert single.calls == [("controller", 3000, 60.0, 1.0)]
    three = RecordingKraftClocks([3000, 3001, 3002])
    with pytest.raises(UsageError, match="3-voter quorum is not modelled"):
        make_fault("clock_jump", Target((3001,), "controller 3001"), {"seconds": 60}, **TOPICS).prepare(
            _env(three), STATE)
    broker = make_fault("clock_jump", TWO, {"seconds": 60}, **TOPICS)
    broker.prepare(_env(three), STATE)
    broker.inject(_env(three))
    assert three.calls == [("broker", 2, 60.0, 1.0)]


@pytest.mark.parametrize(("kind", "options", "message"), [
    ("clock_jump", {}, "give 'seconds' as a number"),
    ("clock_jump", {"seconds": "60"}, "give 'seconds' as a number"),
    ("clock_jump", {"seconds": True}, "give 'seconds' as a number"),
    ("clock_jump", {"seconds": 0}, "non-zero"),
    ("clock_jump", {"seconds": 7200}, "non-zero and within"),
    ("clock_jump", {"seconds": 5, "rate": 2}, "unknown option"),
    ("clock_jump", {"variant": "undo"}, "'variant' must be 'jump' or 'heal'"),
    ("clock_jump", {"seconds": 5, "zookeeper": 0}, "'zookeeper' must be"),
    ("clock_jump", {"seconds": 5, "zookeeper": "follower"}, "'zookeeper' must be"),
    ("clock_drift", {}, "give 'rate' as a number"),
    ("clock_drift", {"rate": 1}, "differ from 1"),
    ("clock_drift", {"rate": 0}, "must lie in"),
    ("clock_drift", {"rate": 11}, "must lie in"),
    ("clock_drift", {"rate": 2, "seconds": 5}, "unknown option"),
    ("clock_jump", {"seconds": 5, "hold_s": -1}, "'hold_s' must be seconds"),
    ("clock_drift", {"rate": 2, "hold_s": "20"}, "'hold_s' must be seconds"),
])
def test_bad_options_are_one_line(kind: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make_fault(kind, TWO, options, **TOPICS)


def test_one_clock_fault_aims_at_one_node() -> None:
    fault = make_fault("clock_jump", Target((1, 2), "brokers 1, 2"), {"seconds": 5}, **TOPICS)
    with pytest.raises(UsageError, match="one node"):
        fault.prepare(_env(RecordingClocks()), STATE)


# --- generator side -------------------------------------------------------------------------------

def _model() -> ClusterModel:
    return ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2, 3)})}, live={1, 2, 3})


JUMP, DRIFT = "clock_jump", "clock_drift"


@pytest.mark.parametrize(("steps", "error"), [
    ([Step(JUMP, Brokers((2,)), {"seconds": 60}), Step(JUMP, Brokers((2,)), {"variant": "heal"})], None),
    ([Step(DRIFT, Brokers((1,)), {"rate": 1.5}), Step(DRIFT, Brokers((1,)), {"variant": "heal"}),
      Step(JUMP, Brokers((3,)), {"seconds": -45})], None),
    # the broker stays free: other faults may hit it meanwhile
    ([Step(JUMP, Brokers((2,)), {"seconds": 60}), Step("hard_kill", Brokers((2,))), Step("start", EarlierTarget(1)),
      Step(JUMP, Brokers((2,)), {"variant": "heal"})], None),
    ([Step(JUMP, Brokers((2,)), {"seconds": 60}), Step(JUMP, Brokers((3,)), {"seconds": 5})], "clock is off"),
    ([Step(JUMP, Brokers((2,)), {"seconds": 60}), Step(DRIFT, Brokers((2,)), {"variant": "heal"})],
     "not off by clock_drift"),
    ([Step(JUMP, Brokers((2,)), {"variant": "heal"})], "not off by clock_jump"),
    ([Step(JUMP, Brokers((1, 2)), {"seconds": 5})], "one named broker"),
    ([Step(JUMP, Controller(), {"seconds": 5})], "one named broker"),
    ([Step(JUMP, NoTarget(), {"seconds": 5, "zookeeper": 1})], "ZooKeeper server is not generated"),
    ([Step("hard_kill", Brokers((2,))), Step(JUMP, Brokers((2,)), {"seconds": 5})], "not live"),
    # explore --mode kraft --seed 7732 on 3.9.2: healed while a power failure held the broker, refused
    ([Step(JUMP, Brokers((2,)), {"seconds": -5}), Step("power_failure", Brokers((2,))),
      Step(JUMP, Brokers((2,)), {"variant": "heal"})], "held by another fault"),
    ([Step(JUMP, Brokers((2,)), {"seconds": -5}), Step("power_failure", Brokers((2,))), Step("start", EarlierTarget(1)),
      Step(JUMP, Brokers((2,)), {"variant": "heal"})], None),
])
def test_generator_legality(steps: list[Step], error: str | None) -> None:
    model = _model()
    *first, last = steps
    for step in first:
        model.apply(step)
    if error is None:
        model.apply(last)
    else:
        with pytest.raises(IllegalStep, match=error):
            model.apply(last)


def test_the_generator_draws_a_heal_while_a_clock_is_off_and_nothing_else_of_its_kind() -> None:
    import random

    from kafka_chaos.scenarios.faults.generation import GENERATORS, Draw

    model, draw = _model(), Draw(random.Random(7), ())
    for kind in (JUMP, DRIFT):
        (step,) = GENERATORS[kind].candidates(model, draw)
        model.apply(step)
        assert GENERATORS[JUMP if kind == DRIFT else DRIFT].candidates(model, draw) == []  # one clock off at a time
        (heal,) = GENERATORS[kind].candidates(model, draw)
        assert heal.options == {"variant": "heal"} and heal.target == step.target
        model.apply(heal)
    assert model.clocks == {}
    # no heal drawn while another fault holds the broker: after its start
    (step,) = GENERATORS[JUMP].candidates(model, draw)
    model.apply(step)
    model.apply(Step("power_failure", step.target))
    assert GENERATORS[JUMP].candidates(model, draw) == []
    model.apply(Step("start", step.target))
    (heal,) = GENERATORS[JUMP].candidates(model, draw)
    assert heal.options == {"variant": "heal"}


def test_a_scenario_with_a_clock_fault_asks_for_fake_clocks_and_only_then() -> None:
    topics = (TopicSpec("t", {0: (1, 2, 3)}),)
    with_clock = Scenario("c", "doc", topics, (Step(JUMP, LeaderOf("t"), {"seconds": 60}),), frozenset())
    without = Scenario("k", "doc", topics, (Step("hard_kill", LeaderOf("t")),), frozenset())
    assert with_clock.needs.fake_clocks and "fake clocks" in with_clock.needs.describe()
    assert not without.needs.fake_clocks and with_clock.needs != without.needs  # never the same cluster

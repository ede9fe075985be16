"""The quorum faults (scenarios.faults.quorum) against a stand-in quorum: which controllers they
touch, and that each waits for a later quorum epoch before it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.faults.base import FaultEnv
from kafka_chaos.scenarios.model.targets import Target


@dataclass
class Quorum:
    running: set[int] = field(default_factory=lambda: {3000, 3001, 3002})
    log: list[str] = field(default_factory=list)
    controller_ids: list[int] = field(default_factory=lambda: [3000, 3001, 3002])
    broker_ids: list[int] = field(default_factory=lambda: [1, 2, 3])

    def kill_controller(self, c: int) -> None:
        if c not in self.running:
            raise HarnessError(f"cannot kill controller-{c}: it is not running")
        self.running.discard(c)
        self.log.append(f"kill {c}")

    def stop_controller(self, c: int) -> None:
        self.kill_controller(c)

    def pause_controller(self, c: int) -> None:
        self.log.append(f"pause {c}")

    def resume_controller(self, c: int) -> None:
        self.log.append(f"resume {c}")

    def start_controller(self, c: int) -> None:
        self.running.add(c)
        self.log.append(f"start {c}")

    def controller_running(self, c: int) -> bool:
        return c in self.running

    def controller_address(self, c: int) -> str:
        return f"127.0.0.1:{9000 + c}"

    def broker_settings(self) -> dict[str, str]:
        return {"broker.session.timeout.ms": "6000"}


@dataclass
class Log:
    """Each snapshot a later quorum epoch: the fault's wait returns at once."""
    epoch: int = 1
    waited: list[str] = field(default_factory=list)

    def snapshot(self, topics: object = None) -> ZkSnapshot:
        return ZkSnapshot(0.0, {1: 1}, 3000, self.epoch, {}, {}, False, mode="kraft")

    def wait_until(self, predicate, *, timeout: float, description: str) -> ZkSnapshot:
        self.epoch += 1
        snap = self.snapshot()
        assert predicate(snap)
        self.waited.append(description)
        return snap


def env(quorum: Quorum, log: Log) -> FaultEnv:
    return FaultEnv(quorum, log, None)  # type: ignore[arg-type]


def fault(kind: str, target: tuple[int, ...] = (3000,), **options: object):
    return make_fault(kind, Target(target, "x"), options, topic_names={}, topic_partitions={})


def legal_schedules(seed: int, count: int, config):  # type: ignore[no-untyped-def]
    """Schedules 0..count-1 of ``seed``, each legal to the generator's own model (problems())."""
    from kafka_chaos.scenarios.plans.generator import generate, problems

    schedules = [generate(seed, i, config) for i in range(count)]
    assert not [(s.name, problems(s)) for s in schedules if problems(s)]
    return schedules


def test_a_quorum_loss_after_a_leader_kill_kills_only_the_running_and_starts_all(monkeypatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)
    quorum, log = Quorum(), Log()
    fault("quorum_leader_kill").inject(env(quorum, log))
    assert quorum.running == {3001, 3002} and log.waited == ["a new quorum leader after quorum_leader_kill"]
    fault("quorum_loss", (), seconds=3.0).inject(env(quorum, log))
    assert quorum.log == ["kill 3000", "kill 3001", "kill 3002", "start 3000", "start 3001", "start 3002"]
    assert quorum.running == {3000, 3001, 3002}


def test_a_leader_pause_resumes_it_once_another_leads() -> None:
    quorum, log = Quorum(), Log()
    fault("quorum_leader_pause", (3001,)).inject(env(quorum, log))
    assert quorum.log == ["pause 3001", "resume 3001"] and len(log.waited) == 1


def test_the_quorum_faults_name_one_leader_and_hold_no_broker() -> None:
    with pytest.raises(Exception, match="targets the one quorum leader"):
        fault("quorum_leader_kill", (3000, 3001)).inject(env(Quorum(), Log()))
    assert fault("quorum_leader_kill").holds == () and fault("quorum_loss", ()).holds == ()


# --- a quorum left without a majority -------------------------------------------------------------

@dataclass
class Clock:
    """time.monotonic and time.sleep of the quorum module: a sleep moves the clock, not the test."""
    now: float = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    import kafka_chaos.scenarios.faults.quorum as quorum_module

    fake = Clock()
    monkeypatch.setattr(quorum_module.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(quorum_module.time, "sleep", fake.sleep)
    return fake


@pytest.mark.parametrize(("voters", "up", "left"), [
    (1, 0, False), (3, 1, False), (3, 2, True), (3, 3, True), (5, 2, False), (5, 3, True),
])
def test_a_majority_is_more_than_half_of_the_voters(voters: int, up: int, left: bool) -> None:
    from kafka_chaos.scenarios.faults.quorum import majority_left

    assert majority_left(voters, up) is left


def test_killing_the_leader_with_no_majority_left_holds_the_outage_then_starts_it_again(clock: Clock) -> None:
    quorum, log = Quorum(running={3000, 3001}), Log()  # 3002 killed by an earlier step
    fault("quorum_leader_kill").inject(env(quorum, log))
    assert quorum.log == ["kill 3000", "start 3000"] and quorum.running == {3000, 3001}
    assert clock.now >= 10.0 and log.waited == ["a new quorum leader after quorum_leader_kill"]


@dataclass
class DynamicQuorum(Quorum):
    """3000 and 3001 removed by controller_remove (still running, as observers): 3002 and 3003 vote."""
    running: set[int] = field(default_factory=lambda: {3000, 3001, 3002, 3003})
    controller_ids: list[int] = field(default_factory=lambda: [3000, 3001, 3002, 3003])
    dynamic_quorum: bool = True

    def voter_sets(self):  # type: ignore[no-untyped-def]
        from kafka_chaos.harness.kraft.dynamic_quorum import Voter, VoterSetSeen

        return {c: VoterSetSeen(7, tuple(Voter(v, f"dir-{v}", ()) for v in (3002, 3003))) for c in self.controller_ids}

    def add_controller(self) -> int:
        raise AssertionError("not here")

    def remove_controller(self, node_id: int) -> None:
        raise AssertionError("not here")

    def controller_directory_id(self, node_id: int) -> str:
        return f"dir-{node_id}"


def test_a_dynamic_quorums_majority_counts_its_voters_not_the_observers_still_running(clock: Clock) -> None:
    """Killing leader 3002 of voters {3002, 3003} leaves no majority, though 3 of the 4 controllers
    started still run: the outage is held and the leader started again (counted over every
    controller, a new leader was waited for that no voter could elect)."""
    from kafka_chaos.harness.kraft.dynamic_quorum import VoterChanges
    from kafka_chaos.scenarios.faults.quorum import counted_voters

    quorum, log = DynamicQuorum(), Log()
    assert isinstance(quorum, VoterChanges) and counted_voters(quorum, 3002) == (3002, 3003)
    assert counted_voters(Quorum(), 3000) == (3000, 3001, 3002)  # a static quorum: every controller
    fault("quorum_leader_kill", (3002,)).inject(env(quorum, log))
    assert quorum.log == ["kill 3002", "start 3002"] and clock.now >= 10.0


def test_pausing_a_lone_voter_resumes_it_after_the_seconds_given(clock: Clock) -> None:
    quorum, log = Quorum(running={3000}, controller_ids=[3000]), Log()
    fault("quorum_leader_pause", seconds=4).inject(env(quorum, log))
    assert quorum.log == ["pause 3000", "resume 3000"] and 4.0 <= clock.now < 5.0 and len(log.waited) == 1


@pytest.mark.parametrize(("others_up", "seconds", "timeout_ms", "fences"), [
    (0, 8.0, 6000, True),  # the lone voter resumes in its epoch: every session ran out
    (0, 6.0, 6000, True),  # at the timeout: stale (BrokerHeartbeatManager.hasValidSession)
    (0, 5.0, 6000, False),  # within it: every session still valid
    (0, 10.0, 18000, False),  # a longer session timeout
    (1, 10.0, 6000, False),  # another voter up stands in later epochs: the new leader starts afresh
    (2, 30.0, 6000, False),
])
def test_only_a_lone_voter_paused_past_the_session_timeout_fences_on_resume(
        others_up: int, seconds: float, timeout_ms: int, fences: bool) -> None:
    from kafka_chaos.scenarios.faults.quorum import lone_pause_fences

    assert lone_pause_fences(others_up, seconds, timeout_ms) is fences


def test_pausing_a_lone_voter_past_the_session_timeout_is_refused_before_anything_happens(clock: Clock) -> None:
    from kafka_chaos.common.errors import UsageError

    quorum, log = Quorum(running={3000}, controller_ids=[3000]), Log()
    with pytest.raises(UsageError, match=r"lone voter 3000 for 8 s.*not modelled yet.*below 6$"):
        fault("quorum_leader_pause", seconds=8).inject(env(quorum, log))
    assert quorum.log == [] and clock.now == 0.0


def test_killing_a_lone_voter_past_the_session_timeout_is_not_refused(clock: Clock) -> None:
    quorum, log = Quorum(running={3000}, controller_ids=[3000]), Log()  # restarted, it rebuilds every session
    fault("quorum_leader_kill", seconds=8).inject(env(quorum, log))
    assert quorum.log == ["kill 3000", "start 3000"]


def test_a_leader_committed_without_a_majority_is_reported_and_the_voter_still_returns(clock: Clock) -> None:
    from kafka_chaos.scenarios.faults.quorum import LeaderWithoutMajority

    class Moving(Log):
        def snapshot(self, topics: object = None) -> ZkSnapshot:
            self.epoch += 1  # every look shows a later epoch committed
            return super().snapshot(topics)

    quorum = Quorum(running={3000, 3001})
    with pytest.raises(LeaderWithoutMajority, match="no majority of voters was up"):
        fault("quorum_leader_kill").inject(env(quorum, Moving()))
    assert quorum.log == ["kill 3000", "start 3000"]


@pytest.mark.parametrize(("options", "error"), [
    ({"seconds": 2}, r"'seconds' must be in \[3, 120\]"),
    ({"seconds": "x"}, "'seconds' must be a number"),
    ({"secs": 5}, "unknown option"),
])
def test_the_outage_option_is_refused_in_one_line(options: dict[str, object], error: str) -> None:
    from kafka_chaos.common.errors import UsageError

    with pytest.raises(UsageError, match=error):
        fault("quorum_leader_pause", **options)


# --- the active controller cut from the other voters (scenarios.faults.quorum_links) -------------

@dataclass
class CuttableQuorum(Quorum):
    cuts: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    healed: int = 0

    def cut_links(self, node_id: int, peers: object) -> None:
        self.cuts.append((node_id, tuple(peers)))  # type: ignore[call-overload]

    def heal_network(self) -> None:
        self.healed += 1


def test_a_leader_cut_drops_its_links_to_the_other_voters_until_a_new_leader_and_the_hold(monkeypatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    quorum, log = CuttableQuorum(), Log()
    cut = fault("quorum_leader_cut", (3001,))
    cut.inject(env(quorum, log))
    assert quorum.cuts == [(3001, (3000, 3002))] and quorum.healed == 0
    assert log.waited == ["a new quorum leader after quorum_leader_cut"]
    assert slept and 0 < slept[-1] <= 7.0  # held until CUT_HOLD_S after the cut
    assert cut.holds == () and cut.oracle_events() == [ControllerFailover()]
    cut.heal(env(quorum, log))  # teardown heals what a step left cut
    assert quorum.healed == 1
    heal = fault("quorum_leader_cut", (3002,), variant="heal")
    slept.clear()
    heal.inject(env(quorum, log))
    assert slept == [7.0]  # measured once the election the return may force is over
    assert quorum.healed == 2 and heal.label == "quorum_leader_cut/heal" and heal.oracle_events() == [ControllerFailover()]


def test_a_leader_cut_is_refused_without_the_capability_or_other_voters() -> None:
    with pytest.raises(Exception, match="quorum_link_partition"):
        fault("quorum_leader_cut").inject(env(Quorum(), Log()))
    with pytest.raises(Exception, match="nobody to cut"):
        fault("quorum_leader_cut").inject(env(CuttableQuorum(controller_ids=[3000]), Log()))
    with pytest.raises(Exception, match="'variant' must be"):
        fault("quorum_leader_cut", variant="voters")


def test_generated_kraft_schedules_heal_each_leader_cut_before_any_other_quorum_fault() -> None:
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig

    config = GeneratorConfig(mode="kraft", faults=("hard_kill", "start", "quorum_leader_kill", "quorum_leader_cut"),
                             steps=8)
    cuts = 0
    for s in legal_schedules(5, 60, config):
        cut = False
        for st in s.steps:
            if st.fault == "quorum_leader_cut":
                assert (st.options.get("variant") == "heal") is cut
                cut, cuts = not cut, cuts + (not cut)
            elif st.fault == "quorum_leader_kill":
                assert not cut
    assert cuts > 10


# --- a broker cut from the controllers (scenarios.faults.quorum_links) ----------------------------

def test_a_broker_cut_drops_its_links_to_every_controller_and_holds_it_until_its_heal() -> None:
    from kafka_chaos.oracle.events import BrokerFailure, BrokerStartup
    from kafka_chaos.scenarios.model.ledger import DETECTED_BY_TIMEOUT, PLAIN

    quorum, log = CuttableQuorum(), Log()
    cut = fault("broker_controller_cut", (2,))
    assert cut.label == "broker_controller_cut/from_controllers" and cut.modes == {"kraft"}
    assert cut.holds == (2,) and cut.releases == () and cut.oracle_events() == [BrokerFailure((2,))]
    assert cut.waits == DETECTED_BY_TIMEOUT and cut.client_windows and cut.exact_epochs and cut.isr_rule is None
    cut.inject(env(quorum, log))
    assert quorum.cuts == [(2, (3000, 3001, 3002))] and quorum.healed == 0 and log.waited == []
    cut.heal(env(quorum, log))  # teardown heals what a step left cut, once
    cut.heal(env(quorum, log))
    assert quorum.healed == 1
    two = fault("broker_controller_cut", (1, 3), variant="from_controllers")
    two.inject(env(quorum, log))
    assert quorum.cuts[1:] == [(1, (3000, 3001, 3002)), (3, (3000, 3001, 3002))]
    assert two.oracle_events() == [BrokerFailure((1, 3))]
    heal = fault("broker_controller_cut", (2,), variant="heal")
    assert heal.label == "broker_controller_cut/heal" and heal.holds == () and heal.releases == (2,)
    assert heal.oracle_events() == [BrokerStartup((2,))] and heal.waits == PLAIN and heal.client_windows
    heal.inject(env(quorum, log))
    assert quorum.healed == 2


@dataclass
class AddressedQuorum(CuttableQuorum):
    """Brokers 1-3 at ports 9091-9093."""

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{9090 + b}" for b in self.broker_ids)

    def endpoint(self, broker_id: int) -> object:
        from kafka_chaos.harness.cluster import BrokerEndpoint

        return BrokerEndpoint(broker_id=broker_id, host="127.0.0.1", port=9090 + broker_id)


def test_admin_requests_avoid_a_broker_cut_from_the_controllers_until_its_heal(monkeypatch) -> None:
    """explore-7711-4 on 3.9.2: ``delete_topic`` timed out through broker 3, cut from the controllers
    (its stale cache named itself controller; its forward could not reach one)."""
    asked: list[str] = []
    monkeypatch.setattr("kafka_chaos.harness.metadata.request_topic_deletion",
                        lambda bootstrap, topic: asked.append(bootstrap) or "answered")
    quorum, log = AddressedQuorum(), Log()
    shared = env(quorum, log)
    every = "127.0.0.1:9091,127.0.0.1:9092,127.0.0.1:9093"
    delete = make_fault("delete_topic", Target((), "d"), {"topic": "d"}, topic_names={"d": "phys-d"},
                        topic_partitions={"d": (0,)})
    assert shared.bootstrap == every
    cut = fault("broker_controller_cut", (3,))
    cut.inject(shared)
    delete.inject(shared)
    assert asked == ["127.0.0.1:9091,127.0.0.1:9092"]
    fault("broker_controller_cut", (3,), variant="heal").inject(shared)
    delete.inject(shared)
    assert asked[-1] == every
    cut.inject(shared)
    cut.heal(shared)  # a teardown's heal too
    assert shared.bootstrap == every


@pytest.mark.parametrize("options, target, message", [
    ({"variant": "from_voters"}, (1,), "'variant' must be 'from_controllers' or 'heal', not 'from_voters'"),
    ({"seconds": 3}, (1,), "unknown option\\(s\\) 'seconds': only 'variant'"),
])
def test_a_broker_cut_refuses_bad_options(options, target, message) -> None:
    with pytest.raises(Exception, match=message):
        fault("broker_controller_cut", target, **options)


def test_a_broker_cut_is_refused_on_a_controller_without_brokers_or_without_the_capability() -> None:
    with pytest.raises(Exception, match=r"\[3001\] are controllers \(quorum_leader_cut cuts a voter"):
        fault("broker_controller_cut", (3001,)).inject(env(CuttableQuorum(), Log()))
    with pytest.raises(Exception, match="needs brokers to cut"):
        fault("broker_controller_cut", ()).inject(env(CuttableQuorum(), Log()))
    with pytest.raises(Exception, match="quorum_link_partition"):
        fault("broker_controller_cut", (1,)).inject(env(Quorum(), Log()))
    quorum = CuttableQuorum()
    with pytest.raises(Exception):
        fault("broker_controller_cut", (1, 3002)).inject(env(quorum, Log()))
    assert quorum.cuts == []  # refused before anything was cut


def test_generated_kraft_schedules_heal_each_broker_cut_and_never_touch_the_cut_broker_meanwhile() -> None:
    from kafka_chaos.scenarios.model.targets import Brokers
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig, default_faults

    assert "broker_controller_cut" not in default_faults("kraft")  # opt-in, as quorum_leader_cut
    config = GeneratorConfig(mode="kraft", faults=("hard_kill", "controlled_shutdown", "start", "reassignment",
                                                   "quorum_leader_kill", "quorum_leader_cut",
                                                   "broker_controller_cut"), steps=10)
    cuts = heals = 0
    for s in legal_schedules(6, 80, config):
        cut: tuple[int, ...] = ()
        leader_cut = False
        for st in s.steps:
            hit = tuple(st.target.broker_ids) if isinstance(st.target, Brokers) else ()
            if st.fault == "broker_controller_cut":
                healing = st.options.get("variant") == "heal"
                assert healing == bool(cut) and not leader_cut
                if healing:
                    assert hit == cut
                    heals += 1
                cut = () if healing else hit
                cuts += not healing
            elif st.fault == "quorum_leader_cut":
                assert not cut
                leader_cut = st.options.get("variant") != "heal"
            else:
                assert not set(hit) & set(cut), (s.name, st)
                assert not any(set(m[1]) & set(cut) for m in st.options.get("moves", ()))
    assert cuts > 10 and heals > 5


def test_the_generator_model_refuses_broker_cuts_it_could_not_follow() -> None:
    from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
    from kafka_chaos.scenarios.model.steps import Step, TopicSpec
    from kafka_chaos.scenarios.model.targets import Brokers, Controller

    def model(mode: str = "kraft") -> ClusterModel:
        return ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2, 3)})}, live={1, 2, 3}, mode=mode, controllers=3)

    cut = Step("broker_controller_cut", Brokers((1,)))
    with pytest.raises(IllegalStep, match="needs a KRaft cluster"):
        model("zookeeper").apply(cut)
    m = model()
    with pytest.raises(IllegalStep, match="not cut from the controllers"):
        m.apply(Step("broker_controller_cut", Brokers((1,)), {"variant": "heal"}))
    m.apply(cut)
    assert m.cut == {1: "controllers"} and m.free == [2, 3]
    for step, message in [
        (Step("broker_controller_cut", Brokers((2,))), "one cut at a time"),
        (Step("hard_kill", Brokers((1,))), "not live, or held"),
        (Step("quorum_leader_cut", Controller()), "while a broker is cut from the controllers"),
        (Step("broker_controller_cut", Brokers((2,)), {"variant": "heal"}), "not cut from the controllers"),
    ]:
        with pytest.raises(IllegalStep, match=message):
            model_copy = model()
            model_copy.apply(cut)
            model_copy.apply(step)
    m.apply(Step("broker_controller_cut", Brokers((1,)), {"variant": "heal"}))
    assert m.cut == {} and m.free == [1, 2, 3]
    with pytest.raises(IllegalStep, match="would leave no live broker"):
        model().apply(Step("broker_controller_cut", Brokers((1, 2, 3))))


# --- a follower voter cut from the other voters (scenarios.faults.voter_links) --------------------

@pytest.mark.parametrize("leader, voters, follower", [
    (3000, [3000, 3001, 3002], 3001), (3001, [3000, 3001, 3002], 3002), (3002, [3002, 3000, 3001], 3000),
    (3004, [3000, 3001, 3002, 3003, 3004], 3000),
])
def test_the_follower_cut_is_the_first_voter_after_the_leader(leader, voters, follower) -> None:
    from kafka_chaos.scenarios.faults.voter_links import cut_follower

    assert cut_follower(leader, voters) == follower


def test_a_follower_cut_drops_its_links_to_the_other_voters_holds_and_changes_nothing(monkeypatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    quorum, log = CuttableQuorum(), Log()
    cut = fault("quorum_follower_cut", (3001,))
    assert cut.label == "quorum_follower_cut/follower_from_voters" and cut.modes == {"kraft"}
    cut.inject(env(quorum, log))
    assert quorum.cuts == [(3002, (3000, 3001))] and quorum.healed == 0
    assert slept == [7.0] and log.waited == []  # held past the fetch timeout; no election awaited
    assert cut.holds == () and cut.oracle_events() == []  # the leader keeps its majority
    cut.heal(env(quorum, log))
    cut.heal(env(quorum, log))
    assert quorum.healed == 1
    heal = fault("quorum_follower_cut", (3000,), variant="heal")
    slept.clear()
    heal.inject(env(quorum, log))
    assert slept == [7.0] and quorum.healed == 2  # measured once the election it forces is over
    assert heal.label == "quorum_follower_cut/heal" and heal.oracle_events() == [ControllerFailover()]


def test_a_follower_cut_needs_three_voters_all_up_and_the_capability() -> None:
    with pytest.raises(Exception, match="quorum_link_partition"):
        fault("quorum_follower_cut").inject(env(Quorum(), Log()))
    with pytest.raises(Exception, match="needs 3 or more"):
        fault("quorum_follower_cut").inject(env(CuttableQuorum(controller_ids=[3000]), Log()))
    quorum = CuttableQuorum(running={3000, 3001})
    with pytest.raises(Exception, match=r"voter\(s\) \[3002\] down"):
        fault("quorum_follower_cut").inject(env(quorum, Log()))
    assert quorum.cuts == []
    with pytest.raises(Exception, match="'variant' must be 'follower_from_voters' or 'heal'"):
        fault("quorum_follower_cut", variant="leader_from_voters")


def test_generated_kraft_schedules_keep_one_voter_cut_at_a_time_and_no_quorum_fault_meanwhile() -> None:
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig, default_faults

    assert "quorum_follower_cut" not in default_faults("kraft")
    config = GeneratorConfig(mode="kraft", faults=("hard_kill", "start", "quorum_leader_kill", "quorum_leader_cut",
                                                   "broker_controller_cut", "quorum_follower_cut"), steps=10)
    cuts = 0
    for s in legal_schedules(8, 80, config):
        held = ""  # the kind whose cut is held
        for st in s.steps:
            healing = st.options.get("variant") == "heal"
            if st.fault in ("quorum_leader_cut", "broker_controller_cut", "quorum_follower_cut"):
                assert (held == st.fault) if healing else not held, (s.name, st)
                held = "" if healing else st.fault
                cuts += st.fault == "quorum_follower_cut" and not healing
            elif st.fault == "quorum_leader_kill":
                assert held not in ("quorum_leader_cut", "quorum_follower_cut")
    assert cuts > 10


def test_no_broker_starts_restarts_or_resumes_while_a_voter_is_cut() -> None:
    """explore --mode kraft --seed 7733 on 3.9.2: broker 1 paused while voter 3000 was cut from the
    other voters; resumed, it asked 3000 (a candidate in ever later epochs, no pre-vote before 4.0),
    took its epoch and never found the leader again: its metadata log stuck, never back in an ISR."""
    from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
    from kafka_chaos.scenarios.model.steps import Step, TopicSpec
    from kafka_chaos.scenarios.model.targets import Brokers, Controller, EarlierTarget
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig

    def model() -> ClusterModel:
        m = ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2, 3)})}, live={1, 2, 3}, mode="kraft",
                         controllers=3)
        m.apply(Step("hard_kill", Brokers((3,))))
        m.apply(Step("quorum_follower_cut", Controller()))
        return m

    for step in (Step("pause", Brokers((1,))), Step("short_pause", Brokers((1,))), Step("restart", Brokers((1,))),
                 Step("start", EarlierTarget(0))):
        with pytest.raises(IllegalStep, match="while a voter is cut"):
            model().apply(step)
    m = model()
    m.apply(Step("quorum_follower_cut", Controller(), {"variant": "heal"}))
    m.apply(Step("start", EarlierTarget(0)))  # once healed
    config = GeneratorConfig(mode="kraft", faults=("hard_kill", "start", "pause", "short_pause", "restart",
                                                   "quorum_leader_cut", "quorum_follower_cut"), steps=10)
    cuts = 0
    for s in legal_schedules(33, 60, config):
        cut = False
        for st in s.steps:
            if st.fault in ("quorum_leader_cut", "quorum_follower_cut"):
                cut = st.options.get("variant") != "heal"
                cuts += cut
            else:
                assert not (cut and st.fault in ("start", "pause", "short_pause", "restart")), (s.name, st)
    assert cuts > 10

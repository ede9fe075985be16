"""broker_peer_cut: a KRaft broker cut from its peer brokers (scenarios.faults.quorum_links), the
KRaft leader-side ISR rule it is judged by (scenarios.model.isr_rules) and its generator side."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import NO_LEADER
from kafka_chaos.scenarios.model import isr_rules
from tests.unit.oracle.test_kraft import kp, kraft, regs
from tests.unit.scenarios.test_quorum_faults import CuttableQuorum, Log, Quorum, env, fault, legal_schedules

# --- the rule: KRaft states go through the controller's AlterPartition ----------------------------

# Three partitions as topic r of broker_peer_cut_kraft: leaders 1, 2, 3, every ISR full.
R = {0: kp((1, 2, 3), 1, (1, 2, 3), 4, 10), 1: kp((2, 3, 1), 2, (2, 3, 1), 4, 10), 2: kp((3, 1, 2), 3, (3, 1, 2), 4, 10)}

SHRINK_ROWS = [
    # (cut, partition -> (leader, ISR, leader epoch, partition epoch)); Partition.maybeShrinkIsr ->
    # AlterPartition, accepted: partition epoch +1, leader epoch unchanged at MV 3.9-IV0
    # cut follower 2: the leaders outside the cut drop it; the partition it leads keeps only it
    ({2}, {0: (1, (1, 3), 4, 11), 1: (2, (2,), 4, 11), 2: (3, (3, 1), 4, 11)}),
    # cut broker 1: leads r-0 (alone now), follows r-1 and r-2
    ({1}, {0: (1, (1,), 4, 11), 1: (2, (2, 3), 4, 11), 2: (3, (3, 2), 4, 11)}),
    # both 1 and 2 cut (from every other broker, each other included): every leader keeps only itself
    ({1, 2}, {0: (1, (1,), 4, 11), 1: (2, (2,), 4, 11), 2: (3, (3,), 4, 11)}),
    # nobody cut: nothing
    (set(), {p: (s.leader, s.isr, 4, 10) for p, s in R.items()}),
]


@pytest.mark.parametrize("cut, expected", SHRINK_ROWS)
def test_the_kraft_shrink_drops_cut_followers_and_a_cut_leader_keeps_only_itself(cut, expected) -> None:
    shrunk = isr_rules.apply_rule(isr_rules.LEADER_ISR_SHRINK, kraft({1, 2, 3}, R), cut)
    assert {p: r[1:5] for p, r in regs(shrunk).items()} == expected


REFUSAL_ROWS = [
    # (partition, active brokers, cut): validateAlterPartitionData / ineligibleReplicasForIsr refuse
    # a leaderless partition: nobody asks
    (kp((1, 2, 3), NO_LEADER, (3,), 4, 10), {1, 2}, {3}),
    # a leader that is not active (fenced): its request is refused
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), {2, 3}, {1}),
    # the ISR would keep a fenced member: refused (no record)
    (kp((1, 2, 3), 1, (1, 2, 3), 4, 10), {1, 2}, {2}),
    # a cut leader already alone: no request
    (kp((1, 2, 3), 1, (1,), 4, 10), {1, 2, 3}, {1}),
]


@pytest.mark.parametrize("p, active, cut", REFUSAL_ROWS)
def test_the_kraft_shrink_writes_nothing_the_controller_would_refuse(p, active, cut) -> None:
    state = kraft(active, {0: p})
    assert regs(isr_rules.apply_rule(isr_rules.LEADER_ISR_SHRINK, state, cut)) == regs(state)


def test_the_expand_after_the_heal_adds_each_follower_in_its_own_request() -> None:
    shrunk = isr_rules.apply_rule(isr_rules.LEADER_ISR_SHRINK, kraft({1, 2, 3}, R), {2})
    back = isr_rules.apply_rule(isr_rules.LEADER_ISR_EXPAND, shrunk, {2})
    assert {p: (r[2], r[3], r[4]) for p, r in regs(back).items()} == {
        0: ((1, 3, 2), 4, 12), 1: ((2, 3, 1), 4, 13), 2: ((3, 1, 2), 4, 12)}


def test_zookeeper_mode_keeps_its_own_shrink() -> None:
    from tests.unit.scenarios.test_network_partitions import FULL

    assert isr_rules.apply_rule(isr_rules.LEADER_ISR_SHRINK, FULL, [2]) == isr_rules.shrink_isr_without(FULL, [2])
    ruled = isr_rules.changed_partitions(FULL, isr_rules.shrink_isr_without(FULL, [2]), ["r"])
    assert ruled and isr_rules.epochs_unexact(isr_rules.LEADER_ISR_SHRINK, FULL, [2], ruled) == tuple(ruled)


def test_only_a_shrink_of_several_followers_has_an_unexact_partition_epoch() -> None:
    # getOutOfSyncReplicas spares a follower at the leader's log end until the next record: seen on
    # 3.9.2 (seed 4801) as "2,3,1 to 2,3" then "2,3 to 2"
    state = kraft({1, 2, 3}, {**R, 3: kp((2, 1), 2, (2, 1), 4, 10)})
    ruled = [("t", 0), ("t", 1), ("t", 2), ("t", 3)]
    assert isr_rules.epochs_unexact(isr_rules.LEADER_ISR_SHRINK, state, {2}, ruled) == (("t", 1),)
    assert isr_rules.epochs_unexact(isr_rules.LEADER_ISR_EXPAND, state, {2}, ruled) == ()
    # two followers cut from a leader outside the cut: the same
    assert isr_rules.epochs_unexact(isr_rules.LEADER_ISR_SHRINK, state, {2, 3}, ruled) == (
        ("t", 0), ("t", 1), ("t", 2))


# --- the fault ------------------------------------------------------------------------------------

def test_a_peer_cut_drops_the_brokers_links_to_every_other_broker_and_holds_it_until_its_heal() -> None:
    from kafka_chaos.scenarios.model.ledger import PLAIN

    quorum, log = CuttableQuorum(), Log()
    cut = fault("broker_peer_cut", (2,))
    assert cut.label == "broker_peer_cut/from_peers" and cut.modes == {"kraft"}
    assert cut.holds == (2,) and cut.releases == () and cut.oracle_events() == []
    assert cut.waits == PLAIN and cut.client_windows and cut.exact_epochs
    assert cut.isr_rule == isr_rules.LEADER_ISR_SHRINK
    cut.inject(env(quorum, log))
    assert quorum.cuts == [(2, (1, 3))] and quorum.healed == 0  # the controllers' links kept
    cut.heal(env(quorum, log))  # teardown heals what a step left cut, once
    cut.heal(env(quorum, log))
    assert quorum.healed == 1
    heal = fault("broker_peer_cut", (2,), variant="heal")
    assert heal.label == "broker_peer_cut/heal" and heal.holds == () and heal.releases == (2,)
    assert heal.oracle_events() == [] and heal.isr_rule == isr_rules.LEADER_ISR_EXPAND and heal.client_windows
    heal.inject(env(quorum, log))
    assert quorum.healed == 2


@pytest.mark.parametrize("options, target, message", [
    ({"variant": "from_controllers"}, (1,), "'variant' must be 'from_peers' or 'heal', not 'from_controllers'"),
    ({"seconds": 3}, (1,), "unknown option\\(s\\) 'seconds': only 'variant'"),
])
def test_a_peer_cut_refuses_bad_options(options, target, message) -> None:
    with pytest.raises(Exception, match=message):
        fault("broker_peer_cut", target, **options)


def test_a_peer_cut_is_refused_on_a_controller_without_brokers_or_without_the_capability() -> None:
    quorum = CuttableQuorum()
    with pytest.raises(Exception, match=r"\[3001\] are not brokers"):
        fault("broker_peer_cut", (3001,)).inject(env(quorum, Log()))
    with pytest.raises(Exception, match="needs brokers to cut"):
        fault("broker_peer_cut", ()).inject(env(quorum, Log()))
    with pytest.raises(Exception, match="quorum_link_partition"):
        fault("broker_peer_cut", (1,)).inject(env(Quorum(), Log()))
    with pytest.raises(Exception, match="one broker"):
        fault("broker_peer_cut", (1,)).inject(env(CuttableQuorum(broker_ids=[1]), Log()))
    assert quorum.cuts == []  # refused before anything was cut


# --- the generator side ---------------------------------------------------------------------------

def test_the_generator_model_allows_only_the_heal_while_a_broker_is_cut_from_its_peers() -> None:
    from kafka_chaos.scenarios.faults.generation import ClusterModel, IllegalStep
    from kafka_chaos.scenarios.model.steps import Step, TopicSpec
    from kafka_chaos.scenarios.model.targets import Brokers, Controller

    def model(mode: str = "kraft") -> ClusterModel:
        return ClusterModel((1, 2, 3), {"t": TopicSpec("t", {0: (1, 2, 3)})}, live={1, 2, 3}, mode=mode, controllers=3)

    cut = Step("broker_peer_cut", Brokers((1,)))
    with pytest.raises(IllegalStep, match="needs a KRaft cluster"):
        model("zookeeper").apply(cut)
    with pytest.raises(IllegalStep, match="not cut from its peers"):
        model().apply(Step("broker_peer_cut", Brokers((1,)), {"variant": "heal"}))
    with pytest.raises(IllegalStep, match="one broker from the others"):
        model().apply(Step("broker_peer_cut", Brokers((1, 2))))
    for step, message in [
        (Step("broker_peer_cut", Brokers((2,))), "only its heal may come next"),
        (Step("hard_kill", Brokers((2,))), "only its heal may come next"),
        (Step("start", Brokers((2,))), "only its heal may come next"),
        (Step("quorum_leader_cut", Controller()), "only its heal may come next"),
        (Step("broker_controller_cut", Brokers((2,))), "only its heal may come next"),
        (Step("broker_peer_cut", Brokers((2,)), {"variant": "heal"}), "not cut from its peers"),
    ]:
        m = model()
        m.apply(cut)
        with pytest.raises(IllegalStep, match=message):
            m.apply(step)
    m = model()
    m.apply(cut)
    assert m.cut == {1: "peers_kraft"} and m.free == [2, 3]
    m.apply(Step("broker_peer_cut", Brokers((1,)), {"variant": "heal"}))
    assert m.cut == {} and m.free == [1, 2, 3]
    # nor while another cut holds (one heal_network undoes every cut)
    other = model()
    other.apply(Step("broker_controller_cut", Brokers((2,))))
    with pytest.raises(IllegalStep, match="one cut at a time"):
        other.apply(cut)


def test_generated_kraft_schedules_heal_each_peer_cut_right_after_it() -> None:
    from kafka_chaos.scenarios.model.targets import Brokers
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig, default_faults

    assert "broker_peer_cut" not in default_faults("kraft")  # opt-in, as broker_controller_cut
    config = GeneratorConfig(mode="kraft", faults=("hard_kill", "controlled_shutdown", "start", "reassignment",
                                                   "broker_controller_cut", "broker_peer_cut"), steps=10)
    cuts = 0
    for s in legal_schedules(48, 60, config):
        steps = list(s.steps)
        for i, st in enumerate(steps):
            if st.fault == "broker_peer_cut" and st.options.get("variant") != "heal":
                cuts += 1
                assert isinstance(st.target, Brokers) and len(st.target.broker_ids) == 1
                if i + 1 < len(steps):
                    nxt = steps[i + 1]
                    assert nxt.fault == "broker_peer_cut" and nxt.options.get("variant") == "heal", (s.name, nxt)
                    assert isinstance(nxt.target, Brokers) and nxt.target.broker_ids == st.target.broker_ids
    assert cuts > 5

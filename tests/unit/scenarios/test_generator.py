"""The schedule generator: legal by construction, the same for a seed everywhere, reaching every
kind, and faithful through the file format; the model refuses what the harness would."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.plans.generator import REPERTOIRE, ClusterModel, GeneratorConfig, IllegalStep, _assignment, generate, problems
from kafka_chaos.scenarios.plans.schedule import Schedule, dumps, schedule_from_json
from kafka_chaos.scenarios.model.targets import Brokers, Controller, EarlierTarget

WITH_NETWORK = GeneratorConfig(faults=REPERTOIRE)
CONFIGS = st.builds(GeneratorConfig, steps=st.integers(1, 12), brokers=st.integers(3, 9),
                    faults=st.just(REPERTOIRE), max_partitions=st.integers(1, 40))


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**31), index=st.integers(0, 10_000), config=CONFIGS)
def test_generated_schedules_are_legal_valid_and_round_trip(seed: int, index: int, config: GeneratorConfig) -> None:
    s = generate(seed, index, config)
    assert problems(s) == []
    s.scenario()  # every step builds its fault
    assert len(s.brokers) == config.brokers and 1 <= len(s.steps) <= config.steps
    for t in s.topics:
        rf = {len(r) for r in t.assignment.values()}
        assert len(rf) == 1 and 1 <= rf.pop() <= 3 and len(t.assignment) <= config.max_partitions
        assert all(len(set(r)) == len(r) and set(r) <= set(s.brokers) for r in t.assignment.values())
    back = schedule_from_json(json.loads(dumps(s)))
    assert back == s and dumps(back) == dumps(s)


def test_the_same_seed_gives_the_same_schedules_and_another_seed_others() -> None:
    assert [dumps(generate(7, i)) for i in range(5)] == [dumps(generate(7, i)) for i in range(5)]
    assert dumps(generate(7, 0)) != dumps(generate(8, 0))
    assert generate(12345, 0).name == "explore-12345-0"


def test_every_kind_is_reachable_and_ids_above_4_and_gaps_are_common() -> None:
    kinds, high, gaps, several = set(), 0, 0, 0
    for i in range(300):
        s = generate(1, i, WITH_NETWORK)
        kinds |= {st.fault for st in s.steps}
        high += max(s.brokers) >= 5
        gaps += s.brokers != tuple(range(s.brokers[0], s.brokers[0] + len(s.brokers)))
        several += any(isinstance(st.target, Brokers) and len(st.target.broker_ids) > 1 for st in s.steps)
    # every kind a ZooKeeper-mode cluster can take; the quorum's faults on a KRaft one, the
    # migration's steps on a migrating one
    assert kinds == set(REPERTOIRE) - {"quorum_leader_kill", "quorum_leader_pause", "quorum_loss", "quorum_leader_cut",
                                       "broker_controller_cut", "quorum_follower_cut", "quorum_leader_power_failure",
                                       "migration_provision", "migration_roll", "migration_finalize",
                                       "migration_deprovision", "kraft_roll", "kraft_finalize",
                                       "txn_past_timeout",  # with the transactional workload only (test_txn_coordinators)
                                       "client_pause", "client_kill",  # with its Java clients only (test_java_clients)
                                       # on a dynamic quorum only, which no generated schedule has
                                       "controller_add", "controller_remove", "removed_voter_restart",
                                       "broker_peer_cut"}
    assert high > 250 and gaps > 250 and several > 30


def test_kraft_schedules_draw_only_what_applies_to_kraft_and_keep_a_quorum_between_steps() -> None:
    from kafka_chaos.scenarios.plans.generator import default_faults

    config = GeneratorConfig(mode="kraft", faults=default_faults("kraft"))
    kinds = set()
    leaderless = 0
    for i in range(300):
        s = generate(7, i, config)
        assert (s.mode, s.controllers) == ("kraft", 3) and s.scenario().needs.mode == "kraft"
        assert not problems(s)
        kinds |= {st.fault for st in s.steps}
        down = 0
        for st in s.steps:  # never two voters of three held down after a step
            if st.fault == "quorum_loss":
                down = 0
            elif st.fault in ("quorum_leader_kill", "quorum_leader_pause") and down == 1:
                leaderless += 1  # no majority left: the step itself brings its voter back
            elif st.fault == "quorum_leader_kill":
                down += 1
            assert down <= 1
    assert {"quorum_leader_kill", "quorum_leader_pause", "quorum_loss", "hard_kill", "controlled_shutdown"} <= kinds
    assert leaderless > 0  # quorum faults without a spare voter are drawn too
    assert not kinds & {"controller_kill", "network_partition", "log_dir_failure"}
    assert "reassignment" in kinds  # AlterPartitionReassignments on KRaft (harness.kraft.admin)
    # a ZooKeeper-mode seed's schedules are what they were: the quorum's kinds are opt-in there
    assert "quorum_loss" not in default_faults()


def test_weights_and_fault_lists_steer_the_draw() -> None:
    only_kills = GeneratorConfig(faults=("hard_kill", "start"), steps=8)
    assert {st.fault for i in range(50) for st in generate(3, i, only_kills).steps} == {"hard_kill", "start"}
    no_admin = GeneratorConfig(weights={"hard_kill": 1, "start": 1})
    assert {st.fault for i in range(50) for st in generate(3, i, no_admin).steps} <= {"hard_kill", "start"}


def test_assignment_is_kafkas_round_robin() -> None:
    import random

    a = _assignment(random.Random(0), [4, 5, 9], 6, 2)
    assert len({r[0] for r in a.values()}) == 3  # leaders spread over every broker
    assert all(len(set(r)) == 2 for r in a.values())
    assert len(set(a.values())) > 3  # followers shift between rounds


def _model(*brokers: int) -> ClusterModel:
    from kafka_chaos.scenarios.model.steps import TopicSpec

    return ClusterModel(tuple(brokers), {"t": TopicSpec("t", {0: brokers[:2]})}, live=set(brokers))


@pytest.mark.parametrize("steps, message", [
    ([Step("start", Brokers((1,)))], "not stopped"),
    ([Step("hard_kill", Brokers((1, 2, 3)))], "would leave no live broker"),
    ([Step("hard_kill", Brokers((1,))), Step("hard_kill", Brokers((1,)))], "not live"),
    ([Step("network_partition", Brokers((1,)), {"variant": "zookeeper"}), Step("restart", Brokers((1,)))],
     "held by another fault"),
    ([Step("network_partition", Brokers((1,)), {"variant": "heal", "cut": "zookeeper"})], "not cut that way"),
    ([Step("start", EarlierTarget(0))], "names no earlier step"),
    ([Step("controller_kill", Controller()), Step("start", EarlierTarget(0)), Step("start", EarlierTarget(0))],
     "not down"),
    ([Step("hard_kill", Brokers((2,))), Step("reassignment", options={"topic": "t", "moves": [[0, [2, 3]]]})],
     "onto brokers that may be down"),
    ([Step("preferred_election", options={"topic": "t", "partitions": [5]})], "no such partition"),
    # a cancellation (KAFKA-13972's corpus entry: moves [[0, null]]) was a TypeError here
    ([Step("reassignment", options={"topic": "t", "moves": [[0, None]], "via": "admin"})], "none is ever pending"),
])
def test_the_model_refuses_what_the_harness_would(steps, message) -> None:
    model = _model(1, 2, 3)
    with pytest.raises(IllegalStep, match=message):
        for step in steps:
            model.apply(step)


def test_a_controller_kill_is_started_again_through_its_step() -> None:
    model = _model(1, 2, 3)
    model.apply(Step("controller_kill", Controller()))
    assert model.unknown_down == [0] and model.spare == 1
    model.apply(Step("start", EarlierTarget(0)))
    assert model.unknown_down == [] and model.spare == 2


# Opt-in kinds registered after the digest below was taken: a schedule that names none of them is
# what it was (a kind registered later is walked after the others).
ADDED_SINCE_THE_DIGEST = ("topic_config", "broker_config", "recreate_topic", "zookeeper_server",
                          "zookeeper_quorum_loss", "quorum_leader_cut", "broker_controller_cut", "delete_records",
                          "quorum_follower_cut", "clock_jump", "clock_drift", "power_failure", "controller_power_failure",
                          "quorum_leader_power_failure", "disk_stall", "disk_error")


def test_a_pinned_schedule_is_generated_byte_for_byte() -> None:
    """The same seed makes the same schedule on every machine (``random.Random`` seeded with a
    string hashes it with SHA-512); a generator change that alters old seeds must say so here."""
    from pathlib import Path

    golden = Path(__file__).parent / "data" / "explore-12345-0.json"
    # The repertoire when the file was pinned (kinds added since are drawn only when named).
    pinned = tuple(k for k in REPERTOIRE if k not in ("log_dir_failure", "network_delay", *ADDED_SINCE_THE_DIGEST))
    assert dumps(generate(12345, 0, GeneratorConfig(faults=pinned, steps=8))) == golden.read_text()


def test_no_named_broker_while_a_killed_controllers_id_is_unknown() -> None:
    """Found by `kafka-chaos explore --seed 2026`: after a controller kill the generator named
    broker 6 for a controlled shutdown — the killed controller — and the nemesis refused."""
    model = _model(1, 2, 3)
    model.apply(Step("controller_kill", Controller()))
    with pytest.raises(IllegalStep, match="killed controller's id is unknown"):
        model.apply(Step("controlled_shutdown", Brokers((2,))))
    model.apply(Step("preferred_election", options={"topic": "t"}))
    model.apply(Step("start", EarlierTarget(0)))
    model.apply(Step("controlled_shutdown", Brokers((2,))))


def test_a_failed_log_directory_holds_its_broker_until_healed() -> None:
    s = Schedule("x", (1, 2, 3), (TopicSpec("t", {0: (1, 2)}),), ())
    model = ClusterModel.of(s)
    model.apply(Step("log_dir_failure", Brokers((2,)), {"dir": 0}))
    assert model.free == [1, 3] and model.live == {1, 2, 3}
    with pytest.raises(IllegalStep):
        model.apply(Step("hard_kill", Brokers((2,))))  # held
    with pytest.raises(IllegalStep):
        model.apply(Step("log_dir_failure", Brokers((3,)), {"variant": "heal"}))  # nothing failed there
    model.apply(Step("log_dir_failure", Brokers((2,)), {"variant": "heal"}))
    assert model.free == [1, 2, 3]


def test_log_dir_failure_schedules_get_two_log_dirs_and_heal_what_they_fail() -> None:
    config = GeneratorConfig(faults=("log_dir_failure", "hard_kill", "start"), steps=8)
    seen = 0
    for i in range(40):
        s = generate(7, i, config)
        assert problems(s) == [] and s.log_dirs == 2
        assert s.needs.overrides_dict == {"replica.high.watermark.checkpoint.interval.ms": "1000"}
        seen += sum(st.fault == "log_dir_failure" for st in s.steps)
    assert seen > 20
    assert generate(7, 0).log_dirs == 1  # not drawn unless named


def test_delayed_links_stay_below_every_threshold_one_at_a_time_and_never_with_a_cut() -> None:
    s = Schedule("x", (1, 2, 3), (TopicSpec("t", {0: (1, 2)}),), ())
    model = ClusterModel.of(s)
    delay = {"to": "peers", "delay_ms": 200, "jitter_ms": 50, "expect": "nothing"}
    model.apply(Step("network_delay", Brokers((2,)), delay))
    assert model.delayed == {2: "peers"} and model.free == [1, 2, 3]  # not held: it may be killed
    with pytest.raises(IllegalStep, match="delayed or cut"):
        model.apply(Step("network_delay", Brokers((3,)), delay))
    with pytest.raises(IllegalStep, match="delayed"):  # heal_network would heal the delay too
        model.apply(Step("network_partition", Brokers((3,)), {"variant": "zookeeper"}))
    with pytest.raises(IllegalStep, match="no delayed links"):
        model.apply(Step("network_delay", Brokers((3,)), {"variant": "heal"}))
    model.apply(Step("hard_kill", Brokers((2,))))
    model.apply(Step("network_delay", Brokers((2,)), {"variant": "heal"}))
    assert model.delayed == {}
    with pytest.raises(IllegalStep, match="below every threshold"):
        model.apply(Step("network_delay", Brokers((1,)), {**delay, "expect": "isr_shrink"}))


def test_network_delay_is_drawn_only_when_named_and_then_with_link_proxies() -> None:
    from kafka_chaos.scenarios.plans.generator import DELAY_LINKS

    assert all("network_delay" not in {st.fault for st in generate(5, i).steps} for i in range(30))
    named = GeneratorConfig(faults=("hard_kill", "start", "network_delay"), steps=8)
    schedules = [generate(5, i, named) for i in range(40)]
    assert all(s.link_proxies and problems(s) == [] for s in schedules)
    delays = [st for s in schedules for st in s.steps if st.fault == "network_delay"]
    assert {st.options.get("to") for st in delays if st.options.get("variant") != "heal"} == set(DELAY_LINKS)
    assert any(st.options.get("variant") == "heal" for st in delays)
    zk_only = GeneratorConfig(faults=("hard_kill", "start", "network_delay"), steps=8, delay_links=("zookeeper",))
    assert {st.options.get("to") for i in range(40) for st in generate(5, i, zk_only).steps
            if st.fault == "network_delay" and st.options.get("variant") != "heal"} == {"zookeeper"}


def test_every_generatable_kind_is_a_registered_fault_drawn_in_a_fixed_order() -> None:
    """A kind's generator side sits beside its fault class (scenarios.faults.generation); the
    draw walks them in registration order, which every seed's schedules depend on."""
    from kafka_chaos.scenarios.faults import FAULTS, GENERATORS

    assert set(GENERATORS) <= set(FAULTS)
    assert REPERTOIRE == tuple(GENERATORS) == (
        "hard_kill", "controller_kill", "controlled_shutdown", "pause", "short_pause", "restart", "start",
        "reassignment", "preferred_election", "unclean_election", "network_partition", "delete_topic",
        "add_partitions", "recreate_topic", "zookeeper_server", "zookeeper_quorum_loss", "log_dir_failure", "network_delay", "quorum_leader_kill", "quorum_leader_pause", "quorum_loss",
        "migration_provision", "migration_roll", "migration_finalize", "migration_deprovision",
        "topic_config", "broker_config", "quorum_leader_cut", "broker_controller_cut", "delete_records",
        "quorum_follower_cut", "clock_jump", "clock_drift", "txn_past_timeout", "power_failure",
        "controller_power_failure", "quorum_leader_power_failure", "disk_stall", "disk_error", "client_pause",
        "client_kill", "kraft_roll", "kraft_finalize", "controller_add", "controller_remove", "removed_voter_restart",
        "broker_peer_cut")
    assert [k for k, side in GENERATORS.items() if side.shapes_cluster] == [
        "zookeeper_server", "zookeeper_quorum_loss", "log_dir_failure", "network_delay", "power_failure",
        "controller_power_failure", "quorum_leader_power_failure", "disk_stall", "disk_error"]


def test_a_seeds_schedules_stay_what_they_were() -> None:
    """The same schedules on every machine and across refactors: a digest of seed 2026's first
    ten schedules, default and full repertoire (taken before the generator sides moved beside
    the fault classes)."""
    import hashlib

    from kafka_chaos.scenarios.plans.schedule import dumps

    digest = hashlib.sha256()
    repertoire = tuple(k for k in REPERTOIRE if k not in ADDED_SINCE_THE_DIGEST)  # drawn only when named
    for config in (GeneratorConfig(), GeneratorConfig(faults=repertoire)):
        for index in range(10):
            digest.update(dumps(generate(2026, index, config)).encode())
    assert digest.hexdigest() == "d2a02d711f261ffb5342139c5fcb3cec90e0d9d664eec8866a0078f755b4423f"


def test_zookeeper_server_faults_run_on_an_ensemble_of_three_and_keep_its_quorum() -> None:
    """The ZooKeeper leader (or a follower) killed or paused and restored, and the quorum lost and
    back, drawn when named: the schedule asks for 3 servers, and never takes a second one down."""
    config = GeneratorConfig(faults=("hard_kill", "start", "zookeeper_server", "zookeeper_quorum_loss"), steps=8)
    kinds: set[str] = set()
    for i in range(100):
        s = generate(11, i, config)
        assert problems(s) == [] and s.zookeepers == 3
        down = False
        for st in s.steps:
            kinds.add(st.fault if st.fault != "zookeeper_server" else f"zookeeper_server/{st.options['action']}")
            if st.fault == "zookeeper_server":
                assert (st.options["action"] == "restore") is down
                down = st.options["action"] != "restore"
            elif st.fault == "zookeeper_quorum_loss":
                assert not down
    assert {"zookeeper_server/kill", "zookeeper_server/pause", "zookeeper_server/restore",
            "zookeeper_quorum_loss"} <= kinds
    assert generate(11, 0, GeneratorConfig(faults=("hard_kill", "start"))).zookeepers == 1
    model = ClusterModel.of(generate(11, 0, config))
    model.apply(Step("zookeeper_server", options={"action": "kill", "role": "leader"}))
    with pytest.raises(IllegalStep, match="lose the quorum"):
        model.apply(Step("zookeeper_quorum_loss"))

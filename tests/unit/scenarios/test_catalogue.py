"""Catalogue sanity: every scenario documented, in conformance, on explicit multi-partition topics."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.errors import UsageError
from kafka_chaos.scenarios.plans import catalogue
from kafka_chaos.scenarios.plans.catalogue import CONFORMANCE, SMOKE, all_scenarios, by_names, select, suite
from kafka_chaos.scenarios.plans.transactional import leave_out_for_client, transactional_topics

REQUIRED = {
    "leader_hard_kill", "follower_hard_kill", "controller_kill", "controlled_shutdown_leader",
    "controlled_shutdown_follower", "controlled_shutdown_only_isr", "rf1_broker_loss", "rolling_restart",
    "restart_after_kill", "preferred_election_after_restart", "auto_leader_rebalance",
    "unclean_off_non_isr_first", "unclean_config_non_isr_first", "reassign_leader_off",
    "expand_replication_factor", "reorder_then_preferred", "move_123_to_456", "session_expiry_pause",
    "cascading_failures_recovery",
}


def test_issue_catalogue_is_covered() -> None:
    assert REQUIRED <= {s.name for s in all_scenarios()}


@pytest.mark.parametrize("s", [s for s in all_scenarios() if s.suites != {"corpus"}], ids=lambda s: s.name)
def test_every_scenario_is_documented_and_in_conformance(s) -> None:
    """(The known-bug corpus's schedule files have their own rules: tests/unit/scenarios/test_corpus.py.)"""
    assert len(s.doc) > 60
    assert any(word in s.doc.lower() for word in ("seed", "kafka 3.9", "docs")), s.doc
    # Ensemble and degraded-link scenarios have suites of their own (docs/zookeeper-faults.md,
    # docs/local-network.md); every other one is in conformance.
    assert CONFORMANCE in s.suites or s.suites in ({"zookeeper"}, {"network"}, {"releases"}, {"upgrade"}, {"kraft"},
                                                   {"migration"}, {"journey"}, {"durability"}, {"transactions"}), s.suites
    # Exactly the transactions suite opts into the transactional workload (txn_in, txn_out).
    assert (transactional_topics(s.topics) is not None) == (s.suites == {"transactions"})
    # Exactly the durability suite needs the crash-consistency layer (docs/durability.md).
    assert (s.needs.filesystem == "lazyfs") == (s.suites == {"durability"})
    # Exactly the kraft suite runs on KRaft clusters, and each of its faults applies there; exactly
    # the migration suite migrates its cluster.
    assert (s.needs.mode == "kraft") == (s.suites == {"kraft"})
    assert (s.needs.mode == "migration") == (s.suites in ({"migration"}, {"journey"}))
    assert s.needs.mode in s.modes
    # Only the releases and upgrade suites pin a release: the others run on the run's release.
    assert (s.needs.kafka_version is not None) == (s.suites in ({"releases"}, {"upgrade"}))
    assert s.steps
    for topic in s.topics:
        assert len(topic.assignment) >= 3, "several partitions: leaders, followers, non-replicas all hit"
        assert len({len(r) for r in topic.assignment.values()}) == 1, "Kafka wants one replication factor"
        brokers = {b for r in topic.assignment.values() for b in r}
        assert brokers <= set(range(1, s.needs.brokers + 1))


def test_fault_kinds_and_options_are_known() -> None:
    from kafka_chaos.scenarios.faults import fault_kinds, make_fault
    from kafka_chaos.scenarios.model.targets import Target

    from_kinds = set(fault_kinds())
    for s in all_scenarios():
        for step in s.steps:
            assert step.fault in from_kinds, (s.name, step.fault)
            if "topic" in step.options:
                s.topic(step.options["topic"])  # a logical topic of the scenario
            # every step's options build a fault (a misspelt variant fails here, not mid-run)
            make_fault(step.fault, Target((1,), "broker 1"), step.options,
                       topic_names={t.name: t.name for t in s.topics},
                       topic_partitions={t.name: t.partitions for t in s.topics})


PARTITION_SCENARIOS = {"leader_cut_from_zookeeper", "follower_cut_from_leader", "controller_cut_from_zookeeper",
                       "broker_isolated_from_everyone"}


def test_network_partition_scenarios_exist_are_documented_and_heal_what_they_cut() -> None:
    chosen = {s.name: s for s in all_scenarios()
              if any(st.fault == "network_partition" for st in s.steps) and s.needs.kafka_version is None}
    assert all(Capability.NETWORK_PARTITION in s.requirements for s in chosen.values())
    assert set(chosen) == PARTITION_SCENARIOS
    for s in chosen.values():
        assert "heal" in s.doc.lower() and "kafka 3.9" in s.doc.lower()
        cuts = [st.options["variant"] for st in s.steps if st.options.get("variant") != "heal"]
        heals = [st.options["cut"] for st in s.steps if st.options.get("variant") == "heal"]
        assert cuts == heals, f"{s.name}: every cut is healed by a later step naming it"
    # the peer cut needs a short replica.lag.time.max.ms; the cut from everyone must not have one
    # (a leader-side shrink racing the session expiry would make the epoch nondeterministic)
    lag = catalogue.REPLICA_LAG_TIME_MAX_MS
    assert int(chosen["follower_cut_from_leader"].needs.overrides_dict[lag]) <= 5000
    assert lag not in chosen["broker_isolated_from_everyone"].needs.overrides_dict


def test_partition_scenarios_leave_suites_on_backends_that_cannot_cut() -> None:
    everything = select(None)
    assert PARTITION_SCENARIOS <= {s.name for s in everything.scenarios} and not everything.left_out
    cannot_cut = {Capability.NETWORK_PARTITION: "needs --backend containers"}
    local = select(None, missing=cannot_cut)
    assert {s.name for s in local.scenarios} == {s.name for s in everything.scenarios} - PARTITION_SCENARIOS
    assert {s.name for s, _ in local.left_out} == PARTITION_SCENARIOS
    [line] = local.left_out_lines()
    assert line.startswith("leaving out 4 scenario(s) (") and line.endswith("): needs --backend containers")
    # named explicitly they stay: the runner then records why it could not run them
    assert [s.name for s in select(None, ["follower_cut_from_leader"], missing=cannot_cut).scenarios] == [
        "follower_cut_from_leader"]


def test_a_capability_nobody_lacks_leaves_nothing_out() -> None:
    assert not select(None, missing={Capability.ZOOKEEPER_CONTROL: "no"}).left_out


def test_requirements_are_the_union_of_the_steps_faults() -> None:
    kill = by_names(["leader_hard_kill"])[0]
    assert kill.requirements == {Capability.BROKER_CONTROL}
    cut = by_names(["leader_cut_from_zookeeper"])[0]
    assert cut.requirements == {Capability.NETWORK_PARTITION}
    reassign = by_names(["reassign_leader_off"])[0]
    assert reassign.requirements == frozenset()


def test_suites() -> None:
    smoke = suite(SMOKE)
    assert 3 <= len(smoke) <= 6
    own = {s.name for name in ("zookeeper", "network", "releases", "upgrade", "kraft", "migration", "journey", "durability",
                               "transactions", "corpus")
           for s in suite(name)}
    kraft = {s.name for s in suite("kraft")}
    assert {"quorum_leader_kill", "quorum_leader_pause", "quorum_loss_brokers_carry_on"} <= kraft
    # every mirrored scenario is a conformance scenario, named <name>_kraft (broker_peer_cut_kraft: KRaft's own)
    assert "broker_peer_cut_kraft" in kraft
    mirrored = {n.removesuffix("_kraft") for n in kraft if n.endswith("_kraft") and n != "broker_peer_cut_kraft"}
    assert mirrored - {"auto_leader_rebalance"} <= {s.name for s in suite(CONFORMANCE)} and len(mirrored) == 18
    assert {s.name: s.needs.kafka_version for s in suite("upgrade")} == {"upgrade_2_8_to_3_9": "2.8.2",
                                                                         "upgrade_3_4_to_3_9": "3.4.1"}
    assert len(suite("zookeeper")) == 6 and len(suite("network")) == 7
    migration = {s.name: [step.fault for step in s.steps] for s in suite("migration")}
    assert len(migration) == 5 and all(steps[0] == "migration_provision" for steps in migration.values())
    durability = {s.name: [step.fault for step in s.steps] for s in suite("durability")}
    assert len(durability) == 11 and {steps[0] for steps in durability.values()} == {
        "power_failure", "controller_power_failure", "disk_stall", "disk_error", "clock_jump"}
    transactions = {s.name: [step.fault for step in s.steps] for s in suite("transactions")}
    assert len(transactions) == 6 and {steps[0] for steps in transactions.values()} == {
        "hard_kill", "pause", "controlled_shutdown", "txn_past_timeout", "client_pause"}
    assert {s.name: s.needs.kafka_version for s in suite("releases")} == {
        "zookeeper_cut_follower_rejoins_isr_on_2_5_1": "2.5.1",
        "unclean_election_recovery_state_on_3_1_2": "3.1.2", "unclean_election_recovery_state_on_3_2_3": "3.2.3"}
    assert {s.name for s in suite(CONFORMANCE)} == {s.name for s in all_scenarios()} - own
    with pytest.raises(UsageError, match="valid suites"):
        suite("nightly")


def test_unknown_scenario_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError) as info:
        by_names(["leader_hard_kill", "no_such"])
    message = str(info.value)
    assert "no_such" in message and "leader_hard_kill" in message and "\n" not in message


def test_select_groups_by_cluster_needs_keeping_order() -> None:
    chosen = select(None).scenarios
    needs = [s.needs for s in chosen]
    seen = []
    for n in needs:
        if not seen or seen[-1] != n:
            assert n not in seen, "each cluster shape appears in one block"
            seen.append(n)
    assert [s.name for s in select(None, ["rolling_restart", "leader_hard_kill"]).scenarios] == ["rolling_restart",
                                                                                     "leader_hard_kill"]


def test_special_needs_are_declared() -> None:
    assert by_names(["move_123_to_456"])[0].needs.brokers == 6
    overrides = by_names(["auto_leader_rebalance"])[0].needs.overrides_dict
    assert overrides[catalogue.AUTO_LEADER_REBALANCE_ENABLE] == "true"
    assert int(overrides[catalogue.LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS]) <= 10
    assert catalogue.with_brokers(by_names(["leader_hard_kill"])[0], 5).needs.brokers == 5
    assert catalogue.with_brokers(by_names(["move_123_to_456"])[0], 4).needs.brokers == 6


def test_transactions_suite_runs_on_either_client_leaving_out_what_needs_the_other() -> None:
    """Unpinned (mode and client); a fault acting on one implementation's clients is left out on
    the other with the reason, and nothing else is."""
    chosen = suite("transactions")
    assert catalogue.SUITES["transactions"].mode is None
    assert all(s.txn_client == "librdkafka" and {"zookeeper", "kraft"} <= s.modes for s in chosen)
    for client, needing_other, fault in ((None, "copier_pause", "client_pause"),
                                         ("librdkafka", "copier_pause", "client_pause"),
                                         ("java", "producer_past_transaction_timeout", "txn_past_timeout")):
        kept, left = leave_out_for_client(chosen, client)
        assert [s.name for s, _ in left] == [needing_other]
        assert {s.name for s in kept} == {s.name for s in chosen} - {needing_other}
        [(_, why)] = left
        assert why.startswith(f"{fault} needs the ") and (client or "librdkafka") in why
    # Scenarios without a one-client fault are never left out (the other suites).
    assert not leave_out_for_client(suite(CONFORMANCE), "java")[1]
    with pytest.raises(UsageError, match="--txn-client"):
        leave_out_for_client(chosen, "kafka-python")


@pytest.mark.parametrize("s", suite("transactions"), ids=lambda s: s.name)
def test_transactions_scenarios_cite_a_coordinator_rule_and_aim_at_the_workload(s) -> None:
    assert "kafka 3.9" in s.doc.lower()
    assert any(rule in s.doc for rule in ("TransactionCoordinator", "TransactionStateManager", "GroupCoordinator",
                                          "UnifiedLog"))
    txn_in, txn_out = transactional_topics(s.topics)
    assert (txn_in.name, txn_out.name) == ("txn_in", "txn_out") and txn_in.assignment == txn_out.assignment
    assert "unclean.leader.election.enable" not in txn_in.config
    # Every broker it stops it starts again (a pause heals itself): the read-back sees the whole cluster.
    stopped = [i for i, step in enumerate(s.steps) if step.fault in ("hard_kill", "controlled_shutdown")]
    started = [step.target.step for step in s.steps if step.fault == "start"]
    assert started == stopped


@pytest.mark.parametrize(("name", "target", "seconds", "kraft"), [
    ("leader_clock_jump_ahead", "LeaderOf(topic='t', partition=0)", 3600.0, True),
    ("leader_clock_jump_back", "LeaderOf(topic='t', partition=0)", -3600.0, True),
    ("controller_clock_jump_ahead", "Controller()", 3600.0, True),
    ("controller_power_failure", None, None, False),
    ("leader_log_write_error", None, None, True),  # disk_error: a failed log directory, KRaft too (KIP-858)
    ("follower_checkpoint_disk_full", None, None, True),
])
def test_durability_clock_jumps(name: str, target: str | None, seconds: float | None, kraft: bool) -> None:
    """The durability suite's clock jumps: an hour each way on t-0's leader and ahead on the
    controller, each held 20 s and healed, on fake clocks and the crash-consistency layer; they
    run on KRaft too (the controller's: the active controller), unlike the ZooKeeper-mode faults."""
    s = by_names([name])[0]
    assert ("kraft" in s.modes) == kraft
    if target is None:
        return
    jump, heal = s.steps
    assert (jump.fault, repr(jump.target), dict(jump.options)) == ("clock_jump", target,
                                                                     {"seconds": seconds, "hold_s": 20})
    assert (heal.fault, heal.target.step, dict(heal.options)) == ("clock_jump", 0, {"variant": "heal", "hold_s": 20})
    assert s.needs.fake_clocks and s.needs.filesystem == "lazyfs" and s.suites == {"durability"}

"""Checks are pure functions of recorded data: histories that must pass and ones that must fail."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from kafka_chaos.scenarios.checks.functions import (
    CheckResult,
    all_passed,
    check_converged,
    check_delivery,
    check_epoch,
    check_metadata_agrees,
    check_outcome,
    check_safe,
    check_single_controller,
    compare_partitions,
    observed_class,
    predicted_class,
)
from kafka_chaos.scenarios.clients.delivery import Ack, validate_delivery


def ps(replicas, leader, isr, epoch):
    return NS(replicas=tuple(replicas), leader=leader, isr=tuple(isr), leader_epoch=epoch)


def outcome(topic, partition, value, index=0):
    return NS(event_index=index, topic=topic, partition=partition, outcome=NS(value=value))


# A recorded leader hard kill: t-0 [1,2,3] led by 1; broker 1 killed; t-1 led by 2 lost follower 1.
BEFORE = {("t", 0): ps((1, 2, 3), 1, (1, 2, 3), 4), ("t", 1): ps((2, 1), 2, (2, 1), 0)}
PREDICTED = {("t", 0): ps((1, 2, 3), 2, (2, 3), 5), ("t", 1): ps((2, 1), 2, (2,), 1)}
OUTCOMES = [outcome("t", 0, "elected"), outcome("t", 1, "unchanged")]


def test_a_faithful_history_passes() -> None:
    observed = {("t", 0): ps((1, 2, 3), 2, (3, 2), 5), ("t", 1): ps((2, 1), 2, (2,), 1)}
    results = compare_partitions(BEFORE, PREDICTED, observed, OUTCOMES, exact_epochs=True)
    assert all_passed(results), [r.detail for r in results if r.passed is not True]
    assert {r.check for r in results} == {"oracle_leader", "oracle_isr", "oracle_replicas", "oracle_epoch",
                                          "oracle_outcome"}


def test_wrong_leader_fails_with_a_readable_diff() -> None:
    observed = {("t", 0): ps((1, 2, 3), 3, (2, 3), 5), ("t", 1): ps((2, 1), 2, (2,), 1)}
    results = compare_partitions(BEFORE, PREDICTED, observed, OUTCOMES, exact_epochs=True)
    failed = [r for r in results if r.passed is False]
    assert [r.check for r in failed] == ["oracle_leader"]
    assert failed[0].detail == "t-0: leader expected 2, observed 3"
    assert (failed[0].topic, failed[0].partition) == ("t", 0)


def test_isr_compared_as_a_set_and_diff_names_missing_members() -> None:
    observed = {("t", 0): ps((1, 2, 3), 2, (2,), 5), ("t", 1): ps((2, 1), 2, (2,), 1)}
    failed = [r for r in compare_partitions(BEFORE, PREDICTED, observed, OUTCOMES, exact_epochs=True)
              if r.passed is False]
    assert [r.check for r in failed] == ["oracle_isr"]
    assert "missing [3]" in failed[0].detail


def test_replicas_compared_in_order() -> None:
    observed = {("t", 0): ps((2, 1, 3), 2, (2, 3), 5), ("t", 1): ps((2, 1), 2, (2,), 1)}
    failed = [r for r in compare_partitions(BEFORE, PREDICTED, observed, OUTCOMES, exact_epochs=True)
              if r.passed is False]
    assert [r.check for r in failed] == ["oracle_replicas"]


def test_missing_partition_fails() -> None:
    results = compare_partitions(BEFORE, PREDICTED, {("t", 1): PREDICTED[("t", 1)]}, OUTCOMES, exact_epochs=True)
    assert any(r.passed is False and r.check == "oracle_partition" for r in results)


@pytest.mark.parametrize(
    ("before", "predicted", "observed", "exact", "passed"),
    [
        (4, 5, 5, True, True),
        (4, 5, 6, True, False),   # exact: one write too many
        (4, 6, 5, False, True),   # increased is enough when writes are not all modelled
        (4, 6, 4, False, False),  # an election happened but the epoch did not move
        (4, 4, 4, False, True),   # no write predicted: never smaller
        (4, 4, 3, False, False),
    ],
)
def test_epoch_rules(before, predicted, observed, exact, passed) -> None:
    r = check_epoch("t", 0, ps((1,), 1, (1,), before), ps((1,), 1, (1,), predicted), ps((1,), 1, (1,), observed),
                    exact=exact)
    assert r.passed is passed
    assert (r.detail == "") is passed


def test_outcome_classes() -> None:
    before = ps((1, 2, 3), -1, (1,), 7)
    assert observed_class(before, ps((1, 2, 3), 2, (2,), 8)) == "unclean_elected"
    assert observed_class(before, ps((1, 2, 3), 1, (1,), 8)) == "elected"
    assert observed_class(before, ps((1, 2, 3), -1, (1,), 7)) == "leaderless"
    assert observed_class(ps((1, 2), 1, (1, 2), 0), ps((3, 2), 3, (3, 2), 2)) == "elected"  # reassigned
    # Kafka 4.1+ (ELR): the ISR emptied when its last member left; an unclean election (RECOVERING,
    # 4.4.0 seed 4607: "UNCLEAN partition change ... isr: [] -> [2] ... RECOVERING") vs one from the ELR
    emptied = ps((1, 2), -1, (), 1)
    unclean, from_elr = NS(**vars(ps((1, 2), 2, (2,), 2)), leader_recovery_state=1), \
        NS(**vars(ps((1, 2), 1, (1,), 2)), leader_recovery_state=0)
    assert observed_class(emptied, unclean) == "unclean_elected"
    assert observed_class(emptied, from_elr) == "elected"
    assert observed_class(emptied, ps((1, 2), 2, (2,), 2)) == "elected"  # no recovery state: as before
    # restarted while out of the ISR, caught up, then given the leadership back: clean
    assert observed_class(ps((1, 2), 2, (2,), 5), ps((1, 2), 1, (2, 1), 6)) == "elected"
    assert observed_class(ps((1, 2), 1, (1,), 5), ps((1, 2), 2, (2,), 6)) == "unclean_elected"
    assert predicted_class([outcome("t", 0, "no_replica_online"), outcome("t", 0, "unclean_elected", 1)],
                           "t", 0) == "unclean_elected"
    assert predicted_class([outcome("t", 0, "election_not_needed")], "t", 0) == "leader_kept"
    assert predicted_class([], "t", 0) == "leader_kept"


@pytest.mark.parametrize(
    "before, after, elected_recovering, klass",
    [
        # explore --mode kraft --seed 7701 on 4.4.0: [4, 3] both killed, ELR [4], started again; 4
        # elected as the last known leader RECOVERING, then 3 joined the ISR: RECOVERED at the end
        (ps((4, 3), -1, (), 1), ps((4, 3), 4, (3, 4), 2), True, "unclean_elected"),
        (ps((4, 3), -1, (), 1), ps((4, 3), 4, (3, 4), 2), False, "elected"),  # from the ELR: RECOVERED throughout
        # a leader that had an ISR before is judged by the ISR, whatever the writes show
        (ps((4, 3), 4, (4,), 1), ps((4, 3), 4, (4, 3), 1), True, "leader_kept"),
        (ps((4, 3), -1, (), 1), ps((4, 3), -1, (), 1), True, "leaderless"),
    ],
)
def test_an_unclean_election_seen_in_the_steps_writes(before, after, elected_recovering, klass) -> None:
    assert observed_class(before, after, elected_recovering) == klass


def test_recovering_elections_are_read_from_the_steps_partition_writes() -> None:
    from kafka_chaos.harness.zkevents import BrokerRegistered, PartitionStateWritten
    from kafka_chaos.scenarios.checks.functions import recovering_elections

    def written(leader, isr, state, version):
        return PartitionStateWritten(at=1.0, topic="t", partition=1, leader=leader, leader_epoch=2, isr=isr,
                                     controller_epoch=3, leader_recovery_state=state, version=version)
    events = (BrokerRegistered(at=1.0, broker_id=4), written(-1, (), 0, 3), written(4, (4,), 1, 4),
              written(4, (3, 4), 0, 5))
    assert recovering_elections(events) == {("t", 1, 4)}
    assert recovering_elections(events[:2] + events[3:]) == frozenset()
    before, after = {("t", 1): ps((4, 3), -1, (), 1)}, {("t", 1): ps((4, 3), 4, (3, 4), 2)}
    unclean = [outcome("t", 1, "unclean_elected")]
    judged = {r.passed for r in compare_partitions(before, after, after, unclean, exact_epochs=True,
                                                   recovering=recovering_elections(events)) if r.check == "oracle_outcome"}
    assert judged == {True}
    judged = {r.passed for r in compare_partitions(before, after, after, unclean, exact_epochs=True)
              if r.check == "oracle_outcome"}
    assert judged == {False}


def test_outcome_mismatch_fails() -> None:
    before = ps((1, 2), 1, (1, 2), 0)
    r = check_outcome("t", 0, [outcome("t", 0, "unchanged")], before, ps((1, 2), 2, (2,), 1))
    assert r.passed is False and "oracle says leader_kept, cluster shows elected" in r.detail


def test_a_restart_that_re_elects_the_same_leader_is_seen_as_kept() -> None:
    """RF = 1 partition whose only replica restarts: leaderless at the shutdown, elected again at
    the startup; before and after both show leader 1 (found by `kafka-chaos explore --seed 1`)."""
    before, after = ps((1,), 1, (1,), 3), ps((1,), 1, (1,), 5)
    path = [outcome("t", 0, "no_replica_online"), outcome("t", 0, "elected", 1)]
    assert check_outcome("t", 0, path, before, after, 1).passed is True
    # but an election predicted to move the leader elsewhere is still a failure when it stays
    assert check_outcome("t", 0, path, before, after, 2).passed is False
    assert check_outcome("t", 0, path, before, after).passed is False
    # 4.x, ELR on: killed and restarted, it is elected again uncleanly (RECOVERING in the step's
    # writes; explore --mode kraft --seed 7701 on 4.4.0); without that write it is a failure
    unclean = [outcome("t", 0, "no_replica_online"), outcome("t", 0, "unclean_elected", 1)]
    assert check_outcome("t", 0, unclean, before, after, 1, elected_recovering=True).passed is True
    assert check_outcome("t", 0, unclean, before, after, 1).passed is False
    assert check_outcome("t", 0, unclean, before, after, 2, elected_recovering=True).passed is False


def test_a_total_outage_keeps_a_dead_leader_in_zookeeper_and_that_is_leaderless() -> None:
    """Every broker killed: no controller is left to write, ZooKeeper keeps leader 1 (dead)."""
    before = after = ps((1, 2, 3), 1, (1, 2, 3), 4)
    gone = [outcome("t", 0, "no_replica_online")]
    assert check_outcome("t", 0, gone, before, after, 1, live_after=[]).passed is True
    # the same ZooKeeper state with the old leader live is a kept leader, not leaderless
    r = check_outcome("t", 0, gone, before, after, 1, live_after=[1, 2])
    assert r.passed is False and "oracle says leaderless, cluster shows leader_kept" in r.detail
    assert check_outcome("t", 0, gone, before, after, 1).passed is False  # liveness unknown: not excused


def test_unknown_oracle_outcome_is_unknown_not_pass() -> None:
    results = check_safe("oracle_outcome", check_outcome, "t", 0, [outcome("t", 0, "bogus")],
                         ps((1,), 1, (1,), 0), ps((1,), 1, (1,), 0), topic="t", partition=0)
    assert [r.passed for r in results] == [None]
    assert "checker crashed" in results[0].detail


def test_a_crashing_checker_is_unknown() -> None:
    def boom() -> CheckResult:
        raise RuntimeError("no data")

    [r] = check_safe("x", boom)
    assert r.passed is None and "RuntimeError: no data" in r.detail
    assert not all_passed([r])


def test_single_controller() -> None:
    assert check_single_controller(2, [1, 2, 3]).passed is True
    assert check_single_controller(2, [1, 2, 3], allowed=[2]).passed is True
    assert check_single_controller(3, [1, 2, 3], allowed=[2]).passed is False
    assert check_single_controller(None, [1, 2]).passed is False
    assert check_single_controller(4, [1, 2]).passed is False
    # no live broker: no controller is right, and one named would be a dead broker's
    assert check_single_controller(None, []).passed is True
    r = check_single_controller(2, [])
    assert r.passed is False and "while no broker is live" in r.detail
    r = check_single_controller(2, [1, 2], metadata_controllers={1: 2, 2: 1})
    assert r.passed is False and "another controller" in r.detail


def md(leader, replicas, isr):
    return NS(leader=leader, replicas=tuple(replicas), isr=tuple(isr))


def test_metadata_agreement() -> None:
    zk = {("t", 0): ps((1, 2), 2, (2, 1), 3)}
    ok = {1: {("t", 0): md(2, (1, 2), (1, 2))}, 2: {("t", 0): md(2, (1, 2), (2, 1))}}
    assert check_metadata_agrees(zk, ok).passed is True
    stale = {1: {("t", 0): md(1, (1, 2), (1, 2))}, 2: {("t", 0): md(2, (1, 2), (2, 1))}}
    r = check_metadata_agrees(zk, stale)
    assert r.passed is False and "broker 1 t-0: leader 1 != ZK 2" in r.detail
    silent = {1: TimeoutError("no answer"), 2: {("t", 0): md(2, (1, 2), (2, 1))}}
    assert check_metadata_agrees(zk, silent).passed is None


def test_converged() -> None:
    assert check_converged("x", True, 1.0).passed is True
    r = check_converged("the predicted state", False, 90.0, "t-0 leader 1 != 2")
    assert r.passed is False and "t-0 leader 1 != 2" in r.detail and "90.0s" in r.detail


def acks(partition, n, start=0):
    return [Ack(partition, start + i, f"k-{partition}-{start + i}", 100.0 + i) for i in range(n)]


def test_delivery_clean_history_passes() -> None:
    sent = acks(0, 5) + acks(1, 5)
    report = validate_delivery(sent, [(a.partition, a.offset, a.key) for a in sent])
    [r] = check_delivery("t", report)
    assert r.passed is True


def test_delivery_loss_fails_without_unclean_election() -> None:
    sent = acks(0, 5)
    report = validate_delivery(sent, [(a.partition, a.offset, a.key) for a in sent[:3]])
    [r] = check_delivery("t", report)
    assert r.passed is False and "lost acknowledged messages on partitions {0: 2}" in r.detail


def test_delivery_loss_is_counted_where_unclean_election_predicted() -> None:
    sent = acks(0, 5) + acks(1, 2)
    consumed = [(a.partition, a.offset, a.key) for a in sent if not (a.partition == 0 and a.offset >= 3)]
    report = validate_delivery(sent, consumed)
    results = check_delivery("t", report, unclean_partitions=[0])
    assert [r.passed for r in results] == [True, True]
    assert results[1].observed["lost_total"] == 2
    # ...but a loss on another partition still fails
    report = validate_delivery(sent, [c for c in consumed if c[0] == 0])
    assert check_delivery("t", report, unclean_partitions=[0])[0].passed is False


def test_delivery_loss_is_counted_where_a_power_failure_took_every_isr_member() -> None:
    sent = acks(0, 5) + acks(1, 2)
    consumed = [(a.partition, a.offset, a.key) for a in sent if not (a.partition == 0 and a.offset >= 3)]
    report = validate_delivery(sent, consumed)
    results = check_delivery("t", report, power_failed=[0])
    assert [(r.check, r.passed) for r in results] == [("delivery", True), ("delivery_power_failure_loss", True)]
    assert results[1].observed["lost_total"] == 2 and results[0].expected["power_failure_partitions"] == [0]
    # a loss on a partition the power failure spared fails, and so does any duplicate
    assert check_delivery("t", report, power_failed=[1])[0].passed is False
    doubled = validate_delivery(sent, consumed + [(0, 5, sent[0].key)])
    assert check_delivery("t", doubled, power_failed=[0])[0].passed is False
    # an unclean election on the same partition is the one the loss is counted under
    assert [r.check for r in check_delivery("t", report, [0], power_failed=[0])] == ["delivery", "delivery_unclean_loss"]


def test_delivery_duplicates_fail_even_after_unclean_election() -> None:
    sent = acks(0, 3)
    consumed = [(a.partition, a.offset, a.key) for a in sent] + [(0, 3, sent[0].key)]
    results = check_delivery("t", validate_delivery(sent, consumed), unclean_partitions=[0])
    assert results[0].passed is False and "duplicated" in results[0].detail


def test_new_partitions_are_checked_against_the_creation_prediction() -> None:
    predicted = {("n", 0): ps((2, 1), 2, (2, 1), 0)}
    outcomes = [outcome("n", 0, "elected")]
    good = compare_partitions({}, predicted, {("n", 0): ps((2, 1), 2, (1, 2), 0)}, outcomes, exact_epochs=True)
    assert all_passed(good)
    bad = compare_partitions({}, predicted, {("n", 0): ps((2, 1), 1, (1, 2), 1)}, outcomes, exact_epochs=True)
    assert {r.check for r in bad if r.passed is False} == {"oracle_leader", "oracle_epoch"}


def test_every_oracle_outcome_has_an_observable_class() -> None:
    from kafka_chaos.oracle import Outcome
    from kafka_chaos.scenarios.checks.functions import OUTCOME_CLASS

    assert {o.value for o in Outcome} == set(OUTCOME_CLASS)

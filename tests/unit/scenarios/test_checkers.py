"""The check registry over hand-made observations: every check fires on its case, stays quiet
on a clean step, and a check or oracle that crashes gives unknown, never a pass."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kafka_chaos.oracle import ClusterState, Prediction, predict
from kafka_chaos.scenarios.checks import registry as checkers
from kafka_chaos.scenarios.checks.registry import CHECKS, CheckContext, check_history, evaluate, register_check, to_records
from kafka_chaos.scenarios.clients.delivery import validate_delivery
from kafka_chaos.scenarios.history.observations import (
    ScenarioAborted,
    ScenarioFinished,
    ScenarioSkipped,
    StepObserved,
    TopicDelivery,
    observation_from_json,
    observation_to_json,
)
from tests.unit.scenarios.histories import AFTER, RUN, T0, acks, hard_kill_step, snapshot, zk_partition


def by_check(results):
    out: dict[str, list] = {}
    for r in results:
        out.setdefault(r.check, []).append(r)
    return out


def test_a_step_that_did_what_kafka_does_passes_every_check() -> None:
    results = evaluate(hard_kill_step(), CheckContext())
    verdicts = [r for r in results if not r.is_measurement]
    assert verdicts and all(r.passed is True for r in verdicts), [r.detail for r in verdicts if not r.passed]
    checks = by_check(results)
    assert set(checks) == {"converged", "oracle_leader", "oracle_isr", "oracle_replicas", "oracle_epoch",
                           "oracle_outcome", "single_controller", "metadata_agrees_zk", "latency", "isr_registered"}
    assert len(checks["oracle_leader"]) == 2  # one per partition of t
    [latency] = checks["latency"]  # t-0's leader moved: one measurement
    assert latency.kind == "measurement" and latency.passed is None and latency.partition == 0
    assert latency.latency_ms == {"detection": 5000.0, "election": 5100.0, "propagation": 5700.0,
                                  "first_produce": 5800.0, "client_gap": 5900.0}


def test_a_wrong_leader_fails_the_leader_and_convergence_checks() -> None:
    wrong = snapshot((2, 3), [zk_partition(0, (1, 2), 1, (2,), 5, 2), zk_partition(1, (2, 3), 2, (2, 3), 0)])
    checks = by_check(evaluate(hard_kill_step(after=wrong, metadata=None), CheckContext()))
    assert checks["converged"][0].passed is False and "leader 1 != 2" in checks["converged"][0].detail
    assert [r.passed for r in checks["oracle_leader"]] == [False, True]
    assert checks["metadata_agrees_zk"][0].passed is None  # not asked: ZooKeeper never converged


def test_an_epoch_off_by_one_fails_only_the_epoch_check_on_an_exact_path() -> None:
    off = snapshot((2, 3), [zk_partition(0, (1, 2), 2, (2,), 6, 2), zk_partition(1, (2, 3), 2, (2, 3), 0)])
    checks = by_check(evaluate(hard_kill_step(after=off), CheckContext()))
    assert checks["oracle_epoch"][0].passed is False and "exactly 5" in checks["oracle_epoch"][0].detail
    assert checks["converged"][0].passed is True  # convergence compares leaders, ISRs, replicas
    # a fault whose epochs are not exact on its path only needs "increased"
    loose = replace(hard_kill_step(after=off), traits=replace(hard_kill_step().traits, exact_epochs=False))
    assert by_check(evaluate(loose, CheckContext()))["oracle_epoch"][0].passed is True


def test_a_broker_with_stale_metadata_fails_the_agreement_check_and_a_silent_one_is_unknown() -> None:
    stale = {(t, p): replace(seen, leader=1) for (t, p), seen in
             {k: v for k, v in hard_kill_step().metadata[2].items()}.items()}
    checks = by_check(evaluate(hard_kill_step(metadata={2: stale, 3: hard_kill_step().metadata[3]}), CheckContext()))
    assert checks["metadata_agrees_zk"][0].passed is False
    silent = by_check(evaluate(hard_kill_step(metadata={2: "timed out", 3: hard_kill_step().metadata[3]}),
                               CheckContext()))
    assert silent["metadata_agrees_zk"][0].passed is None and "broker 2: timed out" in silent["metadata_agrees_zk"][0].detail


def test_a_controller_that_moved_without_cause_fails() -> None:
    moved = replace(AFTER, controller=2)
    assert by_check(evaluate(hard_kill_step(after=moved), CheckContext()))["single_controller"][0].passed is False


def test_no_snapshot_after_is_one_failed_convergence_and_no_other_verdict() -> None:
    results = [r for r in evaluate(hard_kill_step(after=None, metadata=None), CheckContext()) if not r.is_measurement]
    assert [(r.check, r.passed) for r in results] == [("converged", False)]
    assert "no snapshot could be read" in results[0].detail


def test_a_crashing_oracle_makes_the_checks_unknown_not_passed() -> None:
    def broken(state: ClusterState, events) -> Prediction:
        raise RuntimeError("model bug")

    results = evaluate(hard_kill_step(), CheckContext(broken))
    # metadata_agrees_zk compares ZooKeeper with the brokers, isr_registered needs no prediction
    needing_the_oracle = [r for r in results if r.check not in ("metadata_agrees_zk", "isr_registered")]
    assert needing_the_oracle and all(r.passed is None for r in needing_the_oracle)
    assert all("checker crashed: RuntimeError: model bug" in r.detail for r in needing_the_oracle)


def test_a_deliberately_wrong_oracle_changes_the_verdicts() -> None:
    def keeps_the_dead_leader(state: ClusterState, events) -> Prediction:
        right = predict(state, events)
        parts = dict(right.state.topics["t"].partitions)
        parts[0] = parts[0].with_changes(leader=1)
        topics = {**right.state.topics, "t": replace(right.state.topics["t"], partitions=parts)}
        return replace(right, state=replace(right.state, topics=topics), alternatives=())

    checks = by_check(evaluate(hard_kill_step(), CheckContext(keeps_the_dead_leader)))
    assert checks["oracle_leader"][0].passed is False and checks["converged"][0].passed is False


def test_the_registry_runs_in_order_and_a_raising_check_is_unknown(monkeypatch) -> None:
    monkeypatch.setattr(checkers, "CHECKS", list(CHECKS))

    @register_check("always_raises", StepObserved)
    def always_raises(obs, ctx):
        raise KeyError("boom")

    results = evaluate(hard_kill_step(), CheckContext())
    assert results[-1].check == "always_raises" and results[-1].passed is None
    assert "KeyError" in results[-1].detail
    with pytest.raises(ValueError, match="registered twice"):
        register_check("always_raises", StepObserved)(always_raises)


def test_scenario_end_checks() -> None:
    report = validate_delivery(acks(0, 1.0, 2.0), [(0, 0, "k0-0")])  # k0-1 acked, never read: lost
    finished = ScenarioFinished(RUN, T0 + 10, T0 + 20, None, (TopicDelivery("t", report),
                                                                 TopicDelivery("u", None, "workload failed: x")))
    checks = by_check(evaluate(finished, CheckContext()))
    assert [r.passed for r in checks["delivery"]] == [False, None]
    assert "lost acknowledged messages on partitions {0: 1}" in checks["delivery"][0].detail
    unhealed = evaluate(ScenarioFinished(RUN, T0, T0 + 90, "cluster not healthy: timed out"), CheckContext())
    assert [(r.check, r.passed) for r in unhealed] == [("healed", False)]
    aborted = evaluate(ScenarioAborted(RUN, T0, T0 + 1, "not settled before step 1"), CheckContext())
    assert [(r.check, r.passed, r.detail) for r in aborted] == [("scenario_completed", False, "not settled before step 1")]
    skipped = evaluate(ScenarioSkipped(RUN, T0, ("network_partition",), "needs --backend containers"), CheckContext())
    assert [(r.check, r.passed) for r in skipped] == [("backend_supports_scenario", None)]


def test_a_re_check_recomputes_the_delivery_report_from_the_recorded_client_ops() -> None:
    """The report stored by the code that recorded the run is not the verdict: the history's
    acknowledgements and read-back decide, with today's rules. k0-1 was acknowledged implicitly
    (no offset); the accounting of its day called it misplaced."""
    from kafka_chaos.scenarios.clients.ops import READBACK, ClientOps, Poll
    from kafka_chaos.scenarios.clients.delivery import Ack

    sent = (Ack(0, 0, "k0-0", T0 + 1), Ack(0, None, "k0-1", T0 + 2))
    read = [(0, 0, "k0-0"), (0, 1, "k0-1")]
    ops = {"t-0": ClientOps(T0, None, acks=sent, polls=tuple(Poll(READBACK, o, k, T0 + 9) for _, o, k in read))}
    stored = replace(validate_delivery(sent, read), misplaced=("k0-1",))
    finished = ScenarioFinished(RUN, T0 + 10, T0 + 20, None, (TopicDelivery("t", stored),), ops)
    [verdict] = by_check(evaluate(finished, CheckContext()))["delivery"]
    assert verdict.passed is True and verdict.observed["misplaced"] == 0

    # ... and a loss the ops show fails although the stored report passed it.
    lossy = {"t-0": replace(ops["t-0"], polls=ops["t-0"].polls[:1])}
    [verdict] = by_check(evaluate(replace(finished, ops=lossy), CheckContext()))["delivery"]
    assert verdict.passed is False and "lost acknowledged messages on partitions {0: 1}" in verdict.detail

    # A history without a read-back in its ops (version 1) keeps its stored report.
    [verdict] = by_check(evaluate(replace(finished, ops={}), CheckContext()))["delivery"]
    assert verdict.passed is False and verdict.observed["misplaced"] == 1


def test_loss_is_tolerated_only_where_an_earlier_step_predicted_an_unclean_election() -> None:
    # t-0: ISR [1]; kill 1 with unclean election enabled -> 2 elected uncleanly.
    before = snapshot((1, 2, 3), [zk_partition(0, (1, 2), 1, (1,), 4), zk_partition(1, (2, 3), 2, (2, 3), 0)])
    step = hard_kill_step(before=before, oracle_state=replace(
        hard_kill_step().oracle_state, topics={"t": replace(hard_kill_step().oracle_state.topics["t"], config={
            "unclean.leader.election.enable": "true"})}))
    from kafka_chaos.scenarios.model.snapshots import cluster_state_of

    step = replace(step, oracle_state=cluster_state_of(before, ["t"], {"unclean.leader.election.enable": "true"}))
    report = validate_delivery(acks(0, 1.0, 2.0), [(0, 0, "k0-0")])
    finished = ScenarioFinished(RUN, T0 + 10, T0 + 20, None, (TopicDelivery("t", report),))
    results = [r for _, rs in check_history([step, finished]) for r in rs]
    delivery = by_check(results)["delivery"][0]
    assert delivery.passed is True and delivery.expected["unclean_partitions"] == [0]


def test_records_are_a_pure_function_of_the_observation_and_survive_the_history_file() -> None:
    """The offline re-check property at unit level: an observation written to history.jsonl and
    read back gives byte-identical records."""
    obs = hard_kill_step()
    first = [r.to_json() for r in to_records(obs, evaluate(obs, CheckContext()))]
    again = observation_from_json(observation_to_json(obs))
    assert again == obs
    second = [r.to_json() for r in to_records(again, evaluate(again, CheckContext()))]
    assert first == second
    record = json.loads(first[0])
    assert (record["fault"], record["target"], record["started_at"], record["finished_at"]) == (
        "hard_kill", "broker 1 (leader of t-0)", T0, T0 + 7.5)


def test_of_interleavings_ending_alike_the_one_with_the_observed_epochs_is_chosen() -> None:
    """Seen by `kafka-chaos explore`: brokers 1 and 3 SIGKILLed together expire in one
    BrokerChange or in two. t-0 [1, 3, 2], leader 1, full ISR, epoch 4, controller 2: in one
    event 2 is elected with ISR [2] (+1); in two, whichever goes first costs a write of its own
    (+2). Every alternative ends with leader 2, ISR [2]: only the epoch tells them apart."""
    from kafka_chaos.oracle import BrokerFailure
    from kafka_chaos.scenarios.history.observations import FaultTraits
    from kafka_chaos.scenarios.model.snapshots import cluster_state_of
    from kafka_chaos.scenarios.model.targets import Target
    from tests.unit.scenarios.histories import zk_partition as zp

    before = snapshot((1, 2, 3), [zp(0, (1, 3, 2), 1, (1, 3, 2), 4)])
    two_events = snapshot((2,), [zp(0, (1, 3, 2), 2, (2,), 6, 3)], controller=2)
    obs = hard_kill_step(before=before, oracle_state=cluster_state_of(before, ["t"], {}),
                         oracle_events=(BrokerFailure((1, 3)),), target=Target((1, 3), "brokers 1, 3"),
                         after=two_events, metadata={2: {}}, traits=FaultTraits("hard_kill", "hard_kill", True),
                         sightings={}, clients={}, events=())
    obs = replace(obs, oracle_state=replace(obs.oracle_state, controller=2))
    checks = by_check(evaluate(obs, CheckContext()))
    assert checks["oracle_epoch"][0].passed is True, checks["oracle_epoch"][0].detail
    assert checks["converged"][0].observed["alternatives"] > 1
    assert "then" in checks["converged"][0].observed["alternative"]


def test_the_internal_topics_the_oracles_input_holds_are_judged_like_any_other() -> None:
    """``__consumer_offsets`` is predicted like the scenario's topics (its partitions were in the
    oracle's input all along, never compared): a leader the cluster did not elect there fails the
    step; a history whose input lacks it is judged on its own topics only."""
    from kafka_chaos.harness.observer import PartitionZkState
    from kafka_chaos.scenarios.model.snapshots import cluster_state_of
    from tests.unit.scenarios.histories import BEFORE, AFTER, TOPIC

    def offsets(leader: int, isr: tuple[int, ...], epoch: int) -> PartitionZkState:
        return PartitionZkState("__consumer_offsets", 0, (1, 2), leader, epoch, isr, 1, 0, 1)

    def with_offsets(snap, part):  # type: ignore[no-untyped-def]
        return replace(snap, partitions={**snap.partitions, ("__consumer_offsets", 0): part})

    before = with_offsets(BEFORE, offsets(1, (1, 2), 3))
    state = cluster_state_of(before, [TOPIC, "__consumer_offsets"], {})
    elected = hard_kill_step(before=before, oracle_state=state, after=with_offsets(AFTER, offsets(2, (2,), 4)))
    stuck = replace(elected, after=with_offsets(AFTER, offsets(-1, (2,), 4)))

    def failed(obs) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
        return sorted({(r.check, r.topic) for r in evaluate(obs, CheckContext()) if r.passed is False})

    assert failed(elected) == []
    assert ("oracle_leader", "__consumer_offsets") in failed(stuck) and ("converged", None) in failed(stuck)
    older = replace(stuck, oracle_state=cluster_state_of(before, [TOPIC], {}))
    assert failed(older) == []
    # under a leader-side ISR rule an offsets partition shrinks only if it was written: not judged
    ruled = replace(stuck, traits=replace(stuck.traits, isr_rule="rule_leader_isr_shrink"))
    assert ("oracle_leader", "__consumer_offsets") not in failed(ruled)

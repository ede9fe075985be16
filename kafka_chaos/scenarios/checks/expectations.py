"""What a step must end in: the oracle's prediction (every allowed alternative), with the fault's
documented leader-side ISR rule applied on top. Pure; used by the runner to wait and by the
checks to judge, so both read one answer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.oracle import ClusterState, Event, Mode, PartitionOutcome, Prediction, epochs_determined
from kafka_chaos.oracle.config import auto_leader_rebalance_enabled
from kafka_chaos.scenarios.model import isr_rules
from kafka_chaos.scenarios.checks.functions import epochs_not_reached, partition_epochs_not_reached
from kafka_chaos.scenarios.model.snapshots import mismatches, observed_partitions, predicted_partitions

Predictor = Callable[[ClusterState, Sequence[Event]], Prediction]


@dataclass(frozen=True)
class Expectation:
    """One allowed settled state after the step."""

    label: str  # which interleaving of the events (``oracle.Alternative.label``)
    oracle: ClusterState  # the oracle's state
    state: ClusterState  # ``oracle`` with the leader-side ISR rule applied (== ``oracle`` without one)
    outcomes: tuple[PartitionOutcome, ...]
    ruled: tuple[tuple[str, int], ...] = ()  # partitions whose ISR the rule changes
    # ... of which those whose partition epochs the rule does not count (ZooKeeper mode's rules
    # write no partition epoch; KRaft's count each AlterPartition: isr_rules.epochs_unexact)
    unexact: tuple[tuple[str, int], ...] = ()


def _alternatives(prediction: Prediction) -> list[tuple[str, ClusterState, tuple[PartitionOutcome, ...]]]:
    """The prediction's allowed settled states, the main one first (``Prediction.alternatives``
    lists every legal interleaving of events Kafka does not order)."""
    return [(a.label, a.state, tuple(a.outcomes)) for a in prediction.alternatives]


def expectations(predictor: Predictor, state: ClusterState, events: Sequence[Event], *,
                 rule: str | None, rule_brokers: Iterable[int], topics: Iterable[str]) -> tuple[Expectation, ...]:
    """Every allowed outcome of ``events`` applied to ``state`` (main first), each with ``rule``
    applied for ``rule_brokers``."""
    topics = list(topics)
    brokers = tuple(rule_brokers)
    result = []
    for label, oracle_state, outcomes in _alternatives(predictor(state, list(events))):
        if rule is None:
            result.append(Expectation(label, oracle_state, oracle_state, outcomes))
            continue
        expected = isr_rules.apply_rule(rule, oracle_state, brokers, state)
        ruled = tuple(isr_rules.changed_partitions(oracle_state, expected, topics))
        unexact = isr_rules.epochs_unexact(rule, oracle_state, brokers, ruled)
        result.append(Expectation(label, oracle_state, expected, outcomes, ruled, unexact))
    return tuple(result)


def epochs_exact(index: int | None, fault_exact: bool, then: Sequence[str], state: ClusterState,
                 events: Sequence[Event]) -> bool:
    """Whether a step's leader epochs are judged exactly (else: increased where the oracle
    predicts a write, never decreased). Topic creation (``index`` None) always; a fault when its
    path is modelled write by write (``fault_exact``), no follow-up event is pending, the
    controller (``state``, the oracle's input) is known, and the release determines the count
    (``oracle.epochs_determined``). A step that hits the controller is judged exactly too: the
    ZooKeeper controller's failover (``onControllerFailover``: the removal written before the
    election, +2 on the partitions the old controller led) and KRaft's (no partition write) are
    modelled, whichever broker or voter wins."""
    if index is None:
        return True
    return fault_exact and not then and state.controller is not None and epochs_determined(state, events)


# KafkaController.onControllerFailover: scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS) (3.9;
# the same delay since 1.1), plus a margin for the event queue.
FAILOVER_CHECK_DELAY_S = 5.0
FAILOVER_CHECK_MARGIN_S = 1.5


def failover_check_pending(before: ClusterState, options: Sequence[Expectation]) -> bool:
    """Whether the step fails the ZooKeeper controller over with ``auto.leader.rebalance.enable``:
    the new controller checks the leader imbalance :data:`FAILOVER_CHECK_DELAY_S` later, which the
    oracle predicts after the step's last event (``ClusterState.rebalance_check_due``) -- a check
    that moves no leader is not seen, so the step is measured only once it has run."""
    return (before.mode is Mode.ZOOKEEPER and auto_leader_rebalance_enabled(before.config)
            and any(e.oracle.controller != before.controller for e in options))


def converged_to(snapshot: ZkSnapshot, options: Sequence[Expectation], before: ZkSnapshot, topics: Iterable[str], *,
                 exact_epochs: bool) -> Expectation | None:
    """The first expectation ``snapshot`` matches in every predicted field: leaders, ISRs and
    replicas (:func:`matching`) and leader epochs under the rule the ``oracle_epoch`` check
    applies (``before``: the snapshot before the fault). Leaders and ISRs often match one write
    before the last one the controller makes for the event (a second write of the same event,
    a new controller's failover rewrite), so a step waits for this, not for :func:`matching`."""
    topics = list(topics)
    was = observed_partitions(before, topics)
    now = observed_partitions(snapshot, topics)
    kraft = snapshot.mode == "kraft"
    for e in options:
        predicted = predicted_partitions(e.state, topics)
        if not mismatches(snapshot, e.state, topics) and not epochs_not_reached(
                was, predicted, now, exact=exact_epochs) and not (kraft and partition_epochs_not_reached(
                    was, predicted, now, exact=exact_epochs, ruled=e.unexact)):
            return e
    return None


def by_epochs(options: Sequence[Expectation], snapshot: ZkSnapshot, topics: Iterable[str]) -> list[Expectation]:
    """Those of ``options`` whose predicted leader epochs the snapshot shows; first those whose
    KRaft partition epochs it shows as well (outside the partitions an ISR rule changed, whose
    AlterPartitions are not counted). A 4.x broker started after an unclean shutdown (out of the
    ELR, then the last known leader elected uncleanly, RECOVERING: two writes) and after a clean
    one (elected from the ELR: one write) end in the same leader, ISR and leader epoch; the
    partition epoch tells them apart (found by `explore --mode kraft --seed 7701` on 4.4.0,
    schedule 2: a controlled restart of an RF 1 partition's broker judged by the unclean plan)."""
    topics = list(topics)
    parts = snapshot.partitions

    def rank(e: Expectation) -> int | None:
        """None: a leader epoch the snapshot does not show; else 0 when the partition epochs and
        leader recovery states match too, 1 when only the partition epochs do, 2 when neither.
        The recovery state tells apart a 4.x broker SIGKILLed and restarted whose registration
        came before its fence (out of the ISR, re-elected as last known leader, RECOVERING) from
        one fenced first after a clean stop (elected from the ELR, RECOVERED): both take two writes
        (`explore --mode kraft --seed 7703` on 4.4.0, schedule 7, d-0 = [4])."""
        predicted = predicted_partitions(e.state, topics).items()
        if not all((t, p) in parts and parts[(t, p)].leader_epoch == want.leader_epoch for (t, p), want in predicted):
            return None
        if not all((t, p) in e.unexact or want.partition_epoch in (None, getattr(parts[(t, p)], "version", None))
                   for (t, p), want in predicted):
            return 2
        return 0 if all(_same_recovery(getattr(want, "leader_recovery_state", None),
                                       getattr(parts[(t, p)], "leader_recovery_state", None))
                        for (t, p), want in predicted) else 1

    ranked = [(r, e) for e in options if (r := rank(e)) is not None]
    return [e for _, e in sorted(ranked, key=lambda pair: pair[0])]  # stable: the options' order within a rank


def _same_recovery(predicted: int | None, observed: int | None) -> bool:
    return predicted is None or observed is None or predicted == observed


def matching(snapshot: ZkSnapshot, options: Sequence[Expectation], topics: Iterable[str]) -> Expectation | None:
    """The first expectation ``snapshot`` matches (leaders, ISRs as sets, replicas), or None."""
    topics = list(topics)
    for e in options:
        if not mismatches(snapshot, e.state, topics):
            return e
    return None

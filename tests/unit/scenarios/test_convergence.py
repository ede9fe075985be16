"""A step is judged once the cluster matches the prediction in every predicted field, leader
epochs included (:func:`scenarios.checks.expectations.converged_to`): leaders and ISRs often match one
controller write before the last one (a second write of the same event, a new controller's
failover rewrite), and a step that stopped looking then failed ``oracle_epoch`` although the
cluster went on to do what the oracle said. The wait and the check apply one epoch rule."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from kafka_chaos.oracle import BrokerFailure, ClusterState, ControlledShutdown, Release, predict
from kafka_chaos.scenarios.checks.expectations import converged_to, epochs_exact, expectations, matching
from tests.unit.scenarios.histories import AFTER, BEFORE, TOPIC, snapshot, zk_partition

TOPICS = [TOPIC]


def options_after(*events: object) -> tuple:
    from kafka_chaos.scenarios.model.snapshots import cluster_state_of

    return expectations(predict, cluster_state_of(BEFORE, TOPICS, {}), list(events), rule=None, rule_brokers=(),
                        topics=TOPICS)


def with_epochs(snap, **epochs: int):
    parts = {k: replace(p, leader_epoch=epochs.get(f"p{k[1]}", p.leader_epoch)) for k, p in snap.partitions.items()}
    return replace(snap, partitions=parts)


# broker 1 (leader of t-0, not the controller) dies: t-0 -> leader 2, ISR [2], epoch 4 -> 5
LEADER_KILLED = options_after(BrokerFailure((1,)))
# the controller (3) dies: t-1 loses 3 from its ISR (epoch 0 -> 1), and the new controller's
# failover writes what it must; the predicted epochs are the oracle's
CONTROLLER_KILLED = options_after(BrokerFailure((3,)))


def predicted_snapshot(options: tuple, live: tuple[int, ...], controller: int, short: int = 0):
    """The main prediction as ZooKeeper would show it; ``short``: every partition whose epoch
    the prediction raises shows that many writes fewer."""
    state = options[0].state
    parts = []
    for p, want in state.topics[TOPIC].partitions.items():
        was = BEFORE.partitions[(TOPIC, p)].leader_epoch
        epoch = want.leader_epoch - short if want.leader_epoch > was else want.leader_epoch
        parts.append(zk_partition(p, tuple(want.replicas), want.leader, tuple(want.isr), epoch, version=2))
    return snapshot(live, parts, controller=controller)


CASES = [
    # (name, options, snapshot, exact, converged)
    ("leader kill, all written (exact)", LEADER_KILLED, AFTER, True, True),
    ("leader kill, leader and ISR there, epoch not yet (exact)", LEADER_KILLED, with_epochs(AFTER, p0=4), True, False),
    ("leader kill, one write too many (exact)", LEADER_KILLED, with_epochs(AFTER, p0=6), True, False),
    ("leader kill, one write too many (increased)", LEADER_KILLED, with_epochs(AFTER, p0=6), False, True),
    ("controller kill, all written", CONTROLLER_KILLED, predicted_snapshot(CONTROLLER_KILLED, (1, 2), 1), False, True),
    ("controller kill, the failover's write not yet", CONTROLLER_KILLED,
     predicted_snapshot(CONTROLLER_KILLED, (1, 2), 1, short=1), False, False),
    ("controller kill, all written (exact)", CONTROLLER_KILLED, predicted_snapshot(CONTROLLER_KILLED, (1, 2), 1), True, True),
    ("controller kill, one write too many (exact)", CONTROLLER_KILLED,
     predicted_snapshot(CONTROLLER_KILLED, (1, 2), 1, short=-1), True, False),
    ("controller kill, one write too many (increased)", CONTROLLER_KILLED,
     predicted_snapshot(CONTROLLER_KILLED, (1, 2), 1, short=-1), False, True),
]


@pytest.mark.parametrize(("options", "snap", "exact", "converged"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_step_converges_only_when_the_epochs_are_there_too(options, snap, exact: bool, converged: bool) -> None:
    assert matching(snap, options, TOPICS) is not None, "leaders, ISRs and replicas match in every case"
    assert (converged_to(snap, options, BEFORE, TOPICS, exact_epochs=exact) is not None) == converged


def test_the_controller_kill_case_predicts_a_new_epoch() -> None:
    # the table's last case must be able to fail: the prediction raises some partition's epoch
    state = CONTROLLER_KILLED[0].state
    assert any(want.leader_epoch > BEFORE.partitions[(TOPIC, p)].leader_epoch
               for p, want in state.topics[TOPIC].partitions.items())


def _state(controller: int | None, release: str = "3.9.2", ibp: str | None = None) -> ClusterState:
    config = {} if ibp is None else {"inter.broker.protocol.version": ibp}
    return ClusterState(frozenset({1, 2, 3}), {}, controller=controller, config=config, release=Release.parse(release))


@pytest.mark.parametrize(("index", "fault_exact", "then", "controller", "event", "exact"), [
    (None, False, ("auto_rebalance",), None, BrokerFailure((3,)), True),  # topic creation: always exact
    (0, True, (), 3, BrokerFailure((1,)), True),
    (0, False, (), 3, BrokerFailure((1,)), False),  # the fault's path is not modelled write by write
    (0, True, ("auto_rebalance",), 3, BrokerFailure((1,)), False),  # a follow-up event is pending
    (0, True, (), None, BrokerFailure((1,)), False),  # no controller known
    (0, True, (), 3, BrokerFailure((3,)), True),  # the controller is hit: its failover is modelled
])
def test_when_epochs_are_exact(index, fault_exact: bool, then, controller, event, exact: bool) -> None:
    assert epochs_exact(index, fault_exact, then, _state(controller), [event]) == exact


@pytest.mark.parametrize(("release", "ibp", "event", "exact"), [
    ("3.9.2", None, ControlledShutdown(1), True),
    ("3.3.2", None, ControlledShutdown(1), True),  # KIP-841: a shutting-down broker cannot rejoin the ISR
    ("3.2.3", None, ControlledShutdown(1), False),  # it can: the epoch count is a race
    ("2.4.1", None, ControlledShutdown(1), False),
    ("3.9.2", "2.7-IV1", ControlledShutdown(1), False),  # leaders write the ISR themselves: no controller check
    ("3.9.2", "2.7-IV2", ControlledShutdown(1), True),
    ("2.4.1", None, BrokerFailure((1,)), True),  # no controlled shutdown, no race
])
def test_a_controlled_shutdown_counts_epochs_exactly_only_where_kip_841_holds(release, ibp, event, exact: bool) -> None:
    assert epochs_exact(0, True, (), _state(3, release, ibp), [event]) == exact


# --- KRaft: the partition epoch is waited on too (scenarios.checks.functions.partition_epochs_not_reached)


@dataclass(frozen=True)
class _Observed:
    version: int


@dataclass(frozen=True)
class _Predicted:
    partition_epoch: int | None


T0 = ("t", 0)

PARTITION_EPOCH_CASES = [
    # (name, before, predicted, observed, exact, ruled, waits)
    # migration_broker_kill_mid_roll on 3.9.2: the roll's leader change was written (6 -> 8), the
    # broker's directory assignment (AssignReplicasToDirs, +1) a moment later: not judged at 8
    ("exact, a record still to come", 6, 9, 8, True, (), True),
    ("exact, reached", 6, 9, 9, True, (), False),
    ("exact, past the prediction: judged at once", 6, 9, 10, True, (), False),
    ("exact, but a leader-side ISR rule changed it: moved is enough", 6, 9, 7, True, (T0,), False),
    ("moved where predicted, not moved yet", 6, 9, 6, False, (), True),
    ("moved where predicted, moved", 6, 9, 7, False, (), False),
    ("not predicted to move", 6, 6, 6, False, (), False),
    ("no partition epoch predicted (ZooKeeper mode)", 6, None, 5, True, (), False),
]


@pytest.mark.parametrize("name, before, predicted, observed, exact, ruled, waits", PARTITION_EPOCH_CASES,
                         ids=[c[0] for c in PARTITION_EPOCH_CASES])
def test_a_step_waits_for_the_predicted_partition_epoch(name, before, predicted, observed, exact, ruled,
                                                        waits) -> None:
    from kafka_chaos.scenarios.checks.functions import check_partition_epoch, partition_epochs_not_reached

    lagging = partition_epochs_not_reached({T0: _Observed(before)}, {T0: _Predicted(predicted)},
                                           {T0: _Observed(observed)}, exact=exact, ruled=ruled)
    assert bool(lagging) is waits
    if waits:  # what the wait waits for is exactly what the check would fail
        assert not check_partition_epoch("t", 0, before, predicted, observed,
                                         exact=exact and T0 not in ruled).passed


def _options(before: ClusterState, *events: object) -> tuple:
    return expectations(predict, before, list(events), rule=None, rule_brokers=(), topics=TOPICS)


@pytest.mark.parametrize(("rebalance", "event", "pending"), [
    ("true", BrokerFailure((3,)), True),  # the controller dies: its successor checks 5 s later
    ("true", BrokerFailure((1,)), False),  # a broker dies: no failover, no check scheduled
    ("false", BrokerFailure((3,)), False),  # no auto-rebalance task at all
    (None, BrokerFailure((3,)), True),  # Kafka's default is true
])
def test_a_step_waits_for_the_failovers_imbalance_check_only_where_one_is_scheduled(rebalance, event, pending) -> None:
    from kafka_chaos.scenarios.checks.expectations import failover_check_pending
    from kafka_chaos.scenarios.model.snapshots import cluster_state_of

    config = {} if rebalance is None else {"auto.leader.rebalance.enable": rebalance}
    before = cluster_state_of(BEFORE, TOPICS, config)
    assert before.controller == 3
    assert failover_check_pending(before, _options(before, event)) == pending


def _kraft_option(label: str, leader_epoch: int, partition_epoch: int | None, ruled: tuple = ()) -> object:
    from types import SimpleNamespace as NS

    want = NS(leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    return NS(label=label, state=NS(topics={"t1": NS(partitions={1: want})}), ruled=ruled, unexact=ruled)


@pytest.mark.parametrize(
    ("observed", "first"),
    [
        # explore --mode kraft --seed 7701 on 4.4.0, schedule 2: broker 3 (t1-1 = [3]) restarted by
        # a controlled shutdown; elected again from the ELR, leader epoch 2, partition epoch 2. The
        # unclean-shutdown plan (out of the ELR, then elected RECOVERING) ends at partition epoch 3.
        ((2, 2), "after a clean shutdown"),
        ((2, 3), "after an unclean shutdown"),
        ((2, 4), "after an unclean shutdown"),  # no partition epoch matches: leader epochs decide, in order
        ((3, 3), None),
    ],
)
def test_of_alternatives_with_the_same_leaders_the_one_with_the_observed_partition_epochs_judges(observed, first) -> None:
    from types import SimpleNamespace as NS

    from kafka_chaos.scenarios.checks.expectations import by_epochs

    options = (_kraft_option("after an unclean shutdown", 2, 3), _kraft_option("after a clean shutdown", 2, 2))
    snap = NS(partitions={("t1", 1): NS(leader_epoch=observed[0], version=observed[1])})
    preferred = by_epochs(options, snap, ["t1"])  # type: ignore[arg-type]
    assert (preferred[0].label if preferred else None) == first


def test_partition_epochs_an_isr_rule_changed_and_zookeeper_states_do_not_tell_alternatives_apart() -> None:
    from types import SimpleNamespace as NS

    from kafka_chaos.scenarios.checks.expectations import by_epochs

    ruled = (_kraft_option("a", 2, 3, ruled=(("t1", 1),)), _kraft_option("b", 2, 2))
    snap = NS(partitions={("t1", 1): NS(leader_epoch=2, version=5)})
    assert [e.label for e in by_epochs(ruled, snap, ["t1"])] == ["a", "b"]  # type: ignore[arg-type]
    zookeeper = (_kraft_option("a", 2, None), _kraft_option("b", 2, None))
    assert [e.label for e in by_epochs(zookeeper, snap, ["t1"])] == ["a", "b"]  # type: ignore[arg-type]


@pytest.mark.parametrize(("observed", "first"), [
    # explore --mode kraft --seed 7703 on 4.4.0, schedule 7: broker 4 (d-0 = [4]) SIGKILLed and started
    # again, registered before its fence: re-elected as last known leader, leader epoch 2, partition
    # epoch 2, RECOVERING -- the clean-shutdown plan's epochs, RECOVERED
    ((2, 2, 1), "registered before the fence"),
    ((2, 2, 0), "after a clean shutdown"),
    ((2, 3, 1), "after an unclean shutdown"),
])
def test_of_alternatives_with_the_same_epochs_the_one_with_the_observed_recovery_state_judges(observed, first) -> None:
    from types import SimpleNamespace as NS

    from kafka_chaos.scenarios.checks.expectations import by_epochs

    def option(label: str, partition_epoch: int, recovery: int) -> object:
        want = NS(leader_epoch=2, partition_epoch=partition_epoch, leader_recovery_state=recovery)
        return NS(label=label, state=NS(topics={"t1": NS(partitions={1: want})}), ruled=(), unexact=())

    options = (option("after an unclean shutdown", 3, 1), option("after a clean shutdown", 2, 0),
               option("registered before the fence", 2, 1))
    snap = NS(partitions={("t1", 1): NS(leader_epoch=observed[0], version=observed[1],
                                        leader_recovery_state=observed[2])})
    assert by_epochs(options, snap, ["t1"])[0].label == first  # type: ignore[arg-type]

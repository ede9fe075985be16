"""Interleavings Kafka does not order (pure): where several brokers fail, start or shut down in
one step, the controller may see them in one ``BrokerChange`` or in several, in any order; each
legal order is a plan run by a :class:`~oracle.controller.WorkingController`
(:func:`apply_event_alternatives`); :func:`apply_event` is the first, Kafka's most likely.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable, Hashable, Iterator, Sequence

from kafka_chaos.oracle.config import FOLLOWER_THROTTLED_REPLICAS
from kafka_chaos.oracle.controller import WorkingController, check_known, classify_outcomes, needs_election
from kafka_chaos.oracle.events import (
    AddPartitions,
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ControlledShutdown,
    ControllerFailover,
    CreateTopic,
    DeleteTopic,
    Event,
    LogDirFailure,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    UncleanElection,
)
from kafka_chaos.oracle.kraft import interleavings as kraft
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.outcomes import Outcome, PartitionOutcome
from kafka_chaos.oracle.state import ClusterState, TopicPartition, state_key as state_key


MAX_UNORDERED_BROKERS = 4
"""Up to this many brokers in one BrokerFailure / BrokerStartup, every ordered set partition of them
is a legal sequence of ``BrokerChange`` events (Fubini numbers: 1, 3, 13, 75).  Beyond it only three
orders are enumerated: all in one event, one at a time ascending, one at a time descending."""


@dataclass(frozen=True)
class _Plan:
    """One way the controller may see an event: a label and what it does to a working copy."""

    label: str
    run: Callable[[WorkingController], None]


def ordered_set_partitions(items: Sequence[int]) -> list[tuple[tuple[int, ...], ...]]:
    """Every way to split ``items`` into non-empty blocks processed one after the other: the
    ``BrokerChange`` events several session expiries (or registrations) may arrive in.  Fewest blocks
    first, then lexicographic; blocks hold ascending ids (``processBrokerChange`` sorts them)."""
    ordered = tuple(sorted(set(items)))
    if not ordered:
        return [()]
    result: list[tuple[tuple[int, ...], ...]] = []
    for size in range(1, len(ordered) + 1):
        for first in combinations(ordered, size):
            rest = tuple(b for b in ordered if b not in first)
            result.extend((first,) + tail for tail in ordered_set_partitions(rest))
    return sorted(result, key=lambda blocks: (len(blocks), blocks))


def _broker_orders(brokers: Sequence[int]) -> list[tuple[tuple[int, ...], ...]]:
    ordered = tuple(sorted(set(brokers)))
    if len(ordered) <= MAX_UNORDERED_BROKERS:
        return ordered_set_partitions(ordered)
    return [(ordered,), tuple((b,) for b in ordered), tuple((b,) for b in reversed(ordered))]


def _ids(block: Sequence[int]) -> str:
    return "{" + ",".join(str(b) for b in block) + "}"


def _order_label(kind: str, blocks: tuple[tuple[int, ...], ...], settle_between: bool) -> str:
    if not blocks:
        return f"no {kind}"  # none of the brokers changes state
    if len(blocks) == 1:
        return f"one {kind} {_ids(blocks[0])}"
    label = f"{kind} " + " then ".join(_ids(block) for block in blocks)
    return label + (", followers rejoining in between" if settle_between else "")


def _in_blocks(
    blocks: tuple[tuple[int, ...], ...], step: Callable[[WorkingController, set[int]], None], settle_between: bool
) -> Callable[[WorkingController], None]:
    def run(ctl: WorkingController) -> None:
        for index, block in enumerate(blocks):
            if index and settle_between:
                ctl.settle()
            step(ctl, set(block))

    return run


def _assuming_controller(controller: int, run: Callable[[WorkingController], None]) -> Callable[[WorkingController], None]:
    def assumed(ctl: WorkingController) -> None:
        ctl.controller = controller
        run(ctl)

    return assumed


def _ordered_plans(
    kind: str, blocks_list: list[tuple[tuple[int, ...], ...]], step: Callable[[WorkingController, set[int]], None]
) -> list[_Plan]:
    """Each order, then (for orders of several events) the same order with the cluster settled between
    them: whether a new leader's followers rejoin its ISR before the next event is timing."""
    plans = [_Plan(_order_label(kind, blocks, False), _in_blocks(blocks, step, False)) for blocks in blocks_list]
    plans += [
        _Plan(_order_label(kind, blocks, True), _in_blocks(blocks, step, True))
        for blocks in blocks_list
        if len(blocks) > 1
    ]
    return plans


def _failure_orders(dead: tuple[int, ...], controller: int | None) -> list[tuple[tuple[int, ...], ...]]:
    """Orders of session expiries the controller can see.  A dead controller processes nothing: the
    expiries before its own are all seen by its successor's failover (``onControllerFailover`` reads
    the live brokers once), so the controller's block is first; the rest expire later, in any order,
    and are seen by the successor (a survivor: a killed broker cannot win ``elect()``)."""
    if controller is None or controller not in dead:
        return _broker_orders(dead)
    others = tuple(b for b in dead if b != controller)
    if len(dead) > MAX_UNORDERED_BROKERS:
        return [(dead,), ((controller,),) + tuple((b,) for b in others), ((controller,),) + tuple((b,) for b in reversed(others))]
    orders: list[tuple[tuple[int, ...], ...]] = []
    for size in range(len(others), -1, -1):
        for joined in combinations(others, size):
            first = tuple(sorted((controller,) + joined))
            rest = tuple(b for b in others if b not in joined)
            orders.extend((first,) + tail for tail in _broker_orders(rest))
    return orders


def _broker_failure_plans(state: ClusterState, event: BrokerFailure) -> list[_Plan]:
    dead = tuple(sorted(set(event.brokers) & state.live_brokers))

    def fail(ctl: WorkingController, block: set[int]) -> None:
        ctl.brokers_gone(block)

    plans = _ordered_plans("BrokerChange", _failure_orders(dead, state.controller), fail)
    if state.controller is None and len(dead) <= MAX_UNORDERED_BROKERS:
        # Unknown controller (e.g. after a failover): it may be any live broker, also a dying one.
        # (Beyond MAX_UNORDERED_BROKERS it is taken to be a survivor, as in the main alternative.)
        for candidate in dead:
            for plan in _ordered_plans("BrokerChange", _failure_orders(dead, candidate), fail):
                plans.append(
                    _Plan(f"controller {candidate} among them: {plan.label}", _assuming_controller(candidate, plan.run))
                )
    return plans


def _broker_startup_plans(state: ClusterState, event: BrokerStartup) -> list[_Plan]:
    """Several brokers starting together register one by one; the controller may see them in one
    ``BrokerChange`` (``onBrokerStartup(newBrokerIdsSorted)``) or several, in any order."""
    new = tuple(sorted(set(event.brokers) - state.live_brokers))

    def start(ctl: WorkingController, block: set[int]) -> None:
        ctl.brokers_started(block)

    return _ordered_plans("BrokerChange", _broker_orders(new), start)


def _controlled_shutdown_plans(state: ClusterState, event: ControlledShutdown) -> list[_Plan]:
    def shut_down(ctl: WorkingController) -> None:
        ctl.controlled_shutdown(event.broker)

    plans = [_Plan(f"controlled shutdown of {event.broker}", shut_down)]
    if state.controller is None and event.broker in state.live_brokers:
        # Unknown controller: if it is the broker itself, its exit is a controller failover.
        plans.append(
            _Plan(f"controlled shutdown of {event.broker}, the controller", _assuming_controller(event.broker, shut_down))
        )
    return plans


def _event_plans(state: ClusterState, event: Event) -> list[_Plan]:
    if isinstance(event, BrokerFailure):
        return _broker_failure_plans(state, event)
    if isinstance(event, BrokerStartup):
        return _broker_startup_plans(state, event)
    if isinstance(event, ControlledShutdown):
        return _controlled_shutdown_plans(state, event)
    return [_Plan(getattr(event, "KIND", type(event).__name__), lambda ctl: None)]


def apply_event(
    state: ClusterState, event: Event, event_index: int = 0
) -> tuple[ClusterState, tuple[PartitionOutcome, ...]]:
    """The settled state after ``event`` and one outcome per partition the event concerns:

    * broker failure / controlled shutdown / startup: partitions with a replica on those brokers,
      partitions that lacked a live leader before, and any partition whose state changed;
    * reassign: the partition; preferred / unclean election: each requested partition;
    * auto rebalance: the partitions whose state changed; create topic: each new partition;
    * topic config change: the topic's partitions that lacked a live leader, and changed ones.

    Several brokers in one BrokerFailure / BrokerStartup are taken as one controller event here;
    :func:`apply_event_alternatives` lists every order Kafka allows.  A KRaft state gets the
    first of :func:`oracle.kraft.interleavings.iter_event_alternatives` (brokers fenced one at a
    time in ascending order).
    """
    if state.mode is Mode.KRAFT or isinstance(event, (ControllerFailover, CancelReassignment)):
        _, after, outcomes = next(iter_event_alternatives(state, event, event_index))
        return after, outcomes
    return _apply(state, event, event_index, _event_plans(state, event)[0].run)


def iter_event_alternatives(
    state: ClusterState, event: Event, event_index: int = 0
) -> Iterator[tuple[str, ClusterState, tuple[PartitionOutcome, ...]]]:
    """:func:`apply_event_alternatives`, lazily (a caller that has enough stops early).  A KRaft
    state (``state.mode``) goes to :func:`oracle.kraft.interleavings.iter_event_alternatives`."""
    if state.mode is Mode.KRAFT:
        yield from kraft.iter_event_alternatives(state, event, event_index)
        return
    if isinstance(event, ControllerFailover):
        raise ValueError(
            "ControllerFailover is a KRaft event; in ZooKeeper mode the controller is a broker: "
            "its failover is that broker's BrokerFailure or ControlledShutdown"
        )
    if isinstance(event, CancelReassignment):
        raise ValueError(
            "CancelReassignment is a KRaft event (the controller reverts the reassignment); in ZooKeeper mode a "
            "cancellation reassigns the partition to its original replicas: a Reassign to them"
        )
    seen: set[Hashable] = set()
    # A follower its topic throttles may catch up or not (WorkingController.settle): each order
    # once with it caught up, then once with it left behind.
    throttles = (False, True) if _may_throttle(state, event) else (False,)
    for throttled_behind in throttles:
        for plan in _event_plans(state, event):
            after, outcomes = _apply(state, event, event_index, plan.run, throttled_behind)
            key = state_key(after)
            if key not in seen:
                seen.add(key)
                yield plan.label + (", throttled followers behind" if throttled_behind else ""), after, outcomes


def _may_throttle(state: ClusterState, event: Event) -> bool:
    configs = [dict(ts.config) for ts in state.topics.values()]
    if isinstance(event, TopicConfigChange):
        configs.append({k: v for k, v in event.config.items() if v is not None})
    return any(FOLLOWER_THROTTLED_REPLICAS in c for c in configs)


def apply_event_alternatives(
    state: ClusterState, event: Event, event_index: int = 0
) -> tuple[tuple[str, ClusterState, tuple[PartitionOutcome, ...]], ...]:
    """Every settled state ``event`` may leave, one per legal order of the controller events it is
    made of (the first is :func:`apply_event`'s); orders leaving equal states are listed once, with
    the first label."""
    return tuple(iter_event_alternatives(state, event, event_index))


def _apply(
    state: ClusterState, event: Event, event_index: int, run_brokers: Callable[[WorkingController], None],
    throttled_behind: bool = False,
) -> tuple[ClusterState, tuple[PartitionOutcome, ...]]:
    ctl = WorkingController(state)
    before = dict(ctl.partitions)
    live_before = set(ctl.live)
    explicit: dict[TopicPartition, Outcome] | None = None
    concerned: set[TopicPartition] = set()

    if isinstance(event, (BrokerFailure, BrokerStartup, ControlledShutdown)):
        brokers = {event.broker} if isinstance(event, ControlledShutdown) else set(event.brokers)
        concerned = {tp for tp, p in before.items() if brokers & set(p.replicas)}
        concerned |= {tp for tp, p in before.items() if needs_election(p, live_before)}
        run_brokers(ctl)
    elif isinstance(event, Reassign):
        check_known(state, [event.topic_partition])
        if not event.replicas or len(set(event.replicas)) != len(event.replicas):
            raise ValueError(f"reassignment of {event.topic_partition} needs distinct replicas, got {list(event.replicas)}")
        concerned = {event.topic_partition}
        if event.topic not in ctl.deleting:
            # maybeTriggerPartitionReassignment (KafkaController.scala 3.9 lines 875-877): a topic
            # queued for deletion answers UNKNOWN_TOPIC_OR_PARTITION, nothing is written
            ctl.on_partition_reassignment(event.topic_partition, tuple(event.replicas))
    elif isinstance(event, (PreferredElection, UncleanElection)):
        check_known(state, event.partitions)
        explicit = ctl.process_replica_leader_election(event.partitions, preferred=isinstance(event, PreferredElection))
    elif isinstance(event, AutoRebalance):
        ctl.check_and_trigger_auto_leader_rebalance()
    elif isinstance(event, CreateTopic):
        if event.topic in state.topics:
            raise ValueError(f"topic {event.topic} already exists")
        concerned = set(ctl.on_new_partition_creation(event.topic, event.replicas, event.config))
    elif isinstance(event, DeleteTopic):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        concerned = {tp for tp in before if tp.topic == event.topic}
        ctl.process_topic_deletion(event.topic)
    elif isinstance(event, AddPartitions):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        existing = sorted(set(event.replicas) & set(state.topics[event.topic].partitions))
        if existing:
            raise ValueError(f"partition {event.topic}-{existing[0]} already exists")
        for number, replicas in event.replicas.items():
            if not replicas or len(set(replicas)) != len(replicas):
                raise ValueError(f"new partition {event.topic}-{number} needs distinct replicas, got {list(replicas)}")
        concerned = set(ctl.add_partitions(event.topic, event.replicas))
    elif isinstance(event, LogDirFailure):
        check_known(state, event.partitions)
        concerned = set(ctl.on_log_dir_failure(event.broker, event.partitions))
    elif isinstance(event, TopicConfigChange):
        if event.topic not in state.topics:
            raise ValueError(f"unknown topic {event.topic}")
        concerned = {tp for tp, p in before.items() if tp.topic == event.topic and needs_election(p, live_before)}
        ctl.process_topic_config_change(event.topic, event.config)
    else:
        raise TypeError(f"not an oracle event: {event!r}")

    ctl.settle(throttled_behind)
    after_state = ctl.freeze()
    after = dict(after_state.partitions())
    if explicit is None:
        concerned |= {tp for tp, p in after.items() if before.get(tp) != p}
        concerned &= set(after)  # a deleted topic's partitions have no outcome
        explicit = {
            tp: classify_outcomes(tp, before.get(tp), after[tp], ctl.live, ctl.unclean_elected) for tp in concerned
        }
    outcomes = tuple(
        PartitionOutcome(event_index, tp.topic, tp.partition, explicit[tp]) for tp in sorted(explicit)
    )
    return after_state, outcomes

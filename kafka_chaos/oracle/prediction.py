"""Run a sequence of events through the controller model, in every order Kafka allows."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain
from typing import Hashable, Sequence

from kafka_chaos.oracle.interleavings import iter_event_alternatives
from kafka_chaos.oracle.events import AutoRebalance, ControlledShutdown, Event
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.outcomes import PartitionOutcome
from kafka_chaos.oracle.release import Release, protocol_version
from kafka_chaos.oracle.state import ClusterState, state_key

MAX_ALTERNATIVES = 256
"""At most this many alternatives are kept after each event (the first ones, main first); further
distinct ones are dropped.  One BrokerFailure of k <= 4 brokers yields at most 2 * Fubini(k) orders
(times k + 1 when the controller is unknown), far below it."""


@dataclass(frozen=True)
class Alternative:
    """One legal way the events may be processed and the settled state it leaves."""

    label: str  # e.g. "one BrokerChange {2,3}", "BrokerChange {2} then {3}"; "as given" when no choice
    state: ClusterState  # settled state after the last event
    outcomes: tuple[PartitionOutcome, ...]  # every event's outcomes, in event order
    steps: tuple[ClusterState, ...]  # settled state after each event (len == len(events))


@dataclass(frozen=True)
class Prediction:
    """The main alternative (every multi-broker event seen as one controller event, the controller
    as given) in ``state``/``outcomes``/``steps``; ``alternatives[0]`` is that same alternative, the
    others are every other settled state a legal interleaving leaves, each listed once."""

    state: ClusterState  # settled state after the last event
    outcomes: tuple[PartitionOutcome, ...]  # every event's outcomes, in event order
    steps: tuple[ClusterState, ...]  # settled state after each event (len == len(events))
    alternatives: tuple[Alternative, ...] = ()

    def __post_init__(self) -> None:
        if not self.alternatives:
            main = Alternative("as given", self.state, self.outcomes, self.steps)
            object.__setattr__(self, "alternatives", (main,))

    def matching(self, state: ClusterState) -> Alternative | None:
        """The first alternative whose settled state equals ``state``, if any."""
        return next((alt for alt in self.alternatives if alt.state == state), None)


@dataclass(frozen=True)
class _Path:
    labels: tuple[str, ...]
    state: ClusterState
    outcomes: tuple[PartitionOutcome, ...]
    steps: tuple[ClusterState, ...]


def _label(labels: tuple[str, ...]) -> str:
    return "; ".join(labels) if labels else "as given"


def predict(
    state: ClusterState, events: Sequence[Event], release: Release | None = None, mode: Mode | str | None = None
) -> Prediction:
    """Apply ``events`` in order, each to the settled state the previous one left, branching where
    Kafka does not fix the order (:func:`oracle.interleavings.apply_event_alternatives`).  Branches that
    reach an equal state are merged (the first label is kept), so alternatives have distinct final
    states. ``release``: the controller's Kafka release, when not the state's own
    (``ClusterState.release``, 3.9.2 unless set).  ``mode``: which controller model decides, when
    not the state's own (``ClusterState.mode``: ZooKeeper unless set; ``Mode.KRAFT`` -> the
    KRaft quorum controller, :mod:`oracle.kraft`)."""
    if release is not None and release != state.release:
        state = replace(state, release=release)
    if mode is not None and Mode(mode) is not state.mode:
        state = replace(state, mode=Mode(mode))
    paths = [_Path((), state, (), ())]
    for index, event in enumerate(events):
        next_paths: list[_Path] = []
        seen: set[Hashable] = set()
        for path in paths:
            if len(next_paths) >= MAX_ALTERNATIVES:
                break
            choices = iter_event_alternatives(path.state, event, index)
            first = next(choices)
            second = next(choices, None)
            branched = second is not None
            for label, after, outcomes in chain((first,), () if second is None else (second,), choices):
                key = state_key(after)
                if key in seen:
                    continue
                if len(next_paths) >= MAX_ALTERNATIVES:
                    break
                seen.add(key)
                labels = path.labels
                if branched:
                    labels += (f"event {index}: {label}" if len(events) > 1 else label,)
                next_paths.append(_Path(labels, after, path.outcomes + outcomes, path.steps + (after,)))
        paths = next_paths
    paths = [_run_due_rebalance_check(path, len(events)) for path in paths]
    alternatives = tuple(_alternative_of(path) for path in paths)
    main = alternatives[0]
    return Prediction(state=main.state, outcomes=main.outcomes, steps=main.steps, alternatives=alternatives)


def _run_due_rebalance_check(path: _Path, index: int) -> _Path:
    """The leader-imbalance check a failover scheduled (``ClusterState.rebalance_check_due``), run
    on the settled state the step's last event left: five seconds is time enough for caught-up
    followers to rejoin and for a paused or restarted controller to register again."""
    if not path.state.rebalance_check_due:
        return path
    _, after, outcomes = next(iter_event_alternatives(path.state, AutoRebalance(), index))
    return _Path(path.labels, after, path.outcomes + outcomes, path.steps + (after,))


def _alternative_of(path: _Path) -> Alternative:
    return Alternative(label=_label(path.labels), state=path.state, outcomes=path.outcomes, steps=path.steps)


def leaders_ask_controller(state: ClusterState) -> bool:
    """Whether partition leaders ask the controller to change an ISR (AlterIsr, KIP-497: 2.7+ with
    IBP >= 2.7-IV2) instead of writing it to ZooKeeper themselves (2.4.1 ``Partition.updateIsr``;
    3.9 ``KafkaServer``: ``ZkAlterPartitionManager`` unless ``isAlterPartitionSupported``)."""
    return state.release.at_least(2, 7) and protocol_version(state.config, state.release).at_least(2, 7, 2)


def isr_eligibility_enforced(state: ClusterState) -> bool:
    """Whether the controller refuses an ISR that names a broker which is not live or is shutting
    down (KIP-841, KAFKA-14140): ``processAlterPartition`` takes ``isr -- liveBrokerIds``, which
    leaves out unregistered and ``shuttingDownBrokerIds`` (KafkaController.scala 3.3.2,
    "ineligibleReplicas"; 3.2.3 has no such check). Only where leaders ask the controller at
    all: IBP >= 2.7-IV2 (below it ``ZkAlterPartitionManager`` writes ZooKeeper unchecked)."""
    return state.release.at_least(3, 3) and leaders_ask_controller(state)


def epochs_determined(state: ClusterState, events: Sequence[Event]) -> bool:
    """Whether the number of leader-epoch writes follows from the events alone, on the
    controller's release. Not for a controlled shutdown where the ISR eligibility of KIP-841 is
    not enforced (:func:`isr_eligibility_enforced`): the shutting-down follower keeps fetching
    until its StopReplica lands, a leader re-adds it to the ISR (``Partition.maybeExpandIsr``),
    and its exit removes it again (OfflineReplica, one more epoch) -- a race per partition. Seen
    on 2.4.1: rolling_restart, +2 where 3.9 writes +1."""
    if not any(isinstance(e, ControlledShutdown) for e in events):
        return True
    return isr_eligibility_enforced(state)

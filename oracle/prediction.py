"""Run a sequence of events through the controller model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from oracle.controller import apply_event
from oracle.events import Event
from oracle.outcomes import PartitionOutcome
from oracle.state import ClusterState


@dataclass(frozen=True)
class Prediction:
    state: ClusterState  # settled state after the last event
    outcomes: tuple[PartitionOutcome, ...]  # every event's outcomes, in event order
    steps: tuple[ClusterState, ...]  # settled state after each event (len == len(events))


def predict(state: ClusterState, events: Sequence[Event]) -> Prediction:
    """Apply ``events`` in order, each to the settled state the previous one left."""
    steps: list[ClusterState] = []
    outcomes: list[PartitionOutcome] = []
    current = state
    for index, event in enumerate(events):
        current, event_outcomes = apply_event(current, event, index)
        steps.append(current)
        outcomes.extend(event_outcomes)
    return Prediction(state=current, outcomes=tuple(outcomes), steps=tuple(steps))

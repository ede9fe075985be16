"""Shrinking a failing schedule to a minimal one that fails the same way (delta debugging).

Candidates drop steps (Zeller's ddmin: halves, then finer chunks), then whole topics, then half
of a topic's partitions, then brokers nothing names. Each candidate is checked against the
model first (:func:`scenarios.plans.generator.problems` and the fault registry): an illegal one costs
nothing. A legal one is run on a real cluster by the caller's ``trial``; it counts as failing
only when the *same* check fails again (:data:`FailureKey`: the check and the fault it followed).
The whole search is bounded by ``budget_s`` (an injectable clock keeps it testable).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.plans.generator import problems
from kafka_chaos.scenarios.plans.schedule import Schedule
from kafka_chaos.scenarios.model.targets import Brokers, EarlierTarget

log = logging.getLogger(__name__)

FailureKey = tuple[str, str | None]  # (check, fault label)
Trial = Callable[[Schedule], frozenset[FailureKey]]


@dataclass(frozen=True)
class ShrinkResult:
    schedule: Schedule
    failure: FailureKey
    runs: int  # candidates run on a cluster
    skipped: int  # candidates the model refused
    seconds: float
    exhausted: bool  # the budget ran out before no candidate failed


def failure_keys(records: Sequence[Any]) -> frozenset[FailureKey]:
    """The failed checks of a run's records (``passed`` False), keyed for comparison."""
    return frozenset((r.check, r.fault) for r in records if r.kind == "check" and r.passed is False)


# --- candidates ---------------------------------------------------------------------------------

def _without_steps(s: Schedule, drop: set[int]) -> Schedule | None:
    """The schedule without steps ``drop`` and the steps that name a dropped one (a controller
    kill goes with the start of what it killed); earlier-step references renumbered."""
    drop = set(drop)
    for i, step in enumerate(s.steps):  # references point backwards: one pass closes the set
        if isinstance(step.target, EarlierTarget) and step.target.step in drop:
            drop.add(i)
    index: dict[int, int] = {}
    kept: list[Step] = []
    for i, step in enumerate(s.steps):
        if i in drop:
            continue
        target = step.target
        if isinstance(target, EarlierTarget):
            target = EarlierTarget(index[target.step])
        index[i] = len(kept)
        kept.append(replace(step, target=target))
    return replace(s, steps=tuple(kept))


def _step_candidates(s: Schedule) -> Iterator[Schedule]:
    n = len(s.steps)
    chunks = 2
    while chunks <= n:
        size = -(-n // chunks)
        for start in range(0, n, size):
            candidate = _without_steps(s, set(range(start, min(n, start + size))))
            if candidate is not None and candidate.steps:
                yield candidate
        chunks *= 2
    if n > 1:
        for i in range(n):  # finally one at a time (the finest ddmin granularity)
            candidate = _without_steps(s, {i})
            if candidate is not None:
                yield candidate


def _names_topic(step: Step, topic: str) -> bool:
    return step.options.get("topic") == topic


def _topic_candidates(s: Schedule) -> Iterator[Schedule]:
    if len(s.topics) < 2:
        return
    for t in s.topics:
        drop = {i for i, st in enumerate(s.steps) if _names_topic(st, t.name)}
        candidate = _without_steps(s, drop)
        if candidate is not None and candidate.steps:
            yield replace(candidate, topics=tuple(x for x in s.topics if x.name != t.name))


def _partition_candidates(s: Schedule) -> Iterator[Schedule]:
    for t in s.topics:
        n = len(t.assignment)
        if n < 2:
            continue
        keep = n // 2
        named = {int(p) for st in s.steps if _names_topic(st, t.name)
                 for p in [*(m[0] for m in st.options.get("moves", ())), *(st.options.get("partitions") or ())]}
        if any(p >= keep for p in named):
            continue
        smaller = TopicSpec(t.name, {p: r for p, r in t.assignment.items() if p < keep}, t.config)
        yield replace(s, topics=tuple(smaller if x.name == t.name else x for x in s.topics))


def _broker_candidates(s: Schedule) -> Iterator[Schedule]:
    used = {b for t in s.topics for r in t.assignment.values() for b in r}
    for st in s.steps:
        if isinstance(st.target, Brokers):
            used |= set(st.target.broker_ids)
        used |= {b for m in st.options.get("moves", ()) for b in m[1]}
    for b in s.brokers:
        if b not in used and len(s.brokers) > 1:
            yield replace(s, brokers=tuple(x for x in s.brokers if x != b))


def legal(s: Schedule, release: str | None = None) -> bool:
    try:
        s.scenario()
    except (UsageError, TypeError):
        return False
    return not problems(s, release)


# --- the search ---------------------------------------------------------------------------------

def shrink(schedule: Schedule, failure: FailureKey, trial: Trial, *, budget_s: float,
           clock: Callable[[], float] = time.monotonic,
           progress: Callable[[str], None] = lambda _: None, release: str | None = None) -> ShrinkResult:
    """Shrink ``schedule`` while ``trial`` still reports ``failure``; within ``budget_s``.
    ``release``: what the trials run on (the model's rules that depend on it), unless it pins one."""
    started = clock()
    current, runs, skipped, seen = schedule, 0, 0, {repr(schedule)}
    kinds = (_step_candidates, _topic_candidates, _partition_candidates, _broker_candidates)
    improved = True
    while improved:
        improved = False
        for candidates in kinds:
            for candidate in candidates(current):
                if clock() - started > budget_s:
                    return ShrinkResult(current, failure, runs, skipped, clock() - started, True)
                key = repr(candidate)
                if key in seen:
                    continue
                seen.add(key)
                if not legal(candidate, release):
                    skipped += 1
                    continue
                runs += 1
                if failure in trial(candidate):
                    progress(f"shrunk to {len(candidate.steps)} step(s), {len(candidate.topics)} topic(s), "
                             f"{sum(len(t.assignment) for t in candidate.topics)} partition(s), "
                             f"{len(candidate.brokers)} broker(s)")
                    current, improved = candidate, True
                    break
            if improved:
                break
    return ShrinkResult(current, failure, runs, skipped, clock() - started, False)

"""Jepsen-style timelines of scenario iterations, derived from the stored ``history.jsonl``
(records alone do not hold the clients' operations or the leaders over time).

The report draws one for every failing scenario iteration (up to :data:`MAX_FAILING`) and for a
sample of passing ones (the first :data:`PASSING_SAMPLE` in history order): fault steps as bars,
the leader of each partition over time (ZooKeeper: each step's snapshot before, every state-znode
write after the fault, the snapshot after), acknowledged produces and failed sends per second,
and the end-to-end latency (CreateTime -> first poll) of the polled messages.

:func:`timeline_of` is pure (observations in, plain data out); :func:`timelines` reads the
history files of the results directories. Old (version 1) histories give timelines without
client series.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_FAILING = 10
PASSING_SAMPLE = 3
BIN_S = 1.0

ScenarioKey = tuple[str, str, int]  # (run id, scenario, iteration)


@dataclass(frozen=True)
class Timeline:
    run_id: str
    scenario: str
    iteration: int
    failed: bool
    origin: float  # epoch s of time 0 on the plot (the scenario's first observation)
    steps: tuple[tuple[str, float, float], ...]  # (label, fault at, measured at), s from origin
    leaders: Mapping[str, tuple[tuple[float, int], ...]] = field(default_factory=dict)  # "t-p" -> (s, leader)
    acks_per_s: tuple[tuple[float, int], ...] = ()  # (bin start s, acks)
    errors_per_s: tuple[tuple[float, int], ...] = ()  # (bin start s, failed sends)
    e2e_ms: tuple[tuple[float, float], ...] = ()  # (poll s, ms) of the assign consumer's first polls

    @property
    def title(self) -> str:
        return f"{self.scenario}#{self.iteration} ({'FAILED' if self.failed else 'passed'}, run {self.run_id})"


def timeline_of(observations: Sequence[Any], failed: bool) -> Timeline:
    """The timeline of one scenario iteration's observations (``scenarios.history.observations`` objects)."""
    from kafka_chaos.scenarios.clients.ops import ASSIGN
    from kafka_chaos.scenarios.history.observations import ScenarioFinished, StepObserved

    first = observations[0]
    origin = float(getattr(first, "started_at", getattr(first, "at", 0.0)))
    steps: list[tuple[str, float, float]] = []
    leaders: dict[str, list[tuple[float, int]]] = {}
    acks: dict[int, int] = {}
    errors: dict[int, int] = {}
    e2e: list[tuple[float, float]] = []
    seen: set[str] = set()
    topics = set(first.run.topics)

    def leader_at(name: str, at: float, leader: int) -> None:
        series = leaders.setdefault(name, [])
        if not series or series[-1][1] != leader:
            series.append((at - origin, leader))

    for obs in observations:
        if isinstance(obs, StepObserved):
            if obs.index is not None:
                steps.append((obs.label, obs.fault_at - origin, obs.measured_at - origin))
            for (t, p), s in sorted(obs.before.partitions.items()):
                if t in topics:
                    leader_at(f"{t}-{p}", obs.before.taken_at, s.leader)
            for event in obs.partition_state_writes():
                if event.topic in topics:
                    leader_at(f"{event.topic}-{event.partition}", event.at, event.leader)
            if obs.after is not None:
                for (t, p), s in sorted(obs.after.partitions.items()):
                    if t in topics:
                        leader_at(f"{t}-{p}", obs.after.taken_at, s.leader)
        if isinstance(obs, (StepObserved, ScenarioFinished)):
            for ops in obs.ops.values():
                for a in ops.acks:
                    b = math.floor((a.acked_at - origin) / BIN_S)
                    acks[b] = acks.get(b, 0) + 1
                for f in ops.failed:
                    b = math.floor((f.at - origin) / BIN_S)
                    errors[b] = errors.get(b, 0) + 1
                for poll in ops.polls:
                    if poll.consumer == ASSIGN and poll.created_at is not None and poll.key not in seen:
                        seen.add(poll.key)
                        e2e.append((poll.polled_at - origin, max(0.0, (poll.polled_at - poll.created_at) * 1000)))
    for name in leaders:
        leaders[name].sort()
    bins = range(min([*acks, *errors, 0]), max([*acks, *errors, -1]) + 1)  # dense: a silent second is a 0
    return Timeline(first.run.run_id, first.run.scenario, first.run.iteration, failed, origin, tuple(steps),
                    {k: tuple(v) for k, v in sorted(leaders.items())},
                    tuple((b * BIN_S, acks.get(b, 0)) for b in bins),
                    tuple((b * BIN_S, errors[b]) for b in sorted(errors)), tuple(sorted(e2e)))


def timelines(results_dirs: Iterable[Path], failing: Iterable[ScenarioKey], *, max_failing: int = MAX_FAILING,
              passing_sample: int = PASSING_SAMPLE) -> list[Timeline]:
    """Timelines of the failing scenario iterations and a sample of passing ones, from every
    ``history.jsonl`` of ``results_dirs`` (a damaged line is skipped, as ``kafka-chaos check`` does)."""
    return choose_timelines(load_histories(results_dirs), failing, max_failing=max_failing,
                            passing_sample=passing_sample)


HistoryGroups = Mapping[ScenarioKey, Sequence[str]]  # each scenario iteration's history lines, in order


def load_histories(results_dirs: Iterable[Path]) -> list[HistoryGroups]:
    """Each ``history.jsonl`` of ``results_dirs``, its lines grouped per scenario iteration (the
    report reads them while Spark aggregates: it needs no aggregate).  Lines stay text: only the
    few iterations drawn are turned into observations (:func:`choose_timelines`) — building
    every observation of a one-run history (125 lines, 11.7 MB) cost 1.8 of the 3.1 CPU-s
    reading it took.  A line that is not JSON is skipped here, one that is not
    an observation when its iteration is drawn, as ``read_history`` skips both."""
    import json

    from kafka_chaos.scenarios.history.observations import HISTORY_FILE

    loaded: list[HistoryGroups] = []
    for directory in results_dirs:
        path = Path(directory) / HISTORY_FILE
        if not path.is_file():
            continue
        groups: dict[ScenarioKey, list[str]] = {}
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    run = json.loads(line)["run"]
                    key = (str(run["run_id"]), str(run["scenario"]), int(run["iteration"]))
                except (ValueError, KeyError, TypeError):
                    continue
                groups.setdefault(key, []).append(line)
        loaded.append(groups)
    return loaded


def _observations(lines: Sequence[str]) -> list[Any]:
    """The observations of one iteration's lines, skipping the unreadable ones (``read_history``)."""
    from kafka_chaos.scenarios.history.observations import observation_from_json

    observations = []
    for line in lines:
        try:
            observations.append(observation_from_json(line))
        except (ValueError, KeyError, TypeError):
            continue
    return observations


def choose_timelines(histories: Iterable[HistoryGroups], failing: Iterable[ScenarioKey], *,
                     max_failing: int = MAX_FAILING, passing_sample: int = PASSING_SAMPLE) -> list[Timeline]:
    wanted = set(failing)
    chosen: list[Timeline] = []
    passing = 0
    for groups in histories:
        for key, group in groups.items():
            failed = key in wanted
            if failed and sum(t.failed for t in chosen) >= max_failing:
                continue
            if not failed and passing >= passing_sample:
                continue
            observations = _observations(group)
            if observations:
                passing += not failed
                chosen.append(timeline_of(observations, failed))
    return sorted(chosen, key=lambda t: (not t.failed, t.run_id, t.scenario, t.iteration))

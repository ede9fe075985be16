"""One fault step on a cluster somebody else runs (a user's pytest suite), checked like a
scenario step: wait until settled, ask the oracle about the state observed *before*, inject,
wait (bounded) for one of the predicted outcomes, ask every broker's metadata, then run the
check registry over the observation. No workload: clients are the caller's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from kafka_chaos.harness.cluster import ChaosCluster
from kafka_chaos.harness.observers import Observer
from kafka_chaos.oracle import predict
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.checks.expectations import Predictor
from kafka_chaos.scenarios.faults import Nemesis
from kafka_chaos.scenarios.history.observations import ScenarioRun, StepObserved
from kafka_chaos.scenarios.run.step import StepCore, StepNaming, StepTimeouts
from kafka_chaos.scenarios.model.targets import Target

ProbeTimeouts = StepTimeouts  # the name the pytest plugin's users know


@dataclass(frozen=True)
class StepVerdict:
    """What one probed step observed and what the checks said of it."""

    observation: StepObserved
    results: tuple[CheckResult, ...]

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.is_measurement and r.passed is not True]

    @property
    def passed(self) -> bool:
        return not self.failures

    def describe(self) -> str:
        if self.passed:
            return f"{self.observation.label}: every check passed"
        return f"{self.observation.label}: " + "; ".join(f"{r.check} {r.verdict}: {r.detail}" for r in self.failures)

    def assert_ok(self) -> None:
        """Raise AssertionError naming every failed or unknown check (for plain ``assert``-style tests)."""
        if not self.passed:
            raise AssertionError(self.describe())


@dataclass
class Probe:
    """Steps against one running cluster, sharing its nemesis (faults held across steps) and
    the targets earlier steps hit (``EarlierTarget``); observed as the runner observes a
    scenario's steps (:class:`scenarios.run.step.StepCore`), without a workload."""

    cluster: ChaosCluster
    observer: Observer
    nemesis: Nemesis
    topics: Sequence[str]
    run: ScenarioRun
    predictor: Predictor = predict
    timeouts: StepTimeouts = StepTimeouts()
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    targets: list[Target] = field(default_factory=list)
    checks: CheckContext = field(default_factory=CheckContext)

    def step(self, step: Step, topic_partitions: dict[str, Sequence[int]] | None = None) -> StepVerdict:
        label = f"step {len(self.targets) + 1} {step.fault}"
        topics = list(self.topics)
        naming = StepNaming({t: t for t in topics}, topic_partitions, self.rng, self.targets)
        core = StepCore(self.cluster, self.observer, self.nemesis, topics, self.predictor, naming, self.timeouts)
        prepared = core.prepare(label, step)
        obs = core.observe(self.run, len(self.targets) - 1, prepared)
        self.checks.remember(obs, prepared.options)
        results = evaluate(obs, self.checks)
        self.checks.earlier.append(obs)
        return StepVerdict(obs, tuple(results))

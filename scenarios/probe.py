"""One fault step on a cluster somebody else runs (a user's pytest suite), checked like a
scenario step: wait until settled, ask the oracle about the state observed *before*, inject,
wait (bounded) for one of the predicted outcomes, ask every broker's metadata, then run the
check registry over the observation. No workload: clients are the caller's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from common.errors import HarnessError
from oracle import AutoRebalance, predict
from scenarios.catalogue import Step
from scenarios.checkers import CheckContext, evaluate
from scenarios.checks import CheckResult
from scenarios.expectations import Predictor, expectations, matching
from scenarios.faults import Fault, Nemesis, make_fault
from scenarios.history import FaultTraits, MetadataAnswer, ScenarioRun, StepObserved
from scenarios.observation import cluster_state_of, is_settled, observed_partitions, unsettled
from scenarios.poller import MetadataPoller
from scenarios.targets import Target, view_of

INTERNAL_TOPICS = ("__consumer_offsets",)


@dataclass(frozen=True)
class ProbeTimeouts:
    settle: float = 90.0
    convergence: float = 90.0
    metadata: float = 20.0


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


def traits_of(fault: Fault) -> FaultTraits:
    return FaultTraits(fault.kind, fault.label, fault.exact_epochs, fault.client_windows, fault.isr_rule,
                       tuple(fault.holds), tuple(fault.releases))


@dataclass
class Probe:
    """Steps against one running cluster, sharing its nemesis (faults held across steps) and
    the targets earlier steps hit (``EarlierTarget``)."""

    cluster: Any
    observer: Any
    nemesis: Nemesis
    topics: Sequence[str]
    run: ScenarioRun
    predictor: Predictor = predict
    timeouts: ProbeTimeouts = ProbeTimeouts()
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    targets: list[Target] = field(default_factory=list)
    checks: CheckContext = field(default_factory=CheckContext)

    def step(self, step: Step, topic_partitions: dict[str, Sequence[int]] | None = None) -> StepVerdict:
        from harness.observer import ConvergenceTimeout

        label = f"step {len(self.targets) + 1} {step.fault}"
        topics = list(self.topics)
        oracle_topics = topics + list(INTERNAL_TOPICS)
        started = time.time()
        excused = self.nemesis.faulted_brokers
        try:
            before_snap = self.observer.wait_until(lambda s: is_settled(s, oracle_topics, excused),
                                                   timeout=self.timeouts.settle,
                                                   description=f"a settled state before {label}")
        except ConvergenceTimeout as exc:
            why = "; ".join(unsettled(exc.last, oracle_topics, excused)) if exc.last else str(exc)
            raise HarnessError(f"not settled before {label}: {why}") from exc
        before = self.nemesis.with_offline_replicas(cluster_state_of(before_snap, oracle_topics,
                                                                     dict(self.cluster.broker_settings())))
        target = step.target.resolve(view_of(before_snap, self.cluster.broker_ids), self.rng, self.targets)
        self.targets.append(target)
        parts = topic_partitions or {t: sorted(p for (name, p) in before_snap.partitions if name == t) for t in topics}
        fault = make_fault(step.fault, target, step.options, topic_names={t: t for t in topics},
                           topic_partitions=parts)
        events = self.nemesis.prepare(fault, before) + [AutoRebalance() for n in step.then if n == "auto_rebalance"]
        options = expectations(self.predictor, before, events, rule=fault.isr_rule, rule_brokers=target.brokers,
                               topics=topics)
        episode = self.nemesis.episode_start(fault)
        with MetadataPoller(self.cluster, self.cluster.broker_ids, topics) as poller:
            fault_at = self.nemesis.inject(fault)
            try:
                after = self.observer.wait_until(lambda s: matching(s, options, topics) is not None,
                                                 timeout=self.timeouts.convergence,
                                                 description=f"the predicted state after {label}")
                converged = True
            except ConvergenceTimeout as exc:
                after, converged = exc.last, False
            waited = time.time() - fault_at
            metadata: dict[int, MetadataAnswer] | None = None
            if converged and after is not None:
                asked = [b for b in sorted(after.live_brokers) if b not in self.nemesis.faulted_brokers]
                metadata = poller.wait_agreement(observed_partitions(after, topics), asked,
                                                 timeout=self.timeouts.metadata)
            measured_at = time.time()
            sightings = poller.sightings_by_partition(since=fault_at)
        obs = StepObserved(
            self.run, len(self.targets) - 1, label, traits_of(fault), target, tuple(step.then), started, before_snap,
            before, tuple(events), fault_at, episode if episode is not None else fault_at, after, waited,
            self.timeouts.convergence, tuple(sorted(self.nemesis.faulted_brokers)), metadata, sightings,
            tuple(self.observer.events_since(fault_at)), {}, measured_at, time.time())
        self.checks.remember(obs, options)
        results = evaluate(obs, self.checks)
        self.checks.earlier.append(obs)
        return StepVerdict(obs, tuple(results))

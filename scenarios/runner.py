"""Run catalogue scenarios against a real cluster, checked against the oracle.

Per scenario iteration:

1. get a cluster with the scenario's needs (:class:`ClusterPool` reuses one cluster across
   scenarios with equal needs, restoring it in between: every stopped broker started, a
   healthy settled state awaited; a cluster that cannot be restored is recreated);
2. create the topics with their explicit assignment — itself checked against the oracle's
   ``CreateTopic`` — and start the workload (idempotent ``acks=all`` producer);
3. for each step: wait (ZK watches, bounded) until the cluster is *settled*, build the oracle's
   input from that observation — the state BEFORE the fault, never anything later — resolve
   the target with the seeded RNG, ask the oracle, inject, wait (watches, bounded) for the
   predicted state (a timeout is a failure carrying the last observed state), wait for every
   broker's metadata to agree, then run the checks and measure the latency per partition whose
   leader moved;
4. stop the workload, heal every fault, wait until settled, read every acknowledged message
   back (loss tolerated only where the oracle predicted an unclean election), delete the
   topics; failed scenarios get their node logs copied to ``RESULTS_DIR/logs/<scenario>-<i>/``.

Every check and measurement becomes one record, written (and fsync'ed) as soon as it exists.
"""

from __future__ import annotations

import logging
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from oracle import AutoRebalance, CreateTopic, Prediction, predict
from results.schema import Record
from scenarios import isr_rules
from scenarios import latency as lat
from scenarios.catalogue import ClusterNeeds, Scenario, Step
from scenarios.checks import (
    CheckResult,
    check_converged,
    check_delivery,
    check_isr_rule,
    check_metadata_agrees,
    check_safe,
    check_single_controller,
    compare_partitions,
)
from scenarios.faults import FaultEnv, Nemesis, NetworkHeal, NetworkPartition, fault_label, make_fault
from scenarios.observation import (
    cluster_state_of,
    is_settled,
    matches_prediction,
    mismatches,
    observed_partitions,
    predicted_partitions,
    unsettled,
)
from scenarios.targets import Target, view_of

log = logging.getLogger(__name__)

INTERNAL_TOPICS = ("__consumer_offsets",)
SESSION_TIMEOUT_KEY = "zookeeper.session.timeout.ms"

# Fault kinds on whose path the oracle models every controller write, so the predicted leader
# epoch is exact (kafka-3.9-zk-controller.md §2.1–2.3, 2.6, 2.7). Elsewhere (controller
# failover: removal + election = +2; reassignment phases; auto-rebalance timing) the check is
# "strictly increased where an election happened".
EXACT_EPOCH_KINDS = frozenset({"hard_kill", "controlled_shutdown", "start", "restart", "pause",
                               "preferred_election", "unclean_election", "network_partition"})

Progress = Callable[[str], None]
Predictor = Callable[[Any, Sequence[Any]], Prediction]


@dataclass
class RunOptions:
    run_id: str
    seed: int = 0
    backend: str = "local"
    iterations: int = 1
    results_dir: Path = Path("results")
    kafka_version: str = "3.9.2"
    git_revision: str | None = None
    rate_per_partition: float = 20.0
    settle_timeout: float = 90.0
    convergence_timeout: float = 90.0
    metadata_timeout: float = 20.0
    verify_timeout: float = 60.0
    # Network partitions: how long a cut (or heal) step waits for the clients to get acks again
    # (a cut leader's clients hang until their own timeouts: socket.timeout.ms is 10 s).
    client_recovery_timeout: float = 45.0


@dataclass
class ScenarioOutcome:
    scenario: str
    iteration: int
    seconds: float
    results: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    latencies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.results) and all(r.passed is True for r in self.results)

    @property
    def counts(self) -> tuple[int, int, int]:
        return (sum(r.passed is True for r in self.results), sum(r.passed is False for r in self.results),
                sum(r.passed is None for r in self.results))


class ScenarioAborted(HarnessError):
    """A scenario could not go on (the cluster never settled, the oracle refused the input)."""


# --- clusters ---------------------------------------------------------------------------------

class ClusterPool:
    """One cluster at a time (2-core machine), reused while the needs stay the same."""

    def __init__(self, backend: str, distribution: Any, progress: Progress,
                 open_cluster: Callable[..., Any] | None = None, settle_timeout: float = 90.0) -> None:
        self.backend = backend
        self.distribution = distribution
        self.progress = progress
        self._open = open_cluster
        self.settle_timeout = settle_timeout
        self.cluster: Any = None
        self.needs: ClusterNeeds | None = None
        self._partition_problem: tuple[str | None] | None = None

    def partition_problem(self) -> str | None:
        """None when this pool's clusters can be cut (``harness.cluster.NetworkPartitioner``),
        else why not (one line); asked once (``auto`` pings the Docker engine)."""
        from harness.cluster import NetworkPartitioner

        if self.cluster is not None and not isinstance(self.cluster, NetworkPartitioner):
            return f"needs --backend containers: the {self.cluster.backend} launcher cannot cut a broker's network"
        if self._open is not None:  # a caller-supplied launcher: its faults will tell
            return None
        if self._partition_problem is None:
            from harness.backends import network_partition_problem

            self._partition_problem = (network_partition_problem(self.backend),)
        return self._partition_problem[0]

    def acquire(self, needs: ClusterNeeds) -> Any:
        if self.cluster is not None and self.needs == needs:
            try:
                self.restore()
                return self.cluster
            except HarnessError as exc:
                self.progress(f"cluster could not be restored ({exc}); recreating it")
        self.release()
        from harness.config import ClusterConfig

        config = ClusterConfig(brokers=needs.brokers, cluster_overrides=needs.overrides_dict)
        opener = self._open
        if opener is None:
            from harness.backends import open_cluster as opener
        self.progress(f"starting a {self.backend} cluster: {needs.describe()}")
        cluster = opener(self.backend, config, self.distribution)
        cluster.__enter__()  # starts; cleans up itself when starting fails
        self.cluster, self.needs = cluster, needs
        return cluster

    def restore(self) -> None:
        """Start every stopped broker and wait for all registered, a controller, and settled
        internal topics."""
        from harness.observer import ConvergenceTimeout, ZkObserver

        cluster = self.cluster
        for b in cluster.broker_ids:
            if not cluster.broker_running(b):
                self.progress(f"restoring: starting broker {b}")
                cluster.start_broker(b)
        wanted = set(cluster.broker_ids)
        with ZkObserver(cluster.zookeeper_connect, topics=list(INTERNAL_TOPICS)) as observer:
            try:
                observer.wait_until(
                    lambda s: set(s.live_brokers) == wanted and s.controller in wanted
                    and is_settled(s, INTERNAL_TOPICS),
                    timeout=self.settle_timeout, description="every broker registered and settled")
            except ConvergenceTimeout as exc:
                raise HarnessError(f"cluster not healthy: {exc}") from exc

    def release(self) -> None:
        cluster, self.cluster, self.needs = self.cluster, None, None
        if cluster is not None:
            try:
                cluster.__exit__(None, None, None)
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                log.warning("destroying the cluster failed: %s", exc)


# --- broker metadata polling ---------------------------------------------------------------

class MetadataPoller:
    """Polls each broker's metadata cache in a background thread per broker (bounded calls),
    recording when each broker first showed each leader — the ``propagation`` phase — and the
    latest full view for the agreement check."""

    def __init__(self, cluster: Any, brokers: Iterable[int], topics: Sequence[str], interval: float = 0.2) -> None:
        self.cluster = cluster
        self.brokers = sorted(brokers)
        self.topics = list(topics)
        self.interval = interval
        self.sightings: list[tuple[float, int, tuple[str, int], int]] = []
        self.latest: dict[int, Any] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> MetadataPoller:
        for b in self.brokers:
            t = threading.Thread(target=self._poll, args=(b,), name=f"metadata-poll-{b}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _poll(self, broker: int) -> None:
        from harness.metadata import broker_view

        while not self._stop.is_set():
            if not self.cluster.broker_running(broker):  # killed or not started yet
                self._stop.wait(self.interval)
                continue
            try:
                bootstrap = self.cluster.endpoint(broker).bootstrap
                view: Any = broker_view(bootstrap, self.topics, timeout=2.0)
                at = time.time()
            except Exception as exc:  # noqa: BLE001 - a dead broker simply does not answer
                view, at = exc, time.time()
            with self._cond:
                self.latest[broker] = view
                if not isinstance(view, BaseException):
                    for key, md in view.items():
                        self.sightings.append((at, broker, key, md.leader))
                self._cond.notify_all()
            self._stop.wait(self.interval)

    def sightings_of(self, key: tuple[str, int]) -> list[tuple[float, int, int]]:
        with self._cond:
            return [(at, b, leader) for at, b, k, leader in self.sightings if k == key]

    def wait_agreement(self, zk_partitions: Mapping[tuple[str, int], Any], brokers: Iterable[int],
                       timeout: float) -> dict[int, Any]:
        """Until every broker's latest view agrees with ZooKeeper (bounded); the views."""
        wanted = sorted(brokers)
        deadline = time.monotonic() + timeout

        def agreed() -> bool:
            for b in wanted:
                view = self.latest.get(b)
                if view is None or isinstance(view, BaseException):
                    return False
                if check_metadata_agrees(zk_partitions, {b: view}).passed is not True:
                    return False
            return True

        with self._cond:
            self._cond.wait_for(agreed, timeout=max(0.0, deadline - time.monotonic()))
            return {b: self.latest.get(b, HarnessError("no answer")) for b in wanted}

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)


# --- the runner -------------------------------------------------------------------------------

class Runner:
    def __init__(self, options: RunOptions, pool: ClusterPool, writer: Any, progress: Progress,
                 predictor: Predictor = predict) -> None:
        self.options = options
        self.pool = pool
        self.writer = writer
        self.progress = progress
        self.predictor = predictor

    # records -------------------------------------------------------------------------------

    def _record(self, ctx: _Context, kind: str, check: str, passed: bool | None, started_at: float,
                **fields: Any) -> None:
        record = Record(
            run_id=self.options.run_id, scenario=ctx.scenario.name, iteration=ctx.iteration,
            seed=self.options.seed, backend=self.options.backend, kafka_version=self.options.kafka_version,
            brokers=ctx.scenario.needs.brokers, partitions=ctx.partitions, kind=kind,  # type: ignore[arg-type]
            check=check, passed=passed, started_at=started_at, finished_at=time.time(),
            git_revision=self.options.git_revision, session_timeout_ms=ctx.session_timeout_ms,
            tick_time_ms=ctx.tick_time_ms, **fields)
        self.writer.write(record)

    def _record_checks(self, ctx: _Context, results: Iterable[CheckResult], started_at: float,
                       fault: str | None, target: str | None) -> None:
        for r in results:
            ctx.outcome.results.append(r)
            self._record(ctx, "check", r.check, r.passed, started_at, fault=fault, target=target,
                         expected=r.expected, observed=r.observed, detail=r.detail, topic=r.topic,
                         partition=r.partition)

    # one scenario ----------------------------------------------------------------------------

    def run(self, scenario: Scenario, iteration: int) -> ScenarioOutcome:
        started = time.monotonic()
        outcome = ScenarioOutcome(scenario.name, iteration, 0.0)
        problem = self.pool.partition_problem() if scenario.network_partitions else None
        if problem is not None:
            return self._skip(scenario, outcome, problem)
        interrupted = False
        ctx: _Context | None = None
        try:
            cluster = self.pool.acquire(scenario.needs)
            ctx = _Context.build(scenario, iteration, cluster, outcome, self.options)
            self._run_in(ctx)
        except KeyboardInterrupt:
            interrupted = True
            outcome.error = "interrupted"
            raise
        except HarnessError as exc:
            outcome.error = str(exc)
            self.progress(f"{scenario.name}#{iteration}: aborted: {exc}")
            if ctx is not None:
                self._record(ctx, "check", "scenario_completed", False, ctx.started_at, detail=str(exc))
        finally:
            outcome.seconds = time.monotonic() - started
            if not interrupted and not outcome.passed and self.pool.cluster is not None:
                self._collect_logs(scenario.name, iteration)
        return outcome

    def _skip(self, scenario: Scenario, outcome: ScenarioOutcome, why: str) -> ScenarioOutcome:
        """A scenario this backend cannot run: one unknown verdict saying why, no cluster."""
        self.progress(f"{scenario.name}#{outcome.iteration}: skipped: {why}")
        result = CheckResult("backend_supports_scenario", None, "network partitions", self.options.backend, why)
        outcome.results.append(result)
        now = time.time()
        self.writer.write(Record(
            run_id=self.options.run_id, scenario=scenario.name, iteration=outcome.iteration,
            seed=self.options.seed, backend=self.options.backend, kafka_version=self.options.kafka_version,
            brokers=scenario.needs.brokers, partitions=sum(len(t.assignment) for t in scenario.topics),
            kind="check", check=result.check, passed=None, started_at=now, finished_at=now,
            git_revision=self.options.git_revision, expected=result.expected, observed=result.observed,
            detail=why))
        return outcome

    def _run_in(self, ctx: _Context) -> None:
        from harness.observer import ZkObserver

        cluster = ctx.cluster
        watched = list(ctx.topic_names.values()) + list(INTERNAL_TOPICS)
        with ZkObserver(cluster.zookeeper_connect, topics=watched) as observer:
            ctx.observer = observer
            nemesis = Nemesis(FaultEnv(cluster, observer, ctx.session_timeout_ms, ctx.tick_time_ms))
            workloads = ctx.workloads
            interrupted = False
            try:
                self._create_topics(ctx)
                self._start_workloads(ctx)
                for index, step in enumerate(ctx.scenario.steps):
                    self._run_step(ctx, nemesis, index, step)
            except KeyboardInterrupt:
                interrupted = True  # leave at once: the pool destroys the cluster
                raise
            finally:
                for w in workloads.values():
                    try:
                        w.stop(drain_timeout=2.0 if interrupted else 5.0)
                    except Exception as exc:  # noqa: BLE001 - recorded below as unknown delivery
                        ctx.workload_errors[w.topic] = str(exc)
                if not interrupted:
                    self._step_progress(ctx, "healing")
                    for err in nemesis.heal_all():
                        ctx.outcome.error = ctx.outcome.error or f"heal failed: {err}"
            self._finish(ctx)

    def _finish(self, ctx: _Context) -> None:
        """After healing: settled again, then the delivery check, then topic deletion."""
        started = time.time()
        try:
            self.pool.restore()
            ctx.observer.wait_until(lambda s: is_settled(s, ctx.physical_topics), timeout=self.options.settle_timeout,
                                    description="settled after healing")
        except HarnessError as exc:
            self._record_checks(ctx, [CheckResult("healed", False, "settled", None, str(exc))], started, None, None)
            return
        for physical, w in ctx.workloads.items():
            if physical in ctx.workload_errors:
                results = [CheckResult("delivery", None, detail=f"workload failed: {ctx.workload_errors[physical]}",
                                       topic=physical)]
            else:
                self._step_progress(ctx, f"reading {physical} back")
                unclean = sorted(ctx.unclean.get(physical, ()))
                try:
                    report = w.verify(timeout=self.options.verify_timeout)
                except HarnessError as exc:
                    results = [CheckResult("delivery", None, detail=f"could not read back: {exc}", topic=physical)]
                else:
                    results = check_safe("delivery", check_delivery, physical, report, unclean, topic=physical)
            self._record_checks(ctx, results, started, None, None)
        try:
            from harness.metadata import delete_topics

            delete_topics(ctx.cluster.bootstrap_servers, ctx.physical_topics, timeout=15.0)
        except HarnessError as exc:
            log.info("deleting topics %s: %s", ctx.physical_topics, exc)

    # topics and workload -------------------------------------------------------------------

    def _create_topics(self, ctx: _Context) -> None:
        from harness.metadata import create_topic
        from harness.observer import ConvergenceTimeout

        self._step_progress(ctx, "creating topics")
        started = time.time()
        snapshot = ctx.observer.snapshot()
        before = cluster_state_of(snapshot, ctx.physical_topics, ctx.broker_config)
        events = [CreateTopic(ctx.topic_names[t.name], {p: tuple(r) for p, r in t.assignment.items()}, dict(t.config))
                  for t in ctx.scenario.topics]
        prediction = self.predictor(before, events)
        for t in ctx.scenario.topics:
            create_topic(ctx.cluster.bootstrap_servers, ctx.topic_names[t.name], t.assignment, t.config)
        try:
            after = ctx.observer.wait_until(
                lambda s: matches_prediction(s, prediction.state, ctx.physical_topics)
                and is_settled(s, ctx.physical_topics),
                timeout=self.options.settle_timeout, description="the created topics' predicted state")
            converged = True
        except ConvergenceTimeout as exc:
            after, converged = exc.last, False
        results = self._compare(ctx, "create_topic", snapshot, prediction, after, converged, exact=True,
                                since=started)
        self._record_checks(ctx, results, started, "create_topic", "cluster")
        if not converged:
            raise ScenarioAborted("the topics never reached their predicted initial state")

    def _start_workloads(self, ctx: _Context) -> None:
        from scenarios.workload import Workload

        for t in ctx.scenario.topics:
            physical = ctx.topic_names[t.name]
            w = Workload(ctx.cluster.bootstrap_servers, physical, list(t.partitions),
                         rate_per_partition=self.options.rate_per_partition,
                         client_id=f"kafka-chaos-{ctx.scenario.name}")
            ctx.workloads[physical] = w
            w.start()
        for w in ctx.workloads.values():  # the workload is really flowing before any fault
            w.wait_for_acks(timeout=30.0)

    # steps ----------------------------------------------------------------------------------

    def _run_step(self, ctx: _Context, nemesis: Nemesis, index: int, step: Step) -> None:
        from harness.observer import ConvergenceTimeout

        n = len(ctx.scenario.steps)
        variant = step.options.get("variant")
        label = f"step {index + 1}/{n} {step.fault}" + (f"/{variant}" if variant else "")
        self._step_progress(ctx, f"{label}: waiting for a settled state")
        started = time.time()
        oracle_topics = ctx.physical_topics + [t for t in INTERNAL_TOPICS]
        # A follower cut off from its peers is live but cannot catch up until healed.
        excused = nemesis.faulted_brokers
        try:
            before_snap = ctx.observer.wait_until(lambda s: is_settled(s, oracle_topics, excused),
                                                  timeout=self.options.settle_timeout,
                                                  description=f"a settled state before {label}")
        except ConvergenceTimeout as exc:
            why = "; ".join(unsettled(exc.last, oracle_topics, excused)) if exc.last else str(exc)
            raise ScenarioAborted(f"not settled before {label}: {why}") from exc
        before = cluster_state_of(before_snap, oracle_topics, ctx.broker_config)
        selector = step.target
        if isinstance(getattr(selector, "topic", None), str):  # logical topic -> this iteration's topic
            selector = replace(selector, topic=ctx.topic_names.get(selector.topic, selector.topic))
        target = selector.resolve(view_of(before_snap, ctx.cluster.broker_ids), ctx.rng, ctx.history)
        ctx.history.append(target)
        fault = make_fault(step.fault, target, step.options, topic_names=ctx.topic_names,
                           topic_partitions={t.name: t.partitions for t in ctx.scenario.topics})
        events = list(fault.oracle_events()) + [AutoRebalance() for name in step.then if name == "auto_rebalance"]
        try:
            prediction = self.predictor(before, events)
        except Exception as exc:  # noqa: BLE001 - an oracle that cannot answer decides nothing
            raise ScenarioAborted(f"the oracle could not predict {label} ({type(exc).__name__}: {exc})") from exc
        rule: str | None = getattr(fault, "isr_rule", None)
        ruled: list[tuple[str, int]] = []
        if rule is not None:  # leader-side ISR changes: a documented rule on top of the oracle
            expected = isr_rules.apply_rule(rule, prediction.state, target.brokers)
            ruled = isr_rules.changed_partitions(prediction.state, expected, ctx.physical_topics)
            prediction = replace(prediction, state=expected)
        for (t, p), ps in predicted_partitions(prediction.state, ctx.physical_topics).items():
            if any(o.topic == t and o.partition == p and getattr(o.outcome, "value", o.outcome) == "unclean_elected"
                   for o in prediction.outcomes):
                ctx.unclean.setdefault(t, set()).add(p)

        self._step_progress(ctx, f"{label} on {target.description}")
        poll_brokers = [b for b in ctx.cluster.broker_ids]
        poller = MetadataPoller(ctx.cluster, poll_brokers, ctx.physical_topics).start()
        try:
            fault_at = nemesis.inject(fault)
            try:
                after = ctx.observer.wait_until(
                    lambda s: matches_prediction(s, prediction.state, ctx.physical_topics),
                    timeout=self.options.convergence_timeout, description=f"the predicted state after {label}")
                converged = True
            except ConvergenceTimeout as exc:
                after, converged = exc.last, False
            self._step_progress(ctx, f"{label}: {'converged' if converged else 'DID NOT converge'} "
                                     f"in {time.time() - fault_at:.1f}s")
            exact = (fault.kind in EXACT_EPOCH_KINDS and not step.then
                     and before.controller is not None and before.controller not in target.brokers)
            # Brokers a fault still holds (a cut broker) cannot receive UpdateMetadata: their
            # metadata is stale by design, so it is not compared.
            results = self._compare(ctx, label, before_snap, prediction, after, converged, exact=exact,
                                    since=fault_at, poller=poller, target=target,
                                    exempt=nemesis.faulted_brokers)
            if rule is not None and after is not None:
                results += self._rule_checks(rule, ruled, before_snap, prediction, after)
            self._record_checks(ctx, results, started, fault_label(fault), target.description)
            if isinstance(fault, (NetworkPartition, NetworkHeal)):
                self._wait_for_clients(ctx, fault, target, before_snap, prediction, fault_at)
            self._measure(ctx, fault_label(fault), target, before_snap, prediction, after, fault_at, poller, started)
            if isinstance(fault, (NetworkPartition, NetworkHeal)):
                self._measure_client_windows(ctx, fault, target, before_snap, prediction, after, fault_at, started)
        finally:
            poller.stop()

    def _compare(self, ctx: _Context, label: str, before_snap: Any, prediction: Prediction, after: Any,
                 converged: bool, *, exact: bool, since: float, poller: MetadataPoller | None = None,
                 target: Target | None = None, exempt: Iterable[int] = ()) -> list[CheckResult]:
        topics = ctx.physical_topics
        if after is None:
            return [check_converged(label, False, self.options.convergence_timeout, "no snapshot could be read")]
        last = "; ".join(mismatches(after, prediction.state, topics)) if not converged else ""
        results = [check_converged(f"the predicted state after {label}", converged, time.time() - since, last)]
        results += compare_partitions(observed_partitions(before_snap, topics),
                                      predicted_partitions(prediction.state, topics),
                                      observed_partitions(after, topics), prediction.outcomes,
                                      exact_epochs=exact)
        live = sorted(after.live_brokers)
        controller_hit = target is not None and before_snap.controller in target.brokers
        allowed = None if controller_hit or prediction.state.controller is None else [prediction.state.controller]
        results += check_safe("single_controller", check_single_controller, after.controller, live, allowed)
        if converged:
            asked = [b for b in live if b not in set(exempt)]
            own_poller = poller or MetadataPoller(ctx.cluster, asked, topics).start()
            try:
                views = own_poller.wait_agreement(observed_partitions(after, topics), asked,
                                                  timeout=self.options.metadata_timeout)
            finally:
                if poller is None:
                    own_poller.stop()
            results += check_safe("metadata_agrees_zk", check_metadata_agrees, observed_partitions(after, topics), views)
        else:
            results.append(CheckResult("metadata_agrees_zk", None, detail="not checked: ZooKeeper never converged"))
        return results

    @staticmethod
    def _rule_checks(rule: str, ruled: Sequence[tuple[str, int]], before_snap: Any, prediction: Prediction,
                     after: Any) -> list[CheckResult]:
        """The documented leader-side ISR rule, per partition it changes (:mod:`scenarios.isr_rules`)."""
        results: list[CheckResult] = []
        for t, p in ruled:
            if (t, p) not in after.partitions:
                continue  # compare_partitions already reports the partition missing
            results += check_safe(rule, check_isr_rule, rule, isr_rules.RULE_SOURCES[rule], t, p,
                                  before_snap.partitions[(t, p)], prediction.state.topics[t].partitions[p],
                                  after.partitions[(t, p)], topic=t, partition=p)
        return results

    def _measure(self, ctx: _Context, kind: str, target: Target, before_snap: Any, prediction: Prediction,
                 after: Any, fault_at: float, poller: MetadataPoller, started: float) -> None:
        """One latency record per partition whose leader the oracle says moves to a live broker."""
        events = ctx.observer.events_since(fault_at)
        now = time.time()
        live = sorted(after.live_brokers) if after is not None else []
        for (t, p), want in sorted(predicted_partitions(prediction.state, ctx.physical_topics).items()):
            was = before_snap.partitions.get((t, p))
            if was is None or want.leader == -1 or want.leader == was.leader:
                continue
            workload = ctx.workloads.get(t)
            acks = workload.acks(p) if workload is not None else []
            breakdown = lat.breakdown(
                fault_at,
                detection=lat.detection_at(events, target.brokers, fault_at),
                election=lat.election_at(events, t, p, want.leader, fault_at),
                propagation=lat.propagation_at(poller.sightings_of((t, p)), live, want.leader, fault_at),
                acks=acks, partition=p, window_end=now)
            ms = breakdown.ms()
            ctx.outcome.latencies.append({"fault": kind, "topic": t, "partition": p, **ms})
            self._record(ctx, "measurement", "latency", None, started, fault=kind, target=target.description,
                         topic=t, partition=p, latency_ms=ms, timestamps=breakdown.timestamps(),
                         expected={"leader": want.leader}, observed={"leader": after.partitions[(t, p)].leader
                                                                       if after is not None and (t, p) in after.partitions else None},
                         detail=f"{t}-{p} leader {was.leader} -> {want.leader}")

    def _wait_for_clients(self, ctx: _Context, fault: Any, target: Target, before_snap: Any,
                          prediction: Prediction, fault_at: float) -> None:
        """Hold the step (bounded, woken by delivery reports) until the clients of every partition
        the fault touched get acks again after the cluster acted on it — so a cut lasts until
        the clients have found the new leaders, and the client windows measure the clients, not
        how soon the harness healed. Partitions a cut broker keeps leading stall until healed:
        not waited for."""
        deadline = time.monotonic() + self.options.client_recovery_timeout
        events = ctx.observer.events_since(fault_at)
        hit = set(target.brokers)
        waiting: list[str] = []
        for (t, p), want in sorted(predicted_partitions(prediction.state, ctx.physical_topics).items()):
            was = before_snap.partitions.get((t, p))
            workload = ctx.workloads.get(t)
            if was is None or workload is None or not hit & set(was.replicas) or want.leader == -1:
                continue
            if isinstance(fault, NetworkPartition) and want.leader in hit:
                continue
            acted = (lat.election_at(events, t, p, want.leader, fault_at) if want.leader != was.leader
                     else lat.isr_written_at(events, t, p, want.isr, fault_at) if set(want.isr) != set(was.isr)
                     else None)
            got = workload.wait_for_acks(timeout=max(0.0, deadline - time.monotonic()),
                                         after=acted if acted is not None else fault_at, partitions=[p])
            if got.get(p) is None:
                waiting.append(f"{t}-{p}")
        if waiting:
            self._step_progress(ctx, f"clients of {', '.join(waiting)} got no ack within "
                                     f"{self.options.client_recovery_timeout:.0f}s; measuring anyway")

    def _measure_client_windows(self, ctx: _Context, fault: Any, target: Target, before_snap: Any,
                                prediction: Prediction, after: Any, fault_at: float, started: float) -> None:
        """Network partitions: one ``client_window`` measurement per partition with a replica on
        the cut (or healed) broker whose leader stays — those whose leader moves have their
        ``latency`` record. A cut partition may stall without anything moving in ZooKeeper
        (a leader cut off from its followers cannot commit ``acks=all``), so the window runs to
        the end of the step; a heal's window starts at the cut, covering the whole episode."""
        if isinstance(fault, NetworkPartition):
            for b in target.brokers:
                ctx.cut_at[b] = fault_at
            start = fault_at
        else:
            start = min((ctx.cut_at.pop(b) for b in target.brokers if b in ctx.cut_at), default=fault_at)
        events = ctx.observer.events_since(fault_at)
        now = time.time()
        hit = set(target.brokers)
        for (t, p), want in sorted(predicted_partitions(prediction.state, ctx.physical_topics).items()):
            was = before_snap.partitions.get((t, p))
            if was is None or not hit & set(was.replicas):
                continue
            if want.leader not in (was.leader, -1):
                continue  # a leader switch: the latency record covers it
            isr_change = (lat.isr_written_at(events, t, p, want.isr, fault_at)
                          if set(want.isr) != set(was.isr) else None)
            workload = ctx.workloads.get(t)
            window = lat.client_window(start, now, workload.acks(p) if workload is not None else [], p,
                                       fault_at=fault_at, isr_change_at=isr_change)
            role = "leader" if was.leader in hit else "follower"
            stalled = window.silent_since is not None
            got = after.partitions.get((t, p)) if after is not None else None
            ms = window.ms()
            self._record(
                ctx, "measurement", "client_window", None, started, fault=fault_label(fault),
                target=target.description, topic=t, partition=p, latency_ms=ms, timestamps=window.timestamps(),
                expected={"leader": want.leader, "isr": sorted(want.isr)},
                observed={"leader": got.leader if got else None, "isr": list(got.isr) if got else None,
                          "stalled_at_end": stalled},
                detail=(f"{t}-{p} (the {role} is {'healed' if isinstance(fault, NetworkHeal) else 'cut'}): "
                        f"largest produce gap {ms['client_gap']} ms"
                        + (f", ISR changed after {round((isr_change - fault_at) * 1000)} ms" if isr_change else "")
                        + (f"; no ack for {round((now - window.silent_since) * 1000)} ms at the step's end"
                           if stalled and window.silent_since is not None else "")))

    # misc -------------------------------------------------------------------------------------

    def _step_progress(self, ctx: _Context, what: str) -> None:
        self.progress(f"{ctx.scenario.name}#{ctx.iteration}: {what}")

    def _collect_logs(self, scenario: str, iteration: int) -> None:
        target = Path(self.options.results_dir) / "logs" / f"{scenario}-{iteration}"
        try:
            files = self.pool.cluster.log_files()
            target.mkdir(parents=True, exist_ok=True)
            for node, path in files.items():
                if Path(path).is_file():
                    shutil.copyfile(path, target / f"{node}.log")
        except Exception as exc:  # noqa: BLE001 - logs are a courtesy
            log.warning("collecting node logs into %s failed: %s", target, exc)


@dataclass
class _Context:
    scenario: Scenario
    iteration: int
    cluster: Any
    outcome: ScenarioOutcome
    rng: random.Random
    topic_names: dict[str, str]
    broker_config: dict[str, str]
    session_timeout_ms: int | None
    tick_time_ms: int | None
    started_at: float
    observer: Any = None
    history: list[Target] = field(default_factory=list)
    unclean: dict[str, set[int]] = field(default_factory=dict)
    workloads: dict[str, Any] = field(default_factory=dict)
    workload_errors: dict[str, str] = field(default_factory=dict)
    cut_at: dict[int, float] = field(default_factory=dict)  # broker -> when a network partition cut it

    @property
    def physical_topics(self) -> list[str]:
        return list(self.topic_names.values())

    @property
    def partitions(self) -> int:
        return sum(len(t.assignment) for t in self.scenario.topics)

    @classmethod
    def build(cls, scenario: Scenario, iteration: int, cluster: Any, outcome: ScenarioOutcome,
              options: RunOptions) -> _Context:
        settings = dict(cluster.broker_settings())
        session = int(settings.get(SESSION_TIMEOUT_KEY, 6000))
        tick = _tick_time_ms(cluster)
        # Same seed, scenario and iteration → same choices (str seeds hash with SHA-512).
        rng = random.Random(f"{options.seed}:{scenario.name}:{iteration}")
        names = {t.name: f"{scenario.name}-{iteration}-{t.name}".replace("_", "-") for t in scenario.topics}
        return cls(scenario, iteration, cluster, outcome, rng, names, settings, session, tick, time.time())


def _tick_time_ms(cluster: Any) -> int | None:
    config = getattr(cluster, "config", None)
    if config is not None:
        try:
            from harness.config import tick_time_ms

            return int(tick_time_ms(config))
        except Exception:  # noqa: BLE001 - a launcher without the helper
            return getattr(config, "zk_tick_time_ms", None)
    return None

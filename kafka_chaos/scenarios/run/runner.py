"""Run catalogue scenarios against a real cluster: observe every step, record it, check it.

The runner only *observes*. Per scenario iteration:

1. get a cluster with the scenario's needs from the :class:`~scenarios.run.pool.ClusterPool`; a
   scenario whose faults need a capability the backend lacks is skipped with one line why;
2. create the topics with their explicit assignment (itself an observed step, checked against
   the oracle's ``CreateTopic``) and start the workload (idempotent ``acks=all`` producers, made
   while the topics are created so that they hold a producer id by then);
3. for each step: wait (ZK watches, bounded) until the cluster is *settled*, build the oracle's
   input from that observation — the state BEFORE the fault, never anything later — resolve
   the target with the seeded RNG, ask the oracle for every allowed outcome (its alternatives,
   plus the fault's leader-side ISR rule), inject, wait (bounded) for one of them, wait for
   every broker's metadata to agree, and for faults that leave brokers unreachable, for the
   clients to recover;
4. heal every fault (then ``on_healed``: ``explore`` starts its next schedule's cluster there),
   stop the workload (drained once healed), wait until settled, read every acknowledged message
   back, delete the topics; failed scenarios get their node logs copied to
   ``RESULTS_DIR/logs/<scenario>-<i>/``.

Every phase of the iteration is timed (:mod:`scenarios.model.ledger`): each step's into its own
ledger (``StepObserved.ledger``), the rest into the iteration's (``ScenarioFinished.ledger``, or
``ScenarioAborted.ledger``).

Each step's :mod:`observation <scenarios.history.observations>` is appended (fsync'ed) to
``history.jsonl``, then handed to the check registry (:func:`scenarios.checks.registry.evaluate`),
whose results become records (fsync'ed) — the same function ``kafka-chaos check`` runs later.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.harness.cluster import ChaosCluster, Cluster
from kafka_chaos.harness.observers import Observer
from kafka_chaos.harness.readiness import ProducerIdGrant
from kafka_chaos.common.errors import HarnessError
from kafka_chaos.oracle import CreateTopic, Event, predict
from kafka_chaos.records.writer import RecordSink
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.plans.spec import Scenario
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate, to_records
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.clients.ops import ClientOps
from kafka_chaos.scenarios.clients.txn_ops import ReadBack, TxnHistory, TxnOffset
from kafka_chaos.scenarios.clients.producer_log import ProducerIdGiven
from kafka_chaos.scenarios.run.client_cuts import client_activity, client_ops, wait_for_clients, with_read_back
from kafka_chaos.scenarios.checks.expectations import Expectation, Predictor
from kafka_chaos.scenarios.faults import FaultEnv, Nemesis, requirements_of
from kafka_chaos.scenarios.history.observations import (
    ClientActivity,
    HistoryWriter,
    Observation,
    ScenarioAborted,
    ScenarioFinished,
    ScenarioRun,
    ScenarioSkipped,
    StepObserved,
    TopicDelivery,
)
from kafka_chaos.scenarios.model.ledger import (
    CHECK,
    CLUSTER,
    CREATE_TOPICS,
    DELETE_TOPICS,
    HEAL,
    READ_BACK,
    SETTLE_AFTER_HEAL,
    WORKLOAD_START,
    WORKLOAD_STOP,
    Stopwatch,
    TimeLedger,
)
from kafka_chaos.scenarios.model.snapshots import INTERNAL_TOPICS, is_settled
from kafka_chaos.scenarios.plans.transactional import transactional_topics
from kafka_chaos.scenarios.run.pool import ClusterPool
from kafka_chaos.scenarios.run.step import ClientNames, Prepared, StepClients, StepCore, StepNaming, StepTimeouts
from kafka_chaos.scenarios.model.targets import Target

if TYPE_CHECKING:  # the clients import librdkafka's binding: loaded when a run starts them
    from kafka_chaos.scenarios.clients.consumers import Consumers
    from kafka_chaos.scenarios.clients.java_txn_workload import JavaTxnWorkload
    from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload
    from kafka_chaos.scenarios.clients.workload import Workload

log = logging.getLogger(__name__)

SESSION_TIMEOUT_KEY = "zookeeper.session.timeout.ms"
# How long a step waits after it converged for every transactional producer to end an attempt
# begun then: each begins one every 0.15 s and a coordinator that moved answers within seconds; a
# producer a fault still holds (a paused coordinator or client) is waited for no longer.
TXN_ATTEMPT_WAIT_S = 10.0

Progress = Callable[[str], None]
Healed = Callable[["ScenarioOutcome"], None]


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
    # How long a step asks the brokers for their replicas on disk before the check judges the last
    # answers (StepTimeouts.disk): spent whole only where a replica is left behind (a known bug).
    disk_timeout: float = 15.0
    verify_timeout: float = 60.0
    # Faults with client windows (network partitions): how long a step waits for the clients to
    # get acks again (a cut leader's clients hang until their own timeouts: socket.timeout.ms is 10 s).
    client_recovery_timeout: float = 45.0
    # Consumers (assign + group) through every step, their polls in the history.
    consumers: bool = True


@dataclass
class ScenarioOutcome:
    scenario: str
    iteration: int
    seconds: float
    results: list[CheckResult] = field(default_factory=list)  # verdicts only, no measurements
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.results) and all(r.passed is True for r in self.results)

    @property
    def counts(self) -> tuple[int, int, int]:
        return (sum(r.passed is True for r in self.results), sum(r.passed is False for r in self.results),
                sum(r.passed is None for r in self.results))


class ScenarioAbortedError(HarnessError):
    """A scenario could not go on (the cluster never settled, the oracle refused the input)."""


class Runner:
    def __init__(self, options: RunOptions, pool: ClusterPool, writer: RecordSink, progress: Progress,
                 predictor: Predictor = predict, history: HistoryWriter | None = None,
                 on_healed: Healed | None = None) -> None:
        """``on_healed``: called with the outcome so far once an iteration's faults are healed,
        before its drain and read-back (``explore`` starts the next schedule's cluster there:
        :meth:`ClusterPool.prepare`)."""
        self.options = options
        self.pool = pool
        self.writer = writer
        self.progress = progress
        self.predictor = predictor
        self.history = history if history is not None else HistoryWriter(Path(options.results_dir))
        self.on_healed = on_healed

    # one scenario ----------------------------------------------------------------------------

    def run(self, scenario: Scenario, iteration: int, attempt: int = 0) -> ScenarioOutcome:
        """Run one scenario iteration; ``attempt`` > 0 is a rerun (``--deflake``): the same
        seeded choices on topics of its own."""
        started = time.monotonic()
        clock = Stopwatch()
        outcome = ScenarioOutcome(scenario.name, iteration, 0.0)
        checks = CheckContext(self.predictor)
        requirements = requirements_of([s.fault for s in scenario.steps])
        missing = {c: why for c, why in self.pool.missing_capabilities(scenario.needs.mode).items()
                   if c in requirements}
        if missing:
            why = "; ".join(missing.values())
            self.progress(f"{scenario.name}#{iteration}: skipped: {why}")
            run = scenario_run(self.options, scenario, iteration, None, ())
            self._emit(checks, outcome, ScenarioSkipped(run, time.time(), tuple(sorted(c.value for c in missing)), why))
            return outcome
        interrupted = False
        ctx: _Context | None = None
        try:
            with clock.phase(CLUSTER):
                cluster = self.pool.acquire(scenario.needs)
            ctx = _Context.build(scenario, iteration, cluster, outcome, checks, self.options, attempt, clock)
            ctx.granted += self.pool.granted
            self._run_in(ctx)
        except KeyboardInterrupt:
            interrupted = True
            outcome.error = "interrupted"
            raise
        except HarnessError as exc:
            outcome.error = str(exc)
            self.progress(f"{scenario.name}#{iteration}: aborted: {exc}")
            if ctx is not None:
                self._emit(checks, outcome, ScenarioAborted(ctx.run, ctx.started_at, time.time(), str(exc),
                                                            ctx.ledger()))
        finally:
            outcome.seconds = time.monotonic() - started
            if not interrupted and not outcome.passed and self.pool.cluster is not None:
                self._collect_logs(scenario.name, iteration, ctx)
        return outcome

    def _emit(self, checks: CheckContext, outcome: ScenarioOutcome, obs: Observation,
              computed: tuple[Expectation, ...] | None = None) -> None:
        """Store the observation, check it (with the expectations the step already ``computed``
        from the same oracle input), write its records."""
        self.history.append(obs)
        if computed is not None and isinstance(obs, StepObserved):
            checks.remember(obs, computed)
        results = evaluate(obs, checks)
        checks.earlier.append(obs)
        self.writer.write_all(to_records(obs, results))
        outcome.results += [r for r in results if not r.is_measurement]

    def _run_in(self, ctx: _Context) -> None:
        from kafka_chaos.harness.observers import open_admin, open_observer

        cluster = ctx.cluster
        watched = list(ctx.topic_names.values()) + list(INTERNAL_TOPICS)
        with open_observer(cluster, watched) as observer, open_admin(cluster) as admin:
            ctx.observer = observer
            nemesis = Nemesis(FaultEnv(cluster, observer, admin, ctx.run.session_timeout_ms or 6000,
                                       ctx.run.tick_time_ms or 500))
            interrupted = aborted = False
            core = self._step_core(ctx, nemesis)
            try:
                self._connect_producers(ctx)
                self._create_topics(ctx, core)
                self._start_workloads(ctx)
                from kafka_chaos.scenarios.clients.java_txn_workload import JavaTxnWorkload
                from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload

                # txn_past_timeout's seam (scenarios.faults.txn_timeout); client_pause / client_kill's (faults.clients)
                nemesis.env.transactions = ctx.txn if isinstance(ctx.txn, TxnWorkload) else None
                nemesis.env.clients = ctx.txn if isinstance(ctx.txn, JavaTxnWorkload) else None
                for index, step in enumerate(ctx.scenario.steps):
                    self._run_step(ctx, core, index, step)
            except KeyboardInterrupt:
                interrupted = True  # leave at once: the pool destroys the cluster
                raise
            except BaseException:
                aborted = True  # no _finish: the consumers are stopped here
                raise
            finally:
                if interrupted:
                    self._stop_producers(ctx, drain_timeout=2.0)
                    self._stop_consumers(ctx)
                else:
                    self._step_progress(ctx, "healing")
                    with ctx.clock.phase(HEAL):
                        errors = nemesis.heal_all()
                    for err in errors:
                        ctx.outcome.error = ctx.outcome.error or f"heal failed: {err}"
                    if self.on_healed is not None:
                        self.on_healed(ctx.outcome)
                    # Drained once healed: a partition whose leader the last fault left down has
                    # no one to deliver to before the heal, so a drain before it waited out its
                    # whole timeout and purged what the healed cluster would have acknowledged.
                    with ctx.clock.phase(WORKLOAD_STOP):
                        self._stop_producers(ctx, drain_timeout=5.0)
                    if aborted:
                        with ctx.clock.phase(WORKLOAD_STOP):
                            self._stop_consumers(ctx)
            self._finish(ctx)

    def _finish(self, ctx: _Context) -> None:
        """After healing: settled again, then the read-back, then topic deletion; the iteration's
        last observation closes its ledger."""
        started = time.time()
        try:
            with ctx.clock.phase(SETTLE_AFTER_HEAL):
                self.pool.restore()
                ctx.zk.wait_until(lambda s: is_settled(s, ctx.physical_topics), timeout=self.options.settle_timeout,
                                  description="settled after healing")
        except HarnessError as exc:
            with ctx.clock.phase(WORKLOAD_STOP):
                self._stop_consumers(ctx)
            self._emit(ctx.checks, ctx.outcome, ScenarioFinished(
                ctx.run, started, time.time(), str(exc), (), client_ops(ctx.workloads, ctx.consumers, ctx.ops_cut, None),
                ctx.ledger(), txn=ctx.txn.cut() if ctx.txn is not None else None))
            return
        with ctx.clock.phase(WORKLOAD_STOP):
            self._stop_consumers(ctx)  # healed: a group member leaves its group at once
        with ctx.clock.phase(READ_BACK):
            deliveries = self._read_back(ctx)
            txn = self._txn_read_back(ctx)
            self._ask_fresh_producer_ids(ctx)
        ops = client_ops(ctx.workloads, ctx.consumers, ctx.ops_cut, None)
        for physical, w in ctx.workloads.items():  # the read-back is the last poll of every partition
            ops = with_read_back(ops, physical, w.read_back, time.time())
        finished_at = time.time()
        try:  # before the observation is emitted, so that its ledger holds the deletion too
            with ctx.clock.phase(DELETE_TOPICS):
                self._delete_topics(ctx)
        finally:
            self._emit(ctx.checks, ctx.outcome, ScenarioFinished(ctx.run, started, finished_at, None,
                                                                 tuple(deliveries), ops, ctx.ledger(),
                                                                 granted=harness_producer_ids(ctx.granted), txn=txn))

    def _txn_read_back(self, ctx: _Context) -> TxnHistory | None:
        """The transactional workload's last stretch with its final read-back (read_committed,
        every transactional id fenced first: nothing left open) and the copier's group's committed
        offsets; either None, said, when it could not be read."""
        from kafka_chaos.scenarios.clients.txn_workload import TxnWorkloadError

        w = ctx.txn
        if w is None:
            return None
        readback: tuple[ReadBack, ...] | None = None
        offsets: tuple[TxnOffset, ...] | None = None
        if "txn" not in ctx.workload_errors:
            unfenced = w.fence()
            if unfenced:
                self._step_progress(ctx, f"transactional ids {unfenced} could not be fenced after healing")
            self._step_progress(ctx, f"reading {', '.join(w.topics)} back at read_committed")
            try:
                readback = w.read_back(timeout=self.options.verify_timeout)
                offsets = w.group_offsets()
            except TxnWorkloadError as exc:
                self._step_progress(ctx, f"transactional read-back: {exc}")
        counts = w.counts()
        self._step_progress(ctx, f"transactions: {counts['committed']} committed, {counts['aborted']} aborted, "
                                 f"{counts['unknown']} unknown; {counts['reads']} reads")
        return w.cut(readback, offsets)

    def _ask_fresh_producer_ids(self, ctx: _Context) -> None:
        """Every broker asked for one more producer id once the faults are healed, as a producer
        started after them would (KAFKA-15552's trigger: the first block a controller hands out
        after a migration). A broker that hands out none is said, not failed: the read-back has
        already judged the cluster's availability."""
        from kafka_chaos.harness.readiness import warm_producer_ids

        try:
            ctx.granted += warm_producer_ids(ctx.cluster, timeout=self.options.settle_timeout)
        except HarnessError as exc:
            self._step_progress(ctx, f"no fresh producer id after healing: {exc}")

    def _read_back(self, ctx: _Context) -> list[TopicDelivery]:
        """Every acknowledged message of each topic read back (or why not)."""
        readable = {physical: w for physical, w in ctx.workloads.items() if physical not in ctx.workload_errors}
        if readable:
            self._step_progress(ctx, f"reading {', '.join(readable)} back")
        # One consumer per topic, side by side: each waits mostly on its own fetches.
        with ThreadPoolExecutor(max_workers=max(1, len(readable)), thread_name_prefix="read-back") as pool:
            reads = {physical: pool.submit(w.verify, timeout=self.options.verify_timeout)
                     for physical, w in readable.items()}
        deliveries = []
        for physical, w in ctx.workloads.items():
            producers = tuple(w.producer_ids())
            if physical not in readable:
                deliveries.append(TopicDelivery(physical, None, f"workload failed: {ctx.workload_errors[physical]}",
                                                producers=producers))
                continue
            try:
                deliveries.append(TopicDelivery(physical, reads[physical].result(), resent=w.resent_keys(),
                                                producers=producers))
            except HarnessError as exc:
                deliveries.append(TopicDelivery(physical, None, f"could not read back: {exc}", producers=producers))
        return deliveries

    @staticmethod
    def _delete_topics(ctx: _Context) -> None:
        try:
            from kafka_chaos.harness.metadata import delete_topics

            delete_topics(ctx.cluster.bootstrap_servers, ctx.physical_topics, timeout=15.0)
        except HarnessError as exc:
            log.info("deleting topics %s: %s", ctx.physical_topics, exc)

    @staticmethod
    def _stop_producers(ctx: _Context, drain_timeout: float) -> None:
        for w in ctx.workloads.values():
            try:
                w.stop(drain_timeout=drain_timeout)
            except Exception as exc:  # noqa: BLE001 - recorded as unknown delivery
                ctx.workload_errors[w.topic] = str(exc)
        if ctx.txn is not None:  # each producer and the copier end their transaction first
            try:
                ctx.txn.stop_writers()
            except Exception as exc:  # noqa: BLE001 - its history so far is kept and judged
                log.warning("transactional workload: %s", exc)
                ctx.workload_errors["txn"] = str(exc)

    def _stop_consumers(self, ctx: _Context) -> None:
        """Stop the consumers (after healing, so they catch up and close quickly). A consumer
        that failed leaves its polls incomplete, which the history checks tolerate (every
        anomaly they report is still one), so it is said, not turned into a verdict."""
        for topic, c in ctx.consumers.items():
            try:
                c.stop()
            except Exception as exc:  # noqa: BLE001 - reported; the polls so far are kept
                log.warning("consumers of %s: %s", topic, exc)
                self._step_progress(ctx, f"consumers of {topic} failed: {exc}")
        if ctx.txn is not None:
            try:
                ctx.txn.stop_readers()
            except Exception as exc:  # noqa: BLE001 - reported; the reads so far are kept
                log.warning("transactional readers: %s", exc)
                self._step_progress(ctx, f"transactional readers failed: {exc}")

    # topics and workload -------------------------------------------------------------------

    def _create_topics(self, ctx: _Context, core: StepCore) -> None:
        from kafka_chaos.harness.metadata import create_topic

        events: list[Event] = [CreateTopic(ctx.topic_names[t.name], {p: tuple(r) for p, r in t.assignment.items()},
                                           dict(t.config)) for t in ctx.scenario.topics]

        def create() -> None:
            for t in ctx.scenario.topics:
                create_topic(ctx.cluster.bootstrap_servers, ctx.topic_names[t.name], t.assignment, t.config)

        with ctx.clock.phase(CREATE_TOPICS):
            observed, options, converged = core.create_topics(ctx.run, events, create)
        with ctx.clock.phase(CHECK):
            self._emit(ctx.checks, ctx.outcome, observed, options)
        if not converged:
            raise ScenarioAbortedError("the topics never reached their predicted initial state")

    def _connect_producers(self, ctx: _Context) -> None:
        """The producers, made while the topics are created (:meth:`Workload.connect`): each
        holds its producer id when the workload starts."""
        from kafka_chaos.scenarios.clients.workload import Workload

        with ctx.clock.phase(WORKLOAD_START):
            for t in ctx.scenario.topics:
                if not t.workload:  # a topic a step deletes (scenarios.faults.topics)
                    continue
                physical = ctx.topic_names[t.name]
                w = Workload(ctx.cluster.bootstrap_servers, physical, list(t.partitions),
                             rate_per_partition=self.options.rate_per_partition,
                             client_id=f"kafka-chaos-{ctx.scenario.name}")
                w.connect()
                ctx.workloads[physical] = w

    def _start_workloads(self, ctx: _Context) -> None:
        with ctx.clock.phase(WORKLOAD_START):
            self._start_clients(ctx)

    def _start_clients(self, ctx: _Context) -> None:
        from kafka_chaos.scenarios.clients.consumers import Consumers

        ctx.ops_cut = time.time()
        for t in ctx.scenario.topics:
            physical = ctx.topic_names[t.name]
            if self.options.consumers and t.workload:
                c = Consumers(ctx.cluster.bootstrap_servers, physical, list(t.partitions),
                              client_id=f"kafka-chaos-{ctx.scenario.name}")
                ctx.consumers[physical] = c
                c.start()
        for w in ctx.workloads.values():
            w.start()
        self._start_transactions(ctx)
        for w in ctx.workloads.values():  # the workload is really flowing before any fault
            w.wait_for_acks(timeout=30.0)
        if ctx.txn is not None:
            missing = ctx.txn.wait_for_commits(timeout=60.0)
            if missing:
                self._step_progress(ctx, f"no transaction committed yet by {', '.join(missing)}")

    def _start_transactions(self, ctx: _Context) -> None:
        """The transactional workload on the scenario's transactional topics, if it has them
        (:mod:`scenarios.plans.transactional`); seeded like the steps' choices."""
        from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload

        pair = transactional_topics(ctx.scenario.topics)
        if pair is None:
            return
        source, sink = pair
        if ctx.scenario.txn_client == "java":
            self._start_java_transactions(ctx, source, sink)
            return
        ctx.txn = TxnWorkload(ctx.cluster.bootstrap_servers, ctx.topic_names[source.name], list(source.partitions),
                              ctx.topic_names[sink.name], list(sink.partitions),
                              seed=f"{self.options.seed}:{ctx.scenario.name}:{ctx.iteration}",
                              client_id=f"kafka-chaos-{ctx.scenario.name}", compression=ctx.scenario.txn_compression,
                              producers=ctx.scenario.txn_producers)
        ctx.client_names.transactional_ids.update(ctx.txn.transactional_ids)
        ctx.client_names.groups.update(ctx.txn.groups)
        ctx.txn.start()

    def _start_java_transactions(self, ctx: _Context, source: TopicSpec, sink: TopicSpec) -> None:
        """The transactional workload run by Kafka's own Java test clients, one process each
        (:mod:`scenarios.clients.java_txn_workload`), from the cluster's release's tools jar."""
        from kafka_chaos.harness.distribution import resolve_distribution
        from kafka_chaos.harness.java_clients import check_tools_release, tools_classpath
        from kafka_chaos.scenarios.clients.java_txn_workload import JavaTxnWorkload

        check_tools_release(ctx.cluster.kafka_version)
        w = JavaTxnWorkload(ctx.cluster.bootstrap_servers, ctx.topic_names[source.name], list(source.partitions),
                            ctx.topic_names[sink.name], list(sink.partitions),
                            classpath=tools_classpath(resolve_distribution(ctx.cluster.kafka_version)),
                            log_dir=Path(self.options.results_dir) / "java-clients" / f"{ctx.scenario.name}-{ctx.iteration}",
                            client_id=f"kafka-chaos-{ctx.scenario.name}", compression=ctx.scenario.txn_compression)
        ctx.txn = w
        ctx.client_names.transactional_ids.update(w.transactional_ids)
        ctx.client_names.groups.update(w.groups)
        w.start()

    # steps ----------------------------------------------------------------------------------

    def _step_core(self, ctx: _Context, nemesis: Nemesis) -> StepCore:
        return StepCore(ctx.cluster, ctx.zk, nemesis, ctx.physical_topics, self.predictor,
                        StepNaming(ctx.topic_names, {t.name: t.partitions for t in ctx.scenario.topics},
                                   ctx.rng, ctx.targets, ctx.client_names),
                        StepTimeouts(self.options.settle_timeout, self.options.convergence_timeout,
                                     self.options.metadata_timeout, self.options.disk_timeout),
                        progress=lambda what: self._step_progress(ctx, what), error=ScenarioAbortedError)

    def _run_step(self, ctx: _Context, core: StepCore, index: int, step: Step) -> None:
        variant = step.options.get("variant")
        label = f"step {index + 1}/{len(ctx.scenario.steps)} {step.fault}" + (f"/{variant}" if variant else "")
        prepared = core.prepare(label, step)
        observed = core.observe(ctx.run, index, prepared,
                                _WorkloadClients(ctx, self.options.client_recovery_timeout, core.progress))
        ctx.step_seconds += observed.ledger.total  # the step's own ledger holds them
        with ctx.clock.phase(CHECK):
            self._emit(ctx.checks, ctx.outcome, observed, prepared.options)
        ctx.ops_cut = observed.measured_at

    # misc -------------------------------------------------------------------------------------

    def _step_progress(self, ctx: _Context, what: str) -> None:
        self.progress(f"{ctx.scenario.name}#{ctx.iteration}: {what}")

    def _collect_logs(self, scenario: str, iteration: int, ctx: _Context | None) -> None:
        """Every node's log, every broker's controller and state-change logs (what the controller
        decided and sent, where a failure is triaged), and the producers' and group consumers'
        librdkafka debug lines, into ``logs/<scenario>-<iteration>/`` (a failed iteration only)."""
        from kafka_chaos.harness.node_logs import copy_node_logs

        target = Path(self.options.results_dir) / "logs" / f"{scenario}-{iteration}"
        try:
            copy_node_logs(self.pool.held(), target)
            debug = {f"consumer-group-{topic}": c.debug_lines for topic, c in (ctx.consumers if ctx else {}).items()}
            debug.update({f"producer-{topic}": w.debug_lines for topic, w in (ctx.workloads if ctx else {}).items()})
            if ctx is not None and ctx.txn is not None:
                for txn_id, lines in ctx.txn.debug_lines().items():
                    debug[f"txn-producer-{txn_id}"] = functools.partial(list, lines)
            for name, debug_lines in debug.items():
                lines = debug_lines()
                if lines:
                    (target / f"{name}.log").write_text("\n".join(lines) + "\n")
        except Exception as exc:  # noqa: BLE001 - logs are a courtesy
            log.warning("collecting node logs into %s failed: %s", target, exc)


class _WorkloadClients(StepClients):
    """The runner's workload and consumers, as a step sees them."""

    def __init__(self, ctx: _Context, recovery_timeout: float, progress: Progress) -> None:
        self._ctx = ctx
        self._recovery_timeout = recovery_timeout
        self._progress = progress

    def after_converged(self, prepared: Prepared, expected: Expectation, fault_at: float) -> None:
        """A fault with client windows waits (bounded) for the clients to recover, so the
        measurement holds their whole unavailability; then the transactional producers each end an
        attempt begun in the state the step converged to (bounded), which the step's
        transactional figures and checks judge (scenarios.checks.txn_availability)."""
        self._transactional_attempt()
        if not prepared.fault.client_windows:
            return
        ctx = self._ctx
        waiting = wait_for_clients(ctx.workloads, ctx.zk.events_since(fault_at), prepared.fault,
                                   prepared.before_snap, expected, fault_at, self._recovery_timeout)
        if waiting:
            self._progress(f"clients of {', '.join(waiting)} got no ack within "
                           f"{self._recovery_timeout:.0f}s; measuring anyway")

    def _transactional_attempt(self) -> None:
        from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload

        if not isinstance(self._ctx.txn, TxnWorkload):  # Kafka's Java copier prints no attempt
            return
        missing = self._ctx.txn.wait_for_attempts(time.time(), timeout=TXN_ATTEMPT_WAIT_S)
        if missing:
            self._progress(f"transactional ids {', '.join(missing)} ended no attempt within "
                           f"{TXN_ATTEMPT_WAIT_S:.0f}s of convergence; measuring anyway")

    def activity(self, since: float, until: float) -> Mapping[str, ClientActivity]:
        return client_activity(self._ctx.workloads, since, until)

    def ops(self, until: float) -> Mapping[str, ClientOps]:
        return client_ops(self._ctx.workloads, self._ctx.consumers, self._ctx.ops_cut, until)

    def txn(self) -> TxnHistory | None:
        return self._ctx.txn.cut() if self._ctx.txn is not None else None


def harness_producer_ids(granted: Sequence[ProducerIdGrant]) -> tuple[ProducerIdGiven, ...]:
    """The harness's own InitProducerIds as the producer instances they are to the cluster: one
    instance per id handed out."""
    return tuple(ProducerIdGiven(f"kafka-chaos-init-producer-id@{g.address}#{n}", g.at, g.producer_id, g.epoch)
                 for n, g in enumerate(granted, start=1))


@dataclass
class _Context:
    scenario: Scenario
    iteration: int
    cluster: ChaosCluster
    outcome: ScenarioOutcome
    checks: CheckContext
    run: ScenarioRun
    rng: random.Random
    topic_names: dict[str, str]
    started_at: float
    clock: Stopwatch = field(default_factory=Stopwatch)  # the iteration's time, from its start
    step_seconds: float = 0.0  # what its fault steps' own ledgers hold
    observer: Observer | None = None
    targets: list[Target] = field(default_factory=list)
    workloads: dict[str, Workload] = field(default_factory=dict)
    workload_errors: dict[str, str] = field(default_factory=dict)
    consumers: dict[str, Consumers] = field(default_factory=dict)
    # the transactional workload (scenarios.clients.txn_workload, or java_txn_workload), if it runs
    txn: TxnWorkload | JavaTxnWorkload | None = None
    client_names: ClientNames = field(default_factory=lambda: ClientNames({}, {}))  # its ids and groups by role
    ops_cut: float = 0.0  # the clients' operations up to here are in an emitted observation
    granted: list[ProducerIdGrant] = field(default_factory=list)  # the harness's own InitProducerIds

    @property
    def physical_topics(self) -> list[str]:
        return list(self.topic_names.values())

    def ledger(self) -> TimeLedger:
        """The iteration's time so far outside its fault steps' ledgers."""
        return self.clock.ledger(accounted_elsewhere=self.step_seconds)

    @property
    def zk(self) -> Observer:
        """The iteration's ZooKeeper observer (open from topic creation to the read-back)."""
        if self.observer is None:
            raise HarnessError(f"{self.scenario.name}#{self.iteration}: no ZooKeeper observer open")
        return self.observer

    @classmethod
    def build(cls, scenario: Scenario, iteration: int, cluster: ChaosCluster, outcome: ScenarioOutcome,
              checks: CheckContext, options: RunOptions, attempt: int = 0,
              clock: Stopwatch | None = None) -> _Context:
        # Same seed, scenario and iteration → same choices (str seeds hash with SHA-512).
        rng = random.Random(f"{options.seed}:{scenario.name}:{iteration}")
        # A rerun's topics are its own: the earlier attempt's may still be being deleted.
        prefix = f"{scenario.name}-{iteration}" + (f"-r{attempt}" if attempt else "")
        names = {t.name: f"{prefix}-{t.name}".replace("_", "-") for t in scenario.topics}
        run = scenario_run(options, scenario, iteration, cluster, tuple(names.values()))
        return cls(scenario, iteration, cluster, outcome, checks, run, rng, names,
                   time.time(), clock if clock is not None else Stopwatch())


def scenario_run(options: RunOptions, scenario: Scenario, iteration: int, cluster: Cluster | None,
                 topics: Sequence[str]) -> ScenarioRun:
    """What every record of this scenario iteration repeats (timing settings: the cluster's)."""
    session = tick = None
    mode = scenario.needs.mode
    if cluster is not None and mode == "kraft":
        session = int(round(cluster.session_timeout_s() * 1000))  # broker.session.timeout.ms
    elif cluster is not None:
        session = int(dict(cluster.broker_settings()).get(SESSION_TIMEOUT_KEY, 6000))
        config = getattr(cluster, "config", None)
        if config is not None:
            from kafka_chaos.harness.config import tick_time_ms

            tick = int(tick_time_ms(config))
    release = cluster.kafka_version if cluster is not None else scenario.needs.kafka_version or options.kafka_version
    return ScenarioRun(options.run_id, scenario.name, iteration, options.seed, options.backend,
                       release, scenario.needs.brokers, sum(len(t.assignment) for t in scenario.topics),
                       options.git_revision, session, tick, tuple(topics), mode)

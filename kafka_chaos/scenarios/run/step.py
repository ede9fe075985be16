"""One fault step, observed: the part the scenario runner (:mod:`scenarios.run.runner`) and the
pytest plugin's probe (:mod:`scenarios.run.probe`) share, so a rule about *how* a step is observed
lives in one place.

The order is the oracle's contract: wait until the cluster is settled, build the oracle's input
from that snapshot only, resolve the target, ask the oracle, and only then inject the fault and
wait (bounded) for one of the predicted outcomes; then every unheld broker's metadata, the
controller's metrics and log lines. What the clients did is the caller's (the runner has a
workload, the probe none): it comes in through :class:`StepClients`.

Every phase is timed on the monotonic clock into the step's time ledger
(:mod:`scenarios.model.ledger`, ``StepObserved.ledger``); the fault says which of its waits
Kafka dictates (``Fault.waits``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from kafka_chaos.harness.cluster import (
    ChaosCluster,
    Cluster,
    KraftReleaseRoller,
    MigrationControl,
    ReleaseRoller,
    ReplicaLogReader,
    implements,
)
from kafka_chaos.harness.kraft.observer import KraftObserver, LogPosition
from kafka_chaos.harness.migration.properties import HYBRID
from kafka_chaos.harness.observers import Observer
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.node_logs import LogCursor
from kafka_chaos.oracle import AutoRebalance, ClusterState, Event
from kafka_chaos.oracle.kraft.migration import MIGRATING_ZK_BROKERS
from kafka_chaos.oracle.config import auto_leader_rebalance_enabled
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.run.migration_view import migration_status, observe_migration
from kafka_chaos.scenarios.clients.ops import ClientOps
from kafka_chaos.scenarios.clients.txn_ops import TxnHistory
from kafka_chaos.scenarios.history.controller_log import LogEvent, parse_lines
from kafka_chaos.scenarios.history.controller_metrics import FaultMetrics, MetricsScrape, global_partition_counts
from kafka_chaos.harness.zkevents import ControllerChanged
from kafka_chaos.scenarios.checks.functions import FRESH_CONTROLLER_S, partitions_with_state
from kafka_chaos.scenarios.checks.expectations import (
    FAILOVER_CHECK_DELAY_S,
    FAILOVER_CHECK_MARGIN_S,
    Expectation,
    Predictor,
    converged_to,
    epochs_exact,
    expectations,
    failover_check_pending,
    matching,
)
from kafka_chaos.scenarios.faults import Fault, Nemesis, make_fault
from kafka_chaos.scenarios.history.observations import ClientActivity, FaultTraits, MetadataAnswer, ScenarioRun, StepObserved
from kafka_chaos.scenarios.model.imbalance_checks import (
    MARGIN_S,
    check_interval_s,
    first_check_delay_s,
    wait_before_step,
    wait_for_due,
)
from kafka_chaos.scenarios.model.kraft_balances import BalanceReplay
from kafka_chaos.scenarios.model.ledger import CLIENTS, CONVERGE, INJECT, MEASURE, METADATA, PREDICT, SETTLE, Stopwatch
from kafka_chaos.scenarios.model.snapshots import (
    INTERNAL_TOPICS,
    cluster_state_of,
    is_settled,
    judged_topics,
    observed_partitions,
    unsettled,
)
from kafka_chaos.scenarios.run.poller import MetadataPoller
from kafka_chaos.scenarios.run.disk_view import replicas_on_disk
from kafka_chaos.scenarios.run.log_view import leaders_high_watermarks, replica_logs
from kafka_chaos.scenarios.run.quorum_view import ask_voters
from kafka_chaos.scenarios.history.replica_logs import PartitionLogs
from kafka_chaos.scenarios.checks.disk import disk_settled, reconciled_brokers
from kafka_chaos.scenarios.history.disk import DiskAnswer
from kafka_chaos.scenarios.model.targets import CoordinatorOf, GroupCoordinatorOf, Selector, Target, view_of

log = logging.getLogger(__name__)


Progress = Callable[[str], None]


@dataclass(frozen=True)
class StepTimeouts:
    settle: float = 90.0
    convergence: float = 90.0
    metadata: float = 20.0
    disk: float = 15.0


@dataclass(frozen=True)
class Prepared:
    """What the step knew before the fault: the settled snapshot, the oracle's input, the
    target, the fault, the events the oracle was asked about and its answers."""

    label: str
    started: float
    before_snap: ZkSnapshot
    before: ClusterState
    target: Target
    fault: Fault
    events: tuple[Event, ...]
    options: tuple[Expectation, ...]
    then: tuple[str, ...]
    # The step's time so far (settle, predict); observe goes on measuring on it.
    clock: Stopwatch = field(default_factory=Stopwatch)


class StepClients:
    """What the caller's clients did; the probe has none (these defaults)."""

    def after_converged(self, prepared: Prepared, expected: Expectation, fault_at: float) -> None:
        """Called once the cluster converged (or gave up), before the measurement closes."""

    def activity(self, since: float, until: float) -> Mapping[str, ClientActivity]:
        return {}

    def ops(self, until: float) -> Mapping[str, ClientOps]:
        return {}

    def txn(self) -> TxnHistory | None:
        """What the transactional workload recorded since the previous cut (None: it runs none)."""
        return None


@dataclass(frozen=True)
class ClientNames:
    """The transactional workload's names by role, as the run made them (mutable maps: the
    workload starts after the steps' naming is made)."""

    transactional_ids: dict[str, str]
    groups: dict[str, str]


@dataclass
class StepNaming:
    """How a step's names become this cluster's: logical topic -> physical topic, each logical
    topic's partitions (None: every partition the settled snapshot shows), the seeded RNG that
    targets draw from, and the targets earlier steps hit (``EarlierTarget`` reads them; the list
    is shared by every step of a scenario)."""

    topic_names: Mapping[str, str] = field(default_factory=dict)
    topic_partitions: Mapping[str, Sequence[int]] | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    targets: list[Target] = field(default_factory=list)
    # The transactional workload's ids and groups by role ("p0", "copier"), filled when it starts:
    # a coordinator selector naming a role is aimed at the id the run made.
    client_names: ClientNames = field(default_factory=lambda: ClientNames({}, {}))

    def resolve(self, step: Step, before_snap: ZkSnapshot, brokers: Sequence[int]) -> Target:
        """The step's selector, its topic renamed to this cluster's, resolved against the
        settled snapshot."""
        target = self._physical(step.target).resolve(view_of(before_snap, brokers), self.rng, self.targets)
        self.targets.append(target)
        return target

    def fault(self, step: Step, target: Target, before_snap: ZkSnapshot) -> Fault:
        parts = self.topic_partitions
        if parts is None:
            parts = {logical: sorted(p for (topic, p) in before_snap.partitions if topic == name)
                     for logical, name in self.topic_names.items()}
        return make_fault(step.fault, target, step.options, topic_names=self.topic_names, topic_partitions=parts)

    def _physical(self, selector: Selector) -> Selector:
        if isinstance(selector, CoordinatorOf):
            return replace(selector, transactional_id=self.client_names.transactional_ids.get(
                selector.transactional_id, selector.transactional_id))
        if isinstance(selector, GroupCoordinatorOf):
            return replace(selector, group=self.client_names.groups.get(selector.group, selector.group))
        logical = getattr(selector, "topic", None)
        if not isinstance(logical, str):
            return selector
        # Selectors naming a topic are frozen dataclasses with a ``topic`` field.
        return replace(selector, topic=self.topic_names.get(logical, logical))  # type: ignore[type-var]


def traits_of(fault: Fault) -> FaultTraits:
    """What the step's fault declared, and (after ``inject``) its outcome."""
    outcome = fault.outcome
    return FaultTraits(fault.kind, fault.label, fault.exact_epochs, fault.client_windows, fault.isr_rule,
                       tuple(fault.holds), tuple(fault.releases), None if outcome is None else dict(outcome))


@dataclass
class StepCore:
    """Observes fault steps on one cluster through one ZooKeeper observer and one nemesis.
    ``error`` is the exception type raised when the step cannot go on (the runner's
    ScenarioAbortedError, a plain HarnessError for the probe)."""

    cluster: ChaosCluster
    observer: Observer
    nemesis: Nemesis
    topics: Sequence[str]  # the topics the oracle and the checks look at (physical names)
    predictor: Predictor
    naming: StepNaming = field(default_factory=StepNaming)
    timeouts: StepTimeouts = StepTimeouts()
    progress: Progress = field(default=lambda _: None)
    error: type[HarnessError] = HarnessError
    # A 3.x KRaft controller's balance schedule, replayed from the metadata log step by step: fed
    # only what the observer replayed since the last step (_balance_replay)
    _balances: tuple[BalanceReplay, LogPosition] | None = field(default=None, init=False, repr=False)

    @property
    def oracle_topics(self) -> list[str]:
        return list(self.topics) + list(INTERNAL_TOPICS)

    def prepare(self, label: str, step: Step) -> Prepared:
        """Wait for a settled state, then everything the oracle needs, and its answer: the
        target and the fault are resolved from the settled snapshot (:class:`StepNaming`)."""
        from kafka_chaos.harness.observer import ConvergenceTimeout

        self.progress(f"{label}: waiting for a settled state")
        started = time.time()
        clock = Stopwatch()
        # A follower cut off from its peers is live but cannot catch up until healed.
        excused = self.nemesis.faulted_brokers
        try:
            with clock.phase(SETTLE):
                self._wait_off_imbalance_check(label)
                before_snap = self.observer.wait_until(lambda s: is_settled(s, self.oracle_topics, excused),
                                                       timeout=self.timeouts.settle,
                                                       description=f"a settled state before {label}")
        except ConvergenceTimeout as exc:
            why = "; ".join(unsettled(exc.last, self.oracle_topics, excused)) if exc.last else str(exc)
            raise self.error(f"not settled before {label}: {why}") from exc
        with clock.phase(PREDICT):
            return self._prepared(label, step, started, before_snap, clock)

    def _wait_off_imbalance_check(self, label: str) -> None:
        """Let the controller's scheduled leader-imbalance check (ZooKeeper mode; KRaft on 4.x,
        the periodic balance) run before the step rather than inside it
        (:mod:`scenarios.model.imbalance_checks`)."""
        snapshot = self.observer.snapshot(())  # the controller and its election time: no topic needed
        if snapshot.controller is None:
            return
        settings, release = controller_settings(self.cluster, snapshot.controller)
        first = first_check_delay_s(snapshot.mode, release, settings)
        now = time.time()
        if (first is None and snapshot.mode == "kraft" and isinstance(self.observer, KraftObserver)
                and auto_leader_rebalance_enabled(settings)):
            # a 3.x KRaft controller: armed by a write, replayed from its log (with the rebalance
            # on, Kafka's default, which catalogue runs state: harness.config.kafka_default_overrides)
            replay = self._balance_replay(self.observer, check_interval_s(settings))
            wait = wait_for_due(settings, replay.next_due(now, MARGIN_S), now)
        else:
            wait = wait_before_step(settings, snapshot.controller_elected_at, now, first_delay_s=first)
        if wait > 0:
            self.progress(f"{label}: waiting {wait:.0f}s for the controller's scheduled leader-imbalance check")
            time.sleep(wait)

    def _balance_replay(self, observer: KraftObserver, interval_s: float) -> BalanceReplay:
        """The 3.x controller's balance schedule, the replay of the last step fed the entries
        logged since; a new one from the log's start at the first step, when the log diverged
        (the observer replayed it anew) or when the controller's interval differs."""
        kept = self._balances
        if kept is not None and kept[0].interval_s != interval_s:
            kept = None
        fed = observer.metadata_log_since(None if kept is None else kept[1])
        replay = kept[0] if kept is not None and not fed.anew else BalanceReplay(interval_s)
        replay.apply(fed.entries)
        self._balances = (replay, fed.position)
        return replay

    def _prepared(self, label: str, step: Step, started: float, before_snap: ZkSnapshot, clock: Stopwatch) -> Prepared:
        """From the settled snapshot: the oracle's input, the target, the fault, its events and
        the oracle's answers."""
        # Replicas on failed log directories are controller memory, not in ZooKeeper.
        settings, release = controller_settings(self.cluster, before_snap.controller)
        before = self.nemesis.with_controller_memory(
            cluster_state_of(before_snap, self.oracle_topics, settings, release))
        target = self.naming.resolve(step, before_snap, self.cluster.broker_ids)
        fault = self.naming.fault(step, target, before_snap)
        events = self.nemesis.prepare(fault, before) + [AutoRebalance() for n in step.then if n == "auto_rebalance"]
        options = self._expectations(label, before, events, fault.isr_rule, target.brokers)
        return Prepared(label, started, before_snap, before, target, fault, tuple(events), options,
                        tuple(step.then), clock)

    def observe(self, run: ScenarioRun, index: int | None, prepared: Prepared,
                clients: StepClients | None = None) -> StepObserved:
        """Inject the prepared fault and observe until the predicted state (bounded), every
        unheld broker's metadata, the controller's metrics and log lines, and the clients."""
        from kafka_chaos.harness.observer import ConvergenceTimeout

        clients = clients or StepClients()
        clock = prepared.clock
        label, fault, options = prepared.label, prepared.fault, list(prepared.options)
        self.progress(f"{fault.label} on {prepared.target.description}")
        episode = self.nemesis.episode_start(fault)
        with MetadataPoller(self.cluster, self.cluster.broker_ids, list(self.topics)) as poller:
            with clock.phase(MEASURE):
                metrics_before = scrape_metrics(self.cluster)
                logs = LogCursor(self.cluster)
                logs.mark()
                migration_before = migration_status(self.cluster)
            with clock.phase(fault.waits.inject):
                fault_at = self.nemesis.inject(fault)
            exact = epochs_exact(index, fault.exact_epochs, prepared.then, prepared.before, prepared.events)
            judged = judged_topics(self.topics, prepared.before, fault.isr_rule)
            after: ZkSnapshot | None
            try:
                with clock.phase(fault.waits.converge):
                    after = self._converge(label, options, prepared, judged, exact,
                                           failover_check_pending(prepared.before, options))
                converged = True
            except ConvergenceTimeout as exc:
                after, converged = exc.last, False
            waited = time.time() - fault_at
            self.progress(f"{label}: {'converged' if converged else 'DID NOT converge'} in {waited:.1f}s")
            with clock.phase(METADATA):
                metadata, on_disk = (self._metadata(poller, after),
                                     self._on_disk(prepared.before_snap, after, migration_before)) \
                    if converged and after is not None else (None, None)
                in_sync_logs = self._replica_logs(after) if converged and after is not None else None
            expected = (converged_to(after, options, prepared.before_snap, judged, exact_epochs=exact)
                        or matching(after, options, judged)) if after is not None else None
            self.nemesis.remember(expected.state if converged and expected is not None else None)
            with clock.phase(CLIENTS):
                clients.after_converged(prepared, expected or options[0], fault_at)
            measured_at = time.time()
            with clock.phase(MEASURE):
                metrics_after = self._scrape_after_failover(after, fault_at)
                logged = controller_log(self.cluster, logs, fault_at, self.topics)
                sightings = poller.sightings_by_partition(since=fault_at)
                migration = observe_migration(self.cluster, self.observer, list(self.topics), migration_before)
                quorum = ask_voters(self.cluster)
        window_start = min(episode if episode is not None else fault_at, fault_at)
        return StepObserved(
            run=run, index=index, label=label, traits=traits_of(fault), target=prepared.target, then=prepared.then,
            started_at=prepared.started, before=prepared.before_snap, oracle_state=prepared.before,
            oracle_events=prepared.events, fault_at=fault_at,
            episode_started_at=episode if episode is not None else fault_at, after=after, waited_s=waited,
            convergence_timeout_s=self.timeouts.convergence, excused=tuple(sorted(self.nemesis.faulted_brokers)),
            metadata=metadata, sightings=sightings, events=tuple(self.observer.events_since(fault_at)),
            clients=clients.activity(window_start, measured_at), measured_at=measured_at, finished_at=time.time(),
            ops=clients.ops(measured_at), txn=clients.txn(),
            metrics=FaultMetrics(metrics_before, metrics_after) if metrics_before and metrics_after else None,
            controller_log=logged, migration=migration, on_disk=on_disk, ledger=clock.ledger(), replica_logs=in_sync_logs,
            quorum=quorum)

    def _scrape_after_failover(self, after: ZkSnapshot | None, fault_at: float) -> MetricsScrape | None:
        """The brokers' metrics once the step's measurement closes. After a ZooKeeper-mode
        controller failover, scraped again (within :data:`FRESH_CONTROLLER_S` of ``/controller``'s
        write) until the new controller's GlobalPartitionCount covers the partitions with a state:
        its failover event sets the gauge only when it ends (``process``'s ``finally``), and a
        scrape before that is unknown to ``active_controller_count``, not judged."""
        scrape = scrape_metrics(self.cluster)
        elected = [e.at for e in self.observer.events_since(fault_at) if isinstance(e, ControllerChanged)]
        if scrape is None or after is None or after.mode != "zookeeper" or after.controller is None or not elected:
            return scrape
        until = max(elected) + FRESH_CONTROLLER_S
        existing = partitions_with_state(after)
        while global_partition_counts(scrape.brokers).get(after.controller, existing) < existing \
                and time.time() < until:
            time.sleep(0.5)
            scrape = scrape_metrics(self.cluster) or scrape
        return scrape

    def _converge(self, label: str, options: Sequence[Expectation], prepared: Prepared, judged: Sequence[str],
                  exact: bool, failover_check: bool) -> ZkSnapshot:
        """The first snapshot in the predicted state; after a failover that scheduled the leader
        imbalance check (:func:`failover_check_pending`), the first one once the check has run:
        the failover came before the first match, so its check runs within the delay after it."""
        def predicted(s: ZkSnapshot) -> bool:
            return converged_to(s, options, prepared.before_snap, judged, exact_epochs=exact) is not None

        deadline = time.monotonic() + self.timeouts.convergence
        description = f"the predicted state after {label}"
        after = self.observer.wait_until(predicted, timeout=self.timeouts.convergence, description=description)
        if not failover_check:
            return after
        time.sleep(min(FAILOVER_CHECK_DELAY_S + FAILOVER_CHECK_MARGIN_S, max(0.0, deadline - time.monotonic())))
        return self.observer.wait_until(predicted, timeout=max(0.0, deadline - time.monotonic()),
                                        description=f"{description} and the failover's leader-imbalance check")

    def create_topics(self, run: ScenarioRun, events: Sequence[Event], create: Callable[[], None]
                      ) -> tuple[StepObserved, tuple[Expectation, ...], bool]:
        """Topic creation as a step: the oracle asked from the snapshot before it (not waited
        for: the topics do not exist yet, nothing of theirs can be unsettled), ``create`` run,
        then a bounded wait for a predicted state that is also settled, and every live broker's
        metadata. Returns the observation, the expectations and whether it converged."""
        from kafka_chaos.harness.observer import ConvergenceTimeout

        self.progress("creating topics")
        started = time.time()
        clock = Stopwatch()
        with clock.phase(PREDICT):
            snapshot = self.observer.snapshot()
            before = cluster_state_of(snapshot, self.topics, *controller_settings(self.cluster, snapshot.controller))
            options = self._expectations("the topics' creation", before, list(events), None, ())
        created_at = time.time()
        with clock.phase(INJECT):
            create()
        after: ZkSnapshot | None
        try:
            with clock.phase(CONVERGE):
                after = self.observer.wait_until(
                    lambda s: matching(s, list(options), self.topics) is not None and is_settled(s, self.topics),
                    timeout=self.timeouts.settle, description="the created topics' predicted state")
            converged = True
        except ConvergenceTimeout as exc:
            after, converged = exc.last, False
        waited = time.time() - started
        metadata, on_disk = None, None
        if converged and after is not None:
            with clock.phase(METADATA), \
                    MetadataPoller(self.cluster, sorted(after.live_brokers), list(self.topics)) as poller:
                metadata = self._metadata(poller, after)
                on_disk = self._on_disk(snapshot, after)
        now = time.time()
        observed = StepObserved(
            run=run, index=None, label="create_topic", traits=FaultTraits("create_topic", "create_topic", exact_epochs=True),
            target=Target((), "cluster"), then=(), started_at=started, before=snapshot, oracle_state=before,
            oracle_events=tuple(events), fault_at=created_at, episode_started_at=created_at, after=after,
            waited_s=waited, convergence_timeout_s=self.timeouts.settle, excused=(), metadata=metadata,
            sightings={}, events=(), clients={}, measured_at=now, finished_at=now, on_disk=on_disk,
            ledger=clock.ledger())
        return observed, options, converged

    def _expectations(self, label: str, before: ClusterState, events: list[Event], rule: str | None,
                      rule_brokers: Sequence[int]) -> tuple[Expectation, ...]:
        """The oracle's answers; a refusal ends the scenario with one line, never a traceback."""
        try:
            return expectations(self.predictor, before, events, rule=rule, rule_brokers=rule_brokers,
                                topics=list(self.topics))
        except Exception as exc:  # noqa: BLE001 - an oracle that cannot answer decides nothing
            raise self.error(f"the oracle could not predict {label} ({type(exc).__name__}: {exc})") from exc

    def _asked(self, after: ZkSnapshot) -> list[int]:
        # Brokers a fault still holds (a cut broker) cannot receive the controller's requests:
        # their metadata and their logs are stale by design, so they are not asked.
        return [b for b in sorted(after.live_brokers) if b not in self.nemesis.faulted_brokers]

    def _on_disk(self, before: ZkSnapshot, after: ZkSnapshot,
                 migration_before: Mapping[str, Any] | None = None) -> dict[int, DiskAnswer]:
        held = tuple(self.nemesis.faulted_brokers)
        reconciled = reconciled_brokers(migration_before, migration_status(self.cluster), before, after, held) \
            if migration_before is not None else frozenset()
        return replicas_on_disk(self.cluster, self._asked(after), self.oracle_topics,
                                lambda answers: disk_settled(before, after, self.oracle_topics, held, answers, reconciled),
                                timeout=self.timeouts.disk)

    def _replica_logs(self, after: ZkSnapshot) -> dict[str, PartitionLogs] | None:
        """The in-sync replicas' logs of the scenario's topics (None: a launcher that cannot read
        them); the internal topics are compacted, each replica by itself (``scenarios.run.log_view``)."""
        if not implements(self.cluster, ReplicaLogReader):
            return None
        return replica_logs(cast(ReplicaLogReader, self.cluster), leaders_high_watermarks(self.cluster), after,
                            self.topics, self.nemesis.faulted_brokers, timeout=self.timeouts.disk)

    def _metadata(self, poller: MetadataPoller, after: ZkSnapshot) -> dict[int, MetadataAnswer]:
        asked = self._asked(after)
        # A topic queued for deletion, or a partition without a state znode, is in no broker's
        # metadata cache: not awaited (scenarios.checks.registry.metadata_agrees).
        zk_parts = {k: v for k, v in observed_partitions(after, list(self.topics)).items()
                    if k[0] not in after.topics_being_deleted and v.version >= 0}
        return poller.wait_agreement(zk_parts, asked, timeout=self.timeouts.metadata)


def controller_settings(cluster: Cluster, controller: int | None) -> tuple[dict[str, str], str]:
    """The broker settings and the release the oracle predicts with: the controller's. They
    differ from the cluster's only after a rolling upgrade moved the controller's broker
    (``harness.cluster.ReleaseRoller``): the controller's release decides."""
    settings, release = dict(cluster.broker_settings()), cluster.kafka_version
    if implements(cluster, MigrationControl):  # the brokers registered with a KRaft controller as ZooKeeper brokers
        control = cast(MigrationControl, cluster)
        settings[MIGRATING_ZK_BROKERS] = ",".join(str(b) for b in cluster.broker_ids if control.broker_role(b) == HYBRID)
    if controller is not None and controller in cluster.broker_ids and implements(cluster, ReleaseRoller):
        roller = cast(ReleaseRoller, cluster)
        settings.update(roller.broker_overrides(controller))
        release = roller.broker_version(controller)
    elif controller is not None and controller not in cluster.broker_ids and implements(cluster, KraftReleaseRoller):
        # a migrated cluster's KRaft controllers rolled one by one (kraft_roll): the active one's
        # release decides its code's rules; the finalized features, read from the log, the rest
        release = cast(KraftReleaseRoller, cluster).node_version(controller)
    return settings, release


def scrape_metrics(cluster: Cluster) -> MetricsScrape | None:
    """Every live broker's JMX exporter (bounded: a paused or killed broker is absent); None
    when the cluster's brokers run no exporter."""
    from kafka_chaos.harness.metrics import endpoints_of, scrape_brokers

    endpoints = endpoints_of(cluster)
    if not endpoints:
        return None
    at, values = scrape_brokers(endpoints)
    return MetricsScrape(at, values)


def controller_log(cluster: Cluster, logs: LogCursor, fault_at: float, topics: Sequence[str]) -> tuple[LogEvent, ...] | None:
    """The controller's and new leaders' lines about this step's topics since the fault
    (None when they cannot be read: the logs are a measurement, never a reason to abort)."""
    try:
        lines = logs.lines_since_mark()
    except Exception as exc:  # noqa: BLE001 - e.g. a container gone while dumping its log
        log.warning("reading the controller logs: %s", exc)
        return None
    # A second of slack before the fault: the log's milliseconds against our clock.
    return tuple(parse_lines(lines, after=fault_at - 1.0, topics=list(topics)))

"""The check registry: every check is a pure function of one recorded observation
(:mod:`scenarios.history.observations`), registered here, run by :func:`evaluate`.

The runner only observes; ``kafka-chaos check`` runs the same :func:`evaluate` over a stored
history, so a corrected oracle or a new check applies to old runs. A check that raises yields
one unknown result (Jepsen's ``check-safe``), never a pass. Registration order is the order
results (and records) come out in.

Step checks compare against the step's :class:`~scenarios.checks.expectations.Expectation` that the
snapshot after the step matches — one per legal interleaving of the step's events — or the main
one when none matches; which one matched is said in the ``converged`` result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kafka_chaos.oracle import CancelReassignment, CreateTopic, DeleteTopic, Mode, Reassign, predict
from kafka_chaos.oracle.kraft.config import reassignment_completes_kafka_19975
from kafka_chaos.oracle.durability import power_failure_losses
from kafka_chaos.records.schema import STALL_S, Record
from kafka_chaos.harness.zkevents import ControllerChanged, PartitionStateWritten
from kafka_chaos.scenarios.checks import availability
from kafka_chaos.scenarios.model import isr_rules
from kafka_chaos.scenarios.checks import misplaced
from kafka_chaos.scenarios.checks.disk import check_replicas_on_disk, reconciled_brokers, untold_removals
from kafka_chaos.scenarios.checks.min_isr import GRACE_S, MIN_INSYNC_REPLICAS, Writes, check_min_isr_honoured
from kafka_chaos.scenarios.checks.producer_ids import check_producer_ids_unique
from kafka_chaos.scenarios.checks.replica_logs import check_replica_logs
from kafka_chaos.scenarios.checks.topic_ids import check_topic_ids_kept
from kafka_chaos.scenarios.checks.isr_registered import check_isr_registered
from kafka_chaos.scenarios.checks.leaders import check_leaders_elected_active
from kafka_chaos.scenarios.checks.quorum import check_one_quorum_leader
from kafka_chaos.scenarios.checks.voters import VOTER_CHANGE, check_quorum_voters
from kafka_chaos.scenarios.history import controller_log
from kafka_chaos.scenarios.history.migration import WRITE_BEHIND_BOUND_S
from kafka_chaos.scenarios.history import controller_metrics as cm
from kafka_chaos.scenarios.checks import client_history as hc
from kafka_chaos.scenarios.checks.copy import check_copy
from kafka_chaos.scenarios.checks.transactions import check_transactions, workload_figures
from kafka_chaos.scenarios.checks.txn_availability import (
    TRANSPARENT_FAULTS,
    check_transparent_operation,
    txn_availability as txn_window,
)
from kafka_chaos.scenarios.checks import latency as lat
from kafka_chaos.scenarios.clients.ops import READBACK, ClientOps
from kafka_chaos.scenarios.clients.delivery import DeliveryReport, validate_delivery
from kafka_chaos.scenarios.checks.migration import (
    check_dual_write,
    check_isr_within_replicas,
    check_leader_epochs_monotone,
    check_migration_phase,
    check_rollback_allowed,
    check_rollback_controller_epoch,
    migration_timeline,
)
from kafka_chaos.scenarios.checks.functions import (
    CheckResult,
    FRESH_CONTROLLER_S,
    partitions_with_state,
    check_active_controller_count,
    check_converged,
    check_delivery,
    check_isr_rule,
    check_metadata_agrees,
    check_partition_epoch,
    check_reassignments_completed_in_sync,
    check_quorum_leader,
    check_single_controller,
    compare_partitions,
    recovering_elections,
)
from kafka_chaos.scenarios.checks.expectations import (Expectation, Predictor, by_epochs, epochs_exact, expectations,
                                                       matching)
from kafka_chaos.scenarios.checks.time_ledger import ledger_measurement
from kafka_chaos.scenarios.history.observations import (
    Observation,
    ScenarioAborted,
    ScenarioFinished,
    ScenarioSkipped,
    StepObserved,
    merged_txn,
)
from kafka_chaos.scenarios.model.ledger import ITERATION, STEP, TOPIC_CREATION
from kafka_chaos.scenarios.model.snapshots import (
    INTERNAL_TOPICS,
    judged_topics,
    mismatches,
    observed_partitions,
    predicted_partitions,
)

log = logging.getLogger(__name__)

UNCLEAN_ELECTED = "unclean_elected"
# The kinds of scenarios.faults.disks that power-fail brokers (checks import no fault; a KRaft
# quorum leader's power failure takes no broker's log).
BROKER_POWER_FAILURES = frozenset({"power_failure", "controller_power_failure"})

O = TypeVar("O", StepObserved, ScenarioFinished, ScenarioAborted, ScenarioSkipped)


@dataclass
class CheckContext:
    """What checks share: the predictor (the oracle, or a deliberately wrong one in tests), the
    scenario's earlier observations, and each step's expectations computed once."""

    predictor: Predictor = predict
    earlier: list[Observation] = field(default_factory=list)
    _expectations: dict[int, tuple[Expectation, ...]] = field(default_factory=dict)

    def remember(self, obs: StepObserved, computed: tuple[Expectation, ...]) -> None:
        """The expectations the runner already computed for ``obs`` from its own oracle input,
        with this context's predictor: not computed twice (enumerating interleavings of large
        clusters takes seconds)."""
        self._expectations[id(obs)] = computed

    def expectations(self, obs: StepObserved) -> tuple[Expectation, ...]:
        key = id(obs)
        if key not in self._expectations:
            topics = obs.topics
            self._expectations[key] = expectations(
                self.predictor, obs.oracle_state, obs.oracle_events, rule=obs.traits.isr_rule,
                rule_brokers=obs.target.brokers, topics=topics)
        return self._expectations[key]

    def expected(self, obs: StepObserved) -> tuple[Expectation, bool]:
        """The expectation the snapshot after matches (True) or the main one (False). Where
        epochs are exact, an alternative matching them too is preferred: interleavings often end
        in the same leaders and ISRs and differ only in how many writes it took (on KRaft the
        partition epochs too: :func:`by_epochs`)."""
        options = self.expectations(obs)
        if obs.after is None:
            return options[0], False
        topics = _judged(obs)
        found = [e for e in options if matching(obs.after, (e,), topics) is not None]
        if not found:
            return options[0], False
        if _exact_epochs(obs):
            same_epochs = by_epochs(found, obs.after, topics)
            if same_epochs:
                return same_epochs[0], True
        return found[0], True


@dataclass(frozen=True)
class RegisteredCheck(Generic[O]):
    name: str
    applies_to: type[O]
    fn: Callable[[O, CheckContext], list[CheckResult]]


CHECKS: list[RegisteredCheck[Any]] = []


def register_check(name: str, applies_to: type[O]) -> Callable[[Callable[[O, CheckContext], list[CheckResult]]],
                                                               Callable[[O, CheckContext], list[CheckResult]]]:
    def register(fn: Callable[[O, CheckContext], list[CheckResult]]) -> Callable[[O, CheckContext], list[CheckResult]]:
        if any(c.name == name for c in CHECKS):
            raise ValueError(f"check {name!r} registered twice")
        CHECKS.append(RegisteredCheck(name, applies_to, fn))
        return fn
    return register


def evaluate(obs: Observation, ctx: CheckContext) -> list[CheckResult]:
    """Every registered check that applies to ``obs``, in registration order; a check that
    raises gives one unknown result with the exception."""
    results: list[CheckResult] = []
    for check in CHECKS:
        if not isinstance(obs, check.applies_to):
            continue
        try:
            results += check.fn(obs, ctx)
        except Exception as exc:  # noqa: BLE001 - a crashing check is unknown, never a pass
            log.warning("check %s crashed: %s", check.name, exc, exc_info=True)
            results.append(CheckResult(check.name, None, detail=f"checker crashed: {type(exc).__name__}: {exc}"))
    return results


# --- steps: the oracle and the cluster-wide checks ----------------------------------------------

def _exact_epochs(obs: StepObserved) -> bool:
    return epochs_exact(obs.index, obs.traits.exact_epochs, obs.then, obs.oracle_state, obs.oracle_events)


@register_check("converged", StepObserved)
def converged(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    description = f"the predicted state after {obs.label}"
    if obs.after is None:
        return [check_converged(description, False, obs.convergence_timeout_s, "no snapshot could be read")]
    expected, matched = ctx.expected(obs)
    if not matched:
        last = "; ".join(mismatches(obs.after, expected.state, _judged(obs)))
        return [check_converged(description, False, obs.waited_s, last)]
    result = check_converged(description, True, obs.waited_s)
    options = ctx.expectations(obs)
    if len(options) > 1:  # say which legal interleaving the cluster took
        result = CheckResult(result.check, True, description, {"alternative": expected.label,
                                                               "alternatives": len(options)},
                             f"matched \"{expected.label}\" ({options.index(expected) + 1} of {len(options)})")
    return [result]


def _judged(obs: StepObserved) -> list[str]:
    """The topics the step's state is judged on: its own and the internal ones the oracle's input holds."""
    return judged_topics(obs.topics, obs.oracle_state, obs.traits.isr_rule)


@register_check("oracle", StepObserved)
def oracle_partitions(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Leader, ISR, replicas, epoch and outcome class of every predicted partition."""
    if obs.after is None:
        return []
    expected, _ = ctx.expected(obs)
    topics = _judged(obs)
    return compare_partitions(observed_partitions(obs.before, topics),
                              predicted_partitions(expected.state, topics),
                              observed_partitions(obs.after, topics), expected.outcomes,
                              exact_epochs=_exact_epochs(obs), live_after=obs.after.live_brokers,
                              recovering=recovering_elections(obs.events))


@register_check("oracle_partition_epoch", StepObserved)
def oracle_partition_epoch(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """KRaft only: every predicted partition epoch; exact where the leader epochs are, except
    on partitions a ZooKeeper-mode leader-side ISR rule changed (its AlterPartitions are not
    counted; KRaft's rules count them: ``Expectation.unexact``)."""
    if obs.after is None or obs.after.mode != "kraft":
        return []
    expected, _ = ctx.expected(obs)
    exact = _exact_epochs(obs)
    results = []
    for (t, p), want in sorted(predicted_partitions(expected.state, _judged(obs)).items()):
        got = obs.after.partitions.get((t, p))
        predicted = getattr(want, "partition_epoch", None)
        if got is None or predicted is None:
            continue
        was = obs.before.partitions.get((t, p))
        results.append(check_partition_epoch(t, p, was.version if was is not None else -1, predicted, got.version,
                                             exact=exact and (t, p) not in expected.unexact))
    return results


@register_check("single_controller", StepObserved)
def single_controller(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """One live controller; the predicted one unless the fault hit the controller (then Kafka's
    election race picks any live broker)."""
    if obs.after is None:
        return []
    expected, _ = ctx.expected(obs)
    controller_hit = obs.before.controller in obs.target.brokers
    # A migration step may hand the cluster from one controller to the other (the copy, a
    # rollback): the controller and its epoch are then another kind's, and any is allowed.
    handed_over = obs.before.mode != obs.after.mode
    allowed = (None if controller_hit or handed_over or expected.state.controller is None
               else [expected.state.controller])
    if obs.after.mode == "kraft":
        return [check_quorum_leader(obs.after.controller, obs.after.controller_epoch,
                                    None if handed_over else obs.before.controller_epoch, allowed)]
    return [check_single_controller(obs.after.controller, sorted(obs.after.live_brokers), allowed)]


@register_check("migration", StepObserved)
def migration_invariants(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """A migrating cluster's steps (:mod:`scenarios.checks.migration`): the phase each migration step
    leads to, ZooKeeper = the metadata log while dual-writing, the rollback's preconditions, and
    leader epochs and ISR ⊆ replicas across every step."""
    m = obs.migration
    if m is None or obs.after is None:
        return []
    results = check_migration_phase(obs.traits.kind, obs.traits.label, m.after)
    if m.dual_writing:
        results.append(check_dual_write(m.zookeeper, m.kraft, obs.topics, m.write_behind_s, WRITE_BEHIND_BOUND_S))
    if obs.traits.kind == "migration_deprovision":
        results += [check_rollback_allowed(m.before), check_rollback_controller_epoch(obs.after, obs.topics)]
    results += [check_leader_epochs_monotone(obs.before, obs.after, obs.topics),
                check_isr_within_replicas(obs.after, obs.topics),
                migration_timeline(obs.traits.label, m, obs.measured_at - obs.fault_at)]
    return results


@register_check("metadata_agrees_zk", StepObserved)
def metadata_agrees(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    if obs.after is None:
        return []
    if obs.metadata is None:
        return [CheckResult("metadata_agrees_zk", None, detail="not checked: ZooKeeper never converged")]
    # Not compared: a topic queued for deletion (the controller sends it with leader
    # LeaderDuringDelete and ZkMetadataCache.updateMetadata drops it) and a partition without a
    # state znode (UpdateMetadata carries only partitions with leadership information).
    deleting = set(getattr(obs.after, "topics_being_deleted", ()))
    zk = {k: v for k, v in observed_partitions(obs.after, obs.topics).items()
          if k[0] not in deleting and v.version >= 0}
    return [check_metadata_agrees(zk, obs.metadata)]


@register_check("active_controller_count", StepObserved)
def active_controller_count(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """ZooKeeper-mode controllers (a migration's hybrid phase included): the brokers' own
    ActiveControllerCount, scraped when the step's measurement closed, against ``/controller``."""
    if obs.metrics is None or obs.after is None or obs.after.mode != "zookeeper":
        return []
    # A broker a fault holds cut off from ZooKeeper cannot learn that its session expired: it
    # resigns only when a new session begins (KafkaController.startup's beforeInitializingSession
    # -> processExpire, 3.9.2 lines 213 and 2589), so a cut controller still says it is active.
    counts = {b: v for b, v in cm.active_controller_counts(obs.metrics.after.brokers).items()
              if b not in obs.excused}
    if not counts:  # a release or launcher whose brokers export no such gauge
        return []
    after, scraped_at = obs.after, obs.metrics.after.at
    changed = any(isinstance(e, ControllerChanged) and e.at > after.taken_at for e in obs.events)
    # And it acts as the controller: its GlobalPartitionCount covers every partition with a state
    # znode (none in histories scraped before the gauge was exported: that part is skipped).
    partitions = cm.global_partition_counts(obs.metrics.after.brokers)
    existing = partitions_with_state(after)
    fresh = any(isinstance(e, ControllerChanged) and 0 <= scraped_at - e.at < FRESH_CONTROLLER_S for e in obs.events)
    return [check_active_controller_count(after.controller, counts, changed, partitions=partitions,
                                          existing=existing, fresh=fresh)]


@register_check("reassignment_in_sync", StepObserved)
def reassignment_in_sync(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """The reassignments the step made or found pending, once completed: every target replica
    was in the ISR (:func:`~scenarios.checks.functions.check_reassignments_completed_in_sync`)."""
    if obs.after is None:
        return []
    reassigned = {(e.topic, e.partition) for e in obs.oracle_events if isinstance(e, Reassign)}
    reassigned |= {k for k, s in obs.before.partitions.items() if s.adding_replicas or s.removing_replicas}
    # A KRaft cancellation reverts without waiting for the ISR (cancelPartitionReassignment): no completion
    reassigned -= {(e.topic, e.partition) for e in obs.oracle_events if isinstance(e, CancelReassignment)}
    state = obs.oracle_state
    kafka_19975 = state.mode is Mode.KRAFT and reassignment_completes_kafka_19975(state.release)
    return check_reassignments_completed_in_sync(obs.before, obs.after, reassigned, kafka_19975)


@register_check("one_quorum_leader", StepObserved)
def one_quorum_leader(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """KRaft voters (a KRaft cluster's, a migration's once provisioned): at most one answers as the
    quorum's leader, of the newest epoch (:mod:`scenarios.checks.quorum`)."""
    if not obs.quorum:
        return []
    return [check_one_quorum_leader(obs.quorum, obs.after, obs.fault_at)]


@register_check("quorum_voters", StepObserved)
def quorum_voters(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """A dynamic quorum's voter change (scenarios.faults.voters): every running voter's log and the
    leader name the voter set expected (:mod:`scenarios.checks.voters`)."""
    seen = (obs.traits.outcome or {}).get(VOTER_CHANGE)
    return [] if seen is None else [check_quorum_voters(seen)]


@register_check("isr_registered", StepObserved)
def isr_registered(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Once the step converged: no led partition's ISR names an unregistered broker
    (:mod:`scenarios.checks.isr_registered`), the scenario's topics and the internal ones."""
    # Only a step that converged while it ran (a fact of the run, not of the oracle judging it
    # now): an unsettled snapshot may name a broker the controller has yet to take out.
    if obs.after is None or obs.waited_s >= obs.convergence_timeout_s:
        return []
    return [check_isr_registered(obs.after, [*obs.topics, *INTERNAL_TOPICS])]


@register_check("leader_elected_active", StepObserved)
def leader_elected_active(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """KRaft: every leader the step's metadata-log writes elect is an active broker at its record
    (:mod:`scenarios.checks.leaders`). Not a migration: its ZooKeeper brokers register with the
    KRaft controller as the migration goes (a leader the ZooKeeper controller elected may be
    copied before its broker registers)."""
    if obs.after is None or obs.after.mode != "kraft" or obs.migration is not None:
        return []
    before = {key: s.leader for key, s in obs.before.partitions.items()}
    return check_leaders_elected_active(before, obs.partition_state_writes())


@register_check("topic_ids_kept", StepObserved)
def topic_ids_kept(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """No topic's id changed or vanished in the step (:mod:`scenarios.checks.topic_ids`), but
    those the step deleted or created."""
    if obs.after is None:
        return []
    made = {e.topic for e in obs.oracle_events if isinstance(e, (CreateTopic, DeleteTopic))}
    return check_topic_ids_kept(obs.before, obs.after, made)


@register_check("replicas_on_disk", StepObserved)
def replicas_on_disk(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Each asked broker's logs are its assigned replicas (:mod:`scenarios.checks.disk`); strays
    removed while their broker could not be told, in this step or an earlier one, are let be."""
    if obs.on_disk is None or obs.after is None:
        return []
    steps = [(o.before, o.after, o.excused, _reconciled(o)) for o in [*ctx.earlier, obs] if isinstance(o, StepObserved)]
    return [check_replicas_on_disk(obs.after, [*obs.topics, *INTERNAL_TOPICS], obs.on_disk,
                                   tolerated=untold_removals(steps))]


def _reconciled(obs: StepObserved) -> frozenset[int]:
    if obs.migration is None or obs.after is None:
        return frozenset()
    return reconciled_brokers(obs.migration.before, obs.migration.after, obs.before, obs.after, obs.excused)


@register_check("replica_logs_agree", StepObserved)
def replica_logs_agree(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Each partition's in-sync replicas hold the same log below the high watermark
    (:mod:`scenarios.checks.replica_logs`)."""
    return [] if obs.replica_logs is None else check_replica_logs(obs.replica_logs)


@register_check("min_isr_honoured", StepObserved)
def min_isr_honoured(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Once the step converged, no NOT_ENOUGH_REPLICAS refusal while the ISR held the topic's
    minimum and no acknowledgement while it was below (:mod:`scenarios.checks.min_isr`); nothing
    for a step that did not converge or a history without refusals recorded (before v8)."""
    recorded = {k: Writes(tuple(at for _, at in c.refused), tuple(a.acked_at for a in c.acks))
                for k, c in obs.clients.items() if c.refused is not None}
    if obs.after is None or obs.index is None or not recorded or obs.waited_s >= obs.convergence_timeout_s:
        return []
    since = obs.fault_at + obs.waited_s + GRACE_S
    expected, _ = ctx.expected(obs)
    configured = {t: ts.config for t, ts in expected.state.topics.items()}
    return check_min_isr_honoured(obs.after, recorded, since, obs.measured_at,
                                  obs.oracle_state.config.get(MIN_INSYNC_REPLICAS), configured)


@register_check("isr_rule", StepObserved)
def isr_rule(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """The documented leader-side ISR rule, per partition it changes (:mod:`scenarios.model.isr_rules`)."""
    rule = obs.traits.isr_rule
    if rule is None or obs.after is None:
        return []
    expected, _ = ctx.expected(obs)
    results = []
    for t, p in expected.ruled:
        if (t, p) not in obs.after.partitions:
            continue  # the oracle check already reports the partition missing
        # Leader and epoch stay as they were -- after the controller's own writes, where the
        # rule follows them (a rejoin after the controller took the broker out).
        reference = (expected.oracle.topics[t].partitions[p] if rule in isr_rules.AFTER_CONTROLLER
                     else obs.before.partitions[(t, p)])
        results.append(check_isr_rule(rule, isr_rules.RULE_SOURCES[rule], t, p, reference,
                                      expected.state.topics[t].partitions[p], obs.after.partitions[(t, p)]))
    return results


# --- steps: measurements ------------------------------------------------------------------------

def _acks(obs: StepObserved, topic: str, partition: int) -> list[Any]:
    activity = obs.clients.get(f"{topic}-{partition}")
    return list(activity.acks) if activity is not None else []


@register_check("latency", StepObserved)
def latency(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """One measurement per partition whose leader the oracle moves to a live broker: when the
    controller noticed, wrote the new leader, the brokers showed it, clients got acks again."""
    if obs.index is None:
        return []
    expected, _ = ctx.expected(obs)
    live = sorted(obs.after.live_brokers) if obs.after is not None else []
    results = []
    for (t, p), want in sorted(predicted_partitions(expected.state, obs.topics).items()):
        was = obs.before.partitions.get((t, p))
        if was is None or want.leader == -1 or want.leader == was.leader:
            continue
        breakdown = lat.breakdown(
            obs.fault_at,
            detection=lat.detection_at(obs.events, obs.target.brokers, obs.fault_at),
            election=lat.election_at(obs.events, t, p, want.leader, obs.fault_at),
            propagation=lat.propagation_at(list(obs.sightings.get(f"{t}-{p}", ())), live, want.leader, obs.fault_at),
            acks=_acks(obs, t, p), partition=p, window_end=obs.measured_at,
            controller=None if obs.controller_log is None else controller_log.partition_phases(
                obs.controller_log, t, p, want.leader, obs.fault_at))
        got = obs.after.partitions.get((t, p)) if obs.after is not None else None
        results.append(CheckResult(
            "latency", None, {"leader": want.leader}, {"leader": got.leader if got is not None else None},
            f"{t}-{p} leader {was.leader} -> {want.leader}", t, p, kind="measurement",
            latency_ms=breakdown.ms(), timestamps=breakdown.timestamps()))
    return results


@register_check("client_window", StepObserved)
def client_window(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Faults that leave brokers running but unreachable: one measurement per partition with a
    replica on the hit broker whose leader stays (those whose leader moves have a ``latency``
    result). A cut partition may stall with nothing moving in ZooKeeper (a leader cut off from
    its followers cannot commit ``acks=all``), so the window runs to the end of the step; a
    heal's window starts at the cut, covering the whole episode."""
    if not obs.traits.client_windows or obs.index is None:
        return []
    expected, _ = ctx.expected(obs)
    hit = set(obs.target.brokers)
    healing = bool(obs.traits.releases)
    results = []
    for (t, p), want in sorted(predicted_partitions(expected.state, obs.topics).items()):
        was = obs.before.partitions.get((t, p))
        if was is None or (hit and not hit & set(was.replicas)) or want.leader not in (was.leader, -1):
            continue  # no broker hit: a fault on a whole topic (its config), every partition measured
        isr_change = (lat.isr_written_at(obs.events, t, p, want.isr, obs.fault_at)
                      if set(want.isr) != set(was.isr) else None)
        window = lat.client_window(obs.episode_started_at, obs.measured_at, _acks(obs, t, p), p,
                                   fault_at=obs.fault_at, isr_change_at=isr_change)
        role = "leader" if was.leader in hit else "follower" if hit else "partition"
        got = obs.after.partitions.get((t, p)) if obs.after is not None else None
        ms = window.ms()
        detail = (f"{t}-{p} (the {role} {'healed' if healing else 'hit'} by {obs.traits.label}): "
                  f"largest produce gap {ms['client_gap']} ms"
                  + (f", ISR changed after {round((isr_change - obs.fault_at) * 1000)} ms" if isr_change else "")
                  + (f"; no ack for {round((obs.measured_at - window.silent_since) * 1000)} ms at the step's end"
                     if window.silent_since is not None else ""))
        results.append(CheckResult(
            "client_window", None, {"leader": want.leader, "isr": sorted(want.isr)},
            {"leader": got.leader if got else None, "isr": list(got.isr) if got else None,
             "stalled_at_end": window.silent_since is not None},
            detail, t, p, kind="measurement", latency_ms=ms, timestamps=window.timestamps()))
    return results


@register_check("controller_metrics", StepObserved)
def controller_metrics(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """One measurement per fault step from the brokers' JMX exporters scraped before the fault
    and when the step's measurement closed (:mod:`scenarios.history.controller_metrics`): controller
    events processed and their time, queue waits, unclean elections, the gauges before/after.
    No ``latency_ms``: the report counts records carrying it as leader switches."""
    if obs.index is None or obs.metrics is None:
        return []
    summary = cm.summarise(obs.metrics)
    return [CheckResult("controller_metrics", None, None, summary, cm.describe(summary), kind="measurement",
                        timestamps={"before": obs.metrics.before.at, "after": obs.metrics.after.at,
                                    "fault": obs.fault_at})]


# --- the end of a scenario ----------------------------------------------------------------------

@register_check("healed", ScenarioFinished)
def healed(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    if obs.healed is None:
        return []
    return [CheckResult("healed", False, "settled", None, obs.healed)]


def unclean_partitions(ctx: CheckContext, topic: str) -> list[int]:
    """Partitions of ``topic`` where an earlier step's expectation says unclean election."""
    found: set[int] = set()
    for obs in ctx.earlier:
        if not isinstance(obs, StepObserved) or obs.index is None:
            continue
        expected, _ = ctx.expected(obs)
        found |= {o.partition for o in expected.outcomes
                  if o.topic == topic and getattr(o.outcome, "value", o.outcome) == UNCLEAN_ELECTED}
    return sorted(found)


def power_failure_partitions(ctx: CheckContext, topic: str) -> list[int]:
    """Partitions of ``topic`` where a ``power_failure`` step took every ISR member's unflushed
    tail (:func:`oracle.durability.power_failure_losses`, from each step's oracle input)."""
    return sorted(power_failure_loss_times(ctx, topic))


def power_failure_loss_times(ctx: CheckContext, topic: str) -> dict[int, list[float]]:
    """Partition of ``topic`` -> when each ``power_failure`` step that took every ISR member's
    unflushed tail struck it (the step's ``fault_at``), in step order."""
    found: dict[int, list[float]] = {}
    failed_earlier: set[int] = set()
    for obs in ctx.earlier:
        if not isinstance(obs, StepObserved) or obs.index is None or obs.traits.kind not in BROKER_POWER_FAILURES:
            continue
        failed = frozenset(obs.target.brokers)
        for loss in power_failure_losses(obs.oracle_state, failed, failed_earlier):
            if loss.partition.topic == topic:
                found.setdefault(loss.partition.partition, []).append(obs.fault_at)
        failed_earlier |= failed
    return found


@register_check("delivery", ScenarioFinished)
def delivery(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    """No acknowledged message lost or duplicated; loss allowed where an unclean election was
    predicted (:func:`scenarios.checks.functions.check_delivery`)."""
    if obs.healed is not None:
        return []
    results: list[CheckResult] = []
    for d in obs.deliveries:
        if d.report is None:
            results.append(CheckResult("delivery", None, detail=d.problem or "no read-back", topic=d.topic))
            continue
        report = _report_from_ops(obs, ctx, d.topic) or d.report
        unclean = unclean_partitions(ctx, d.topic)
        powerless = power_failure_partitions(ctx, d.topic)
        # (a stored report, of a history without ops, knows no deletion: there is none before v10)
        evidence = _misplaced_evidence(obs, ctx, d.topic, report.misplaced) \
            if report.misplaced and not unclean and not powerless else []
        results += check_delivery(d.topic, report, unclean, evidence, d.resent, powerless)
    return results


@register_check("producer_ids_unique", ScenarioFinished)
def producer_ids_unique(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    """No producer id handed to two producer instances over the whole run — the workloads'
    producers and the harness's own InitProducerIds (v9) alike (:mod:`scenarios.checks.producer_ids`);
    nothing for a history without producer ids (before v8)."""
    recorded = [d.producers for d in obs.deliveries if d.producers is not None]
    if obs.granted is not None:
        recorded.append(obs.granted)
    return [check_producer_ids_unique(g for given in recorded for g in given)] if recorded else []


def _report_from_ops(obs: ScenarioFinished, ctx: CheckContext, topic: str) -> DeliveryReport | None:
    """The topic's delivery report recomputed from what the history holds — every
    acknowledgement (the run's stretches leave no gap) and the read-back (the ``readback``
    consumer's polls) — so a re-check applies today's accounting rules to the observations, not
    the verdict of the code that recorded them. None when the history holds no read-back of the
    topic (version 1, or nothing read): then the stored report is all there is."""
    stretches = {n: ops for n, ops in _ops_by_partition(ctx, obs).items() if _split(n)[0] == topic}
    consumed = [(_split(n)[1], p.offset, p.key) for n, ops in stretches.items() for o in ops for p in o.polls
                if p.consumer == READBACK]
    # Acknowledged messages below a low watermark delete_records recorded are deleted, not lost
    # (scenarios.checks.client_history): placed at their acknowledged offset, else where a consumer
    # read them. With such a deletion an empty read-back is judged too (everything may be gone).
    deleted_below = {_split(n)[1]: max(s.low_watermark for s in starts)
                     for n, starts in log_starts(ctx).items() if n in stretches}
    if not consumed and not (deleted_below and stretches):
        return None
    placed: dict[str, int] = {}
    for ops in stretches.values():
        for o in ops:
            for p in o.polls:
                placed[p.key] = min(placed.get(p.key, p.offset), p.offset)
    return validate_delivery((a for ops in stretches.values() for o in ops for a in o.acks), consumed,
                             deleted_below=deleted_below, placed=placed)


def _misplaced_evidence(obs: ScenarioFinished, ctx: CheckContext, topic: str,
                        keys: Sequence[str]) -> list[misplaced.MisplacedEvidence]:
    """What the history holds about each misplaced message (:mod:`scenarios.checks.misplaced`): every
    read of it and of its acknowledged offset, and the partition's leader epochs around it."""
    stretches = {n: ops for n, ops in _ops_by_partition(ctx, obs).items() if _split(n)[0] == topic}
    acks = {a.key: (n, a) for n, ops in stretches.items() for o in ops for a in o.acks}
    changes: dict[int, list[misplaced.LeaderChange]] = {}
    for o in ctx.earlier:
        if isinstance(o, StepObserved):
            for e in o.events:
                if isinstance(e, PartitionStateWritten) and e.topic == topic:
                    changes.setdefault(e.partition, []).append(
                        misplaced.LeaderChange(e.at, e.leader, e.leader_epoch))
    return [misplaced.explain(ack, name, stretches, changes.get(ack.partition, ()))
            for name, ack in (acks[k] for k in keys if k in acks)]


@register_check("scenario_completed", ScenarioAborted)
def scenario_completed(obs: ScenarioAborted, ctx: CheckContext) -> list[CheckResult]:
    return [CheckResult("scenario_completed", False, detail=obs.why)]


@register_check("backend_supports_scenario", ScenarioSkipped)
def backend_supports(obs: ScenarioSkipped, ctx: CheckContext) -> list[CheckResult]:
    return [CheckResult("backend_supports_scenario", None, list(obs.requirements), obs.run.backend, obs.why)]


# --- records ------------------------------------------------------------------------------------

def _when(obs: Observation) -> tuple[float, float]:
    if isinstance(obs, ScenarioSkipped):
        return obs.at, obs.at
    return obs.started_at, obs.finished_at


def to_records(obs: Observation, results: Sequence[CheckResult]) -> list[Record]:
    """The records of one observation's results: a pure function, so a stored history gives the
    same records again (``kafka-chaos check``)."""
    run = obs.run
    started, finished = _when(obs)
    fault = target = None
    if isinstance(obs, StepObserved):
        fault = obs.traits.label
        target = obs.target.description
    return [Record(
        run_id=run.run_id, scenario=run.scenario, iteration=run.iteration, seed=run.seed, backend=run.backend,
        kafka_version=run.kafka_version, brokers=run.brokers, partitions=run.partitions,
        kind="measurement" if r.is_measurement else "check", check=r.check, passed=r.passed,
        started_at=started, finished_at=finished, fault=fault, target=target, expected=r.expected,
        observed=r.observed, detail=r.detail, topic=r.topic, partition=r.partition, latency_ms=r.latency_ms,
        timestamps=r.timestamps, session_timeout_ms=run.session_timeout_ms, tick_time_ms=run.tick_time_ms,
        mode=None if run.mode == "zookeeper" else run.mode,
        git_revision=run.git_revision) for r in results]


def check_history(observations: Sequence[Observation], predictor: Predictor = predict
                  ) -> list[tuple[Observation, list[CheckResult]]]:
    """Evaluate a whole history (several scenarios, in order): each observation with the
    earlier observations of its own scenario iteration as context."""
    contexts: dict[tuple[str, str, int], CheckContext] = {}
    out = []
    for obs in observations:
        key = (obs.run.run_id, obs.run.scenario, obs.run.iteration)
        ctx = contexts.setdefault(key, CheckContext(predictor))
        out.append((obs, evaluate(obs, ctx)))
        ctx.earlier.append(obs)
    return out


# --- the clients' history: consumers through every step ----------------------------

def _ops_by_partition(ctx: CheckContext, obs: Observation) -> dict[str, list[ClientOps]]:
    """Every recorded stretch per "t-p", in order: the earlier steps', then ``obs``'s."""
    out: dict[str, list[ClientOps]] = {}
    for o in [*ctx.earlier, obs]:
        if isinstance(o, (StepObserved, ScenarioFinished)):
            for name, ops in o.ops.items():
                out.setdefault(name, []).append(ops)
    return out


def _split(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


@register_check("client_availability", StepObserved)
def client_availability(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """Per partition of a fault step: the producer's outage from its own delivery reports,
    produce / consume availability in fixed windows, the unavailability window and end-to-end
    latency (:mod:`scenarios.checks.availability`), from the fault to the end of the step's
    measurement. Histories without client ops (version 1) give none."""
    if obs.index is None or not obs.ops:
        return []
    results = []
    for name, ops in sorted(obs.ops.items()):
        topic, partition = _split(name)
        a = availability.measure([ops], obs.fault_at, obs.measured_at)
        e2e = a.latency_ms()
        results.append(CheckResult(
            "client_availability", None, None,
            {"produce_availability": round(a.produce, 4),
             "consume_availability": None if a.consume is None else round(a.consume, 4),
             "windows": a.windows, "window_s": availability.WINDOW_S, "e2e_samples": len(a.e2e_ms)},
            f"{name} during {obs.traits.label}: produce outage {e2e['produce_outage']} ms in {len(a.stalls)} "
            f"stall(s) of {STALL_S:g} s or more; produce {a.produce:.0%} / consume "
            f"{'-' if a.consume is None else f'{a.consume:.0%}'} of {a.windows} windows of "
            f"{availability.WINDOW_S:g} s; longest without ack {e2e['unavailable']} ms; e2e p99 {e2e['e2e_p99']} ms",
            topic, partition, kind="measurement", latency_ms=e2e,
            timestamps={"start": obs.fault_at, "end": obs.measured_at}))
    return results


@register_check("txn_availability", StepObserved)
def txn_availability(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """A fault step's transactions from the fault to the end of its measurement: outcomes, abort
    rate, commit latency and the longest stretch without a commit
    (:mod:`scenarios.checks.txn_availability`); nothing for a step without the transactional
    workload."""
    if obs.index is None or obs.txn is None:
        return []
    return [txn_window(obs.txn.txns, obs.fault_at, obs.measured_at, obs.traits.label)]


@register_check("txn_transparent_operation", StepObserved)
def txn_transparent_operation(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """A step whose fault is a planned operation (an election, a reassignment, a controlled
    shutdown, a roll) with every broker up and unheld before it: no transaction attempt that ended
    from the fault to the end of the measurement was aborted by an error or left unknown
    (:func:`scenarios.checks.txn_availability.check_transparent_operation`)."""
    if obs.index is None or obs.txn is None or obs.traits.kind not in TRANSPARENT_FAULTS:
        return []
    if len(obs.before.live_brokers) != obs.run.brokers or set(obs.excused) - set(obs.target.brokers):
        return []  # a broker already down or cut: its partitions' writes may fail for it
    return [check_transparent_operation(obs.txn.txns, obs.fault_at, obs.measured_at, obs.traits.label)]


def log_starts(ctx: CheckContext) -> dict[str, list[hc.LogStart]]:
    """``"t-p"`` -> the low watermarks earlier ``delete_records`` steps recorded for it (their
    ``traits.outcome``, history v10), in step order."""
    found: dict[str, list[hc.LogStart]] = {}
    for obs in ctx.earlier:
        if isinstance(obs, StepObserved) and obs.index is not None and obs.traits.outcome is not None:
            for name, start in hc.recorded_log_starts(obs.traits.outcome, obs.fault_at).items():
                found.setdefault(name, []).append(start)
    return found


def _history_results(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    stretches = _ops_by_partition(ctx, obs)
    if not stretches:
        return []  # a version-1 history: nothing recorded to check
    read_back = {d.topic for d in obs.deliveries if d.report is not None}
    starts = log_starts(ctx)
    results: list[CheckResult] = []
    for topic in obs.run.topics:
        names = sorted((n for n in stretches if _split(n)[0] == topic), key=lambda n: _split(n)[1])
        if not names:
            continue
        unclean = set(unclean_partitions(ctx, topic))
        power_losses = power_failure_loss_times(ctx, topic)
        found: list[hc.Anomaly] = []
        summaries = {}
        for name in names:
            partition = _split(name)[1]
            anomalies, summary = hc.check_partition(name, stretches[name],
                                                    truncation_allowed=partition in unclean | set(power_losses),
                                                    final_read=topic in read_back, log_starts=starts.get(name, ()),
                                                    power_losses=power_losses.get(partition, ()))
            found += anomalies
            summaries[name] = summary
        deletions = any(n in starts for n in names)  # else the records are what they were before v10
        for kind in hc.ANOMALIES:
            of_kind = [a for a in found if a.kind == kind]
            bad = [a for a in of_kind if not a.allowed and not a.deleted]
            ok = [a for a in of_kind if a.allowed and not a.deleted]
            gone = [a for a in of_kind if a.deleted]
            observed: dict[str, Any] = {
                "anomalies": len(bad), "allowed": len(ok),
                "by_partition": {n: sum(1 for a in of_kind if a.partition == n) for n in names
                                 if any(a.partition == n for a in of_kind)},
                "sample": [f"{a.partition}: {a.detail}" for a in (bad or ok or gone)[:5]]}
            if deletions:
                observed["deleted"] = len(gone)
            if kind == hc.UNSEEN and topic not in read_back:
                results.append(CheckResult(f"history_{kind}", None, 0, observed,
                                           "not judged: no final read-back", topic))
                continue
            polls = sum(s.polls for s in summaries.values())
            detail = (f"{len(bad)} {kind.replace('_', ' ')} anomal{'y' if len(bad) == 1 else 'ies'}"
                      + (f" ({len(ok)} more allowed: {_allowed_because(ok, unclean, set(power_losses))})"
                         if ok else "")
                      + (f" ({len(gone)} more deleted: below the low watermark delete_records recorded on "
                         f"{sorted({a.partition for a in gone})})" if gone else "")
                      + f" over {sum(s.acks for s in summaries.values())} acks and {polls} polls"
                      + (f"; e.g. {bad[0].partition}: {bad[0].detail}" if bad else ""))
            results.append(CheckResult(f"history_{kind}", not bad, 0, observed, detail, topic))
    return results


def _allowed_because(allowed: Sequence[hc.Anomaly], unclean: set[int], powerless: set[int]) -> str:
    """Which partitions' allowed anomalies an unclean election, and which a permitted
    power-failure loss, explains."""
    by_cause = [("unclean election predicted on", unclean), ("power failure's permitted loss on", powerless)]
    return "; ".join(f"{why} {names}" for why, of in by_cause
                     if (names := sorted({a.partition for a in allowed if _split(a.partition)[1] in of})))


@register_check("history", ScenarioFinished)
def history(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    """The Jepsen-style history checker (:mod:`scenarios.checks.client_history`) over every send and
    poll of the scenario: one result per anomaly class and topic, ``history_<class>``; the
    anomalies an unclean election the oracle predicted or a permitted power-failure loss must
    cause are allowed there and counted apart (``observed.allowed``; a power failure's duplicates
    as :mod:`scenarios.checks.client_history` says), and so are the messages ``delete_records`` removed
    (``observed.deleted``, where a step recorded low watermarks)."""
    return _history_results(obs, ctx)


@register_check("transactions", ScenarioFinished)
def transactions(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    """The transactional history checker (:mod:`scenarios.checks.transactions`, issue 43) over
    every stretch the transactional workload recorded (history v11) and its final read-back: one
    result per anomaly class (``txn_<class>``), the permitted write cycles measured (``txn_g0``),
    and the workload's figures (``txn_workload``); nothing for a scenario without it. With Kafka's
    Java copier, what it wrote is judged from the topics (:mod:`scenarios.checks.copy`, ``txn_copy_*``)."""
    history = merged_txn([*ctx.earlier, obs])
    if history is None:
        return []
    return [workload_figures(history), *check_transactions(history), *check_copy(history)]


# --- where the time went (scenarios.checks.time_ledger) ------------------------------------------

@register_check("time_ledger", StepObserved)
def step_time_ledger(obs: StepObserved, ctx: CheckContext) -> list[CheckResult]:
    """A fault step's ledger, or topic creation's (a breakdown of its iteration's ``create_topics``)."""
    return ledger_measurement(STEP if obs.index is not None else TOPIC_CREATION, obs.ledger)


@register_check("iteration_time_ledger", ScenarioFinished)
def iteration_time_ledger(obs: ScenarioFinished, ctx: CheckContext) -> list[CheckResult]:
    """The iteration's time outside its fault steps' ledgers."""
    return ledger_measurement(ITERATION, obs.ledger)


@register_check("aborted_time_ledger", ScenarioAborted)
def aborted_time_ledger(obs: ScenarioAborted, ctx: CheckContext) -> list[CheckResult]:
    """As an iteration's, up to the abort."""
    return ledger_measurement(ITERATION, obs.ledger)

"""Checks: pure functions of what a scenario recorded, each returning pass / fail / unknown.

Modelled on Jepsen's ``checker.clj``: a check never talks to the cluster, it reads recorded
data (the ZooKeeper snapshot before the fault, the oracle's prediction, the snapshot after
convergence, every broker's metadata, the delivery report) and returns a :class:`CheckResult`
with what was expected, what was observed and a readable diff. :func:`check_safe` turns a
checker that raises into ``passed=None`` (unknown) — never a false pass.

Comparison rules follow ``shared/docs/kafka-3.9-zk-controller.md`` §3: leaders exactly, ISRs as
sets (controller-made ISRs keep order, leader-made ones append), replica lists in order (AR
order decides the preferred leader), leader epochs exactly where the oracle models every write
and "strictly increased" where only an election is known to have happened.

A partition state is a :class:`Partition`: an oracle ``PartitionState``, an observer
``PartitionZkState``, or the stand-in for a partition that did not exist before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kafka_chaos.harness.zkevents import PartitionStateWritten
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.oracle.outcomes import PartitionOutcome
from kafka_chaos.scenarios.model.snapshots import partition_differences

log = logging.getLogger(__name__)


class Membership(Protocol):
    """Who a partition's replicas, leader and ISR are (all a broker's metadata shows)."""

    @property
    def replicas(self) -> Sequence[int]: ...

    @property
    def leader(self) -> int: ...

    @property
    def isr(self) -> Sequence[int]: ...


class Partition(Membership, Protocol):
    """What the partition checks read of a partition's state."""

    @property
    def leader_epoch(self) -> int: ...


@runtime_checkable
class Recovering(Protocol):
    """A partition state that has a leader recovery state (the oracle's and ZooKeeper's do)."""

    @property
    def leader_recovery_state(self) -> int: ...


@runtime_checkable
class Eligible(Protocol):
    """A KRaft partition state with KIP-966's fields (the oracle's and the metadata image's)."""

    @property
    def elr(self) -> Sequence[int]: ...

    @property
    def last_known_elr(self) -> Sequence[int]: ...


NO_LEADER = -1

# Outcome classes: what an observer can tell apart from before/after states. The oracle's
# outcomes map onto them (its `Outcome` values are these strings).
LEADER_KEPT = "leader_kept"
ELECTED = "elected"
UNCLEAN_ELECTED = "unclean_elected"
LEADERLESS = "leaderless"

OUTCOME_CLASS = {
    "elected": ELECTED,
    "unclean_elected": UNCLEAN_ELECTED,
    "no_replica_online": LEADERLESS,
    "unchanged": LEADER_KEPT,
    "election_not_needed": LEADER_KEPT,
    "preferred_leader_not_available": LEADER_KEPT,
    # An admin election naming a partition without leadership information fails whole: nothing
    # in the request is elected (oracle/README.md, processReplicaLeaderElection).
    "request_failed": LEADER_KEPT,
}


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict. ``passed`` is True, False, or None for unknown."""

    check: str
    passed: bool | None
    expected: Any = None
    observed: Any = None
    detail: str = ""
    topic: str | None = None
    partition: int | None = None
    # Measurements ("latency", "client_window") are results too, with passed None and the
    # phases in ``latency_ms`` (records.schema); they are not verdicts and count as neither.
    kind: str = "check"
    latency_ms: dict[str, float | None] | None = None
    timestamps: dict[str, float] | None = None

    @property
    def is_measurement(self) -> bool:
        return self.kind == "measurement"

    @property
    def verdict(self) -> str:
        return {True: "pass", False: "FAIL", None: "unknown"}[self.passed]


def check_safe(check: str, fn: Callable[..., CheckResult | list[CheckResult]], *args: Any,
               topic: str | None = None, partition: int | None = None, **kwargs: Any) -> list[CheckResult]:
    """Run a checker; if it raises, the verdict is unknown with the exception as detail."""
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any crash must become "unknown", never a pass
        log.warning("check %s crashed: %s", check, exc, exc_info=True)
        return [CheckResult(check, None, detail=f"checker crashed: {type(exc).__name__}: {exc}",
                            topic=topic, partition=partition)]
    return list(result) if isinstance(result, list) else [result]


def _tp(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


# A partition that did not exist before the event (topic creation): no leader, no epoch yet.
class _NewPartition:
    replicas: tuple[int, ...] = ()
    leader = NO_LEADER
    isr: tuple[int, ...] = ()
    leader_epoch = -1


_NEW_PARTITION = _NewPartition()


# --- oracle vs observed, per partition ------------------------------------------------------

def check_leader(topic: str, partition: int, predicted: Partition, observed: Partition) -> CheckResult:
    ok = observed.leader == predicted.leader
    detail = "" if ok else f"{_tp(topic, partition)}: leader expected {predicted.leader}, observed {observed.leader}"
    return CheckResult("oracle_leader", ok, predicted.leader, observed.leader, detail, topic, partition)


def check_isr(topic: str, partition: int, predicted: Partition, observed: Partition) -> CheckResult:
    want, got = set(predicted.isr), set(observed.isr)
    ok = want == got
    detail = ""
    if not ok:
        missing, extra = sorted(want - got), sorted(got - want)
        detail = (f"{_tp(topic, partition)}: ISR expected {sorted(want)}, observed {list(observed.isr)}"
                  f" (missing {missing}, unexpected {extra})")
    return CheckResult("oracle_isr", ok, sorted(want), list(observed.isr), detail, topic, partition)


def check_replicas(topic: str, partition: int, predicted: Partition, observed: Partition) -> CheckResult:
    want, got = list(predicted.replicas), list(observed.replicas)
    ok = want == got
    detail = "" if ok else f"{_tp(topic, partition)}: replicas expected {want} (in order), observed {got}"
    return CheckResult("oracle_replicas", ok, want, got, detail, topic, partition)


def check_epoch(topic: str, partition: int, before: Partition, predicted: Partition, observed: Partition, *,
                exact: bool) -> CheckResult:
    """Exactly the predicted epoch when ``exact`` (the oracle models every controller write on
    this path); otherwise strictly greater than before when the oracle predicts a new epoch,
    and never smaller than before."""
    b, p, o = before.leader_epoch, predicted.leader_epoch, observed.leader_epoch
    if not getattr(predicted, "has_leader_and_isr", True):
        # the oracle's NewPartition (no state znode: a new partition with no live replica) is
        # what a snapshot shows as version -1 (epoch -1)
        ok = getattr(observed, "version", 0) < 0
        detail = "" if ok else f"{_tp(topic, partition)}: no state znode expected, observed epoch {o}"
        return CheckResult("oracle_epoch", ok, {"rule": "no state znode", "before": b, "predicted": p}, o,
                           detail, topic, partition)
    if exact:
        ok = o == p
        rule = f"exactly {p}"
    elif p > b:
        ok = o > b
        rule = f"> {b} (was {b}; oracle's own count {p})"
    else:
        ok = o >= b
        rule = f">= {b} (no controller write predicted)"
    detail = "" if ok else f"{_tp(topic, partition)}: leader_epoch expected {rule}, observed {o}"
    return CheckResult("oracle_epoch", ok, {"rule": "exact" if exact else "increased", "before": b,
                                            "predicted": p}, o, detail, topic, partition)


def epochs_not_reached(before: Mapping[tuple[str, int], Partition], predicted: Mapping[tuple[str, int], Partition],
                       observed: Mapping[tuple[str, int], Partition], *, exact: bool) -> list[str]:
    """Why :func:`check_epoch` would fail now, one line per predicted partition it would fail
    (a partition missing from ``observed`` is the other comparisons' to report): what a step
    waits on besides leaders and ISRs, so it is not judged before the controller's last write."""
    return [result.detail for (topic, p), want in sorted(predicted.items()) if (got := observed.get((topic, p)))
            and not (result := check_epoch(topic, p, before.get((topic, p)) or _NEW_PARTITION, want, got,
                                           exact=exact)).passed]


class Versioned(Protocol):
    """An observed KRaft partition: its ``version`` is the partition epoch."""

    @property
    def version(self) -> int: ...


class EpochPredicted(Protocol):
    """A predicted partition: its partition epoch (None where the oracle has none, ZooKeeper mode)."""

    @property
    def partition_epoch(self) -> int | None: ...


def partition_epochs_not_reached(before: Mapping[tuple[str, int], Versioned],
                                 predicted: Mapping[tuple[str, int], EpochPredicted],
                                 observed: Mapping[tuple[str, int], Versioned], *, exact: bool,
                                 ruled: Iterable[tuple[str, int]] = ()) -> list[str]:
    """KRaft: the predicted partitions whose partition epoch is still *behind* what
    :func:`check_partition_epoch` wants (one line each): a step waits on these too, since some of
    the controller's records for an event come after its leaders and ISRs settled (a broker's
    first KRaft start assigns its replicas' directories, AssignReplicasToDirs, a moment after it
    joins). An epoch past the prediction is not waited on: the check says so at once."""
    lagging = []
    unexact = set(ruled)
    for (topic, p), want in sorted(predicted.items()):
        got, target = observed.get((topic, p)), want.partition_epoch
        if got is None or target is None:
            continue
        was = before[(topic, p)].version if (topic, p) in before else -1
        behind = got.version < target if exact and (topic, p) not in unexact else target > was >= got.version
        if behind:
            lagging.append(f"{_tp(topic, p)} partition epoch {got.version}, waiting for {target}")
    return lagging


def predicted_class(outcomes: Iterable[PartitionOutcome], topic: str, partition: int) -> str:
    """The class of the last event that did more than keep the leader for this partition."""
    klass = LEADER_KEPT
    for o in outcomes:
        if o.topic == topic and o.partition == partition:
            value = str(getattr(o.outcome, "value", o.outcome))  # an Outcome, or its text
            mapped = OUTCOME_CLASS.get(value)
            if mapped is None:
                raise ValueError(f"unknown oracle outcome {value!r}")
            if mapped != LEADER_KEPT:
                klass = mapped
    return klass


def observed_class(before: Partition, after: Partition, elected_recovering: bool = False) -> str:
    """What the before/after states show: leaderless; a new leader taken from outside the old
    ISR while the old leader is gone from the ISR too (unclean, ``Election.leaderForOffline``
    with unclean on: ISR becomes [leader]); a new leader; or the same leader.

    A replica that was out of the ISR only because it was down, restarted, caught up and was
    then elected (preferred election, auto-rebalance) keeps the old leader in the ISR: clean.

    ``elected_recovering``: the step's own metadata-log writes set ``after.leader`` leader
    RECOVERING (:func:`recovering_elections`), though ``after`` may show it RECOVERED already."""
    if after.leader == NO_LEADER:
        return LEADERLESS
    if after.leader != before.leader:
        if not before.isr and before.leader == NO_LEADER and (
                elected_recovering or isinstance(after, Recovering) and after.leader_recovery_state == RECOVERING):
            # Kafka 4.1+ (KIP-966, ELR on): a partition whose last ISR member left has an empty
            # ISR; a leader elected from outside it uncleanly -- an admin UNCLEAN election, or the
            # last known leader (PartitionChangeBuilder 4.1.2 lines 273-283) -- is RECOVERING, one
            # elected from the ELR is not (lines 336-339). RECOVERING lasts until the ISR grows
            # (an unclean leader's first AlterPartition writes RECOVERED), so a live follower that
            # catches up within the step hides it from ``after``: the step's own writes show it.
            # Found by `explore --mode kraft --seed 7701` on 4.4.0: both replicas of [4, 3] killed
            # left ELR [4]; 4's re-registration after its unclean shutdown took it out of the ELR
            # (ReplicationControlManager.handleBrokerShutdown, 4.3.1 sources lines 1481-1488) and
            # its unfence elected it as the last known leader, "UNCLEAN partition change ...
            # leaderRecoveryState: RECOVERED -> RECOVERING" (PartitionChangeBuilder 4.3.1 lines
            # 246-247, 344-351), then 3 joined the ISR: RECOVERED, ELR [4] before the step.
            return UNCLEAN_ELECTED
        if (after.leader in before.replicas and after.leader not in before.isr
                and before.leader not in after.isr and before.isr):  # no ISR yet: initialisation
            return UNCLEAN_ELECTED
        return ELECTED
    return LEADER_KEPT


def recovering_elections(events: Iterable[object]) -> frozenset[tuple[str, int, int]]:
    """(topic, partition, leader) of every partition state a step's events show written with
    its leader RECOVERING (KIP-704: an unclean election's record), however briefly."""
    return frozenset((e.topic, e.partition, e.leader) for e in events
                     if isinstance(e, PartitionStateWritten) and e.leader_recovery_state == RECOVERING)


def check_outcome(topic: str, partition: int, outcomes: Iterable[PartitionOutcome], before: Partition, observed: Partition,
                  predicted_leader: int | None = None, live_after: Iterable[int] | None = None,
                  elected_recovering: bool = False) -> CheckResult:
    want = predicted_class(outcomes, topic, partition)
    got = observed_class(before, observed, elected_recovering)
    ok = (want == got
          # The leader znode still names a broker that is down, and nothing else is live to lead:
          # when every broker died no controller is left to write, so ZooKeeper keeps the old
          # leader. Leaderless is what that shows (the oracle predicts the same unchanged state).
          or (want == LEADERLESS and got == LEADER_KEPT and live_after is not None
              and observed.leader not in set(live_after))
          # A leaderless partition whose leader was already gone (e.g. a dead ISR member restarted
          # elsewhere) and a "kept" prediction are the same observation: nothing was elected.
          or (want == LEADER_KEPT and got == LEADERLESS and before.leader == NO_LEADER)
          # Several events in one step re-electing the leader it had (a restart of an RF = 1
          # partition's only replica: leaderless at the shutdown, elected again at the startup)
          # look like a kept leader from before/after; the epoch check counts the writes.
          # Found by `kafka-chaos explore --seed 1`.
          or (want == ELECTED and got == LEADER_KEPT and predicted_leader == before.leader != NO_LEADER)
          # The same on Kafka 4.x after a kill (KIP-966): out of the ELR at its re-registration, the
          # replica comes back as the last known leader, uncleanly -- which the step's writes show
          # (RECOVERING; `explore --mode kraft --seed 7701` on 4.4.0, a hard restart of RF 1 [12]).
          or (want == UNCLEAN_ELECTED and got == LEADER_KEPT and predicted_leader == before.leader != NO_LEADER
              and elected_recovering))
    detail = "" if ok else (f"{_tp(topic, partition)}: oracle says {want}, cluster shows {got} "
                            f"(leader {before.leader} -> {observed.leader})")
    return CheckResult("oracle_outcome", ok, want, got, detail, topic, partition)


RECOVERING = 1  # LeaderRecoveryState.RECOVERING: an unclean leader not yet caught up (KIP-704)


def check_recovery(topic: str, partition: int, predicted: Recovering, observed: Recovering) -> CheckResult:
    """The leader recovery state: RECOVERING after an unclean election on a release that writes
    it (3.2+, IBP >= 3.2-IV0), RECOVERED once a follower joins the ISR; never written before."""
    want, got = predicted.leader_recovery_state, observed.leader_recovery_state
    ok = want == got
    name = {0: "RECOVERED", 1: "RECOVERING"}
    detail = "" if ok else (f"{_tp(topic, partition)}: leader_recovery_state expected {name.get(want, want)}, "
                            f"observed {name.get(got, got)}")
    return CheckResult("oracle_recovery", ok, want, got, detail, topic, partition)


def check_elr(topic: str, partition: int, predicted: Eligible, observed: Eligible) -> CheckResult:
    """Kafka 4.x with ELR on (KIP-966): the eligible leader replicas as a set (the controller
    builds them from a HashSet) and the last known ELR, against the oracle's."""
    want = {"elr": sorted(predicted.elr), "last_known_elr": list(predicted.last_known_elr)}
    got = {"elr": sorted(observed.elr), "last_known_elr": list(observed.last_known_elr)}
    ok = want == got
    detail = "" if ok else f"{_tp(topic, partition)}: ELR/LKE expected {want}, observed {got}"
    return CheckResult("oracle_elr", ok, want, got, detail, topic, partition)


def check_partition_epoch(topic: str, partition: int, before_epoch: int, predicted: int, observed: int, *,
                          exact: bool) -> CheckResult:
    """KRaft: the partition epoch (a ``version`` of the observed state; +1 per PartitionChangeRecord,
    ``PartitionRegistration.merge``) against the oracle's. Exact where the step's writes are
    modelled one by one; elsewhere it must not go back and must move where the oracle has it move."""
    if exact:
        ok, rule = observed == predicted, "exact"
    else:
        moved = predicted > before_epoch
        ok, rule = observed >= before_epoch and (observed > before_epoch or not moved), "moved where predicted"
    detail = "" if ok else f"{_tp(topic, partition)} partition epoch {observed}, predicted {predicted} ({rule}, was {before_epoch})"
    return CheckResult("oracle_partition_epoch", ok, {"before": before_epoch, "predicted": predicted, "rule": rule},
                       observed, detail, topic, partition)


def compare_partitions(before: Mapping[tuple[str, int], Partition], predicted: Mapping[tuple[str, int], Partition],
                       observed: Mapping[tuple[str, int], Partition], outcomes: Iterable[PartitionOutcome], *,
                       exact_epochs: bool, live_after: Iterable[int] | None = None,
                       recovering: Collection[tuple[str, int, int]] = frozenset()) -> list[CheckResult]:
    """Every oracle-vs-observed check for each predicted partition, each run check-safe
    (``live_after``: the brokers live in the observed state; ``recovering``: the step's
    :func:`recovering_elections`)."""
    live = None if live_after is None else frozenset(live_after)
    outcomes = list(outcomes)
    results: list[CheckResult] = []
    for (topic, p), want in sorted(predicted.items()):
        got = observed.get((topic, p))
        if got is None:
            results.append(CheckResult("oracle_partition", False, "present", None,
                                       f"{_tp(topic, p)} missing from the observed state", topic, p))
            continue
        was = before.get((topic, p)) or _NEW_PARTITION
        for name, fn, args in (
            ("oracle_leader", check_leader, (topic, p, want, got)),
            ("oracle_isr", check_isr, (topic, p, want, got)),
            ("oracle_replicas", check_replicas, (topic, p, want, got)),
        ):
            results += check_safe(name, fn, *args, topic=topic, partition=p)
        results += check_safe("oracle_epoch", check_epoch, topic, p, was, want, got, exact=exact_epochs,
                              topic=topic, partition=p)
        results += check_safe("oracle_outcome", check_outcome, topic, p, outcomes, was, got, want.leader, live,
                              (topic, p, got.leader) in recovering, topic=topic, partition=p)
        # Only where either side is RECOVERING: every other partition is RECOVERED on both, on
        # every release, and would only add records.
        if isinstance(want, Recovering) and isinstance(got, Recovering) \
                and RECOVERING in (want.leader_recovery_state, got.leader_recovery_state):
            results += check_safe("oracle_recovery", check_recovery, topic, p, want, got, topic=topic, partition=p)
        # Only where either side has an ELR or a last known ELR (Kafka 4.x, ELR on): empty elsewhere.
        if isinstance(want, Eligible) and isinstance(got, Eligible) \
                and (want.elr or want.last_known_elr or got.elr or got.last_known_elr):
            results += check_safe("oracle_elr", check_elr, topic, p, want, got, topic=topic, partition=p)
    return results


def check_isr_rule(rule: str, source: str, topic: str, partition: int, before: Partition, expected: Partition,
                   observed: Partition) -> CheckResult:
    """A leader-side ISR change the oracle does not model (:mod:`scenarios.model.isr_rules`): the ISR
    as a set is the rule's, while the leader and the leader epoch stay as they were (an
    AlterPartition never changes them)."""
    problems = []
    if set(observed.isr) != set(expected.isr):
        problems.append(f"ISR expected {sorted(expected.isr)}, observed {list(observed.isr)}")
    if observed.leader != before.leader:
        problems.append(f"leader moved {before.leader} -> {observed.leader}")
    if observed.leader_epoch != before.leader_epoch:
        problems.append(f"leader_epoch changed {before.leader_epoch} -> {observed.leader_epoch}")
    detail = f"{_tp(topic, partition)}: {'; '.join(problems)} ({source})" if problems else source
    return CheckResult(rule, not problems,
                       {"isr": sorted(expected.isr), "leader": before.leader, "leader_epoch": before.leader_epoch},
                       {"isr": list(observed.isr), "leader": observed.leader, "leader_epoch": observed.leader_epoch},
                       detail, topic, partition)


# --- cluster-wide ----------------------------------------------------------------------------

def check_quorum_leader(leader: int | None, epoch: int | None, before_epoch: int | None,
                        allowed: Iterable[int] | None = None) -> CheckResult:
    """KRaft's ``single_controller``: the metadata log names one quorum leader (its last
    LEADER_CHANGE), the quorum epoch never goes back, and the leader is one of ``allowed`` (the
    one before the fault, unless the fault hit the quorum: then any voter may win)."""
    allowed_set = sorted(set(allowed)) if allowed is not None else None
    problems = []
    if leader is None or leader < 0:
        problems.append("no quorum leader in the metadata log")
    elif allowed_set is not None and leader not in allowed_set:
        problems.append(f"quorum leader {leader} not among the allowed {allowed_set}")
    if epoch is not None and before_epoch is not None and epoch < before_epoch:
        problems.append(f"quorum epoch went back from {before_epoch} to {epoch}")
    return CheckResult("single_controller", not problems, allowed_set,
                       {"quorum_leader": leader, "epoch": epoch}, "; ".join(problems))


# A controller elected less than this before a scrape may still be running its failover event
# (onControllerFailover), after which its GlobalPartitionCount is first set: a shortfall then is
# unknown (check_active_controller_count). A failover of the harness's few dozen partitions takes
# well under a second.
FRESH_CONTROLLER_S = 10.0


def partitions_with_state(snapshot: ZkSnapshot) -> int:
    """The partitions a controller's context holds (``GlobalPartitionCount``): those with a state
    znode, topics being deleted left out."""
    return sum(1 for (topic, _), p in snapshot.partitions.items()
               if p.version >= 0 and topic not in snapshot.topics_being_deleted)


def check_active_controller_count(controller: int | None, counts: Mapping[int, float],
                                  changed_since: bool = False, *,
                                  partitions: Mapping[int, float] | None = None, existing: int = 0,
                                  fresh: bool = False) -> CheckResult:
    """Every broker's own word on who is controller: exactly the one ``/controller`` names
    reports ``ActiveControllerCount`` 1 (``KafkaController.ActiveControllerCount``: 1 while
    ``isActive``), and every other broker 0 — none when ``/controller`` names no broker that
    answered (a migration's KRaft controller, or nobody). ``changed_since``: ``/controller`` was
    written after the snapshot, so the two reads may see different controllers (unknown).

    And it acts as one, when the brokers' ``GlobalPartitionCount`` is known (``partitions``; a
    history scraped before it was exported has none, and this part is skipped): the controller
    ``/controller`` names counts at least the ``existing`` partitions the step's snapshot shows
    with a state znode (its context holds every partition it read or wrote:
    ``controllerContext.partitionWithLeadersCount``), and every other broker 0
    (``updateMetrics``: 0 unless ``isActive``). A controller that resigned while ``/controller``
    still names it — KAFKA-13461: an auth-failure reinitialisation on a live session runs
    ``processExpire`` (``onControllerResignation`` empties its context), then ``elect()`` reads its
    own ``/controller`` and returns early (3.0.0 ``KafkaController.scala`` lines 1499-1510), so it
    is active again with nothing in its context — reports ``ActiveControllerCount`` 1 but
    ``GlobalPartitionCount`` 0 (``updateMetrics``, 3.0.0 line 1443). ``fresh``: the controller was
    elected moments before the scrape, so it may still be in ``onControllerFailover``, whose event
    sets the gauge only when it ends (``process``'s ``finally``, 3.0.0 line 2529): what this part
    finds is unknown then, not a failure."""
    active = sorted(b for b, v in counts.items() if v >= 1)
    expected = [controller] if controller in counts else []
    known = {b: v for b, v in (partitions or {}).items() if b in counts}
    observed: Any = {str(b): v for b, v in sorted(counts.items())}
    if known:  # the shape old histories' records keep when the gauge is absent
        observed = {"active_controller_count": observed,
                    "global_partition_count": {str(b): v for b, v in sorted(known.items())},
                    "partitions_in_zookeeper": existing}
    if active != expected:
        if changed_since:
            return CheckResult("active_controller_count", None, expected, observed,
                               "/controller changed between the snapshot and the scrape")
        named = f"/controller names {controller}" if controller is not None else "no /controller"
        return CheckResult("active_controller_count", False, expected, observed,
                           f"{named}; brokers reporting themselves active controller: {active or 'none'}")
    summary = f"{len(counts)} brokers: {'only ' + str(controller) if expected else 'none'} active"
    if not known:
        return CheckResult("active_controller_count", True, expected, observed, summary)
    others = {b: v for b, v in sorted(known.items()) if b not in expected and v > 0}
    short = expected[0] if expected and expected[0] in known and known[expected[0]] < existing else None
    if not others and short is None:
        acts = f", its GlobalPartitionCount {known[expected[0]]:g} (>= {existing} partitions in ZooKeeper)" \
            if expected and expected[0] in known else ""
        return CheckResult("active_controller_count", True, expected, observed, summary + acts)
    problems = []
    if short is not None:
        problems.append(f"controller {short} reports GlobalPartitionCount {known[short]:g} while ZooKeeper has "
                        f"{existing} partitions with a state: active, but not acting as the controller")
    problems += [f"broker {b} is not the controller but reports GlobalPartitionCount {v:g}" for b, v in others.items()]
    if changed_since:
        return CheckResult("active_controller_count", None, expected, observed,
                           "/controller changed between the snapshot and the scrape; " + "; ".join(problems))
    if fresh:  # the new controller's failover event, or the old one's resignation, may not have ended
        return CheckResult("active_controller_count", None, expected, observed,
                           "; ".join(problems) + f" (/controller written less than {FRESH_CONTROLLER_S:g} s before "
                           "the scrape: its failover may not have ended)")
    return CheckResult("active_controller_count", False, expected, observed, "; ".join(problems))


def check_reassignments_completed_in_sync(before: ZkSnapshot, after: ZkSnapshot,
                                          reassigned: Iterable[tuple[str, int]],
                                          kafka_19975: bool = False) -> list[CheckResult]:
    """A reassignment completes only once every target replica is in the ISR: ZooKeeper mode's
    ``KafkaController.isReassignmentComplete`` (3.9.2 line 1046, ``targetReplicas.subsetOf(isr)``)
    and KRaft's ``PartitionReassignmentReplicas.maybeCompleteReassignment`` from 3.8.0 (3.9.2
    line 121, ``newTargetIsr.containsAll(newTargetReplicas)``). One result per partition of
    ``reassigned`` (the step's reassignments and those pending before it) whose replicas changed
    and that has none adding or removing after the step: it fails when a replica of the new
    assignment was down from the step's start to its end — it could not have been in the ISR —
    and is not in it. KRaft before 3.8.0 checked the *adding* replicas only (KAFKA-15665).
    ``kafka_19975`` (KRaft 4.3.0+, :func:`oracle.kraft.config.reassignment_completes_kafka_19975`):
    by design only the *adding* replicas must be in the ISR, every target replica only when the
    move removes more replicas than it adds (PartitionReassignmentReplicas.java 4.3.0 lines
    122-129, apache/kafka#21114: "completing the reassignment would not decrease the ISR size"),
    so a kept replica down throughout fails the check only then."""
    results = []
    for t, p in sorted(set(reassigned)):
        was, now = before.partitions.get((t, p)), after.partitions.get((t, p))
        if was is None or now is None or now.adding_replicas or now.removing_replicas \
                or set(now.replicas) == set(was.replicas):
            continue
        judged = set(now.replicas)
        if kafka_19975:
            # the replicas before the move: a pending one's record lists the adding replicas too
            original = set(was.replicas) - set(was.adding_replicas)
            adding = judged - original
            if len(adding) >= len(original - judged):
                judged = adding
        down = [r for r in now.replicas if r in judged and r not in before.live_brokers
                and r not in after.live_brokers and r not in now.isr]
        detail = (f"{t}-{p}: reassignment to {list(now.replicas)} completed with replica(s) {down} down throughout "
                  f"and out of the ISR {list(now.isr)}" if down
                  else f"{t}-{p}: reassignment to {list(now.replicas)} completed, ISR {list(now.isr)}")
        results.append(CheckResult("reassignment_in_sync", not down, list(now.replicas), list(now.isr), detail, t, p))
    return results


def check_single_controller(controller: int | None, live_brokers: Iterable[int],
                            allowed: Iterable[int] | None = None,
                            metadata_controllers: Mapping[int, int | None] | None = None) -> CheckResult:
    """Exactly one controller: ZK names one, it is live, it is one of ``allowed`` (the oracle's
    controller when it survives; any live broker when it failed — Kafka's election race is
    nondeterministic), and every broker that answered names the same one."""
    live = sorted(set(live_brokers))
    allowed_set = sorted(set(allowed) if allowed is not None else set(live))
    problems = []
    if not live:
        # Every broker is down: none is left to win KafkaController.elect, so no controller is
        # what Kafka must show (and a stale /controller of a dead broker would be wrong).
        if controller is not None and controller >= 0:
            problems.append(f"controller {controller} named while no broker is live")
    elif controller is None or controller < 0:
        problems.append("no /controller in ZooKeeper")
    elif controller not in live:
        problems.append(f"controller {controller} is not a live broker {live}")
    elif controller not in allowed_set:
        problems.append(f"controller {controller} not among the allowed {allowed_set}")
    disagree = {b: c for b, c in (metadata_controllers or {}).items() if c != controller}
    if disagree:
        problems.append(f"brokers name another controller: {disagree}")
    return CheckResult("single_controller", not problems, allowed_set,
                       {"zk": controller, "brokers": dict(metadata_controllers or {})}, "; ".join(problems))


def check_metadata_agrees(zk_partitions: Mapping[tuple[str, int], Partition],
                          broker_views: Mapping[int, Mapping[tuple[str, int], Membership] | BaseException | str]
                          ) -> CheckResult:
    """After settling, every live broker's metadata cache shows ZooKeeper's leader, replicas
    (in order) and ISR (as a set) for each partition. A broker that could not be asked (an
    exception, or its text as a history stores it) makes the verdict unknown unless another
    disagreement already fails it."""
    diffs: list[str] = []
    unanswered: list[str] = []
    for broker, view in sorted(broker_views.items()):
        if isinstance(view, (BaseException, str)):
            unanswered.append(f"broker {broker}: {view}")
            continue
        for key, zk in sorted(zk_partitions.items()):
            md = view.get(key)
            name = _tp(*key)
            if md is None:
                diffs.append(f"broker {broker} has no metadata for {name}")
                continue
            diffs += partition_differences(f"broker {broker} {name}:", md, zk, versus="ZK ")
    passed: bool | None = False if diffs else (None if unanswered else True)
    expected = {_tp(*k): {"leader": v.leader, "replicas": list(v.replicas), "isr": sorted(v.isr)}
                for k, v in sorted(zk_partitions.items())}
    observed = {"disagreements": diffs, "unanswered": unanswered, "brokers": sorted(broker_views)}
    return CheckResult("metadata_agrees_zk", passed, expected, observed, "; ".join(diffs + unanswered))


def check_converged(description: str, converged: bool, waited_s: float, last: str = "") -> CheckResult:
    """A bounded wait for the predicted state: a timeout is a failure carrying the last state."""
    detail = "" if converged else f"timed out after {waited_s:.1f}s waiting for {description}; last: {last}"
    return CheckResult("converged", converged, description, last if not converged else None, detail)


# --- delivery ---------------------------------------------------------------------------------

MISPLACED_EVIDENCE_KEPT = 20  # per topic, in the record (the history keeps everything)


def _misplaced_summary(evidence: Sequence[Any]) -> str:
    """" (client 1: <why>)": each class with its count and the first explanation of it."""
    if not evidence:
        return ""
    classes: dict[str, list[Any]] = {}
    for e in evidence:
        classes.setdefault(e.classification, []).append(e)
    return " (" + "; ".join(f"{c} {len(es)}: {es[0].key} {es[0].why}" for c, es in sorted(classes.items())) + ")"


def check_delivery(topic: str, report: Any, unclean_partitions: Iterable[int] = (),
                   misplaced_evidence: Sequence[Any] = (), resent: Mapping[str, str] | None = None,
                   power_failed: Iterable[int] = ()) -> list[CheckResult]:
    """No acknowledged message lost and none duplicated (idempotent producer, ``acks=all``).

    Where the oracle predicted an unclean election (``unclean_partitions``) a loss is expected:
    it is counted and reported (``delivery_unclean_loss`` measurement-like check that passes),
    but losses on any other partition, and duplicates anywhere, fail. A duplicated message the
    producer itself sent again under a bumped epoch after its batch was possibly persisted
    (``resent``: key -> the producer's lines, :mod:`scenarios.clients.producer_log`) still fails, with
    that evidence in ``observed.client_evidence`` (triage: ``client``, librdkafka#4953).
    Likewise where a power failure took every ISR member's unflushed tail (``power_failed``,
    :mod:`oracle.durability`): counted in ``delivery_power_failure_loss``.
    """
    unclean = set(unclean_partitions)
    powerless = set(power_failed) - unclean
    lost = {int(p): n for p, n in report.lost_by_partition.items() if n}
    unexpected_loss = {p: n for p, n in lost.items() if p not in unclean and p not in powerless}
    tolerated_loss = {p: n for p, n in lost.items() if p in unclean}
    permitted_loss = {p: n for p, n in lost.items() if p in powerless}
    duplicated = {int(p): n for p, n in report.duplicated_by_partition.items() if n}
    misplaced = len(report.misplaced)
    results = []
    problems = []
    if unexpected_loss:
        problems.append(f"lost acknowledged messages on partitions {unexpected_loss}")
    observed = report.as_dict()
    if duplicated:
        explained = [{"key": k, "evidence": (resent or {})[k]} for k in report.duplicated if k in (resent or {})]
        why = (f" ({len(explained)} of them sent again by the producer under a bumped epoch after a possibly "
               f"persisted batch: librdkafka#4953)" if explained else "")
        problems.append(f"duplicated messages on partitions {duplicated}{why}")
        if explained:
            observed["resent_by_producer"] = len(explained)
            observed["client_evidence"] = explained[:MISPLACED_EVIDENCE_KEPT]
    if misplaced and not unclean and not powerless:
        problems.append(f"{misplaced} acknowledged messages read back at another offset"
                        + _misplaced_summary(misplaced_evidence))
        observed["misplaced_evidence"] = [e.to_dict() for e in misplaced_evidence[:MISPLACED_EVIDENCE_KEPT]]
    expected: dict[str, Any] = {"lost": 0, "duplicated": 0, "unclean_partitions": sorted(unclean)}
    if powerless:
        expected["power_failure_partitions"] = sorted(powerless)
    results.append(CheckResult(
        "delivery", not problems, expected,
        observed, "; ".join(problems) or report.describe(), topic, None))
    if unclean:
        results.append(_counted_loss("delivery_unclean_loss", "unclean_partitions", unclean, tolerated_loss,
                                     misplaced, f"unclean election predicted on {sorted(unclean)}", topic))
    if powerless:
        results.append(_counted_loss("delivery_power_failure_loss", "power_failure_partitions", powerless,
                                     permitted_loss, misplaced, f"power failure of every ISR member on "
                                     f"{sorted(powerless)} (unflushed tails may go)", topic))
    return results


def _counted_loss(check: str, key: str, partitions: set[int], lost: Mapping[int, int], misplaced: int, why: str,
                  topic: str) -> CheckResult:
    """A loss the prediction allows, counted (a measurement-like check that passes)."""
    return CheckResult(check, True, {key: sorted(partitions)},
                       {"lost_by_partition": {str(p): n for p, n in lost.items()},
                        "lost_total": sum(lost.values()), "misplaced": misplaced},
                       f"{why}: {sum(lost.values())} acknowledged messages lost {lost or ''}".rstrip(), topic, None)


def all_passed(results: Iterable[CheckResult]) -> bool:
    return all(r.passed is True for r in results)

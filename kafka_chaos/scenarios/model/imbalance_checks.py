"""When a controller checks the leader imbalance on its own, and how long a step waits so that no
check lands inside it. Pure: the times come from the snapshot.

With ``auto.leader.rebalance.enable`` (Kafka's default) the controller runs
``checkAndTriggerAutoLeaderRebalance`` 5 s after it won its election
(``onControllerFailover``: ``scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS)``,
KafkaController.scala 3.9 line 328; 2.4.1 line 317) and then ``leader.imbalance.check.interval.seconds``
after each check ends (``processAutoPreferredReplicaLeaderElection``, 3.9 line 1339). The step
that fails the controller over is measured after its first check
(:func:`scenarios.checks.expectations.failover_check_pending`); a periodic one would move leaders
no step caused, so a step does not start within :data:`LOOKAHEAD_S` before one, and waits until
:data:`MARGIN_S` after it instead. The checks take milliseconds: counting from the election
drifts by that much per interval, which the margin covers for hours.

KRaft from 4.0: the active controller's ``maybeBalancePartitionLeaders`` is the periodic task
"electPreferred", registered only with the rebalance on (``registerElectPreferred`` when
``leaderImbalanceCheckIntervalNs`` is present, QuorumController 4.0.0 L1617-1618, 4.3.1 the same)
and scheduled when the controller activates (``CompleteActivationEvent.processBatchEndOffset`` ->
``PeriodicTaskControlManager.activate``, 4.3.1 L1184; 4.4.0's bytecode the same), then one
interval after each run ends (``PeriodicTaskOperation.get`` -> ``reschedule``: ``time.nanoseconds()
+ periodNs``, PeriodicTaskControlManager 4.0.0-4.3.1; 10 ms instead while a run filled its batch),
cancelled on renouncing (``deactivate``). So the balances come one interval after the epoch's
activation and every interval after, whether or not anything is imbalanced: as in ZooKeeper mode,
counted from the epoch's LEADER_CHANGE record (its batch's append time, shortly before the
activation, which waits for it to commit: the margin covers that). 3.x KRaft controllers arm the
balance after the write that first leaves a leader off its preferred replica
(``maybeScheduleNextBalancePartitionLeaders``, 3.9): :func:`first_check_delay_s` knows no time
for them; a step replays it from the metadata log instead (:mod:`scenarios.model.kraft_balances`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kafka_chaos.oracle.config import auto_leader_rebalance_enabled
from kafka_chaos.oracle.release import Release

LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = "leader.imbalance.check.interval.seconds"
DEFAULT_INTERVAL_S = 300.0  # KafkaConfig / ReplicationConfigs: leader.imbalance.check.interval.seconds
FIRST_CHECK_DELAY_S = 5.0
# A step that starts this long before a check is likely still converging or measuring when it runs.
LOOKAHEAD_S = 25.0
MARGIN_S = 3.0


def check_interval_s(config: Mapping[str, object]) -> float:
    raw = config.get(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS)
    return DEFAULT_INTERVAL_S if raw is None else float(str(raw))


def periodic_kraft_balance(release: str) -> bool:
    """Whether a KRaft controller of ``release`` balances on a period from its activation (4.0+)
    rather than an interval after the write that left a leader off its preferred replica (3.x)."""
    try:
        return Release.parse(release).at_least(4, 0)
    except ValueError:
        return False


def first_check_delay_s(mode: str, release: str, config: Mapping[str, object]) -> float | None:
    """How long after the controller's election (ZooKeeper: ``/controller``'s timestamp; KRaft:
    the epoch's LEADER_CHANGE) its first scheduled check comes; None where no time is known (a 3.x
    KRaft controller, a migration's)."""
    if mode == "zookeeper":
        return FIRST_CHECK_DELAY_S
    if mode == "kraft" and periodic_kraft_balance(release):
        return check_interval_s(config)
    return None


def next_check_at(elected_at: float, now: float, interval_s: float,
                  first_delay_s: float = FIRST_CHECK_DELAY_S) -> float:
    """The first of the controller's scheduled checks at or after ``now`` - :data:`MARGIN_S`."""
    first = elected_at + first_delay_s
    if now - MARGIN_S <= first:
        return first
    return first + math.ceil((now - MARGIN_S - first) / interval_s) * interval_s


def wait_before_step(config: Mapping[str, object], elected_at: float | None, now: float, *,
                     first_delay_s: float | None = FIRST_CHECK_DELAY_S) -> float:
    """Seconds to wait before a step so that the controller's next scheduled check falls before
    it (0: none due within :data:`LOOKAHEAD_S`, the rebalance is off, the election time or the
    first check's delay is unknown, or checks come so often -- an interval under twice the
    lookahead -- that scenarios name them as ``then: auto_rebalance`` steps instead).
    ``first_delay_s``: :func:`first_check_delay_s` of the controller's mode and release."""
    if elected_at is None or first_delay_s is None:
        return 0.0
    return wait_for_due(config, next_check_at(elected_at, now, check_interval_s(config), first_delay_s), now)


def wait_for_due(config: Mapping[str, object], due: float | None, now: float) -> float:
    """Seconds to wait before a step for a check ``due`` then (the first at or after ``now`` -
    :data:`MARGIN_S`; None: none scheduled) to fall before it: :func:`wait_before_step`'s rule, for
    a due time known otherwise (a 3.x KRaft controller's, ``scenarios.model.kraft_balances``)."""
    if due is None or not auto_leader_rebalance_enabled(config) or check_interval_s(config) < 2 * LOOKAHEAD_S:
        return 0.0
    return due + MARGIN_S - now if due - now < LOOKAHEAD_S else 0.0

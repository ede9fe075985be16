"""When a ZooKeeper-mode controller checks the leader imbalance on its own, and how long a step
waits so that no check lands inside it. Pure: the times come from the snapshot.

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kafka_chaos.oracle.config import auto_leader_rebalance_enabled

LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = "leader.imbalance.check.interval.seconds"
DEFAULT_INTERVAL_S = 300.0  # KafkaConfig / ReplicationConfigs: leader.imbalance.check.interval.seconds
FIRST_CHECK_DELAY_S = 5.0
# A step that starts this long before a check is likely still converging or measuring when it runs.
LOOKAHEAD_S = 25.0
MARGIN_S = 3.0


def check_interval_s(config: Mapping[str, object]) -> float:
    raw = config.get(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS)
    return DEFAULT_INTERVAL_S if raw is None else float(str(raw))


def next_check_at(elected_at: float, now: float, interval_s: float) -> float:
    """The first of the controller's scheduled checks at or after ``now`` - :data:`MARGIN_S`."""
    first = elected_at + FIRST_CHECK_DELAY_S
    if now - MARGIN_S <= first:
        return first
    return first + math.ceil((now - MARGIN_S - first) / interval_s) * interval_s


def wait_before_step(config: Mapping[str, object], elected_at: float | None, now: float) -> float:
    """Seconds to wait before a step so that the controller's next scheduled check falls before
    it (0: none due within :data:`LOOKAHEAD_S`, the rebalance is off, the election time is
    unknown, or checks come so often -- an interval under twice the lookahead -- that scenarios
    name them as ``then: auto_rebalance`` steps instead)."""
    if elected_at is None or not auto_leader_rebalance_enabled(config):
        return 0.0
    interval = check_interval_s(config)
    if interval < 2 * LOOKAHEAD_S:
        return 0.0
    due = next_check_at(elected_at, now, interval)
    return due + MARGIN_S - now if due - now < LOOKAHEAD_S else 0.0

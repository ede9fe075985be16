"""A leader refuses ``acks=all`` writes only while its ISR is below ``min.insync.replicas``: an
invariant that needs no prediction.

``Partition.appendRecordsToLeader`` (3.9; the same check since 0.9) refuses a produce with
``acks=all`` with NOT_ENOUGH_REPLICAS exactly when the leader's ISR is smaller than the topic's
``min.insync.replicas`` (``LogConfig``: the topic's override, else the broker's default). Once a
step settled, the ISR is the one the snapshot shows, so a refusal seen then while that ISR holds
the configured minimum means the leader enforces a configuration that is not the cluster's:
KAFKA-16428 is the kind this catches (3.6.1, fixed in 3.6.2: in a migration's hybrid phase,
deleting a topic's last override wrote a change notification the ZooKeeper-mode brokers reject,
so they kept enforcing the old ``min.insync.replicas``).

Judged from :data:`GRACE_S` after the step converged to the end of its measurement (a leader
learns an ISR change a moment after ZooKeeper or the metadata log shows it: AlterPartition's
answer, a LeaderAndIsr), against the settled ISR; the topic's override as configured (the oracle's state after the step),
else the brokers' static default. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.checks.functions import CheckResult

CHECK = "min_isr_honoured"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
GRACE_S = 2.0


def effective_min_isr(topic_config: Mapping[str, str], broker_default: str | None) -> int:
    """``LogConfig``'s ``min.insync.replicas``: the topic's override, else the broker default (1)."""
    for value in (topic_config.get(MIN_INSYNC_REPLICAS), broker_default):
        if value is not None and value.strip().isdigit():
            return int(value)
    return 1


def check_min_isr_honoured(after: ZkSnapshot, refused: Mapping[str, tuple[tuple[str, float], ...]],
                           since: float, until: float, broker_default: str | None,
                           topic_configs: Mapping[str, Mapping[str, str]]) -> list[CheckResult]:
    """One verdict for the step's partitions (``refused``: ``"t-p"`` -> the leader's refusals):
    fail per partition refused in ``[since, until]`` while its settled ISR held the minimum of
    ``topic_configs`` (the overrides as configured: the oracle's, which a config change of the
    step is in even where the snapshot was read before a migration's dual write reached ZooKeeper)."""
    failures = []
    judged = 0
    converged = since - GRACE_S
    for key in sorted(refused):
        topic, _, number = key.rpartition("-")
        state = after.partitions.get((topic, int(number))) if number.isdigit() else None
        if state is None:
            continue
        judged += 1
        minimum = effective_min_isr(topic_configs.get(topic, {}), broker_default)
        late = [at for _, at in refused[key] if since <= at <= until]
        if late and len(state.isr) >= minimum:
            failures.append(CheckResult(
                CHECK, False, f"no refusal while the ISR holds {MIN_INSYNC_REPLICAS}={minimum}",
                f"{len(late)} refusal(s), ISR {list(state.isr)}",
                f"leader {state.leader} refused acks=all writes with NOT_ENOUGH_REPLICAS {len(late)} time(s), "
                f"{min(late) - converged:.1f} s to {max(late) - converged:.1f} s after the step converged (at "
                f"{converged:.3f}), while its ISR {list(state.isr)} held {MIN_INSYNC_REPLICAS}={minimum}",
                topic, int(number)))
    if failures:
        return failures
    if since >= until:
        return []
    return [CheckResult(CHECK, True, detail=f"no refusal while an ISR held its minimum ({judged} partition(s) "
                                            f"judged over {until - since:.1f} s)")]

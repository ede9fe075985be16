"""A leader refuses ``acks=all`` writes exactly while its ISR is below ``min.insync.replicas``: an
invariant that needs no prediction.

``Partition.appendRecordsToLeader`` (3.9; the same check since 0.9) refuses a produce with
``acks=all`` with NOT_ENOUGH_REPLICAS exactly when the leader's ISR is smaller than the topic's
``min.insync.replicas`` (``LogConfig``: the topic's override, else the broker's default). Once a
step settled, the ISR is the one the snapshot shows, so a refusal seen then while that ISR holds
the configured minimum means the leader enforces a configuration that is not the cluster's:
KAFKA-16428 is the kind this catches (3.6.1, fixed in 3.6.2: in a migration's hybrid phase,
deleting a topic's last override wrote a change notification the ZooKeeper-mode brokers reject,
so they kept enforcing the old ``min.insync.replicas``) and, the other way round, KAFKA-9254
(2.4.0, fixed in 2.4.1: a second change of a dynamic default log config rebuilt every topic's
``LogConfig`` without its overrides, so a topic's ``min.insync.replicas=2`` was dropped and writes
were acknowledged with one replica in sync).

Judged from :data:`GRACE_S` after the step converged to the end of its measurement (a leader
learns an ISR change a moment after ZooKeeper or the metadata log shows it: AlterPartition's
answer, a LeaderAndIsr), against the settled ISR; the topic's override as configured (the oracle's state after the step),
else the brokers' static default. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Writes:
    """What the producer saw of one partition's leader during a step: when it refused a batch
    (NOT_ENOUGH_REPLICAS, retried) and when it acknowledged one (``acks=all``)."""

    refused: tuple[float, ...]
    acked: tuple[float, ...]


def _violation(topic: str, partition: int, leader: int, isr: tuple[int, ...], minimum: int, what: str,
               times: list[float], converged: float) -> CheckResult:
    holds = len(isr) >= minimum
    return CheckResult(
        CHECK, False, f"acks=all {'taken' if holds else 'refused'} while the ISR {'holds' if holds else 'is below'} "
                      f"{MIN_INSYNC_REPLICAS}={minimum}", f"{len(times)} {what}, ISR {list(isr)}",
        f"leader {leader} {what} {len(times)} time(s), {min(times) - converged:.1f} s to "
        f"{max(times) - converged:.1f} s after the step converged (at {converged:.3f}), while its ISR {list(isr)} "
        f"{'held' if holds else 'was below'} {MIN_INSYNC_REPLICAS}={minimum}", topic, partition)


def check_min_isr_honoured(after: ZkSnapshot, writes: Mapping[str, Writes], since: float, until: float,
                           broker_default: str | None,
                           topic_configs: Mapping[str, Mapping[str, str]]) -> list[CheckResult]:
    """One verdict for the step's partitions (``writes``: ``"t-p"`` -> what its leader did): fail
    per partition refused in ``[since, until]`` while its settled ISR held the minimum of
    ``topic_configs``, or acknowledged while the ISR was below it (the overrides as configured:
    the oracle's, which a config change of the step is in even where the snapshot was read before
    a migration's dual write reached ZooKeeper)."""
    failures = []
    judged = 0
    converged = since - GRACE_S
    for key in sorted(writes):
        topic, _, number = key.rpartition("-")
        state = after.partitions.get((topic, int(number))) if number.isdigit() else None
        if state is None or state.leader < 0:
            continue
        judged += 1
        minimum = effective_min_isr(topic_configs.get(topic, {}), broker_default)
        seen = writes[key]
        refused = [at for at in seen.refused if since <= at <= until]
        acked = [at for at in seen.acked if since <= at <= until]
        if refused and len(state.isr) >= minimum:
            failures.append(_violation(topic, int(number), state.leader, state.isr, minimum,
                                       "refused acks=all writes with NOT_ENOUGH_REPLICAS", refused, converged))
        if acked and len(state.isr) < minimum:
            failures.append(_violation(topic, int(number), state.leader, state.isr, minimum,
                                       "acknowledged acks=all writes", acked, converged))
    if failures:
        return failures
    if since >= until:
        return []
    return [CheckResult(CHECK, True, detail=f"acks=all refused exactly while an ISR was below its minimum "
                                            f"({judged} partition(s) judged over {until - since:.1f} s)")]

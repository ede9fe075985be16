"""Triage: which side a failed check most likely blames, with the evidence (pure).

* ``model`` — the oracle (or a documented leader-side rule) disagrees with what Kafka settled
  on: the cluster converged somewhere else, with a controller and agreeing brokers;
* ``kafka`` — Kafka broke a documented guarantee: acknowledged data lost or duplicated with
  clean elections only (the read-back or the consumers' history), brokers' metadata disagreeing
  with ZooKeeper after the bounded wait, not exactly one live controller (in ZooKeeper or in
  the brokers' own ActiveControllerCount), a broker's logs not its assigned replicas;
* ``client`` — the client library, by its own account: every message the ``delivery`` check
  found duplicated was sent again by the idempotent producer under a bumped epoch after its
  batch was possibly persisted (the producer's debug lines, :mod:`scenarios.clients.producer_log`:
  librdkafka#4953), nothing was lost or misplaced, and the same iteration's ``history_duplicate``
  holds no more duplicates than that; or every message ``delivery`` found misplaced is
  classified ``client`` by its evidence (:mod:`scenarios.checks.misplaced`: the log never changed, the
  delivery report named an offset that holds another message), nothing was lost or duplicated,
  and the history anomalies such a report makes by itself (a duplicate, an inconsistent offset,
  a non-monotonic send) follow from it. An acknowledgement without an offset is never such a
  report: it is recorded without one (:class:`scenarios.clients.delivery.Ack`);
* ``harness`` — the run could not judge: the scenario aborted, the cluster never healed, a
  checker crashed (an unknown verdict);
* ``unknown`` — anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MODEL, KAFKA, CLIENT, HARNESS, UNKNOWN = "model", "kafka", "client", "harness", "unknown"
CLASSES = (MODEL, KAFKA, CLIENT, HARNESS, UNKNOWN)
# The history anomalies one misreported offset produces by itself (scenarios.checks.client_history).
_ACK_ARTEFACTS = frozenset({"history_duplicate", "history_inconsistent_offsets", "history_nonmonotonic_send"})

_BY_CHECK = {
    "oracle_leader": MODEL, "oracle_isr": MODEL, "oracle_replicas": MODEL, "oracle_epoch": MODEL, "oracle_partition_epoch": MODEL,
    "oracle_outcome": MODEL, "oracle_partition": MODEL, "rule_leader_isr_shrink": MODEL,
    "rule_leader_isr_expand": MODEL, "delivery": KAFKA, "metadata_agrees_zk": KAFKA,
    "single_controller": KAFKA, "replicas_on_disk": KAFKA, "active_controller_count": KAFKA,
    "reassignment_in_sync": KAFKA, "replica_logs_agree": KAFKA, "producer_ids_unique": KAFKA,
    "topic_ids_kept": KAFKA, "min_isr_honoured": KAFKA, "one_quorum_leader": KAFKA, "quorum_voters": KAFKA,
    "isr_registered": KAFKA,
    "scenario_completed": HARNESS, "healed": HARNESS,
    "backend_supports_scenario": HARNESS,
    # The clients' history (scenarios.checks.client_history): what the log showed consumers breaks
    # Kafka's guarantees; how the producer's own sends came back may be the client library's.
    **{f"history_{a}": KAFKA for a in ("lost_write", "unseen", "duplicate", "inconsistent_offsets",
                                       "nonmonotonic_poll", "poll_skip")},
    # The transactional history (scenarios.checks.transactions): what read_committed promises.
    **{f"txn_{a}": KAFKA for a in ("aborted_read", "torn", "lost_write", "duplicate", "nonmonotonic_read",
                                   "read_past_lso", "g1c", "offsets_without_writes", "writes_without_offsets",
                                   "outcome_contradiction")},
    # A copier that prints no transaction, judged from the topics (scenarios.checks.copy).
    **{f"txn_copy_{a}": KAFKA for a in ("lost", "extra", "duplicate", "order")},
}


@dataclass(frozen=True)
class Triaged:
    klass: str
    check: str
    fault: str | None
    evidence: str


def classify(record: Any, run: Sequence[Any] = ()) -> Triaged:
    """The class of one failed (or unknown) check record; ``run``: the records of the same
    scenario iteration, for context (a ``converged`` failure is the model's when the same step
    shows oracle mismatches and no Kafka-side failure)."""
    evidence = record.detail or f"expected {record.expected!r}, observed {record.observed!r}"
    if record.passed is None:
        return Triaged(HARNESS, record.check, record.fault, f"no verdict: {evidence}")
    klass = _BY_CHECK.get(record.check)
    if record.check == "delivery" and (_misreported_acks_only(record) or _resent_duplicates_only(record)):
        klass = CLIENT
    same_finish = [r for r in run if r.check == "delivery" and r.passed is False and r.started_at == record.started_at
                   and r.topic == record.topic]
    if record.check in _ACK_ARTEFACTS and any(_misreported_acks_only(r) for r in same_finish):
        klass = CLIENT
    if record.check == "history_duplicate" and any(
            _resent_duplicates_only(r) and _anomalies(record) <= _observed(r).get("resent_by_producer", 0)
            for r in same_finish):
        klass = CLIENT
    if record.check == "converged":
        same_step = [r for r in run if r.started_at == record.started_at and r.passed is False]
        kafka_side = [r for r in same_step if _BY_CHECK.get(r.check) == KAFKA]
        model_side = [r for r in same_step if _BY_CHECK.get(r.check) == MODEL]
        klass = KAFKA if kafka_side else MODEL if model_side else UNKNOWN
    return Triaged(klass or UNKNOWN, record.check, record.fault, evidence)


def _observed(record: Any) -> dict[str, Any]:
    return record.observed if isinstance(record.observed, dict) else {}


def _anomalies(record: Any) -> int:
    return int(_observed(record).get("anomalies") or 0)


def _resent_duplicates_only(delivery: Any) -> bool:
    """A failed ``delivery`` record whose only finding is duplicates, every one of them a
    message the producer's own lines show it sent again under a bumped epoch."""
    observed = _observed(delivery)
    duplicated = int(observed.get("duplicated") or 0)
    return (duplicated > 0 and not observed.get("lost") and not observed.get("misplaced")
            and observed.get("resent_by_producer") == duplicated)


def _misreported_acks_only(delivery: Any) -> bool:
    """A failed ``delivery`` record whose only finding is misplaced messages, each classified
    ``client`` by its evidence."""
    observed = delivery.observed if isinstance(delivery.observed, dict) else {}
    evidence = observed.get("misplaced_evidence") or []
    return (bool(evidence) and not observed.get("lost") and not observed.get("duplicated")
            and observed.get("misplaced") == len(evidence)
            and all(e.get("classification") == "client" for e in evidence))


def triage(records: Sequence[Any]) -> list[Triaged]:
    """Every failed or unknown check of a run, classified (measurements are not verdicts)."""
    checks = [r for r in records if r.kind == "check"]
    return [classify(r, checks) for r in checks if r.passed is not True]


def summary(triaged: Sequence[Triaged]) -> dict[str, int]:
    counts = dict.fromkeys(CLASSES, 0)
    for t in triaged:
        counts[t.klass] += 1
    return counts

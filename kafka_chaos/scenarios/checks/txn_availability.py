"""What a fault did to the transactional workload's clients: pure arithmetic over the transaction
attempts one fault step recorded (issue 43: commit latency and abort rate per fault).

A step whose fault is a planned operation (:data:`TRANSPARENT_FAULTS`: an election, a reassignment,
a controlled shutdown or a broker's rolling restart onto another release, every broker up before
it) is also *judged* (``txn_transparent_operation``): Kafka hands a moved leader or coordinator over
with retriable errors (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS) -- a controlled shutdown moves every leadership first
(``KafkaController.doControlledShutdown``) and a resigning coordinator's successor loads its
transactions and completes a prepared commit (``TransactionStateManager.loadTransactionsForTxnTopicPartition``)
-- which the client retries within the attempt, so no attempt may end aborted by an error or
unknown. KAFKA-16692 is the kind this
catches: from 3.6.0, a partition leader verifies a transactional produce with its coordinator
(KIP-890 part 1, ``AddPartitionsToTxnManager``), and a 3.6.x leader sent that request in a version
a 3.5.x coordinator refuses, so during a rolling upgrade from 3.5 every transaction that wrote to
an upgraded broker's partition while its coordinator was not upgraded was aborted
(NETWORK_EXCEPTION); fixed in 3.7.1 and 3.8.0 (``NetworkUtils.buildNetworkClient`` with
``discoverBrokerVersions``, commit 3e15ab98ec6).

A step's stretch of the transactional history holds the attempts that ended while it ran
(:meth:`scenarios.clients.txn_ops.TxnHistory.merged` puts the stretches back together for the
checker). Of those that ended in the window from the fault to the end of the step's measurement:

* **Outcomes** — how many the client saw committed, aborted as the workload asked (every fifth
  attempt, no error), aborted by an error (a commit that required the abort, a fenced or replaced
  instance) or end unknown, and the **failure rate**: those aborted by an error and the unknown
  ones over all attempts (an attempt whose end the client never learnt is lost work to it);
* **Commit latency** (``txn_commit_p50``, ``txn_commit_p99``, ms) — from the call of
  ``commit_transaction`` to its return, over the attempts that committed and whose client stamps
  the call (librdkafka's workload does; Kafka's Java copier reports a commit only after it, so its
  attempts give none), nearest rank;
* **Longest without a commit** (``txn_no_commit``, ms) — the longest stretch of the window in
  which no attempt committed: its ends are the fault, the commits' returns and the window's end
  (a silence still open then counts to it, a lower bound). Each of the workload's producers begins
  a transaction every 0.15 s, so a healthy window's silence is a few hundred ms; a coordinator's
  failover shows as seconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kafka_chaos.records.schema import TXN_PHASES
from kafka_chaos.scenarios.checks.availability import nearest_rank
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.clients.txn_ops import ABORTED, COMMITTED, UNKNOWN, Txn

CHECK = "txn_availability"
FAILED = "failed"  # an attempt aborted by an error, told apart from the aborts the workload asks for


@dataclass(frozen=True)
class TxnWindow:
    """The attempts that ended in ``[start, end]``, by outcome, and the figures above."""

    start: float
    end: float
    committed: int
    aborted: int  # as the workload asked
    failed: int  # aborted by an error
    unknown: int
    commit_ms: tuple[float, ...]  # sorted
    no_commit_ms: float
    errors: tuple[tuple[str, int], ...]  # error name -> attempts it ended, most frequent first

    @property
    def attempts(self) -> int:
        return self.committed + self.aborted + self.failed + self.unknown

    @property
    def failure_rate(self) -> float | None:
        return None if not self.attempts else (self.failed + self.unknown) / self.attempts

    def latency_ms(self) -> dict[str, float | None]:
        """The :data:`records.schema.TXN_PHASES`, in ms."""
        p50, p99, silence = TXN_PHASES
        return {p50: _rounded(nearest_rank(self.commit_ms, 0.5)), p99: _rounded(nearest_rank(self.commit_ms, 0.99)),
                silence: round(self.no_commit_ms, 1)}


def _rounded(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 1)


def counted_as(t: Txn) -> str:
    """The client's outcome of ``t``, an abort an error caused told apart (:data:`FAILED`) from
    one the workload asked for (no error)."""
    return FAILED if t.outcome == ABORTED and t.error is not None else t.outcome


def ended_within(txns: Sequence[Txn], start: float, end: float) -> list[Txn]:
    """The attempts whose end the client recorded within ``[start, end]``."""
    return [t for t in txns if t.ended_at is not None and start <= t.ended_at <= end]


def longest_without_commit(commits_at: Sequence[float], start: float, end: float) -> float:
    """The longest stretch of ``[start, end]`` (ms) between consecutive commit returns, the
    window's ends counted as its edges."""
    edges = [start, *sorted(t for t in commits_at if start <= t <= end), end]
    return max(0.0, *((b - a) * 1000.0 for a, b in zip(edges, edges[1:])))


def measure(txns: Sequence[Txn], start: float, end: float) -> TxnWindow:
    ended = ended_within(txns, start, end)
    outcomes = Counter(counted_as(t) for t in ended)
    committed = [t for t in ended if t.outcome == COMMITTED]
    commit_ms = sorted((t.ended_at - t.committing_at) * 1000.0 for t in committed
                       if t.ended_at is not None and t.committing_at is not None and t.ended_at >= t.committing_at)
    errors = Counter(t.error for t in ended if t.error)
    return TxnWindow(start, end, outcomes[COMMITTED], outcomes[ABORTED], outcomes[FAILED], outcomes[UNKNOWN],
                     tuple(commit_ms),
                     longest_without_commit([t.ended_at for t in committed if t.ended_at is not None], start, end),
                     tuple(sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))))


# Planned operations: elections and reassignments (scenarios.faults.admin), a controlled shutdown
# (scenarios.faults.process) and a roll onto another release (scenarios.faults.upgrade).
TRANSPARENT_FAULTS = frozenset({"preferred_election", "reassignment", "controlled_shutdown", "roll"})
TRANSPARENT = "txn_transparent_operation"


def check_transparent_operation(txns: Sequence[Txn], start: float, end: float, fault: str) -> CheckResult:
    """The verdict on a step whose fault is in :data:`TRANSPARENT_FAULTS` (the caller decides):
    every attempt that ended in ``[start, end]`` committed or was aborted as the workload asked."""
    ended = ended_within(txns, start, end)
    failed = [t for t in ended if counted_as(t) in (FAILED, UNKNOWN)]
    expected = f"no transaction aborted by an error or left unknown during {fault}, a planned operation"
    if not failed:
        return CheckResult(TRANSPARENT, True, expected, {"attempts": len(ended)},
                           f"{len(ended)} attempt(s) ended during {fault}, none by an error")
    errors = Counter(t.error or t.outcome for t in failed)
    observed = {"attempts": len(ended), "failed": [f"{t.name}: {t.outcome} {t.error or ''}".strip() for t in failed[:20]],
                "errors": dict(errors)}
    return CheckResult(TRANSPARENT, False, expected, observed,
                       f"{len(failed)} of {len(ended)} attempt(s) ended by an error during {fault}, a planned operation: "
                       + ", ".join(f"{e} x{n}" for e, n in errors.most_common(5))
                       + f" (first: {failed[0].name})")


def txn_availability(txns: Sequence[Txn], start: float, end: float, fault: str) -> CheckResult:
    """The ``txn_availability`` measurement of one fault step's window."""
    w = measure(txns, start, end)
    rate = w.failure_rate
    latency = w.latency_ms()
    observed = {"committed": w.committed, "aborted": w.aborted, "failed": w.failed, "unknown": w.unknown,
                "failure_rate": None if rate is None else round(rate, 4), "commit_samples": len(w.commit_ms),
                "errors": dict(w.errors[:10])}
    detail = (f"transactions during {fault}: {w.committed} committed, {w.aborted} aborted as asked, {w.failed} "
              f"aborted by an error, {w.unknown} unknown (failure rate {'-' if rate is None else f'{rate:.0%}'}); "
              f"commit p50 {latency['txn_commit_p50']} ms, "
              f"p99 {latency['txn_commit_p99']} ms over {len(w.commit_ms)}; longest without a commit "
              f"{latency['txn_no_commit']} ms"
              + (f"; errors {', '.join(f'{e} x{n}' for e, n in w.errors[:5])}" if w.errors else ""))
    return CheckResult(CHECK, None, None, observed, detail, kind="measurement", latency_ms=latency,
                       timestamps={"start": start, "end": end})

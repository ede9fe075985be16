"""A transactional producer of the workload holding its transaction open past its own
``transaction.timeout.ms`` (issue 43), so that the coordinator aborts it, then committing.

The producer (one of the workload's, by role: ``p0``, ``p1``) gets a new instance with
``transaction.timeout.ms`` set low (option ``timeout_ms``, default 5 s), begins a transaction,
writes its messages (flushed: they are in the log, only the abort's markers hide them), holds it
open for the timeout, one abort check interval and a margin, then calls ``commit_transaction``.

What Kafka does meanwhile (3.9): the coordinator's scheduled ``transaction-abort`` task
(``TransactionCoordinator.startup``, every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``,
default 10 s) runs ``abortTimedOutTransactions``: every ongoing transaction whose start is
older than its timeout (``TransactionStateManager.timedOutTransactions``) gets
``prepareFenceProducerEpoch`` — its producer epoch bumped — and ``endTransaction(ABORT,
isFromClient = false)``: abort markers on every partition it wrote. The client's late
EndTxn(commit) carries the old epoch, which ``endTransaction`` refuses with ``PRODUCER_FENCED``
(``isFromClient && producerEpoch != txnMetadata.producerEpoch``), answered as
``INVALID_PRODUCER_EPOCH`` to an EndTxn below version 2 (``KafkaApis.handleEndTxnRequest``; what
librdkafka 2.x gets, seen on 3.9.2): the client is told its producer was fenced (librdkafka: the
fatal ``_FENCED``, "This instance has been fenced by a newer instance"), never that it committed,
and no ``read_committed`` reader may see a message of it. The workload records the
attempt with the timeout it had and how long it was held (``scenarios.clients.txn_ops.Txn``),
and the transactional checker judges a held attempt whose commit failed as aborted
(:func:`scenarios.checks.transactions.effective_outcome`).

The fault acts on a client, not a broker: no target, no oracle event, nothing held. The seam to
the workload is :class:`TransactionHolder` (``FaultEnv.transactions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.oracle import Event
from kafka_chaos.scenarios.faults.base import FaultBase, FaultEnv, StepTopics, register_fault, reject_unknown_options
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.held_txn import HeldTransaction
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import NoTarget, Target

# Kafka's default transaction.abort.timed.out.transaction.cleanup.interval.ms
# (TransactionStateManagerConfigs.TRANSACTIONS_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS_DEFAULT, 3.9).
ABORT_CHECK_INTERVAL_KEY = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
DEFAULT_ABORT_CHECK_INTERVAL_MS = 10_000
DEFAULT_TIMEOUT_MS = 5_000
# Past the timeout and one abort check: the check's own work (markers written) on a loaded machine.
HOLD_MARGIN_S = 5.0
PRODUCERS = ("p0", "p1")  # the workload's plain transactional producers (TxnWorkload.transactional_ids)


class TransactionHolder(Protocol):
    """What the fault needs of the transactional workload (``scenarios.clients.txn_workload.TxnWorkload``)."""

    @property
    def transactional_ids(self) -> Mapping[str, str]:
        """Each transactional id by role."""

    def hold_past_timeout(self, role: str, timeout_ms: int, hold_s: float) -> HeldTransaction:
        """One transaction of producer ``role`` on an instance with ``transaction.timeout.ms``
        ``timeout_ms``, held open ``hold_s`` before its commit; the attempt as recorded.
        Raises HarnessError when it could not be run (bounded)."""


def hold_seconds(timeout_ms: int, abort_check_interval_ms: int) -> float:
    """How long the transaction stays open before its commit: the coordinator aborts it at the
    first abort check after it is ``timeout_ms`` old, at most one interval later."""
    return (timeout_ms + abort_check_interval_ms) / 1000.0 + HOLD_MARGIN_S


@register_fault
@dataclass
class TxnPastTimeout(FaultBase):
    """A transactional producer holds its transaction past its transaction.timeout.ms, then commits."""

    producer: str = "p0"
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    kind: ClassVar[str] = "txn_past_timeout"
    # The implementation it needs (scenarios.plans.transactional.TXN_CLIENTS): the Java clients'
    # copier takes its transaction timeout on its command line and holds no transaction on request.
    txn_client: ClassVar[str] = "librdkafka"
    _held: HeldTransaction | None = field(default=None, init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> TxnPastTimeout:
        reject_unknown_options(cls.kind, options, ("producer", "timeout_ms"))
        producer = options.get("producer", "p0")
        if producer not in PRODUCERS:
            raise UsageError(f"{cls.kind}: 'producer' must be one of {list(PRODUCERS)}, not {producer!r}")
        timeout_ms = options.get("timeout_ms", DEFAULT_TIMEOUT_MS)
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or not 1_000 <= timeout_ms <= 60_000:
            raise UsageError(f"{cls.kind}: 'timeout_ms' must be an integer in [1000, 60000], not {timeout_ms!r}")
        return cls(target, producer, timeout_ms)

    @property
    def label(self) -> str:
        return self.kind

    def oracle_events(self) -> list[Event]:
        return []  # a client's transaction: no broker, partition or controller changes

    def inject(self, env: FaultEnv) -> None:
        holder = env.transactions
        if holder is None:
            raise HarnessError(f"{self.kind}: the scenario runs no transactional workload "
                               "(\"workload\": {\"transactions\": true})")
        interval = int(dict(env.cluster.broker_settings()).get(ABORT_CHECK_INTERVAL_KEY, DEFAULT_ABORT_CHECK_INTERVAL_MS))
        self._held = holder.hold_past_timeout(self.producer, self.timeout_ms, hold_seconds(self.timeout_ms, interval))

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        return None if self._held is None else self._held.to_dict()


# --- generator side (scenarios.faults.generation) ------------------------------------------------

def _transactional(model: ClusterModel) -> bool:
    return any(t.transactional for t in model.topics.values())


def _past_timeout(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if not _transactional(model):
        raise IllegalStep("txn_past_timeout needs the transactional workload")
    # Every broker down but one may be the coordinator of the producer's id: it must be reachable
    # for the abort to happen and the commit to be answered.
    if model.stopped or model.unknown_down or model.cut or model.failed_dir or model.delayed or model.quorum_cut:
        raise IllegalStep("txn_past_timeout with a broker down or held (the coordinator may be it)")


def _past_timeout_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if not _transactional(model) or model.stopped or model.unknown_down or model.cut or model.failed_dir \
            or model.delayed or model.quorum_cut:
        return []
    return [Step(TxnPastTimeout.kind, NoTarget("a transactional producer"),
                 {"producer": draw.rng.choice(PRODUCERS)})]


register_generator(GeneratorSide(TxnPastTimeout.kind, 1, _past_timeout, _past_timeout_candidates))

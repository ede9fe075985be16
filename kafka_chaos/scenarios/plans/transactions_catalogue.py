"""The ``transactions`` suite (issue 43): every scenario runs the transactional workload
(:mod:`scenarios.plans.transactional`: ``txn_in`` and ``txn_out`` beside ``t``, the ``txn_*`` checks
and the oracle judging every step) under a fault aimed at what a transaction depends on — the
transaction coordinator of the copier's transactional id, the copier group's coordinator, the
leader of an input partition, a producer held past its ``transaction.timeout.ms``, a paused copier.

The coordinator targets name the copier's ids, the one transactional id and group both
implementations have (librdkafka's workload also has producers ``p0`` / ``p1``; the Java clients'
VerifiableProducer is not transactional), so the suite is not pinned to a client:
``--txn-client java`` runs it on Kafka's own test clients. Two faults need one implementation
(:data:`scenarios.plans.transactional.ONE_CLIENT_FAULTS`): ``txn_past_timeout`` librdkafka's,
``client_pause`` the Java processes'; ``kafka-chaos run`` leaves the scenario out with the reason
on the other. Not pinned to a mode: ``--mode kraft`` runs every scenario on a KRaft cluster.

Imported by :mod:`scenarios.plans.catalogue` once its own scenarios are registered.
"""

from __future__ import annotations

from kafka_chaos.scenarios.model.steps import Step, TopicSpec, frozen
from kafka_chaos.scenarios.model.targets import CoordinatorOf, EarlierTarget, GroupCoordinatorOf, LeaderOf, NoTarget
from kafka_chaos.scenarios.plans import catalogue as zk
from kafka_chaos.scenarios.plans.transactional import TXN_IN, with_transactional_topics

TRANSACTIONS_SUITE = zk.TRANSACTIONS_SUITE
_SUITES = frozenset({TRANSACTIONS_SUITE})
# The role the run renames to the copier's transactional id and group (docs/transactions.md).
COPIER = "copier"


def topic_txn_in() -> TopicSpec:
    """The workload's input, as ``run --transactions`` adds it to a scenario on ``t``."""
    return with_transactional_topics((zk.topic_t(),))[1]


def topic_txn_out() -> TopicSpec:
    """The workload's output (``txn_in``'s assignment and config)."""
    return with_transactional_topics((zk.topic_t(),))[2]


_TOPICS = [zk.topic_t, topic_txn_in, topic_txn_out]


@zk.scenario(topics=_TOPICS, suites=_SUITES)
def txn_coordinator_kill() -> list[Step]:
    """The transaction coordinator of the copier's transactional id (the leader of its
    ``__transaction_state`` partition, ``TransactionStateManager.partitionFor``) is killed
    mid-transaction, then started. Kafka 3.9: the partition's new leader loads it
    (``TransactionCoordinator.onElection`` → ``TransactionStateManager.loadTransactionsForTxnTopicPartition``,
    ``COORDINATOR_LOAD_IN_PROGRESS`` meanwhile) and completes what was PrepareCommit / PrepareAbort
    by sending its markers again; a transaction still Ongoing stays open for its producer's EndTxn
    or ``abortTimedOutTransactions``. No committed write may be lost or torn, no aborted one read."""
    return [Step("hard_kill", CoordinatorOf(COPIER)), Step("start", EarlierTarget(0))]


@zk.scenario(topics=_TOPICS, suites=_SUITES)
def txn_coordinator_pause() -> list[Step]:
    """The transaction coordinator of the copier's transactional id is paused (SIGSTOP) past its
    ZooKeeper session, then continued: Kafka 3.9 elects another leader of its ``__transaction_state``
    partition, which loads the transactions (``TransactionCoordinator.onElection``); the paused
    broker, continued, resigns (``onResignation`` → ``removeTransactionsForTxnTopicPartition``) and a
    late write of its old coordinator epoch is refused. Commits stall, none is lost."""
    return [Step("pause", CoordinatorOf(COPIER))]


@zk.scenario(topics=_TOPICS, suites=_SUITES)
def group_coordinator_controlled_shutdown() -> list[Step]:
    """The copier group's coordinator (the leader of its ``__consumer_offsets`` partition,
    ``GroupMetadataManager.partitionFor``) shuts down cleanly, then starts. Kafka 3.9: it resigns
    (``GroupCoordinator.onResignation`` → ``removeGroupsForPartition``), the new leader loads the
    group's offsets (``onElection`` → ``GroupMetadataManager.loadGroupsAndOffsets``) including
    offsets committed in a transaction still open, kept pending until the transaction's marker
    (``handleTxnCompletion``): the copier's committed offsets and its copied records stay in step."""
    return [Step("controlled_shutdown", GroupCoordinatorOf(COPIER)), Step("start", EarlierTarget(0))]


@zk.scenario(topics=_TOPICS, suites=_SUITES)
def txn_in_leader_kill() -> list[Step]:
    """The leader of ``txn_in-0`` (the partition the copier reads in both implementations) is
    killed, then started. Kafka 3.9: the controller elects another ISR member (``onBrokerFailure``);
    its producer state is rebuilt from the log (``ProducerStateManager``) and its last stable
    offset is the first open transaction's start (``UnifiedLog.firstUnstableOffset``); the
    coordinator's markers for the old leader are retried to the new one
    (``TransactionMarkerChannelManager``). A read_committed reader never passes an open transaction."""
    return [Step("hard_kill", LeaderOf(TXN_IN, 0)), Step("start", EarlierTarget(0))]


@zk.scenario(topics=_TOPICS, suites=_SUITES)
def producer_past_transaction_timeout() -> list[Step]:
    """Producer p1 holds a transaction open past its 5 s ``transaction.timeout.ms``, then commits
    (librdkafka's clients only: ``txn_past_timeout``). Kafka 3.9
    ``TransactionCoordinator.abortTimedOutTransactions`` aborts it (``prepareFenceProducerEpoch``:
    epoch bumped, abort markers written); the late EndTxn(commit) is refused
    (``handleEndTransaction``: ``PRODUCER_FENCED``). None of its messages may be read committed."""
    return [Step("txn_past_timeout", NoTarget("producer p1"), frozen({"producer": "p1", "timeout_ms": 5000}))]


@zk.scenario(topics=_TOPICS, suites=_SUITES)
def copier_pause() -> list[Step]:
    """The copier process is stopped (SIGSTOP) for 15 s, past its group's 10 s session, then
    continued (Kafka's Java clients only: ``client_pause``; Jepsen's trigger for KAFKA-17754).
    Kafka 3.9: the group coordinator evicts it (``GroupCoordinator.onExpireHeartbeat``); its
    transaction stays open until its EndTxn or its timeout (``abortTimedOutTransactions``); when
    it runs again its commit under a stale generation fails and its output is aborted. The copy
    check: ``txn_out`` holds exactly ``txn_in`` below the committed offset, once, in order."""
    return [Step("client_pause", NoTarget("the copier"), frozen({"client": COPIER, "seconds": 15.0}))]

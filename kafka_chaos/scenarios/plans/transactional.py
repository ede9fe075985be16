"""Opting a scenario into the transactional workload (issue 43): two topics of its own, written by
transactional producers and a read-process-write copier and read at both isolation levels
(:mod:`scenarios.clients.txn_workload`).

A scenario's transactional topics are the ones marked ``transactional`` (a schedule's topic
``"workload": "transactional"``): the first is the input, the second the output. A schedule's
``"workload": {"transactions": true}``, and ``kafka-chaos run --transactions`` for every scenario
run, add them (:func:`with_transactions`): ``txn_in`` and ``txn_out`` with the assignment of the
scenario's first topic and its config but ``unclean.leader.election.enable`` (a committed
transaction an unclean election truncated is a lost write the checker would count). They are
scenario topics like the others: created by the topic-creation step, watched, and judged by the
oracle at every step; fault targets name the scenario's own topics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from kafka_chaos.common.errors import UsageError
# The producers' codecs (a schedule's workload.compression), kept with the clients that use them
from kafka_chaos.scenarios.model.codecs import COMPRESSIONS as COMPRESSIONS
from kafka_chaos.scenarios.model.codecs import compression_problem as compression_problem
from kafka_chaos.scenarios.faults.clients import ClientKill, ClientPause
from kafka_chaos.scenarios.faults.txn_timeout import TxnPastTimeout
from kafka_chaos.scenarios.model.steps import TopicSpec, frozen
from kafka_chaos.scenarios.plans.spec import DEFAULT_TXN_PRODUCERS as DEFAULT_TXN_PRODUCERS
from kafka_chaos.scenarios.plans.spec import Scenario

TXN_IN, TXN_OUT = "txn_in", "txn_out"
# Who runs the workload: confluent-kafka (scenarios.clients.txn_workload), or Kafka's own Java test
# clients as processes (scenarios.clients.java_txn_workload). The first is the default.
TXN_CLIENTS = ("librdkafka", "java")
_NOT_COPIED = frozenset({"unclean.leader.election.enable"})
# Faults that act through one implementation's seam, and which (each fault class's ``txn_client``):
# the Java clients' processes (ClientHolder), librdkafka's TxnWorkload (TransactionHolder).
ONE_CLIENT_FAULTS: Mapping[str, str] = {cls.kind: cls.txn_client for cls in (ClientPause, ClientKill, TxnPastTimeout)}
# More producers make the brokers handle more transactional produces at once, which a race
# between request threads (KAFKA-15653) needs. Kafka's Java clients run one VerifiableProducer,
# which is not transactional: the count is librdkafka's only.
MAX_TXN_PRODUCERS = 16


def producers_problem(value: object) -> str | None:
    """Why ``value`` is no producer count (a schedule's ``workload.producers``), in one line, or
    None when it is one."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_TXN_PRODUCERS:
        return None
    return f"must be a whole number from 1 to {MAX_TXN_PRODUCERS}, not {value!r}"


def transactional_topics(topics: tuple[TopicSpec, ...] | list[TopicSpec]) -> tuple[TopicSpec, TopicSpec] | None:
    """The input and output topics of the transactional workload, or None when it runs none.
    UsageError unless exactly two are marked."""
    marked = [t for t in topics if t.transactional]
    if not marked:
        return None
    if len(marked) != 2:
        raise UsageError(f"the transactional workload needs two topics (its input, then its output), "
                         f"not {len(marked)}: {[t.name for t in marked]}")
    return marked[0], marked[1]


def with_transactional_topics(topics: tuple[TopicSpec, ...]) -> tuple[TopicSpec, ...]:
    """``topics`` and the two transactional topics copied from the first one (unchanged when
    two are marked already)."""
    if transactional_topics(topics) is not None:
        return topics
    if not topics:
        raise UsageError("the transactional workload needs a topic to copy its topics' assignment from")
    taken = {t.name for t in topics} & {TXN_IN, TXN_OUT}
    if taken:
        raise UsageError(f"the transactional workload's topics {sorted(taken)} are already the scenario's")
    base = next((t for t in topics if t.workload), topics[0])
    config = frozen({k: v for k, v in base.config.items() if k not in _NOT_COPIED})
    return topics + tuple(TopicSpec(name, base.assignment, config, workload=False, transactional=True)
                          for name in (TXN_IN, TXN_OUT))


def with_transactions(s: Scenario, on: bool = True, client: str | None = None) -> Scenario:
    """``s`` with the transactional workload (``run --transactions``), run by ``client`` when
    given (``--txn-client``: also for a scenario with a transactional workload of its own; else
    the scenario's own client)."""
    if client is not None and client not in TXN_CLIENTS:
        raise UsageError(f"--txn-client must be one of {', '.join(TXN_CLIENTS)}, not {client!r}")
    if on:
        s = replace(s, topics=with_transactional_topics(s.topics))
    return s if client is None else replace(s, txn_client=client)


def client_problem(s: Scenario, client: str | None) -> str | None:
    """Why ``s`` cannot run with the transactional workload on ``client`` (None: the scenario's
    own), or None when it can: one of its faults acts on the other implementation's clients."""
    chosen = client or s.txn_client
    kinds = sorted({step.fault for step in s.steps if ONE_CLIENT_FAULTS.get(step.fault, chosen) != chosen})
    if not kinds:
        return None
    return "; ".join(f"{kind} needs the {ONE_CLIENT_FAULTS[kind]} transactional clients, not {chosen}"
                     + ("" if chosen != TXN_CLIENTS[0] else f" (--txn-client {ONE_CLIENT_FAULTS[kind]})")
                     for kind in kinds)


def leave_out_for_client(scenarios: Sequence[Scenario], client: str | None,
                         ) -> tuple[list[Scenario], list[tuple[Scenario, str]]]:
    """The scenarios that can run with the transactional workload on ``client`` (``--txn-client``;
    None: each its own), and the others with the reason."""
    if client is not None and client not in TXN_CLIENTS:
        raise UsageError(f"--txn-client must be one of {', '.join(TXN_CLIENTS)}, not {client!r}")
    kept, left = [], []
    for s in scenarios:
        why = client_problem(s, client)
        if why is None:
            kept.append(s)
        else:
            left.append((s, why))
    return kept, left

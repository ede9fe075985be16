"""The transactional workload run by Kafka's own Java test clients (issue 43) on a real ZooKeeper-mode
3.9.2 cluster, as a schedule opts into it (``"workload": {"transactions": true, "client": "java"}``):
``VerifiableProducer``, ``TransactionalMessageCopier`` and a ``read_committed``
``VerifiableConsumer``, one JVM each, through a 3 s SIGSTOP of the copier (``client_pause``) and a
SIGKILL and restart of the consumer (``client_kill``). Their JSON lines become the history's
writes and reads; every transactional class and the copy check (the output holds exactly the
input below the copier group's committed offsets) pass, and no client process is left running."""

from __future__ import annotations

from pathlib import Path

import psutil

from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.checks.copy import CLASSES as COPY_CLASSES
from kafka_chaos.scenarios.checks.transactions import ABORTED_READ, CLASSES, TORN
from kafka_chaos.scenarios.clients.java_txn_workload import JAVA_CONSUMER
from kafka_chaos.scenarios.clients.txn_ops import COMMITTED
from kafka_chaos.scenarios.history.observations import HistoryProblem, Observation, merged_txn, read_history
from tests.integration.test_schedule_files import run_schedule

SCHEDULE = {
    "schedule_version": 1,
    "name": "txn_java_client_faults",
    "doc": "Kafka's Java test clients through a pause of the copier and a kill of the consumer",
    "cluster": {"brokers": [1, 2, 3]},
    "workload": {"transactions": True, "client": "java"},
    "topics": [{"name": "t", "assignment": {"0": [1, 2, 3], "1": [2, 3, 1]}}],
    "steps": [
        {"fault": "client_pause", "target": {"none": "copier"}, "options": {"client": "copier", "seconds": 3}},
        {"fault": "client_kill", "target": {"none": "consumer"}, "options": {"client": "consumer"}},
    ],
}


def _java_clients() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if any(a.startswith("org.apache.kafka.tools.") for a in p.info["cmdline"] or ())]


def test_java_clients_through_a_pause_and_a_kill_and_every_check_passes(tmp_path: Path) -> None:
    before = {p.pid for p in _java_clients()}
    results = run_schedule(SCHEDULE, tmp_path, seed=44)

    observations: list[Observation] = [o for o in read_history(results / "history.jsonl")
                                       if not isinstance(o, HistoryProblem)]
    history = merged_txn(observations)
    assert history is not None and history.readback is not None and history.group_offsets
    assert sum(t.outcome == COMMITTED for t in history.txns) >= 20  # the producer's acknowledged sends
    assert [r for r in history.reads if r.consumer == JAVA_CONSUMER]
    assert [r.why for r in history.resets if r.consumer == JAVA_CONSUMER].count("started") == 2  # killed, started again

    records = read_records(results).records
    verdicts = {r.check: r for r in records if r.check.startswith("txn_") and r.kind == "check"}
    # the producer commits one record a time and aborts none: those two classes cannot be shown
    assert set(verdicts) == set(CLASSES) - {ABORTED_READ, TORN} | set(COPY_CLASSES)
    assert all(verdicts[c].passed for c in COPY_CLASSES), {c: verdicts[c].detail for c in COPY_CLASSES}
    out_topic = next(rb.topic for rb in history.readback if rb.topic.endswith("txn-out"))
    assert sum(len(rb.records) for rb in history.readback if rb.topic == out_topic) > 0  # the copier copied
    assert {p.pid for p in _java_clients()} <= before  # every client process torn down

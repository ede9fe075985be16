"""The transactional workload, Java side (issue 43): Kafka's own system-test clients as three
processes (:mod:`harness.java_clients`), their JSON lines read into the same history as the
librdkafka workload's (:mod:`scenarios.clients.java_lines`), judged by the same checker.

* ``producer``: ``VerifiableProducer`` writing ``<start>.<n>`` values to the input topic,
  ``acks=all``, idempotent, ``--throughput`` bounded (the tool has no transactional mode), its
  batches compressed with the workload's ``compression`` (``compression.type`` in its
  ``--producer.config`` file);
* ``copier``: ``TransactionalMessageCopier`` in group mode (``--use-group-metadata``, random
  aborts) copying the input to the output topic, one transaction per poll of at most
  :data:`COPY_BATCH` records, offsets sent with each transaction — the read-process-write
  pipeline of Kafka's ``transactions_test.py``; it sends uncompressed batches whatever the
  workload's ``compression``: its producer properties are fixed in the tool
  (``TransactionalMessageCopier.createProducer``, 2.5 to 3.9: no config file, no option);
* ``consumer``: ``VerifiableConsumer --verbose`` at ``read_committed`` on the output topic, a
  group member committing its offsets.

Each is a :class:`harness.java_clients.ClientProcess` the client faults pause and kill
(:mod:`scenarios.faults.clients`). The interface is :class:`scenarios.clients.txn_workload.TxnWorkload`'s,
so the runner drives either.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from confluent_kafka import KafkaException, Producer

from kafka_chaos.harness.java_clients import (
    TRANSACTIONAL_MESSAGE_COPIER,
    VERIFIABLE_CONSUMER,
    VERIFIABLE_PRODUCER,
    ClientProcess,
)
from kafka_chaos.scenarios.clients.java_lines import (
    consumer_read,
    consumer_reset,
    copier_progress,
    json_event,
    producer_txn,
)
from kafka_chaos.scenarios.clients.ops import ConsumerReset
from kafka_chaos.scenarios.clients.txn_ops import (
    COMMITTED,
    READ_COMMITTED,
    UNKNOWN,
    ReadBack,
    Txn,
    TxnConsumer,
    TxnHistory,
    TxnOffset,
    TxnRead,
)
from kafka_chaos.scenarios.clients.txn_workload import TxnWorkloadError, committed_group_offsets, read_committed_back
from kafka_chaos.scenarios.model.codecs import COMPRESSIONS, compression_problem

log = logging.getLogger(__name__)

PRODUCER, COPIER, CONSUMER = "producer", "copier", "consumer"
ROLES = (PRODUCER, COPIER, CONSUMER)
JAVA_COPIER = "java_copier"  # the copier's consumer as the history declares it (scenarios.checks.copy)
JAVA_CONSUMER = "java_rc"
COPY_BATCH = 20
THROUGHPUT = 20  # messages/s the producer sends
_TRANSACTION_TIMEOUT_MS = 30_000
_STOP_GRACE_S = 30.0
_INIT_TIMEOUT_S = 20.0
# Client logs on stderr only: stdout carries the tools' JSON lines.
LOG4J = """log4j.rootLogger=INFO, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


class JavaTxnWorkload:
    """The three Java clients over ``in_topic`` -> ``out_topic``, and what they printed."""

    def __init__(self, bootstrap: str, in_topic: str, in_partitions: Sequence[int], out_topic: str,
                 out_partitions: Sequence[int], *, classpath: str, log_dir: Path, client_id: str,
                 compression: str = COMPRESSIONS[0]) -> None:
        problem = compression_problem(compression)
        if problem is not None:
            raise TxnWorkloadError(f"transactional workload compression {problem}")
        self.compression = compression
        self.bootstrap = bootstrap
        self.in_topic, self.out_topic = in_topic, out_topic
        self.in_partitions, self.out_partitions = tuple(in_partitions), tuple(out_partitions)
        self.client_id = client_id
        self.run_id = uuid.uuid4().hex[:8]
        self.copier_group = f"{client_id}-copier-{self.run_id}"
        self.consumer_group = f"{client_id}-rc-{self.run_id}"
        self.copier_txn_id = f"{client_id}-{self.run_id}-copier"
        self.producer_name = f"{client_id}-{self.run_id}-verifiable-producer"
        self.consumers = (TxnConsumer(JAVA_CONSUMER, READ_COMMITTED, self.consumer_group),
                          TxnConsumer(JAVA_COPIER, READ_COMMITTED, self.copier_group))
        log_dir.mkdir(parents=True, exist_ok=True)
        log4j = log_dir / "java-clients-log4j.properties"
        log4j.write_text(LOG4J)
        producer_props = self._props(log_dir, PRODUCER, {"enable.idempotence": "true", "acks": "all",
                                                          "retries": "2147483647",  # the tool's default is 0
                                                          "delivery.timeout.ms": "120000",
                                                          # ProducerConfig.COMPRESSION_TYPE_CONFIG
                                                          "compression.type": compression})
        consumer_props = self._props(log_dir, CONSUMER, {"isolation.level": READ_COMMITTED})
        self._lock = threading.Condition()
        self._txns: list[Txn] = []
        self._reads: list[TxnRead] = []
        self._resets: list[ConsumerReset] = []
        self._cut = (0, 0, 0)
        self._copier_total = 0
        self.copied = 0  # messages of the copier's committed transactions, as its progress says
        self.copier_rebalances = 0
        self.lines = {role: 0 for role in ROLES}

        def process(role: str, main: str, args: Callable[[int], list[str]]) -> ClientProcess:
            return ClientProcess(role, main, args, classpath=classpath,
                                 log_path=log_dir / f"java-{role}.log",
                                 on_line=lambda line, at: self._on_line(role, line, at), log4j_config=log4j,
                                 respawn=role == COPIER)

        self.processes = {
            PRODUCER: process(PRODUCER, VERIFIABLE_PRODUCER, lambda n: [
                "--topic", in_topic, "--bootstrap-server", bootstrap, "--max-messages", "-1",
                "--throughput", str(THROUGHPUT), "--acks", "-1", "--value-prefix", str(n),
                "--producer.config", str(producer_props)]),
            COPIER: process(COPIER, TRANSACTIONAL_MESSAGE_COPIER, lambda n: [
                "--input-topic", in_topic, "--input-partition", "0", "--output-topic", out_topic,
                "--broker-list", bootstrap, "--max-messages", "-1", "--consumer-group", self.copier_group,
                "--transaction-size", str(COPY_BATCH), "--transaction-timeout", str(_TRANSACTION_TIMEOUT_MS),
                "--transactional-id", self.copier_txn_id, "--enable-random-aborts", "--group-mode",
                "--use-group-metadata"]),
            CONSUMER: process(CONSUMER, VERIFIABLE_CONSUMER, lambda n: [
                "--topic", out_topic, "--bootstrap-server", bootstrap, "--group-id", self.consumer_group,
                "--verbose", "--reset-policy", "earliest", "--session-timeout", "10000",
                "--consumer.config", str(consumer_props)]),
        }

    def _props(self, log_dir: Path, role: str, props: dict[str, str]) -> Path:
        path = log_dir / f"java-{role}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in {"client.id": f"{self.client_id}-java-{role}", **props}.items()))
        return path

    @property
    def transactional_ids(self) -> dict[str, str]:
        """Each transactional id by role (coordinator_of selectors)."""
        return {COPIER: self.copier_txn_id}

    @property
    def groups(self) -> dict[str, str]:
        """Each consumer group by role (group_coordinator_of selectors)."""
        return {COPIER: self.copier_group, CONSUMER: self.consumer_group}

    @property
    def topics(self) -> dict[str, tuple[int, ...]]:
        return {self.in_topic: self.in_partitions, self.out_topic: self.out_partitions}

    # -- lines --------------------------------------------------------------------------------

    def _on_line(self, role: str, line: str, at: float) -> None:
        event = json_event(line)
        if event is None:
            return
        with self._lock:
            self.lines[role] += 1
            if role == PRODUCER:
                txn = producer_txn(event, self.producer_name, len(self._txns), at)
                if txn is not None:
                    self._txns.append(txn)
            elif role == CONSUMER:
                read = consumer_read(event, JAVA_CONSUMER, at)
                if read is not None:
                    self._reads.append(read)
                reset = consumer_reset(event, JAVA_CONSUMER, at)
                if reset is not None:
                    self._resets.append(reset)
            else:
                progress = copier_progress(event, self._copier_total)
                if progress is not None:
                    self._copier_total = progress.total
                    self.copied += progress.committed
                    self.copier_rebalances += progress.rebalanced
            self._lock.notify_all()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        for role in (PRODUCER, CONSUMER, COPIER):  # the copier exits at once on an empty input
            self.processes[role].start()
        log.info("Java transactional workload %s: %s -> copier -> %s", self.run_id, self.in_topic, self.out_topic)

    def wait_for_commits(self, timeout: float) -> list[str]:
        """Wait (bounded) until the producer had a send acknowledged and the copier committed a
        transaction; the clients that did not."""
        def missing() -> list[str]:
            out = [] if any(t.outcome == COMMITTED for t in self._txns) else [self.producer_name]
            return out + ([] if self.copied else [self.copier_txn_id])

        with self._lock:
            self._lock.wait_for(lambda: not missing(), timeout=timeout)
            return missing()

    def _stop(self, roles: Sequence[str]) -> None:
        unclean = [r for r in roles if not self.processes[r].terminate(_STOP_GRACE_S)]
        if unclean:
            raise TxnWorkloadError(f"Java clients {unclean} did not stop within {_STOP_GRACE_S:.0f} s of SIGTERM")

    def stop_writers(self) -> None:
        self._stop((PRODUCER, COPIER))

    def stop_readers(self) -> None:
        self._stop((CONSUMER,))

    def stop_all(self) -> None:
        for p in self.processes.values():
            p.kill()

    def fence(self) -> list[str]:
        """The copier's transactional.id initialised once more (its process stopped): whatever it
        left open is completed or aborted by the coordinator. The ids that could not be."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.copier_txn_id,
                             "client.id": f"{self.client_id}-java-fence", "log_level": 2,
                             "logger": logging.getLogger(f"{__name__}.librdkafka")})
        try:
            producer.init_transactions(_INIT_TIMEOUT_S)
            return []
        except KafkaException as exc:
            log.warning("%s: fencing init_transactions: %s", self.copier_txn_id, exc)
            return [self.copier_txn_id]

    # -- what was recorded --------------------------------------------------------------------

    def cut(self, readback: Sequence[ReadBack] | None = None,
            group_offsets: Sequence[TxnOffset] | None = None) -> TxnHistory:
        with self._lock:
            t0, r0, s0 = self._cut
            part = TxnHistory(tuple(self._txns[t0:]), self.consumers, tuple(self._reads[r0:]),
                              tuple(self._resets[s0:]), None if readback is None else tuple(readback),
                              None if group_offsets is None else tuple(group_offsets))
            self._cut = (len(self._txns), len(self._reads), len(self._resets))
        return part

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"committed": sum(1 for t in self._txns if t.outcome == COMMITTED),
                    "aborted": 0, "unknown": sum(1 for t in self._txns if t.outcome == UNKNOWN),
                    "reads": len(self._reads), "copied": self.copied}

    def debug_lines(self) -> dict[str, list[str]]:
        out = {}
        for role, p in self.processes.items():
            try:
                out[f"java-{role}"] = p.log_path.read_text(errors="replace").splitlines()[-2000:]
            except OSError:
                out[f"java-{role}"] = []
        return out

    # -- after healing ------------------------------------------------------------------------

    def read_back(self, timeout: float = 60.0) -> tuple[ReadBack, ...]:
        return read_committed_back(self.bootstrap, self.topics, client_id=f"{self.client_id}-java-readback",
                                   timeout=timeout, by_value=True)

    def group_offsets(self, timeout: float = 15.0) -> tuple[TxnOffset, ...]:
        """The copier's group's committed offsets on the input topic (partitions without one left out)."""
        return committed_group_offsets(self.bootstrap, self.copier_group, self.in_topic, self.in_partitions,
                                       client_id=f"{self.client_id}-java-offsets", timeout=timeout)

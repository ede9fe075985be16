"""A heavy ``acks=all`` produce load that keeps the brokers' data-plane request queues full
(``kafka-chaos bench kip291``).

Why several producers: a broker's network processor mutes a connection from the moment it read
a request until its response is sent (3.9 ``SocketServer.Processor.processCompletedReceives``
-> ``selector.mute``), so each connection has at most one request in the broker's request
queue; the queue holds as many Produce requests as there are producer connections.  Each
producer here is its own librdkafka client (its own connection per broker), sending big
batches as fast as the brokers acknowledge them.  librdkafka's threads do the sending; the
Python thread per producer only hands it messages and serves delivery reports.

``pause()`` / ``resume()`` hold the load while a benchmark restores its cluster; counters are
cumulative, and :meth:`ProduceLoad.sample` with :func:`rate` gives records/s and MB/s over any
window.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_chaos.common.errors import HarnessError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadSettings:
    producers: int = 12
    # "all" as the brief's clients; "1" keeps the queues full through a hard kill, where every
    # acks=all request waits in purgatory for the dead replica until the controller shrinks the
    # ISRs (3.9 DelayedProduce) and the handler has nothing else to do.
    acks: str = "all"
    value_bytes: int = 16 * 1024
    # Big batches and requests: the broker's handler spends long on each (see the bench's topic
    # compression), so every queued request delays whatever is behind it.
    linger_ms: int = 50
    batch_bytes: int = 1_000_000
    buffer_kbytes: int = 16 * 1024  # per producer: bounds this process's memory
    message_timeout_ms: int = 120_000  # a dead leader's messages wait for its successor

    def producer_config(self, bootstrap: str, index: int) -> dict[str, Any]:
        return {"bootstrap.servers": bootstrap, "client.id": f"kip291-load-{index}", "acks": self.acks,
                "linger.ms": self.linger_ms, "batch.size": self.batch_bytes,
                "batch.num.messages": 100_000, "compression.type": "none",
                "queue.buffering.max.kbytes": self.buffer_kbytes, "message.timeout.ms": self.message_timeout_ms,
                "request.timeout.ms": 30_000, "enable.idempotence": False,
                "sticky.partitioning.linger.ms": self.linger_ms}


@dataclass(frozen=True)
class LoadSample:
    """Cumulative counters at one moment (``time.time()``)."""

    at: float
    acked: int
    acked_bytes: int
    failed: int


def rate(a: LoadSample, b: LoadSample) -> dict[str, float]:
    """Acknowledged records/s and MB/s between two samples, and failed deliveries."""
    span = b.at - a.at
    if span <= 0:
        return {"records_per_s": 0.0, "mb_per_s": 0.0, "failed": float(b.failed - a.failed), "seconds": 0.0}
    return {"records_per_s": round((b.acked - a.acked) / span, 1),
            "mb_per_s": round((b.acked_bytes - a.acked_bytes) / span / 1e6, 2),
            "failed": float(b.failed - a.failed), "seconds": round(span, 2)}


def _payloads(value_bytes: int, count: int = 64) -> list[bytes]:
    """Values that compress about as much as text does (a broker recompressing them works for
    it, as with real payloads), all different so no batch is trivially compressible."""
    rng = random.Random(291)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(4096)]
    out = []
    for _ in range(count):
        chunks: list[bytes] = []
        size = 0
        while size < value_bytes:
            w = rng.choice(words) + b" "
            chunks.append(w)
            size += len(w)
        out.append(b"".join(chunks)[:value_bytes])
    return out


@dataclass
class _Counters:
    acked: int = 0
    acked_bytes: int = 0
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class ProduceLoad:
    """``settings.producers`` librdkafka producers writing to ``topic`` until :meth:`stop`."""

    def __init__(self, bootstrap: str, topic: str, settings: LoadSettings = LoadSettings()) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.settings = settings
        self._counters = _Counters()
        self._running = threading.Event()  # cleared: paused
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._producers: list[Any] = []
        self._payloads = _payloads(settings.value_bytes)

    def __enter__(self) -> ProduceLoad:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        from confluent_kafka import Producer

        self._running.set()
        for i in range(self.settings.producers):
            producer = Producer(self.settings.producer_config(self.bootstrap, i))
            self._producers.append(producer)
            thread = threading.Thread(target=self._produce, args=(producer, i), name=f"kip291-load-{i}", daemon=True)
            self._threads.append(thread)
            thread.start()
        log.info("produce load: %d producers, %d-byte values, to %s", self.settings.producers,
                 self.settings.value_bytes, self.topic)

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def sample(self) -> LoadSample:
        c = self._counters
        with c.lock:
            return LoadSample(time.time(), c.acked, c.acked_bytes, c.failed)

    def _delivered(self, err: Any, msg: Any) -> None:
        c = self._counters
        with c.lock:
            if err is None:
                c.acked += 1
                c.acked_bytes += len(msg.value() or b"")
            else:
                c.failed += 1

    def _produce(self, producer: Any, index: int) -> None:
        n = index
        payloads = self._payloads
        while not self._stopping.is_set():
            if not self._running.is_set():
                producer.poll(0.1)  # deliveries of what is in flight still count
                continue
            try:
                producer.produce(self.topic, payloads[n % len(payloads)], on_delivery=self._delivered)
                n += 1
                producer.poll(0)
            except BufferError:  # librdkafka's queue is full: the brokers are the bottleneck
                producer.poll(0.05)
            except Exception as exc:  # noqa: BLE001 - a load thread must not die silently
                log.warning("producer %d: %s", index, exc)
                producer.poll(0.5)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop producing; wait (bounded) for what is in flight, then drop the rest."""
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
        for producer in self._producers:
            left = producer.flush(max(0.1, min(5.0, deadline - time.monotonic())))
            if left:
                producer.purge()
                producer.poll(0)
        alive = [t.name for t in self._threads if t.is_alive()]
        self._threads, self._producers = [], []
        if alive:
            raise HarnessError(f"produce load threads still running after {timeout:.0f} s: {', '.join(alive)}")


def describe(settings: LoadSettings) -> Mapping[str, Any]:
    """The load's settings, as a record stores them."""
    return {"producers": settings.producers, "value_bytes": settings.value_bytes, "linger_ms": settings.linger_ms,
            "batch_bytes": settings.batch_bytes, "acks": settings.acks, "client": "librdkafka"}


__all__: Sequence[str] = ("LoadSettings", "LoadSample", "ProduceLoad", "describe", "rate")

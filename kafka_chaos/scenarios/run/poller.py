"""Each broker's metadata cache, polled in the background during a step."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_chaos.harness.cluster import ChaosCluster
from kafka_chaos.scenarios.checks.functions import check_metadata_agrees
from kafka_chaos.scenarios.history.observations import MetadataAnswer, PartitionSeen


def _seen(view: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], PartitionSeen]:
    return {k: PartitionSeen(md.leader, tuple(md.replicas), tuple(md.isr)) for k, md in view.items()}


class MetadataPoller:
    """Polls each broker's metadata cache in a background thread per broker (bounded calls),
    recording when each broker first showed each leader — the ``propagation`` phase — and the
    latest full answer for the agreement check. While :meth:`wait_agreement` waits, every broker is
    asked at once and then every ``eager_interval``: ZooKeeper has converged, and each poll the
    step waits for is harness time."""

    def __init__(self, cluster: ChaosCluster, brokers: Iterable[int], topics: Sequence[str], interval: float = 0.2,
                 eager_interval: float = 0.05) -> None:
        self.cluster = cluster
        self.brokers = sorted(brokers)
        self.topics = list(topics)
        self.interval = interval
        self.eager_interval = eager_interval
        self._eager = False  # wait_agreement() is waiting
        self.sightings: list[tuple[float, int, tuple[str, int], int]] = []
        self.latest: dict[int, MetadataAnswer] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._wake = {b: threading.Event() for b in self.brokers}  # poll now (or stop)
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> MetadataPoller:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> MetadataPoller:
        for b in self.brokers:
            t = threading.Thread(target=self._poll, args=(b,), name=f"metadata-poll-{b}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _poll(self, broker: int) -> None:
        from kafka_chaos.harness.metadata import broker_view

        while not self._stop.is_set():
            if not self.cluster.broker_running(broker):  # killed or not started yet
                self._pause(broker)
                continue
            answer: MetadataAnswer
            try:
                answer = _seen(broker_view(self.cluster.endpoint(broker).bootstrap, self.topics, timeout=2.0))
            except Exception as exc:  # noqa: BLE001 - a dead broker simply does not answer
                answer = str(exc)
            at = time.time()
            with self._cond:
                self.latest[broker] = answer
                if not isinstance(answer, str):
                    for key, seen in answer.items():
                        self.sightings.append((at, broker, key, seen.leader))
                self._cond.notify_all()
            self._pause(broker)

    def _pause(self, broker: int) -> None:
        """Until the next poll: ``interval`` (``eager_interval`` while an agreement is awaited), or
        less when woken."""
        wake = self._wake[broker]
        wake.wait(self.eager_interval if self._eager else self.interval)
        wake.clear()

    def sightings_by_partition(self, since: float) -> dict[str, tuple[tuple[float, int, int], ...]]:
        """``"topic-p"`` -> (time, broker, leader) of every answer since ``since``."""
        out: dict[str, list[tuple[float, int, int]]] = {}
        with self._cond:
            for at, b, (t, p), leader in self.sightings:
                if at >= since:
                    out.setdefault(f"{t}-{p}", []).append((at, b, leader))
        return {k: tuple(v) for k, v in out.items()}

    def wait_agreement(self, zk_partitions: Mapping[tuple[str, int], Any], brokers: Iterable[int],
                       timeout: float) -> dict[int, MetadataAnswer]:
        """Until every broker's latest answer agrees with ZooKeeper (bounded); the answers."""
        wanted = sorted(brokers)
        deadline = time.monotonic() + timeout

        def agreed() -> bool:
            for b in wanted:
                answer = self.latest.get(b)
                if answer is None or isinstance(answer, str):
                    return False
                if check_metadata_agrees(zk_partitions, {b: answer}).passed is not True:
                    return False
            return True

        self._eager = True
        for b in wanted:  # now, not at the end of their current interval
            if b in self._wake:
                self._wake[b].set()
        try:
            with self._cond:
                self._cond.wait_for(agreed, timeout=max(0.0, deadline - time.monotonic()))
                return {b: self.latest.get(b, "no answer") for b in wanted}
        finally:
            self._eager = False

    def stop(self) -> None:
        self._stop.set()
        for wake in self._wake.values():
            wake.set()
        for t in self._threads:
            t.join(timeout=5)

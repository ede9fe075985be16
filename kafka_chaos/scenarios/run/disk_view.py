"""Each broker's replicas on disk once a step settled (DescribeLogDirs, one connection per
broker and question), asked until they agree with the assignment or a bound runs out; the last
answers are what the ``replicas_on_disk`` check judges (:mod:`scenarios.checks.disk`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.cluster import ChaosCluster
from kafka_chaos.harness.metadata import MetadataError, describe_log_dirs
from kafka_chaos.scenarios.history.disk import DiskAnswer, disk_replicas

POLL_INTERVAL_S = 0.5


def replicas_on_disk(cluster: ChaosCluster, brokers: Sequence[int], topics: Sequence[str],
                     settled: Callable[[Mapping[int, DiskAnswer]], bool], timeout: float) -> dict[int, DiskAnswer]:
    """Every broker's logs of ``topics``, asked until ``settled`` accepts the answers or
    ``timeout`` runs out; the last answers either way (a broker that did not answer: why)."""

    def ask() -> dict[int, DiskAnswer]:
        answers: dict[int, DiskAnswer] = {}
        for b in brokers:
            try:
                answers[b] = disk_replicas(describe_log_dirs(cluster.endpoint(b).bootstrap), topics)
            except MetadataError as exc:
                answers[b] = str(exc)
        return answers

    try:
        return wait_until(ask, timeout=timeout, interval=POLL_INTERVAL_S, accept=settled,
                          description="every broker's replicas on disk to agree with the assignment")
    except WaitTimeout as exc:
        return cast(dict[int, DiskAnswer], exc.last_value)

"""kafka_chaos.harness.backends.open_bench_cluster: the one place the benchmarks build a cluster on either
launcher (bench failover, bench kip291): unstarted, so nothing runs here."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("backend", ["local", "containers"])
def test_a_bench_cluster_logs_to_files_with_the_benchs_timeouts(backend: str, tmp_path: Path) -> None:
    from kafka_chaos.harness.backends import open_bench_cluster
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import KafkaDistribution

    config = ClusterConfig(brokers=3, broker_heap="448m", zookeeper_heap="512m")
    cluster = open_bench_cluster(backend, config, KafkaDistribution("3.9.2", tmp_path, "test"), start_timeout=300.0,
                                 stop_timeout=80.0, log4j_extra="\n# extra\n")  # unstarted: nothing runs
    assert (cluster.backend, cluster.start_timeout, cluster.stop_timeout) == (backend, 300.0, 80.0)
    assert cluster.config is config and cluster._log4j_extra == "\n# extra\n"
    if backend == "containers":  # controller.log and state-change.log in a host directory, not docker logs
        assert cluster._broker_log_files is True  # type: ignore[union-attr]

"""An older Kafka release on a real cluster, in a run whose own release is 3.9.2: the releases
suite's KIP-704 fixture pinned to 3.1.2 starts a cluster of its own release (3.1.2's jars fetched
from Maven Central once), every check passes with the version-aware oracle, and an unclean
election writes no ``leader_recovery_state`` there -- where 3.9.2 writes RECOVERING, as
tests/integration/test_client_history.py's unclean election shows (the suite's 3.2.3 twin shows
the change at 3.2, and its 3.9.2 twin ``unclean_config_non_isr_first``: nightly).

The scenario takes its follower out of the ISR with a controlled shutdown instead of a kill: the
controller drops it from the ISR at once (KafkaController.doControlledShutdown) where a kill waits
out its ZooKeeper session (6 s); the unclean election that follows is the same. The scenarios as
the catalogue writes them, kill and all, run in the nightly (docs/nightly.md: the releases suite,
and the conformance suite on every release).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kafka_chaos.app.runs import run_scenarios
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.plans import catalogue
from kafka_chaos.scenarios.plans.spec import Scenario
from kafka_chaos.scenarios.history.observations import HISTORY_FILE, StepObserved, read_history

FIXTURE = "unclean_election_recovery_state_on_3_1_2"


def follower_shut_down_first(scenario: Scenario) -> Scenario:
    """The fixture with its first step, the follower's kill, made a controlled shutdown."""
    first, *rest = scenario.steps
    assert (first.fault, type(first.target).__name__) == ("hard_kill", "FollowerOf"), first
    return replace(scenario, steps=(replace(first, fault="controlled_shutdown"), *rest))


@pytest.mark.nightly
def test_an_unclean_election_on_3_1_2_writes_no_recovery_state(tmp_path: Path) -> None:
    results = tmp_path / "run"
    rc = run_scenarios([follower_shut_down_first(s) for s in catalogue.by_names([FIXTURE])], seed=29,
                       results_dir=results, report=False)
    records = read_records(results).records
    assert rc == 0, [(r.scenario, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    # every record names the release its scenario ran on, not the run's
    assert {r.kafka_version for r in records if r.scenario == FIXTURE} == {"3.1.2"}
    assert any(r.check == "oracle_outcome" and r.passed for r in records)  # the unclean election, predicted
    # no leader_recovery_state before 3.2: nothing predicted, nothing observed, no check
    assert not [r for r in records if r.check == "oracle_recovery"]
    # the oracle's input carried the release, so `kafka-chaos check` re-predicts with its rules
    steps = [o for o in read_history(results / HISTORY_FILE) if isinstance(o, StepObserved) and o.index is not None]
    assert steps and {str(o.oracle_state.release) for o in steps} == {"3.1.2"}


def test_a_broker_rolled_to_another_release_runs_its_jars_on_its_data(tmp_path: Path) -> None:
    """The local launcher's ReleaseRoller: a 3.1.2 broker stopped, moved to 3.9.2 with IBP 3.1
    pinned, started again on the same data and port, runs 3.9.2's jars and still leads its
    partition."""
    import psutil

    from kafka_chaos.common.waits import wait_until
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.harness.local.cluster import LocalCluster
    from kafka_chaos.harness.metadata import broker_view, create_topic

    config = ClusterConfig(brokers=1, cluster_overrides={"inter.broker.protocol.version": "3.1"})
    with LocalCluster(config, resolve_distribution("3.1.2"), run_dir=tmp_path / "cluster") as cluster:
        create_topic(cluster.bootstrap_servers, "rolled", {0: [1]}, {}, timeout=60.0)
        cluster.stop_broker(1)
        cluster.set_broker_release(1, "3.9.2", {"inter.broker.protocol.version": "3.1"})
        cluster.start_broker(1)
        jars = " ".join(psutil.Process(cluster.broker_pid(1)).cmdline())
        assert "kafka_2.13-3.9.2.jar" in jars and "kafka_2.13-3.1.2.jar" not in jars
        assert (cluster.broker_version(1), cluster.broker_overrides(1)) == ("3.9.2", {"inter.broker.protocol.version": "3.1"})
        assert "inter.broker.protocol.version=3.1" in (tmp_path / "cluster" / "broker-1" / "server.properties").read_text()
        # Ready means the broker's metadata lists every broker: the controller's failover sends that
        # UpdateMetadata with no partition (KafkaController.onControllerFailover ->
        # sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds, Set.empty), 3.9); the partitions
        # follow in the replica state machine's start-up, a moment later.
        view = wait_until(lambda: broker_view(cluster.endpoint(1).bootstrap, ["rolled"], timeout=30.0),
                          timeout=30.0, interval=0.1, accept=lambda v: ("rolled", 0) in v,
                          description="the rolled broker's metadata holding rolled-0")
        assert view[("rolled", 0)].leader == 1

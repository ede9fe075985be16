"""The network-partition scenarios through `kafka-chaos run --backend containers` (one run shared
by this module's tests, tests/containers/conftest.py): they pass, record the documented rule
checks and the client windows, and leave no container or network behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.records.writer import read_records
from tests.containers.conftest import PARTITION_SCENARIOS, SuiteRun, assert_nothing_left, run_on_containers


def records_of(run: SuiteRun, scenario: str, **where: object) -> list:  # type: ignore[type-arg]
    return [r for r in run.records if r.scenario == scenario
            and all(getattr(r, k) == v for k, v in where.items())]


def test_every_scenario_passes_and_leaves_nothing(containers_run: SuiteRun) -> None:
    failed = [(r.scenario, r.check, r.topic, r.partition, r.detail) for r in containers_run.records
              if r.kind == "check" and r.passed is not True]
    assert containers_run.rc == 0, failed
    assert {r.scenario for r in containers_run.records} == set(PARTITION_SCENARIOS)
    info = json.loads((containers_run.results / "run.json").read_text())
    assert info["passed"] is True and info["backend"] == "containers"
    assert len(containers_run.cluster_runs) == 1, "one cluster per distinct cluster needs"
    for run_id in containers_run.cluster_runs:
        assert_nothing_left(run_id)


def test_follower_cut_from_its_peers_shrinks_then_expands_the_isr_by_the_documented_rule(
        containers_run: SuiteRun) -> None:
    name = "follower_cut_from_leader"
    shrinks = records_of(containers_run, name, check="rule_leader_isr_shrink")
    expands = records_of(containers_run, name, check="rule_leader_isr_expand")
    # r has 3 partitions with RF 3: the cut follower follows two of them and leads the third
    assert len(shrinks) == 2 and all(r.passed is True for r in shrinks)
    assert {(r.topic, r.partition) for r in expands} == {(r.topic, r.partition) for r in shrinks}
    assert all(r.passed is True for r in expands)
    for r in shrinks:  # leader and leader epoch unchanged, the follower gone from the ISR
        assert r.observed["leader"] == r.expected["leader"]
        assert r.observed["leader_epoch"] == r.expected["leader_epoch"]
        assert len(r.observed["isr"]) == 2
    windows = records_of(containers_run, name, check="client_window", fault="network_partition/peers")
    assert len(windows) == 3
    stalled = [w for w in windows if w.observed["stalled_at_end"]]
    # the partition the cut broker leads cannot commit acks=all: it stalls until the heal ...
    assert len(stalled) == 1 and (stalled[0].topic, stalled[0].partition) not in {
        (r.topic, r.partition) for r in shrinks}
    # ... and the others resume once their leader shrank the ISR
    for w in windows:
        if w not in stalled:
            assert w.latency_ms["client_gap"] is not None and w.timestamps["isr_change"] >= w.timestamps["fault"]
    healed = records_of(containers_run, name, check="client_window", fault="network_partition/heal",
                        partition=stalled[0].partition)
    assert len(healed) == 1 and healed[0].latency_ms["first_produce"] is not None


def test_a_controller_cut_from_zookeeper_loses_its_partitions_and_clients_see_it_later(
        containers_run: SuiteRun) -> None:
    assert_leaders_moved_before_clients_saw_them(containers_run, "controller_cut_from_zookeeper",
                                                 "network_partition/zookeeper")


@pytest.mark.nightly
def test_a_leader_cut_from_zookeeper_loses_its_partitions_and_clients_see_it_later(
        kafka_image: str, tmp_path: Path) -> None:
    name = "leader_cut_from_zookeeper"
    run = run_on_containers((name,), tmp_path / "results")
    failed = [(r.check, r.topic, r.partition, r.detail) for r in run.records if r.kind == "check" and r.passed is not True]
    assert run.rc == 0, failed
    assert_leaders_moved_before_clients_saw_them(run, name, "network_partition/zookeeper")
    for run_id in run.cluster_runs:
        assert_nothing_left(run_id)


@pytest.mark.nightly
def test_a_broker_isolated_from_everyone_loses_its_partitions_and_clients_see_it_later(
        containers_smoke_run: SuiteRun) -> None:
    assert_leaders_moved_before_clients_saw_them(containers_smoke_run, "broker_isolated_from_everyone",
                                                 "network_partition/everyone")


def assert_leaders_moved_before_clients_saw_them(run: SuiteRun, name: str, fault: str) -> None:
    """The leaders a cut broker held moved, and the clients saw their first ack from the new ones
    after that (its two partitions of t); a client window measured for the heal."""
    switches = records_of(run, name, check="latency", fault=fault)
    assert len(switches) == 2, f"{name}: every broker leads two partitions of t"
    for r in switches:
        ms = r.latency_ms
        assert ms["detection"] is not None and ms["election"] is not None, (name, ms)
        assert ms["first_produce"] is not None, f"{name}: clients found the new leader of {r.partition}"
        # the cluster moved the leader first, the client saw its first ack from it later
        assert r.timestamps["election"] <= r.timestamps["first_produce"]
    assert records_of(run, name, check="client_window", fault="network_partition/heal")


def test_controller_cut_from_zookeeper_is_replaced_by_exactly_one_other(containers_run: SuiteRun) -> None:
    name = "controller_cut_from_zookeeper"
    [cut] = records_of(containers_run, name, check="single_controller", fault="network_partition/zookeeper")
    cut_broker = int(cut.target.split()[1])  # "broker N (controller)"
    assert cut.passed is True and cut.observed["zk"] not in (None, cut_broker)
    [healed] = records_of(containers_run, name, check="single_controller", fault="network_partition/heal")
    assert healed.passed is True and healed.observed["zk"] == cut.observed["zk"], "no controller move on heal"


def test_where_the_local_backend_cannot_cut_a_named_partition_scenario_is_an_unknown_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka_chaos.harness.local.cluster

    # As on a machine without root or iptables (as root the local launcher cuts loopback links).
    monkeypatch.setattr(kafka_chaos.harness.local.cluster, "partition_problem",
                        lambda: "network partitions on the local launcher need root (iptables on loopback)")
    results = tmp_path / "results"
    rc = main(["run", "--backend", "local", "--scenario", "follower_cut_from_leader", "--no-report",
               "--results", str(results)])
    assert rc != 0, "an unknown verdict never passes a run"
    [record] = read_records(results).records
    assert record.passed is None and "need root (iptables on loopback)" in record.detail

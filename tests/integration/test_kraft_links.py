"""Cuts between KRaft nodes on the local launcher (root + iptables), on real 3.9.2 clusters of 3
controllers and 3 brokers: the quorum leader cut from the two other voters with ``cut_links``, and
a broker cut from every controller through the ordinary runner (``broker_controller_cut``).

What the controllers' metadata logs show: the two others elect a leader of a later epoch (their
logs carry its LEADER_CHANGE; the cut one's does not, it still ends in its own epoch), while the
harness still reaches the cut controller. The cut one, having resigned (check-quorum, 3.7.0+:
KAFKA-15489), stands as a candidate in epochs past the new leader's (its ``quorum-state`` file:
its Vote requests are dropped); once healed, its higher epoch forces another election (no pre-vote
before 4.0, KIP-996) that it cannot win with its shorter log, and its own log shows the quorum's
current leader and epoch -- it fetched from that leader: it follows again. Every node runs with
the group id of its port (the loopback firewall's marks), and destroy removes the chains.

The broker cut (``schedules/kraft_broker_controller_cut.json``): the leader of t-0 cut from every
controller, then healed, each step checked against the KRaft model. The cut step converges once
the active controller fenced it (its session expired: never before the heartbeats it missed could
have kept it), t-0's leadership moved and its ISRs shrunk, while its own metadata still names it
t-0's leader -- held by the fault, it is not asked; healed, it is unfenced at its next heartbeat,
rejoins every ISR and its metadata is judged again.

A matrix cell, ``nightly`` (docs/nightly.md): about 40 s for the voter cut and 25 s for the broker
cut, and the test command is near its budget.
"""

from __future__ import annotations

import logging
from pathlib import Path

import psutil
import pytest

from kafka_chaos.harness.config import TEST_SESSION_TIMEOUT_MS, ClusterConfig
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.kraft import LocalKraftCluster
from kafka_chaos.harness.local.network import node_mark, our_chains, partition_problem
from tests.integration.kraft_cut_proof import describe, prove_leader_cut

pytestmark = [pytest.mark.nightly,
              pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))]

log = logging.getLogger(__name__)

RELEASE = "3.9.2"
CONFIG = ClusterConfig(brokers=3, mode="kraft", controllers=3)


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_a_quorum_leader_cut_from_the_other_voters_is_replaced_and_follows_once_healed() -> None:
    with LocalKraftCluster(CONFIG, resolve_distribution(RELEASE)) as cluster:
        voters = cluster.controller_ids
        chain = f"KCHAOS-{port_of(cluster.controller_address(voters[0]))}"
        assert chain in our_chains(), "the firewall is installed with the cluster"
        for c in voters:  # every node, controllers and brokers, runs with its port's group
            pid = cluster.controller_pid(c)
            assert pid is not None and psutil.Process(pid).gids().real == node_mark(port_of(cluster.controller_address(c)))
        for b in cluster.broker_ids:
            endpoint = cluster.endpoint(b)
            assert endpoint.pid is not None and psutil.Process(endpoint.pid).gids().real == node_mark(endpoint.port)
        own_dirs = dict(zip(voters, cluster.metadata_log_dirs()))

        with cluster.observer(topics=[]) as quorum:
            proof = prove_leader_cut(cluster, quorum, own_dirs)
        assert all(cluster.controller_running(c) for c in voters)
        log.info("%s", describe(proof))
    assert chain not in our_chains(), "destroy removes the firewall"


SCHEDULE = Path(__file__).parent / "schedules" / "kraft_broker_controller_cut.json"
HEARTBEAT_MS = 2000  # broker.heartbeat.interval.ms: the session runs from the last one before the cut


def test_a_broker_cut_from_the_controllers_is_fenced_then_unfenced_once_healed(tmp_path: Path) -> None:
    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.records.writer import read_records
    from kafka_chaos.results.verdicts import verdict_changes
    from kafka_chaos.scenarios.checks.registry import check_history, to_records
    from kafka_chaos.scenarios.history.observations import HISTORY_FILE, HistoryProblem, StepObserved, read_history
    from kafka_chaos.scenarios.plans.schedule import load

    schedule = load(SCHEDULE)
    results = tmp_path / "run"
    rc = run_scenarios([schedule.scenario()], seed=42, results_dir=results, report=False,
                       kafka_version=RELEASE, sources={schedule.name: str(SCHEDULE)})
    records = read_records(results).records
    failed = [(r.fault, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    cut, heal = "broker_controller_cut/from_controllers", "broker_controller_cut/heal"
    for label in (cut, heal):  # both steps judged by the KRaft model, epochs exact
        judged = {r.check for r in records if r.fault == label and r.kind == "check" and r.passed}
        assert {"oracle_leader", "oracle_isr", "oracle_partition_epoch", "metadata_agrees_zk",
                "one_quorum_leader"} <= judged, (label, judged)
    # t-0's leadership moved 1 -> 2 when the session expired: not before the cut broker's last
    # heartbeat could have kept it alive (at most one interval before the cut)
    moved = [r for r in records if r.fault == cut and r.check == "latency"]
    assert [(r.partition, r.expected["leader"]) for r in moved] == [(0, 2)], moved
    detection = moved[0].latency_ms["detection"]
    assert TEST_SESSION_TIMEOUT_MS - HEARTBEAT_MS <= detection, detection

    steps = [o for o in read_history(results / HISTORY_FILE) if isinstance(o, StepObserved) and o.index is not None]
    cut_step, heal_step = steps
    assert cut_step.target.brokers == (1,) and cut_step.excused == (1,) and heal_step.excused == ()
    assert 1 not in cut_step.after.live_brokers and 1 in heal_step.after.live_brokers  # fenced, then unfenced
    # the cut broker, held, is not asked; its own metadata still names it t-0's leader after the fence
    assert set(cut_step.metadata) == {2, 3} and set(heal_step.metadata) == {1, 2, 3}
    t0 = f"{schedule.name}-0-t-0".replace("_", "-")
    fenced_at = cut_step.fault_at + detection / 1000
    stale = [leader for at, broker, leader in cut_step.sightings[t0] if broker == 1 and at > fenced_at + 0.1]
    assert stale and set(stale) == {1}, stale
    assert all(set(p.isr) == {1, 2, 3} for (t, _), p in heal_step.after.partitions.items() if t == t0[:-2])
    # the stored inputs re-check to the same verdicts
    observations = [o for o in read_history(results / HISTORY_FILE) if not isinstance(o, HistoryProblem)]
    again = [rec for obs, rs in check_history(observations) for rec in to_records(obs, rs)]
    assert again and not verdict_changes(records, again)


FOLLOWER_SCHEDULE = Path(__file__).parent / "schedules" / "kraft_quorum_follower_cut.json"


def test_a_follower_voter_cut_from_the_others_changes_nothing_and_forces_an_election_once_healed(
        tmp_path: Path) -> None:
    """``quorum_follower_cut`` through the runner (about 25 s): while a follower voter is cut from
    the two others the leader keeps its epoch and the majority of the other follower, and one voter
    leads (``one_quorum_leader``); healed, the cut voter's later epoch forces an election past it."""
    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.records.writer import read_records
    from kafka_chaos.scenarios.history.observations import HISTORY_FILE, StepObserved, read_history
    from kafka_chaos.scenarios.plans.schedule import load

    schedule = load(FOLLOWER_SCHEDULE)
    results = tmp_path / "run"
    rc = run_scenarios([schedule.scenario()], seed=43, results_dir=results, report=False,
                       kafka_version=RELEASE, sources={schedule.name: str(FOLLOWER_SCHEDULE)})
    records = read_records(results).records
    failed = [(r.fault, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    assert {r.fault for r in records if r.check == "one_quorum_leader" and r.passed} == {
        "quorum_follower_cut/follower_from_voters", "quorum_follower_cut/heal"}
    cut, heal = [o for o in read_history(results / HISTORY_FILE) if isinstance(o, StepObserved) and o.index is not None]
    assert (cut.after.controller, cut.after.controller_epoch) == (cut.before.controller, cut.before.controller_epoch)
    assert heal.after.controller_epoch is not None and heal.before.controller_epoch is not None
    assert heal.after.controller_epoch > heal.before.controller_epoch + 1  # past the epochs it stood in

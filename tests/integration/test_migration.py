"""The ZooKeeper→KRaft migration driven on a real local cluster (``--mode migration``).

In the test command, ``schedules/migration_kill_in_hybrid.json``: one KRaft controller, odd broker
ids, every broker rolled into migration mode at once (the metadata copy), a migrating ZooKeeper
broker killed and started while the KRaft controller is in charge (it fences it and bumps the
leader epoch on each ISR shrink), every broker rolled to KRaft, the migration finalised. Every
check passes under the client workload, each phase is the one Kafka reported, ZooKeeper equals the
metadata log at every dual-write step, and the history re-checks offline to the same verdicts
(``kafka-chaos check``).

Nightly (the test command's budget: about 80 s against 48 s), the same path on three voters with
quorum failovers, from the hand-written schedule file of issue 41
(``schedules/mig_quorum_kill_dual_write.json``: the active KRaft controller killed in hybrid, a
ZooKeeper broker killed and started, every broker rolled to KRaft, the active controller paused
with no majority of voters left -- an outage, then their return --, the migration finalised), once
as written (``[0]``) and once with the active controller paused twice more before the kill
(``[2]``: each time another voter must take over and the harness must see it; a paused leader's
last NoOpRecord once hid the next one's LEADER_CHANGE, a unit table's since:
tests/unit/harness/test_kraft_log.py).

And, nightly, two entries of the known-bug corpus on Kafka 3.6.1 (docs/recall.md): KAFKA-16121
found again (docs/findings.md §7) -- a reassignment in hybrid mode never completes, the oracle's
checks say where, and the leader's own state-change log says why -- and KAFKA-16120, a removed
replica left on its broker, which only the replicas on disk show. (Their fixed releases passing
is the nightly's corpus run: docs/nightly.md; the test command's corpus entry is KAFKA-16692's,
tests/integration/test_transactions.py.)"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kafka_chaos.app.runs import run_scenarios
from kafka_chaos.records.schema import Record
from kafka_chaos.records.writer import read_records
from kafka_chaos.scenarios.checks.registry import check_history
from kafka_chaos.scenarios.history.observations import HistoryProblem, StepObserved, read_history
from kafka_chaos.scenarios.model.ledger import SESSION_EXPIRY  # where a quorum fault's inject goes (WAITS_OUT_TIMEOUT)
from kafka_chaos.scenarios.plans.corpus import CORPUS_DIR
from kafka_chaos.scenarios.plans.catalogue import by_names
from kafka_chaos.scenarios.plans.schedule import load

SCHEDULE = Path(__file__).parent / "schedules" / "mig_quorum_kill_dual_write.json"
PAUSE = {"fault": "quorum_leader_pause", "target": {"controller": {}}}
OUTAGE_S = 7.0
ONE_CONTROLLER = Path(__file__).parent / "schedules" / "migration_kill_in_hybrid.json"
KNOWN_BAD = CORPUS_DIR / "kafka_16121_reassignment_in_hybrid.json"
# Both waits are spent whole on 3.6.1 (the reassignment never converges, and the cluster never
# settles after the heal: a reassignment stays pending). Where Kafka has the fix (3.9.2, measured)
# the reassignment converges 0.2 s after it is written and the healed cluster settles in 0.1 s;
# the provisioning and the roll wait for their brokers in the faults themselves, then converge and
# settle at once; the settle timeout also bounds the fresh cluster's __consumer_offsets creation
# and producer-id warm-up (ClusterPool._ready_for_clients, within the 3.4 s the whole cluster took
# to start here). 3 and 4 s, not the default 90 s, leave those a wide margin and keep the test short.
# The disk wait is spent whole where a removed replica stays on its broker (KAFKA-16120); where it
# goes, DescribeLogDirs stops listing it at its StopReplica (LogManager.asyncDelete takes it out of
# currentLogs before renaming it for deletion, 3.9): 4 s, not the default 15 s.
SHORT_WAITS = {"convergence_timeout": 3.0, "settle_timeout": 4.0, "disk_timeout": 4.0}


def with_pauses_first(path: Path, into: Path, pauses: int) -> Path:
    """The schedule file with the active controller paused ``pauses`` times after the roll into
    hybrid, and its last pause's outage shortened."""
    data = json.loads(path.read_text())
    for step in data["steps"]:  # the steps an "earlier" target names move down by the pauses
        if "earlier" in step.get("target", {}) and step["target"]["earlier"] >= 2:
            step["target"]["earlier"] += pauses
    data["steps"][2:2] = [PAUSE] * pauses
    last_pause = max(i for i, step in enumerate(data["steps"]) if step["fault"] == "quorum_leader_pause")
    # its outage just past the brokers' 6 s session, the least that shows nobody is fenced
    data["steps"][last_pause]["options"] = {"seconds": OUTAGE_S}
    data["name"] += f"_paused_{pauses}_more"
    into.write_text(json.dumps(data))
    return into


def run_migration(path: Path, results: Path) -> list[Record]:
    """The schedule file through the runner; every check passed (client defects tolerated)."""
    schedule = load(path)
    # --tolerate client: a duplicate librdkafka makes by re-sending, under a bumped epoch, a batch a
    # leader appended and answered NOT_LEADER for as it shut down (librdkafka#4953's path; CI #35)
    # is the client's, not the harness's or Kafka's -- any other failed check still fails
    rc = run_scenarios([schedule.scenario()], seed=31, results_dir=results, report=False,
                       sources={schedule.name: str(path)}, tolerate="client")
    records = read_records(results).records
    assert rc == 0, [(r.check, r.fault, r.detail) for r in records if r.kind == "check" and r.passed is False]
    return records


def assert_phases_observed(records: list[Record], results: Path, phases: list[tuple[str, str]],
                           dual_write_steps: int) -> list[StepObserved]:
    """Each step's phase the one Kafka reported, ZooKeeper equal to the metadata log at every
    dual-write step, the kill in hybrid judged by the KRaft controller's rules, and the history
    re-checked offline to the same verdicts; the steps observed."""
    timeline = [r for r in records if r.check == "migration_timeline"]
    assert [(r.fault, r.observed["phase_after"]) for r in timeline] == phases
    assert timeline[1].observed["driver_state"] == "DUAL_WRITE"
    assert all(r.passed for r in records if r.check in ("migration_phase", "migration_dual_write"))
    assert len([r for r in records if r.check == "migration_dual_write"]) >= dual_write_steps
    # the KRaft controller judged the kill in hybrid, bumping the leader epoch on each ISR shrink
    kill = [r for r in records if r.fault == "hard_kill" and r.check == "oracle_partition_epoch"]
    assert kill and all(r.passed for r in kill)
    assert {r.mode for r in records if r.check == "oracle_leader"} == {"migration"}
    observations = [o for o in read_history(results / "history.jsonl") if not isinstance(o, HistoryProblem)]
    recorded = Counter((r.check, r.passed) for r in records if r.kind == "check")
    rechecked = Counter((r.check, r.passed) for _, rs in check_history(observations) for r in rs if not r.is_measurement)
    assert rechecked == recorded
    return [o for o in observations if isinstance(o, StepObserved)]


def test_a_migration_with_one_controller_and_a_kill_in_hybrid_passes_and_its_phases_are_observed(
        tmp_path: Path) -> None:
    results = tmp_path / "run"
    records = run_migration(ONE_CONTROLLER, results)
    assert_phases_observed(records, results, [
        ("migration_provision", "pre-migration"), ("migration_roll/hybrid", "hybrid"), ("hard_kill", "hybrid"),
        ("start", "hybrid"), ("migration_roll/kraft", "dual-write"), ("migration_finalize", "finalized")],
        dual_write_steps=4)
    assert [r.observed["kraft_controller"] for r in records if r.check == "migration_timeline"][1] == 3000


@pytest.mark.nightly
@pytest.mark.parametrize("pauses", [0, 2])
def test_a_migration_through_quorum_failovers_and_an_outage_passes_and_its_phases_are_observed(
        tmp_path: Path, pauses: int) -> None:
    path = with_pauses_first(SCHEDULE, tmp_path / "schedule.json", pauses)
    results = tmp_path / "run"
    records = run_migration(path, results)
    steps = assert_phases_observed(records, results, [
        ("migration_provision", "pre-migration"), ("migration_roll/hybrid", "hybrid"),
        *[("quorum_leader_pause", "hybrid")] * pauses, ("quorum_leader_kill", "hybrid"),
        ("hard_kill", "hybrid"), ("start", "hybrid"), ("migration_roll/kraft", "dual-write"),
        ("quorum_leader_pause", "dual-write"), ("migration_finalize", "finalized")],
        dual_write_steps=5 + pauses)  # hybrid and dual-write steps
    quorum = [(o.before.controller, o.before.controller_epoch, o.after.controller, o.after.controller_epoch,
               o.ledger.seconds(SESSION_EXPIRY)) for o in steps
              if o.traits.kind in ("quorum_leader_pause", "quorum_leader_kill") and o.after is not None]
    assert len(quorum) == pauses + 2
    for before, before_epoch, after, after_epoch, _ in quorum[:-1]:  # a majority left: another voter leads
        assert after != before and after_epoch > before_epoch, quorum
    *_, outage = quorum[-1]  # two voters up, the leader paused: no majority until it is resumed
    assert outage >= OUTAGE_S and quorum[-1][3] > quorum[-1][1], quorum


@pytest.mark.nightly  # the test command runs the corpus's KAFKA-16120 entry (below) on 3.6.1 instead
def test_kafka_16121_is_found_again_on_3_6_1(tmp_path: Path) -> None:
    schedule = load(KNOWN_BAD)
    results = tmp_path / "run"
    rc = run_scenarios([schedule.scenario()], seed=1, results_dir=results, report=False, kafka_version="3.6.1",
                       runner_options=SHORT_WAITS, sources={schedule.name: str(KNOWN_BAD)})
    records = read_records(results).records
    assert rc == 1
    assert {r.kafka_version for r in records} == {"3.6.1"}
    failed = {(r.check, r.fault, r.partition) for r in records if r.kind == "check" and r.passed is False}
    # provisioning and the roll into hybrid passed; the reassignment of t-0 stalled: replicas
    # [2, 3, 1] and ISR [1, 2] where the controller's decision is [2, 3] led by 2
    assert {fault for _, fault, _ in failed} <= {"reassignment", None}
    assert {("converged", "reassignment", None), ("oracle_replicas", "reassignment", 0),
            ("oracle_isr", "reassignment", 0), ("oracle_leader", "reassignment", 0)} <= failed
    replicas = next(r for r in records if r.check == "oracle_replicas" and r.passed is False)
    assert replicas.expected == [2, 3] and replicas.observed == [2, 3, 1]
    # why, from the leader's own log: a ZooKeeper broker ignores a LeaderAndIsr without a newer
    # leader epoch (ReplicaManager.scala 3.6.1 line 1821), and adding a replica bumps none
    leader_log = (results / "logs" / f"{schedule.name}-0" / "broker-1-state-change.log").read_text()
    assert any("Ignoring LeaderAndIsr request from controller 3000" in line
               and "-t-0 since its associated leader epoch 2 matches the current leader epoch" in line
               for line in leader_log.splitlines())


@pytest.mark.nightly  # the test command runs the corpus's KAFKA-16692 entry instead (test_transactions.py)
def test_the_corpus_catches_kafka_16120_on_3_6_1_with_the_replicas_on_disk(tmp_path: Path) -> None:
    """The corpus entry on its affected release, as ``run --suite corpus`` runs it: the reassignment
    converges and every metadata view is right, but broker 1 keeps t-0's log (StopReplica with
    deletePartition = false, MigrationPropagator.scala 3.6.1 line 210). The entry is CAUGHT, so
    the run passes; the fixed release (3.6.2) is the nightly's corpus run."""
    scenario = by_names(["kafka_16120_removed_replica_left_in_hybrid_on_3_6_1"])[0]
    results = tmp_path / "run"
    rc = run_scenarios([scenario], seed=1, results_dir=results, report=False, suite="corpus",
                       runner_options=SHORT_WAITS, junit=tmp_path / "junit.xml")
    records = read_records(results).records
    failed = [(r.check, r.fault, r.detail) for r in records if r.kind == "check" and r.passed is False]
    assert rc == 0, failed
    assert {r.kafka_version for r in records} == {"3.6.1"}
    t = f"{scenario.name}-0-t".replace("_", "-")  # the topic's name in this run (Runner: one per iteration)
    assert failed == [("replicas_on_disk", "reassignment", f"not assigned, still on disk: {t}-0 on broker 1")]
    on_disk = next(r for r in records if r.check == "replicas_on_disk" and r.passed is False)
    assert [x for x in on_disk.observed["1"] if x.startswith(t)] == [f"{t}-0", f"{t}-1", f"{t}-2"]
    assert [x for x in on_disk.expected["1"] if x.startswith(t)] == [f"{t}-1", f"{t}-2"]
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="0"' in junit and "KAFKA-16120 caught on 3.6.1: replicas_on_disk failed" in junit


def test_a_zookeeper_cluster_id_starting_with_a_dash_formats_the_controllers(tmp_path: Path) -> None:
    """A ZooKeeper-mode cluster's id is any base64 UUID (``CoreUtils.generateUuidAsBase64``), so one
    in 64 starts with '-'; ``kafka-storage format -t <id>`` then fails ("expected one argument"),
    which aborted migrations here (docs/findings.md §8). The harness formats with
    ``--cluster-id=<id>``: on the oldest and the newest release a migration runs on."""
    from kafka_chaos.harness.config import ClusterConfig, DEFAULT_JVM_OPTIONS, kraft_node_properties, render_properties
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.harness.kraft.storage import format_storage

    cluster_id = "-9nXqZq0QsKrqB45ZS4ykQ"  # a valid base64 UUID, as ZooKeeper-mode Kafka writes them
    for version in ("3.6.1", "3.9.2"):
        data = tmp_path / version / "data"
        config = tmp_path / version / "controller.properties"
        data.mkdir(parents=True)
        props = kraft_node_properties(ClusterConfig(mode="migration"), 3000, voters={3000: "127.0.0.1:1"},
                                      address="127.0.0.1:1", log_dir=str(data), kafka_version=version)
        config.write_text(render_properties(props))
        format_storage(resolve_distribution(version), DEFAULT_JVM_OPTIONS, cluster_id, {"controller": config},
                       tmp_path / version)
        assert f"cluster.id={cluster_id}" in (data / "meta.properties").read_text().splitlines()

"""KRaft mode on real clusters: the kraft suite's steps checked against the KRaft controller
model, and the metadata log decoder against Kafka's own.

On the newest Kafka line (4.4.0: eligible leader replicas on, ``oracle_elr`` judged; KRaft 3.9.2
runs in the test command through the migration test, tests/integration/test_migration.py), one
3-controller, 3-broker KRaft cluster (module scope: the shape the kraft scenarios need):

1. Three kraft scenarios (a leader kill, the quorum leader cut from the other voters and healed,
   the quorum leader killed) through the ordinary runner: every check passes against the KRaft
   model, partition epochs included, broker metadata agrees with the metadata log's view, and one
   voter leads at every step; the stored inputs re-check to the same verdicts.
2. Over the metadata log those steps wrote (topic creations, fences, re-registrations, unfences
   and ISR changes), every PartitionChangeRecord, PartitionRecord and broker registration (change)
   this project decodes from the active controller's segment is what Kafka's ``DumpLogSegments
   --cluster-metadata-decoder`` prints for the same offsets. One test rather than two: a second
   would spend about 15 s making the faults the first one makes anyway.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.distribution import KafkaDistribution, java_executable, resolve_distribution
from kafka_chaos.harness.kraft.records import NO_LEADER_CHANGE, BrokerRegistrationChanged, PartitionChanged, PartitionCreated, RegisterBroker, read_batches
from kafka_chaos.harness.java_clients import tools_classpath
from kafka_chaos.harness.local.kraft import LocalKraftCluster
from kafka_chaos.oracle.release import Release

PAYLOAD = re.compile(r"\| offset: (\d+) .*? payload: (\{.*\})\s*$")
RELEASE = "4.4.0"
# 3 voters and 3 brokers: what the kraft scenarios below need (kraft_catalogue.KRAFT_QUORUM).
CONFIG = ClusterConfig(brokers=3, mode="kraft", controllers=3)


class SharedKraftCluster(LocalKraftCluster):
    """Started and destroyed by the module's fixture: a run's cluster pool enters it (it is
    started) and leaves it (ClusterPool.release) without either."""

    def __enter__(self) -> SharedKraftCluster:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedKraftCluster]:
    shared = SharedKraftCluster(CONFIG, resolve_distribution(RELEASE), run_dir=tmp_path_factory.mktemp("kraft") / "cluster")
    shared.start()
    try:
        yield shared
    finally:
        shared.destroy()


def dump_log_segment(distribution: KafkaDistribution, segment: Path) -> dict[int, dict]:
    """Offset -> the JSON payload Kafka's own decoder prints for each data record. From 4.3.0 the
    tool is ``org.apache.kafka.tools.DumpLogSegments`` in the kafka-tools artifact (4.2's
    core still has the Scala ``kafka.tools.DumpLogSegments``)."""
    moved = Release.parse(distribution.version).at_least(4, 3)
    classpath = tools_classpath(distribution) if moved else distribution.classpath
    main = "org.apache.kafka.tools.DumpLogSegments" if moved else "kafka.tools.DumpLogSegments"
    done = subprocess.run([java_executable(), "-cp", classpath, main,
                           "--cluster-metadata-decoder", "--files", str(segment)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = {}
    for line in done.stdout.splitlines():
        m = PAYLOAD.search(line)
        if m and m.group(2).startswith('{"type"'):
            out[int(m.group(1))] = json.loads(m.group(2))
    return out


def check_the_decoder_against_kafkas(cluster: SharedKraftCluster) -> int:
    """Every PartitionChangeRecord, PartitionRecord and broker registration (change) this project
    decodes from the active controller's segment is what Kafka's ``DumpLogSegments
    --cluster-metadata-decoder`` prints for the same offset; returns how many were compared."""
    with cluster.observer(topics=[]) as observer:
        leader = observer.wait_until(lambda s: s.controller is not None, timeout=30,
                                     description="a quorum leader").controller
    segment = next((cluster.metadata_log_dirs()[cluster.controller_ids.index(leader)]
                    / "__cluster_metadata-0").glob("*.log"))
    ours = {e.offset: e.record for e in read_batches(segment.read_bytes()).entries}
    kafkas = dump_log_segment(cluster.distribution, segment)
    compared: dict[type, int] = {}
    for offset, record in ours.items():
        payload = kafkas.get(offset)
        if isinstance(record, (PartitionChanged, PartitionCreated, RegisterBroker, BrokerRegistrationChanged)):
            assert payload is not None, f"offset {offset}: Kafka printed no record"
            data = payload["data"]
            compared[type(record)] = compared.get(type(record), 0) + 1
        if isinstance(record, PartitionChanged):
            assert payload["type"] == "PARTITION_CHANGE_RECORD"
            assert (data["partitionId"], data.get("isr"), data.get("leader", NO_LEADER_CHANGE)) == (
                record.partition, None if record.isr is None else list(record.isr), record.leader), offset
        elif isinstance(record, PartitionCreated):
            assert payload["type"] == "PARTITION_RECORD"
            assert (data["replicas"], data["isr"], data["leader"], data["leaderEpoch"], data["partitionEpoch"]) == (
                list(record.replicas), list(record.isr), record.leader, record.leader_epoch, record.partition_epoch)
        elif isinstance(record, RegisterBroker):
            assert (payload["type"], data["brokerId"], data["brokerEpoch"], data["fenced"]) == (
                "REGISTER_BROKER_RECORD", record.broker_id, record.epoch, record.fenced)
        elif isinstance(record, BrokerRegistrationChanged):
            assert (payload["type"], data["brokerId"], data.get("fenced", 0), data.get("inControlledShutdown", 0)) == (
                "BROKER_REGISTRATION_CHANGE_RECORD", record.broker_id, record.fenced, record.in_controlled_shutdown)
    # the topics, the kill and the restart wrote each kind
    assert set(compared) == {PartitionChanged, PartitionCreated, RegisterBroker, BrokerRegistrationChanged}, compared
    return sum(compared.values())


def test_kraft_steps_pass_against_the_kraft_model_and_the_decoder_reads_what_kafkas_reads(
        tmp_path: Path, cluster: SharedKraftCluster) -> None:
    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.results.verdicts import verdict_changes
    from kafka_chaos.scenarios.checks.registry import check_history, to_records
    from kafka_chaos.scenarios.history.observations import HISTORY_FILE, HistoryProblem, read_history
    from kafka_chaos.records.writer import read_records
    from kafka_chaos.scenarios.plans import catalogue

    results = tmp_path / "run"
    names = ["leader_hard_kill_kraft", "quorum_leader_cut", "quorum_leader_kill"]
    # both on one 3-voter cluster (as `run --mode kraft --controllers 3` does): one start
    scenarios = [catalogue.with_mode(s, "kraft", 3) for s in catalogue.by_names(names)]
    def the_shared_cluster(backend: str, config: ClusterConfig, distribution: KafkaDistribution) -> SharedKraftCluster:
        assert (backend, config, distribution.version) == ("local", CONFIG, RELEASE), (backend, config)
        return cluster

    rc = run_scenarios(scenarios, seed=30, results_dir=results, report=False, open_cluster=the_shared_cluster,
                       kafka_version=RELEASE)
    records = read_records(results).records
    failed = [(r.scenario, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    epochs = [r for r in records if r.check == "oracle_partition_epoch"]
    assert epochs and any(r.expected["rule"] == "exact" and r.expected["predicted"] > r.expected["before"] >= 0
                          for r in epochs)
    assert {r.scenario for r in records if r.check == "single_controller"} == set(names)
    # every voter asked at every step: one leader, also while the quorum_leader_cut held (KAFKA-15489)
    assert {r.scenario for r in records if r.check == "one_quorum_leader" and r.passed} == set(names)
    # the stored inputs (mode, partition epochs) re-check to the same verdicts
    observations = [o for o in read_history(results / HISTORY_FILE) if not isinstance(o, HistoryProblem)]
    again = [rec for obs, rs in check_history(observations) for rec in to_records(obs, rs)]
    assert again and not verdict_changes(records, again)
    assert check_the_decoder_against_kafkas(cluster) >= 12


CANCEL_SCHEDULE = Path(__file__).parent / "schedules" / "kraft_reassignment_cancelled.json"


@pytest.mark.nightly
@pytest.mark.parametrize("release", ["3.9.2", "3.6.2"])
def test_a_cancelled_reassignment_is_reverted_as_the_kraft_model_says(tmp_path: Path, release: str) -> None:
    """A matrix cell, ``nightly`` (its own 1-controller cluster, about 20 s per release): two
    reassignments stalled on a fenced broker, cancelled with a null target
    (``cancelPartitionReassignment``): each reverted in one record -- replicas minus the adding
    one, in the reassignment's order, so t-1's [2, 1] comes back as [1, 2] -- and a second
    cancellation refused (NO_REASSIGNMENT_IN_PROGRESS), every step judged with exact epochs."""
    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.records.writer import read_records
    from kafka_chaos.scenarios.plans.schedule import load

    schedule = load(CANCEL_SCHEDULE)
    results = tmp_path / "run"
    rc = run_scenarios([schedule.scenario()], seed=5, results_dir=results, report=False, kafka_version=release,
                       sources={schedule.name: str(CANCEL_SCHEDULE)})
    records = read_records(results).records
    failed = [(r.fault, r.check, r.detail) for r in records if r.kind == "check" and r.passed is not True]
    assert rc == 0 and not failed, failed
    replicas = [(r.partition, r.observed) for r in records if r.check == "oracle_replicas" and r.fault == "reassignment"
                and r.topic.endswith("-t")]
    # stalled ([3, 1] ++ removing [2]), reverted, and left alone by the refused cancellation
    assert replicas == [(0, [3, 1, 2]), (1, [3, 1, 2]), (0, [1, 2]), (1, [1, 2]), (0, [1, 2]), (1, [1, 2])], replicas
    exact = [r for r in records if r.check in ("oracle_epoch", "oracle_partition_epoch") and r.fault == "reassignment"]
    assert exact and all(r.expected["rule"] == "exact" for r in exact)

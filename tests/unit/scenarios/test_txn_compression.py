"""The transactional workload's batch codec, a schedule's ``workload.compression`` (KAFKA-15653
needs compressed transactional produces): validated in one line, carried from the file to the
scenario and back, and handed to both implementations' producers as ``compression.type``."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.model.codecs import COMPRESSIONS, compression_problem
from kafka_chaos.scenarios.checks.txn_availability import TRANSPARENT_FAULTS
from kafka_chaos.scenarios.plans import corpus
from kafka_chaos.scenarios.plans.schedule import from_scenario, schedule_from_json, schedule_to_json
from kafka_chaos.scenarios.plans.transactional import with_transactions

BASE = {"schedule_version": 1, "name": "compressed",
        "cluster": {"brokers": [1, 2, 3]},
        "topics": [{"name": "t", "assignment": {"0": [1, 2, 3], "1": [2, 3, 1]}}],
        "steps": [{"fault": "preferred_election", "options": {"topic": "t", "via": "admin"}}]}


@pytest.mark.parametrize("value, problem", [
    ("none", None), ("gzip", None), ("snappy", None), ("lz4", None), ("zstd", None),
    ("ZSTD", "must be one of none, gzip, snappy, lz4, zstd, not 'ZSTD'"),  # Kafka's names are lower case
    ("brotli", "not 'brotli'"),
    ("producer", "not 'producer'"),  # a topic's compression.type, not a producer's
    ("", "not ''"), (None, "not None"), (1, "not 1"), (True, "not True"), (["zstd"], "not ['zstd']"),
])
def test_compression_values(value: object, problem: str | None) -> None:
    found = compression_problem(value)
    assert found == problem if problem is None else (found is not None and problem in found)


@pytest.mark.parametrize("workload, compression", [
    ({"transactions": True}, "none"),  # the default
    ({"transactions": True, "compression": "none"}, "none"),
    ({"transactions": True, "compression": "gzip"}, "gzip"),
    ({"transactions": True, "compression": "snappy"}, "snappy"),
    ({"transactions": True, "compression": "lz4"}, "lz4"),
    ({"transactions": True, "compression": "zstd", "client": "java"}, "zstd"),
])
def test_a_schedule_carries_it_to_the_scenario_and_back(workload: dict[str, object], compression: str) -> None:
    s = schedule_from_json({**BASE, "workload": workload})
    assert s.txn_compression == compression and s.scenario().txn_compression == compression
    exported = schedule_to_json(s)
    assert exported.get("workload", {}).get("compression") == (None if compression == "none" else compression)
    again = schedule_from_json(exported)
    assert again.txn_compression == compression and again.topics == s.topics and again.txn_client == s.txn_client
    assert from_scenario(s.scenario()).txn_compression == compression
    assert with_transactions(s.scenario()).txn_compression == compression  # run --transactions keeps it


@pytest.mark.parametrize("compression, message", [
    ("brotli", "schedule.workload.compression: must be one of none, gzip, snappy, lz4, zstd, not 'brotli'"),
    (3, "schedule.workload.compression: must be one of none, gzip, snappy, lz4, zstd, not 3"),
    ("lz4\nzstd", "not 'lz4\\nzstd'"),  # one line whatever the value holds
])
def test_a_bad_codec_is_one_line_naming_the_field(compression: object, message: str) -> None:
    with pytest.raises(UsageError) as exc:
        schedule_from_json({**BASE, "workload": {"transactions": True, "compression": compression}})
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_the_cli_refuses_a_bad_codec_in_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**BASE, "workload": {"transactions": True, "compression": "brotli"}}))
    assert main(["schedule", "check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "workload.compression: must be one of none, gzip, snappy, lz4, zstd, not 'brotli'" in err
    assert err.count("\n") == 1
    assert main(["run", "--schedule", str(bad), "--no-report", "--results", str(tmp_path / "r")]) == 2


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_librdkafka_producers_get_it_as_compression_type(compression: str) -> None:
    from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload, _TxnClient

    w = TxnWorkload("127.0.0.1:1", "in", [0], "out", [0], seed="1", client_id="unit", compression=compression)
    assert {c.config["compression.type"] for c in [*w.clients, w.copier]} == {compression}  # no client made yet
    assert _TxnClient("127.0.0.1:1", "x", "unit", threading.Event()).config["compression.type"] == "none"


def test_the_workloads_refuse_a_bad_codec() -> None:
    from kafka_chaos.scenarios.clients.java_txn_workload import JavaTxnWorkload
    from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload, TxnWorkloadError

    with pytest.raises(TxnWorkloadError, match="compression must be one of"):
        TxnWorkload("127.0.0.1:1", "in", [0], "out", [0], seed="1", client_id="unit", compression="brotli")
    with pytest.raises(TxnWorkloadError, match="compression must be one of"):
        JavaTxnWorkload("127.0.0.1:1", "in", [0], "out", [0], classpath="", log_dir=Path("/nonexistent"),
                        client_id="unit", compression="brotli")


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_the_java_producer_gets_it_in_its_producer_config(compression: str, tmp_path: Path) -> None:
    from kafka_chaos.scenarios.clients.java_txn_workload import JavaTxnWorkload

    JavaTxnWorkload("127.0.0.1:1", "in", [0], "out", [0], classpath="", log_dir=tmp_path, client_id="unit",
                    compression=compression)  # writes its files, starts nothing
    props = dict(line.split("=", 1) for line in (tmp_path / "java-producer.properties").read_text().splitlines())
    assert props["compression.type"] == compression and props["enable.idempotence"] == "true"


def test_the_kafka_15653_entry_compresses_its_transactions() -> None:
    entry = {s.name: s for s in corpus.entries()}["kafka_15653_compressed_txn_produce_decompressed_with_another_threads_buffers"]
    assert entry.txn_compression == "zstd" and entry.txn_producers > 2 and entry.known_bug is not None
    # passed on 3.9.2: 3.6.1 has the fix but also KAFKA-17507, which this schedule meets 1 run in 5
    assert (entry.known_bug.affected, entry.known_bug.fixed) == ("3.6.0", "3.9.2")
    assert entry.known_bug.caught_by == "txn_transparent_operation"
    assert {step.fault for step in entry.steps} <= TRANSPARENT_FAULTS  # planned operations, judged with every broker up
    on_both = [sc for sc in corpus.scenarios() if sc.name.startswith(entry.name)]
    assert [sc.needs.kafka_version for sc in on_both] == ["3.6.0", "3.9.2"]
    assert {sc.txn_compression for sc in on_both} == {"zstd"}


# --- how many transactional producers (workload.producers) -----------------------------------------

@pytest.mark.parametrize("workload, producers, error", [
    ({"transactions": True}, 2, None),  # the default
    ({"transactions": True, "producers": 1}, 1, None),
    ({"transactions": True, "producers": 8}, 8, None),
    ({"transactions": True, "producers": 16}, 16, None),
    ({"transactions": True, "producers": 0}, None, "workload.producers: must be a whole number from 1 to 16, not 0"),
    ({"transactions": True, "producers": 17}, None, "not 17"),
    ({"transactions": True, "producers": "8"}, None, "not '8'"),
    ({"transactions": True, "producers": True}, None, "not True"),
    ({"transactions": True, "producers": 2.5}, None, "not 2.5"),
    ({"transactions": True, "producers": 4, "client": "java"}, None,
     "workload.producers: is the librdkafka workload's: the java clients run one producer"),
])
def test_producers(workload: dict[str, object], producers: int | None, error: str | None) -> None:
    data = {**BASE, "workload": workload}
    if error is not None:
        with pytest.raises(UsageError) as exc:
            schedule_from_json(data)
        assert error in str(exc.value) and "\n" not in str(exc.value)
        return
    s = schedule_from_json(data)
    assert s.txn_producers == producers and s.scenario().txn_producers == producers
    exported = schedule_to_json(s)
    assert exported.get("workload", {}).get("producers") == (None if producers == 2 else producers)
    assert schedule_from_json(exported).txn_producers == producers
    assert from_scenario(s.scenario()).txn_producers == producers


def test_the_workload_names_every_producer_by_role() -> None:
    from kafka_chaos.scenarios.clients.txn_workload import TxnWorkload

    w = TxnWorkload("127.0.0.1:1", "in", [0], "out", [0], seed="1", client_id="unit", producers=8)
    assert sorted(w.transactional_ids) == sorted([f"p{i}" for i in range(8)] + ["copier"])  # coordinator_of roles

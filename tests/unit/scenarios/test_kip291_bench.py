"""The pure parts of `kafka-chaos bench kip291` (benches.kip291): one iteration's
record from a failover, request-log entries and load samples; the table; the CLI's refusals."""

from __future__ import annotations

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.benches import kip291 as kb
from kafka_chaos.scenarios.history.controller_log import LogEvent
from kafka_chaos.benches.failover import Iteration
from kafka_chaos.benches.produce_load import LoadSample, rate
from kafka_chaos.benches.request_log import RequestEntry

FAULT = 1000.0


def entry(broker: int, at: float, api: str, queue: float, total: float, client: str = "1",
          listener: str = "PLAINTEXT") -> RequestEntry:
    return RequestEntry(broker, at, api, 0, client, listener, total, queue, total - queue, 0.0, 0.0, 0.0)


def iteration(control_plane: bool, laq: float) -> kb.Kip291Iteration:
    """Broker 3 (leading t-0) killed; controller 1 sends LeaderAndIsr to broker 2 at +6 s and
    UpdateMetadata to 1 and 2; broker 2 handles the LeaderAndIsr after ``laq`` ms in its queue."""
    sent = FAULT + 6.0
    events = (LogEvent(FAULT + 5.9, "broker_change", 1, brokers=(3,)),
              LogEvent(FAULT + 5.95, "partition_changed", 1, topic="t", partition=0, leader=2, epoch=1),
              LogEvent(sent, "leader_and_isr", 1, brokers=(2,), count=1),
              LogEvent(sent + 0.001, "update_metadata", 1, brokers=(1, 2), count=1),
              LogEvent(sent + laq / 1000 + 0.002, "leader_started", 2, topic="t", partition=0, epoch=1))
    failover = Iteration("hard_kill", 3, 1, FAULT, {("t", 0): 3}, FAULT + 5.8, sent + 0.5, events)
    listener = "CONTROL_PLANE" if control_plane else "PLAINTEXT"
    requests = (entry(1, FAULT - 5.0, "Produce", 40.0, 400.0, client="load-1"),
                entry(2, FAULT - 4.0, "Produce", 60.0, 500.0, client="load-2"),
                entry(2, sent + (laq + 3) / 1000, "LeaderAndIsr", laq, laq + 3, listener=listener),
                entry(1, sent + 0.010, "UpdateMetadata", 1.0, 2.0, listener=listener),
                entry(2, sent + (laq + 8) / 1000, "UpdateMetadata", 2.0, 4.0, listener=listener))
    return kb.Kip291Iteration(control_plane, failover, requests,
                              (LoadSample(FAULT - 10.0, 0, 0, 0), LoadSample(FAULT, 20_000, 320_000_000, 0)),
                              LoadSample(FAULT + 10.0, 30_000, 480_000_000, 2))


def record(control_plane: bool, laq: float, index: int = 0, backend: str = "local") -> object:
    return kb.iteration_record(iteration(control_plane, laq), run_id="r", partitions=60, index=index,
                               started_at=FAULT - 10, finished_at=FAULT + 10, settings={}, kafka_version="3.9.2",
                               backend=backend)


def test_the_record_holds_each_controller_request_with_its_send() -> None:
    r = record(False, 250.0)
    obs = r.observed  # type: ignore[attr-defined]
    assert obs["configuration"] == "without" and obs["controller"] == 1
    kinds = [(q["kind"], q["broker"], q["listener"], q["queue_ms"]) for q in obs["requests"]]
    assert kinds == [("UpdateMetadata", 1, "PLAINTEXT", 1.0), ("LeaderAndIsr", 2, "PLAINTEXT", 250.0),
                     ("UpdateMetadata", 2, "PLAINTEXT", 2.0)]
    laisr = obs["requests"][1]
    assert laisr["sent_to_done_ms"] == pytest.approx(253.0, abs=1.0)
    # The load the controller's requests met: Produce before the fault, the client's rate.
    assert obs["produce_requests_before"]["queue_ms"]["max"] == 60.0
    assert obs["load_before"]["records_per_s"] == 2000.0 and obs["load_during"]["failed"] == 2.0
    assert r.latency_ms["metadata"] == pytest.approx(6500.0)  # type: ignore[attr-defined,index]


def test_summary_rows_per_configuration_kind_and_figure() -> None:
    records = [record(False, q, i) for i, q in enumerate((200.0, 300.0, 400.0))] + \
              [record(True, q, i) for i, q in enumerate((1.0, 2.0, 3.0))]
    rows = {(r.configuration, r.what): r.spread for r in kb.summarise(records)}  # type: ignore[arg-type]
    without, with_ = rows[("without", "LeaderAndIsr queue_ms")], rows[("with", "LeaderAndIsr queue_ms")]
    assert without is not None and (without.n, without.median, without.max) == (3, 300.0, 400.0)
    assert with_ is not None and with_.median == 2.0
    assert rows[("without", "UpdateMetadata queue_ms")].n == 6  # type: ignore[union-attr]
    assert rows[("with", "load records/s")].median == 2000.0  # type: ignore[union-attr]
    text = kb.table(kb.summarise(records))  # type: ignore[arg-type]
    assert "LeaderAndIsr queue_ms" in text and text.index("without") < text.index("with ")


def test_runs_on_either_launcher_are_summarised_apart() -> None:
    records = [record(False, 200.0), record(False, 2.0, backend="containers")]
    assert records[1].backend == "containers"  # type: ignore[attr-defined]
    rows = {(r.fault, r.what): r.spread for r in kb.summarise(records)}  # type: ignore[arg-type]
    assert rows[("hard_kill", "LeaderAndIsr queue_ms")].median == 200.0  # type: ignore[union-attr]
    assert rows[("hard_kill containers", "LeaderAndIsr queue_ms")].median == 2.0  # type: ignore[union-attr]


def test_rate_over_a_window() -> None:
    assert rate(LoadSample(0.0, 0, 0, 0), LoadSample(2.0, 100, 4_000_000, 1)) == {
        "records_per_s": 50.0, "mb_per_s": 2.0, "failed": 1.0, "seconds": 2.0}


@pytest.mark.parametrize("argv, message", [
    (["--faults", "controller_kill"], "--faults: unknown controller_kill"),
    (["--configurations", "maybe"], "--configurations: unknown maybe"),
    (["--repeat", "0"], "--repeat must be between"),
    (["--producers", "0"], "--producers must be between"),
    (["--warmup", "-1"], "--warmup must be between"),
    (["--backend", "podman"], "unknown backend 'podman'"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "kip291", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bench_settings_are_broker_properties_kafka_knows() -> None:
    from kafka_chaos.harness.config import ClusterConfig

    ClusterConfig(brokers=3, cluster_overrides=kb.bench_settings(), control_plane_listener=True)

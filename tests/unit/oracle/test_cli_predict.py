"""`kafka-chaos predict` end to end: through cli.main.main and as a real process (exit codes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from tests.unit.oracle.test_jsonio import ISSUE_EXAMPLE

REPO = Path(__file__).resolve().parents[3]


def test_predict_file(tmp_path, capsys):
    request = tmp_path / "request.json"
    request.write_text(json.dumps(ISSUE_EXAMPLE))
    assert main(["predict", str(request)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["topics"]["orders"]["partitions"]["0"]["leader"] == 3
    assert out["outcomes"][0]["outcome"] == "elected"


def test_predict_steps_and_compact(tmp_path, capsys):
    request = tmp_path / "request.json"
    request.write_text(json.dumps(ISSUE_EXAMPLE))
    assert main(["predict", "--steps", "--compact", str(request)]) == 0
    text = capsys.readouterr().out
    assert text.count("\n") == 1
    out = json.loads(text)
    assert len(out["steps"]) == len(ISSUE_EXAMPLE["events"])
    assert out["steps"][0]["topics"]["orders"]["partitions"]["0"]["leader"] == 2


@pytest.mark.parametrize(
    "payload, field",
    [
        ("{not json", "input"),
        (json.dumps({"brokers": [1], "events": [{"type": "reboot"}]}), "events.0.type"),
        (json.dumps({"brokers": [1], "events": [{"type": "broker_failure", "brokers": [5]}]}), "events.0.brokers.0"),
        (json.dumps({"brokers": [1], "events": [{"type": "preferred_election",
                                                 "partitions": [{"topic": "x", "partition": 0}]}]}),
         "events.0.partitions.0.topic"),
        (json.dumps({"brokers": [1], "topics": {"t": {"partitions": {"0": {"replicas": [1, 1]}}}}}),
         "topics.t.partitions.0.replicas"),
        (json.dumps({"brokers": [1], "topics": {"t": {"partitions": {"0": {"replicas": [1], "leader": 2, "isr": [1]}}}}}),
         "topics.t.partitions.0.leader"),
        (json.dumps({"brokers": [1], "topics": {"t": {"partitions": {"0": {"replicas": [1], "leader": 1, "isr": [1, 2]}}}}}),
         "topics.t.partitions.0.isr"),
    ],
)
def test_bad_input_exits_2_with_one_line(payload, field, capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(payload))
    assert main(["predict", "-"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"kafka-chaos: error: {field}: ")
    assert captured.err.count("\n") == 1


def test_missing_file(tmp_path, capsys):
    assert main(["predict", str(tmp_path / "absent.json")]) == 2
    assert capsys.readouterr().err.startswith("kafka-chaos: error: FILE: cannot read")


def _run(payload: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafka_chaos.cli.main", "predict", *args, "-"],
        input=payload, capture_output=True, text=True, cwd=REPO, timeout=60,
    )


def test_subprocess_success_and_exit_codes():
    ok = _run(json.dumps(ISSUE_EXAMPLE))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["brokers"] == [1, 3]
    for payload in ("[", json.dumps({"brokers": [1], "events": [{"type": "nope"}]})):
        bad = _run(payload)
        assert bad.returncode == 2
        assert "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


def test_predict_lists_the_alternatives_beside_the_main_prediction(capsys, monkeypatch):
    import io

    request = {"brokers": [4, 5, 6], "controller": 6,
               "topics": {"t": {"partitions": {"0": {"replicas": [4, 5], "leader": 4, "isr": [4, 5], "leader_epoch": 3}}}},
               "events": [{"type": "broker_failure", "brokers": [4, 5]}]}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(request)))
    assert main(["predict", "--steps", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    alternatives = out["alternatives"]
    assert [a["label"] for a in alternatives] == ["one BrokerChange {4,5}", "BrokerChange {4} then {5}"]
    assert [a["topics"]["t"]["partitions"]["0"]["isr"] for a in alternatives] == [[4], [5]]
    main_alt = alternatives[0]
    assert {k: main_alt[k] for k in ("brokers", "controller", "config", "topics", "outcomes", "steps")} == {
        k: out[k] for k in ("brokers", "controller", "config", "topics", "outcomes", "steps")}
    assert all(len(a["steps"]) == 1 for a in alternatives)
    # an answer (alternatives included) can be fed back as a request
    out.pop("events", None)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(out)))
    assert main(["predict", "-"]) == 0

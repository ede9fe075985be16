"""The pure parts of the report on a running Spark: ``sc://`` URLs, the server's state file and
command line, and the one-line answers to bad input (no JVM, no server)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from kafka_chaos.cli.main import main
from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.results import connect_server, spark_connect
from kafka_chaos.results.connect_server import STATE_FILE, ServerState, parse_confs, read_state, server_command
from kafka_chaos.results.spark_connect import ConnectUrl, is_connect_url, parse_connect_url


@pytest.mark.parametrize("text, expected", [
    ("sc://localhost", ConnectUrl("localhost", 15002)),
    ("sc://127.0.0.1:15099", ConnectUrl("127.0.0.1", 15099)),
    ("sc://spark.example.org:443/", ConnectUrl("spark.example.org", 443)),
    ("SC://Host:1/;use_ssl=true;token=abc", ConnectUrl("host", 1, (("use_ssl", "true"), ("token", "abc")))),
    ("sc://[::1]:15002", ConnectUrl("::1", 15002)),
])
def test_connect_urls_parse(text, expected):
    assert parse_connect_url(text) == expected


@pytest.mark.parametrize("text, reason", [
    ("sc://", "no host"),
    ("sc://:15002", "no host"),
    ("sc://host:port", "bad port"),
    ("sc://host:70000", "bad port"),
    ("sc://host:0", "port 0"),
    ("sc://host:15002/path", "unexpected path"),
    ("sc://host/;token", "not KEY=VALUE"),
    ("sc://host/;colour=blue", "unknown parameter 'colour'"),
    ("sc://host?x=1", "unexpected '?', '#' or '@'"),
    ("sc://user@host", "unexpected '?', '#' or '@'"),
    ("spark://host:7077", "not an sc:// URL"),
])
def test_malformed_connect_urls_are_one_usage_error(text, reason):
    with pytest.raises(UsageError) as raised:
        parse_connect_url(text)
    message = str(raised.value)
    assert reason in message and "\n" not in message and "expected sc://HOST[:PORT]" in message


def test_only_sc_urls_are_connect_urls():
    assert is_connect_url("sc://localhost:15002") and is_connect_url(" SC://x")
    assert not any(is_connect_url(m) for m in (None, "local[2]", "spark://127.0.0.1:7077", "yarn"))


def test_a_url_shown_in_messages_hides_its_token():
    url = ConnectUrl("h", 1, (("token", "secret"), ("user_id", "me")))
    assert url.url == "sc://h:1/;token=secret;user_id=me"
    assert str(url) == "sc://h:1/;token=***;user_id=me"
    assert ConnectUrl("::1", 15002).url == "sc://[::1]:15002"


def _state(**overrides) -> ServerState:
    values = dict(pid=4242, create_time=1.5, host="127.0.0.1", port=15002, master="local[2]", log="/x/log",
                  started_at="2026-11-26T00:00:00+00:00")
    return ServerState(**{**values, **overrides})


def test_the_state_file_round_trips(tmp_path):
    state = _state()
    (tmp_path / STATE_FILE).write_text(state.to_json())
    assert read_state(tmp_path) == state
    assert state.url == "sc://127.0.0.1:15002"
    assert read_state(tmp_path / "none") is None


@pytest.mark.parametrize("text", ["not json", "{}", json.dumps({**json.loads(_state().to_json()), "port": "x"}),
                                  json.dumps({**json.loads(_state().to_json()), "pid": 0})])
def test_a_broken_state_file_is_one_line(tmp_path, text):
    (tmp_path / STATE_FILE).write_text(text)
    with pytest.raises(HarnessError) as raised:
        read_state(tmp_path)
    assert str(tmp_path / STATE_FILE) in str(raised.value) and "\n" not in str(raised.value)


def test_a_recorded_pid_of_another_process_is_not_the_server():
    import os

    assert not connect_server.is_running(_state(pid=os.getpid(), create_time=1.0))  # same pid, other start time


def test_confs_are_spark_key_value_pairs():
    assert parse_confs(["spark.executor.memory=1g", "spark.x=a=b"]) == {"spark.executor.memory": "1g",
                                                                         "spark.x": "a=b"}
    for bad in ("spark.x", "=1", "executor.memory=1g"):
        with pytest.raises(UsageError, match="expected spark.KEY=VALUE"):
            parse_confs([bad])


def test_the_server_command_line():
    command = server_command(Path("/spark"), host="127.0.0.1", port=15099, master="spark://127.0.0.1:7077",
                             confs={"spark.sql.shuffle.partitions": "8"}, java_options=["-Da=b", "-Dc=d"])
    assert command[:3] == ["/spark/bin/spark-submit", "--class", connect_server.SERVER_CLASS]
    confs = dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--conf")
    assert confs["spark.connect.grpc.binding.port"] == "15099"
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert confs["spark.connect.grpc.port.maxRetries"] == "0"
    assert confs["spark.sql.shuffle.partitions"] == "8"  # the user's --conf wins
    assert confs["spark.driver.host"] == "127.0.0.1"  # a loopback master: executors reach the driver there
    assert command[command.index("--driver-java-options") + 1] == "-Da=b -Dc=d"
    remote = server_command(Path("/spark"), host="0.0.0.0", port=1, master="spark://spark-master:7077")
    assert "spark.driver.host=127.0.0.1" not in remote


def _one_error_line(capsys, prefix: str = "kafka-chaos: ") -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(prefix), err
    return err


def test_report_with_a_malformed_connect_url_exits_2(tmp_path, capsys):
    (tmp_path / "records.jsonl").write_text("")
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "out"), "--master", "sc://host:nope"]) == 2
    assert "--master sc://host:nope: bad port" in _one_error_line(capsys, "kafka-chaos: error:")


def test_report_with_no_server_answering_exits_1_within_the_bound(tmp_path, capsys, monkeypatch):
    import time

    monkeypatch.setattr(spark_connect, "CONNECT_TIMEOUT_S", 0.5)
    (tmp_path / "records.jsonl").write_text('{"schema_version": 1}\n')
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: connections are refused
        started = time.monotonic()
        code = main(["report", str(tmp_path), "--out", str(tmp_path / "out"), "--no-cache",
                     "--master", f"sc://127.0.0.1:{port}"])
    assert code == 1 and time.monotonic() - started < 10
    assert f"no Spark Connect server answers at sc://127.0.0.1:{port}" in _one_error_line(capsys)


def test_spark_up_on_a_taken_port_exits_1_and_starts_nothing(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["spark", "up", "--port", str(port), "--state-dir", str(tmp_path)]) == 1
    assert f"cannot serve on 127.0.0.1:{port}" in _one_error_line(capsys)
    assert not (tmp_path / STATE_FILE).exists()


def test_spark_up_bad_arguments_exit_2(tmp_path, capsys):
    assert main(["spark", "up", "--conf", "colour=blue", "--state-dir", str(tmp_path)]) == 2
    assert "--conf colour=blue" in _one_error_line(capsys, "kafka-chaos: error:")
    assert main(["spark", "up", "--port", "0", "--state-dir", str(tmp_path)]) == 2
    assert "--port 0" in _one_error_line(capsys, "kafka-chaos: error:")


def test_spark_status_and_down_without_a_server(tmp_path, capsys):
    assert main(["spark", "status", "--state-dir", str(tmp_path)]) == 1
    assert "no Spark Connect server recorded" in capsys.readouterr().out
    assert main(["spark", "down", "--state-dir", str(tmp_path)]) == 0
    (tmp_path / STATE_FILE).write_text(_state(pid=2**22 - 1).to_json())  # recorded, not running
    assert main(["spark", "status", "--state-dir", str(tmp_path)]) == 1
    assert "is not running" in capsys.readouterr().out
    assert main(["spark", "down", "--state-dir", str(tmp_path)]) == 0
    assert not (tmp_path / STATE_FILE).exists()
    (tmp_path / STATE_FILE).write_text("{")
    assert main(["spark", "status", "--state-dir", str(tmp_path)]) == 1
    assert "not a Spark Connect server state file" in _one_error_line(capsys)

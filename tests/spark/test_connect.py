"""The report on a Spark that is already running: a Spark Connect server (``kafka-chaos spark up``)
and the report of several shards' results through it (``kafka-chaos report --master sc://...``)
— the same aggregates as a local session gives. In the test command the server runs on its
default local master; outgrowing one machine for real — a Spark standalone master and two
workers on 127.0.0.1 (pip's pyspark, ``spark-class``) behind the server — is a ``nightly`` test
(docs/nightly.md). Every process is started in a session of its own and stopped at the end
(SIGTERM, then SIGKILL), on failure too; every wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_chaos.results.connect_server import STATE_FILE, spark_home
from kafka_chaos.results.report import run_report
from kafka_chaos.results.synthetic import write_synthetic_results
from kafka_chaos.records.writer import RecordWriter
from tests.spark.helpers import record

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
WORKERS = 2
START_TIMEOUT_S = 90.0  # a JVM on a busy 2-core machine
COMMAND_TIMEOUT_S = 300.0
# The summary's sections that depend on when and how the report ran, not on the records.
NOT_RESULTS = ("generated_at", "timings")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def daemon(command: list[str], log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process in its own session, its output in ``log``; its group stopped on leaving."""
    with open(log, "ab") as output:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True)
    try:
        yield process
    finally:
        for sig, timeout in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                continue


def wait_for(condition, what: str, process: subprocess.Popen[bytes], log: Path, timeout: float = START_TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what}: the process exited ({process.returncode}); log {log}:\n{log.read_text()[-3000:]}")
        try:
            value = condition()
            if value:
                return value
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {timeout:.0f} s; log {log}:\n{log.read_text()[-3000:]}")


def master_status(ui_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
        return json.load(answer)


@dataclass(frozen=True)
class Standalone:
    url: str
    work: Path  # the workers' SPARK_WORKER_DIR: app-*/<executor id>/ per executor launched


@pytest.fixture(scope="module")
def standalone(tmp_path_factory) -> Iterator[Standalone]:
    """A master and two workers (1 core, 768 MB for executors each) on loopback, once both
    registered."""
    work = tmp_path_factory.mktemp("standalone")
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_DAEMON_MEMORY": "256m", "SPARK_WORKER_DIR": str(work / "work"), "SPARK_LOG_DIR": str(work)}
    port, ui_port = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    with ExitStack() as stack:
        master = stack.enter_context(daemon(
            [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
            work / "master.log", env))
        wait_for(lambda: master_status(ui_port), "the master's status page", master, work / "master.log")
        workers = [stack.enter_context(daemon(
            [spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--cores", "1", "--memory", "768m",
             "--webui-port", str(free_port()), url], work / f"worker-{n}.log", env)) for n in range(WORKERS)]
        wait_for(lambda: master_status(ui_port)["aliveworkers"] == WORKERS, f"{WORKERS} workers registered",
                 workers[0], work / "worker-0.log")
        yield Standalone(url, work / "work")


def kafka_chaos(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=COMMAND_TIMEOUT_S)


@contextmanager
def connect_server(work: Path, *master_and_confs: str) -> Iterator[str]:
    """``kafka-chaos spark up`` (its state in ``work``), its URL; ``spark down`` at the end."""
    state_dir = work / "state"
    up = kafka_chaos("spark", "up", *master_and_confs, "--port", str(free_port()), "--state-dir", str(state_dir),
                     "--driver-memory", "1g", cwd=work)
    try:
        assert up.returncode == 0, up.stderr
        url = up.stdout.strip()
        assert url.startswith("sc://127.0.0.1:")
        yield url
    finally:
        down = kafka_chaos("spark", "down", "--state-dir", str(state_dir), cwd=work)
        assert down.returncode == 0, down.stderr
        assert not (state_dir / STATE_FILE).exists()


@pytest.fixture(scope="module")
def local_connect_url(tmp_path_factory) -> Iterator[str]:
    """A Connect server on its default (local) master, as ``kafka-chaos spark up`` starts one."""
    with connect_server(tmp_path_factory.mktemp("connect-local")) as url:
        yield url


@pytest.fixture(scope="module")
def connect_url(standalone, tmp_path_factory) -> Iterator[str]:
    """A Connect server on the standalone master."""
    with connect_server(tmp_path_factory.mktemp("connect"), "--master", standalone.url,
                        "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2") as url:
        yield url


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    """Three shards' results dirs, as `run --shard I/3` on three machines would leave them."""
    root = tmp_path_factory.mktemp("shards")
    for shard in range(3):
        write_synthetic_results(root / f"run-{shard}", 1_200, seed=20 + shard, records_per_run=400,
                                run_prefix=f"shard{shard}")
    with RecordWriter(root / "run-1") as writer:
        writer.write(record(run_id="manual", passed=False, detail="leader 3, expected 2",
                            expected={"leader": 2, "isr": [2, 3]}, observed={"leader": 3, "isr": [3]}))
    with open(root / "run-2" / "records.jsonl", "a", encoding="utf-8") as out:
        out.write('{"schema_version": 1, "run_id": "cut')  # a shard killed mid-write
        out.write("\n" + json.dumps({"schema_version": 99, "run_id": "future"}) + "\n")
    return [root / f"run-{shard}" for shard in range(3)]


def results_of(out: Path) -> dict:
    document = json.loads((out / "summary.json").read_text())
    return {key: value for key, value in document.items() if key not in NOT_RESULTS}


def report_through(connect_url: str, shards: list[Path], spark, tmp_path: Path) -> None:
    """The report through ``connect_url`` gives what a local session gives, table by table."""
    local = run_report(shards, tmp_path / "local", spark=spark, use_cache=False)
    done = kafka_chaos("report", *map(str, shards), "--out", str(tmp_path / "connect"), "--master", connect_url,
                       "--no-cache", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert results_of(tmp_path / "connect") == results_of(tmp_path / "local")
    assert local.totals["records"] == 3 * 1_200 + 1
    assert len(results_of(tmp_path / "connect")["problems"]) == 2  # the malformed and the rejected line
    import pyarrow.parquet as pq

    for table in sorted(p.name for p in (tmp_path / "local" / "tables").iterdir()):
        assert (pq.read_table(tmp_path / "connect" / "tables" / table).to_pylist()
                == pq.read_table(tmp_path / "local" / "tables" / table).to_pylist()), table


def test_a_report_through_connect_gives_the_local_aggregates(local_connect_url, shards, spark, tmp_path):
    report_through(local_connect_url, shards, spark, tmp_path)


@pytest.mark.nightly
def test_a_report_through_connect_on_a_standalone_cluster_gives_the_local_aggregates(standalone, connect_url, shards,
                                                                                      spark, tmp_path):
    report_through(connect_url, shards, spark, tmp_path)
    # The queries ran on the cluster: each worker launched an executor for the server.
    assert len(list(standalone.work.glob("app-*/*/stderr"))) == WORKERS


def test_spark_status_names_the_server(local_connect_url, tmp_path):
    # The state dir is the fixture's; status from another directory finds nothing and says so.
    done = kafka_chaos("spark", "status", "--state-dir", str(tmp_path / "elsewhere"), cwd=tmp_path)
    assert done.returncode == 1 and "no Spark Connect server recorded" in done.stdout


def test_an_up_that_fails_says_why_in_one_line_and_leaves_nothing_running(tmp_path):
    import psutil

    before = {p.pid for p in psutil.process_iter()}
    done = kafka_chaos("spark", "up", "--master", "nonsense://x", "--port", str(free_port()),
                       "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "exited during start-up" in done.stderr, done.stderr
    assert not (tmp_path / "state" / STATE_FILE).exists()
    time.sleep(0.5)
    leaked = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
              and "SparkConnectServer" in " ".join(p.info["cmdline"] or [])]
    assert not leaked

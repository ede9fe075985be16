"""Link proxies on a real cluster, through the CLI (about 45 s of cluster time): a `cluster up
--link-proxies` cluster whose brokers reach ZooKeeper through a detached proxy process; `cluster
delay` past the session timeout makes ZooKeeper expire the broker's session (its registration
vanishes) and `cluster heal` brings it back; `cluster cut --from zookeeper` does the same without
root; `cluster down` leaves no proxy behind.  The in-process proxy is what
benchmarks/zookeeper_delay_bench.py and the network suite's delay scenarios use."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.local.cluster import STATE_FILE
from kafka_chaos.harness.local.network import our_chains, redirect_problem
from kafka_chaos.harness.processes import processes_mentioning
from kafka_chaos.harness.zkclient import close_bounded, connect


def kafka_chaos(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", *args], capture_output=True, text=True,
                          timeout=240, cwd=Path(__file__).parents[2])


def test_delay_and_cut_through_the_proxy_expire_the_session_and_heal_restores_it(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    sd = ["--state-dir", str(state_dir)]
    try:
        up = kafka_chaos("cluster", "up", "--brokers", "1", "--link-proxies", *sd)
        assert up.returncode == 0, up.stderr
        state = json.loads((state_dir / STATE_FILE).read_text())
        proxy_pid = state["link_proxy"]["pid"]
        assert os.path.exists(f"/proc/{proxy_pid}")  # outlived the command
        properties = (state_dir / "broker-1" / "server.properties").read_text()
        assert state["zookeeper"] not in properties  # the broker's zookeeper.connect is its proxy
        client = connect(state["zookeeper"], session_timeout=20, connect_timeout=20, command_deadline=20)
        try:
            def registered() -> bool:
                return client.exists("/brokers/ids/1") is not None

            for fault in (["delay", "1", "--ms", "9000"], ["cut", "1", "--from", "zookeeper"]):
                wait_until(registered, timeout=60, interval=0.2, description="broker 1 registered")
                done = kafka_chaos("cluster", *fault, *sd)
                assert done.returncode == 0, done.stderr
                wait_until(lambda: not registered(), timeout=30, interval=0.1,
                           description=f"{fault[0]}: the session expiring")
                assert kafka_chaos("cluster", "heal", *sd).returncode == 0
            wait_until(registered, timeout=60, interval=0.2, description="broker 1 registered after the heal")
        finally:
            close_bounded(client, state["zookeeper"], timeout=5)
        wrong = kafka_chaos("cluster", "delay", "1", "--to", "brokers", "--ms", "5", *sd)
        assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1
        # Client links go through the detached proxy too as root (nat redirects, SO_MARK'd onward
        # connections); without root the verb says why in one line.
        clients = kafka_chaos("cluster", "delay", "1", "--to", "clients", "--ms", "5", *sd)
        if redirect_problem() is None:
            assert clients.returncode == 0, clients.stderr
            began = time.monotonic()  # a client's metadata round trip now crosses the delayed link
            AdminClient({"bootstrap.servers": state["bootstrap_servers"]}).list_topics(timeout=30)
            assert time.monotonic() - began >= 0.01
            assert kafka_chaos("cluster", "heal", *sd).returncode == 0
        else:
            assert clients.returncode == 2 and clients.stderr.count("\n") == 1
        down = kafka_chaos("cluster", "down", *sd)
        assert down.returncode == 0, down.stderr
        assert f"KCHAOS-{state['zookeeper'].rsplit(':', 1)[1]}" not in our_chains()  # nat chain too
        assert not os.path.exists(f"/proc/{proxy_pid}") or _zombie(proxy_pid)
        assert processes_mentioning(f"{state_dir}{os.sep}") == []
    finally:
        for pid in processes_mentioning(f"{state_dir}{os.sep}"):
            os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True

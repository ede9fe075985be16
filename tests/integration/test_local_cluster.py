"""The local launcher against real JVMs: a 3-broker ZooKeeper-mode cluster, broken at process
level and read back from ZooKeeper and from the brokers' metadata.

The tests share one cluster (module scope) and leave it whole for the next one; the last of
them tears it down and checks nothing of it survives.  The CLI round trip and the start-up
failure run after that, so no two multi-broker clusters of this module run at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness import metadata, processes
from kafka_chaos.harness.cluster import BrokerControl, Cluster
from kafka_chaos.harness.config import (
    KNOWN_BROKER_PROPERTIES,
    KNOWN_PROPERTIES_VERSION,
    NUM_NETWORK_THREADS,
    ClusterConfig,
    dump_broker_property_names,
    chaos_cluster_defaults,
)
from kafka_chaos.harness.distribution import resolve_distribution
from kafka_chaos.harness.local.cluster import STATE_FILE, LocalCluster, NodeStartFailed
from kafka_chaos.harness.local.network import partition_problem
from kafka_chaos.harness.nodes import zookeeper_four_letter
from kafka_chaos.harness.observer import ZkObserver, ZkSnapshot
from kafka_chaos.harness.processes import processes_mentioning
from kafka_chaos.benches.kip291 import REQUEST_LOG4J
from kafka_chaos.benches.request_log import parse_request_lines

TIMEOUT = 60.0  # generous bound for a busy shared 2-core machine; never a speed assertion


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(ClusterConfig(brokers=3), resolve_distribution()) as running:
        yield running


def observer_of(cluster: LocalCluster, *topics: str) -> ZkObserver:
    return ZkObserver(cluster.zookeeper_connect, topics=list(topics))


def leader_in_broker_metadata(cluster: LocalCluster, broker_id: int, topic: str, expected: int) -> None:
    """Bounded wait until ``broker_id``'s own metadata cache names ``expected`` as the leader."""
    def check() -> None:
        view = metadata.broker_view(cluster.endpoint(broker_id).bootstrap, [topic], timeout=5)
        assert view[(topic, 0)].leader == expected, view
    for attempt in Retrying(stop=stop_after_delay(TIMEOUT), wait=wait_fixed(0.2), reraise=True,
                            retry=retry_if_exception_type((AssertionError, KeyError, metadata.MetadataError))):
        with attempt:
            check()


def create_and_settle(cluster: LocalCluster, topic: str, replicas: tuple[int, ...]) -> ZkSnapshot:
    metadata.create_topic(cluster.bootstrap_servers, topic, {0: replicas})
    with observer_of(cluster, topic) as observer:
        return observer.wait_until(
            lambda s: s.partition(topic, 0).leader == replicas[0] and set(s.partition(topic, 0).isr) == set(replicas),
            timeout=TIMEOUT, description=f"{topic} to have leader {replicas[0]} and a full ISR")


def test_three_brokers_come_up(cluster: LocalCluster) -> None:
    assert isinstance(cluster, Cluster) and isinstance(cluster, BrokerControl)
    with observer_of(cluster) as observer:
        snapshot = observer.snapshot()
    assert sorted(snapshot.live_brokers) == [1, 2, 3]
    assert snapshot.controller in (1, 2, 3)
    for broker_id in cluster.broker_ids:
        endpoint = cluster.endpoint(broker_id)
        assert endpoint.pid is not None and cluster.broker_running(broker_id)
        assert metadata.broker_view(endpoint.bootstrap, []) == {}  # answers, no topics yet
        assert (cluster.run_dir / f"broker-{broker_id}" / "data" / "meta.properties").is_file()
    assert zookeeper_four_letter("127.0.0.1", int(cluster.zookeeper_connect.split(":")[1]), "ruok") == "imok"
    state = json.loads((cluster.run_dir / STATE_FILE).read_text())
    assert state["zookeeper"] == cluster.zookeeper_connect
    assert state["zookeeper_pid"] == cluster.zookeeper_pid
    assert [b["id"] for b in state["brokers"]] == [1, 2, 3]
    assert state["bootstrap_servers"] == cluster.bootstrap_servers
    assert cluster.broker_settings()["zookeeper.session.timeout.ms"] == "6000"
    assert set(cluster.log_files()) == {"zookeeper", "broker-1", "broker-2", "broker-3"}


@pytest.mark.nightly
def test_kill_the_leader_then_restart_it(cluster: LocalCluster) -> None:
    """A matrix cell, ``nightly`` (docs/nightly.md): the test command kills and restarts a broker
    of this launcher in tests/containers/test_cluster_contract.py[local] (registration, expiry,
    new epoch), kills a leader and judges the new one, every broker's metadata and the restarted
    broker's return in the smoke suite's leader_hard_kill (tests/integration/test_smoke_suite.py),
    and checks the state file after a restart through the CLI (test_cli_round_trip)."""
    topic = "kill-leader"
    create_and_settle(cluster, topic, (1, 2, 3))
    old_data = cluster.run_dir / "broker-1" / "data" / f"{topic}-0"
    assert old_data.is_dir()

    cluster.kill_broker(1)
    assert not cluster.broker_running(1) and cluster.broker_pid(1) is None
    with observer_of(cluster, topic) as observer:
        after = observer.wait_until(lambda s: 1 not in s.live_brokers and s.partition(topic, 0).leader in (2, 3),
                                    timeout=TIMEOUT, description="a new leader after killing broker 1")
    new_leader = after.partition(topic, 0).leader
    assert 1 not in after.partition(topic, 0).isr
    for broker_id in (2, 3):
        leader_in_broker_metadata(cluster, broker_id, topic, new_leader)

    cluster.start_broker(1)  # data survived the kill; waits for the old session to expire first
    assert old_data.is_dir()
    with observer_of(cluster, topic) as observer:
        back = observer.wait_until(lambda s: set(s.partition(topic, 0).isr) == {1, 2, 3},
                                   timeout=TIMEOUT, description="broker 1 back in the ISR")
    assert 1 in back.live_brokers
    state = json.loads((cluster.run_dir / STATE_FILE).read_text())
    assert state["brokers"][0]["pid"] == cluster.broker_pid(1)


def test_controlled_shutdown_moves_leadership_before_exit(cluster: LocalCluster) -> None:
    topic = "controlled"
    create_and_settle(cluster, topic, (2, 3, 1))
    cluster.stop_broker(2)
    assert not cluster.broker_running(2)
    with observer_of(cluster, topic) as observer:
        # No waiting: a controlled shutdown has moved the leader and left the ISR before exit.
        snapshot = observer.snapshot()
    state = snapshot.partition(topic, 0)
    assert 2 not in snapshot.live_brokers
    assert state.leader == 3 and 2 not in state.isr
    server_log = (cluster.run_dir / "broker-2" / "logs" / "server.log").read_text()
    assert "Controlled shutdown request returned successfully" in server_log

    cluster.start_broker(2)
    with observer_of(cluster, topic) as observer:
        observer.wait_until(lambda s: set(s.partition(topic, 0).isr) == {1, 2, 3},
                            timeout=TIMEOUT, description="broker 2 back in the ISR")


def test_pause_and_resume_a_broker_and_zookeeper(cluster: LocalCluster) -> None:
    pid = cluster.broker_pid(3)
    cluster.pause_broker(3)
    try:
        assert cluster.broker_paused(3) and cluster.broker_running(3)
        assert _proc_state(pid) == "T"
    finally:
        cluster.resume_broker(3)
    assert not cluster.broker_paused(3) and cluster.broker_pid(3) == pid
    metadata.broker_view(cluster.endpoint(3).bootstrap, [])  # answers again

    zk_port = int(cluster.zookeeper_connect.split(":")[1])
    cluster.pause_zookeeper()
    try:
        assert cluster.zookeeper_paused()
        with pytest.raises(OSError):  # accepted by the kernel, never answered
            zookeeper_four_letter("127.0.0.1", zk_port, "ruok", timeout=1.0)
    finally:
        cluster.resume_zookeeper()
    assert zookeeper_four_letter("127.0.0.1", zk_port, "ruok") == "imok"


def test_controls_refuse_what_cannot_be_done(cluster: LocalCluster) -> None:
    from kafka_chaos.harness.errors import HarnessError, UsageError

    with pytest.raises(UsageError, match="unknown broker id 7"):
        cluster.kill_broker(7)
    with pytest.raises(HarnessError, match="already running"):
        cluster.start_broker(1)


def test_attach_controls_the_same_processes(cluster: LocalCluster) -> None:
    attached = LocalCluster.attach(cluster.run_dir)
    assert attached.zookeeper_connect == cluster.zookeeper_connect
    assert attached.bootstrap_servers == cluster.bootstrap_servers
    assert [attached.broker_pid(b) for b in attached.broker_ids] == [cluster.broker_pid(b) for b in cluster.broker_ids]
    assert attached.any_running()
    # The pid-reuse guard: the same pid with another start time, or another command line, is not ours.
    state = json.loads((cluster.run_dir / STATE_FILE).read_text())
    broker = state["brokers"][0]
    assert broker["started_at"] is not None
    assert processes.attach("broker", broker["pid"], broker["config_file"], broker["started_at"]).alive()
    assert not processes.attach("broker", broker["pid"], broker["config_file"], broker["started_at"] - 1).alive()
    assert not processes.attach("broker", broker["pid"], "/not/its/config", broker["started_at"]).alive()


def test_teardown_leaves_nothing_behind(cluster: LocalCluster) -> None:
    run_dir = cluster.run_dir
    pids = [cluster.zookeeper_pid, *(cluster.broker_pid(b) for b in cluster.broker_ids)]
    assert len(processes_mentioning(f"{run_dir}{os.sep}")) == 4
    cluster.pause_broker(1)  # a stopped JVM must not survive teardown either
    cluster.pause_zookeeper()
    cluster.destroy()
    assert processes_mentioning(f"{run_dir}{os.sep}") == []
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)
    assert not run_dir.exists()
    cluster.destroy()  # idempotent


def kafka_chaos(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", *args], capture_output=True, text=True,
                          timeout=240, cwd=Path(__file__).parents[2])


def test_cli_round_trip(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    sd = ["--state-dir", str(state_dir)]
    bad = kafka_chaos("cluster", "up", *sd, "--set", "zookeeper.session.tmeout.ms=6000")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "did you mean" in bad.stderr
    assert not (state_dir / STATE_FILE).exists()
    try:
        up = kafka_chaos("cluster", "up", "--brokers", "2", "--control-plane-listener", *sd)
        assert up.returncode == 0, up.stderr
        state = json.loads((state_dir / STATE_FILE).read_text())
        assert f"bootstrap servers: {state['bootstrap_servers']}" in up.stdout
        planes = [f"127.0.0.1:{b['control_plane_port']}" for b in state["brokers"]]
        assert state["config"]["control_plane_listener"] and f"control plane:     {','.join(planes)} " in up.stdout
        assert os.path.exists(f"/proc/{state['zookeeper_pid']}")  # outlived the command

        again = kafka_chaos("cluster", "up", *sd)
        assert again.returncode == 2 and "already running" in again.stderr

        unknown = kafka_chaos("cluster", "kill", "9", *sd)
        assert unknown.returncode == 2 and unknown.stderr.strip() == \
            "kafka-chaos: error: unknown broker id 9: the brokers are 1, 2"

        status = kafka_chaos("cluster", "status", *sd)
        assert status.returncode == 0, status.stderr
        assert "controller: " in status.stdout and "registered" in status.stdout
        assert all(f"control plane {plane}" in status.stdout for plane in planes)
        if partition_problem() is None:  # peer cuts of such a cluster (they used to be refused)
            cut = kafka_chaos("cluster", "cut", "1", "--from", "peers", *sd)
            assert cut.returncode == 0, cut.stderr
            assert kafka_chaos("cluster", "heal", *sd).returncode == 0

        assert kafka_chaos("cluster", "kill", "2", *sd).returncode == 0
        assert _proc_state(state["brokers"][1]["pid"]) in (None, "Z")
        start = kafka_chaos("cluster", "start", "2", *sd)
        assert start.returncode == 0, start.stderr
        new_pid = json.loads((state_dir / STATE_FILE).read_text())["brokers"][1]["pid"]
        assert new_pid != state["brokers"][1]["pid"] and os.path.exists(f"/proc/{new_pid}")

        down = kafka_chaos("cluster", "down", *sd)
        assert down.returncode == 0, down.stderr
        assert not state_dir.exists()
        assert processes_mentioning(f"{state_dir}{os.sep}") == []
        nothing = kafka_chaos("cluster", "down", *sd)
        assert nothing.returncode != 0 and nothing.stderr.count("\n") == 1
    finally:
        for pid in processes_mentioning(f"{state_dir}{os.sep}"):
            os.kill(pid, signal.SIGKILL)


def test_first_broker_id_numbers_real_brokers(tmp_path: Path) -> None:
    """Broker ids first_broker_id.. are what registers, what the controls take, and what
    cluster.json (hence ``attach``) keeps.  The cluster also has KIP-291's control-plane
    listener (a few seconds more here rather than a cluster of its own): each broker registers
    its CONTROL_PLANE endpoint and the controller's LeaderAndIsr arrive on it (request log)."""
    config = ClusterConfig(brokers=2, first_broker_id=4, control_plane_listener=True)
    with LocalCluster(config, resolve_distribution(), tmp_path / "run", start_timeout=TIMEOUT,
                      log4j_extra=REQUEST_LOG4J) as cluster:
        assert cluster.broker_ids == [4, 5]
        with observer_of(cluster) as observer:
            snapshot = observer.snapshot()
        assert sorted(snapshot.live_brokers) == [4, 5] and snapshot.controller in (4, 5)
        assert metadata.broker_view(cluster.endpoint(5).bootstrap, []) == {}
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
        zk.start(timeout=TIMEOUT)
        try:
            registration = json.loads(zk.get("/brokers/ids/5")[0])
        finally:
            zk.stop()
            zk.close()
        assert [e.split(":")[0] for e in registration["endpoints"]] == ["PLAINTEXT", "CONTROL_PLANE"]
        metadata.create_topic(cluster.bootstrap_servers, "kip291", {0: [5, 4]}, timeout=TIMEOUT)
        leader_in_broker_metadata(cluster, 4, "kip291", 5)  # the election's UpdateMetadata arrived
        log_file = cluster.run_dir / "broker-5" / "logs" / "kafka-request.log"

        def controller_requests() -> list[str]:
            return [e.listener for e in parse_request_lines(log_file.read_text().splitlines(), 5)
                    if e.api == "LeaderAndIsr"]
        # The request log's line is written once the request's response is sent, and not
        # necessarily before broker 4 has the UpdateMetadata that follows it: wait for it.
        wait_until(lambda: bool(controller_requests()), timeout=TIMEOUT, interval=0.1, retry_on=(FileNotFoundError,),
                   description="broker 5's request log to show the controller's LeaderAndIsr")
        assert set(controller_requests()) == {"CONTROL_PLANE"}
        if partition_problem() is None:
            controller_cut_holds_back_its_requests(cluster, snapshot.controller)
        attached = LocalCluster.attach(cluster.run_dir)
        assert attached.broker_ids == [4, 5] and attached.config.first_broker_id == 4
        cluster.stop_broker(4)
        assert not cluster.broker_running(4) and cluster.broker_running(5)


def controller_cut_holds_back_its_requests(cluster: LocalCluster, controller: int) -> None:
    """Root only: the controller cut from its peer (``isolate(from_brokers=True)``) no longer
    reaches the peer's CONTROL_PLANE port — a topic's LeaderAndIsr, sent (the controller's
    state-change log), is not handled by the peer (its request log) while cut, and is once healed."""
    peer = next(b for b in cluster.broker_ids if b != controller)
    sent_log = cluster.run_dir / f"broker-{controller}" / "logs" / "state-change.log"
    handled_log = cluster.run_dir / f"broker-{peer}" / "logs" / "kafka-request.log"

    def sent() -> int:
        return sent_log.read_text().count(f"Sending LeaderAndIsr request to broker {peer} ")

    def handled() -> list[str]:
        return [e.listener for e in parse_request_lines(handled_log.read_text().splitlines(), peer)
                if e.api == "LeaderAndIsr"]

    sent_before, handled_before = sent(), handled()
    cluster.isolate(controller, from_zookeeper=False, from_brokers=True)
    try:  # a client link to the controller, which creates the topic in ZooKeeper itself
        metadata.create_topic(cluster.endpoint(controller).bootstrap, "cut", {0: [peer]}, timeout=TIMEOUT)
        wait_until(lambda: sent() > sent_before, timeout=TIMEOUT, interval=0.1,
                   description="the controller to send the new topic's LeaderAndIsr")
        time.sleep(2.0)  # uncut, the peer handles it within milliseconds of the send
        assert handled() == handled_before, "the LeaderAndIsr went through the cut"
    finally:
        cluster.heal_network()
    wait_until(lambda: len(handled()) > len(handled_before), timeout=TIMEOUT, interval=0.2,
               description="the held-back LeaderAndIsr to arrive once healed (TCP retransmission)")
    assert set(handled()) == {"CONTROL_PLANE"}


def test_a_broker_that_cannot_start_is_reported_with_its_log(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    config = ClusterConfig(brokers=1, cluster_overrides={NUM_NETWORK_THREADS: "not-a-number"})
    with pytest.raises(NodeStartFailed) as info:
        LocalCluster(config, resolve_distribution(), run_dir, start_timeout=TIMEOUT).start()
    message = str(info.value)
    assert message.startswith("broker-1 exited during start-up")
    assert "num.network.threads" in message  # Kafka's own complaint, from the log tail
    assert not run_dir.exists() and processes_mentioning(f"{run_dir}{os.sep}") == []


@pytest.mark.skipif(shutil.which("javac") is None, reason="listing Kafka's configs runs a Java source file (JDK)")
def test_known_broker_properties_match_the_distribution() -> None:
    """The checked-in name list (validation needs no JVM) is what this Kafka really accepts."""
    distribution = resolve_distribution()
    names = set(dump_broker_property_names(distribution))
    assert "zookeeper.session.timeout.ms" in names
    if distribution.version == KNOWN_PROPERTIES_VERSION:
        assert names == KNOWN_BROKER_PROPERTIES
    else:  # another 3.x: at least everything the project itself sets must still exist
        assert set(chaos_cluster_defaults(3)) <= names


def _proc_state(pid: int | None) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None

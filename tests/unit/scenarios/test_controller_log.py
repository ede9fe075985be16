"""The controller-log parser (scenarios.history.controller_log) and the phases it adds to the latency
breakdown, on real logs of a 3-broker local cluster (tests/unit/scenarios/data/controller_logs:
topic t, 6 partitions, RF 3; broker 1 the controller; broker 2 hard-killed at FAULTS["hard_kill"],
restarted, shut down (SIGTERM) at FAULTS["controlled_shutdown"], restarted; the controller,
broker 1, killed at FAULTS["controller_kill"]; broker 3 took over)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.scenarios.checks import latency as lat
from kafka_chaos.scenarios.history.controller_log import LogEvent, parse_line, parse_lines, partition_phases

DATA = Path(__file__).parent / "data" / "controller_logs"
FAULTS = {"hard_kill": 1795404797.484, "controlled_shutdown": 1795404812.384, "controller_kill": 1795404818.856}


@pytest.fixture(scope="module")
def events() -> list[LogEvent]:
    lines = [line for f in sorted(DATA.glob("*.log")) for line in f.read_text().splitlines()]
    return parse_lines(lines, 0.0, topics=["t"])


def test_each_line_kind_parses_with_its_fields() -> None:
    change = parse_line("[2026-11-23 03:33:23,340] INFO [Controller id=1] Newly added brokers: , deleted brokers: 2,4, "
                        "bounced brokers: , all live brokers: 1,3 (kafka.controller.KafkaController)")
    assert change == LogEvent(1795404803.34, "broker_change", 1, brokers=(2, 4))
    written = parse_line("[2026-11-23 03:33:23,385] INFO [Controller id=1 epoch=1] Changed partition my-topic-1-4 from "
                         "OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=3, leaderEpoch=1, "
                         "isrWithBrokerEpoch=List()) (state.change.logger)")
    assert written is not None and (written.kind, written.topic, written.partition, written.leader, written.epoch) == (
        "partition_changed", "my-topic-1", 4, 3, 1)
    sent = parse_line("[2026-11-23 03:33:23,386] INFO [Controller id=1 epoch=1] Sending UpdateMetadata request to "
                      "brokers HashSet(1, 3) for 2 partitions (state.change.logger)")
    assert sent is not None and (sent.kind, sent.brokers, sent.count) == ("update_metadata", (1, 3), 2)
    # the zone: a JVM two hours east of UTC logs 05:33 for 03:33 UTC
    shifted = parse_line("[2026-11-23 05:33:23,340] INFO [Controller id=1] Shutting down broker 2 (kafka.controller)",
                         utc_offset_s=7200)
    assert shifted is not None and shifted.at == 1795404803.34 and shifted.brokers == (2,)
    assert parse_line("[2026-11-23 03:33:23,341] INFO [RequestSendThread controllerId=1] Stopped (x)") is None
    # a leader starting, as 2.4.1 logs it (no topic ids; seen in its conformance run)
    old = parse_line("[2026-11-26 01:03:59,808] INFO [Partition rolling-restart-0-t-2 broker=3] rolling-restart-0-t-2 "
                     "starts at leader epoch 1 from offset 14 with high watermark 13. Previous leader epoch was 0. "
                     "(kafka.cluster.Partition)")
    assert old is not None and (old.kind, old.node, old.topic, old.partition, old.epoch) == (
        "leader_started", 3, "rolling-restart-0-t", 2, 1)
    assert parse_line("not a log line") is None


def test_the_real_logs_hold_every_kind_and_other_topics_are_left_out(events: list[LogEvent]) -> None:
    kinds = {e.kind for e in events}
    assert kinds == {"broker_change", "shutdown_request", "elected", "failover_ready", "partition_changed",
                     "isr_shrunk", "leader_and_isr", "update_metadata", "leader_started"}
    assert all(e.topic in (None, "t") for e in events)
    lines = [line for f in sorted(DATA.glob("*.log")) for line in f.read_text().splitlines()]
    assert not [e for e in parse_lines(lines, 0.0, topics=["other"]) if e.topic is not None]
    assert [e.at for e in events] == sorted(e.at for e in events)


def test_hard_kill_phases_are_ordered_after_the_session_expiry(events: list[LogEvent]) -> None:
    # t-1 was led by 2 and moved to 3 (OfflinePartition -> OnlinePartition on BrokerChange)
    phases = partition_phases(events, "t", 1, 3, FAULTS["hard_kill"])
    assert phases.controller == 1 and phases.trigger == "broker_change"
    assert phases.trigger_at is not None and phases.written_at is not None
    assert phases.sent_at is not None and phases.metadata_at is not None and phases.leader_at is not None
    # 6 s session: the controller starts ~5.9 s after the kill, then works in milliseconds
    assert 4.0 < phases.trigger_at - FAULTS["hard_kill"] < 7.5
    assert phases.trigger_at <= phases.written_at <= phases.sent_at <= phases.leader_at
    assert phases.written_at - phases.trigger_at < 1.0


def test_controlled_shutdown_starts_at_the_shutdown_request(events: list[LogEvent]) -> None:
    phases = partition_phases(events, "t", 1, 3, FAULTS["controlled_shutdown"])
    assert phases.trigger == "shutdown_request" and phases.trigger_at is not None
    assert phases.trigger_at - FAULTS["controlled_shutdown"] < 0.5  # no session to wait for
    assert phases.written_at is not None and phases.leader_at is not None


def test_controller_kill_is_processed_by_the_successor(events: list[LogEvent]) -> None:
    phases = partition_phases(events, "t", 1, 3, FAULTS["controller_kill"])
    assert phases.trigger == "elected" and phases.controller == 3


def test_a_partition_the_logs_never_mention_has_no_phases(events: list[LogEvent]) -> None:
    phases = partition_phases(events, "t", 99, 3, FAULTS["hard_kill"])
    assert phases.written_at is None and phases.sent_at is None and phases.leader_at is None
    assert phases.trigger == "broker_change"  # the event is the cluster's, not the partition's


def test_election_splits_into_queue_wait_and_processing(events: list[LogEvent]) -> None:
    fault = FAULTS["hard_kill"]
    phases = partition_phases(events, "t", 1, 3, fault)
    assert phases.trigger_at is not None and phases.written_at is not None
    detection = phases.trigger_at - 0.010  # the znode vanished 10 ms before processing began
    ms = lat.breakdown(fault, detection=detection, election=phases.written_at + 0.002, propagation=None, acks=[],
                       partition=1, controller=phases).ms()
    assert ms["controller_queue"] == 10.0
    assert ms["controller_processing"] == round((phases.written_at - phases.trigger_at) * 1000, 1)
    assert ms["detection"] is not None and ms["controller_queue"] is not None
    assert ms["controller_processing"] is not None and ms["election"] is not None
    assert abs(ms["detection"] + ms["controller_queue"] + ms["controller_processing"] - ms["election"]) < 3.0
    # a controlled shutdown is not queued behind a vanished znode: no queue phase
    cs = partition_phases(events, "t", 1, 3, FAULTS["controlled_shutdown"])
    assert lat.controller_ms(cs, FAULTS["controlled_shutdown"], None)["controller_queue"] is None
    # without logs, the breakdown keeps its five phases (old histories re-check byte for byte)
    assert set(lat.breakdown(fault, detection=None, election=None, propagation=None, acks=[], partition=1).ms()) == {
        "detection", "election", "propagation", "first_produce", "client_gap"}


# A real ZooKeeper 3.8 line (ZooKeeperServer.expire), from a local run's zookeeper log.
EXPIRY_LINE = ("[2026-11-23 01:50:14,330] INFO Expiring session 0x100005c56f60001, timeout of 6000ms exceeded "
               "(org.apache.zookeeper.server.ZooKeeperServer)")


def _expiry(at: float) -> LogEvent:
    return LogEvent(round(at, 3), "session_expired", -1)


def test_zookeepers_session_expiry_line_parses() -> None:
    expired = parse_line(EXPIRY_LINE)
    assert expired == LogEvent(1795398614.33, "session_expired", -1)
    assert parse_line(EXPIRY_LINE.replace("Expiring session", "Expired session")) is None


def test_queue_wait_starts_at_zookeepers_expiry_when_it_is_the_only_one(events: list[LogEvent]) -> None:
    fault = FAULTS["hard_kill"]
    trigger_at = partition_phases(events, "t", 1, 3, fault).trigger_at
    assert trigger_at is not None
    expired_at = trigger_at - 0.004
    with_expiry = sorted([*events, _expiry(expired_at)], key=lambda e: e.at)
    phases = partition_phases(with_expiry, "t", 1, 3, fault)
    assert phases.expired_at == round(expired_at, 3)
    # our watch fired 30 ms after the controller started: ZooKeeper's own time wins
    late_watch = trigger_at + 0.030
    queue = lat.controller_ms(phases, fault, late_watch)["controller_queue"]
    assert queue is not None and 3.0 <= queue <= 5.0
    assert lat.breakdown(fault, detection=late_watch, election=None, propagation=None, acks=[], partition=1,
                         controller=phases).timestamps()["session_expired"] == phases.expired_at
    # two expiries before the trigger (or one after it): the logs do not say which queued it
    two = sorted([*with_expiry, _expiry(expired_at - 1.0)], key=lambda e: e.at)
    assert partition_phases(two, "t", 1, 3, fault).expired_at is None
    after = sorted([*events, _expiry(trigger_at + 0.5)], key=lambda e: e.at)
    assert partition_phases(after, "t", 1, 3, fault).expired_at is None
    assert lat.controller_ms(partition_phases(two, "t", 1, 3, fault), fault, late_watch)["controller_queue"] == -30.0


def test_events_round_trip() -> None:
    event = LogEvent(1.5, "leader_and_isr", 1, None, None, None, None, (3,), 2)
    assert LogEvent.from_list(event.to_list()) == event

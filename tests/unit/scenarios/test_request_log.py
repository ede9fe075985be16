"""The request-log parser and the pairing of controller sends with broker completions (pure)."""

from __future__ import annotations

import calendar

import pytest
from hypothesis import given, strategies as st

from kafka_chaos.scenarios.history.controller_log import LogEvent
from kafka_chaos.benches.request_log import (
    RequestEntry,
    pair_with_sends,
    parse_request_line,
    parse_request_lines,
    request_stats,
    spread,
)

# Lines as Kafka 3.9.2 wrote them (RequestChannel.updateRequestMetrics), bodies shortened.
PRODUCE = ('[2026-11-23 06:23:12,343] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":0,'
           '"requestApiVersion":10,"correlationId":58,"clientId":"kip291-load-8","requestApiKeyName":"PRODUCE"},'
           '"request":{"transactionalId":null,"acks":-1,"timeoutMs":30000,"topicData":[{"name":"load","partitionData":'
           '[{"index":43,"recordsSizeInBytes":983761}]}]},"response":{"responses":[],"throttleTimeMs":0},'
           '"connection":"127.0.0.1:59917-127.0.0.1:38928-16","totalTimeMs":46.303,"requestQueueTimeMs":0.114,'
           '"localTimeMs":42.999,"remoteTimeMs":2.957,"throttleTimeMs":0,"responseQueueTimeMs":0.051,"sendTimeMs":0.18,'
           '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":'
           '{"softwareName":"confluent-kafka-python","softwareVersion":"2.16.1-rdkafka-2.16.0"},'
           '"temporaryMemoryBytes":1967522,"messageConversionsTime":38.776} (kafka.request.logger)')


def leader_and_isr(stamp: str, correlation: int, total: float, queue: float, listener: str = "CONTROL_PLANE",
                   client: str = "2") -> str:
    return (f'[2026-11-23 {stamp}] DEBUG Completed request:{{"isForwarded":false,"requestHeader":{{"requestApiKey":4,'
            f'"requestApiVersion":7,"correlationId":{correlation},"clientId":"{client}","requestApiKeyName":'
            f'"LEADER_AND_ISR"}},"request":{{"controllerId":2,"topicStates":[{{"topicName":"t","partitionStates":'
            f'[{{"partitionIndex":21,"leader":1}}]}}]}},"response":{{"errorCode":0}},"connection":"a-b-1",'
            f'"totalTimeMs":{total},"requestQueueTimeMs":{queue},"localTimeMs":1.5,"remoteTimeMs":0.0,'
            f'"throttleTimeMs":0,"responseQueueTimeMs":0.1,"sendTimeMs":0.2,"securityProtocol":"PLAINTEXT",'
            f'"principal":"User:ANONYMOUS","listener":"{listener}","clientInformation":{{"softwareName":"unknown"}}}}'
            f' (kafka.request.logger)')


def epoch(hms: str) -> float:
    h, m, rest = hms.split(":")
    s, ms = rest.split(",")
    return calendar.timegm((2026, 11, 23, int(h), int(m), int(s))) + int(ms) / 1000.0


def test_a_produce_line_gives_its_times_listener_and_end() -> None:
    e = parse_request_line(PRODUCE, broker=2)
    assert e is not None
    assert (e.api, e.correlation_id, e.client_id, e.listener) == ("Produce", 58, "kip291-load-8", "PLAINTEXT")
    assert (e.total_ms, e.queue_ms, e.local_ms, e.remote_ms) == (46.303, 0.114, 42.999, 2.957)
    assert e.at == pytest.approx(epoch("06:23:12,343"))
    assert e.received_at == pytest.approx(e.at - 0.046303)


def test_other_lines_and_other_apis_are_skipped() -> None:
    assert parse_request_line("[2026-11-23 06:23:12,343] INFO something else (kafka.server)", 1) is None
    assert parse_request_line(PRODUCE, 1, apis={"LeaderAndIsr"}) is None
    lines = [PRODUCE, leader_and_isr("06:23:13,000", 3, 20.0, 15.0), "garbage"]
    assert [e.api for e in parse_request_lines(lines, 1)] == ["Produce", "LeaderAndIsr"]


def test_sends_pair_in_order_per_broker_and_kind() -> None:
    entries = [e for e in parse_request_lines([
        leader_and_isr("06:00:01,100", 7, 60.0, 50.0),
        leader_and_isr("06:00:02,000", 8, 10.0, 5.0),
        leader_and_isr("06:00:02,500", 9, 10.0, 5.0, client="broker-2-fetcher-0"),  # not the controller's
    ], broker=1)]
    events = [LogEvent(epoch("06:00:01,000"), "leader_and_isr", 2, brokers=(1,)),
              LogEvent(epoch("06:00:01,010"), "leader_and_isr", 2, brokers=(3,)),  # another broker's
              LogEvent(epoch("06:00:01,900"), "leader_and_isr", 2, brokers=(1,))]
    paired = pair_with_sends(entries, events, controller=2)
    assert [(c.entry.correlation_id, c.sent_to_done_ms) for c in paired] == [(7, 100.0), (8, 100.0)]
    assert paired[0].sent_to_received_ms == 40.0  # 60 ms of its 100 were on the broker


def test_a_completion_without_a_send_line_has_no_send_time() -> None:
    entries = parse_request_lines([leader_and_isr("06:00:01,100", 7, 60.0, 50.0)], broker=1)
    (only,) = pair_with_sends(entries, [], controller=2)
    assert only.sent_at is None and only.sent_to_done_ms is None and only.to_dict()["queue_ms"] == 50.0


def test_spread_is_median_nearest_rank_p90_and_max() -> None:
    s = spread([5.0, 1.0, None, 3.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert s is not None and (s.n, s.median, s.p90, s.max) == (10, 5.5, 9.0, 10.0)
    assert spread([None]) is None


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1))
def test_spread_is_ordered(values: list[float]) -> None:
    s = spread(values)
    assert s is not None and min(values) - 0.1 <= s.median <= s.p90 + 0.1 and s.p90 <= s.max + 0.1


def test_request_stats_count_a_window_only() -> None:
    def entry(at: float, queue: float) -> RequestEntry:
        return RequestEntry(1, at, "Produce", 1, "c", "PLAINTEXT", queue + 1, queue, 1.0, 0.0, 0.0, 0.0)
    stats = request_stats([entry(10.0, 5.0), entry(11.0, 15.0), entry(20.0, 999.0)], 10.0, 12.0)
    assert stats["Produce"]["per_s"] == 1.0
    assert stats["Produce"]["mean_in_queue"] == 0.01  # (5 + 15) ms waited over 2 s
    assert stats["Produce"]["queue_ms"]["max"] == 15.0

"""The clients' librdkafka debug ring: bounded, private, warnings passed on."""

from __future__ import annotations

import logging

import pytest

from kafka_chaos.scenarios.clients.debug_ring import DebugRing


def test_the_ring_keeps_the_last_lines_only() -> None:
    ring = DebugRing("test.ring.bounded", max_lines=3)
    for i in range(5):
        ring.logger.debug("line %d", i)
    assert [line.split(" ", 1)[1] for line in ring.lines()] == ["line 2", "line 3", "line 4"]
    assert all(float(line.split(" ", 1)[0]) > 0 for line in ring.lines())  # each line carries its time


def test_critical_lines_go_on_to_the_forward_logger_and_the_rest_stays_in_the_ring(
        caplog: pytest.LogCaptureFixture) -> None:
    forward = logging.getLogger("test.ring.forward")
    ring = DebugRing("test.ring.private", max_lines=10, forward=forward)
    with caplog.at_level(logging.DEBUG):
        ring.logger.debug("PRODUCE: MessageSet delivered")
        ring.logger.warning("FAIL: broker down")
        ring.logger.critical("FATAL: producer fenced")
    assert [r.getMessage() for r in caplog.records] == ["FATAL: producer fenced"]
    assert len(ring.lines()) == 3
    assert "test.ring.private" not in logging.Logger.manager.loggerDict  # never registered, freed with its client

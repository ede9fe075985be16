"""The one bounded wait helper (short real timeouts; no processes)."""

from __future__ import annotations

import time

import pytest

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until


def test_returns_the_first_accepted_value() -> None:
    values = iter([0, None, 7, 8])
    assert wait_until(lambda: next(values), timeout=5, interval=0.001, description="a value") == 7


def test_retry_on_exceptions_count_as_not_yet() -> None:
    attempts = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("not yet")
        return "up"
    assert wait_until(flaky, timeout=5, interval=0.001, retry_on=(OSError,), description="up") == "up"
    assert len(attempts) == 3


def test_accept_waits_only_for_no_exception() -> None:
    assert wait_until(lambda: 0, timeout=1, interval=0.001, accept=lambda _: True, description="zero") == 0


def test_other_exceptions_end_the_wait_at_once() -> None:
    began = time.monotonic()
    with pytest.raises(KeyError):
        wait_until(lambda: {}["x"], timeout=10, interval=0.01, retry_on=(OSError,), description="never")
    assert time.monotonic() - began < 1


def test_timeout_names_the_wait_and_chains_the_last_error() -> None:
    began = time.monotonic()
    with pytest.raises(WaitTimeout) as info:
        wait_until(lambda: (_ for _ in ()).throw(ConnectionError("refused")), timeout=0.3, interval=0.05,
                   retry_on=(ConnectionError,), description="the port to answer")
    assert 0.2 <= time.monotonic() - began < 2
    assert isinstance(info.value, HarnessError)
    assert str(info.value) == ("timed out after 0.3 s waiting for the port to answer; "
                               "last attempt: ConnectionError: refused")
    assert isinstance(info.value.__cause__, ConnectionError) and info.value.last_error is info.value.__cause__


def test_timeout_reports_the_last_value_and_tries_at_least_once() -> None:
    calls = []
    with pytest.raises(WaitTimeout, match="last attempt returned False") as info:
        wait_until(lambda: calls.append(1) or False, timeout=-1, interval=0.05, description="never")
    assert calls == [1] and info.value.last_value is False

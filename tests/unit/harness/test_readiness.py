"""Start-up readiness: a broker killed just before a start must not be waited for forever."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from kafka_chaos.harness import readiness


def test_a_broker_whose_registration_expires_during_the_wait_is_no_longer_expected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by tests/integration/test_workload.py: broker 1 was SIGKILLed, broker 2 started at
    once; /brokers/ids/1 still existed when broker 2 registered, then expired, and broker 2's
    metadata rightly listed [2, 3] while the start waited for [1, 2, 3] until it failed."""
    monkeypatch.setattr(readiness, "metadata_brokers", lambda bootstrap, timeout=2.0: {2, 3})
    live = [{1: 10, 2: 11, 3: 12}]
    observer = SimpleNamespace(snapshot=lambda: SimpleNamespace(live_brokers=live[0]))
    expected = readiness.still_registered(observer, {1, 2, 3})  # type: ignore[arg-type]
    assert expected() == {1, 2, 3}
    # a fixed expectation never matches once broker 1 is gone
    assert readiness.wait_metadata_lists("b2", {1, 2, 3}, deadline=time.monotonic() + 0.5) == (
        "its metadata lists brokers [2, 3], expected [1, 2, 3]")
    live[0] = {2: 11, 3: 12}  # ZooKeeper expired broker 1's session
    assert readiness.wait_metadata_lists("b2", expected, deadline=time.monotonic() + 0.5) is None
    # a broker that registered later is not asked for either: only those registered at the start
    live[0] = {2: 11, 3: 12, 4: 13}
    assert expected() == {2, 3}

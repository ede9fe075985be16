"""A fake cluster's broker controls (``harness.cluster.BrokerControl`` on a dict), recording the
calls in order — shared by the fault tests."""

from __future__ import annotations


class FakeBrokers:
    bootstrap_servers = "127.0.0.1:1"

    def __init__(self) -> None:
        self.running = {1: True, 2: True, 3: True}
        self.calls: list[tuple[str, int]] = []

    def broker_running(self, b: int) -> bool:
        return self.running[b]

    def kill_broker(self, b: int) -> None:
        self.calls.append(("kill", b))
        self.running[b] = False

    def stop_broker(self, b: int) -> None:
        self.calls.append(("stop", b))
        self.running[b] = False

    def start_broker(self, b: int) -> None:
        self.calls.append(("start", b))
        self.running[b] = True

    def pause_broker(self, b: int) -> None:
        self.calls.append(("pause", b))

    def resume_broker(self, b: int) -> None:
        self.calls.append(("resume", b))

    def broker_paused(self, b: int) -> bool:
        return False

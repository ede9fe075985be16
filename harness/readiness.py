"""Start-up readiness shared by every launcher: what "a broker is up" means in ZooKeeper."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from harness.observer import ZkObserver, ZkSnapshot


def wait_registered(zookeeper_connect: str, broker_ids: Iterable[int], *, deadline: float,
                    newer_than: Mapping[int, int] | None = None,
                    check_alive: Callable[[], None] = lambda: None) -> ZkSnapshot:
    """Wait (watch-driven, until the ``time.monotonic()`` ``deadline``) until every broker is
    registered in ``/brokers/ids`` — with a broker epoch newer than ``newer_than`` gives, so a
    restarted broker's stale registration does not count — and a live controller is elected.

    ``check_alive`` raises when a node died meanwhile, which ends the wait at once; a timeout
    raises :class:`harness.observer.ConvergenceTimeout` with the last snapshot."""
    wanted = set(broker_ids)
    old = newer_than or {}

    def ready(snapshot: ZkSnapshot) -> bool:
        check_alive()
        registered = {b for b in wanted if snapshot.live_brokers.get(b, -1) > old.get(b, -1)}
        return registered == wanted and snapshot.controller in snapshot.live_brokers

    with ZkObserver(zookeeper_connect, topics=[]) as observer:
        return observer.wait_until(
            ready, timeout=max(0.0, deadline - time.monotonic()),
            description=f"brokers {sorted(wanted)} to register and a controller to be elected")

"""One kazoo session, opened and closed the same way by every ZooKeeper user in the harness
(:class:`harness.observer.ZkObserver`, :class:`harness.zkadmin.ZkAdmin`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from kafka_chaos.common.errors import HarnessError

log = logging.getLogger(__name__)


class ZkUnavailable(HarnessError):
    """ZooKeeper did not answer in time (down, paused, or the session is reconnecting)."""


def connect(zk_connect: str, *, session_timeout: float, connect_timeout: float,
            command_deadline: float) -> KazooClient:
    """A started client.  It reconnects for as long as it runs (ZooKeeper may be paused by a
    scenario), but one command retried through ``client.retry`` gives up after
    ``command_deadline`` seconds.  Raises :class:`ZkUnavailable` when no connection is made
    within ``connect_timeout``."""
    client = KazooClient(
        hosts=zk_connect, timeout=session_timeout,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        command_retry={"max_tries": 5, "delay": 0.1, "backoff": 2, "max_delay": 1.0,
                       "deadline": command_deadline},
    )
    try:
        client.start(timeout=connect_timeout)
    except KazooTimeoutError:
        close_bounded(client, zk_connect, timeout=1.0)
        raise ZkUnavailable(f"cannot connect to ZooKeeper at {zk_connect} "
                            f"within {connect_timeout:.0f} s") from None
    return client


def _close_quietly(client: KazooClient) -> None:
    try:
        client.stop()
        client.close()
    except KazooException as exc:  # best effort: nothing of ours lives in ZooKeeper
        log.debug("closing kazoo client: %s", exc)


def close_bounded(client: KazooClient, zk_connect: str, *, timeout: float) -> None:
    """Close the session, waiting at most ``timeout``.  A graceful close waits for ZooKeeper's
    answer (~10 s when it is paused); past the bound the session is left to expire on the
    server and the closing thread ends by itself."""
    closer = threading.Thread(target=_close_quietly, args=(client,), name="zk-close", daemon=True)
    closer.start()
    closer.join(timeout=timeout)
    if closer.is_alive():
        log.info("ZooKeeper at %s did not confirm closing a session within %.0f s; leaving it to "
                 "expire", zk_connect, timeout)


@contextmanager
def short_session(zk_connect: str, *, command_s: float = 10.0, close_s: float = 2.0) -> Iterator[KazooClient]:
    """A client for a few reads or writes: connected within ``command_s`` (each command retried as
    long), closed on leaving, waiting at most ``close_s`` (:func:`close_bounded`)."""
    client = connect(zk_connect, session_timeout=10.0, connect_timeout=command_s, command_deadline=command_s)
    try:
        yield client
    finally:
        close_bounded(client, zk_connect, timeout=close_s)

"""Tear down every live container cluster on interpreter exit and on SIGTERM/SIGHUP.

Ctrl-C already unwinds through ``with`` blocks as KeyboardInterrupt; SIGTERM and SIGHUP kill
Python without running ``finally`` or atexit, so they are turned into ``SystemExit`` (only when
nobody else installed a handler).  ``atexit`` catches whatever a caller forgot to destroy.
What even this misses (SIGKILL of the Python process) ``kafka-chaos cluster prune`` removes.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Protocol

log = logging.getLogger(__name__)


class Destroyable(Protocol):
    def destroy(self) -> None: ...


_live: dict[int, Destroyable] = {}
_lock = threading.Lock()
_installed = False


def register(resource: Destroyable) -> None:
    with _lock:
        _live[id(resource)] = resource
        _install_once()


def unregister(resource: Destroyable) -> None:
    with _lock:
        _live.pop(id(resource), None)


def destroy_all() -> None:
    with _lock:
        resources = list(_live.values())
    for resource in resources:
        try:
            resource.destroy()
        except Exception:  # keep tearing down the others; this is the last line of defence
            log.exception("tearing down %r failed", resource)


def _install_once() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(destroy_all)
    from kafka_chaos.harness.processes import exit_on_termination_signals  # the local launcher's, shared

    exit_on_termination_signals()

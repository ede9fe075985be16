"""Labels every Docker object of a run carries, and whether the run's owner still lives.

``kafka-chaos.run`` names the run; ``kafka-chaos.owner`` is ``host:pid:start-time`` of the
Python process that created it, so ``prune`` can tell a crashed run's leftovers (owner gone)
from a live run of another engineer or CI job on the same engine (owner alive).  The start
time (psutil's ``Process.create_time()``) guards against a recycled pid.

A ``kafka-chaos cluster up --backend containers`` cluster outlives its creator: its objects also
carry ``kafka-chaos.state-dir`` (the state dir's absolute path), and count as alive while that
dir's ``cluster.json`` names their run (``cluster down`` removes both; a state dir deleted by
hand leaves containers ``prune`` then removes).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path

import psutil

RUN_LABEL = "kafka-chaos.run"
OWNER_LABEL = "kafka-chaos.owner"
ROLE_LABEL = "kafka-chaos.role"  # "zookeeper" | "broker" | "network"
BROKER_ID_LABEL = "kafka-chaos.broker-id"
STATE_DIR_LABEL = "kafka-chaos.state-dir"


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def run_labels(run_id: str) -> dict[str, str]:
    return {RUN_LABEL: run_id, OWNER_LABEL: current_owner()}


def detached_labels(run_id: str, state_dir: Path) -> dict[str, str]:
    """The labels of a cluster that outlives its creator, kept alive by ``state_dir``."""
    return {**run_labels(run_id), STATE_DIR_LABEL: str(state_dir.absolute())}


def current_owner() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start_time(pid)}"


def owner_alive(labels: Mapping[str, str]) -> bool:
    """False only when the owner ran on this host and that process is gone.

    Objects without an owner label, or owned by another host sharing the engine, count as
    alive: prune leaves them to ``--all``.
    """
    owner = labels.get(OWNER_LABEL)
    if not owner:
        return True
    try:
        host, pid_text, start_time = owner.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return True
    if host != socket.gethostname():
        return True
    if _process_start_time(pid) == start_time:
        return True
    state_dir = labels.get(STATE_DIR_LABEL)
    if not state_dir:
        return False
    # A `cluster up`: once its creator has exited, its state file keeps it.
    from kafka_chaos.harness.containers.state import state_names_run

    return state_names_run(Path(state_dir), labels.get(RUN_LABEL, ""))


def _process_start_time(pid: int) -> str:
    """The process's start time (seconds since the epoch, to 1/100 s: what ``create_time()``
    resolves on Linux), "" when the process is gone."""
    try:
        return f"{psutil.Process(pid).create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""

"""One JVM node (ZooKeeper or a broker) as an operating-system process, and signals to it.

Every node runs in a session of its own (``start_new_session``), so a Ctrl-C in the terminal
reaches only our Python process, which then tears the cluster down in order.  Nodes of an
*attached* cluster (one a previous ``kafka-chaos cluster up`` started) are not our children:
they are found by pid and, because pids are recycled, are signalled only while that pid's
process (read through psutil) still has the start time recorded when it was spawned
(``Process.create_time()``) and a command line naming its own config file.

Owned (non-detached) nodes also get ``PR_SET_PDEATHSIG = SIGKILL``: if our Python process dies
without running any cleanup (SIGKILL, a crashed interpreter), the kernel kills the JVMs.  The
kernel sends that signal when the *thread* that forked the child exits, so such nodes are forked
from one long-lived daemon thread (:func:`_spawn_on_reaper_thread`) that lives exactly as long
as the process.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

import psutil

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


class NodeProcess:
    """A started (or re-attached) JVM; ``identity`` is a string its command line must contain,
    ``started_at`` its ``psutil.Process.create_time()`` when known (the pid-reuse guard)."""

    def __init__(self, name: str, pid: int, identity: str,
                 popen: subprocess.Popen[bytes] | None = None, started_at: float | None = None) -> None:
        self.name = name
        self.pid = pid
        self.identity = identity
        self.started_at = started_at
        self._popen = popen

    def __repr__(self) -> str:
        return f"NodeProcess({self.name!r}, pid={self.pid})"

    # ---------------------------------------------------------------- state

    def alive(self) -> bool:
        """Running or stopped (paused); False once it exited, even if not yet reaped."""
        if self._popen is not None:
            return self._popen.poll() is None
        return _status(self._process()) not in _GONE

    def paused(self) -> bool:
        return self.alive() and _status(self._process()) in _STOPPED

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    def _process(self) -> psutil.Process | None:
        """This node's process, None when the pid is gone or now belongs to another process."""
        try:
            process = psutil.Process(self.pid)
            if self.started_at is not None and process.create_time() != self.started_at:
                return None  # the pid was recycled
            if self.identity not in "\0".join(process.cmdline()):
                return None
            return process
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None

    # ---------------------------------------------------------------- signals

    def send(self, sig: signal.Signals) -> bool:
        """Signal the node's whole process group; False when it is already gone."""
        if not self.alive():
            return False
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # not a group leader after all (should not happen): the pid only
            os.kill(self.pid, sig)
        return True

    def kill(self, timeout: float = 15.0) -> None:
        """SIGKILL (works on a stopped process too) and wait until the pid is gone."""
        self.send(signal.SIGKILL)
        if not self.wait_exit(timeout):
            raise HarnessError(f"{self.name} (pid {self.pid}) still exists {timeout:.0f} s after SIGKILL")

    def terminate(self, timeout: float) -> bool:
        """SIGTERM (a broker then shuts down in a controlled way) and wait for the exit; after
        ``timeout`` SIGKILL with a warning.  Returns True when the node exited on its own."""
        if self.paused():
            self.send(signal.SIGCONT)  # a stopped JVM would never act on SIGTERM
        if not self.send(signal.SIGTERM):
            return True
        if self.wait_exit(timeout):
            return True
        log.warning("%s (pid %d) did not exit within %.0f s of SIGTERM: sending SIGKILL",
                    self.name, self.pid, timeout)
        self.kill()
        return False

    def pause(self, timeout: float = 5.0) -> None:
        """SIGSTOP; returns once the kernel shows the process stopped (delivery is asynchronous)."""
        if not self.send(signal.SIGSTOP):
            raise HarnessError(f"cannot pause {self.name}: it is not running")
        self._wait_state(stopped=True, timeout=timeout)

    def resume(self, timeout: float = 5.0) -> None:
        if not self.send(signal.SIGCONT):
            raise HarnessError(f"cannot resume {self.name}: it is not running")
        self._wait_state(stopped=False, timeout=timeout)

    def _wait_state(self, *, stopped: bool, timeout: float) -> None:
        try:
            wait_until(lambda: self.paused() == stopped, timeout=timeout, interval=0.01,
                       description=f"{self.name} to be {'stopped' if stopped else 'running'}")
        except WaitTimeout:
            raise HarnessError(f"{self.name} (pid {self.pid}) is {'not ' if stopped else 'still '}"
                               f"stopped {timeout:.0f} s after {'SIGSTOP' if stopped else 'SIGCONT'}") from None

    def wait_exit(self, timeout: float) -> bool:
        if self._popen is not None:
            try:
                self._popen.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        # Not our child: its parent (init, after `cluster up` returned) reaps it.
        try:
            wait_until(lambda: not self.alive(), timeout=timeout, interval=0.05,
                       description=f"{self.name} (pid {self.pid}) to exit")
        except WaitTimeout:
            return False
        return True


# psutil statuses of a process that no longer runs, and of one that is stopped (SIGSTOP).
_GONE = frozenset({None, psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD})
_STOPPED = frozenset({psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP})


def _status(process: psutil.Process | None) -> str | None:
    """``process.status()``, None when there is no process (or it vanished meanwhile)."""
    if process is None:
        return None
    try:
        return str(process.status())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def start_time(pid: int) -> float | None:
    """The process's ``create_time()`` (seconds since the epoch), None when it is gone."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _set_pdeathsig() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_spawn_requests: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[bytes]], Future[subprocess.Popen[bytes]]]] \
    = queue.SimpleQueue()
_reaper_thread: threading.Thread | None = None
_reaper_lock = threading.Lock()


def _reaper_loop() -> None:
    while True:
        make, future = _spawn_requests.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(make())
        except BaseException as exc:  # handed to the caller
            future.set_exception(exc)


def _spawn_on_reaper_thread(make: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    global _reaper_thread
    with _reaper_lock:
        if _reaper_thread is None:
            _reaper_thread = threading.Thread(target=_reaper_loop, name="kafka-chaos-spawner", daemon=True)
            _reaper_thread.start()
    future: Future[subprocess.Popen[bytes]] = Future()
    _spawn_requests.put((make, future))
    return future.result(timeout=60)


def spawn(name: str, argv: Sequence[str], *, output: Path, identity: str, cwd: Path,
          detached: bool, group: int | None = None) -> NodeProcess:
    """Start ``argv`` with stdout and stderr appended to ``output``.

    ``detached`` nodes outlive this Python process (``kafka-chaos cluster up``); the others are
    killed by the kernel if it dies.  ``group``: the group id to run it with (root only: the
    loopback firewall of :mod:`harness.local.network` tells nodes apart by it).
    """
    if identity not in " ".join(argv):
        raise HarnessError(f"{name}: identity {identity!r} must appear in its command line")
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "ab") as out:
        out.write(f"---- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n".encode())
        out.flush()

        def make() -> subprocess.Popen[bytes]:
            return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                                    preexec_fn=None if detached else _set_pdeathsig, group=group)
        popen = make() if detached else _spawn_on_reaper_thread(make)
    log.debug("started %s as pid %d", name, popen.pid)
    return NodeProcess(name, popen.pid, identity, popen, started_at=start_time(popen.pid))


def attach(name: str, pid: int, identity: str, started_at: float | None = None) -> NodeProcess:
    """A node started by another Python process; may already be gone (check ``alive()``).
    ``started_at`` (its ``create_time()`` then) guards against a recycled pid."""
    return NodeProcess(name, pid, identity, started_at=started_at)


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (e.g. a run directory), never
    this process nor its ancestors: the shell or ``flock`` wrapper that started ``kafka-chaos
    cluster down --state-dir X`` mentions X too, and is no node of the cluster."""
    ours = {os.getpid(), *(parent.pid for parent in psutil.Process().parents())}
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        info = process.info
        if info["pid"] in ours or info["status"] in _GONE:
            continue
        if text in "\0".join(info["cmdline"] or ()):
            found.append(int(info["pid"]))
    return found


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (0 when gone)."""
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0


_previous_handlers: dict[int, object] = {}


def exit_on_termination_signals() -> None:
    """Turn SIGTERM and SIGHUP into SystemExit in the main thread, so ``with`` blocks and atexit
    hooks tear clusters down as on Ctrl-C.  Leaves handlers someone else installed alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if sig in _previous_handlers or signal.getsignal(sig) is not signal.SIG_DFL:
            continue
        _previous_handlers[sig] = signal.SIG_DFL

        def raise_exit(signum: int, frame: object) -> None:
            raise SystemExit(128 + signum)
        signal.signal(sig, raise_exit)

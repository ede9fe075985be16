"""One JVM node (ZooKeeper or a broker) as an operating-system process, and signals to it.

Every node runs in a session of its own (``start_new_session``), so a Ctrl-C in the terminal
reaches only our Python process, which then tears the cluster down in order.  Nodes of an
*attached* cluster (one a previous ``kafka-chaos cluster up`` started) are not our children:
they are found by pid and, because pids are recycled, are signalled only while their
``/proc/<pid>/cmdline`` still names their own config file.

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

from tenacity import RetryError, retry_if_result, stop_after_delay, wait_fixed
from tenacity import Retrying

from harness.errors import HarnessError

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


class NodeProcess:
    """A started (or re-attached) JVM; ``identity`` is a string its command line must contain."""

    def __init__(self, name: str, pid: int, identity: str,
                 popen: subprocess.Popen[bytes] | None = None) -> None:
        self.name = name
        self.pid = pid
        self.identity = identity
        self._popen = popen

    def __repr__(self) -> str:
        return f"NodeProcess({self.name!r}, pid={self.pid})"

    # ---------------------------------------------------------------- state

    def alive(self) -> bool:
        """Running or stopped (paused); False once it exited, even if not yet reaped."""
        if self._popen is not None:
            return self._popen.poll() is None
        return _proc_state(self.pid) not in (None, "Z", "X") and self._is_ours()

    def paused(self) -> bool:
        return self.alive() and _proc_state(self.pid) in ("T", "t")

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    def _is_ours(self) -> bool:
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return False
        return self.identity.encode() in cmdline

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
            Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(0.01),
                     retry=retry_if_result(lambda now: now != stopped))(self.paused)
        except RetryError:
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
            Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(0.05),
                     retry=retry_if_result(lambda alive: alive))(self.alive)
        except RetryError:
            return False
        return True


def _proc_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat (R, S, T, Z, ...), None when there is no such pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (2nd field) may contain spaces and parentheses: split after the last ')'.
    return stat.rsplit(")", 1)[1].split()[0]


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
          detached: bool) -> NodeProcess:
    """Start ``argv`` with stdout and stderr appended to ``output``.

    ``detached`` nodes outlive this Python process (``kafka-chaos cluster up``); the others are
    killed by the kernel if it dies.
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
                                    preexec_fn=None if detached else _set_pdeathsig)
        popen = make() if detached else _spawn_on_reaper_thread(make)
    log.debug("started %s as pid %d", name, popen.pid)
    return NodeProcess(name, popen.pid, identity, popen)


def attach(name: str, pid: int, identity: str) -> NodeProcess:
    """A node started by another Python process; may already be gone (check ``alive()``)."""
    return NodeProcess(name, pid, identity)


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (e.g. a run directory)."""
    needle = text.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes() and _proc_state(int(entry.name)) not in ("Z", "X", None):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
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

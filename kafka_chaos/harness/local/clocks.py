"""Local nodes' wall clocks set off the host's with libfaketime (capability ``CLOCK_CONTROL``),
and what the containers launcher shares of it (:mod:`harness.containers.clocks`: the settings,
the control file's writes, drifts, :class:`FileClockControls`).

With ``ClusterConfig.fake_clocks`` every node (ZooKeeper server, broker, KRaft controller) runs
under Debian's ``libfaketime`` (``LD_PRELOAD``, put in front of its command by ``env`` so the
command line kept in ``cluster.json`` restarts it the same way), which reads the node's offset
from its own control file (``FAKETIME_TIMESTAMP_FILE``, ``faketime.rc`` in the node's directory);
a jump is a new offset in the file, a drift a thread writing a growing offset. Without it nodes
start as they always did.

The settings, measured on OpenJDK 17 with libfaketime 0.9.10 (docs/clocks.md):

* ``FAKETIME_DONT_FAKE_MONOTONIC=1``: only ``CLOCK_REALTIME`` (``System.currentTimeMillis``,
  Kafka's ``Time.milliseconds``) moves; ``System.nanoTime`` keeps the host's monotonic clock.
  Faking it hangs the JVM before ``main`` (libfaketime's README says so for Java); it is also
  what a real clock step does (``settimeofday`` and NTP steps move ``CLOCK_REALTIME`` only).
* ``FAKETIME_FORCE_MONOTONIC_FIX=0``: with the fix (the default on this glibc) libfaketime's
  ``pthread_cond_timedwait`` returns at once for the JVM's monotonic waits, so every parked
  thread spins: 2.7 CPU-seconds per second for a test program that needs 0.02.
* ``FAKETIME_CACHE_DURATION=1``: the file is re-read at most once a second. Without the cache
  (``FAKETIME_NO_CACHE=1``) every clock read opens the file: 3.6 us a call against 65 ns, too
  much for a broker on a 2-core machine. A new offset is felt within ``FELT_WITHIN_S``.
* No rate (``x1.5``) in the file: with a rate libfaketime also rescales the JVM's timed waits
  and ``Thread.sleep`` never returns; a drift is written as offsets instead (``DRIFT_STEP_S``).
"""

from __future__ import annotations

import glob
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.local.nodes import LocalNode

log = logging.getLogger(__name__)

CONTROL_FILE = "faketime.rc"
# Where Debian (and a source install) put the library; the multiarch directory varies by arch.
LIBRARY_GLOBS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                 "/usr/local/lib/faketime/libfaketime.so.1")
FAKETIME_ENV = (("FAKETIME_DONT_FAKE_MONOTONIC", "1"), ("FAKETIME_FORCE_MONOTONIC_FIX", "0"),
                ("FAKETIME_CACHE_DURATION", "1"))
# A new offset is felt once the 1 s cache lapses; measured up to 2.2 s after the write (cache
# lapses are counted on the faked clock), so a step waits this long before it looks.
FELT_WITHIN_S = 3.0
DRIFT_STEP_S = 0.5  # how often a drift's offset is rewritten (real seconds)
MAX_OFFSET_S = 24 * 3600.0
ROLES = ("broker", "controller", "zookeeper")


def libfaketime_path() -> Path | None:
    """libfaketime.so.1 on this machine, or None."""
    for pattern in LIBRARY_GLOBS:
        found = sorted(glob.glob(pattern))
        if found:
            return Path(found[0])
    return None


def clock_problems() -> dict[Capability, str]:
    """``CLOCK_CONTROL`` when this machine has no libfaketime."""
    if libfaketime_path() is None:
        return {Capability.CLOCK_CONTROL: "clock faults need libfaketime (apt-get install libfaketime)"}
    return {}


def faketime_environment(library: str, control: str) -> dict[str, str]:
    """Pure: the environment that runs a process under ``library`` reading its offset from
    ``control``, with the settings above (the same on both launchers)."""
    return {"LD_PRELOAD": library, "FAKETIME_TIMESTAMP_FILE": control, **dict(FAKETIME_ENV)}


def faked_command(command: list[str], library: Path, control: Path) -> list[str]:
    """``command`` under libfaketime reading ``control``: ``env`` execs it in place, so the pid
    the launcher signals is the JVM's."""
    settings = [f"{k}={v}" for k, v in faketime_environment(str(library), str(control)).items()]
    return ["/usr/bin/env", *settings, *command]


def offset_spec(offset_s: float) -> str:
    """The control file's text for a clock ``offset_s`` seconds off the host's (libfaketime's
    relative offset, ``+1.5`` / ``-30``)."""
    return f"{offset_s:+.3f}\n"


def write_offset(control: Path, offset_s: float) -> None:
    """Replace the control file in one rename: libfaketime never reads half a line."""
    tmp = control.with_name(control.name + ".tmp")
    tmp.write_text(offset_spec(offset_s))
    os.replace(tmp, control)


def drift_offset(base_s: float, rate: float, elapsed_s: float) -> float:
    """Pure: the offset of a clock that ran at ``rate`` for ``elapsed_s`` real seconds from ``base_s``."""
    return base_s + (rate - 1.0) * elapsed_s


def check_role(role: str) -> None:
    if role not in ROLES:
        raise UsageError(f"clock: role must be one of {', '.join(ROLES)}, not {role!r}")


def check_clock(offset_s: float, rate: float) -> None:
    if not -MAX_OFFSET_S <= offset_s <= MAX_OFFSET_S:
        raise UsageError(f"a clock offset must lie within ±{MAX_OFFSET_S:.0f} s, not {offset_s}")
    if not 0.0 < rate <= 10.0:
        raise UsageError(f"a clock rate must lie in (0, 10], not {rate}")


@dataclass
class _Drift:
    """A thread rewriting one control file until stopped (or its directory is gone)."""

    control: Path
    base_s: float
    rate: float
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=f"clock-drift-{self.control.parent.name}", daemon=True)
        self.thread.start()

    def halt(self) -> None:
        """Stop and wait for the thread, so no write of it lands after the caller's (bounded: a
        write is one small file and a rename)."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5.0)

    def _run(self) -> None:
        began = time.monotonic()
        while not self.stop.wait(DRIFT_STEP_S):
            try:
                write_offset(self.control, drift_offset(self.base_s, self.rate, time.monotonic() - began))
            except OSError:  # the run directory was removed: the cluster is gone
                return


class FileClockControls:
    """:class:`harness.cluster.ClockController` over libfaketime control files, for any launcher
    that says where each node's file is on this machine (``_control_file``, ``_control_files``):
    the local launchers' node directories, the containers launcher's bind-mounted ones
    (:mod:`harness.containers.clocks`)."""

    def _control_file(self, role: str, node_id: int) -> Path:
        """The node's control file; a one-line UsageError for a node this cluster has not, a
        HarnessError for one on the host's clock."""
        raise NotImplementedError

    def _control_files(self) -> list[Path]:
        """Every control file of the cluster (none when it runs on the host's clock)."""
        raise NotImplementedError

    def set_clock(self, role: str, node_id: int, *, offset_s: float = 0.0, rate: float = 1.0) -> None:
        """From now on (felt within ``FELT_WITHIN_S``) the node's wall clock is ``offset_s`` off the
        host's and, with ``rate`` != 1, runs that much faster from there."""
        check_clock(offset_s, rate)
        control = self._control_file(role, node_id)
        drifts = self.__dict__.setdefault("_drifts", {})
        old = drifts.pop(control, None)
        if old is not None:
            old.halt()
        write_offset(control, offset_s)
        if rate != 1.0:
            drift = _Drift(control, offset_s, rate)
            drifts[control] = drift
            drift.start()
        log.info("%s %d's clock: %+.3f s off the host's%s", role, node_id, offset_s,
                 f", running at x{rate:g}" if rate != 1.0 else "")

    def heal_clocks(self) -> None:
        """Every node back on the host's clock; idempotent (a cluster without fake clocks: nothing)."""
        for drift in self.__dict__.pop("_drifts", {}).values():
            drift.halt()
        for control in self._control_files():
            if control.exists():
                write_offset(control, 0.0)


class LocalClockControls(FileClockControls):
    """The local launchers' clocks: ``_fake_clocks`` (from the launcher's start, after the nodes
    are laid out) puts libfaketime in front of each node's command when the config asks for fake
    clocks; each node's control file is in its directory."""

    config: ClusterConfig
    _brokers: dict[int, LocalNode]

    def _fake_clocks(self, nodes: Iterable[LocalNode]) -> None:
        if not self.config.fake_clocks:
            return
        library = libfaketime_path()
        if library is None:
            raise HarnessError(clock_problems()[Capability.CLOCK_CONTROL])
        for node in nodes:
            control = node.directory / CONTROL_FILE
            write_offset(control, 0.0)
            node.command = faked_command(node.command, library, control)
        log.info("nodes run on fake clocks (libfaketime %s)", library)

    def _clock_nodes(self) -> dict[tuple[str, int], LocalNode]:
        """(role, id) -> node, from the launchers' own maps (a ZooKeeper-mode cluster has ZooKeeper
        servers, a KRaft one controllers): read here so each launcher only calls ``_fake_clocks``."""
        nodes = {("broker", b): n for b, n in self._brokers.items()}
        nodes |= {("controller", c): n for c, n in getattr(self, "_controllers", {}).items()}
        nodes |= {("zookeeper", z): n for z, n in getattr(self, "_zk_ensemble", {}).items()}
        return nodes

    def _control_file(self, role: str, node_id: int) -> Path:
        check_role(role)
        node = self._clock_nodes().get((role, node_id))
        if node is None:
            raise UsageError(f"clock: this cluster has no {role} {node_id}")
        control = node.directory / CONTROL_FILE
        if not control.exists():
            raise HarnessError(f"{node.name} runs on the host's clock: start the cluster with fake clocks")
        return control

    def _control_files(self) -> list[Path]:
        if not self.config.fake_clocks:
            return []
        return [node.directory / CONTROL_FILE for node in self._clock_nodes().values()]

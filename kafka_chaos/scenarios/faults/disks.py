"""Faults below the process, on a node's data directory (the crash-consistency layer,
:mod:`harness.lazyfs`; clusters with ``filesystem: "lazyfs"``):

* ``power_failure``: the broker loses power -- SIGKILL, and its data directory loses every write,
  new file and rename it had not fsynced. To the controller it is a hard kill (the session
  expires: the oracle's ``BrokerFailure``); what it may cost the clients is
  :mod:`oracle.durability`'s rule, which the history checks apply. ``controller_power_failure``
  is the controller broker's (ZooKeeper mode, as ``controller_kill``), and
  ``quorum_leader_power_failure`` the active KRaft controller's (as ``quorum_leader_kill``).
* ``disk_error``: writes (and fsyncs) under one log directory fail with EIO or ENOSPC, as a
  dying disk or a full one answers. Kafka's next write there fails
  (``LogDirFailureChannel.maybeAddOfflineLogDir`` from ``maybeHandleIOException``) and the
  directory goes offline exactly as ``log_dir_failure`` makes it
  (:mod:`scenarios.faults.log_dirs`: its oracle events, its heal); only the cause is the error
  Kafka really meets instead of a directory moved aside. On KRaft too (3.7+, JBOD: KIP-858), as
  ``log_dir_failure``: ``leader_log_write_error`` and ``follower_checkpoint_disk_full`` with
  ``--mode kraft`` passed on 3.9.2 (seed 4715, 210 + 210 checks, partition epochs exact).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, ClassVar, Literal, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, DiskFaulter, LogDirFailer, PowerFailer
from kafka_chaos.harness.lazyfs.mount import IoRule, PowerFailReport
from kafka_chaos.scenarios.faults.base import (
    KRAFT_ONLY,
    ZOOKEEPER_ONLY,
    Fault,
    FaultBase,
    FaultEnv,
    StepTopics,
    register_fault,
    reject_unknown_options,
    require_capability,
)
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, register_generator
from kafka_chaos.scenarios.faults.log_dirs import (
    GENERATED_CLUSTER,
    HEAL,
    LogDirFailureFault,
    LogDirRepair,
    fail_log_dir,
    log_dir_fault,
)
from kafka_chaos.scenarios.faults.process import HardKill, controller_candidates, down_candidates, take_down
from kafka_chaos.scenarios.faults.quorum import KILLS_ITS_VOTER, QuorumLeaderKill, quorum_candidates, quorum_rule
from kafka_chaos.oracle import Event
from kafka_chaos.scenarios.model.ledger import PLAIN, FaultWaits
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Brokers, Target

log = logging.getLogger(__name__)

LAZYFS = "lazyfs"
UNDO_ACTIONS_KEPT = 20  # per broker, in the history: the counts say how many more there were


@register_fault
@dataclass
class PowerFailure(HardKill):
    """Power lost on the target brokers (one, or several at once: a rack): each killed and its
    unsynced writes dropped; held until healed (started again on what survived)."""

    kind: ClassVar[str] = "power_failure"
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.BROKER_CONTROL, Capability.POWER_FAILURE})
    _dropped: dict[int, dict[str, Any]] = field(default_factory=dict, init=False)

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        """What each broker's data directory lost (history ``traits.outcome``)."""
        return {"dropped": {str(b): report for b, report in sorted(self._dropped.items())}} if self._dropped else None

    def inject(self, env: FaultEnv) -> None:
        cluster = cast(PowerFailer, require_capability(env, Capability.POWER_FAILURE, self.kind))
        for b in self.target.brokers:
            self._dropped[b] = _dropped(cluster.power_fail_node(b))


def _dropped(report: PowerFailReport) -> dict[str, Any]:
    """A power failure's report as the step's outcome records it."""
    return {"files_truncated": report.files_truncated, "bytes_dropped": report.bytes_dropped,
            "entries_undone": report.entries_undone, "undo_actions": list(report.undo_actions[:UNDO_ACTIONS_KEPT]),
            "undo_actions_total": len(report.undo_actions)}


@register_fault
@dataclass
class ControllerPowerFailure(PowerFailure):
    """The controller broker loses power: a controller failover on the survivors, as
    ``controller_kill`` (ZooKeeper mode's: a KRaft cluster's controller is no broker --
    ``quorum_leader_power_failure``)."""

    kind: ClassVar[str] = "controller_power_failure"
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY


@register_fault
@dataclass
class QuorumLeaderPowerFailure(QuorumLeaderKill):
    """The active KRaft controller loses power: killed and its metadata log's unsynced writes
    dropped, then as ``quorum_leader_kill`` (another voter wins the next epoch). KafkaRaftClient
    flushes its log before it acknowledges an append (``appendAsLeader`` → ``flushLeaderLog``,
    a follower's ``appendAsFollower`` → ``log.flush``), so nothing committed may be lost."""

    kind: ClassVar[str] = "quorum_leader_power_failure"
    # A migrating cluster's controllers are not on the layer (harness.local.migration).
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    requires: ClassVar[frozenset[Capability]] = QuorumLeaderKill.requires | {Capability.POWER_FAILURE}
    _lost: dict[int, dict[str, Any]] = field(default_factory=dict, init=False)

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        return {"dropped": {str(n): report for n, report in self._lost.items()}} if self._lost else None

    def _take_down(self, env: FaultEnv, leader: int) -> None:
        cluster = cast(PowerFailer, require_capability(env, Capability.POWER_FAILURE, self.kind))
        self._lost[leader] = _dropped(cluster.power_fail_node(leader))


KILLS_ITS_VOTER.add(QuorumLeaderPowerFailure.kind)
register_generator(GeneratorSide(PowerFailure.kind, 2, take_down, down_candidates(PowerFailure.kind, 2),
                                 opt_in=True, filesystem=LAZYFS))
register_generator(GeneratorSide(ControllerPowerFailure.kind, 1, take_down,
                                 controller_candidates(ControllerPowerFailure.kind), opt_in=True, filesystem=LAZYFS))
register_generator(GeneratorSide(QuorumLeaderPowerFailure.kind, 1, quorum_rule,
                                 quorum_candidates(QuorumLeaderPowerFailure.kind), opt_in=True, filesystem=LAZYFS))


# --- disk_stall ---------------------------------------------------------------------------------

STALLED_OPS = ("write", "fsync", "read")
MAX_STALL_MS = 1000  # per operation
MAX_STALL_S = 30.0


@register_fault
@dataclass
class DiskStall(FaultBase):
    """Every ``op`` (write, the default; fsync; read) under the target brokers' data directories
    takes ``delay_ms`` longer (at most 1 s) for ``seconds`` (default 5, at most 30), then the disk
    is plain again: a slow disk. The controller sees nothing -- the broker's ZooKeeper session and
    KRaft heartbeats run on threads that touch no log -- and a follower slowed so keeps the ISR:
    its next fetch asks from the leader's end offset at its previous fetch, which is "caught up"
    (``Partition.updateFollowerFetchState`` → ``Replica.updateFetchStateOrThrow``, 3.9), unless a
    stall nears ``replica.lag.time.max.ms`` (30 s), which the bounds keep it from. Its cost is the
    clients' latency, measured (``client_windows``)."""

    op: str = "write"
    delay_ms: int = 200
    seconds: float = 5.0
    kind: ClassVar[str] = "disk_stall"
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.DISK_FAULTS})
    kafka_waits: ClassVar[FaultWaits] = PLAIN  # a deliberate, bounded stall
    client_windows: ClassVar[bool] = True

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.op}/{self.delay_ms}ms"

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> DiskStall:
        reject_unknown_options(cls.kind, options, ("op", "delay_ms", "seconds"))
        op = options.get("op", "write")
        if op not in STALLED_OPS:
            raise UsageError(f"{cls.kind}: 'op' must be one of {', '.join(STALLED_OPS)}, not {op!r}")
        delay = options.get("delay_ms", 200)
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 < delay <= MAX_STALL_MS:
            raise UsageError(f"{cls.kind}: 'delay_ms' must be an integer in (0, {MAX_STALL_MS}], not {delay!r}")
        seconds = options.get("seconds", 5.0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_STALL_S:
            raise UsageError(f"{cls.kind}: 'seconds' must be a number in (0, {MAX_STALL_S:g}], not {seconds!r}")
        return cls(target, str(op), int(delay), float(seconds))

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        disks = cast(DiskFaulter, require_capability(env, Capability.DISK_FAULTS, self.kind))
        op: Literal["read", "write", "fsync"] = "write" if self.op == "write" else "fsync" if self.op == "fsync" else "read"
        for b in self.target.brokers:
            disks.disk_fault(b, [IoRule(op, "*", delay_ms=self.delay_ms)])
        try:
            time.sleep(self.seconds)  # the fault itself: a bounded, deliberate stall
        finally:
            disks.clear_disk_faults()


def _stall_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    free, _ = model.drawable()
    if not free:
        return []
    return [Step(DiskStall.kind, Brokers((draw.rng.choice(free),)),
                 {"op": draw.rng.choice(STALLED_OPS), "delay_ms": draw.rng.choice((50, 200, 1000))})]


def _stall(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    model.need_free(step.fault, target, downs=False)  # the broker runs on, slowly


register_generator(GeneratorSide(DiskStall.kind, 1, _stall, _stall_candidates, opt_in=True, filesystem=LAZYFS))


# --- disk_error ---------------------------------------------------------------------------------

ERRORS = ("EIO", "ENOSPC")
# Which files fail. Not the index files: Kafka writes them through a memory map, whose pages
# reach the filesystem only when it flushes them (a segment roll, a flush.*), so when Kafka would
# meet the error is not bounded.
FILES = {"all": "*", "log": "*.log", "checkpoint": "*checkpoint*"}
_DISK_OPTIONS = frozenset({"error", "files"})


@dataclass
class DiskError(LogDirFailureFault):
    """Writes and fsyncs under one log directory of the target broker fail with ``error`` (EIO or
    ENOSPC) on ``files`` (all, the segments' ``.log`` files, or the checkpoint files); the
    directory (chosen as ``log_dir_failure`` chooses it) goes offline, or the broker halts when
    it was its last. Healed like ``log_dir_failure``: the errors stop and the broker restarts."""

    error: str = "EIO"
    files: str = "all"
    kind: ClassVar[str] = "disk_error"
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.LOG_DIR_FAILURE, Capability.BROKER_CONTROL,
                                                           Capability.DISK_FAULTS})

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.error}/{self.files}"

    def rules(self, log_dirs: list[str], index: int) -> list[IoRule]:
        """The failing writes: the directory's files (relative to the node's data directory,
        which is the one log directory when there is one)."""
        under = "" if len(log_dirs) == 1 else f"{PurePath(log_dirs[index]).name}/"
        error: Literal["EIO", "ENOSPC"] = "EIO" if self.error == "EIO" else "ENOSPC"
        glob = f"{under}{FILES[self.files]}"
        return [IoRule("write", glob, error=error), IoRule("fsync", glob, error=error)]

    def inject(self, env: FaultEnv) -> None:
        if self._index is None:
            self.prepare(env)
        assert self._index is not None
        dirs = cast(LogDirFailer, require_capability(env, Capability.LOG_DIR_FAILURE, self.kind))
        disks = cast(DiskFaulter, require_capability(env, Capability.DISK_FAULTS, self.kind))
        disks.disk_fault(self.broker, self.rules(dirs.log_dirs(self.broker), self._index))
        self._failed = True

    def heal(self, env: FaultEnv) -> None:
        cast(DiskFaulter, require_capability(env, Capability.DISK_FAULTS, self.kind)).clear_disk_faults()
        super().heal(env)


@dataclass
class DiskErrorRepair(LogDirRepair):
    """``variant: heal``: the errors stop, then the broker restarts (``log_dir_failure``'s repair
    and its oracle events)."""

    kind: ClassVar[str] = "disk_error"
    requires: ClassVar[frozenset[Capability]] = DiskError.requires

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    def inject(self, env: FaultEnv) -> None:
        cast(DiskFaulter, require_capability(env, Capability.DISK_FAULTS, self.kind)).clear_disk_faults()
        super().inject(env)


def disk_error_fault(target: Target, options: Mapping[str, Any], topics: StepTopics) -> Fault:
    """``log_dir_failure``'s options (which directory; ``variant: heal``) plus ``error`` and
    ``files``."""
    error = options.get("error", "EIO")
    if error not in ERRORS:
        raise UsageError(f"disk_error: 'error' must be one of {', '.join(ERRORS)}, not {error!r}")
    files = options.get("files", "all")
    if files not in FILES:
        raise UsageError(f"disk_error: 'files' must be one of {', '.join(FILES)}, not {files!r}")
    inner = log_dir_fault(target, {k: v for k, v in options.items() if k not in _DISK_OPTIONS}, topics)
    if not isinstance(inner, LogDirFailureFault):
        return DiskErrorRepair(target)
    return DiskError(target, inner.topic, inner.partition, inner.directory, error=str(error), files=str(files))


register_fault(DiskError, build=disk_error_fault)


def _disk_error_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    """As ``log_dir_failure``'s (directory 0 of a free broker, or the heal), with a drawn error."""
    if model.failed_dir:
        return [Step(DiskError.kind, Brokers((draw.rng.choice(sorted(model.failed_dir)),)), {"variant": HEAL})]
    free, _ = model.drawable()
    if not free or model.unknown_down:
        return []
    return [Step(DiskError.kind, Brokers((draw.rng.choice(free),)),
                 {"dir": 0, "error": draw.rng.choice(ERRORS), "files": draw.rng.choice(sorted(FILES))})]


register_generator(GeneratorSide(DiskError.kind, 1, fail_log_dir, _disk_error_candidates, opt_in=True,
                                 cluster_overrides=GENERATED_CLUSTER, log_dirs=2, filesystem=LAZYFS))

"""ZooKeeper mode against KRaft, side by side (``kafka-chaos bench modes``): the same faults, the
same workload and cluster size in every *column* -- a mode on a release, e.g. ZooKeeper 3.9.2,
KRaft 3.9.2, KRaft 4.4.0 -- each fault ``repeat`` times per column and timeout profile, through the
ordinary scenario runner -- so every iteration is also checked against the oracle of its mode and
release, and a failed check is reported, not measured.

Faults (scenario in ZooKeeper mode / in KRaft mode):

* ``hard_kill``: ``leader_hard_kill`` / ``leader_hard_kill_kraft`` -- SIGKILL of t-0's leader;
* ``controlled_shutdown``: ``controlled_shutdown_leader`` / ``..._kraft``;
* ``controller_failover``: ``controller_kill`` (the controller is a broker: its partitions move
  too) / ``quorum_leader_kill`` (3 voters: no partition moves).

Timeout profiles, the same in every column: ``matched`` -- every column detects a silent broker
after 6 s (ZooKeeper session ``zookeeper.session.timeout.ms`` = KRaft ``broker.session.timeout.ms``
= 6000, heartbeat 2 s: the harness's test values, layer 2 of ``harness.config``, on every release);
``defaults`` -- each column's timeouts as its release ships them (:func:`profile_overrides`).

Phases per moved partition come from the runner's ``latency`` records (detection: the session
ended -- ``/brokers/ids`` gone, or the fence record; election: the new leader written -- the state
znode, or the PartitionChangeRecord; propagation: every live broker's metadata shows it;
first_produce: the producer's first ack after the fault; client_gap: its longest ack gap). A
controller failover also gets ``new_controller``: the fault to the first new controller (the
``/controller`` znode, or the LEADER_CHANGE record), from the stored history. The summary is pure.

A bench scenario is named ``<catalogue name>.<profile>.<release>`` (the columns of one run differ
by release, and a run's scenario names must differ); runs before columns had a release named
``<catalogue name>.<profile>`` and take it from their records (:func:`parse_scenario`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_chaos.benches.failover import percentile
from kafka_chaos.common.errors import UsageError
from kafka_chaos.records.schema import Record

FAULTS: Mapping[str, tuple[str, str]] = {
    "hard_kill": ("leader_hard_kill", "leader_hard_kill_kraft"),
    "controlled_shutdown": ("controlled_shutdown_leader", "controlled_shutdown_leader_kraft"),
    "controller_failover": ("controller_kill", "quorum_leader_kill"),
}
MODES = ("zookeeper", "kraft")
MODE_LABELS: Mapping[str, str] = {"zookeeper": "ZooKeeper", "kraft": "KRaft"}
PROFILES = ("matched", "defaults")
PHASES = ("detection", "election", "propagation", "first_produce", "client_gap", "new_controller")
SEPARATOR = "."  # scenario names: <catalogue name>.<profile>.<release> (catalogue names hold no dot)
DEFAULT_RELEASE = "3.9.2"
_RELEASE = re.compile(r"\d+\.\d+\.\d+")

# Property names (constants: a misspelt one is silently ignored by Kafka).
ZOOKEEPER_SESSION_TIMEOUT_MS = "zookeeper.session.timeout.ms"
BROKER_SESSION_TIMEOUT_MS = "broker.session.timeout.ms"
BROKER_HEARTBEAT_INTERVAL_MS = "broker.heartbeat.interval.ms"
# The timeouts that decide when a silent broker is detected, as the harness runs them on every
# release (``harness.config``: TEST_SESSION_TIMEOUT_MS for ZooKeeper mode, ``kraft_defaults()``).
MATCHED: Mapping[str, Mapping[str, str]] = {
    "zookeeper": {ZOOKEEPER_SESSION_TIMEOUT_MS: "6000"},
    "kraft": {BROKER_SESSION_TIMEOUT_MS: "6000", BROKER_HEARTBEAT_INTERVAL_MS: "2000"},
}


@dataclass(frozen=True)
class Column:
    """One column of the comparison: a cluster mode on a Kafka release."""

    mode: str
    release: str

    @property
    def label(self) -> str:
        return f"{MODE_LABELS[self.mode]} {self.release}"

    def __str__(self) -> str:
        return f"{self.mode}:{self.release}"


def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


def column_order(column: Column) -> tuple[int, tuple[int, ...]]:
    """ZooKeeper mode first, then by release: the old world on the left."""
    return MODES.index(column.mode), release_key(column.release)


def parse_column(text: str) -> Column:
    """``MODE:RELEASE`` (``kraft:4.4.0``); one clear UsageError line otherwise. Whether the release
    runs that mode is the harness's question (``harness.config.check_kraft_release``)."""
    mode, sep, release = text.strip().partition(":")
    if not sep or mode not in MODES or not _RELEASE.fullmatch(release):
        raise UsageError(f"--column {text!r}: expected MODE:RELEASE with MODE one of {', '.join(MODES)} and a "
                         f"release like 3.9.2, e.g. kraft:4.4.0")
    return Column(mode, release)


def columns_of(given: Sequence[str], kraft_releases: Sequence[str], release: str) -> list[Column]:
    """The run's columns: ``--column`` ones, or ZooKeeper and KRaft on ``release``; then a KRaft
    column per ``--kraft-release``; in :func:`column_order`, each once."""
    columns = [parse_column(c) for c in given] or [Column(m, release) for m in MODES]
    columns += [parse_column(f"kraft:{r}") for r in kraft_releases]
    return sorted(dict.fromkeys(columns), key=column_order)


def shipped_timeouts(column: Column) -> dict[str, str]:
    """Failure detection as ``column``'s release ships it. ZooKeeper mode: the session, 6 s before
    2.5.0 and 18 s from it (KIP-537; 3.9.2 ``ZkConfigs.ZK_SESSION_TIMEOUT_MS`` line 86). KRaft:
    broker session 9 s, heartbeat 2 s on every line: 3.9.2 ``server/config/KRaftConfigs.java``
    lines 48 and 52; 4.0.0 the same file, lines 45 and 49; moved to ``raft/KRaftConfigs.java`` by
    4.3 (4.3.1 lines 40 and 44); 4.4.0, which publishes no sources, the same constants
    (``javap -constants org.apache.kafka.raft.KRaftConfigs``: 9000 and 2000)."""
    if column.mode == "zookeeper":
        return {ZOOKEEPER_SESSION_TIMEOUT_MS: "6000" if release_key(column.release) < (2, 5) else "18000"}
    return {BROKER_SESSION_TIMEOUT_MS: "9000", BROKER_HEARTBEAT_INTERVAL_MS: "2000"}


def profile_overrides(profile: str, column: Column) -> dict[str, str]:
    """The broker settings a profile states for a column (over the harness's own)."""
    return dict(MATCHED[column.mode]) if profile == "matched" else shipped_timeouts(column)


def scenario_name(fault: str, column: Column, profile: str) -> str:
    return SEPARATOR.join((FAULTS[fault][MODES.index(column.mode)], profile, column.release))


def parse_scenario(name: str, release: str | None = None) -> tuple[str, Column, str] | None:
    """(fault, column, profile) of a bench scenario's name; None for any other. A name without a
    release (runs before columns) takes ``release``, the record's; None when that is not given."""
    base, sep, rest = name.partition(SEPARATOR)
    profile, _, named = rest.partition(SEPARATOR)
    named = named or (release or "")
    if not sep or profile not in PROFILES or not _RELEASE.fullmatch(named):
        return None
    for fault, names in FAULTS.items():
        if base in names:
            return fault, Column(MODES[names.index(base)], named), profile
    return None


@dataclass(frozen=True)
class Sample:
    fault: str
    column: Column
    profile: str
    phase: str
    ms: float


@dataclass(frozen=True)
class Cell:
    fault: str
    mode: str
    release: str
    profile: str
    phase: str
    n: int
    median_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float

    @property
    def column(self) -> Column:
        return Column(self.mode, self.release)


def latency_samples(records: Iterable[Record]) -> list[Sample]:
    """One sample per phase of every ``latency`` record of a bench scenario."""
    out = []
    for r in records:
        if r.check != "latency":
            continue
        key = parse_scenario(r.scenario, r.kafka_version)
        if key is None:
            continue
        for phase, ms in (r.latency_ms or {}).items():
            if phase in PHASES and ms is not None:
                out.append(Sample(*key, phase, float(ms)))
    return out


# (scenario, its release, fault time, controller before, [(event time, controller named)])
ControllerStep = tuple[str, str, float, int | None, Sequence[tuple[float, int | None]]]


def controller_samples(steps: Iterable[ControllerStep]) -> list[Sample]:
    """``new_controller`` per controller-failover step: ms from the fault to the first other
    controller named after it."""
    out = []
    for scenario, release, fault_at, before, changes in steps:
        key = parse_scenario(scenario, release)
        if key is None or key[0] != "controller_failover":
            continue
        firsts = [at for at, who in changes if at >= fault_at and who is not None and who != before]
        if firsts:
            out.append(Sample(*key, "new_controller", round((min(firsts) - fault_at) * 1000.0, 1)))
    return out


def history_controller_changes(path: Path) -> list[ControllerStep]:
    """The fault steps of a run's ``history.jsonl`` as :func:`controller_samples` takes them."""
    from kafka_chaos.harness.zkevents import ControllerChanged
    from kafka_chaos.scenarios.history.observations import StepObserved, read_history

    steps: list[ControllerStep] = []
    for obs in read_history(path):
        if isinstance(obs, StepObserved) and obs.index is not None:
            changes = [(e.at, e.controller) for e in obs.events if isinstance(e, ControllerChanged)]
            steps.append((obs.run.scenario, obs.run.kafka_version, obs.fault_at, obs.before.controller, changes))
    return steps


def summarise(samples: Iterable[Sample]) -> list[Cell]:
    groups: dict[tuple[str, Column, str, str], list[float]] = {}
    for s in samples:
        groups.setdefault((s.fault, s.column, s.profile, s.phase), []).append(s.ms)
    cells = [Cell(f, col.mode, col.release, p, ph, len(v), round(percentile(v, 50), 1), round(percentile(v, 90), 1),
                  min(v), max(v))
             for (f, col, p, ph), v in groups.items()]
    return sorted(cells, key=lambda c: (PROFILES.index(c.profile), list(FAULTS).index(c.fault),
                                        PHASES.index(c.phase), column_order(c.column)))


def columns_in(cells: Iterable[Cell]) -> list[Column]:
    return sorted({c.column for c in cells}, key=column_order)


def table(cells: Sequence[Cell]) -> str:
    """Markdown: one row per profile, fault and phase, the columns side by side (median / p90 ms, n)."""
    columns = columns_in(cells)
    rows: dict[tuple[str, str, str], dict[Column, Cell]] = {}
    for c in cells:
        rows.setdefault((c.profile, c.fault, c.phase), {})[c.column] = c

    def show(c: Cell | None) -> str:
        return "–" if c is None else f"{c.median_ms:,.0f} / {c.p90_ms:,.0f} (n={c.n})"

    lines = ["| timeouts | fault | phase | " + " | ".join(f"{col.label} median / p90 ms" for col in columns) + " |",
             "| --- | --- | --- |" + " --- |" * len(columns)]
    for (profile, fault, phase), by_column in rows.items():
        lines.append(f"| {profile} | {fault} | {phase} | "
                     + " | ".join(show(by_column.get(col)) for col in columns) + " |")
    return "\n".join(lines)


def settings_table(columns: Sequence[Column], profiles: Sequence[str]) -> str:
    """Markdown: what each profile sets in each column, so a reader sees "matched" is matched."""
    lines = ["| timeouts | " + " | ".join(col.label for col in columns) + " |", "| --- |" + " --- |" * len(columns)]
    for profile in profiles:
        lines.append(f"| {profile} | " + " | ".join(
            ", ".join(f"`{k}`={v}" for k, v in sorted(profile_overrides(profile, col).items())) for col in columns)
            + " |")
    return "\n".join(lines)


def write_summary(out: Path, cells: Sequence[Cell]) -> None:
    columns = columns_in(cells)
    profiles = [p for p in PROFILES if any(c.profile == p for c in cells)]
    settings = {p: {str(col): profile_overrides(p, col) for col in columns} for p in profiles}
    (out / "modes.json").write_text(json.dumps({"columns": [str(c) for c in columns], "settings": settings,
                                                "cells": [asdict(c) for c in cells]}, indent=1) + "\n")
    (out / "modes.md").write_text(settings_table(columns, profiles) + "\n\n" + table(cells) + "\n")


def chart(out: Path, cells: Sequence[Cell]) -> Path:
    """Grouped bars per profile: each fault × phase, the columns side by side (median, p90 whisker)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = columns_in(cells)
    width = 0.8 / len(columns)
    profiles = [p for p in PROFILES if any(c.profile == p for c in cells)]
    fig, axes = plt.subplots(len(profiles), 1, figsize=(11, 5.0 * len(profiles)), squeeze=False)
    for ax, profile in zip(axes[:, 0], profiles):
        keys = list(dict.fromkeys((c.fault, c.phase) for c in cells if c.profile == profile))
        for i, column in enumerate(columns):
            offset = (i - (len(columns) - 1) / 2) * width
            found = {(c.fault, c.phase): c for c in cells if c.profile == profile and c.column == column}
            xs = [j + offset for j, k in enumerate(keys) if k in found]
            med = [found[k].median_ms for k in keys if k in found]
            err = [found[k].p90_ms - found[k].median_ms for k in keys if k in found]
            ax.bar(xs, med, width=width, yerr=[[0] * len(err), err], capsize=3, label=column.label)
        ax.set_xticks(range(len(keys)), [f"{f} {p}" for f, p in keys], fontsize=7, rotation=40, ha="right")
        # log: a controlled shutdown's tens of ms beside a kill's seconds
        ax.set_yscale("log")
        ax.set_ylabel("ms after the fault (median, p90; log)")
        ax.set_title(f"3 brokers, timeouts: {profile}")
        ax.legend()
    fig.tight_layout()
    path = out / "modes.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

"""ZooKeeper mode against KRaft, side by side (``kafka-chaos bench modes``): the same faults, the
same workload and cluster size on both modes of one release, each fault ``repeat`` times per
mode and timeout profile, through the ordinary scenario runner -- so every iteration is also
checked against the oracle of its mode, and a failed check is reported, not measured.

Faults (scenario in ZooKeeper mode / in KRaft mode):

* ``hard_kill``: ``leader_hard_kill`` / ``leader_hard_kill_kraft`` -- SIGKILL of t-0's leader;
* ``controlled_shutdown``: ``controlled_shutdown_leader`` / ``..._kraft``;
* ``controller_failover``: ``controller_kill`` (the controller is a broker: its partitions move
  too) / ``quorum_leader_kill`` (3 voters: no partition moves).

Timeout profiles: ``matched`` -- both detect a silent broker after 6 s (ZooKeeper session
``zookeeper.session.timeout.ms`` = KRaft ``broker.session.timeout.ms`` = 6000, the project's test
values); ``defaults`` -- each as Kafka 3.9 ships it (ZooKeeper session 18 s, KIP-537; broker session
9 s, heartbeat 2 s, ``KRaftConfigs``).

Phases per moved partition come from the runner's ``latency`` records (detection: the session
ended -- ``/brokers/ids`` gone, or the fence record; election: the new leader written -- the state
znode, or the PartitionChangeRecord; propagation: every live broker's metadata shows it;
first_produce: the producer's first ack after the fault; client_gap: its longest ack gap). A
controller failover also gets ``new_controller``: the fault to the first new controller (the
``/controller`` znode, or the LEADER_CHANGE record), from the stored history. The summary is pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_chaos.benches.failover import percentile
from kafka_chaos.records.schema import Record

FAULTS: Mapping[str, tuple[str, str]] = {
    "hard_kill": ("leader_hard_kill", "leader_hard_kill_kraft"),
    "controlled_shutdown": ("controlled_shutdown_leader", "controlled_shutdown_leader_kraft"),
    "controller_failover": ("controller_kill", "quorum_leader_kill"),
}
MODES = ("zookeeper", "kraft")
# Per profile and mode: the overrides of the project's test defaults.
PROFILES: Mapping[str, Mapping[str, Mapping[str, str]]] = {
    "matched": {"zookeeper": {}, "kraft": {}},
    "defaults": {"zookeeper": {"zookeeper.session.timeout.ms": "18000"},
                 "kraft": {"broker.session.timeout.ms": "9000", "broker.heartbeat.interval.ms": "2000"}},
}
PHASES = ("detection", "election", "propagation", "first_produce", "client_gap", "new_controller")
SEPARATOR = "."  # scenario names: <catalogue name>.<profile> (a topic name may hold a dot)


def scenario_name(fault: str, mode: str, profile: str) -> str:
    return f"{FAULTS[fault][MODES.index(mode)]}{SEPARATOR}{profile}"


def parse_scenario(name: str) -> tuple[str, str, str] | None:
    """(fault, mode, profile) of a bench scenario's name; None for any other."""
    base, sep, profile = name.partition(SEPARATOR)
    if not sep or profile not in PROFILES:
        return None
    for fault, names in FAULTS.items():
        if base in names:
            return fault, MODES[names.index(base)], profile
    return None


@dataclass(frozen=True)
class Sample:
    fault: str
    mode: str
    profile: str
    phase: str
    ms: float


@dataclass(frozen=True)
class Cell:
    fault: str
    mode: str
    profile: str
    phase: str
    n: int
    median_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float


def latency_samples(records: Iterable[Record]) -> list[Sample]:
    """One sample per phase of every ``latency`` record of a bench scenario."""
    out = []
    for r in records:
        if r.check != "latency":
            continue
        key = parse_scenario(r.scenario)
        if key is None:
            continue
        for phase, ms in (r.latency_ms or {}).items():
            if phase in PHASES and ms is not None:
                out.append(Sample(*key, phase, float(ms)))
    return out


def controller_samples(steps: Iterable[tuple[str, float, int | None, Sequence[tuple[float, int | None]]]]) -> list[Sample]:
    """``new_controller`` per controller-failover step: (scenario, fault time, controller before,
    [(event time, controller named)]) -> ms to the first other controller named after the fault."""
    out = []
    for scenario, fault_at, before, changes in steps:
        key = parse_scenario(scenario)
        if key is None or key[0] != "controller_failover":
            continue
        firsts = [at for at, who in changes if at >= fault_at and who is not None and who != before]
        if firsts:
            out.append(Sample(*key, "new_controller", round((min(firsts) - fault_at) * 1000.0, 1)))
    return out


def history_controller_changes(path: Path) -> list[tuple[str, float, int | None, list[tuple[float, int | None]]]]:
    """The fault steps of a run's ``history.jsonl`` as :func:`controller_samples` takes them."""
    from kafka_chaos.harness.zkevents import ControllerChanged
    from kafka_chaos.scenarios.history.observations import StepObserved, read_history

    steps = []
    for obs in read_history(path):
        if isinstance(obs, StepObserved) and obs.index is not None:
            changes = [(e.at, e.controller) for e in obs.events if isinstance(e, ControllerChanged)]
            steps.append((obs.run.scenario, obs.fault_at, obs.before.controller, changes))
    return steps


def summarise(samples: Iterable[Sample]) -> list[Cell]:
    groups: dict[tuple[str, str, str, str], list[float]] = {}
    for s in samples:
        groups.setdefault((s.fault, s.mode, s.profile, s.phase), []).append(s.ms)
    order = {name: i for i, name in enumerate(PHASES)}
    cells = [Cell(f, m, p, ph, len(v), round(percentile(v, 50), 1), round(percentile(v, 90), 1), min(v), max(v))
             for (f, m, p, ph), v in groups.items()]
    return sorted(cells, key=lambda c: (list(PROFILES).index(c.profile), list(FAULTS).index(c.fault),
                                        order[c.phase], MODES.index(c.mode)))


def table(cells: Sequence[Cell]) -> str:
    """Markdown: one row per profile, fault and phase, ZooKeeper beside KRaft (median / p90 ms, n)."""
    rows: dict[tuple[str, str, str], dict[str, Cell]] = {}
    for c in cells:
        rows.setdefault((c.profile, c.fault, c.phase), {})[c.mode] = c

    def show(c: Cell | None) -> str:
        return "–" if c is None else f"{c.median_ms:,.0f} / {c.p90_ms:,.0f} (n={c.n})"

    lines = ["| timeouts | fault | phase | ZooKeeper median / p90 ms | KRaft median / p90 ms |",
             "| --- | --- | --- | --- | --- |"]
    for (profile, fault, phase), by_mode in rows.items():
        lines.append(f"| {profile} | {fault} | {phase} | {show(by_mode.get('zookeeper'))} | {show(by_mode.get('kraft'))} |")
    return "\n".join(lines)


def write_summary(out: Path, cells: Sequence[Cell]) -> None:
    (out / "modes.json").write_text(json.dumps([asdict(c) for c in cells], indent=1) + "\n")
    (out / "modes.md").write_text(table(cells) + "\n")


def chart(out: Path, cells: Sequence[Cell]) -> Path:
    """Grouped bars per profile: each fault × phase, ZooKeeper beside KRaft (median, p90 whisker)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = [p for p in PROFILES if any(c.profile == p for c in cells)]
    fig, axes = plt.subplots(len(profiles), 1, figsize=(11, 5.0 * len(profiles)), squeeze=False)
    for ax, profile in zip(axes[:, 0], profiles):
        keys = list(dict.fromkeys((c.fault, c.phase) for c in cells if c.profile == profile))
        for offset, mode in ((-0.2, "zookeeper"), (0.2, "kraft")):
            found = {(c.fault, c.phase): c for c in cells if c.profile == profile and c.mode == mode}
            xs = [i + offset for i, k in enumerate(keys) if k in found]
            med = [found[k].median_ms for k in keys if k in found]
            err = [found[k].p90_ms - found[k].median_ms for k in keys if k in found]
            ax.bar(xs, med, width=0.4, yerr=[[0] * len(err), err], capsize=3,
                   label="ZooKeeper" if mode == "zookeeper" else "KRaft")
        ax.set_xticks(range(len(keys)), [f"{f} {p}" for f, p in keys], fontsize=7, rotation=40, ha="right")
        # log: a controlled shutdown's tens of ms beside a kill's seconds
        ax.set_yscale("log")
        ax.set_ylabel("ms after the fault (median, p90; log)")
        ax.set_title(f"Kafka 3.9.2, 3 brokers, timeouts: {profile}")
        ax.legend()
    fig.tight_layout()
    path = out / "modes.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

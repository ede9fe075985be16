"""`kafka-chaos bench failover --partitions 10,100,1000,10000 [--brokers 3,5,9] [--faults
hard_kill,controlled_shutdown,controller_kill] [--repeat N] [--backend local|containers|auto]
[--results DIR]`: time per failover phase against the partition count (:mod:`benches.failover`).

Writes ``DIR/records.jsonl`` (one ``failover_scaling`` measurement per fault iteration),
``DIR/scaling.json`` (median and p99 per fault, broker count, partition count and phase),
``DIR/scaling.png`` (log-log chart) and prints the table.  Starts one cluster at a time (local
JVMs or Docker containers): run it under the cluster lock on shared machines.  ``bench kip291``
is :func:`run_kip291`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import UsageError

if TYPE_CHECKING:
    from kafka_chaos.records.schema import Record
    from kafka_chaos.benches.failover import Cell
    from kafka_chaos.benches.modes import Column

MAX_PARTITIONS = 20000


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser("bench", help="benchmarks against real clusters (failover scaling, KIP-291)",
                            description="Benchmarks against real clusters, local JVMs or Docker containers (--backend).")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    failover = benches.add_parser(
        "failover", help="time per failover phase vs partition count",
        description="Per broker count and partition count, a fresh cluster with one topic; each fault runs "
                    "--repeat times; records, a scaling table and a log-log chart go to --results.")
    failover.add_argument("--partitions", type=_int_list("--partitions", 1, MAX_PARTITIONS),
                          help="partition counts, e.g. 10,100,1000,10000 (required unless --from)")
    failover.add_argument("--brokers", default=[3], type=_int_list("--brokers", 1, 9),
                          help="broker counts [default: 3]")
    failover.add_argument("--faults", default=None, help="hard_kill,controlled_shutdown,controller_kill [default: all]")
    failover.add_argument("--repeat", type=int, default=3, help="iterations per fault [default: 3]")
    failover.add_argument("--timeouts", choices=("test", "release"), default="test",
                          help="the project's 6 s session timeout, or the session and replica-lag timeouts the "
                               "release ships (2.4: 6 s / 10 s; 2.5+: 18 s / 30 s) [default: test]")
    _backend_argument(failover)
    failover.add_argument("--results", type=Path, default=None, metavar="DIR",
                          help="output directory [default: bench-failover-<UTC time>]")
    failover.add_argument("--from", dest="sources", type=Path, nargs="+", default=None, metavar="DIR",
                          help="start no cluster: summarise the records of earlier runs (merged) into --results")
    failover.set_defaults(func=run)
    kip291 = benches.add_parser(
        "kip291", help="controller requests under a heavy produce load, with and without KIP-291's listener",
        description="Per configuration (without, with control.plane.listener.name) a fresh 3-broker cluster with "
                    "one network and one I/O thread under a heavy acks=all produce load; each fault --repeat times; "
                    "per LeaderAndIsr / UpdateMetadata request its queue and total time on the broker (request log) "
                    "and from the controller's send; records and a table go to --results (docs/kip-291.md).")
    kip291.add_argument("--repeat", type=int, default=5, help="iterations per fault and configuration [default: 5]")
    kip291.add_argument("--faults", default="hard_kill", help="hard_kill,controlled_shutdown [default: hard_kill]")
    kip291.add_argument("--configurations", default="without,with",
                        help="without,with (the control-plane listener) [default: both]")
    kip291.add_argument("--partitions", type=int, default=60, help="partitions of the loaded topic [default: 60]")
    kip291.add_argument("--producers", type=int, default=12, help="producer clients (one connection per broker "
                                                                   "each) [default: 12]")
    kip291.add_argument("--acks", choices=("all", "1"), default="all",
                        help="the load's acks; 1 keeps the queues full through a hard kill [default: all]")
    _backend_argument(kip291)
    kip291.add_argument("--warmup", type=float, default=10.0, metavar="S",
                        help="seconds of steady load before each fault [default: 10]")
    kip291.add_argument("--results", type=Path, default=None, metavar="DIR",
                        help="output directory [default: bench-kip291-<UTC time>]")
    kip291.add_argument("--from", dest="sources", type=Path, nargs="+", default=None, metavar="DIR",
                        help="start no cluster: summarise the records of earlier runs (merged) into --results")
    kip291.set_defaults(func=run_kip291)
    modes = benches.add_parser(
        "modes", help="ZooKeeper mode against KRaft, on one release or several: the same faults, phase by phase",
        description="The same faults, workload and cluster size (3 brokers) in every column (a mode on a release: "
                    "ZooKeeper and KRaft on --kafka-version unless --column; --kraft-release adds KRaft on another), "
                    "each --repeat times per column and timeout profile, every iteration checked against its "
                    "mode's oracle; modes.json, modes.md (the table) and modes.png go to --results "
                    "(docs/zk-vs-kraft.md). Split a long run into chunks (--faults, --timeouts, --column, the same "
                    "--seed) and merge them with --from.")
    modes.add_argument("--faults", default="hard_kill,controlled_shutdown,controller_failover",
                       help="hard_kill,controlled_shutdown,controller_failover [default: all]")
    modes.add_argument("--repeat", type=int, default=10, help="iterations per fault, column and profile [default: 10]")
    modes.add_argument("--timeouts", default="matched,defaults",
                       help="matched (every column detects a silent broker after 6 s), defaults (as each release "
                            "ships them: ZooKeeper 18 s session, KRaft 9 s broker session) [default: both]")
    modes.add_argument("--column", action="append", default=[], metavar="MODE:RELEASE",
                       help="a column, e.g. zookeeper:3.9.2 or kraft:4.4.0; repeat for more "
                            "[default: zookeeper and kraft on --kafka-version]")
    modes.add_argument("--kraft-release", action="append", default=[], metavar="V",
                       help="add a KRaft column on release V, e.g. 4.4.0 (repeatable)")
    modes.add_argument("--seed", type=int, default=1, help="[default: 1]")
    modes.add_argument("--kafka-version", default=None, metavar="V",
                       help="the default columns' release, 3.6 to 3.9 (both modes) [default: 3.9.2]")
    modes.add_argument("--results", type=Path, default=None, metavar="DIR",
                       help="output directory [default: bench-modes-<UTC time>]")
    modes.add_argument("--from", dest="sources", type=Path, nargs="+", default=None, metavar="DIR",
                       help="start no cluster: summarise earlier runs (merged) into --results")
    modes.set_defaults(func=run_modes)


def _backend_argument(parser: argparse.ArgumentParser) -> None:
    # Checked by harness.backends.resolve_backend (one line, exit 2), not argparse's choices.
    parser.add_argument("--backend", default="local", metavar="local|containers|auto",
                        help="JVMs on loopback or Docker containers (their log dirs mounted from the host); "
                             "auto: containers when a Docker engine answers [default: local]")
    parser.add_argument("--kafka-version", default=None, metavar="V",
                        help="a ZooKeeper-mode Kafka release, 2.4.0 to 3.9.x [default: 3.9.2]")
    parser.add_argument("--kafka-home", default=None, metavar="DIR", help="an extracted Kafka tarball instead of Maven")


def _int_list(flag: str, low: int, high: int) -> Callable[[str], list[int]]:
    def parse(text: str) -> list[int]:
        try:
            values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes comma-separated integers, got {text!r}") from None
        bad = [v for v in values if not low <= v <= high]
        if not values or bad:
            raise argparse.ArgumentTypeError(f"{flag}: each value must be between {low} and {high}, got {text!r}")
        return sorted(set(values))
    return parse


def _faults(text: str | None) -> list[str]:
    from kafka_chaos.benches.failover import FAULTS

    return list(FAULTS) if text is None else _names("--faults", text, FAULTS)


def run(args: argparse.Namespace) -> int:
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.results.scaling_chart import scaling_chart
    from kafka_chaos.records.writer import RecordWriter
    from kafka_chaos.benches.failover import CHART_PHASES, BenchOptions, run_bench, summarise

    faults = _faults(args.faults)
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.partitions is None and args.sources is None:
        raise UsageError("--partitions is required (or --from DIR to summarise earlier runs)")
    out, earlier = _results_dir(args, "bench-failover")
    if earlier is not None:
        records = earlier
    else:
        from kafka_chaos.harness.backends import resolve_backend

        options = BenchOptions(partitions=args.partitions, brokers=args.brokers, faults=faults, repeat=args.repeat,
                               backend=resolve_backend(args.backend), timeouts=args.timeouts)
        distribution = resolve_distribution(args.kafka_version, args.kafka_home)
        with RecordWriter(out) as writer:
            writer.write_run_info({"run_id": options.run_id, "command": "bench failover",
                                   "partitions": args.partitions, "brokers": args.brokers, "faults": faults,
                                   "repeat": args.repeat, "backend": options.backend,
                                   "kafka_version": distribution.version, "timeouts": args.timeouts})
            run_bench(options, distribution, writer.write, lambda line: print(line, file=sys.stderr, flush=True))
        records = _records(out)
    cells = summarise(records)
    (out / "scaling.json").write_text(json.dumps([asdict(c) for c in cells], indent=1) + "\n")
    labels = list(dict.fromkeys(c.label for c in cells))  # summarise's order: local, then containers
    chart = scaling_chart(cells, CHART_PHASES, labels, out / "scaling.png",
                          title="The controller's work after it starts (median ms) vs partitions")
    print(_table(cells))
    print(f"records: {out / 'records.jsonl'}; table: {out / 'scaling.json'}; chart: {chart}")
    return 0


def _results_dir(args: argparse.Namespace, prefix: str) -> tuple[Path, list[Record] | None]:
    """Where a bench writes (``--results``, else ``PREFIX-<UTC time>``; refused when not empty),
    and with ``--from`` the earlier runs' records to summarise instead of running."""
    out: Path = args.results or Path(f"{prefix}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--results {out}: exists and is not empty")
    if args.sources is None:
        return out, None
    records = [r for source in args.sources for r in _records(source)]
    out.mkdir(parents=True, exist_ok=True)
    return out, records


def _records(out: Path) -> list[Record]:
    from kafka_chaos.records.schema import Record

    path = out / "records.jsonl"
    if not path.is_file():
        raise UsageError(f"{out}: no records.jsonl here (a results dir of `kafka-chaos bench` has one)")
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                found.append(Record.from_json(line))
    return found


def _table(cells: Sequence[Cell]) -> str:
    width = max([20, *(len(c.label) for c in cells)])  # e.g. "controlled_shutdown containers"
    lines = [f"{'fault':<{width}} {'brokers':>7} {'partitions':>10} {'phase':<26} {'n':>3} {'median ms':>10} {'p99 ms':>10}"]
    for c in cells:
        lines.append(f"{c.label:<{width}} {c.brokers:>7} {c.partitions:>10} {c.phase:<26} {c.samples:>3} "
                     f"{c.median_ms:>10,.1f} {c.p99_ms:>10,.1f}")
    return "\n".join(lines)


def _names(flag: str, text: str, known: Sequence[str]) -> list[str]:
    names = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in names if f not in known]
    if not names or unknown:
        raise UsageError(f"{flag}: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}")
    return list(dict.fromkeys(names))


def run_modes(args: argparse.Namespace) -> int:
    """``bench modes``: the scenarios of :mod:`benches.modes` through the ordinary runner, then the
    side-by-side summary of their latency records and controller changes."""
    from kafka_chaos.benches import modes
    from kafka_chaos.records.writer import iter_records

    faults = _names("--faults", args.faults, list(modes.FAULTS))
    profiles = _names("--timeouts", args.timeouts, list(modes.PROFILES))
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, not {args.repeat}")
    columns = modes.columns_of(args.column, args.kraft_release, args.kafka_version or modes.DEFAULT_RELEASE)
    out = args.results or Path(f"bench-modes-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    sources = list(args.sources or [])
    code = 0
    if not sources:
        code = _run_modes_scenarios(args, faults, profiles, columns, out)
        sources = [out]
    out.mkdir(parents=True, exist_ok=True)
    samples = []
    for src in sources:
        if not (src / "records.jsonl").is_file():
            raise UsageError(f"{src}: no records.jsonl here (a results dir of `kafka-chaos bench modes` has one)")
        samples += modes.latency_samples(iter_records(src / "records.jsonl"))
        if (src / "history.jsonl").exists():
            samples += modes.controller_samples(modes.history_controller_changes(src / "history.jsonl"))
    cells = modes.summarise(samples)
    if not cells:
        raise UsageError(f"no bench-modes measurements in {', '.join(map(str, sources))}")
    modes.write_summary(out, cells)
    chart = modes.chart(out, cells)
    print(modes.table(cells))
    print(f"summary in {out / 'modes.json'}, {out / 'modes.md'}; chart {chart}"
          + ("" if code == 0 else "; some iterations failed a check (see the run's table above)"))
    return code


def _run_modes_scenarios(args: argparse.Namespace, faults: Sequence[str], profiles: Sequence[str],
                         columns: Sequence[Column], out: Path) -> int:
    """Every (profile, column, fault) as a catalogue scenario pinned to the column's release, with
    the profile's timeouts over the scenario's own settings, in one ordinary run."""
    from dataclasses import replace

    from kafka_chaos.app.runs import run_scenarios
    from kafka_chaos.benches import modes
    from kafka_chaos.harness.config import check_kraft_release
    from kafka_chaos.scenarios.plans import catalogue

    for column in columns:  # a 4.x ZooKeeper column: one line, before any cluster
        check_kraft_release(column.mode, column.release)
    scenarios = []
    for profile in profiles:
        for column in columns:
            for fault in faults:
                base = catalogue.by_names([modes.FAULTS[fault][modes.MODES.index(column.mode)]])[0]
                overrides = {**base.needs.overrides_dict, **modes.profile_overrides(profile, column)}
                needs = replace(base.needs, overrides=tuple(sorted(overrides.items())), kafka_version=column.release)
                scenarios.append(replace(base, name=modes.scenario_name(fault, column, profile), needs=needs))
    return run_scenarios(scenarios, seed=args.seed, results_dir=out, iterations=args.repeat,
                         kafka_version=columns[0].release, report=False, suite=None,
                         command=["kafka-chaos", *sys.argv[1:]])


def run_kip291(args: argparse.Namespace) -> int:
    from kafka_chaos.benches.kip291 import CONFIGURATIONS, FAULTS, Kip291Options, run_bench, summarise, table
    from kafka_chaos.benches.produce_load import LoadSettings

    faults = _names("--faults", args.faults, FAULTS)
    configurations = _names("--configurations", args.configurations, CONFIGURATIONS)
    for flag, value, low, high in (("--repeat", args.repeat, 1, 100), ("--partitions", args.partitions, 3, 3000),
                                   ("--producers", args.producers, 1, 64)):
        if not low <= value <= high:
            raise UsageError(f"{flag} must be between {low} and {high}, got {value}")
    if not 0 <= args.warmup <= 600:
        raise UsageError(f"--warmup must be between 0 and 600 seconds, got {args.warmup}")
    out, earlier = _results_dir(args, "bench-kip291")
    if earlier is not None:
        records = earlier
    else:
        from kafka_chaos.harness.backends import resolve_backend
        from kafka_chaos.harness.distribution import resolve_distribution
        from kafka_chaos.records.writer import RecordWriter

        options = Kip291Options(configurations=configurations, faults=faults, repeat=args.repeat,
                                partitions=args.partitions, load=LoadSettings(producers=args.producers, acks=args.acks),
                                warmup_s=args.warmup, backend=resolve_backend(args.backend))
        distribution = resolve_distribution(args.kafka_version, args.kafka_home)
        with RecordWriter(out) as writer:
            writer.write_run_info({"run_id": options.run_id, "command": "bench kip291", "faults": faults,
                                   "configurations": configurations, "repeat": args.repeat,
                                   "partitions": args.partitions, "producers": args.producers, "acks": args.acks,
                                   "warmup_s": args.warmup, "backend": options.backend,
                                   "kafka_version": distribution.version})
            run_bench(options, distribution, writer.write, lambda line: print(line, file=sys.stderr, flush=True))
        records = _records(out)
    rows = summarise(records)
    (out / "kip291.json").write_text(json.dumps([r.to_dict() for r in rows], indent=1) + "\n")
    print(table(rows))
    print(f"records: {out / 'records.jsonl'}; table: {out / 'kip291.json'}")
    return 0

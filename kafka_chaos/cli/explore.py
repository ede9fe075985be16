"""`kafka-chaos explore`: generated fault schedules run on a real cluster, every step checked by
the oracle; a failing schedule is shrunk to a minimal one, triaged and written as a replayable
schedule file.

    kafka-chaos explore --seed S [--schedules N | --time-limit 30m] [--steps K] [--brokers B]
                        [--faults KIND,...] [--weights KIND=W,...] [--backend local|containers]
                        [--shard I/N] [--shrink-budget 10m] [--confirm 3] [--results DIR]

Writes ``DIR/schedules/<name>.json`` (every schedule it ran), ``DIR/records.jsonl`` and
``DIR/history.jsonl`` as `run` does, ``DIR/failures/<name>.json`` (the minimal failing schedule,
its triage in ``doc``) with ``DIR/failures/index.json``, shrink trials under ``DIR/shrink/``
(records in ``trial.jsonl``, so reports over DIR leave them out),
``DIR/run.json`` and the report. Exit 0 only when no schedule failed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_chaos.cli.args import duration, shard
from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability

if TYPE_CHECKING:
    from kafka_chaos.scenarios.model.ledger import TimeLedger
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig
    from kafka_chaos.scenarios.run.runner import RunOptions


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "explore", help="run generated fault schedules, shrink and triage what fails",
        description="Generate seeded fault schedules (docs/schedules.md), run each on a real cluster with every "
                    "step checked by the oracle, shrink failures to a minimal replayable schedule.")
    parser.add_argument("--seed", type=int, default=None, help="[default: random, printed]")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--schedules", type=int, default=None, metavar="N", help="how many schedules [default: 5]")
    budget.add_argument("--time-limit", type=duration, default=None, metavar="DURATION",
                        help="start new schedules until this much time has passed (e.g. 30m)")
    parser.add_argument("--steps", type=int, default=6, metavar="K", help="steps per schedule [default: 6]")
    parser.add_argument("--brokers", type=int, default=3, metavar="B", help="brokers per cluster, 3-9 [default: 3]")
    parser.add_argument("--max-partitions", type=int, default=12, metavar="P", help="per topic [default: 12]")
    parser.add_argument("--faults", default=None, metavar="KIND,...",
                        help="fault kinds to draw from [default: all the backend can do]")
    parser.add_argument("--weights", default="", metavar="KIND=W,...", help="relative weights (0 leaves a kind out)")
    parser.add_argument("--backend", choices=("local", "containers", "auto"), default="local")
    parser.add_argument("--mode", choices=("zookeeper", "kraft", "migration"), default=None,
                        help="kraft: schedules for a KRaft cluster (3 controllers), the quorum's faults among "
                             "them; migration: schedules that migrate a ZooKeeper-mode cluster to 3 KRaft "
                             "controllers (and back), faults at random phases [default: zookeeper]")
    parser.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N",
                        help="run schedules I, I+N, I+2N, ... of the seed (split a night across machines)")
    parser.add_argument("--shrink-budget", type=duration, default=600.0, metavar="DURATION",
                        help="time to shrink each failure; 0 skips shrinking [default: 10m]")
    parser.add_argument("--confirm", type=int, default=3, metavar="N",
                        help="replays of the minimal schedule; all failing = confirmed [default: 3]")
    parser.add_argument("--results", type=Path, default=None, metavar="DIR")
    parser.add_argument("--kafka-version", default=None, metavar="V")
    parser.add_argument("--kafka-home", default=None, metavar="DIR")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--transactions", action="store_true",
                        help="run the transactional workload in every schedule; process faults may then hit its "
                             "coordinators, and txn_past_timeout is drawn (docs/transactions.md)")
    parser.add_argument("--harness-defaults", action="store_true",
                        help="keep the harness's quick cluster defaults where they differ from Kafka's "
                             "(auto.leader.rebalance.enable=false), as the test command does [default: every schedule "
                             "states Kafka's, auto.leader.rebalance.enable=true in ZooKeeper mode]")
    parser.set_defaults(func=explore_command)


def _mode(args: argparse.Namespace) -> str:
    """--mode, else KRaft on a 4.x --kafka-version (it has no ZooKeeper mode), else ZooKeeper mode."""
    from kafka_chaos.harness.config import default_mode
    from kafka_chaos.harness.distribution import check_version

    if args.mode:
        return str(args.mode)
    return default_mode(check_version(args.kafka_version) if args.kafka_version else None) or "zookeeper"


def _config(args: argparse.Namespace, missing: Collection[Capability]) -> GeneratorConfig:
    from kafka_chaos.scenarios.faults import GENERATORS, fault_kind, requirements_of
    from kafka_chaos.scenarios.plans.generator import DEFAULT_WEIGHTS, DELAY_LINKS, REPERTOIRE, GeneratorConfig, default_faults

    if args.steps < 1 or not 3 <= args.brokers <= 9 or not 1 <= args.max_partitions <= 1000:
        raise UsageError("--steps must be >= 1, --brokers 3..9, --max-partitions 1..1000")
    if args.schedules is not None and args.schedules < 1 or args.confirm < 0:
        raise UsageError("--schedules must be >= 1 and --confirm >= 0")
    mode = _mode(args)
    # By default every kind the backend can inject, but for those that shape the cluster (two log
    # directories, link proxies): they would change every seed's clusters; named, they run.
    faults = tuple(f.strip() for f in args.faults.split(",")) if args.faults else tuple(
        k for k in default_faults(mode) if not GENERATORS[k].shapes_cluster
        and not requirements_of([k]) & set(missing) and mode in fault_kind(k).modes)
    unknown = [f for f in faults if f not in REPERTOIRE]
    if unknown:
        raise UsageError(f"--faults: {', '.join(unknown)} not in the generator's repertoire: {', '.join(REPERTOIRE)}")
    given = _weights(args.weights, REPERTOIRE)
    _refuse_contradictions(args, faults, given)
    for kind in faults:
        lacking = sorted(c.value for c in requirements_of([kind]) & set(missing))
        if lacking and kind != "network_delay":  # delay falls back to its ZooKeeper links (_delay_links)
            raise UsageError(f"--faults {kind} needs {', '.join(lacking)}, which --backend {args.backend} lacks")
    shaping = [kind for kind in faults if GENERATORS[kind].log_dirs > 1]
    if mode == "kraft" and shaping and args.kafka_version:
        from kafka_chaos.harness.config import check_kraft_jbod
        from kafka_chaos.harness.distribution import check_version

        try:
            check_kraft_jbod(check_version(args.kafka_version))
        except UsageError as exc:
            raise UsageError(f"--faults {shaping[0]}: {exc}") from None
    delay_links = _delay_links(args.backend) if "network_delay" in faults else DELAY_LINKS
    weights = {**DEFAULT_WEIGHTS, **{kind: weight for kind, (_, weight) in given.items()}}
    return GeneratorConfig(steps=args.steps, brokers=args.brokers, faults=faults, weights=weights,
                           max_partitions=args.max_partitions, delay_links=delay_links, mode=mode,
                           transactions=bool(getattr(args, "transactions", False)),
                           kafka_defaults=not getattr(args, "harness_defaults", False))


def _weights(text: str, repertoire: Collection[str]) -> dict[str, tuple[str, float]]:
    """``--weights KIND=W,...`` -> kind -> (the item as given, W)."""
    given: dict[str, tuple[str, float]] = {}
    for item in filter(None, (w.strip() for w in text.split(","))):
        kind, _, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            raise UsageError(f"--weights: {item!r} is not KIND=NUMBER") from None
        if kind not in repertoire:
            raise UsageError(f"--weights: {item!r}: {kind!r} is not in the generator's repertoire: "
                             f"{', '.join(repertoire)}")
        if weight < 0:
            raise UsageError(f"--weights: {item!r}: a weight is 0 or more")
        given[kind] = (item, weight)
    return given


def _refuse_contradictions(args: argparse.Namespace, faults: Sequence[str],
                           weights: Mapping[str, tuple[str, float]]) -> None:
    """One line, exit 2, when --mode, --backend, --kafka-version, --faults and --weights
    contradict (scenarios.plans.pins): a fault or a weighted kind the mode has not, a kind weighted
    but not drawn, a release or a launcher the mode cannot run on."""
    from kafka_chaos.scenarios.plans.pins import fault_pins, option_pins, refuse_contradictions, weight_pins

    refuse_contradictions([
        *option_pins(mode=_mode(args), mode_source=None if args.mode else f"the default --mode {_mode(args)}",
                     backend=args.backend, kafka_version=args.kafka_version),
        *fault_pins(faults, named=args.faults or None, left_out="it leaves out the opt-in kinds, those that shape "
                                                                "the cluster and those --backend cannot inject: name "
                                                                "them in --faults"),
        *weight_pins(weights)])


def _delay_links(backend: str) -> tuple[str, ...]:
    """Which links generated network_delay steps may delay on ``backend`` (local without root:
    ZooKeeper links only, the others cannot be redirected through the link proxy)."""
    from kafka_chaos.harness.backends import missing_capabilities
    from kafka_chaos.scenarios.plans.generator import DELAY_LINKS

    missing = missing_capabilities(backend)
    if Capability.LINK_DELAY in missing:
        raise UsageError(f"--faults network_delay: {missing[Capability.LINK_DELAY]}")
    if backend == "local":
        from kafka_chaos.harness.local.network import redirect_problem

        if redirect_problem() is not None:
            return ("zookeeper",)
    return DELAY_LINKS


def explore_command(args: argparse.Namespace) -> int:
    from kafka_chaos.app.explore import Explorer, ShrinkBudget, explore_one
    from kafka_chaos.app.runs import git_revision, progress_printer, quiet_client_logs, write_report
    from kafka_chaos.app.time_summary import time_table
    from kafka_chaos.harness.backends import missing_capabilities
    from kafka_chaos.harness.config import check_kraft_release
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.records.writer import RecordWriter
    from kafka_chaos.scenarios.run.pool import ClusterPool
    from kafka_chaos.scenarios.run.runner import RunOptions

    config = _config(args, set(missing_capabilities(args.backend, _mode(args))))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    results = args.results or Path(f"explore-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    t0 = time.monotonic()
    quiet_client_logs()
    progress = progress_printer(t0)
    distribution = resolve_distribution(args.kafka_version, args.kafka_home)
    check_kraft_release(_mode(args), distribution.version)  # before any cluster starts (KAFKA_HOME's release)
    config = replace(config, kafka_version=distribution.version)  # the generator's release-keyed rules
    options = RunOptions(run_id=uuid.uuid4().hex[:12], seed=seed, backend=args.backend, results_dir=results,
                         kafka_version=distribution.version, git_revision=git_revision())
    pool = ClusterPool(args.backend, distribution, progress)
    limit = args.schedules if args.schedules is not None else (None if args.time_limit else 5)
    explorer = Explorer(results, pool, options, progress,
                        keep_going=lambda: args.time_limit is None or time.monotonic() - t0 < args.time_limit)
    index, ran, steps, failures = args.shard[0], 0, 0, []
    RecordWriter(results).close()  # the results dir exists (and holds records.jsonl) from the start
    print(f"kafka-chaos explore {options.run_id}: seed {seed}, shard {args.shard[0]}/{args.shard[1]}, "
          f"results in {results}", flush=True)
    try:
        while (limit is None or ran < limit) and (args.time_limit is None or time.monotonic() - t0 < args.time_limit):
            then = index + args.shard[1] if limit is None or ran + 1 < limit else None
            failure = explore_one(explorer, seed, index, config, ShrinkBudget(args.shrink_budget, args.confirm), then)
            ran += 1
            steps += failure.pop("steps_checked")
            if failure.get("failed"):
                failures.append(failure)
            index += args.shard[1]
    finally:
        pool.release()
        _write_summary(results, options, seed, args, ran, steps, failures, time.monotonic() - t0, explorer.ledgers)
    by_class: dict[str, int] = {}
    for f in failures:
        by_class[f["class"]] = by_class.get(f["class"], 0) + 1
    print(f"explored {ran} schedule(s), {steps} checked step(s), {len(failures)} failure(s) "
          f"{by_class or ''} in {time.monotonic() - t0:.0f}s".rstrip(), flush=True)
    for f in failures:
        print(f"  {f['name']}: {f['class']} ({f['check']} after {f['fault']}), "
              f"{'confirmed' if f['confirmed'] else 'not confirmed'} {f['reproduced']}; replay: {f['replay']}")
    print(time_table(explorer.ledgers, time.monotonic() - t0, steps), flush=True)
    if not args.no_report:
        write_report(results)
    return 1 if failures else 0


def _write_summary(results: Path, options: RunOptions, seed: int, args: argparse.Namespace, ran: int, steps: int,
                   failures: list[dict[str, Any]], seconds: float, ledgers: list[TimeLedger]) -> None:
    from kafka_chaos.app.explore import write_failures
    from kafka_chaos.records.writer import RecordWriter
    from kafka_chaos.scenarios.model.ledger import summed

    write_failures(results, failures)
    with RecordWriter(results) as writer:
        writer.write_run_info({
            "run_id": options.run_id, "command": ["kafka-chaos", *sys.argv[1:]], "mode": "explore", "seed": seed,
            "shard": list(args.shard), "schedules": ran, "steps_checked": steps, "failures": len(failures),
            "backend": args.backend, "kafka_version": options.kafka_version, "git_revision": options.git_revision,
            "kafka_defaults": not getattr(args, "harness_defaults", False),
            "wall_seconds": round(seconds, 1), "time_ledger": summed(ledgers).as_dict(), "passed": not failures,
            "status": "finished"})

"""`kafka-chaos run`: run chaos scenarios against a real cluster and check them with the oracle.

Prints one progress line per scenario step with the elapsed time, a summary table at the end,
writes ``RESULTS_DIR/history.jsonl`` (every step's observations, re-checkable with
``kafka-chaos check``), ``RESULTS_DIR/records.jsonl`` (one flushed record per check and measurement),
``RESULTS_DIR/run.json`` (configuration, seed, versions, git revision), optionally JUnit XML,
and the Spark report. Exit status 0 only when every check passed; Ctrl-C stops cleanly and
leaves a valid partial results directory.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.app.runs import run_scenarios
from kafka_chaos.cli.args import shard
from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability

if TYPE_CHECKING:
    from kafka_chaos.scenarios.plans.pins import Pin
    from kafka_chaos.scenarios.plans.spec import Scenario


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "run", help="run chaos scenarios and check them against the oracle",
        description="Run chaos scenarios (a suite or named ones) against a real ZooKeeper-mode "
                    "Kafka cluster; exit 0 only when every check passed.")
    from kafka_chaos.scenarios.plans.catalogue import SUITES

    parser.add_argument("--suite", choices=SUITES, default=None,
                        help="scenario suite [default: conformance, unless --scenario is given]")
    parser.add_argument("--scenario", action="append", default=[], metavar="NAME",
                        help="run this scenario (repeatable); see --list")
    parser.add_argument("--schedule", action="append", default=[], type=Path, metavar="FILE",
                        help="run this schedule file (repeatable; docs/schedules.md)")
    parser.add_argument("--shard", type=shard, default=None, metavar="I/N",
                        help="run only scenarios I, I+N, I+2N, ... of the selection (split a suite across machines)")
    parser.add_argument("--list", action="store_true", help="list the scenarios (of --suite, if given) and exit")
    parser.add_argument("--backend", choices=("local", "containers", "auto"), default="local",
                        help="where brokers run [default: local]")
    parser.add_argument("--brokers", type=int, default=None, metavar="N",
                        help="at least N brokers per cluster (scenarios needing more keep theirs)")
    parser.add_argument("--mode", choices=("zookeeper", "kraft"), default=None,
                        help="kraft: run the scenarios on KRaft clusters (those whose faults are ZooKeeper "
                             "mode's are left out, one line why) [default: each scenario's own]")
    parser.add_argument("--controllers", type=int, choices=(1, 3), default=None, metavar="N",
                        help="at least N KRaft controllers, 1 or 3 (with --mode kraft or KRaft scenarios; scenarios "
                             "needing more keep theirs) [default: each scenario's own]")
    parser.add_argument("--zookeepers", type=int, choices=(1, 3, 5), default=None, metavar="N",
                        help="ZooKeeper ensemble size, 1, 3 or 5 (scenarios needing more keep theirs) [default: 1]")
    parser.add_argument("--transactions", action="store_true",
                        help="run the transactional workload too: transactional producers, a read-process-write copier "
                             "and read_committed / read_uncommitted consumers on two topics of its own, judged by the "
                             "transactional history checker (docs/transactions.md)")
    parser.add_argument("--txn-client", default=None, metavar="C",
                        help="who runs the transactional workload: librdkafka (confluent-kafka) or java (Kafka's own "
                             "VerifiableProducer, TransactionalMessageCopier and VerifiableConsumer as processes) "
                             "[default: the scenario's own, librdkafka]")
    parser.add_argument("--iterations", type=int, default=1, metavar="K", help="repetitions of each scenario")
    parser.add_argument("--seed", type=int, default=None, metavar="S",
                        help="seed for every random choice (same seed, same choices) [default: random, printed]")
    parser.add_argument("--results", type=Path, default=None, metavar="DIR",
                        help="results directory [default: results-<UTC time>]")
    parser.add_argument("--junit", type=Path, default=None, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--kafka-version", default=None, metavar="V", help="a Kafka release, 2.4.0 to 3.9.x, or 4.x (KRaft only: --mode kraft is then the default) "
                             "[default: 3.9.2]")
    parser.add_argument("--kafka-home", default=None, metavar="DIR", help="an extracted Apache Kafka tarball")
    parser.add_argument("--no-report", action="store_true", help="skip the Spark report at the end")
    parser.add_argument("--tolerate", choices=("client",), default=None,
                        help="'client': a scenario iteration whose every failed check triage classes client (a "
                             "known client-library defect, e.g. librdkafka#4953) does not fail the run; it is "
                             "listed as CLIENT, in run.json and as a skipped JUnit case with its failures")
    parser.add_argument("--deflake", type=int, default=0, metavar="N",
                        help="rerun a failing scenario iteration up to N times: passing once makes it flaky")
    parser.add_argument("--rerun", type=Path, default=None, metavar="FILE",
                        help="run the failing and flaky scenario iterations listed in a run's rerun.json")
    parser.add_argument("--harness-defaults", action="store_true",
                        help="keep the harness's quick cluster defaults where they differ from Kafka's "
                             "(auto.leader.rebalance.enable=false: no step waits for the ZooKeeper-mode controller's "
                             "leader-imbalance checks), as the test command does [default: Kafka's, where a scenario "
                             "states nothing; a schedule file runs as written]")
    parser.set_defaults(func=run_command)


def _validate(args: argparse.Namespace) -> None:
    if args.iterations < 1:
        raise UsageError(f"--iterations must be at least 1, not {args.iterations}")
    if args.brokers is not None and not 1 <= args.brokers <= 9:
        raise UsageError(f"--brokers must be between 1 and 9, not {args.brokers}")
    if sum(map(bool, (args.suite, args.scenario, args.schedule, args.rerun))) > 1:
        raise UsageError("give one of --suite, --scenario, --schedule or --rerun")
    if args.deflake < 0:
        raise UsageError(f"--deflake must be at least 0, not {args.deflake}")


def _default_mode(args: argparse.Namespace) -> None:
    """Kafka 4.x has KRaft only (harness.config.default_mode): without --mode, --mode kraft --
    unless the suite has a mode of its own (the pins then say why it cannot run on 4.x)."""
    from kafka_chaos.harness.config import default_mode
    from kafka_chaos.harness.distribution import check_version
    from kafka_chaos.scenarios.plans import catalogue

    suite = catalogue.SUITES.get(args.suite) if args.suite else None
    if args.mode is None and args.kafka_version is not None and (suite is None or suite.mode is None):
        args.mode = default_mode(check_version(args.kafka_version))
        if args.mode is not None:
            print(f"--kafka-version {args.kafka_version}: --mode {args.mode} (Kafka 4.0 removed ZooKeeper mode)",
                  flush=True)


def _refuse_contradictions(args: argparse.Namespace, items: Sequence[Pin]) -> None:
    """One line, exit 2, when an option contradicts another or what the suite, a named scenario,
    a schedule file or the rerun file pins (scenarios.plans.pins), before anything starts."""
    from kafka_chaos.scenarios.plans.pins import option_pins, refuse_contradictions

    refuse_contradictions([*items, *option_pins(
        mode=args.mode, controllers=args.controllers, zookeepers=args.zookeepers, kafka_version=args.kafka_version,
        brokers=args.brokers, backend=args.backend, seed=args.seed, iterations=args.iterations, shard=args.shard)])


def _shaped(args: argparse.Namespace, chosen: Sequence[Scenario]) -> list[Scenario]:
    """The scenarios with the clusters the options ask for: at least --brokers, --zookeepers and
    --controllers (never fewer than a scenario needs), on --mode. Without --mode, --controllers
    applies when every scenario is a KRaft one."""
    from kafka_chaos.scenarios.plans.catalogue import with_brokers, with_mode, with_zookeepers
    from kafka_chaos.scenarios.plans.transactional import with_transactions

    modes = {s.needs.mode for s in chosen}
    mode = args.mode or (modes.pop() if len(modes) == 1 else None)
    if args.controllers is not None and mode != "kraft":
        raise UsageError("--controllers needs --mode kraft")
    return [with_transactions(with_mode(with_zookeepers(with_brokers(s, args.brokers), args.zookeepers), mode,
                                        args.controllers), getattr(args, "transactions", False),
                              getattr(args, "txn_client", None))
            for s in chosen]


def run_command(args: argparse.Namespace) -> int:
    from kafka_chaos.scenarios.plans import catalogue

    if args.list:  # the catalogue, or the --suite named
        listed = catalogue.suite(args.suite) if args.suite else catalogue.all_scenarios()
        width = max(len(s.name) for s in listed)
        for s in listed:
            needs = ", ".join(sorted(c.value for c in s.requirements - {Capability.BROKER_CONTROL}))
            extra = f"  [needs {needs}]" if needs else ""
            print(f"{s.name:{width}s} {','.join(sorted(s.suites)):18s} {s.needs.describe()}{extra}")
        return 0
    _validate(args)
    _default_mode(args)
    if args.rerun is not None:
        return _rerun(args)
    from kafka_chaos.scenarios.plans.pins import scenario_pins, suite_pins

    sources: dict[str, str] = {}
    if args.schedule:  # named, so never left out: the runner says why it skips one
        from kafka_chaos.scenarios.plans.schedule import load_all

        schedules = load_all(args.schedule)
        chosen = [s.scenario() for s in schedules]
        sources = {s.name: str(path.resolve()) for s, path in zip(schedules, args.schedule)}
        _refuse_contradictions(args, [pin for path, s in zip(args.schedule, chosen)
                                      for pin in scenario_pins(f"--schedule {path}", s)])
    else:
        _refuse_contradictions(args, [pin for s in catalogue.by_names(args.scenario)
                                      for pin in scenario_pins(f"--scenario {s.name}", s)] if args.scenario
                               else suite_pins(args.suite or catalogue.CONFORMANCE))
        missing: dict[str, dict[Capability, str]] = {}
        if not args.scenario:  # named scenarios are never left out: the runner says why it skips them
            from kafka_chaos.harness.backends import missing_capabilities

            missing = {mode: dict(missing_capabilities(args.backend, mode)) for mode in ("zookeeper", "kraft", "migration")}
        selection = catalogue.select(args.suite, args.scenario, missing_by_mode=missing)
        if args.mode is not None and not args.scenario:  # named ones are converted or refused below
            kept, left = catalogue.leave_out_for_mode(selection.scenarios, args.mode)
            selection = catalogue.Selection(kept, selection.left_out + left)
        if not args.scenario:  # a KRaft cluster shape the release cannot start (named: refused at start)
            kept, left = catalogue.leave_out_for_release(selection.scenarios, args.mode, args.kafka_version)
            selection = catalogue.Selection(kept, selection.left_out + left)
        if not args.scenario:  # a fault acting on one transactional client implementation, on the other
            from kafka_chaos.scenarios.plans.transactional import leave_out_for_client

            kept, left = leave_out_for_client(selection.scenarios, getattr(args, "txn_client", None))
            selection = catalogue.Selection(kept, selection.left_out + left)
        for line in selection.left_out_lines():
            print(line, flush=True)
        chosen = selection.scenarios
    if args.shard is not None:  # the selection's order is stable, so every machine agrees
        chosen = chosen[args.shard[0]::args.shard[1]]
    scenarios = _shaped(args, chosen)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    results_dir = args.results or Path(f"results-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    return run_scenarios(scenarios, seed=seed, results_dir=results_dir, backend=args.backend,
                         iterations=args.iterations, junit=args.junit, kafka_version=args.kafka_version,
                         kafka_home=args.kafka_home, report=not args.no_report,
                         suite=args.suite or ("conformance" if not (args.scenario or args.schedule) else None),
                         command=["kafka-chaos", *sys.argv[1:]], deflake=args.deflake, sources=sources,
                         tolerate=args.tolerate, kafka_defaults=not args.harness_defaults)


def _rerun(args: argparse.Namespace) -> int:
    """``run --rerun FILE``: the listed scenario iterations with the file's seed, on clusters
    shaped as the options say (--mode, --brokers, ...: the file does not record them)."""
    from kafka_chaos.scenarios.plans import catalogue
    from kafka_chaos.scenarios.plans.pins import rerun_pins
    from kafka_chaos.scenarios.plans.schedule import load

    try:
        data = json.loads(args.rerun.read_text(encoding="utf-8"))
        seed, listed = int(data["seed"]), list(data["cases"])
        # As the run had them (a file written before they were recorded: the quick ones).
        kafka_defaults = bool(data.get("kafka_defaults", False)) and not args.harness_defaults
        plan = []
        for entry in listed:
            name, iteration = str(entry["scenario"]), int(entry["iteration"])
            scenario = (load(Path(entry["schedule"])).scenario() if entry.get("schedule")
                        else catalogue.by_names([name])[0])
            plan.append((scenario, iteration))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--rerun {args.rerun}: not a rerun file of kafka-chaos run ({type(exc).__name__}: {exc})") from exc
    _refuse_contradictions(args, rerun_pins(args.rerun, [s for s, _ in plan]))
    if not plan:
        print(f"{args.rerun}: nothing to rerun (every scenario passed)")
        return 0
    results_dir = args.results or Path(f"results-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    shaped = {s.name: s for s in _shaped(args, list({s.name: s for s, _ in plan}.values()))}  # names kept
    plan = [(shaped[s.name], i) for s, i in plan]
    scenarios = list(shaped.values())
    return run_scenarios(scenarios, seed=seed, results_dir=results_dir, backend=args.backend,
                         junit=args.junit, kafka_version=args.kafka_version, kafka_home=args.kafka_home,
                         report=not args.no_report, command=["kafka-chaos", *sys.argv[1:]], deflake=args.deflake,
                         plan=plan, sources={s.name: e["schedule"] for (s, _), e in zip(plan, listed) if e.get("schedule")},
                         tolerate=args.tolerate, kafka_defaults=kafka_defaults)



"""`kafka-chaos schedule export [NAME ...] [--out DIR]` and `kafka-chaos schedule check FILE ...`:
catalogue scenarios as schedule files (docs/schedules.md), and validation of schedule files
(one line per problem, exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser("schedule", help="export catalogue scenarios as schedule files, or check schedule files",
                            description="Schedules are scenarios as JSON files (docs/schedules.md), run with "
                                        "`kafka-chaos run --schedule FILE`.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    export = verbs.add_parser("export", help="write catalogue scenarios as schedule files")
    export.add_argument("names", nargs="*", metavar="NAME", help="scenarios to export [default: all]")
    export.add_argument("--out", type=Path, default=Path("schedules"), metavar="DIR",
                        help="where the files go [default: ./schedules]")
    export.set_defaults(func=export_command)
    check = verbs.add_parser("check", help="validate schedule files")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE")
    check.set_defaults(func=check_command)


def export_command(args: argparse.Namespace) -> int:
    from kafka_chaos.scenarios.plans import catalogue
    from kafka_chaos.scenarios.plans.schedule import dumps, from_scenario

    chosen = catalogue.by_names(args.names) if args.names else catalogue.all_scenarios()
    args.out.mkdir(parents=True, exist_ok=True)
    for s in chosen:
        path = args.out / f"{s.name}.json"
        path.write_text(dumps(from_scenario(s)), encoding="utf-8")
        print(path)
    return 0


def check_command(args: argparse.Namespace) -> int:
    from kafka_chaos.scenarios.plans.schedule import load_all

    for s in load_all(args.files):
        print(f"{s.name}: {len(s.brokers)} brokers {list(s.brokers)}, {len(s.topics)} topic(s), "
              f"{len(s.steps)} step(s), needs {sorted(c.value for c in s.scenario().requirements) or 'nothing more'}")
    return 0

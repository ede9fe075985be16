"""`kafka-chaos`: the command line.  Each subcommand lives in its own module with a
``register(subparsers)`` function; heavy imports (Spark, kazoo) happen inside the handlers so
``--help`` and bad input answer at once."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from kafka_chaos.common.errors import HarnessError, UsageError

SUBCOMMAND_MODULES = ("kafka_chaos.cli.cluster", "kafka_chaos.cli.fetch_kafka", "kafka_chaos.cli.predict", "kafka_chaos.cli.run", "kafka_chaos.cli.explore", "kafka_chaos.cli.check", "kafka_chaos.cli.schedule", "kafka_chaos.cli.report", "kafka_chaos.cli.spark", "kafka_chaos.cli.bench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-chaos",
        description="Chaos testing of ZooKeeper-mode Kafka 3.9 clusters, checked against a model of the controller.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"kafka-chaos: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except HarnessError as exc:
        print(f"kafka-chaos: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

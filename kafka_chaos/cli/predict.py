"""`kafka-chaos predict FILE|-`: the oracle as a command.  Reads a cluster state and events as JSON
(see ``oracle/README.md``), prints the settled state and the per-partition outcomes as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from kafka_chaos.harness.errors import UsageError


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "predict",
        help="predict leaders and ISRs after faults (the oracle, no cluster needed)",
        description="Predict what a Kafka 3.9 ZooKeeper-mode cluster settles to after the given events.",
    )
    parser.add_argument("file", metavar="FILE", help="request JSON file, or - for standard input")
    parser.add_argument("--steps", action="store_true", help="also print the settled state after every event")
    parser.add_argument("--compact", action="store_true", help="one-line JSON instead of indented")
    parser.set_defaults(func=run)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"FILE: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"FILE: {path} is not UTF-8 text") from None


def run(args: argparse.Namespace) -> int:
    from kafka_chaos.oracle import predict
    from kafka_chaos.oracle.jsonio import OracleInputError, one_line, parse_json_text, parse_request, render_prediction

    try:
        state, events = parse_request(parse_json_text(_read(args.file)))
        rendered = render_prediction(predict(state, events), include_steps=args.steps)
    except OracleInputError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        # The oracle refuses a request the parser let through (an inconsistent state or event):
        # still one line and exit 2, never a traceback.
        raise UsageError(one_line(f"input: {exc or type(exc).__name__}")) from None
    json.dump(rendered, sys.stdout, indent=None if args.compact else 2)
    sys.stdout.write("\n")
    return 0

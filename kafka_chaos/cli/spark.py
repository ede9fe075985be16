"""`kafka-chaos spark up [--port N] [--host H] [--master URL] [--driver-memory M] [--conf K=V ...] [--state-dir DIR]`,
`kafka-chaos spark status|down [--state-dir DIR]`: a local Spark Connect server that keeps
running between reports (``kafka-chaos report --master sc://HOST:PORT``).  ``up`` prints the
``sc://`` URL on stdout (``url=$(kafka-chaos spark up)``); the state dir defaults to
``./.kafka-chaos/spark`` (or ``$KAFKA_CHAOS_SPARK_STATE_DIR``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kafka_chaos.results.connect_server import (
    DEFAULT_DRIVER_MEMORY, DEFAULT_HOST, DEFAULT_MASTER, DEFAULT_STATE_DIR, STATE_DIR_ENV, default_state_dir,
)
from kafka_chaos.results.spark_connect import DEFAULT_PORT


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "spark", help="a local Spark Connect server for reports: up, status, down",
        description="Start, inspect and stop a local Spark Connect server (pyspark's own, no download) that "
                    "reports use with `kafka-chaos report --master sc://HOST:PORT`, instead of starting a "
                    "Spark JVM each.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def with_state_dir(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                       help=f"the server's pid, address and log [default: ${STATE_DIR_ENV} or ./{DEFAULT_STATE_DIR}]")
        return p

    up = with_state_dir(verbs.add_parser("up", help="start the server, print its sc:// URL"))
    up.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N", help=f"[default: {DEFAULT_PORT}]")
    up.add_argument("--host", default=DEFAULT_HOST, metavar="ADDRESS",
                    help=f"address to listen on [default: {DEFAULT_HOST}; the server has no authentication]")
    up.add_argument("--master", default=DEFAULT_MASTER, metavar="URL",
                    help=f"the server's Spark master, e.g. spark://HOST:7077 [default: {DEFAULT_MASTER}]")
    up.add_argument("--driver-memory", default=DEFAULT_DRIVER_MEMORY, metavar="SIZE",
                    help=f"[default: {DEFAULT_DRIVER_MEMORY}]")
    up.add_argument("--conf", action="append", default=[], metavar="spark.KEY=VALUE",
                    help="a Spark setting of the server (e.g. spark.executor.memory=1g); repeatable")
    up.set_defaults(func=spark_up)
    with_state_dir(verbs.add_parser("status", help="whether the server runs, and its URL")).set_defaults(
        func=spark_status)
    with_state_dir(verbs.add_parser("down", help="stop the server (its log is kept)")).set_defaults(func=spark_down)


def _state_dir(args: argparse.Namespace) -> Path:
    return (args.state_dir or default_state_dir()).absolute()


def spark_up(args: argparse.Namespace) -> int:
    from kafka_chaos.results.connect_server import parse_confs, start_server

    confs = parse_confs(args.conf)  # bad input answered before anything starts
    state = start_server(_state_dir(args), host=args.host, port=args.port, master=args.master,
                         driver_memory=args.driver_memory, confs=confs)
    print(state.url)
    return 0


def spark_status(args: argparse.Namespace) -> int:
    from kafka_chaos.results.connect_server import is_running, read_state

    state_dir = _state_dir(args)
    state = read_state(state_dir)
    if state is None:
        print(f"no Spark Connect server recorded in {state_dir}")
        return 1
    if not is_running(state):
        print(f"the Spark Connect server recorded in {state_dir} (pid {state.pid}, {state.url}) is not running; "
              f"its log: {state.log}; `kafka-chaos spark down` clears its state")
        return 1
    print(f"{state.url} running (pid {state.pid}, master {state.master}, since {state.started_at}, log {state.log})")
    return 0


def spark_down(args: argparse.Namespace) -> int:
    from kafka_chaos.results.connect_server import stop_server

    state_dir = _state_dir(args)
    state = stop_server(state_dir)
    if state is None:
        print(f"no Spark Connect server recorded in {state_dir}")
    else:
        print(f"stopped the Spark Connect server {state.url} (pid {state.pid}); log kept: {state.log}")
    return 0

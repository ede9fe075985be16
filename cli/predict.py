"""`kafka-chaos predict` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser("predict", help="(not built yet)")
    parser.set_defaults(func=lambda args: parser.error("not built yet"))

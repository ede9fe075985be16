"""Argument types several commands share (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse
import re

DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)?$")


def duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``2h`` -> seconds."""
    m = DURATION.match(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 30m or 2h")
    return float(m.group(1)) * {"s": 1, None: 1, "m": 60, "h": 3600}[m.group(2)]


def shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if m is None or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a shard I/N with 0 <= I < N")
    return int(m.group(1)), int(m.group(2))

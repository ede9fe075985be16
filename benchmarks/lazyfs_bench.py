"""What the crash-consistency layer (harness.lazyfs) costs a Kafka-like writer.

Sequential 16 KiB appends to one file with an fsync every N appends (Kafka's log segment:
``FileRecords.append`` per produce batch, ``flush`` when ``log.flush.interval.messages`` or a
roll asks), on a mount of the layer and on a plain directory of the same filesystem. Prints, for
each, the throughput (MB/s) and the latency of one append and of one fsync (median and p99 in
microseconds), min/median/max over the runs, and the load average at the start and end (the
machine is shared: say what else ran).

    .venv/bin/python benchmarks/lazyfs_bench.py [--runs 5] [--appends 2000] [--fsync-every 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_chaos.harness.lazyfs.mount import LazyMount, lazyfs_available  # noqa: E402

WRITE_SIZE = 16 * 1024


@dataclass(frozen=True)
class Run:
    megabytes_per_second: float
    append_median_us: float
    append_p99_us: float
    fsync_median_us: float


def one_run(directory: Path, appends: int, fsync_every: int) -> Run:
    chunk = os.urandom(WRITE_SIZE)
    append_times: list[float] = []
    fsync_times: list[float] = []
    path = directory / "00000000000000000000.log"
    descriptor = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    started = time.perf_counter()
    try:
        for index in range(1, appends + 1):
            append_times.append(timed(lambda: os.write(descriptor, chunk)))
            if index % fsync_every == 0:
                fsync_times.append(timed(lambda: os.fsync(descriptor)))
    finally:
        elapsed = time.perf_counter() - started
        os.close(descriptor)
        path.unlink()
    append_times.sort()
    return Run(megabytes_per_second=appends * WRITE_SIZE / elapsed / 1e6,
               append_median_us=statistics.median(append_times) * 1e6,
               append_p99_us=append_times[int(len(append_times) * 0.99)] * 1e6,
               fsync_median_us=statistics.median(fsync_times) * 1e6 if fsync_times else 0.0)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def summary(name: str, runs: list[Run]) -> None:
    print(f"{name}:")
    for field, unit in (("megabytes_per_second", "MB/s"), ("append_median_us", "us append median"),
                        ("append_p99_us", "us append p99"), ("fsync_median_us", "us fsync median")):
        values = sorted(getattr(run, field) for run in runs)
        print(f"  {unit:>18}: min {values[0]:10.1f}  median {statistics.median(values):10.1f}  max {values[-1]:10.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--appends", type=int, default=2000, help="16 KiB appends per run")
    parser.add_argument("--fsync-every", type=int, default=100, help="appends between fsyncs")
    args = parser.parse_args()
    problem = lazyfs_available()
    if problem is not None:
        print(f"lazyfs_bench: {problem}", file=sys.stderr)
        return 2
    print(f"load average at start: {os.getloadavg()}; {os.cpu_count()} CPUs")
    print(f"{args.runs} runs of {args.appends} x {WRITE_SIZE // 1024} KiB appends, fsync every {args.fsync_every}")
    with tempfile.TemporaryDirectory(prefix="lazyfs-bench-") as scratch:
        root = Path(scratch)
        for name in ("plain", "backing", "mount"):
            (root / name).mkdir()
        plain = [one_run(root / "plain", args.appends, args.fsync_every) for _ in range(args.runs)]
        with LazyMount.start(root / "backing", root / "mount", root / "control.sock") as layer:
            layered = [one_run(root / "mount", args.appends, args.fsync_every) for _ in range(args.runs)]
            stats = layer.stats()
    summary("plain directory", plain)
    summary("crash-consistency layer", layered)
    print(f"layer's counters: {stats['writes']} writes, {stats['fsyncs']} fsyncs")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long `kafka-chaos cluster up` / `down` take and how much memory the cluster holds.

    .venv/bin/python benchmarks/cluster_startup.py [--brokers 3 5] [--repeat 2] [--compare-jvm-options]
        [--kraft-release 4.4.0]

For each broker count: time ``cluster up`` (the command, until it returns with every broker
registered, a controller elected and metadata answering), sample the resident memory of every
process whose command line names the state dir (ZooKeeper + brokers, summed) every 100 ms from
the start until ``--settle`` seconds after ``up`` returned, then time ``cluster down``.
``--compare-jvm-options`` also times in-process start-ups of a 3-broker cluster with the
default JVM flags (serial GC, C1 only, the class-data-sharing archive of ``harness.local.cds``)
against variants without the archive, with C2, and with plain JVM defaults (G1, C2).
``--kraft-release V`` times in-process start-ups of a 3-controller, 3-broker KRaft cluster of
that release with and without its class-data-sharing archive (built first, as ``fetch-kafka``
does; a KRaft-only release's is dumped by a KRaft broker).

Figures only: nothing here asserts a speed.  Never run it next to another cluster of yours.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.harness.processes import processes_mentioning, rss_bytes  # noqa: E402

MIB = 1024 * 1024


class RssSampler:
    """Peak of the summed RSS of the processes whose command line contains ``needle``."""

    def __init__(self, needle: str, interval: float = 0.1) -> None:
        self.needle = needle
        self.interval = interval
        self.peak = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = processes_mentioning(self.needle)
            total = sum(rss_bytes(pid) for pid in pids)
            if total > self.peak:
                self.peak, self.peak_processes = total, len(pids)
            self._stop.wait(self.interval)


def kafka_chaos(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    return time.monotonic() - began, done


def one_cli_run(brokers: int, settle: float) -> tuple[float, float, int, int]:
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-bench-") as tmp:
        state_dir = Path(tmp) / "state"
        sd = ["--state-dir", str(state_dir)]
        with RssSampler(f"{state_dir}{os.sep}") as sampler:
            up_s, up = kafka_chaos("cluster", "up", "--brokers", str(brokers), *sd)
            if up.returncode != 0:
                kafka_chaos("cluster", "down", *sd)
                raise SystemExit(f"cluster up failed: {up.stderr.strip()}")
            time.sleep(settle)
        down_s, down = kafka_chaos("cluster", "down", *sd)
        if down.returncode != 0:
            raise SystemExit(f"cluster down failed: {down.stderr.strip()}")
        return up_s, down_s, sampler.peak, sampler.peak_processes


def in_process_start(jvm_options: tuple[str, ...], brokers: int = 3, cds: bool = True) -> float:
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.harness.local.cluster import LocalCluster

    cluster = LocalCluster(ClusterConfig(brokers=brokers, jvm_options=jvm_options), resolve_distribution(),
                           class_data_sharing=cds)
    began = time.monotonic()
    with cluster:
        return time.monotonic() - began


def in_process_kraft_start(release: str, cds: bool) -> float:
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    cluster = LocalKraftCluster(ClusterConfig(brokers=3, mode="kraft", controllers=3), resolve_distribution(release),
                                class_data_sharing=cds)
    began = time.monotonic()
    with cluster:
        return time.monotonic() - began


def describe(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.1f} s"
    return f"median {statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f}, n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, nargs="*", default=[3, 5], help="`cluster up` broker counts (none: skip)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to keep sampling RSS after up")
    parser.add_argument("--compare-jvm-options", action="store_true")
    parser.add_argument("--kraft-release", metavar="V", help="also time a 3+3 KRaft cluster of V with and without CDS")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)

    subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", "fetch-kafka"], cwd=ROOT, check=True,
                   capture_output=True)  # a first download is not start-up time
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    for brokers in args.brokers:
        ups, downs, peaks = [], [], []
        for _ in range(args.repeat):
            up_s, down_s, peak, count = one_cli_run(brokers, args.settle)
            ups.append(up_s)
            downs.append(down_s)
            peaks.append(peak)
        print(f"{brokers} brokers: cluster up {describe(ups)}; cluster down {describe(downs)}; "
              f"peak RSS {max(peaks) / MIB:.0f} MiB over {count} JVMs "
              f"({max(peaks) / MIB / count:.0f} MiB each)")
    if args.compare_jvm_options:
        from kafka_chaos.harness.config import DEFAULT_JVM_OPTIONS

        variants = {"default (SerialGC, C1 only, CDS archive)": (DEFAULT_JVM_OPTIONS, True),
                    "SerialGC, C1 only, no CDS archive": (DEFAULT_JVM_OPTIONS, False),
                    "SerialGC, C1+C2, no CDS archive": (("-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError"), False),
                    "JVM defaults (G1, C1+C2), no CDS archive": (("-XX:+ExitOnOutOfMemoryError",), False)}
        for name, (options, cds) in variants.items():
            times = [in_process_start(options, cds=cds) for _ in range(args.repeat)]
            print(f"in-process 3-broker start, {name}: {describe(times)}")
    if args.kraft_release:
        subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", "fetch-kafka", "--kafka-version",
                        args.kraft_release], cwd=ROOT, check=True, capture_output=True)  # builds its archive
        for cds in (True, False):
            times = [in_process_kraft_start(args.kraft_release, cds) for _ in range(args.repeat)]
            print(f"in-process 3-controller 3-broker KRaft {args.kraft_release} start, "
                  f"{'with' if cds else 'without'} the CDS archive: {describe(times)}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (other engineers share this machine)")


if __name__ == "__main__":
    main()

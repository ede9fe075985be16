"""Throughput of the history checker (``scenarios.checks.client_history``) over a synthetic history.

    .venv/bin/python benchmarks/history_checker_bench.py [--events 1000000] [--partitions 10]

The history: per partition, acknowledged messages at consecutive offsets, each polled by the
``assign`` and the ``group`` consumer and by the final read-back (events = acks + polls,
1 + 3 per message), in stretches of 1,000 messages as a run's steps store them; the group is
reset (rebalanced) once per stretch. Prints events/s of ``check_partition`` (and, apart, of
building the history through the JSON codec). Figures only: nothing here asserts a speed; no
cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.scenarios.checks import client_history as hc  # noqa: E402
from kafka_chaos.scenarios.clients.ops import ClientOps, ConsumerReset, Poll  # noqa: E402
from kafka_chaos.scenarios.clients.delivery import Ack  # noqa: E402

STRETCH = 1_000


def partition_history(partition: int, messages: int) -> list[ClientOps]:
    stretches = []
    for start in range(0, messages, STRETCH):
        end = min(messages, start + STRETCH)
        t = float(start)
        acks = tuple(Ack(partition, i, f"run-{partition}-{i}", t + (i - start) * 0.05) for i in range(start, end))
        polls = tuple(Poll(c, i, f"run-{partition}-{i}", t + (i - start) * 0.05 + 0.01, t + (i - start) * 0.05 - 0.005)
                      for c in ("assign", "group") for i in range(start, end))
        stretches.append(ClientOps(t - 1, t + STRETCH, acks, (), polls, (ConsumerReset("group", t - 0.5, "assigned"),)))
    readback = tuple(Poll("readback", i, f"run-{partition}-{i}", 1e9) for i in range(messages))
    stretches.append(ClientOps(float(messages), None, (), (), readback, ()))
    return stretches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=10)
    args = parser.parse_args()
    per_partition = max(1, args.events // (4 * args.partitions))
    histories = {f"t-{p}": partition_history(p, per_partition) for p in range(args.partitions)}
    events = sum(len(o.acks) + len(o.polls) for ops in histories.values() for o in ops)

    started = time.perf_counter()
    decoded = {name: [ClientOps.from_dict(json.loads(json.dumps(o.to_dict()))) for o in ops]
               for name, ops in histories.items()}
    codec_s = time.perf_counter() - started

    started = time.perf_counter()
    found = 0
    for name, ops in decoded.items():
        anomalies, _ = hc.check_partition(name, ops)
        found += len(anomalies)
    check_s = time.perf_counter() - started
    print(f"history: {events:,} events ({args.partitions} partitions x {per_partition:,} messages; "
          f"acks + assign, group and read-back polls), {found} anomalies")
    print(f"checker: {check_s:.2f} s = {events / check_s:,.0f} events/s")
    print(f"JSON round trip of the history (codec, apart): {codec_s:.2f} s = {events / codec_s:,.0f} events/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

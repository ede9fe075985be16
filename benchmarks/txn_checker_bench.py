"""Throughput of the transactional history checker (``scenarios.checks.transactions``) over
synthetic histories.

    .venv/bin/python benchmarks/txn_checker_bench.py [--events 10000,100000,500000] [--runs 5]

The history: 8 transactional producers write 4 messages each per transaction to the 8
partitions of an input topic, four transactions open at once and interleaved (so G0 write
cycles occur); 90 % commit, 5 % abort, 5 % end unknown (committed or aborted in the log); a
read-process-write copier copies each round's committed input to a 4-partition output topic in
one transaction that sends its consumer's positions (the group's final offsets are recorded).
Two read_committed consumers and one read_uncommitted consumer read every partition through
the last stable offset after each round; the final read-back reads everything. Events = sends +
consumer reads + read-back records. Prints, per size, events/s of ``check_transactions``
(min / median / max over ``--runs``), and apart the JSON round trip of the history and its
size. Figures only: nothing here asserts a speed; no cluster.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.scenarios.checks import transactions as tc  # noqa: E402
from kafka_chaos.scenarios.clients.txn_ops import (  # noqa: E402
    ABORTED, COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, UNKNOWN, ReadBack, Txn, TxnConsumer, TxnHistory,
    TxnOffset, TxnRead, TxnSend,
)

IN, OUT = 8, 4
PRODUCERS = 8
OPEN = 4
PER_TXN = 4
READERS = (("rc-a", True), ("rc-b", True), ("ru", False))


def history(events: int, seed: int = 43) -> TxnHistory:
    rng = random.Random(seed)
    logs: dict[tuple[str, int], list[tuple[int, str, bool]]] = {
        **{("in", p): [] for p in range(IN)}, **{("out", p): [] for p in range(OUT)}}  # (txn, key, visible) or markers
    txns: list[Txn] = []
    seqs = [0] * (PRODUCERS + 1)
    reads: list[TxnRead] = []
    positions = {name: {tp: 0 for tp in logs} for name, _ in READERS}
    copier_pos = {p: 0 for p in range(IN)}
    t = 0.0
    n = 0
    per_message = 1 + len(READERS) + 1  # the send, three consumers, the read-back
    target = events // per_message
    messages = 0

    def append(tp: tuple[str, int], txn: int, key: str) -> int:
        logs[tp].append((txn, key, False))
        return len(logs[tp]) - 1

    while messages < target:
        t += 1.0
        opened: list[tuple[int, int, list[TxnSend]]] = []
        for j in range(OPEN):
            pid = (len(txns) + j) % PRODUCERS
            opened.append((pid, len(txns) + j, []))
        for _ in range(PER_TXN):  # interleaved
            for pid, index, sends in opened:
                n += 1
                tp = ("in", rng.randrange(IN))
                sends.append(TxnSend(tp[0], tp[1], f"k{n}", append(tp, index, f"k{n}")))
                messages += 1
        for pid, index, sends in opened:
            roll = rng.random()
            outcome = COMMITTED if roll < 0.9 else ABORTED if roll < 0.95 else UNKNOWN
            visible = outcome == COMMITTED or (outcome == UNKNOWN and rng.random() < 0.5)
            for s in sends:
                if visible:
                    tp = (s.topic, s.partition)
                    logs[tp][s.offset or 0] = (index, s.key, True)
            for tp in {(s.topic, s.partition) for s in sends}:
                logs[tp].append((-1, "", False))  # the marker
            txns.append(Txn(f"p{pid}", seqs[pid], outcome, tuple(sends), error=None if outcome == COMMITTED else "_X",
                            producer_id=pid, epoch=0, began_at=t, committing_at=t + 0.2 if visible else None,
                            ended_at=t + 0.3))
            seqs[pid] += 1
        # the copier: this round's committed input to the output topic, with its positions
        index, copies = len(txns), []
        for p in range(IN):
            log = logs[("in", p)]
            for o in range(copier_pos[p], len(log)):
                if log[o][2]:
                    tp = ("out", rng.randrange(OUT))
                    copies.append(TxnSend(tp[0], tp[1], log[o][1], append(tp, index, log[o][1])))
            copier_pos[p] = len(log)
        for s in copies:
            logs[(s.topic, s.partition)][s.offset or 0] = (index, s.key, True)
        for tp in {(s.topic, s.partition) for s in copies}:
            logs[tp].append((-1, "", False))
        messages += len(copies)
        txns.append(Txn("copier", seqs[PRODUCERS], COMMITTED, tuple(copies),
                        tuple(TxnOffset("g", "in", p, copier_pos[p]) for p in range(IN)),
                        began_at=t + 0.4, committing_at=t + 0.5, ended_at=t + 0.6))
        seqs[PRODUCERS] += 1
        at = t + 0.7
        for name, committed in READERS:
            for tp, log in logs.items():
                for o in range(positions[name][tp], len(log)):
                    txn, key, visible = log[o]
                    if txn >= 0 and (visible or not committed):
                        at += 1e-5
                        reads.append(TxnRead(name, tp[0], tp[1], o, key, at))
                positions[name][tp] = len(log)
    readback = tuple(ReadBack(tp[0], tp[1], 0, len(log), t + 10,
                              tuple((o, key) for o, (txn, key, visible) in enumerate(log) if txn >= 0 and visible))
                     for tp, log in logs.items())
    consumers = tuple(TxnConsumer(name, READ_COMMITTED if committed else READ_UNCOMMITTED) for name, committed in READERS)
    return TxnHistory(tuple(txns), consumers + (TxnConsumer("copier", READ_COMMITTED, "g"),), tuple(reads), (),
                      readback, tuple(TxnOffset("g", "in", p, o) for p, o in copier_pos.items()))


def size(h: TxnHistory) -> int:
    return sum(len(x.sends) for x in h.txns) + len(h.reads) + sum(len(rb.records) for rb in h.readback or ())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", default="10000,100000,500000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for target in (int(e) for e in args.events.split(",")):
        h = history(target)
        events = size(h)
        rates, found = [], set()
        for _ in range(args.runs):
            started = time.perf_counter()
            results = tc.check_transactions(h)
            rates.append(events / (time.perf_counter() - started))
            found = tc.fired(results)
        g0 = results[-1].observed["cycles"]
        started = time.perf_counter()
        text = json.dumps(h.to_dict(), separators=(",", ":"))
        TxnHistory.from_dict(json.loads(text))
        codec = events / (time.perf_counter() - started)
        print(f"{events:>9,} events ({len(h.txns):,} transactions, {len(h.reads):,} reads): "
              f"checker {min(rates):,.0f} / {statistics.median(rates):,.0f} / {max(rates):,.0f} events/s "
              f"(min / median / max of {args.runs}); fired {sorted(found) or 'nothing'}, {g0} G0 cycles; "
              f"JSON round trip {codec:,.0f} events/s, {len(text) / events:.0f} bytes/event")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The transactional history checker (:mod:`scenarios.checks.transactions`, issue 43): each
anomaly class fires alone on a small hand-written history; histories of a simulated correct
Kafka (per-partition logs with transaction markers, a last stable offset, read_committed and
read_uncommitted consumers, a read-process-write copier whose aborts re-process their input)
fire nothing; and each injected corruption fires its class and no other."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_chaos.scenarios.checks import transactions as tc
from kafka_chaos.scenarios.clients.ops import ConsumerReset
from kafka_chaos.scenarios.clients.txn_ops import (
    ABORTED, COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, UNKNOWN, ReadBack, Txn, TxnConsumer, TxnHistory,
    TxnOffset, TxnRead, TxnSend,
)

RC, RU = READ_COMMITTED, READ_UNCOMMITTED
CONSUMERS = (TxnConsumer("rc", RC), TxnConsumer("rc2", RC), TxnConsumer("ru", RU), TxnConsumer("copier", RC, "g"))


def fired(h: TxnHistory) -> set[str]:
    return tc.fired(tc.check_transactions(h))


def R(consumer: str, topic: str, offset: int, key: str, at: float, partition: int = 0) -> TxnRead:
    return TxnRead(consumer, topic, partition, offset, key, at)


# --- the hand-written base history ------------------------------------------------------------
#
# in-0:  a@0 b@1 (p#0, committed) | marker@2 | c@3 (p#1, aborted) | marker@4 | d@5 (p#2) | marker@6
# out-0: e@0 (p#2, committed) | marker@1 | a@2 b@3 (c#0, copier, committed; read in-0 below 2) | marker@4

P0 = Txn("p", 0, COMMITTED, (TxnSend("in", 0, "a", 0), TxnSend("in", 0, "b", 1)), began_at=1, committing_at=2, ended_at=3)
P1 = Txn("p", 1, ABORTED, (TxnSend("in", 0, "c", 3),), error="_ABORTED", began_at=4, ended_at=5)
P2 = Txn("p", 2, COMMITTED, (TxnSend("in", 0, "d", 5), TxnSend("out", 0, "e", 0)), began_at=6, committing_at=7, ended_at=8)
C0 = Txn("c", 0, COMMITTED, (TxnSend("out", 0, "a", 2), TxnSend("out", 0, "b", 3)), (TxnOffset("g", "in", 0, 2),),
         producer_id=1000, epoch=0, began_at=9, committing_at=10, ended_at=11)
READS = (R("rc", "in", 0, "a", 3.5), R("rc", "in", 1, "b", 3.6), R("ru", "in", 0, "a", 5.1), R("ru", "in", 1, "b", 5.2),
         R("ru", "in", 3, "c", 5.3), R("rc", "in", 5, "d", 8.5), R("rc", "out", 0, "e", 8.6),
         R("copier", "in", 0, "a", 8.8), R("copier", "in", 1, "b", 8.9),
         R("rc", "out", 2, "a", 11.5), R("rc", "out", 3, "b", 11.6))
READBACK = (ReadBack("in", 0, 0, 7, 20.0, ((0, "a"), (1, "b"), (5, "d"))),
            ReadBack("out", 0, 0, 5, 20.0, ((0, "e"), (2, "a"), (3, "b"))))
BASE = TxnHistory((P0, P1, P2, C0), CONSUMERS, READS, (ConsumerReset("rc", 0.5, "assigned"),), READBACK,
                  (TxnOffset("g", "in", 0, 2),))


def _without_reads(h: TxnHistory, *keys: tuple[str, str]) -> TxnHistory:
    return replace(h, reads=tuple(r for r in h.reads if (r.topic, r.key) not in keys or r.consumer == "ru"),
                   readback=tuple(replace(rb, records=tuple((o, k) for o, k in rb.records if (rb.topic, k) not in keys))
                                  for rb in h.readback or ()))


def _readback(h: TxnHistory, topic: str, end: int, *records: tuple[int, str]) -> TxnHistory:
    rbs = tuple(replace(rb, end=end, records=rb.records + records) if rb.topic == topic else rb for rb in h.readback or ())
    return replace(h, readback=rbs)


Q = Txn("q", 0, ABORTED, (TxnSend("in", 0, "q", 7),), (TxnOffset("g2", "out", 0, 9),), began_at=12, ended_at=13)
RR = Txn("r", 0, ABORTED, (TxnSend("out", 0, "r", 8),), (TxnOffset("g2", "in", 0, 8),), began_at=12, ended_at=13)
SELF = Txn("s", 0, ABORTED, (TxnSend("in", 0, "s", 7),), (TxnOffset("g2", "in", 0, 8),), began_at=12, ended_at=13)
# w#0 wrote in-0@7 and out-0@6; c#1 wrote out-0@5 first, then read w#0's in-0@7 (position 8) once
# it had committed: Elle's ww (c#1 before w#0 on out-0) and wr (w#0 before c#1) make a cycle
W1 = Txn("w", 0, COMMITTED, (TxnSend("in", 0, "w1", 7), TxnSend("out", 0, "w2", 6)), committing_at=12, ended_at=12.5)
C2 = Txn("c", 1, COMMITTED, (TxnSend("out", 0, "c2", 5),), (TxnOffset("g", "in", 0, 8),), began_at=11,
         committing_at=14, ended_at=14.5)
C1 = Txn("c", 1, ABORTED, (TxnSend("out", 0, "z", 5),), (TxnOffset("g", "in", 0, 6),), began_at=12, ended_at=13)

CASES: list[tuple[str, str | None, TxnHistory]] = [
    ("clean", None, BASE),
    ("read_uncommitted may read aborted", None, replace(BASE, reads=BASE.reads + (R("ru", "in", 3, "c", 9.0),))),
    ("reset allows reading again", None,
     replace(BASE, reads=BASE.reads + (R("rc", "in", 0, "a", 12.0),), resets=BASE.resets + (ConsumerReset("rc", 11.9, "lost"),))),
    ("aborted read", tc.ABORTED_READ, replace(BASE, reads=BASE.reads[:5] + (R("rc", "in", 3, "c", 5.6),) + BASE.reads[5:])),
    ("aborted read in the read-back", tc.ABORTED_READ, _readback(BASE, "in", 7, (3, "c"))),
    ("torn: read past a committed txn, missing part", tc.TORN,
     replace(BASE, reads=BASE.reads + (R("rc2", "in", 0, "a", 9.0), R("rc2", "in", 5, "d", 9.1)))),
    # an attempt whose end the client never learnt commits all of it or nothing
    ("an unknown txn read whole is not torn", None,
     replace(BASE, txns=(replace(P0, outcome=UNKNOWN, error="commit_transaction:_HUNG"), P1, P2, C0))),
    ("torn: read past an unknown txn, missing part", tc.TORN,
     replace(BASE, txns=(replace(P0, outcome=UNKNOWN, error="commit_transaction:_HUNG"), P1, P2, C0),
             reads=BASE.reads + (R("rc2", "in", 0, "a", 9.0), R("rc2", "in", 5, "d", 9.1)))),
    ("torn: readers disagree on an offset", tc.TORN, replace(BASE, reads=BASE.reads + (R("rc2", "in", 1, "x", 9.0),))),
    ("lost committed write", tc.LOST_WRITE, _without_reads(BASE, ("in", "b"))),
    ("lost: acked without offset, not in the read-back", tc.LOST_WRITE,
     replace(BASE, txns=(P0, P1, P2, replace(C0, sends=C0.sends + (TxnSend("out", 1, "f"),))),
             readback=READBACK + (ReadBack("out", 1, 0, 0, 20.0),))),
    ("deleted below the log start is not lost", None,
     replace(_without_reads(BASE, ("in", "b")), readback=(replace(READBACK[0], start=2, records=((5, "d"),)), READBACK[1]))),
    ("duplicate", tc.DUPLICATE, _readback(BASE, "out", 7, (6, "a"))),
    ("nonmonotonic read", tc.NONMONOTONIC_READ, replace(BASE, reads=BASE.reads + (R("rc", "in", 0, "a", 12.0),))),
    ("read past the LSO", tc.READ_PAST_LSO,
     replace(BASE, reads=tuple(replace(r, polled_at=6.5) if r.key == "d" else r for r in BASE.reads))),
    ("ww then wr is no G1c: a copier wrote before it read (Jepsen allows it)", None,
     replace(_readback(_readback(BASE, "in", 9, (7, "w1")), "out", 8, (5, "c2"), (6, "w2")),
             txns=BASE.txns + (W1, C2), group_offsets=(TxnOffset("g", "in", 0, 8),))),
    ("G1c: two copiers each read the other's open write", tc.G1C, replace(BASE, txns=BASE.txns + (Q, RR))),
    ("G1c: a copier read past its own open write", tc.G1C, replace(BASE, txns=BASE.txns + (SELF,))),
    ("offsets committed without the writes", tc.OFFSETS_WITHOUT_WRITES,
     replace(BASE, txns=BASE.txns + (C1,), group_offsets=(TxnOffset("g", "in", 0, 6),))),
    ("writes visible without the offsets", tc.WRITES_WITHOUT_OFFSETS, replace(BASE, group_offsets=(TxnOffset("g", "in", 0, 1),))),
    ("outcome contradiction", tc.OUTCOME_CONTRADICTION, _without_reads(BASE, ("in", "a"), ("in", "b"))),
]


@pytest.mark.parametrize(("name", "kind", "history"), CASES, ids=[c[0] for c in CASES])
def test_each_class_fires_alone(name: str, kind: str | None, history: TxnHistory) -> None:
    assert fired(history) == ({kind} if kind else set())


def test_every_class_has_a_case() -> None:
    assert {c[1] for c in CASES} - {None} == set(tc.CLASSES)


def test_results_name_the_offenders() -> None:
    results = {r.check: r for r in tc.check_transactions(CASES[3][2])}
    bad = results[tc.ABORTED_READ]
    assert bad.passed is False and bad.kind == "check"
    assert bad.observed["transactions"] == ["p#1"]
    assert bad.observed["sample"][0]["offsets"] == ["in-0@3"] and bad.observed["sample"][0]["keys"] == ["in/c"]
    assert "p#1" in bad.detail and "\n" not in bad.detail
    assert [r.check for r in tc.check_transactions(BASE)] == [*tc.CLASSES, tc.G0]
    g1c = {r.check: r for r in tc.check_transactions(replace(BASE, txns=BASE.txns + (Q, RR)))}[tc.G1C]
    assert g1c.observed["transactions"] == ["q#0", "r#0"] and "->" in g1c.detail


def test_g0_is_measured_never_failed() -> None:
    x = Txn("x", 0, UNKNOWN, (TxnSend("in", 0, "x", 7), TxnSend("out", 0, "x", 6)), error="_TIMED_OUT")
    y = Txn("y", 0, UNKNOWN, (TxnSend("out", 0, "y", 5), TxnSend("in", 0, "y", 8)), error="_TIMED_OUT")
    results = tc.check_transactions(replace(BASE, txns=BASE.txns + (x, y)))
    g0 = results[-1]
    assert g0.check == tc.G0 and g0.passed is None and g0.kind == "measurement" and g0.is_measurement
    assert g0.observed["cycles"] == 1 and g0.observed["permitted"] is True
    assert tc.fired(results) == set()


def test_unknown_outcomes_count_neither_way() -> None:
    # p#1 unknown instead of aborted: its message may be read; p#0 unknown: may be missing
    h = replace(BASE, txns=(replace(P0, outcome=UNKNOWN), replace(P1, outcome=UNKNOWN), P2, C0),
                reads=BASE.reads + (R("rc2", "in", 3, "c", 9.0),))
    assert fired(h) == set()
    assert fired(_without_reads(replace(BASE, txns=(replace(P0, outcome=UNKNOWN), P1, P2, C0)), ("in", "b"))) == set()


def test_not_judged_without_readback_or_group_offsets() -> None:
    results = {r.check: r for r in tc.check_transactions(replace(BASE, readback=None))}
    assert {k for k, r in results.items() if r.passed is None and not r.is_measurement} == set(tc.NEEDS_READBACK)
    assert "no final read-back" in results[tc.OUTCOME_CONTRADICTION].detail
    results = {r.check: r for r in tc.check_transactions(replace(BASE, group_offsets=None))}
    assert {k for k, r in results.items() if r.passed is None and not r.is_measurement} == set(tc.NEEDS_GROUP_OFFSETS)
    # without a read-back, a committed write below what was read is still lost
    assert tc.LOST_WRITE in fired(replace(_without_reads(BASE, ("in", "b")), readback=None))


def test_reads_tied_by_offset_when_a_key_is_resent() -> None:
    # the copier aborted (out-0 a@5) and re-sent 'a' committed at a@6: reading a@6 is not an aborted read
    a0 = Txn("k", 0, ABORTED, (TxnSend("out", 1, "k", 5),))
    a1 = Txn("k", 1, COMMITTED, (TxnSend("out", 1, "k", 7),), committing_at=12)
    h = replace(BASE, txns=BASE.txns + (a0, a1), reads=BASE.reads + (R("rc", "out", 7, "k", 13.0, partition=1),),
                readback=READBACK + (ReadBack("out", 1, 0, 9, 20.0, ((7, "k"),)),))
    assert fired(h) == set()
    assert fired(replace(h, reads=h.reads + (R("rc2", "out", 5, "k", 13.0, partition=1),))) == {tc.ABORTED_READ}


def test_undeclared_consumer_is_refused() -> None:
    with pytest.raises(ValueError, match="declare"):
        tc.check_transactions(replace(BASE, reads=BASE.reads + (R("who", "in", 0, "a", 1.0),)))
    with pytest.raises(ValueError, match="outcome"):
        Txn("p", 9, "maybe")


def test_json_round_trip_is_lossless() -> None:
    h = replace(BASE, txns=BASE.txns + (Q, replace(RR, producer_id=7, epoch=3, committing_at=1.25)))
    text = json.dumps(h.to_dict(), separators=(",", ":"))
    assert TxnHistory.from_dict(json.loads(text)) == h
    assert TxnHistory.from_dict(json.loads(json.dumps(replace(h, readback=None, group_offsets=None).to_dict()))) \
        == replace(h, readback=None, group_offsets=None)
    assert tc.check_transactions(TxnHistory.from_dict(json.loads(text))) == tc.check_transactions(h)


# --- a simulated correct Kafka ----------------------------------------------------------------

TPS = (("in", 0), ("in", 1), ("mid", 0))
INPUTS = (("in", 0), ("in", 1))


@dataclass
class _Open:
    index: int
    first: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass
class Sim:
    """Kafka's transactional log, as KIP-98 has it: a message takes the next offset of its
    partition, a transaction's end writes a marker on every partition it wrote, and a
    read_committed consumer reads below the LSO only, skipping markers and aborted messages."""

    now: float = 0.0
    logs: dict[tuple[str, int], list[tuple[str, int, str]]] = field(
        default_factory=lambda: {tp: [] for tp in TPS})  # (kind msg/marker, txn, key)
    txns: list[Txn] = field(default_factory=list)
    actual: list[str] = field(default_factory=list)  # open / committed / aborted
    open: dict[str, _Open] = field(default_factory=dict)  # txn_id -> its open transaction
    seqs: dict[str, int] = field(default_factory=dict)
    positions: dict[str, dict[tuple[str, int], int]] = field(
        default_factory=lambda: {c: {tp: 0 for tp in TPS} for c in ("rc", "rc2", "ru", "c0")})
    reads: list[TxnRead] = field(default_factory=list)
    resets: list[ConsumerReset] = field(default_factory=list)
    group: dict[tuple[str, int], int] = field(default_factory=dict)
    keys: int = 0

    def tick(self) -> float:
        self.now += 1.0
        return self.now

    def lso(self, tp: tuple[str, int]) -> int:
        firsts = [o.first[tp] for o in self.open.values() if tp in o.first]
        return min(firsts, default=len(self.logs[tp]))

    def begin(self, txn_id: str) -> _Open:
        if txn_id not in self.open:
            seq = self.seqs.get(txn_id, 0)
            self.seqs[txn_id] = seq + 1
            self.txns.append(Txn(txn_id, seq, UNKNOWN, began_at=self.now))
            self.actual.append("open")
            self.open[txn_id] = _Open(len(self.txns) - 1)
        return self.open[txn_id]

    def send(self, txn_id: str, tp: tuple[str, int], key: str, acked: bool) -> None:
        o = self.begin(txn_id)
        log = self.logs[tp]
        o.first.setdefault(tp, len(log))
        t = self.txns[o.index]
        self.txns[o.index] = replace(t, sends=t.sends + (TxnSend(tp[0], tp[1], key, len(log) if acked else None),))
        log.append(("msg", o.index, key))

    def end(self, txn_id: str, how: int) -> str | None:
        """how: 0/1 committed, 2 aborted, 3 unknown (committed), 4 unknown (aborted, never committing)."""
        o = self.open.pop(txn_id, None)
        if o is None:
            return None
        commit = how in (0, 1, 3)
        t = self.txns[o.index]
        outcome = {0: COMMITTED, 1: COMMITTED, 2: ABORTED}.get(how, UNKNOWN)
        self.txns[o.index] = replace(t, outcome=outcome, error=None if how < 2 else "_TIMED_OUT" if how > 2 else "_ABORTED",
                                     committing_at=self.now if commit else None, ended_at=self.now + 0.5)
        self.actual[o.index] = "committed" if commit else "aborted"
        for tp in o.first:
            self.logs[tp].append(("marker", o.index, ""))
        return self.actual[o.index]

    def poll(self, consumer: str, tp: tuple[str, int], most: int, committed: bool) -> list[tuple[int, str]]:
        pos = self.positions[consumer]
        limit = self.lso(tp) if committed else len(self.logs[tp])
        got: list[tuple[int, str]] = []
        while pos[tp] < limit and len(got) < most:
            kind, i, key = self.logs[tp][pos[tp]]
            if kind == "msg" and (not committed or self.actual[i] == "committed"):
                got.append((pos[tp], key))
                self.reads.append(TxnRead(consumer, tp[0], tp[1], pos[tp], key, self.now))
            pos[tp] += 1
        return got

    def reset(self, consumer: str, to: dict[tuple[str, int], int]) -> None:
        self.resets.append(ConsumerReset(consumer, self.now, "assigned"))
        self.positions[consumer].update(to)

    def step(self, op: int, arg: int) -> None:
        self.tick()
        if op == 0:  # a producer sends
            pid = f"p{arg % 2}"
            self.keys += 1
            self.send(pid, TPS[arg // 2 % 3], f"{pid}-{self.keys}", arg % 7 != 0)
        elif op == 1:  # a producer ends its transaction
            self.end(f"p{arg % 2}", arg // 2 % 5)
        elif op == 2:  # a consumer polls
            consumer = ("rc", "rc2", "ru")[arg % 3]
            self.poll(consumer, TPS[arg // 3 % 3], arg // 9 % 4 + 1, consumer != "ru")
        elif op == 3:  # a consumer is reset to earlier positions
            consumer = ("rc", "rc2", "ru")[arg % 3]
            self.reset(consumer, {tp: (arg // 3) % (p + 1) for tp, p in self.positions[consumer].items()})
        elif op == 4 and "c0" not in self.open:  # the copier polls its input and copies it in a transaction
            got = [(tp, key) for tp in INPUTS for _, key in self.poll("c0", tp, arg % 4 + 1, True)]
            o = self.begin("c0")
            for tp, key in got:
                self.send("c0", ("mid", 0), f"{key}>c0", arg % 5 != 0)
            t = self.txns[o.index]
            self.txns[o.index] = replace(t, offsets=tuple(TxnOffset("g", tp[0], tp[1], self.positions["c0"][tp])
                                                          for tp in INPUTS))
        elif op == 5:  # the copier ends its transaction; after anything but a commit it re-reads its input
            index = self.open["c0"].index if "c0" in self.open else -1
            actual = self.end("c0", arg % 5)
            if actual == "committed":
                self.group.update({(o.topic, o.partition): o.offset for o in self.txns[index].offsets})
            if actual is not None and self.txns[index].outcome != COMMITTED:
                self.reset("c0", {tp: self.group.get(tp, 0) for tp in INPUTS})

    def history(self) -> TxnHistory:
        self.tick()
        for txn_id in list(self.open):  # the coordinator aborts what is left open (a timeout)
            self.end(txn_id, 4)
        self.tick()
        readback = tuple(ReadBack(t, p, 0, len(self.logs[(t, p)]), self.now,
                                  tuple((o, key) for o, (kind, i, key) in enumerate(self.logs[(t, p)])
                                        if kind == "msg" and self.actual[i] == "committed"))
                         for t, p in TPS)
        consumers = (TxnConsumer("rc", RC), TxnConsumer("rc2", RC), TxnConsumer("ru", RU), TxnConsumer("c0", RC, "g"))
        return TxnHistory(tuple(self.txns), consumers, tuple(self.reads), tuple(self.resets), readback,
                          tuple(TxnOffset("g", t, p, o) for (t, p), o in sorted(self.group.items())))


actions = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 10_000)), max_size=120)


def simulate(steps: list[tuple[int, int]]) -> TxnHistory:
    sim = Sim()
    for op, arg in steps:
        sim.step(op, arg)
    return sim.history()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions)
def test_a_correct_kafka_fires_nothing(steps: list[tuple[int, int]]) -> None:
    h = simulate(steps)
    results = tc.check_transactions(h)
    assert tc.fired(results) == set(), [r.detail for r in results if r.passed is False]
    assert all(r.passed is True for r in results if not r.is_measurement)
    # every class, but those the history cannot show (no abort, no two-write transaction)
    assert {r.check for r in results if not r.is_measurement} == set(tc.CLASSES) - set(tc.unexercised(h))
    assert TxnHistory.from_dict(json.loads(json.dumps(h.to_dict()))) == h
    assert tc.offsets_went_back(h) == []  # the copier's rewinds land on what its group committed


def test_a_history_that_cannot_show_an_aborted_read_or_a_torn_transaction_does_not_pass_them() -> None:
    """Kafka's VerifiableProducer commits one record at a time and records no abort: aborted
    reads and torn transactions are left out there (named in txn_workload) rather than passed."""
    import random
    rng = random.Random(43)
    full = simulate([(rng.randrange(7), rng.randrange(10_000)) for _ in range(3000)])
    assert all(r.passed is True for r in tc.check_transactions(full) if not r.is_measurement)
    committed = [t for t in full.txns if t.outcome == COMMITTED and len(t.sends) == 1 and not t.offsets]
    assert committed
    single = dataclasses.replace(full, txns=tuple(committed), reads=(), resets=(), readback=None)
    assert tc.unexercised(full) == {}
    assert tc.unexercised(single) == {tc.ABORTED_READ: "no transaction recorded as aborted or unknown",
                                      tc.TORN: "no transaction recorded with two writes or more"}
    results = tc.check_transactions(single)
    assert {r.check for r in results if not r.is_measurement} == set(tc.CLASSES) - {tc.ABORTED_READ, tc.TORN}
    assert tc.fired(results) == set()
    figures = tc.workload_figures(single)
    assert figures.observed["unexercised"] == tc.unexercised(single) and "txn_torn not checked" in figures.detail


def test_the_simulation_exercises_the_classes_inputs() -> None:
    """A long fixed run has aborted, unknown and copier transactions, re-sent keys and G0 cycles."""
    import random
    rng = random.Random(43)
    h = simulate([(rng.randrange(7), rng.randrange(10_000)) for _ in range(3000)])
    outcomes = {t.outcome for t in h.txns}
    assert outcomes == {COMMITTED, ABORTED, UNKNOWN}
    assert any(t.offsets and t.sends for t in h.txns if t.outcome == COMMITTED)
    keys = [s.key for t in h.txns for s in t.sends]
    assert len(keys) > len(set(keys))  # the copier re-sent keys after aborts
    assert any(r.consumer == "ru" for r in h.reads) and h.resets
    results = tc.check_transactions(h)
    assert tc.fired(results) == set(), [r.detail for r in results if r.passed is False]
    assert results[-1].observed["cycles"] > 0


# --- injected corruptions -----------------------------------------------------------------------

def _end(h: TxnHistory, tp: tuple[str, int]) -> int:
    return next(rb.end for rb in h.readback or () if (rb.topic, rb.partition) == tp)


def _extend(h: TxnHistory, tp: tuple[str, int], end: int, *records: tuple[int, str]) -> TxnHistory:
    return replace(h, readback=tuple(replace(rb, end=max(rb.end, end), records=rb.records + records)
                                     if (rb.topic, rb.partition) == tp else rb for rb in h.readback or ()))


def _add(h: TxnHistory, *txns: Txn, reads: tuple[TxnRead, ...] = (), resets: tuple[ConsumerReset, ...] = ()) -> TxnHistory:
    return replace(h, txns=h.txns + txns, reads=h.reads + reads, resets=h.resets + resets)


def _last(h: TxnHistory) -> float:
    return max([rb.at for rb in h.readback or ()] + [0.0])


def aborted_read(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 0)), _last(h)
    z = Txn("zz", 0, ABORTED, (TxnSend("in", 0, "zz", e + 100),), ended_at=t + 1)
    return _add(h, z, reads=(TxnRead("rc", "in", 0, e + 100, "zz", t + 2),))


def torn(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 0)), _last(h)
    z = Txn("zt", 0, COMMITTED, tuple(TxnSend("in", 0, f"zt{i}", e + i) for i in range(3)), committing_at=t + 1)
    h = _add(h, z, reads=(TxnRead("rc", "in", 0, e, "zt0", t + 2), TxnRead("rc", "in", 0, e + 2, "zt2", t + 3)))
    return _extend(h, ("in", 0), e + 4, *((e + i, f"zt{i}") for i in range(3)))


def lost(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 1)), _last(h)
    z = Txn("zl", 0, COMMITTED, (TxnSend("in", 1, "zl0", e), TxnSend("in", 1, "zl1", e + 1)), committing_at=t + 1)
    return _extend(_add(h, z), ("in", 1), e + 3, (e, "zl0"))


def duplicate(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("mid", 0)), _last(h)
    z = Txn("zd", 0, COMMITTED, (TxnSend("mid", 0, "zd", e),), committing_at=t + 1)
    return _extend(_add(h, z), ("mid", 0), e + 3, (e, "zd"), (e + 1, "zd"))


def nonmonotonic(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 0)), _last(h)
    z = Txn("zn", 0, COMMITTED, (TxnSend("in", 0, "zn0", e), TxnSend("in", 0, "zn1", e + 1)), committing_at=t + 1)
    h = _add(h, z, reads=(TxnRead("rc2", "in", 0, e + 1, "zn1", t + 2), TxnRead("rc2", "in", 0, e, "zn0", t + 3)))
    return _extend(h, ("in", 0), e + 3, (e, "zn0"), (e + 1, "zn1"))


def read_past_lso(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 1)), _last(h)
    z = Txn("zp", 0, COMMITTED, (TxnSend("in", 1, "zp", e),), committing_at=t + 10)
    return _extend(_add(h, z, reads=(TxnRead("rc", "in", 1, e, "zp", t + 5),)), ("in", 1), e + 2, (e, "zp"))


def g1c(h: TxnHistory) -> TxnHistory:
    ei, em = _end(h, ("in", 0)), _end(h, ("mid", 0))
    q = Txn("zq", 0, ABORTED, (TxnSend("in", 0, "zq", ei + 5),), (TxnOffset("g2", "mid", 0, em + 6),))
    r = Txn("zr", 0, ABORTED, (TxnSend("mid", 0, "zr", em + 5),), (TxnOffset("g2", "in", 0, ei + 6),))
    return _add(h, q, r)


def offsets_without_writes(h: TxnHistory) -> TxnHistory:
    em = _end(h, ("mid", 0))
    z = Txn("zo", 0, ABORTED, (TxnSend("mid", 0, "zo", em + 5),), (TxnOffset("g", "in", 0, 10**6),))
    finals = tuple(o for o in h.group_offsets or () if (o.topic, o.partition) != ("in", 0))
    return replace(_add(h, z), group_offsets=finals + (TxnOffset("g", "in", 0, 10**6),))


def writes_without_offsets(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 1)), _last(h)
    z = Txn("zw", 0, COMMITTED, (TxnSend("in", 1, "zw", e),), (TxnOffset("g9", "in", 0, 5),), committing_at=t + 1)
    return _extend(_add(h, z), ("in", 1), e + 2, (e, "zw"))


def outcome_contradiction(h: TxnHistory) -> TxnHistory:
    e, t = _end(h, ("in", 0)), _last(h)
    z0 = Txn("zc", 0, COMMITTED, (TxnSend("in", 0, "zc0", e),), committing_at=t + 1)
    z1 = Txn("zc", 1, COMMITTED, (TxnSend("in", 0, "zc1", e + 2),), committing_at=t + 2)
    return _extend(_add(h, z0, z1), ("in", 0), e + 4, (e + 2, "zc1"))


CORRUPTIONS: dict[str, Callable[[TxnHistory], TxnHistory]] = {
    tc.ABORTED_READ: aborted_read, tc.TORN: torn, tc.LOST_WRITE: lost, tc.DUPLICATE: duplicate,
    tc.NONMONOTONIC_READ: nonmonotonic, tc.READ_PAST_LSO: read_past_lso, tc.G1C: g1c,
    tc.OFFSETS_WITHOUT_WRITES: offsets_without_writes, tc.WRITES_WITHOUT_OFFSETS: writes_without_offsets,
    tc.OUTCOME_CONTRADICTION: outcome_contradiction,
}


def test_every_class_has_a_corruption() -> None:
    assert set(CORRUPTIONS) == set(tc.CLASSES)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions, st.sampled_from(sorted(CORRUPTIONS)))
def test_an_injected_corruption_fires_its_class_alone(steps: list[tuple[int, int]], kind: str) -> None:
    h = CORRUPTIONS[kind](simulate(steps))
    assert fired(h) == {kind}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions, st.integers(0, 10**6))
def test_dropping_a_committed_message_everywhere_is_caught(steps: list[tuple[int, int]], pick: int) -> None:
    """Remove one committed message from every read and the read-back: a lost write, or (when
    it was its transaction's only visible one and a later attempt shows) an outcome
    contradiction."""
    h = simulate(steps)
    committed = [(t, s) for t in h.txns if t.outcome == COMMITTED for s in t.sends if s.offset is not None]
    if not committed:
        return
    _, s = committed[pick % len(committed)]
    dropped = replace(h, reads=tuple(r for r in h.reads if (r.topic, r.partition, r.offset) != (s.topic, s.partition, s.offset)),
                      readback=tuple(replace(rb, records=tuple((o, k) for o, k in rb.records if (rb.topic, rb.partition, o)
                                                                != (s.topic, s.partition, s.offset)))
                                     for rb in h.readback or ()))
    got = fired(dropped)
    assert got & {tc.LOST_WRITE, tc.OUTCOME_CONTRADICTION}, got


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions, st.integers(0, 10**6), st.sampled_from([tc.ABORTED_READ, tc.READ_PAST_LSO]))
def test_an_in_place_corruption_fires_its_class_alone(steps: list[tuple[int, int]], pick: int, kind: str) -> None:
    """Corrupt a committed producer transaction the consumers read: the client is told it
    aborted (an aborted read), or its commit is stamped after a read of it (a read past the LSO)."""
    h = simulate(steps)
    rc_read = {(r.topic, r.partition, r.offset) for r in h.reads if r.consumer in ("rc", "rc2")}
    read = [i for i, t in enumerate(h.txns) if t.txn_id != "c0" and t.outcome == COMMITTED
            and any((s.topic, s.partition, s.offset) in rc_read for s in t.sends)]
    if not read:
        return
    i = read[pick % len(read)]
    t = h.txns[i]
    if kind == tc.ABORTED_READ:
        bad = replace(t, outcome=ABORTED, error="_ABORTED", committing_at=None)
    else:
        mine = {(s.topic, s.partition, s.offset) for s in t.sends}
        last = max(r.polled_at for r in h.reads if (r.topic, r.partition, r.offset) in mine and r.consumer != "ru")
        bad = replace(t, committing_at=last + 0.5, ended_at=last + 1.0)
    assert fired(replace(h, txns=h.txns[:i] + (bad,) + h.txns[i + 1:])) == {kind}


# c#1 aborted after c#0 had committed offset 2 on in-0 (ended at 11); the rewind (a seek at 13.5)
# was answered an older offset (KAFKA-17507 on 3.6.1: the group coordinator dropped c#0's pending
# offsets), so the copier read a@0 again and c#2 copied it a second time.
ABORTED_AFTER = Txn("c", 1, ABORTED, (TxnSend("out", 0, "z", 5),), (TxnOffset("g", "in", 0, 6),), began_at=12,
                    ended_at=13)
RECOPY = Txn("c", 2, COMMITTED, (TxnSend("out", 0, "a", 7),), (TxnOffset("g", "in", 0, 1),), began_at=14,
             committing_at=14.5, ended_at=15)
WENT_BACK = replace(_readback(BASE, "out", 9, (7, "a")), txns=BASE.txns + (ABORTED_AFTER, RECOPY),
                    reads=BASE.reads + (R("copier", "in", 0, "a", 13.8),),
                    resets=BASE.resets + (ConsumerReset("copier", 13.5, "seek"),), group_offsets=(TxnOffset("g", "in", 0, 1),))


def test_a_duplicate_names_the_read_below_the_groups_committed_offset() -> None:
    back = tc.offsets_went_back(WENT_BACK)
    assert [(a.txns, a.offsets) for a in back] == [(("c#0",), ("in-0@0",))]
    assert "reset (seek) 2.50 s after c#0 committed offset 2 there for group g" in back[0].detail
    dup = next(r for r in tc.check_transactions(WENT_BACK) if r.check == tc.DUPLICATE)
    assert dup.passed is False and "below an offset the reader's group had committed" in dup.detail
    assert dup.observed["offsets_went_back"]["reads"] == 1
    # the same re-read at or above the committed offset, or before the commit ended, is no evidence
    assert tc.offsets_went_back(replace(WENT_BACK, reads=BASE.reads + (R("copier", "in", 2, "x", 13.8),))) == []
    early = replace(WENT_BACK, resets=BASE.resets + (ConsumerReset("copier", 10.5, "seek"),),
                    reads=BASE.reads + (R("copier", "in", 0, "a", 10.8),))
    assert tc.offsets_went_back(early) == []
    # a clean history's txn_duplicate record carries no such field (stored records re-check byte for byte)
    assert all("offsets_went_back" not in r.observed for r in tc.check_transactions(BASE) if isinstance(r.observed, dict))

"""Table tests of the history checker: every anomaly class fires exactly on its hand-made case
and the checker is silent on a clean history; truncation anomalies are allowed only where an
unclean election was predicted."""

from __future__ import annotations

import pytest

from kafka_chaos.scenarios.checks import client_history as hc
from kafka_chaos.scenarios.clients.ops import ClientOps, ConsumerReset, FailedSend, Poll
from kafka_chaos.scenarios.clients.delivery import Ack


def key(seq: int) -> str:
    return f"run-0-{seq}"


def clean(n: int = 6) -> dict[str, tuple]:
    """n messages acked at offsets 0..n-1, read in order by two consumers and the read-back."""
    acks = tuple(Ack(0, i, key(i), 10.0 + i) for i in range(n))
    polls = tuple(Poll(c, i, key(i), 10.5 + i, 10.0 + i) for c in ("assign", "group") for i in range(n))
    readback = tuple(Poll("readback", i, key(i), 100.0) for i in range(n))
    return {"acks": acks, "polls": polls + readback, "resets": (ConsumerReset("assign", 1.0, "assigned"),
                                                                 ConsumerReset("group", 1.0, "assigned")),
            "failed": ()}


def ops(**parts: tuple) -> list[ClientOps]:
    return [ClientOps(0.0, None, parts["acks"], parts["failed"], parts["polls"], parts["resets"])]


def kinds(parts: dict[str, tuple], **kw: bool) -> list[str]:
    if not any(p.consumer == "readback" for p in parts["polls"]):
        kw.setdefault("final_read", False)
    anomalies, _ = hc.check_partition("t-0", ops(**parts), **kw)
    return [a.kind for a in anomalies]


def case_lost_write(h: dict) -> None:
    # Offset 2 is acked; only the group member reads, and it was rebalanced right past it
    # (resumed at 3): not a skip, yet offset 5 was read and 2 never was.
    h["polls"] = tuple(p for p in h["polls"] if p.consumer == "group" and p.offset != 2)
    h["resets"] += (ConsumerReset("group", 12.0, "assigned"),)


def case_unseen(h: dict) -> None:
    # acked last and read by both consumers, but gone at the end (a truncated log)
    h["acks"] += (Ack(0, 6, key(6), 16.0),)
    h["polls"] += tuple(Poll(c, 6, key(6), 16.5, 16.0) for c in ("assign", "group"))


def case_duplicate(h: dict) -> None:
    h["polls"] += (Poll("readback", 6, key(3), 100.0),)  # key 3 again at offset 6


def case_inconsistent(h: dict) -> None:
    h["polls"] += (Poll("other", 3, "run-0-99", 20.0),)  # offset 3 read with another message


def case_nonmonotonic_poll(h: dict) -> None:
    h["polls"] += (Poll("assign", 2, key(2), 30.0, 12.0),)  # assign goes back, no reset


def case_poll_skip(h: dict) -> None:
    # the group member jumps from 2 to 4; 3 is known from its ack and the other consumers
    h["polls"] = tuple(p for p in h["polls"] if not (p.consumer == "group" and p.offset == 3))


def case_nonmonotonic_send(h: dict) -> None:
    h["acks"] += (Ack(0, 6, key(8), 16.0), Ack(0, 7, key(7), 17.0))  # seq 8 before seq 7
    h["polls"] += tuple(Poll("readback", o, key(s), 100.0) for o, s in ((6, 8), (7, 7)))


def case_failed_send_read(h: dict) -> None:
    h["failed"] = (FailedSend(key(4), "MSG_SIZE_TOO_LARGE", 15.0),)


CASES = [
    (hc.LOST_WRITE, case_lost_write),  # judged before any final read (a lost write is unseen at the end too)
    (hc.UNSEEN, case_unseen),
    (hc.DUPLICATE, case_duplicate),
    (hc.INCONSISTENT_OFFSETS, case_inconsistent),
    (hc.NONMONOTONIC_POLL, case_nonmonotonic_poll),
    (hc.POLL_SKIP, case_poll_skip),
    (hc.NONMONOTONIC_SEND, case_nonmonotonic_send),
    (hc.FAILED_SEND_READ, case_failed_send_read),
]


def test_every_anomaly_class_has_a_case() -> None:
    assert sorted(kind for kind, _ in CASES) == sorted(hc.ANOMALIES)


def test_a_clean_history_has_no_anomaly() -> None:
    anomalies, summary = hc.check_partition("t-0", ops(**clean()))
    assert anomalies == []
    assert kinds(clean(), final_read=False) == []
    assert summary.acks == 6 and summary.polls == 18 and summary.consumers == ("assign", "group", "readback")


@pytest.mark.parametrize(("kind", "make"), CASES, ids=[k for k, _ in CASES])
def test_each_class_fires_exactly_on_its_case(kind: str, make) -> None:
    h = clean()
    make(h)
    assert set(kinds(h)) == {kind}


@pytest.mark.parametrize(("kind", "make"), CASES, ids=[k for k, _ in CASES])
def test_truncation_anomalies_are_allowed_only_with_an_unclean_prediction(kind: str, make) -> None:
    h = clean()
    make(h)
    final = any(p.consumer == "readback" for p in h["polls"])
    anomalies, _ = hc.check_partition("t-0", ops(**h), truncation_allowed=True, final_read=final)
    assert anomalies and all(a.allowed == (kind in hc.TRUNCATION_ANOMALIES) for a in anomalies)
    anomalies, _ = hc.check_partition("t-0", ops(**h), truncation_allowed=False, final_read=final)
    assert anomalies and not any(a.allowed for a in anomalies)


def test_a_reset_restarts_monotonicity() -> None:
    h = clean()
    h["resets"] += (ConsumerReset("group", 29.0, "assigned"),)
    h["polls"] += (Poll("group", 2, key(2), 30.0, 12.0), Poll("group", 3, key(3), 30.0, 13.0))
    assert kinds(h) == []


def test_indefinite_failures_may_be_read_and_unseen_needs_the_final_read() -> None:
    h = clean()
    for error in ("_MSG_TIMED_OUT", "_PURGE_QUEUE", "_PURGE_INFLIGHT", "NOT_ENOUGH_REPLICAS"):
        h["failed"] = (FailedSend(key(4), error, 15.0),)
        assert kinds(h) == []
    case_unseen(h)
    assert kinds(h, final_read=False) == []


def test_an_offset_gap_nobody_saw_filled_is_no_skip() -> None:
    h = clean()
    h["acks"] = tuple(a for a in h["acks"] if a.offset != 3)
    h["polls"] = tuple(p for p in h["polls"] if p.offset != 3)
    assert kinds(h) == []


def implicitly_acked(h: dict, seq: int) -> None:
    """Message ``seq``'s acknowledgement named no offset (an idempotent producer's implicit
    acknowledgement), as a delivery report with ``offset() is None`` is recorded."""
    h["acks"] = tuple(Ack(0, None, a.key, a.acked_at) if a.key == key(seq) else a for a in h["acks"])


@pytest.mark.parametrize("seq", [0, 3, 5])
def test_an_acknowledgement_without_an_offset_read_once_is_clean(seq: int) -> None:
    h = clean()
    implicitly_acked(h, seq)
    assert kinds(h) == [] and kinds(h, final_read=False) == []


def test_an_acknowledgement_without_an_offset_takes_no_offset_rule_but_must_be_read_once() -> None:
    # What the harness used to record: offset 0 for the unknown offset. With it, the same reads
    # were four anomalies; with the offset unknown, none.
    h = clean()
    h["acks"] = tuple(Ack(0, 0, a.key, a.acked_at) if a.key == key(3) else a for a in h["acks"])
    assert set(kinds(h)) == {hc.DUPLICATE, hc.INCONSISTENT_OFFSETS, hc.NONMONOTONIC_SEND}
    h = clean()
    implicitly_acked(h, 3)
    assert kinds(h) == []
    unread = clean()
    implicitly_acked(unread, 5)
    unread["polls"] = tuple(p for p in unread["polls"] if p.key != key(5))
    assert kinds(unread) == [hc.UNSEEN]  # never read: unseen at the end; no lost_write (no offset)
    anomalies, _ = hc.check_partition("t-0", ops(**unread))
    assert "without an offset" in anomalies[0].detail
    twice = clean()
    implicitly_acked(twice, 5)
    twice["polls"] += (Poll("readback", 9, key(5), 100.0),)
    assert kinds(twice) == [hc.DUPLICATE]

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


LOSS_AT = 17.0  # the power failure of every ISR member, its loss of the tail permitted


def lost_and_written_again() -> dict[str, tuple]:
    """What seed 4406's rack power failure recorded, made small: messages 0..5 acked at offsets
    0..5; message 6 appended at 6 and read there, its acknowledgement cut off by the power failure
    at LOSS_AT, which took the whole unflushed log (the end after it: 0); the producer's retry
    appends 6 again at offset 0, then 7..13 follow at 1..7; the read-back holds that log."""
    h = clean()
    h["polls"] = tuple(p for p in h["polls"] if p.consumer != "readback")
    h["polls"] += (Poll("group", 6, key(6), 16.5, 16.0),)
    h["acks"] += tuple(Ack(0, o, key(6 + o), 30.0 + o) for o in range(8))
    h["polls"] += tuple(Poll("readback", o, key(6 + o), 100.0) for o in range(8))
    return h


def allowance(h: dict[str, tuple], **kw: object) -> dict[str, list[bool]]:
    """Anomaly kind -> whether each was allowed, on a partition whose loss was permitted
    (truncation allowed, as ``_history_results`` passes it) unless ``kw`` says otherwise."""
    options: dict[str, object] = {"truncation_allowed": True, "power_losses": (LOSS_AT,), **kw}
    anomalies, _ = hc.check_partition("t-0", ops(**h), **options)  # type: ignore[arg-type]
    found: dict[str, list[bool]] = {}
    for a in anomalies:
        found.setdefault(a.kind, []).append(a.allowed)
    return found


def test_a_duplicate_written_again_after_a_permitted_power_failure_loss_is_allowed() -> None:
    found = allowance(lost_and_written_again())
    assert found[hc.DUPLICATE] == [True]
    assert all(all(v) for v in found.values())  # the rest: truncation anomalies, allowed as before
    anomalies, _ = hc.check_partition("t-0", ops(**lost_and_written_again()), truncation_allowed=True,
                                      power_losses=(LOSS_AT,))
    (duplicate,) = [a for a in anomalies if a.kind == hc.DUPLICATE]
    assert "run-0-6 at offsets [0, 6]" in duplicate.detail and "end after it at most 0" in duplicate.detail


def survived_and_written_again() -> dict[str, tuple]:
    """The loss kept offsets 0..5 (end 6): message 6, read at 6, survives there; its retry is
    appended again at 6 and 7 follows: one message twice in the log that survived."""
    h = clean()
    h["polls"] += (Poll("group", 6, key(6), 16.5, 16.0), Poll("readback", 6, key(6), 100.0))
    h["acks"] += (Ack(0, 7, key(6), 30.0), Ack(0, 8, key(7), 31.0))
    h["polls"] += (Poll("readback", 7, key(6), 100.0), Poll("readback", 8, key(7), 100.0))
    return h


def below_the_bound() -> dict[str, tuple]:
    """Message 6's earlier copy at offset 6 lies below the lowest offset shown rewritten (8): the
    read-back lacks offset 6 but nothing shows it removed."""
    h = clean()
    h["polls"] += (Poll("group", 6, key(6), 16.5, 16.0), Poll("group", 7, key(7), 16.6, 16.1),
                   Poll("readback", 7, key(7), 100.0), Poll("group", 8, key(8), 16.7, 16.2))
    h["acks"] += (Ack(0, 8, key(9), 30.0), Ack(0, 9, key(6), 31.0))
    h["polls"] += (Poll("readback", 8, key(9), 100.0), Poll("readback", 9, key(6), 100.0))
    return h


@pytest.mark.parametrize(("make", "options"), [
    (lost_and_written_again, {"power_losses": ()}),  # no permitted loss on the partition
    (lost_and_written_again, {"power_losses": (), "truncation_allowed": True}),  # an unclean election's: not this
    (lost_and_written_again, {"power_losses": (40.0,)}),  # the copy kept was seen before the loss
    (lost_and_written_again, {"final_read": False}),  # no read-back: what the loss kept is unknown
    (survived_and_written_again, {}),  # the earlier copy survived: twice in the read-back
    (below_the_bound, {}),  # the earlier copy below the end the read-back shows
], ids=["no-loss", "unclean-only", "kept-copy-before-loss", "no-read-back", "earlier-copy-survived",
        "earlier-copy-below-end"])
def test_any_other_duplicate_still_fails_beside_a_power_failure(make, options: dict[str, object]) -> None:
    found = allowance(make(), **options)
    assert found[hc.DUPLICATE] == [False]


def test_a_power_failure_allows_nothing_on_a_clean_history_or_another_classes_case() -> None:
    assert kinds(clean(), power_losses=(LOSS_AT,)) == []  # type: ignore[arg-type]
    for kind, make in CASES:
        h = clean()
        make(h)
        final = any(p.consumer == "readback" for p in h["polls"])
        anomalies, _ = hc.check_partition("t-0", ops(**h), power_losses=(LOSS_AT,), final_read=final)
        assert anomalies and not any(a.allowed for a in anomalies), kind

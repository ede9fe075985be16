"""Delivery accounting on recorded histories: tables of acks and consumed logs."""

from __future__ import annotations

import json

import pytest

from kafka_chaos.scenarios.clients.delivery import Ack, DeliveryReport, first_ack_after, largest_gap, validate_delivery


def acks(*triples: tuple[int, int, str]) -> list[Ack]:
    return [Ack(p, o, k, acked_at=float(i)) for i, (p, o, k) in enumerate(triples)]


A0, A1, A2 = (0, 0, "r-0-0"), (0, 1, "r-0-1"), (0, 2, "r-0-2")
B0, B1 = (1, 0, "r-1-0"), (1, 1, "r-1-1")

# (name, acked, consumed, expected lost, duplicated, misplaced, lost_by_p, dup_by_p, unacked_consumed)
CASES = [
    ("empty", [], [], (), (), (), {}, {}, 0),
    ("all delivered", [A0, A1, B0], [A0, A1, B0], (), (), (), {}, {}, 0),
    ("reordered consumption", [A0, A1, A2, B0, B1], [B1, A2, B0, A0, A1], (), (), (), {}, {}, 0),
    ("tail lost after unclean election", [A0, A1, A2, B0], [A0, B0], ("r-0-1", "r-0-2"), (), (),
     {0: 2}, {}, 0),
    ("lost on two partitions", [A0, A1, B0, B1], [A1, B0], ("r-0-0", "r-1-1"), (), (),
     {0: 1, 1: 1}, {}, 0),
    ("nothing consumed", [A0, B0], [], ("r-0-0", "r-1-0"), (), (), {0: 1, 1: 1}, {}, 0),
    ("duplicate written by a retry", [A0, A1], [A0, A1, (0, 2, "r-0-1")], (), ("r-0-1",), (),
     {}, {0: 1}, 0),
    ("unacked message in the log is fine", [A0], [A0, A1], (), (), (), {}, {}, 1),
    # librdkafka#4953: appended at 1, re-sent under a bumped epoch, appended again at 2 and
    # acknowledged there; a duplicate whose ack names one of its copies, not misplaced.
    ("re-sent duplicate acknowledged at its second copy", [A0, (0, 2, "r-0-1")], [A0, A1, (0, 2, "r-0-1")],
     (), ("r-0-1",), (), {}, {0: 1}, 0),
    ("duplicate acknowledged at neither copy", [A0, (0, 5, "r-0-1")], [A0, A1, (0, 2, "r-0-1")],
     (), ("r-0-1",), ("r-0-1",), {}, {0: 1}, 0),
    ("acked key read back at another offset",
     [A0, A1], [A0, (0, 1, "other-0-9"), (0, 2, "r-0-1")], (), (), ("r-0-1",), {}, {}, 1),
    ("acked key seen on another partition", [A0], [(1, 0, "r-0-0")], (), (), ("r-0-0",), {}, {}, 0),
    # An implicit acknowledgement (no offset): read anywhere in its partition is where it belongs.
    ("offset unknown, read at its true offset", [A0, (0, None, "r-0-1"), A2], [A0, A1, A2], (), (), (),
     {}, {}, 0),
    ("offset unknown, never read", [A0, (0, None, "r-0-1")], [A0], ("r-0-1",), (), (), {0: 1}, {}, 0),
    ("offset unknown, read twice", [(0, None, "r-0-1")], [A1, (0, 7, "r-0-1")], (), ("r-0-1",), (),
     {}, {0: 1}, 0),
    ("offset unknown, read in another partition", [(0, None, "r-0-1")], [(1, 1, "r-0-1")], (), (), ("r-0-1",),
     {}, {}, 0),
]


@pytest.mark.parametrize(
    "acked, consumed, lost, duplicated, misplaced, lost_by_p, dup_by_p, unacked",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_validate_delivery(acked, consumed, lost, duplicated, misplaced, lost_by_p, dup_by_p,
                           unacked) -> None:
    report = validate_delivery(acks(*acked), consumed)

    assert report.acked == len(acked)
    assert report.consumed == len(consumed)
    assert report.lost == lost
    assert report.duplicated == duplicated
    assert report.misplaced == misplaced
    assert dict(report.lost_by_partition) == lost_by_p
    assert dict(report.duplicated_by_partition) == dup_by_p
    assert report.unacked_consumed == unacked
    assert report.ok == (not lost and not duplicated and not misplaced)


def test_lost_keys_come_in_log_order_whatever_the_ack_order() -> None:
    acked = [Ack(0, 5, "e", 1.0), Ack(1, 0, "x", 2.0), Ack(0, 2, "b", 3.0)]
    assert validate_delivery(acked, []).lost == ("b", "e", "x")


def test_acknowledgements_without_an_offset_come_last_in_their_partition() -> None:
    acked = [Ack(0, None, "u", 1.0), Ack(1, 0, "x", 2.0), Ack(0, 2, "b", 3.0)]
    assert validate_delivery(acked, []).lost == ("b", "u", "x")
    assert first_ack_after(acked + [Ack(0, 9, "c", 1.0)], 0, 0.5) == Ack(0, 9, "c", 1.0)


def test_three_copies_count_once_as_duplicated_and_twice_as_extra_copies() -> None:
    report = validate_delivery(acks(A0), [A0, (0, 1, "r-0-0"), (0, 2, "r-0-0")])
    assert report.duplicated == ("r-0-0",)
    assert report.duplicate_copies == 2


def test_duplicates_of_unacknowledged_messages_are_reported_apart() -> None:
    # A message that timed out in flight, re-sent under a bumped epoch: two copies, never acked.
    report = validate_delivery(acks(A0), [A0, (0, 1, "r-0-1"), (0, 2, "r-0-1")])
    assert report.ok and report.duplicated == () and dict(report.duplicated_by_partition) == {}
    assert report.duplicated_unacked == ("r-0-1",) and report.duplicate_copies == 1
    assert report.unacked_consumed == 1
    assert "1 of them duplicated" in report.describe()
    assert report.as_dict()["duplicated_unacked"] == 1


def test_repeated_ack_of_one_key_is_counted_once() -> None:
    report = validate_delivery([Ack(0, 0, "k", 1.0), Ack(0, 0, "k", 1.0)], [(0, 0, "k")])
    assert report.acked == 1 and report.ok


def test_report_is_readable_and_json_ready() -> None:
    report = validate_delivery(acks(A0, A1, B0), [A0, B0, B0])
    assert not report.ok
    line = report.describe()
    assert "1 lost {0: 1}" in line and "1 duplicated {1: 1}" in line
    data = json.loads(json.dumps(report.as_dict()))
    assert data["lost_by_partition"] == {"0": 1}
    assert data["acked_by_partition"] == {"0": 2, "1": 1}


def test_report_mappings_are_read_only() -> None:
    report = validate_delivery(acks(A0), [])
    with pytest.raises(TypeError):
        report.lost_by_partition[0] = 5  # type: ignore[index]
    assert isinstance(report, DeliveryReport)


GAP_CASES = [
    ("no acks", [], None, None),
    ("one ack", [1.0], None, None),
    ("regular", [0.0, 1.0, 2.0, 3.0], None, (1.0, 0.0, 1.0)),
    ("unsorted input", [5.0, 0.0, 1.0, 1.5], None, (3.5, 1.5, 5.0)),
    ("equal times", [2.0, 2.0, 2.0], None, (0.0, 2.0, 2.0)),
    ("instant inside the failover gap", [0.0, 0.1, 0.2, 9.2, 9.3], (3.0, 3.0), (9.0, 0.2, 9.2)),
    ("window ignores a bigger gap before it", [0.0, 20.0, 20.1, 25.0, 25.1], (21.0, 30.0),
     (4.9, 20.1, 25.0)),
    ("window spanning several gaps", [0.0, 1.0, 4.0, 5.0, 12.0], (0.5, 4.5), (3.0, 1.0, 4.0)),
    ("window touching an ack", [0.0, 1.0, 4.0], (4.0, 4.0), (3.0, 1.0, 4.0)),
    ("no ack after the window: never recovered", [0.0, 1.0, 2.0], (3.0, 10.0), None),
    ("no ack before the window", [5.0, 6.0], (1.0, 2.0), None),
]


@pytest.mark.parametrize("times, window, expected", [c[1:] for c in GAP_CASES],
                         ids=[c[0] for c in GAP_CASES])
def test_largest_gap(times, window, expected) -> None:
    got = largest_gap(times, window)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_largest_gap_ties_go_to_the_earliest() -> None:
    assert largest_gap([0.0, 2.0, 4.0]) == (2.0, 0.0, 2.0)


def test_largest_gap_rejects_a_reversed_window() -> None:
    with pytest.raises(ValueError, match="after its end"):
        largest_gap([0.0, 1.0], (2.0, 1.0))


def test_first_ack_after() -> None:
    history = [Ack(0, 0, "a", 1.0), Ack(1, 0, "b", 2.0), Ack(0, 1, "c", 5.0), Ack(0, 2, "d", 3.0)]
    assert first_ack_after(history, 0, 1.0) == Ack(0, 2, "d", 3.0)  # strictly after, by time
    assert first_ack_after(history, 0, 0.0) == Ack(0, 0, "a", 1.0)
    assert first_ack_after(history, 1, 2.0) is None
    assert first_ack_after(history, 7, 0.0) is None
    assert first_ack_after([], 0, 0.0) is None

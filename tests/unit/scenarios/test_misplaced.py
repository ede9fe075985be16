"""Classifying a misplaced acknowledgement from the recorded history (scenarios.checks.misplaced), and
the delivery check carrying that evidence."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kafka_chaos.scenarios.checks.functions import check_delivery
from kafka_chaos.scenarios.clients.ops import ASSIGN, GROUP, READBACK, ClientOps, FailedSend, Poll
from kafka_chaos.scenarios.clients.delivery import Ack, validate_delivery
from kafka_chaos.scenarios.checks.misplaced import CLIENT, HARNESS, KAFKA, LeaderChange, explain

T0 = 1_000.0


def ops(acks: list[Ack], polls: list[Poll], failed: list[FailedSend] | None = None) -> ClientOps:
    return ClientOps(T0, None, tuple(acks), tuple(failed or ()), tuple(polls))


def log_read(consumer: str, keys: list[str], at: float) -> list[Poll]:
    """A consumer reading the partition from offset 0: ``keys[i]`` at offset i."""
    return [Poll(consumer, offset, key, at + offset * 0.01) for offset, key in enumerate(keys)]


# The log k0 k1 k2 k3; the producer acknowledged k2 at offset 3 (where k3 is) and k3 at 3 too.
CLIENT_CASE = ops([Ack(0, 0, "k0", T0), Ack(0, 1, "k1", T0 + 1), Ack(0, 3, "k2", T0 + 2), Ack(0, 3, "k3", T0 + 3)],
                  log_read(ASSIGN, ["k0", "k1", "k2", "k3"], T0 + 1) + log_read(READBACK, ["k0", "k1", "k2", "k3"], T0 + 9))
# The assign consumer saw k2 at 2 as acknowledged; after a truncation the read-back finds k2 at 3.
KAFKA_CASE = ops([Ack(0, 0, "k0", T0), Ack(0, 1, "k1", T0 + 1), Ack(0, 2, "k2", T0 + 2)],
                 log_read(ASSIGN, ["k0", "k1", "k2"], T0 + 3) + log_read(READBACK, ["k0", "k1", "kx", "k2"], T0 + 9))


@pytest.mark.parametrize(("stretches", "key", "expected"), [
    ({"t-0": [CLIENT_CASE]}, "k2", CLIENT),
    ({"t-0": [KAFKA_CASE]}, "k2", KAFKA),
    # nobody read offset 5: nothing tells whether the log or the report is wrong
    ({"t-0": [ops([Ack(0, 5, "k2", T0)], log_read(READBACK, ["k0", "k1", "k2"], T0 + 9))]}, "k2", HARNESS),
    # offset 1 held k1 for one reader and k9 for another
    ({"t-0": [ops([Ack(0, 1, "k2", T0)], log_read(ASSIGN, ["k0", "k1", "k2"], T0 + 1)
                  + log_read(GROUP, ["k0", "k9", "k1", "k2"], T0 + 2))]}, "k2", KAFKA),
    # acknowledged in partition 0, read only in partition 1
    ({"t-0": [ops([Ack(0, 0, "k2", T0)], log_read(READBACK, ["k0"], T0 + 9))],
      "t-1": [ops([], log_read(READBACK, ["k2"], T0 + 9))]}, "k2", HARNESS),
])
def test_classification(stretches: dict[str, list[ClientOps]], key: str, expected: str) -> None:
    ack = next(a for o in stretches["t-0"] for a in o.acks if a.key == key)
    assert explain(ack, "t-0", stretches, ()).classification == expected


def test_the_evidence_lists_reads_other_acks_failures_and_epochs_near_the_ack() -> None:
    stretch = ops(list(CLIENT_CASE.acks), list(CLIENT_CASE.polls),
                  [FailedSend("k9", "_MSG_TIMED_OUT", T0 + 2.5), FailedSend("k8", "_MSG_TIMED_OUT", T0 + 60)])
    ack = stretch.acks[2]
    changes = [LeaderChange(T0 + 1.5, 2, 7), LeaderChange(T0 - 100, 1, 6)]
    evidence = explain(ack, "t-0", {"t-0": [stretch]}, changes)
    assert evidence.other_acks_at_offset == ("k3",)
    assert [r.consumer for r in evidence.reads_of_key] == [ASSIGN, READBACK]
    assert {r.key for r in evidence.reads_at_acked_offset} == {"k3"}
    assert [f[0] for f in evidence.failed_sends_near] == ["k9"]
    assert evidence.leader_epochs_near == (LeaderChange(T0 + 1.5, 2, 7),)
    assert "k3 was acknowledged at that offset too" in evidence.why
    d = evidence.to_dict()
    assert d["classification"] == CLIENT and d["acked_offset"] == 3 and d["leader_epochs_near"] == [[T0 + 1.5, 2, 7]]


def test_the_delivery_check_names_the_class_and_keeps_the_evidence() -> None:
    report = validate_delivery(CLIENT_CASE.acks, [(0, p.offset, p.key) for p in CLIENT_CASE.polls
                                                  if p.consumer == READBACK])
    assert report.misplaced == ("k2",)
    evidence = [explain(CLIENT_CASE.acks[2], "t-0", {"t-0": [CLIENT_CASE]}, ())]
    [result] = check_delivery("t", report, (), evidence)
    assert result.passed is False
    assert "(client 1: k2 every reader saw k3 at offset 3" in result.detail
    assert result.observed["misplaced_evidence"][0]["classification"] == CLIENT


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5, unique=True),
       st.data())
def test_a_report_matching_a_log_every_reader_agrees_on_is_never_blamed_on_kafka(
        keys: list[str], data: st.DataObject) -> None:
    """Readers that agree throughout leave only the client (or, without reads, the harness)."""
    wrong = data.draw(st.integers(min_value=0, max_value=len(keys) + 2))
    key = data.draw(st.sampled_from(keys))
    stretch = ops([Ack(0, wrong, key, T0)], log_read(ASSIGN, keys, T0) + log_read(READBACK, keys, T0 + 5))
    assume(wrong != keys.index(key))  # else it is not misplaced
    verdict = explain(stretch.acks[0], "t-0", {"t-0": [stretch]}, ()).classification
    assert verdict == (CLIENT if wrong < len(keys) else HARNESS)

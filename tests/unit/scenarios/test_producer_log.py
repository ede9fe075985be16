"""The idempotent producer's debug lines (librdkafka's MSGSET and ERRSEQ formats, as
confluent-kafka hands them to the ring: "<fac> [<client>] <line>") read for librdkafka#4953's
path: a possibly persisted batch, then an epoch bump that sends it again."""

from __future__ import annotations

from kafka_chaos.scenarios.clients.producer_log import explaining, possibly_persisted_resends

PREFIX = "MSGSET [rdkafka#producer-1] [thrd:127.0.0.1:40001/0]: 127.0.0.1:40001/0: "


def failed(at: float, msgid: int, count: int, error: str, actions: str, topic: str = "t", partition: int = 0) -> str:
    return (f"{at:.3f} {PREFIX}{topic} [{partition}]: MessageSet with {count} message(s) (MsgId {msgid}, "
            f"BaseSeq {msgid - 1}) encountered error: {error} (actions {actions})")


def skipped(at: float, topic: str = "t", partition: int = 0) -> str:
    return (f"{at:.3f} ERRSEQ [rdkafka#producer-1] [thrd:127.0.0.1:40001/0]: 127.0.0.1:40001/0: ProduceRequest for "
            f"{topic} [{partition}] with 3 message(s) failed due to skipped sequence numbers (PID{{Id:1000,Epoch:0}}, "
            f"base seq 70 > next seq 67) caused by previous failed request (NOT_LEADER_OR_FOLLOWER, actions "
            f"Refresh,Retry,MsgNotPersisted, base seq 67..69, base msgid 68, 4ms ago): recovering and retrying")


# The case: MsgId 68 (sequence 67) sent, transport error (it was appended at offset 67);
# its retries refused NOT_LEADER while the broker loads; the next batch refused for the gap; epoch bump.
FOUR_NINE_FIVE_THREE = [
    failed(10.0, 68, 1, "Local: Broker transport failure", "Retry,MsgPossiblyPersisted"),
    failed(11.0, 68, 1, "Broker: Not leader for partition", "Refresh,Retry,MsgNotPersisted"),
    skipped(12.0),
]


def test_a_possibly_persisted_batch_sent_again_after_an_epoch_bump_is_found_with_its_lines() -> None:
    [resend] = possibly_persisted_resends(FOUR_NINE_FIVE_THREE)
    assert (resend.batch.first_msgid, resend.batch.count, resend.bump_at) == (68, 1, 12.0)
    assert explaining([resend], "t", 0, 68) is resend
    assert explaining([resend], "t", 0, 69) is None and explaining([resend], "t", 1, 68) is None
    assert "librdkafka#4953" in resend.evidence() and "MsgPossiblyPersisted" in resend.evidence()


def test_no_resend_without_both_halves_on_the_same_partition() -> None:
    not_persisted = [failed(10.0, 68, 1, "Broker: Not leader for partition", "Refresh,Retry,MsgNotPersisted"),
                     skipped(12.0)]
    assert possibly_persisted_resends(not_persisted) == []
    no_bump = FOUR_NINE_FIVE_THREE[:2]
    assert possibly_persisted_resends(no_bump) == []
    other_partition = FOUR_NINE_FIVE_THREE[:2] + [skipped(12.0, partition=1)]
    assert possibly_persisted_resends(other_partition) == []
    bump_first = [skipped(9.0)] + FOUR_NINE_FIVE_THREE[:2]
    assert possibly_persisted_resends(bump_first) == []


def test_the_implicit_acknowledgement_path_is_no_resend() -> None:
    """The log of an implicit acknowledgement: nothing is sent twice."""
    lines = [failed(10.0, 270, 1, "Broker: Not leader for partition", "Refresh,Retry,MsgNotPersisted"),
             f"10.5 MSGSET [rdkafka#producer-1] [thrd:x]: x: t [0]: MessageSet with 124 message(s) "
             f"(MsgId 271, BaseSeq 270) delivered",
             "10.5 MSGSET [rdkafka#producer-1] [thrd:x]: x: t [0]: 1 message(s) implicitly acked by subsequent "
             "batch success (msgids 270..270, last acked 394)"]
    assert possibly_persisted_resends(lines) == []

"""The idempotent producer's debug lines (librdkafka's MSGSET, ERRSEQ and NEWPID formats, as
confluent-kafka hands them to the ring: "<fac> [<client>] <line>") read for librdkafka#4953's
path: a possibly persisted batch, then an epoch bump that renumbers its partition and sends it
again."""

from __future__ import annotations

from kafka_chaos.scenarios.clients.producer_log import explaining, possibly_persisted_resends

CLIENT = "kafka-chaos-explore-27007-12#producer-158"
PREFIX = f"MSGSET [{CLIENT}] [thrd:127.0.0.1:40001/0]: 127.0.0.1:40001/0: "


def failed(at: float, msgid: int, count: int, error: str, actions: str, topic: str = "t", partition: int = 0,
           client: str = CLIENT) -> str:
    return (f"{at:.3f} MSGSET [{client}] [thrd:127.0.0.1:40001/0]: 127.0.0.1:40001/0: {topic} [{partition}]: "
            f"MessageSet with {count} message(s) (MsgId {msgid}, BaseSeq {msgid - 1}) encountered error: {error} "
            f"(actions {actions})")


def skipped(at: float, topic: str = "t", partition: int = 0) -> str:
    return (f"{at:.3f} ERRSEQ [{CLIENT}] [thrd:127.0.0.1:40001/0]: 127.0.0.1:40001/0: ProduceRequest for "
            f"{topic} [{partition}] with 3 message(s) failed due to skipped sequence numbers (PID{{Id:1000,Epoch:0}}, "
            f"base seq 70 > next seq 67) caused by previous failed request (NOT_LEADER_OR_FOLLOWER, actions "
            f"Refresh,Retry,MsgNotPersisted, base seq 67..69, base msgid 68, 4ms ago): recovering and retrying")


def renumbered(at: float, base: int, topic: str = "t", partition: int = 0, old: str = "Id:1000,Epoch:0",
               new: str = "Id:1000,Epoch:1", client: str = CLIENT) -> str:
    return (f"{at:.3f} NEWPID [{client}] [thrd:127.0.0.1:40001/0]: {topic} [{partition}] changed PID{{{old}}} -> "
            f"PID{{{new}}} with base MsgId {base}")


# The case: MsgId 68 (sequence 67) sent, transport error (it was appended at offset 67);
# its retries refused NOT_LEADER while the broker loads; the next batch refused for the gap; the
# epoch bump renumbers the partition from MsgId 68.
FOUR_NINE_FIVE_THREE = [
    failed(10.0, 68, 1, "Local: Broker transport failure", "Retry,MsgPossiblyPersisted"),
    failed(11.0, 68, 1, "Broker: Not leader for partition", "Refresh,Retry,MsgNotPersisted"),
    skipped(12.0),
    renumbered(12.0, 68),
]


def test_a_possibly_persisted_batch_sent_again_after_an_epoch_bump_is_found_with_its_lines() -> None:
    [resend] = possibly_persisted_resends(FOUR_NINE_FIVE_THREE)
    assert (resend.batch.first_msgid, resend.batch.count, resend.bump_at, resend.base_msgid) == (68, 1, 12.0, 68)
    assert explaining([resend], "t", 0, 68) is resend
    assert explaining([resend], "t", 0, 69) is None and explaining([resend], "t", 1, 68) is None
    assert "librdkafka#4953" in resend.evidence() and "MsgPossiblyPersisted" in resend.evidence()
    assert "with base MsgId 68" in resend.evidence()


def test_a_bump_caused_by_another_partitions_gap_resends_this_one_too() -> None:
    """explore-27007-12 (real lines, shortened): t0 [4]'s MsgId 100 possibly persisted at offset
    99; the gap is t0 [7]'s; the producer-wide bump renumbers t0 [4] from MsgId 100, which the
    broker appends again at offset 100."""
    lines = [
        failed(635.603, 100, 1, "Local: Broker transport failure", "Refresh,MsgPossiblyPersisted", "t0", 4),
        failed(643.697, 100, 1, "Broker: Not leader for partition", "Refresh,MsgNotPersisted", "t0", 4),
        failed(643.789, 101, 160, "Broker: Broker received an out of order sequence number",
               "Permanent,MsgPossiblyPersisted", "t0", 7),
        skipped(643.790, "t0", 7),
        renumbered(643.792, 101, "t0", 1, "Id:0,Epoch:0", "Id:0,Epoch:1"),
        renumbered(643.792, 100, "t0", 4, "Id:0,Epoch:0", "Id:0,Epoch:1"),
        renumbered(643.792, 100, "t0", 7, "Id:0,Epoch:0", "Id:0,Epoch:1"),
    ]
    resends = possibly_persisted_resends(lines)
    assert [(r.batch.partition, r.batch.first_msgid, list(r.resent_msgids)) for r in resends] == [
        (4, 100, [100]), (7, 101, list(range(101, 261)))]
    assert explaining(resends, "t0", 4, 100) is resends[0]


def test_a_not_leader_answer_counts_as_possibly_appended() -> None:
    """test_migration on CI #35 (real lines, shortened): broker 4 appended u [1]'s MsgId 367 at
    offset 366 and, shut down before its follower acknowledged it, answered NOT_LEADER
    (DelayedProduce -> Partition.checkEnoughReplicasReachOffset); broker 1 led from offset 367
    with it, refused the next batches NOT_LEADER, then one for the gap; the epoch bump re-sent
    MsgId 367, appended again at offset 367. librdkafka marks the answer MsgNotPersisted."""
    lines = [failed(628.415, 367, 1, "Broker: Not leader for partition", "Refresh,MsgNotPersisted", "u", 1),
             failed(628.745, 370, 1, "Broker: Broker received an out of order sequence number",
                    "Permanent,MsgPossiblyPersisted", "u", 1),
             skipped(628.745, "u", 1), renumbered(628.748, 367, "u", 1, "Id:2,Epoch:0", "Id:2,Epoch:1")]
    resends = possibly_persisted_resends(lines)
    assert explaining(resends, "u", 1, 367) is resends[0]
    assert "Not leader for partition" in resends[0].evidence()


def test_no_resend_without_both_halves_on_the_same_partition_of_the_same_producer() -> None:
    # refused before any append (Partition.appendRecordsToLeader checks the ISR first)
    refused = [failed(10.0, 68, 1, "Broker: Not enough in-sync replicas", "Refresh,Retry,MsgNotPersisted"),
               skipped(12.0), renumbered(12.0, 68)]
    assert possibly_persisted_resends(refused) == []
    no_bump = FOUR_NINE_FIVE_THREE[:3]
    assert possibly_persisted_resends(no_bump) == []
    other_partition = FOUR_NINE_FIVE_THREE[:3] + [renumbered(12.0, 68, partition=1)]
    assert possibly_persisted_resends(other_partition) == []
    bump_first = [renumbered(9.0, 68)] + FOUR_NINE_FIVE_THREE[:3]
    assert possibly_persisted_resends(bump_first) == []
    # Acknowledged before the bump (a retry deduplicated by the broker): renumbered from after it.
    acked_first = FOUR_NINE_FIVE_THREE[:3] + [renumbered(12.0, 69)]
    assert possibly_persisted_resends(acked_first) == []
    # A replacement producer's first id is no bump, and its msgids are its own.
    replaced = FOUR_NINE_FIVE_THREE[:3] + [renumbered(13.0, 1, old="Invalid", new="Id:1001,Epoch:0",
                                                      client="kafka-chaos#producer-159")]
    assert possibly_persisted_resends(replaced) == []
    other_instance = FOUR_NINE_FIVE_THREE[:3] + [renumbered(13.0, 1, client="kafka-chaos#producer-159")]
    assert possibly_persisted_resends(other_instance) == []


def test_the_implicit_acknowledgement_path_is_no_resend() -> None:
    """The log of an implicit acknowledgement: nothing is sent twice."""
    lines = [failed(10.0, 270, 1, "Broker: Not leader for partition", "Refresh,Retry,MsgNotPersisted"),
             f"10.5 MSGSET [{CLIENT}] [thrd:x]: x: t [0]: MessageSet with 124 message(s) "
             f"(MsgId 271, BaseSeq 270) delivered",
             f"10.5 MSGSET [{CLIENT}] [thrd:x]: x: t [0]: 1 message(s) implicitly acked by subsequent "
             "batch success (msgids 270..270, last acked 394)"]
    assert possibly_persisted_resends(lines) == []

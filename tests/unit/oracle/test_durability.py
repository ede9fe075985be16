"""oracle.durability: which partitions a power failure may cost acknowledged records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.oracle import TopicPartition
from kafka_chaos.oracle.durability import flush_interval_messages, power_failure_losses
from tests.unit.oracle.builders import cluster, part

TP = TopicPartition("t", 0)


def losses(state, failed, earlier=frozenset()):
    return [(loss.partition, loss.lost_tails) for loss in power_failure_losses(state, frozenset(failed), earlier)]


@pytest.mark.parametrize("live, isr, failed, earlier, permitted", [
    # another ISR member keeps its log: nothing acknowledged may go
    ({1, 2, 3}, (1, 2, 3), {1}, set(), False),
    ({1, 2, 3}, (1, 2, 3), {1, 2}, set(), False),
    # every ISR member at once (a rack): the unflushed tails may go
    ({1, 2, 3}, (1, 2), {1, 2}, set(), True),
    ({1, 2, 3}, (1, 2, 3), {1, 2, 3}, set(), True),
    # the ISR had shrunk to the one member that fails
    ({1, 2, 3}, (2,), {2}, set(), True),
    # the last ISR member is down after an earlier power failure: its tail went then
    ({2, 3}, (1, 2), {2}, {1}, True),
    # ... but one an earlier power failure took and that rejoined (live, back in the ISR) has it all
    ({1, 2, 3}, (1, 2), {2}, {1}, False),
    # a hard-killed member (not power-failed) still down keeps its page cache's writes on disk
    ({2, 3}, (1, 2), {2}, set(), False),
    # a partition without an ISR (not created yet) has nothing acknowledged
    ({1, 2, 3}, (), {1, 2, 3}, set(), False),
])
def test_loss_is_permitted_only_when_every_isr_member_lost_its_tail(live, isr, failed, earlier, permitted):
    state = cluster(live, {"t": {0: part((1, 2, 3), isr[0] if isr else -1, isr)}})
    assert losses(state, failed, frozenset(earlier)) == ([(TP, tuple(isr))] if permitted else [])


@pytest.mark.parametrize("topic_config, broker_config, interval, permitted", [
    ({}, {}, None, True),
    ({"flush.messages": "1"}, {}, 1, False),  # every append fsynced before the high watermark passes it
    ({}, {"log.flush.interval.messages": "1"}, 1, False),
    ({"flush.messages": "2"}, {"log.flush.interval.messages": "1"}, 2, True),  # the topic's wins
    ({"flush.messages": " 1 "}, {}, 1, False),
    ({"flush.messages": "many"}, {}, None, True),
])
def test_flush_messages_1_permits_no_loss(topic_config, broker_config, interval, permitted):
    state = cluster({1, 2}, {"t": {0: part((1, 2), 1, (1, 2))}}, config=broker_config,
                    topic_config={"t": topic_config})
    assert flush_interval_messages(state, "t") == interval
    assert bool(losses(state, {1, 2})) is permitted


@given(isr=st.sets(st.integers(1, 5), min_size=1), failed=st.sets(st.integers(1, 5)))
def test_a_power_failure_sparing_an_isr_member_never_permits_loss(isr, failed):
    state = cluster(set(range(1, 6)), {"t": {0: part(sorted(isr), min(isr), sorted(isr))}})
    assert bool(losses(state, failed)) is (isr <= failed)

"""What a power failure may lose: Kafka's durability contract, from the state before the fault.

Kafka acknowledges an ``acks=all`` write once every ISR member has it in its log, not on disk:
``UnifiedLog.append`` fsyncs only when ``localLog.unflushedMessages >= config.flushInterval``
(``UnifiedLog.scala`` 3.9 line 936; ``flush.messages``, broker default
``log.flush.interval.messages`` = ``Long.MAX_VALUE``, ``ServerLogConfigs.java`` line 84).
Durability comes from replication, so:

* a power failure that leaves one ISR member of a partition with its log intact may lose
  nothing acknowledged (another replica has every acknowledged record in its page cache and
  becomes leader or stays one);
* a power failure that takes every ISR member's unflushed tail -- the members failed now, and
  those an earlier power failure took down that have not rejoined (a dead broker stays the last
  ISR member of a partition it led, ``PartitionStateMachine.electLeaderForPartitions``) -- may
  lose acknowledged records: Kafka's documented trade-off, *permitted* and counted;
* with ``flush.messages=1`` every ISR member fsynced a record before the high watermark passed
  it (followers append through the same ``append`` and report their offset on their next
  fetch), so even that power failure must lose nothing acknowledged.

``flush.ms`` bounds nothing here: it is applied by the log flusher every
``log.flush.scheduler.interval.ms`` (``Long.MAX_VALUE`` by default), so records younger than a
flusher pass are unflushed whatever it says; the rule takes any interval above 1 as "may lose".
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterator, Set as AbstractSet
from dataclasses import dataclass

from kafka_chaos.oracle.state import ClusterState, TopicPartition

FLUSH_MESSAGES = "flush.messages"  # the topic's override (TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG)
LOG_FLUSH_INTERVAL_MESSAGES = "log.flush.interval.messages"  # the broker default


@dataclass(frozen=True)
class PermittedLoss:
    """A partition whose acknowledged records a power failure may take, and why."""

    partition: TopicPartition
    lost_tails: tuple[int, ...]  # every ISR member, each without its unflushed tail

    def describe(self) -> str:
        return (f"{self.partition.topic}-{self.partition.partition}: power failure of every ISR member "
                f"{list(self.lost_tails)} (appends not fsynced: flush.messages above 1)")


def flush_interval_messages(state: ClusterState, topic: str) -> int | None:
    """The topic's ``flush.messages``, else the controller's ``log.flush.interval.messages``;
    None when neither is set (``Long.MAX_VALUE``: never on append) or it is not a number."""
    topic_state = state.topics.get(topic)
    raw = (topic_state.config.get(FLUSH_MESSAGES) if topic_state is not None else None) \
        or state.config.get(LOG_FLUSH_INTERVAL_MESSAGES)
    try:
        return int(raw.strip()) if raw is not None else None
    except ValueError:
        return None


def power_failure_losses(state: ClusterState, failed: AbstractSet[int],
                         failed_earlier: AbstractSet[int] = frozenset()) -> Iterator[PermittedLoss]:
    """The partitions of ``state`` (observed before the fault) whose acknowledged records the
    power failure of ``failed`` may lose. ``failed_earlier``: brokers an earlier power failure
    took; one that is down still (not live in ``state``) has no unflushed tail either."""
    without_tail = set(failed) | {b for b in failed_earlier if b not in state.live_brokers}
    for tp, p in state.partitions():
        if not p.isr or not set(p.isr) <= without_tail:
            continue
        if flush_interval_messages(state, tp.topic) == 1:
            continue
        yield PermittedLoss(tp, tuple(p.isr))

"""A topic keeps its id for as long as it exists: an invariant that needs no prediction.

KIP-516 gives every topic an id when it is created (or, for a topic older than IBP 2.8, the first
time a controller of IBP 2.8 or later takes over: ``KafkaController.processTopicIds``) and never
changes it: each broker writes it into every partition directory (``partition.metadata``) and
refuses a LeaderAndIsr that names another (``Partition.checkOrSetTopicId``, INCONSISTENT_TOPIC_ID),
so a topic whose id is rewritten or dropped in ``/brokers/topics/<t>`` strands every replica that
kept the old one. KAFKA-12835 (2.8.0, fixed in 2.8.1) is the kind this catches: a controller of
IBP below 2.8 rewrote the topic znode on a reassignment without the id
(``updateReplicaAssignmentForPartition`` wrote ``controllerContext.topicIds.get(topic)``, empty
unless ``config.usesTopicId``), and the next IBP-2.8 controller gave the topic a new one.

Judged per step over the topics in both its snapshots (ZooKeeper's ``/brokers/topics``, or the
KRaft controller's image): an id may appear, never change or disappear. A topic the step deletes
or creates, or that is being deleted at either end, is left out — a re-created topic is a new
topic with a new id.

Pure: a function of the step's two snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.checks.functions import CheckResult

CHECK = "topic_ids_kept"


def check_topic_ids_kept(before: ZkSnapshot, after: ZkSnapshot, left_out: Iterable[str] = ()) -> list[CheckResult]:
    """One result per topic that had an id before the step and still exists after it."""
    skipped = set(left_out) | before.topics_being_deleted | after.topics_being_deleted
    results = []
    for topic, had in sorted(before.topic_ids.items()):
        if had is None or topic in skipped or topic not in after.topic_ids:
            continue
        has = after.topic_ids[topic]
        expected = f"{topic} keeps topic id {had}"
        if has == had:
            results.append(CheckResult(CHECK, True, expected, has, ""))
        else:
            now = "no topic id" if has is None else f"topic id {has}"
            results.append(CheckResult(CHECK, False, expected, has,
                                       f"{topic} had topic id {had} before the step and has {now} after it"))
    return results

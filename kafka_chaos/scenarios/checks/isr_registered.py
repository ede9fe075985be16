"""Every in-sync replica of a led partition is a registered broker: an invariant that needs no
prediction.

The controller takes a broker out of every ISR when its registration goes (ZooKeeper mode:
its session expires, ``KafkaController.onBrokerFailure`` → OfflineReplica; KRaft: it is fenced,
``ReplicationControlManager.handleBrokerFenced``) -- all but the last member of an ISR, which stays
with no leader. A leader must not add it back until it registers again: its fetches carry a leader
epoch the controller has since bumped, and the leader fences them. KAFKA-9338 (2.4.1, fixed in
2.5.0) is the kind this catches: the incremental fetch session dropped the epoch a follower
sent, so a follower cut from ZooKeeper only kept fetching with its old epoch and its leaders added
it back to every ISR, naming a broker that was not registered. From 3.x leaders also refuse
unregistered or fenced followers outright (KIP-841).

Judged on the settled snapshot after each step (ZooKeeper's ``/brokers/ids``, or the KRaft
controller's active brokers): a partition with a live leader has only live brokers in its ISR.

Pure: a function of one snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.checks.functions import CheckResult

CHECK = "isr_registered"


def check_isr_registered(after: ZkSnapshot, topics: Iterable[str]) -> CheckResult:
    topics = set(topics)
    live = set(after.live_brokers)
    led = {f"{t}-{p}": sorted(set(s.isr) - live) for (t, p), s in sorted(after.partitions.items())
           if t in topics and s.leader in live}
    strays = {tp: unregistered for tp, unregistered in led.items() if unregistered}
    expected = "the ISR of every led partition names registered brokers only"
    if strays:
        return CheckResult(CHECK, False, expected, strays,
                           "; ".join(f"{tp}: ISR names unregistered broker(s) {bs}" for tp, bs in strays.items())
                           + f" (registered: {sorted(live)})")
    return CheckResult(CHECK, True, expected, {}, f"{len(led)} led partition(s), every ISR member registered")

"""Every leader a KRaft controller elects is an active broker: an invariant that needs no
prediction.

A KRaft controller elects only brokers it holds active -- registered, unfenced and not in
controlled shutdown (``ClusterControlManager.isActive``) -- or the broker its record unfences:
every ``PartitionChangeBuilder`` gets ``isAcceptableLeader = r != brokerToRemove && r !=
brokerWithUncleanShutdown && (r == brokerToAdd || clusterControl.isActive(r))``
(``ReplicationControlManager.generateLeaderAndIsrUpdates``, 3.9.0 lines 1915-1917), and the
unfence writes its ``BrokerRegistrationChangeRecord`` before the elections it causes
(``handleBrokerUnfenced``, lines 1339-1350), so in the metadata log every newly elected leader is
active at its record. KAFKA-19522 is the kind this catches: on 4.0.x with eligible leader replicas
on, ``canElectLastKnownLeader`` only logged an unacceptable last known leader and elected it anyway
(PartitionChangeBuilder 4.0.0 lines 315-318; fixed in 4.1.0), so a broker re-registering after an
unclean shutdown, still fenced, was written leader.

Judged on the step's metadata-log writes in order (:class:`harness.zkevents.PartitionStateWritten`'s
``leader_active``, set by the KRaft image at the record): a write that names a leader other than the
partition's previous one while that broker is not active. A write that keeps the leader (an ISR
change under a leader in controlled shutdown) is not an election.

Pure: a function of one step's observation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafka_chaos.harness.zkevents import PartitionStateWritten
from kafka_chaos.scenarios.checks.functions import CheckResult

CHECK = "leader_elected_active"
NO_LEADER = -1


def inactive_elections(leaders_before: Mapping[tuple[str, int], int],
                       writes: Iterable[PartitionStateWritten]) -> list[PartitionStateWritten]:
    """The writes, in order, that elect a broker the metadata log held inactive at that record."""
    leaders = dict(leaders_before)
    found = []
    for w in writes:
        key = (w.topic, w.partition)
        if w.leader != NO_LEADER and w.leader != leaders.get(key) and w.leader_active is False:
            found.append(w)
        leaders[key] = w.leader
    return found


def check_leaders_elected_active(leaders_before: Mapping[tuple[str, int], int],
                                 writes: Iterable[PartitionStateWritten]) -> list[CheckResult]:
    """One verdict for the step; none when no write says whether its leader was active (ZooKeeper
    mode, or a history written before the metadata log's writes carried it)."""
    writes = list(writes)
    judged = [w for w in writes if w.leader_active is not None]
    if not judged:
        return []
    expected = "every leader elected is an active broker (registered, unfenced, not shutting down)"
    bad = inactive_elections(leaders_before, writes)
    if bad:
        return [CheckResult(CHECK, False, expected,
                            [{"topic": w.topic, "partition": w.partition, "leader": w.leader,
                              "leader_epoch": w.leader_epoch, "at": w.at} for w in bad],
                            "; ".join(f"{w.topic}-{w.partition}: broker {w.leader} elected (leader epoch "
                                      f"{w.leader_epoch}, partition epoch {w.version}) while fenced or shutting "
                                      f"down" for w in bad),
                            bad[0].topic, bad[0].partition)]
    return [CheckResult(CHECK, True, expected, {}, f"{len(judged)} write(s) naming a leader, none elected inactive")]

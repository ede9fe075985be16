"""A KRaft broker cut from its peer brokers (``broker_peer_cut``, the ``quorum_link_partition``
capability, :class:`harness.cluster.QuorumLinkPartitioner`): every packet between the broker and
every other broker dropped, both directions, its links to the controllers and the clients kept,
until a heal step (or teardown). The controller sees nothing (the broker heartbeats on); the
partition leaders shrink the ISRs themselves -- a leader outside the cut drops it, the cut
broker's own partitions keep only it -- each through an AlterPartition that reaches the controller
(the ISR rule, on KRaft through the controller model: ``scenarios.model.isr_rules.shrink_isr``);
healed, the followers rejoin. Registered after every other kind, so the generator's repertoire
keeps its order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar, cast

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability, QuorumLinkPartitioner
from kafka_chaos.oracle import Event
from kafka_chaos.scenarios.faults.base import KRAFT_ONLY, FaultBase, FaultEnv, register_fault, require_capability
from kafka_chaos.scenarios.faults.generation import BROKER_PEER_CUT, CUT_FROM_PEERS, register_generator
from kafka_chaos.scenarios.faults.quorum_links import HEAL, LEADER_CUT, broker_cut_side, cut_or_heal, links
from kafka_chaos.scenarios.model.isr_rules import LEADER_ISR_EXPAND, LEADER_ISR_SHRINK
from kafka_chaos.scenarios.model.ledger import PLAIN, FaultWaits

log = logging.getLogger(__name__)

FROM_PEERS = "from_peers"


@dataclass
class BrokerPeerCut(FaultBase):
    """The target broker(s) cut from every other broker -- both directions, their links to the
    controllers and the clients kept -- until a later ``heal`` step (or teardown). The cut broker
    goes on heartbeating (``BrokerLifecycleManager``): no fence, no controller event -- oracle
    events none. Its followers and it stop fetching from each other, and each partition leader
    drops the followers that have not caught up for ``replica.lag.time.max.ms``
    (``Partition.maybeShrinkIsr``/``getOutOfSyncReplicas``, Partition.scala 3.9.0 lines 1243-1281
    and 1309-1319, every lag/2: ReplicaManager.scala line 387) through an AlterPartition, which the
    controller accepts -- every ISR member is active (``ReplicationControlManager.alterPartition``,
    3.9.0 lines 1008-1120, ``ineligibleReplicasForIsr`` lines 1257-1277): a leader outside the cut
    drops the cut broker, a cut leader keeps only itself (unlike ZooKeeper mode, where a broker
    cut from its peers cannot reach the controller broker). Partition epoch +1 per request, leader
    epoch unchanged at metadata version 3.6-IV0 and later (``PartitionChangeBuilder
    .triggerLeaderEpochBumpForIsrShrinkIfNeeded``, 3.9.0 lines 396-408): the ISR rule
    ``rule_leader_isr_shrink`` (:func:`scenarios.model.isr_rules.shrink_isr`). Needs records
    arriving on the partitions (the workload's): a silent follower at the leader's end offset is
    never out of sync. KRaft clusters only."""

    kind: ClassVar[str] = BROKER_PEER_CUT
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.QUORUM_LINK_PARTITION})
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    kafka_waits: ClassVar[FaultWaits] = PLAIN  # the shrink follows replica.lag.time.max.ms (the scenario's)
    # The partitions the cut broker leads stall for acks=all clients until their ISR is shrunk.
    client_windows: ClassVar[bool] = True
    _cut: bool = field(default=False, init=False)

    @property
    def label(self) -> str:
        return f"{self.kind}/{FROM_PEERS}"

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def isr_rule(self) -> str | None:
        return LEADER_ISR_SHRINK

    def oracle_events(self) -> list[Event]:
        return []  # it heartbeats on: the controller sees nothing

    def inject(self, env: FaultEnv) -> None:
        peers = _peers_of(env, self.kind, self.target.brokers)
        partitioner = cast(QuorumLinkPartitioner,
                           require_capability(env, Capability.QUORUM_LINK_PARTITION, self.kind))
        self._cut = True  # set first: a half-made cut is healed too
        for broker in self.target.brokers:
            others = [p for p in peers if p != broker]
            partitioner.cut_links(broker, others)
            log.info("%s: broker %d cut from brokers %s", self.kind, broker, others)

    def heal(self, env: FaultEnv) -> None:
        if self._cut:
            links(env, self.kind).heal_network()
            self._cut = False


@dataclass
class BrokerPeerCutHeal(FaultBase):
    """Remove the cut of an earlier ``broker_peer_cut`` step (``heal_network``; idempotent);
    target: the brokers it cut (``{"earlier": i}``). Never fenced, the followers fetch again,
    catch up and their leaders add them back one AlterPartition per follower
    (``Partition.maybeExpandIsr``, Partition.scala 3.9.0 lines 1022-1046: not while a request is in
    flight): the rule ``rule_leader_isr_expand`` (``oracle.settled``: partition epoch +1 per
    follower, leader epoch unchanged). No controller event."""

    kind: ClassVar[str] = BROKER_PEER_CUT
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.QUORUM_LINK_PARTITION})
    mode_support: ClassVar[frozenset[str]] = KRAFT_ONLY
    client_windows: ClassVar[bool] = True  # a heal's window covers the whole cut

    @property
    def label(self) -> str:
        return f"{self.kind}/{HEAL}"

    @property
    def releases(self) -> tuple[int, ...]:
        return self.target.brokers

    @property
    def isr_rule(self) -> str | None:
        return LEADER_ISR_EXPAND

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        links(env, self.kind).heal_network()
        log.info("%s: healed broker(s) %s", self.kind, list(self.target.brokers))


def _peers_of(env: FaultEnv, kind: str, brokers: tuple[int, ...]) -> list[int]:
    """Every broker of the cluster (a target's peers are those other than itself); a one-line
    error for a target that names none, or names a controller or an unknown node."""
    every = list(env.cluster.broker_ids)
    if not brokers:
        raise UsageError(f"{kind} needs brokers to cut (a broker selector)")
    unknown = sorted(set(brokers) - set(every))
    if unknown:
        raise UsageError(f"{kind} cuts brokers from their peer brokers, and {unknown} are not brokers "
                         f"(brokers: {every}; {LEADER_CUT} cuts a voter from the others)")
    if len(every) < 2:
        raise UsageError(f"{kind}: the cluster has one broker, there is no peer to cut it from")
    return every


broker_peer_cut = cut_or_heal(BROKER_PEER_CUT, FROM_PEERS, BrokerPeerCut, BrokerPeerCutHeal)
register_fault(BrokerPeerCut, build=broker_peer_cut)


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# Opt-in: with Kafka's default replica.lag.time.max.ms (30 s) a generated cut waits up to 45 s for
# its shrink, inside the 90 s convergence bound; only its heal may follow (ClusterModel.refusal).
register_generator(broker_cut_side(BROKER_PEER_CUT, CUT_FROM_PEERS, "its peers", one_broker=True))

"""The generator side of the faults (pure): what ``explore`` may draw and when a step is legal.

Each generatable fault kind registers a :class:`GeneratorSide` beside its fault class (in the
same module): its weight, whether it is drawn only when named, what it needs of the cluster,
its legality rule — how it advances the :class:`ClusterModel`, or :class:`IllegalStep` when the
harness would refuse it — and its candidate steps now. The generator and ``explore`` loop over
:data:`GENERATORS`; a new generatable kind is its fault class and its side, in one file.

The :class:`ClusterModel` knows what the harness will let a step do without a cluster: who is
alive, stopped, paused or cut, which target an earlier step hit. It is also the legality check
the shrinker runs on every candidate before spending a cluster on it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafka_chaos.harness.config import FIRST_CONTROLLER_ID
from kafka_chaos.oracle.release import Release
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import COORDINATOR_SELECTORS, Brokers, Controller, EarlierTarget, NoTarget


RESTARTS_A_BROKER = frozenset({"start", "restart", "pause", "short_pause", "log_dir_failure", "disk_error",
                               "kraft_roll"})
"""Kinds whose step starts, restarts or resumes a broker process (a ``log_dir_failure``'s or a
``disk_error``'s heal restarts it; a ``kraft_roll`` restarts it as a KRaft broker)."""

PRE_VOTE = Release(4, 0, 0)
"""The first release whose voters pre-vote (KIP-996), always -- there is no setting: a voter whose
fetch or election times out becomes Prospective in its *own* epoch (``QuorumState.transitionToProspective``,
kafka-raft 4.0.0 sources lines 607-641: ``epoch()``, "no change to the persisted electionState";
``pollFollowerAsVoter`` / ``pollUnattachedAsVoter``, KafkaRaftClient.java 4.0.0 lines 3181, 3285),
asks the voters with ``preVote`` set (``maybeSendVoteRequests``, line 3078) and becomes a Candidate,
bumping the epoch, only once a majority grants it (``maybeTransitionToCandidate``, lines 675-682) or a
voter answers UNSUPPORTED_VERSION (lines 931-937); losing, it goes back to following its leader in the
same epoch (``prospectiveTransitionAfterElectionLoss``, lines 3149-3157). The same in 4.3.1 (lines 571,
956, 3248, 3328, 3511) and in 4.4.0's jar (``ProspectiveState``); 3.9.2 has none (no ``ProspectiveState``,
no ``preVote``): its voters time out straight into Candidate, epoch + 1 (3.9.0 ``pollFollowerAsVoter``,
KafkaRaftClient.java lines 3035-3037; ``QuorumState.transitionToCandidate``, line 553)."""
# A KRaft broker cut from its peer brokers (scenarios.faults.broker_links.BrokerPeerCut): its kind,
# and what ClusterModel.cut records for it.
BROKER_PEER_CUT = "broker_peer_cut"
CUT_FROM_PEERS = "peers_kraft"


def pre_votes(release: str | None) -> bool:
    """Whether a node on ``release`` pre-votes; an unknown or unparsable release: no (conservative)."""
    if release is None:
        return False
    try:
        return Release.parse(release) >= PRE_VOTE
    except ValueError:
        return False


class IllegalStep(ValueError):
    """A step the harness would refuse, or that could not settle (one line why)."""


class Plan(Protocol):
    """What a model starts from: a schedule's brokers and topics."""

    @property
    def brokers(self) -> tuple[int, ...]: ...

    @property
    def topics(self) -> tuple[TopicSpec, ...]: ...

    @property
    def mode(self) -> str: ...

    @property
    def controllers(self) -> int: ...

    @property
    def quorum(self) -> str: ...

    @property
    def kafka_version(self) -> str | None: ...


@dataclass
class ClusterModel:
    """What the harness knows without a cluster: the brokers' process states."""

    brokers: tuple[int, ...]
    topics: Mapping[str, TopicSpec]
    live: set[int] = field(default_factory=set)
    stopped: set[int] = field(default_factory=set)  # killed or shut down, not started again
    cut: dict[int, str] = field(default_factory=dict)  # broker -> network cut variant
    failed_dir: set[int] = field(default_factory=set)  # brokers with a failed log directory, until healed
    delayed: dict[int, str] = field(default_factory=dict)  # broker -> its delayed links, until healed
    clocks: dict[int, str] = field(default_factory=dict)  # broker -> the clock fault setting its clock off, until healed
    # Steps that killed the controller, not started again: which broker only the cluster knows.
    unknown_down: list[int] = field(default_factory=list)
    targets: list[tuple[int, ...] | None] = field(default_factory=list)  # per step; None: unknown
    mode: str = "zookeeper"  # the cluster's ("kraft": KRaft controllers, quorum faults)
    controllers: int = 1  # KRaft voters
    dynamic_quorum: bool = False  # formatted dynamic (KIP-853): voters can be added and removed
    controllers_down: int = 0  # KRaft voters a fault killed, not started again
    quorum_cut: bool = False  # a voter cut from the other voters (the active controller, or a follower), until healed
    follower_cut: bool = False  # ... and it is a follower voter (quorum_follower_cut)
    zookeeper_down: bool = False  # a ZooKeeper server a step killed or paused, until restored
    # A migrating cluster (mode "migration"): the controllers provisioned and not removed, the
    # migration finalised, and each broker's role (zk, hybrid, kraft; absent: zk).
    provisioned: bool = False
    finalized: bool = False
    roles: dict[int, str] = field(default_factory=dict)
    # ... once finalised, the release each node a kraft_roll moved runs (node id -> release; absent:
    # the cluster's), and whether kraft_finalize upgraded the features (scenarios.faults.kraft_upgrade)
    releases: dict[int, str] = field(default_factory=dict)
    features_finalized: bool = False
    deleted: dict[str, TopicSpec] = field(default_factory=dict)  # topics a step deleted, not created again
    # The release the schedule's nodes run (the one it pins, else the run's; None: unknown, taken as
    # one without pre-vote), until a kraft_roll moves a node (``releases``)
    release: str | None = None

    @classmethod
    def of(cls, plan: Plan, release: str | None = None) -> ClusterModel:
        """The model at the start of ``plan``, whose nodes run the release it pins, else ``release``."""
        return cls(plan.brokers, {t.name: t for t in plan.topics}, live=set(plan.brokers), mode=plan.mode,
                   controllers=plan.controllers, dynamic_quorum=plan.quorum == "dynamic",
                   release=plan.kafka_version or release)

    def role(self, broker: int) -> str:
        return self.roles.get(broker, "zk")

    @property
    def has_quorum(self) -> bool:
        """KRaft controllers run: a KRaft cluster's, or a migrating one's once provisioned."""
        return self.mode == "kraft" or (self.mode == "migration" and self.provisioned)

    @property
    def voter_ids(self) -> list[int]:
        """The KRaft voters' node ids: past every broker's (``harness.config.ClusterConfig.controller_ids``)."""
        first = max([FIRST_CONTROLLER_ID, *(b + 1 for b in self.brokers)])
        return list(range(first, first + self.controllers))

    @property
    def voters_pre_vote(self) -> bool:
        """Every voter runs a release that pre-votes: the cluster's, or the one a kraft_roll moved it to."""
        return all(pre_votes(self.releases.get(v, self.release)) for v in self.voter_ids)

    @property
    def quorum_spare(self) -> int:
        """How many more voters may go down with a majority left to elect."""
        return (self.controllers - 1) // 2 - self.controllers_down

    # what a step may target ------------------------------------------------------------------

    def can_move(self, topic: str, partition: int) -> bool:
        """Whether a reassignment of the partition is sure to complete: every current replica
        is free. With one down, the ISR may hold only down replicas (the controller keeps the
        last one: ``ZkReplicaStateMachine.doRemoveReplicasFromIsr``), so no leader serves the
        new replicas' fetches, they never join the ISR, and ``onPartitionReassignment`` waits."""
        return set(self.topics[topic].assignment[partition]) <= set(self.free)

    @property
    def free(self) -> list[int]:
        """Live brokers no fault holds (a cut broker, or one with a failed log directory, is live
        but held until healed)."""
        return sorted(self.live - set(self.cut) - self.failed_dir)

    @property
    def spare(self) -> int:
        """How many more brokers may go down or be cut (one must stay to serve and elect)."""
        return len(self.free) - len(self.unknown_down) - 1

    @property
    def transactional(self) -> bool:
        """The transactional workload runs (two topics marked transactional)."""
        return any(t.transactional for t in self.topics.values())

    @property
    def any_held(self) -> bool:
        """A live broker is held by a fault (cut, failed log directory, delayed links), or a
        killed controller's id is unknown: a step aimed at a broker only the cluster names (the
        controller, a coordinator) may hit it."""
        return bool(self.cut or self.failed_dir or self.delayed or self.unknown_down)

    def drawable(self) -> tuple[list[int], int]:
        """Free brokers and spare count a draw may name: none while a killed controller is down
        (any named broker may be it)."""
        return ([], 0) if self.unknown_down else (self.free, self.spare)

    # replay -----------------------------------------------------------------------------------

    def _target(self, step: Step) -> tuple[int, ...] | None:
        t = step.target
        if isinstance(t, Brokers):
            return tuple(t.broker_ids)
        if isinstance(t, EarlierTarget):
            if not 0 <= t.step < len(self.targets):
                raise IllegalStep(f"'earlier: {t.step}' names no earlier step")
            return self.targets[t.step]
        if isinstance(t, NoTarget):
            return ()
        if isinstance(t, Controller):
            return None
        if isinstance(t, COORDINATOR_SELECTORS):
            if not self.transactional:
                raise IllegalStep(f"target {t}: the scenario runs no transactional workload")
            return None  # the leader of an internal topic's partition: only the cluster knows it
        raise IllegalStep(f"target {t} cannot be checked without a cluster")

    def refusal(self, step: Step) -> str | None:
        """Why ``step`` may not come now whatever its kind's own rule says, or None.  While a voter
        is cut from the others it stands as a candidate in ever later epochs on a release without
        pre-vote (before 4.0, KIP-996: :data:`PRE_VOTE`), its links to the brokers kept; a broker
        process started, restarted or resumed meanwhile looks for the metadata log's leader, may
        ask the cut voter, takes its later epoch (``maybeHandleCommonResponse``, KafkaRaftClient.java
        3.9.0 lines 2364-2373: Unattached, an observer never times out of it) and is answered
        UNKNOWN_LEADER_EPOCH by the real leader (``validateLeaderOnlyRequest``, lines 2530-2534),
        which it ignores: it never catches up until the heal (`explore --mode kraft --seed 7733` on
        3.9.2: broker 1 paused while voter 3000 was cut, its metadata log stuck, never back in an
        ISR). Refused while any voter runs such a release (or the release is unknown); once every
        voter pre-votes, the cut one keeps its epoch and the brokers find the leader."""
        if CUT_FROM_PEERS in self.cut.values() and not (step.fault == BROKER_PEER_CUT
                                                        and step.options.get("variant") == "heal"):
            # The leader-side shrink is the step's rule only: a broker started, or a leader moved,
            # while one is cut from its peers would be predicted back in ISRs it cannot fetch for.
            return f"{step.fault} while a broker is cut from its peer brokers (only its heal may come next)"
        if self.quorum_cut and step.fault in RESTARTS_A_BROKER and not self.voters_pre_vote:
            return (f"{step.fault} while a voter is cut from the others and a voter runs a release without pre-vote "
                    f"(before {PRE_VOTE}, KIP-996: a broker starting may follow the cut voter's epochs)")
        return None

    def apply(self, step: Step) -> None:
        """Advance the model by ``step``; IllegalStep when the harness would refuse it."""
        side = GENERATORS.get(step.fault)
        if side is None:
            raise IllegalStep(f"{step.fault} is not in the generator's repertoire")
        refused = self.refusal(step)
        if refused:
            raise IllegalStep(refused)
        target = self._target(step)
        side.apply(self, step, target)
        self.targets.append(target)

    def need_free(self, kind: str, target: tuple[int, ...] | None, downs: bool) -> tuple[int, ...]:
        """``target``, when every broker of it is free (and, with ``downs``, enough stay up)."""
        if target is None or not target:
            raise IllegalStep(f"{kind} needs named brokers")
        if self.unknown_down:
            # Any named broker may be the controller an earlier step killed (found by
            # `explore --seed 2026`: a controlled shutdown of the killed controller, refused).
            raise IllegalStep(f"{kind} on named brokers while a killed controller's id is unknown")
        busy = [b for b in target if b not in self.free]
        if busy:
            raise IllegalStep(f"{kind} on {busy}: not live, or held by another fault")
        if downs and len(target) > self.spare:
            raise IllegalStep(f"{kind} on {list(target)} would leave no live broker")
        return target


@dataclass(frozen=True)
class Draw:
    """What a candidate draw may use besides the model: the schedule's random stream and the
    links ``network_delay`` may delay on the chosen backend."""

    rng: random.Random
    delay_links: tuple[str, ...]


Rule = Callable[[ClusterModel, Step, "tuple[int, ...] | None"], None]
Candidates = Callable[[ClusterModel, Draw], "list[Step]"]


@dataclass(frozen=True)
class GeneratorSide:
    """One generatable fault kind: how often it is drawn, when it is legal, what it may be now."""

    kind: str
    weight: float
    apply: Rule  # advance the model, or IllegalStep
    candidates: Candidates  # legal steps of this kind now (a few, drawn with the Draw's stream)
    # Drawn only when named (GeneratorConfig.faults), so the default schedules of a seed stay
    # what they were before the kind joined the repertoire.
    opt_in: bool = False
    # What a schedule that may draw it needs of its cluster (explore leaves such a kind out
    # unless named: it would change every seed's clusters).
    cluster_overrides: Mapping[str, str] = field(default_factory=dict)
    log_dirs: int = 1
    link_proxies: bool = False
    zookeepers: int = 1  # the ZooKeeper ensemble's size
    unproduced_topic: bool = False  # an unproduced topic to act on ("d")
    filesystem: str = "plain"  # "lazyfs": data on the crash-consistency layer (harness.lazyfs)

    @property
    def shapes_cluster(self) -> bool:
        return (bool(self.cluster_overrides) or self.log_dirs > 1 or self.link_proxies or self.zookeepers > 1
                or self.filesystem != "plain")


GENERATORS: dict[str, GeneratorSide] = {}  # in registration order: the order of every draw


def register_generator(side: GeneratorSide) -> GeneratorSide:
    if side.kind in GENERATORS:
        raise ValueError(f"generator side of {side.kind!r} registered twice")
    GENERATORS[side.kind] = side
    return side

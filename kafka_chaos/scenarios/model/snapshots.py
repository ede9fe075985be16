"""From what ZooKeeper showed to what the oracle and the waits need: pure functions.

* :func:`cluster_state_of` turns the snapshot taken *before* a fault into the oracle's
  ``ClusterState`` (the oracle never sees anything observed after the fault).
* :func:`is_settled` is the oracle's precondition ("settled": every live replica of a
  partition with a live leader is back in the ISR; no reassignment or preferred election
  pending; a controller elected).
* :func:`matches_prediction` is the convergence predicate: leaders exactly, ISRs as sets,
  replica lists in order, the predicted live brokers registered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import NEWEST_RELEASE, ClusterState, Release, PartitionPhase, PartitionState, TopicState
from kafka_chaos.oracle.config import follower_throttled
from kafka_chaos.oracle.kraft.config import ELR_FEATURE, finalized_feature_config, partition_directories_supported
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.scenarios.model.isr_rules import AFTER_CONTROLLER

NO_LEADER = -1
# Kafka's own topics every scenario watches besides its own (``__consumer_offsets`` created while
# every broker is up: harness.readiness.ensure_offsets_topic; ``__transaction_state`` by the
# transactional workload's first InitProducerId, absent otherwise). Their leaders are the group and
# transaction coordinators a step may target (scenarios.model.targets.CoordinatorOf).
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def _wanted(snapshot: ZkSnapshot, topics: Iterable[str] | None) -> list[tuple[str, int]]:
    names = None if topics is None else set(topics)
    return sorted(k for k in snapshot.partitions if names is None or k[0] in names)


def partition_state_of(ps: PartitionZkState, kraft: bool = False, directories: bool = True) -> PartitionState:
    """The oracle's view of one observed partition; on a KRaft snapshot its ``version`` is the
    partition epoch, and every partition has a registration (no NewPartition). ``directories``
    False: the release's registrations carry none (before 3.7), whatever the decoder, which reads
    a record without them as 3.9 does (every replica MIGRATING), made of it."""
    if ps.version < 0 and not kraft:
        phase = PartitionPhase.NEW
    elif ps.leader == NO_LEADER:
        phase = PartitionPhase.OFFLINE
    else:
        phase = PartitionPhase.ONLINE
    return PartitionState(replicas=tuple(ps.replicas), leader=ps.leader, isr=tuple(ps.isr),
                          leader_epoch=ps.leader_epoch, leader_recovery_state=ps.leader_recovery_state,
                          phase=phase, adding_replicas=tuple(ps.adding_replicas),
                          removing_replicas=tuple(ps.removing_replicas),
                          partition_epoch=ps.version if kraft else None,
                          unassigned_dirs=tuple(ps.unassigned_dirs) if kraft and directories else (),
                          elr=tuple(ps.elr) if kraft else (), last_known_elr=tuple(ps.last_known_elr) if kraft else ())


def cluster_state_of(snapshot: ZkSnapshot, topics: Iterable[str] | None, broker_config: Mapping[str, str],
                     kafka_version: str | None = None) -> ClusterState:
    """The oracle's input: live brokers, controller, the named topics' partitions and configs,
    the (controller's) broker config that decides e.g. unclean election, and the release the
    controller runs (None: 3.9.2).  On KRaft the finalized ``eligible.leader.replicas.version``
    the metadata log showed joins the config (oracle.kraft.config.elr_feature_enabled reads it;
    absent: the release's format default)."""
    by_topic: dict[str, dict[int, PartitionState]] = {}
    kraft = snapshot.mode == Mode.KRAFT
    release = Release.parse(kafka_version) if kafka_version is not None else NEWEST_RELEASE
    directories = partition_directories_supported(release)
    for topic, p in _wanted(snapshot, topics):
        by_topic.setdefault(topic, {})[p] = partition_state_of(snapshot.partitions[(topic, p)], kraft, directories)
    if kraft:  # the quorum leader is a controller node, not a broker; no deletion queue
        return ClusterState(
            live_brokers=frozenset(snapshot.live_brokers),
            topics={t: TopicState(partitions=parts, config=dict(snapshot.topic_configs.get(t, {})))
                    for t, parts in by_topic.items()},
            controller=snapshot.controller, config=_with_features(broker_config, snapshot), mode=Mode.KRAFT,
            release=release)
    return ClusterState(
        live_brokers=frozenset(snapshot.live_brokers),
        topics={t: TopicState(partitions=parts, config=dict(snapshot.topic_configs.get(t, {})))
                for t, parts in by_topic.items()},
        # A dead controller's /controller lingers until its session expires: unknown then.
        controller=snapshot.controller if snapshot.controller in snapshot.live_brokers else None,
        config=dict(broker_config),
        # a deletion in flight (/admin/delete_topics/<t> while the topic still exists)
        topics_being_deleted=frozenset(getattr(snapshot, "topics_being_deleted", ())) & frozenset(by_topic),
        release=release,
    )


def _with_features(broker_config: Mapping[str, str], snapshot: ZkSnapshot) -> dict[str, str]:
    """The controller's config plus what the log finalized: ``metadata.version`` and the ELR
    feature's level (:func:`oracle.kraft.config.finalized_feature_config`; the ELR level alone when
    the log showed no metadata version)."""
    config = dict(broker_config)
    features = getattr(snapshot, "features", {})
    level = features.get(ELR_FEATURE)
    if level is not None:
        config[ELR_FEATURE] = str(level)
    config.update(finalized_feature_config(features))
    return config


def unsettled(snapshot: ZkSnapshot, topics: Iterable[str] | None, excused: Iterable[int] = ()) -> list[str]:
    """Why the snapshot is not settled (empty when it is). ``excused`` brokers are live but
    cannot catch up while a fault holds them (a follower cut off from its peers): their absence
    from an ISR does not count — nor the absence of the followers of a partition such a broker
    leads (their fetches cross its held links: seen with 80 % loss on a broker that led a
    ``__consumer_offsets`` partition)."""
    reasons: list[str] = []
    live = set(snapshot.live_brokers)
    catching_up = live - set(excused)
    if live and snapshot.controller is None:
        reasons.append("no controller")
    if snapshot.pending_reassignment and not reassignments_stalled(snapshot):
        reasons.append("reassignment pending")
    if getattr(snapshot, "pending_preferred_election", False):
        reasons.append("preferred election pending")
    for key in _wanted(snapshot, topics):
        ps = snapshot.partitions[key]
        name = f"{key[0]}-{key[1]}"
        if ps.version < 0:
            if any(r in live for r in ps.replicas):
                reasons.append(f"{name} has no state yet")
            continue
        config = _throttle_config(snapshot, key[0])
        if (ps.adding_replicas or ps.removing_replicas) and not _stalled(ps, live, config):
            reasons.append(f"{name} is being reassigned")
        if ps.leader != NO_LEADER and ps.leader in live:
            missing = [r for r in ps.replicas if r in catching_up and r not in ps.isr and not _throttled(ps, r, config)] \
                if ps.leader in catching_up else []
            if missing:
                reasons.append(f"{name} ISR {list(ps.isr)} lacks live {missing}")
        elif ps.leader != NO_LEADER and live:
            # With no broker live no controller is left to move it (a total outage keeps the
            # last leaders in ZooKeeper): that state is as settled as it will get.
            reasons.append(f"{name} leader {ps.leader} is not live")
    return reasons


def _throttle_config(snapshot: ZkSnapshot, topic: str) -> Mapping[str, str] | None:
    """The topic's overrides where a throttled follower may stay behind: ZooKeeper mode only, the
    KRaft model has no such alternative (oracle.controller.WorkingController.settle)."""
    return None if snapshot.mode == "kraft" else snapshot.topic_configs.get(topic)


def _throttled(ps: PartitionZkState, broker: int, config: Mapping[str, str] | None) -> bool:
    return config is not None and follower_throttled(config, ps.partition, broker)


def _stalled(ps: PartitionZkState, live: set[int], config: Mapping[str, str] | None = None) -> bool:
    """A reassignment that waits for a target replica that is down, or for an added replica the
    topic throttles that is not in the ISR yet: it completes only once every target replica is in
    the ISR (``KafkaController.isReassignmentComplete``; KRaft from 3.8.0,
    ``PartitionReassignmentReplicas.maybeCompleteReassignment``), so nothing moves until a fault
    brings that broker back, or at the throttle's pace (with ``follower.replication.throttled.rate``
    at a few bytes a second, never) -- as settled as it gets."""
    target = [r for r in ps.replicas if r not in ps.removing_replicas]
    if any(r not in live for r in target):
        return True
    return any(r not in ps.isr and _throttled(ps, r, config) for r in ps.adding_replicas)


def reassignments_stalled(snapshot: ZkSnapshot) -> bool:
    """Every partition being reassigned waits for a down target replica or a throttled added one
    (and some partition is): a pending reassignment nothing but a later fault can move."""
    moving = [ps for ps in snapshot.partitions.values() if ps.adding_replicas or ps.removing_replicas]
    live = set(snapshot.live_brokers)
    return bool(moving) and all(_stalled(ps, live, _throttle_config(snapshot, ps.topic)) for ps in moving)


def is_settled(snapshot: ZkSnapshot, topics: Iterable[str] | None, excused: Iterable[int] = ()) -> bool:
    return not unsettled(snapshot, topics, excused)


def mismatches(snapshot: ZkSnapshot, predicted: ClusterState, topics: Iterable[str]) -> list[str]:
    """How the snapshot differs from the predicted state (empty when it matches)."""
    diffs: list[str] = []
    if set(snapshot.live_brokers) != set(predicted.live_brokers):
        diffs.append(f"live brokers {sorted(snapshot.live_brokers)} != {sorted(predicted.live_brokers)}")
    if snapshot.mode == "kraft":
        if snapshot.controller is None:
            diffs.append("no quorum leader")
    elif snapshot.live_brokers and snapshot.controller not in snapshot.live_brokers:
        # Every predicted state has a controller once the election ran: a hard-killed
        # controller's /controller and /brokers/ids go with its session, and for a few ms, until
        # a survivor's KafkaController.elect wins, nothing leads (and with no partition to move
        # the partitions already match): checked then, single_controller failed.
        diffs.append("no live controller")
    if snapshot.pending_reassignment and not any(
            ps.adding_replicas or ps.removing_replicas for ts in predicted.topics.values() for ps in ts.partitions.values()):
        diffs.append("reassignment pending")
    if getattr(snapshot, "pending_preferred_election", False):
        diffs.append("preferred election pending")
    deleting = set(getattr(snapshot, "topics_being_deleted", ()))
    for topic in topics:
        ts = predicted.topics.get(topic)
        if ts is None:
            # predicted gone (a completed deletion): the topic znode must be gone too
            if snapshot.has_topic(topic):
                diffs.append(f"topic {topic} still exists")
            continue
        if (topic in predicted.topics_being_deleted) != (topic in deleting):
            diffs.append(f"topic {topic} {'not ' if topic in predicted.topics_being_deleted else ''}queued for deletion")
        for p, want in ts.partitions.items():
            got = snapshot.partitions.get((topic, p))
            name = f"{topic}-{p}"
            if got is None:
                diffs.append(f"{name} missing")
                continue
            diffs += partition_differences(name, got, want)
    return diffs


def partition_differences(name: str, got: Any, want: Any, *, versus: str = "") -> list[str]:
    """The comparison every partition check makes: leader exact, ISR as a set (controller-made
    ISRs keep their order, leader-made ones append in catch-up order), replicas in order (AR
    order is the preference order).  ``got``/``want`` have ``leader``, ``isr``, ``replicas``."""
    diffs = []
    if got.leader != want.leader:
        diffs.append(f"{name} leader {got.leader} != {versus}{want.leader}")
    if set(got.isr) != set(want.isr):
        diffs.append(f"{name} ISR {sorted(got.isr)} != {versus}{sorted(want.isr)}")
    if tuple(got.replicas) != tuple(want.replicas):
        diffs.append(f"{name} replicas {list(got.replicas)} != {versus}{list(want.replicas)}")
    return diffs


def matches_prediction(snapshot: ZkSnapshot, predicted: ClusterState, topics: Iterable[str]) -> bool:
    return not mismatches(snapshot, predicted, list(topics))


def judged_topics(topics: Iterable[str], state: ClusterState, isr_rule: str | None = None) -> list[str]:
    """The topics a step's state is judged on: the scenario's, and the internal ones the oracle's
    input holds -- ``__consumer_offsets`` is predicted like any topic, and several brokers killed
    at once often hit two of its ISR members (an older history's input may lack it). Not under a
    leader-side ISR rule (``isr_rule``): whether a leader drops a silent follower depends on whether
    the partition was written meanwhile -- a follower at the leader's end offset stays in sync
    however long it is silent (``Partition.isCaughtUp``, 3.9: ``leaderEndOffset == logEndOffset``)
    -- and only the scenario's topics are written for sure (an offsets partition only when a group
    it hosts commits). A rule applied after the controller's writes (``AFTER_CONTROLLER``: a broker
    cut from ZooKeeper only) leaves them judged: the controller takes the broker out of every ISR,
    internal topics' included, and a check reading them (``isr_registered``) must not see a
    snapshot taken between the expired registration and the controller's last ISR write."""
    topics = list(topics)
    if isr_rule is not None and isr_rule not in AFTER_CONTROLLER:
        return topics
    return [*topics, *(t for t in INTERNAL_TOPICS if t in state.topics and t not in topics)]


def predicted_partitions(state: ClusterState, topics: Iterable[str]) -> dict[tuple[str, int], PartitionState]:
    return {(t, p): ps for t in topics if t in state.topics for p, ps in state.topics[t].partitions.items()}


def observed_partitions(snapshot: ZkSnapshot, topics: Iterable[str]) -> dict[tuple[str, int], PartitionZkState]:
    return {k: snapshot.partitions[k] for k in _wanted(snapshot, list(topics))}

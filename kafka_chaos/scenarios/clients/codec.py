"""Lossless JSON forms of what a step observes, so a stored history can be checked again.

The oracle's values (``ClusterState``, its events) and the harness's readings (metadata
answers, acknowledgements, delivery reports) go to plain JSON and back unchanged: a check run
over a history read back from disk must see exactly what the runner saw. ZooKeeper snapshots and
events have their own ``to_dict``/``from_dict`` in :mod:`harness.observer` /
:mod:`harness.zkevents`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from kafka_chaos.oracle import EVENT_TYPES, ClusterState, Event, PartitionPhase, PartitionState, TopicPartition, TopicState
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.release import NEWEST as NEWEST_RELEASE, Release
from kafka_chaos.scenarios.clients.delivery import Ack, DeliveryReport

JsonDict = dict[str, Any]


# --- oracle states ------------------------------------------------------------------------------

def partition_to_dict(p: PartitionState) -> JsonDict:
    d: JsonDict = {"replicas": list(p.replicas), "leader": p.leader, "isr": list(p.isr), "leader_epoch": p.leader_epoch,
                   "leader_recovery_state": p.leader_recovery_state, "phase": p.phase.value,
                   "adding_replicas": list(p.adding_replicas), "removing_replicas": list(p.removing_replicas)}
    if p.partition_epoch is not None:  # KRaft's; ZooKeeper-mode histories stay byte for byte
        d["partition_epoch"] = p.partition_epoch
    if p.unassigned_dirs:  # after a ZooKeeper migration only
        d["unassigned_dirs"] = list(p.unassigned_dirs)
    # Kafka 4.x with ELR on (KIP-966) only. Left out before, so `kafka-chaos check` re-predicted
    # every step after one that filled an ELR from an empty one: a broker's start then matched the
    # unclean-shutdown plan where the live run had the ELR election (docs/kraft.md's open re-check
    # finding, seeds 4611/4612; `explore --mode kraft --seed 7701` on 4.4.0 the same).
    if p.elr:
        d["elr"] = list(p.elr)
    if p.last_known_elr:
        d["last_known_elr"] = list(p.last_known_elr)
    return d


def partition_from_dict(d: Mapping[str, Any]) -> PartitionState:
    return PartitionState(
        replicas=tuple(d["replicas"]), leader=int(d["leader"]), isr=tuple(d["isr"]),
        leader_epoch=int(d["leader_epoch"]), leader_recovery_state=int(d["leader_recovery_state"]),
        phase=PartitionPhase(d["phase"]), adding_replicas=tuple(d["adding_replicas"]),
        removing_replicas=tuple(d["removing_replicas"]),
        partition_epoch=None if d.get("partition_epoch") is None else int(d["partition_epoch"]),
        unassigned_dirs=tuple(d.get("unassigned_dirs", ())), elr=tuple(d.get("elr", ())),
        last_known_elr=tuple(d.get("last_known_elr", ())))


def state_to_dict(state: ClusterState) -> JsonDict:
    d: JsonDict = {
        "live_brokers": sorted(state.live_brokers),
        "controller": state.controller,
        "config": dict(state.config),
        "topics": {name: {"config": dict(ts.config),
                          "partitions": {str(p): partition_to_dict(ps) for p, ps in sorted(ts.partitions.items())}}
                   for name, ts in sorted(state.topics.items())},
    }
    # Only when set, so histories without a deletion or a failed log directory stay byte for byte.
    if state.topics_being_deleted:
        d["topics_being_deleted"] = sorted(state.topics_being_deleted)
    if state.offline_replicas:
        d["offline_replicas"] = {str(b): [_encode(tp) for tp in sorted(tps)]
                                 for b, tps in sorted(state.offline_replicas.items())}
    # The controller memory the runner carried into the oracle's input, so a re-check predicts
    # from the same input the run did.
    if state.deleted_offline_replicas:
        d["deleted_offline_replicas"] = [[_encode(tp), b] for tp, b in sorted(state.deleted_offline_replicas)]
    if state.deletions_forgotten:
        d["deletions_forgotten"] = sorted(state.deletions_forgotten)
    # The controller's release keys the oracle's rules; 3.9.2's is left out (histories before
    # releases were modelled predicted with its rules).
    if state.release != NEWEST_RELEASE:
        d["kafka_version"] = str(state.release)
    if state.mode is not Mode.ZOOKEEPER:
        d["mode"] = state.mode.value
    return d


def state_from_dict(d: Mapping[str, Any], kafka_version: str | None = None) -> ClusterState:
    """``kafka_version``: the run's release, for an input stored before the release was (a
    release's rules apply to its runs whenever they are re-checked)."""
    return ClusterState(
        live_brokers=frozenset(int(b) for b in d["live_brokers"]),
        controller=d["controller"],
        config=dict(d["config"]),
        topics={name: TopicState({int(p): partition_from_dict(ps) for p, ps in t["partitions"].items()},
                                 dict(t["config"]))
                for name, t in d["topics"].items()},
        topics_being_deleted=frozenset(str(t) for t in d.get("topics_being_deleted", ())),
        offline_replicas={int(b): frozenset(TopicPartition(str(tp["topic"]), int(tp["partition"])) for tp in tps)
                          for b, tps in d.get("offline_replicas", {}).items()},
        deleted_offline_replicas=frozenset((TopicPartition(str(tp["topic"]), int(tp["partition"])), int(b))
                                           for tp, b in d.get("deleted_offline_replicas", ())),
        deletions_forgotten=frozenset(str(t) for t in d.get("deletions_forgotten", ())),
        release=_release(d.get("kafka_version", kafka_version)),
        mode=Mode(d.get("mode", Mode.ZOOKEEPER.value)),
    )


def _release(version: object) -> Release:
    try:
        return Release.parse(str(version)) if version is not None else NEWEST_RELEASE
    except ValueError:  # a run of a build that is no release ("3.9.2-SNAPSHOT"): the newest rules
        return NEWEST_RELEASE


# --- oracle events: generic over the frozen event dataclasses -----------------------------------

def _encode(value: Any) -> Any:
    if isinstance(value, TopicPartition):
        return {"topic": value.topic, "partition": value.partition}
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    """The inverse of :func:`_encode` for the shapes events use: tuples of ints, tuples of
    topic-partitions, int-keyed assignments, string-keyed configs."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and set(v) == {"topic", "partition"} for v in value):
            return tuple(TopicPartition(v["topic"], int(v["partition"])) for v in value)
        return tuple(_decode(v) for v in value)
    if isinstance(value, dict):
        if value and all(k.lstrip("-").isdigit() and isinstance(v, list) for k, v in value.items()):
            return {int(k): _decode(v) for k, v in value.items()}
        return dict(value)
    return value


def event_to_dict(event: Event) -> JsonDict:
    """Every field, but an empty-tuple or False default left out (``BrokerStartup.kraft_brokers``,
    ``BrokerFailure.restarting``: older histories stay byte for byte)."""
    return {"type": type(event).KIND, **{f.name: _encode(getattr(event, f.name)) for f in fields(event)
                                         if not (_left_out(f.default) and getattr(event, f.name) == f.default)}}


def _left_out(default: object) -> bool:
    return default is False or (isinstance(default, tuple) and default == ())


def event_from_dict(d: Mapping[str, Any]) -> Event:
    cls = EVENT_TYPES.get(d.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown oracle event type {d.get('type')!r}")
    event: Event = cls(**{k: _decode(v) for k, v in d.items() if k != "type"})
    return event


# --- harness readings ----------------------------------------------------------------------------

def ack_to_list(a: Ack) -> list[Any]:
    return [a.partition, a.offset, a.key, a.acked_at]


def ack_from_list(v: list[Any]) -> Ack:
    return Ack(int(v[0]), None if v[1] is None else int(v[1]), str(v[2]), float(v[3]))


def report_to_dict(r: DeliveryReport) -> JsonDict:
    return {"acked": r.acked, "consumed": r.consumed, "lost": list(r.lost), "duplicated": list(r.duplicated),
            "lost_by_partition": {str(p): n for p, n in r.lost_by_partition.items()},
            "duplicated_by_partition": {str(p): n for p, n in r.duplicated_by_partition.items()},
            "misplaced": list(r.misplaced), "unacked_consumed": r.unacked_consumed,
            "duplicate_copies": r.duplicate_copies, "duplicated_unacked": list(r.duplicated_unacked),
            "acked_by_partition": {str(p): n for p, n in r.acked_by_partition.items()}}


def report_from_dict(d: Mapping[str, Any]) -> DeliveryReport:
    def counts(m: Mapping[str, int]) -> dict[int, int]:
        return {int(p): int(n) for p, n in m.items()}

    return DeliveryReport(
        acked=int(d["acked"]), consumed=int(d["consumed"]), lost=tuple(d["lost"]), duplicated=tuple(d["duplicated"]),
        lost_by_partition=counts(d["lost_by_partition"]), duplicated_by_partition=counts(d["duplicated_by_partition"]),
        misplaced=tuple(d["misplaced"]), unacked_consumed=int(d["unacked_consumed"]),
        duplicate_copies=int(d["duplicate_copies"]), duplicated_unacked=tuple(d["duplicated_unacked"]),
        acked_by_partition=counts(d["acked_by_partition"]))

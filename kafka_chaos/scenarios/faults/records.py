"""Records deleted while the cluster runs: partitions' log start offsets moved forward, as an operator
does with ``kafka-delete-records.sh`` or ``Admin.deleteRecords`` — the DeleteRecords API (key 21,
version 1: the newest 2.4.0 answers, kept by 4.0), sent to each partition's leader as the
AdminClient sends it (``KafkaAdminClient.deleteRecords`` groups the partitions by leader), with the
project's own wire code (:func:`harness.metadata.delete_records`).

What the leader does (``ReplicaManager.deleteRecords`` → ``Partition.deleteRecordsOnLeader``, the
same in 2.4.1 and 3.9): offset -1 (``DeleteRecordsRequest.HIGH_WATERMARK``) becomes its high
watermark; a compacted-only topic is refused (POLICY_VIOLATION), an offset above the high watermark
too (OFFSET_OUT_OF_RANGE, ``Log.maybeIncrementLogStartOffset``); otherwise its log start moves at
once, and the answer waits (``DelayedDeleteRecords``, up to the request's TimeoutMs, then
REQUEST_TIMED_OUT) until the *low watermark* — the lowest log start of the leader and every live
replica (``Partition.lowWatermarkIfLeader``) — reached it: the followers take the leader's log
start from their next fetch (``ReplicaFetcherThread.processPartitionData`` →
``maybeIncrementLogStartOffset``). That low watermark is what each partition's answer carries, and
what this fault records (``outcome``, the step's ``traits.outcome`` in the history): every offset
below it was removed from every live replica's log. After REQUEST_TIMED_OUT (a live follower that did
not fetch in time: paused, cut) the answer carries the low watermark from before the deletion, so the
leader's log start (ListOffsets EARLIEST) is recorded beside it as ``log_start``: below it the
records are gone from the leader, and so from any read of the partition while it leads.

What the controller does: nothing. No znode, no metadata record, no LeaderAndIsr; leaders, ISRs,
replicas and epochs stay as they were (the partition's state is the leader's ``Log`` alone). The
step's prediction is "nothing changes" (no oracle events).

What the checks must know (and do): the delivery and history checks count an acknowledged message
below a recorded low watermark that the final read-back lacks as ``deleted``, never as lost
(:mod:`scenarios.checks.client_history`); a consumer positioned below the new log start gets
OFFSET_OUT_OF_RANGE and resets to it (``auto.offset.reset`` earliest) without any recorded reset, so
a jump over deleted offsets is no ``poll_skip``. ``replica_logs_agree`` compares each partition from
the highest first batch its replicas hold on disk (:func:`scenarios.history.replica_logs.compared_range`),
and the segments below a log start are deleted only later, whole and from the oldest, by each
broker's retention thread (``Log.deleteOldSegments`` → ``deleteLogStartOffsetBreachedSegments``,
every ``log.retention.check.interval.ms``): a prefix, so what is left is compared alike; a segment
renamed away while read leaves that partition unread, and it is read again
(:func:`scenarios.run.log_view.replica_logs`). ``replicas_on_disk`` asks which partitions a broker
holds at all: the log and its active segment stay (a segment with no successor is never deleted).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kafka_chaos.common.errors import UsageError
from kafka_chaos.oracle import Event
from kafka_chaos.scenarios.faults.base import FaultBase, FaultEnv, StepTopics, register_fault, reject_unknown_options
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import NoTarget, Target

log = logging.getLogger(__name__)

KIND = "delete_records"
HIGH_WATERMARK = "high_watermark"
# How long each leader may wait for its live followers' log starts (DeleteRecords' TimeoutMs): they
# fetch every replica.fetch.wait.max.ms (500 ms) at the latest.
WAIT_MS = 10_000
# A leader that moved between the snapshot and the request (NOT_LEADER_OR_FOLLOWER) is looked up again.
ATTEMPTS = 3
RETRY_PAUSE_S = 1.0
NOT_LEADER = frozenset({"NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE"})
TIMED_OUT = "REQUEST_TIMED_OUT"

Before = str | int | float  # HIGH_WATERMARK, an absolute offset, or a fraction of the high watermark


def parse_before(value: Any) -> Before:
    """``before``: ``"high_watermark"`` (the default), an offset (an int ≥ 0), or a fraction of each
    partition's high watermark (a float in (0, 1]); anything else is one UsageError line."""
    if value == HIGH_WATERMARK:
        return HIGH_WATERMARK
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and 0.0 < value <= 1.0:
        return value
    raise UsageError(f"{KIND}: 'before' must be {HIGH_WATERMARK!r}, an offset (an integer ≥ 0) or a fraction of "
                     f"the high watermark (a number in (0, 1], e.g. 0.5), not {value!r}")


def parse_partitions(options: Mapping[str, Any], known: Sequence[int]) -> tuple[int, ...]:
    """``partitions``: a non-empty list of distinct partition numbers (default: all of ``known``, the
    topic's partitions when the step runs). Not checked against ``known``: a step may name a
    partition an earlier ``add_partitions`` created (a partition the topic lacks when the step runs
    is recorded as UNKNOWN_TOPIC_OR_PARTITION; the generator's rule checks its model)."""
    value = options.get("partitions")
    if value is None:
        return tuple(sorted(known))
    if (not isinstance(value, (list, tuple)) or not value or len(set(value)) != len(value)
            or any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in value)):
        raise UsageError(f"{KIND}: 'partitions' must be a non-empty list of distinct partition numbers, not {value!r}")
    return tuple(sorted(value))


def offset_before(before: Before, high_watermark: int) -> int:
    """The offset a fraction of ``high_watermark`` names (rounded down)."""
    return math.floor(high_watermark * float(before))


@register_fault
@dataclass
class DeleteRecordsFault(FaultBase):
    """Delete a topic's records below an offset (DeleteRecords to each leader). Options: ``topic``,
    ``partitions`` (default all), ``before`` (``"high_watermark"``, an offset, or a fraction of the
    high watermark). No partition changes; each partition's low watermark is recorded."""

    topic: str = ""
    partitions: tuple[int, ...] = ()
    before: Before = HIGH_WATERMARK
    kind: ClassVar[str] = KIND
    # "t-p" -> {"leader", "requested", "low_watermark", "error"}: what each leader answered.
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> DeleteRecordsFault:
        reject_unknown_options(cls.kind, options, ("topic", "partitions", "before"))
        topic = topics.physical(cls.kind, options)
        partitions = parse_partitions(options, topics.partitions.get(str(options["topic"]), ()))
        return cls(target, topic, partitions, parse_before(options.get("before", HIGH_WATERMARK)))

    @property
    def label(self) -> str:
        """What was asked, the same in every run (records and reports group by it: the topic is in
        the step's target and records, the answers in :attr:`outcome`)."""
        return f"{self.kind} before {self.before}"

    def answered(self) -> str:
        """The answers, one line: each partition's low watermark, or its error."""
        return ", ".join(f"{tp.rpartition('-')[2]}: {a['low_watermark'] if a['error'] is None else a['error']}"
                         for tp, a in sorted(self.answers.items(), key=lambda kv: int(kv[0].rpartition('-')[2])))

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        return {"before": self.before, "partitions": {tp: dict(a) for tp, a in sorted(self.answers.items())}} \
            if self.answers else None

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        pending = list(self.partitions)
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(RETRY_PAUSE_S)
            pending = self._ask_leaders(env, pending)
            if not pending:
                break
        log.info("%s of %s: low watermarks {%s}", self.label, self.topic, self.answered())

    def _ask_leaders(self, env: FaultEnv, partitions: Sequence[int]) -> list[int]:
        """Ask each partition's leader (as the observer shows it now); the partitions whose leader
        had moved, to be asked again."""
        from kafka_chaos.harness.metadata import MetadataError, delete_records, error_name

        snapshot = env.observer.snapshot([self.topic])
        by_leader: dict[int, list[int]] = {}
        for p in partitions:
            state = snapshot.partitions.get((self.topic, p))
            leader = state.leader if state is not None else -1
            if leader < 0 or leader not in snapshot.live_brokers:
                self.answers[f"{self.topic}-{p}"] = {
                    "leader": leader, "requested": None, "low_watermark": None,
                    "error": "NO_LEADER" if state is not None else "UNKNOWN_TOPIC_OR_PARTITION"}
                continue
            by_leader.setdefault(leader, []).append(p)
        moved: list[int] = []
        for leader, led in sorted(by_leader.items()):
            address = env.cluster.endpoint(leader).bootstrap
            try:
                offsets = self._offsets(address, led)
                answer = delete_records(address, {self.topic: offsets}, wait_ms=WAIT_MS)
            except MetadataError as exc:
                log.warning("%s: leader %d did not answer: %s", self.kind, leader, exc)
                for p in led:
                    self.answers[f"{self.topic}-{p}"] = {"leader": leader, "requested": None, "low_watermark": None,
                                                         "error": "NO_ANSWER"}
                continue
            timed_out = []
            for p in led:
                code, low_watermark = answer.partitions.get((self.topic, p), (-1, -1))
                error = None if code == 0 else error_name(code) if code > 0 else "NOT_ANSWERED"
                self.answers[f"{self.topic}-{p}"] = {
                    "leader": leader, "requested": offsets.get(p),
                    "low_watermark": low_watermark if low_watermark >= 0 else None, "error": error}
                if error in NOT_LEADER:
                    moved.append(p)
                elif error == TIMED_OUT:
                    timed_out.append(p)
            if timed_out:
                self._ask_log_starts(address, leader, timed_out)
        return moved

    def _ask_log_starts(self, address: str, leader: int, partitions: Sequence[int]) -> None:
        """After REQUEST_TIMED_OUT — the leader moved its log start, a live follower did not fetch
        it within the wait — the leader's log start (ListOffsets EARLIEST) is recorded beside the
        low watermark it answered (the old one): the records below it are gone from the leader."""
        from kafka_chaos.harness.metadata import MetadataError, log_start_offsets

        try:
            starts = log_start_offsets(address, {self.topic: list(partitions)})
        except MetadataError as exc:
            log.warning("%s: no log start offsets from leader %d: %s", self.kind, leader, exc)
            return
        for p in partitions:
            code, start = starts.offsets.get((self.topic, p), (-1, -1))
            if code == 0 and start >= 0:
                self.answers[f"{self.topic}-{p}"]["log_start"] = start

    def _offsets(self, address: str, partitions: Sequence[int]) -> dict[int, int]:
        """Each partition's requested offset: -1 for the high watermark, the number given, or the
        fraction of the high watermark the leader answers now (ListOffsets)."""
        from kafka_chaos.harness.metadata import MetadataError, latest_offsets

        if self.before == HIGH_WATERMARK:
            return {p: -1 for p in partitions}
        if isinstance(self.before, int):
            return {p: self.before for p in partitions}
        answer = latest_offsets(address, {self.topic: list(partitions)})
        offsets = {}
        for p in partitions:
            code, high_watermark = answer.offsets.get((self.topic, p), (-1, -1))
            if code != 0 or high_watermark < 0:
                raise MetadataError(f"no high watermark of {self.topic}-{p} from {address} (error {code})")
            offsets[p] = offset_before(self.before, high_watermark)
        return offsets


# --- generator side (scenarios.faults.generation) ------------------------------------------------

_BEFORE_CHOICES: tuple[Before, ...] = (HIGH_WATERMARK, 0.5, 0.25)


def _records(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Legal on any topic the model has (not one a step deleted), in every mode: a leader that
    cannot answer (down, paused, cut) is recorded as such, nothing else changes."""
    topic = step.options.get("topic")
    if not isinstance(topic, str) or topic not in model.topics:
        raise IllegalStep(f"{KIND} on unknown topic {topic!r}")
    try:
        parse_before(step.options.get("before", HIGH_WATERMARK))
        named = parse_partitions(step.options, sorted(model.topics[topic].assignment))
    except UsageError as exc:
        raise IllegalStep(str(exc)) from exc
    unknown = sorted(set(named) - set(model.topics[topic].assignment))
    if unknown:
        raise IllegalStep(f"{KIND} on partition(s) {unknown} that topic {topic} lacks")


def _candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if not model.topics:
        return []
    topic = draw.rng.choice(sorted(model.topics))
    options: dict[str, Any] = {"topic": topic, "before": draw.rng.choice(_BEFORE_CHOICES)}
    partitions = sorted(model.topics[topic].assignment)
    if len(partitions) > 1 and draw.rng.random() < 0.5:
        options["partitions"] = sorted(draw.rng.sample(partitions, draw.rng.randint(1, len(partitions) - 1)))
    return [Step(KIND, NoTarget(f"{topic} records"), options)]


register_generator(GeneratorSide(KIND, 1, _records, _candidates, opt_in=True))

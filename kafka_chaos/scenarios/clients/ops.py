"""What the clients did on one partition over one stretch of time: sends (acked and failed),
polls by every consumer, and consumer resets — the raw material of the history checker
(:mod:`scenarios.checks.client_history`) and of the availability / end-to-end latency measurements.

Pure data with lossless JSON forms (compact lists: a history holds tens of thousands of polls).
A run's stretches do not overlap and leave no gap: each step stores what happened since the
previous step's cut (:attr:`ClientOps.since`, exclusive) up to its own (:attr:`ClientOps.until`,
inclusive); the scenario's end stores the rest plus the final read-back as polls of the
:data:`READBACK` consumer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_chaos.scenarios.clients import codec
from kafka_chaos.scenarios.clients.delivery import Ack

READBACK = "readback"  # the consumer name of the final read-back's records
ASSIGN = "assign"  # the assign-mode consumer (sees every offset of every partition)
GROUP = "group"  # the consumer-group member (subscribe; rebalanced by the faults)


@dataclass(frozen=True)
class Poll:
    """One record a consumer received: at ``offset``, the message ``key``; ``created_at`` is the
    producer's CreateTime (epoch s, ms precision; None when the broker gave none)."""

    consumer: str
    offset: int
    key: str
    polled_at: float
    created_at: float | None = None

    def to_list(self) -> list[Any]:
        return [self.consumer, self.offset, self.key, self.polled_at, self.created_at]

    @classmethod
    def from_list(cls, v: list[Any]) -> Poll:
        return cls(str(v[0]), int(v[1]), str(v[2]), float(v[3]), None if v[4] is None else float(v[4]))


@dataclass(frozen=True)
class ConsumerReset:
    """A consumer's position on the partition was (re)established: ``why`` is ``assigned``
    (assign() or a group assignment), ``revoked`` or ``lost`` (group rebalance). The checker
    restarts that consumer's monotonicity tracking here (Jepsen's rebalance log)."""

    consumer: str
    at: float
    why: str

    def to_list(self) -> list[Any]:
        return [self.consumer, self.at, self.why]

    @classmethod
    def from_list(cls, v: list[Any]) -> ConsumerReset:
        return cls(str(v[0]), float(v[1]), str(v[2]))


@dataclass(frozen=True)
class FailedSend:
    """A message whose delivery report was an error (after librdkafka's own retries)."""

    key: str
    error: str  # KafkaError name, e.g. _MSG_TIMED_OUT
    at: float

    def to_list(self) -> list[Any]:
        return [self.key, self.error, self.at]

    @classmethod
    def from_list(cls, v: list[Any]) -> FailedSend:
        return cls(str(v[0]), str(v[1]), float(v[2]))


@dataclass(frozen=True)
class ClientOps:
    """Everything the clients did on one partition in ``(since, until]`` (``until`` None: to
    the end of the scenario)."""

    since: float
    until: float | None
    acks: tuple[Ack, ...] = ()
    failed: tuple[FailedSend, ...] = ()
    polls: tuple[Poll, ...] = ()
    resets: tuple[ConsumerReset, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"since": self.since, "until": self.until, "acks": [codec.ack_to_list(a) for a in self.acks],
                "failed": [f.to_list() for f in self.failed], "polls": [p.to_list() for p in self.polls],
                "resets": [r.to_list() for r in self.resets]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClientOps:
        return cls(float(d["since"]), None if d["until"] is None else float(d["until"]),
                   tuple(codec.ack_from_list(a) for a in d["acks"]),
                   tuple(FailedSend.from_list(f) for f in d["failed"]),
                   tuple(Poll.from_list(p) for p in d["polls"]),
                   tuple(ConsumerReset.from_list(r) for r in d["resets"]))


def ops_to_dict(ops: Mapping[str, ClientOps]) -> dict[str, Any]:
    return {k: o.to_dict() for k, o in sorted(ops.items())}


def ops_from_dict(d: Mapping[str, Any] | None) -> dict[str, ClientOps]:
    return {} if d is None else {str(k): ClientOps.from_dict(o) for k, o in d.items()}

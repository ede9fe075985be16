"""The record every check and measurement produces: one JSON object per line of records.jsonl.

Schema history (bump ``SCHEMA_VERSION`` on every change and describe it here; readers accept
every version listed in ``READABLE_VERSIONS``):

* 1 — first version.
* 2 — ``mode``: "kraft" on a KRaft cluster's records. A record without it (ZooKeeper mode) is
  written exactly as version 1 wrote it, ``schema_version`` 1 included, so re-checking an old
  run gives its records back byte for byte.

Fields (all present in every record; ``None`` where they do not apply):

================  =========================================================================
schema_version    int, the version of this layout
run_id            str, one per ``kafka-chaos run`` invocation
scenario          str, catalogue name of the scenario
iteration         int, 0-based repetition of the scenario within the run
seed              int, the seed the run was started with (same seed, same choices)
backend           str, "local" or "containers"
kafka_version     str, e.g. "3.9.2"
git_revision      str | None, the kafka-chaos commit that produced the record
brokers           int, cluster size
partitions        int, partitions of the scenario's topic(s)
fault             str | None, fault kind ("hard_kill", "controlled_shutdown", ...)
target            str | None, what the fault hit ("broker 2 (leader of t-0)")
kind              "check" or "measurement"
check             str, name of the check or the measurement ("oracle_leader", "latency", ...)
passed            bool | None; None means unknown (the check could not decide)
expected          any JSON | None, what the oracle or the rule predicted
observed          any JSON | None, what the cluster showed
detail            str, a readable diff or explanation
topic             str | None, partition the record is about, if any
partition         int | None
latency_ms        dict[str, float | None] | None — phases of a leader switch, in ms from the
                  fault: "detection" (controller noticed: broker znode gone), "election" (new
                  leader written in ZK), "propagation" (visible in broker metadata),
                  "first_produce" (first acknowledged produce), "client_gap" (largest gap
                  between acknowledged produces around the fault).  Set it on ONE record per
                  fault injection (the "latency" measurement): the report counts every record
                  carrying latency_ms as one leader switch.  The "client_availability"
                  measurement (one per partition per fault step) carries instead
                  "produce_outage" (ms the producer's sends went unanswered: its stalls of
                  1 s or more between acknowledgements, scenarios.checks.availability),
                  "produce_unavailable" / "consume_unavailable" (ms of fixed 1 s windows with
                  no ack / no poll), "unavailable" (longest stretch without an ack),
                  "e2e_p50" / "e2e_p99" / "e2e_p999" (produce -> first consume); its
                  ``observed`` holds "produce_availability" and "consume_availability" (shares).
                  The "txn_availability" measurement (one per fault step with the
                  transactional workload) carries "txn_commit_p50" / "txn_commit_p99"
                  (commit_transaction's latency) and "txn_no_commit" (the longest stretch
                  without a commit); its ``observed`` counts the attempts per outcome.
                  A "latency" record of a step whose controller logs were read
                  (scenarios.history.controller_log) also carries "controller_queue",
                  "controller_processing", "leader_and_isr", "update_metadata" and
                  "leader_ready" (scenarios.checks.latency); the "controller_metrics" measurement (one
                  per fault step) has no latency_ms, its JMX figures are in ``observed``; the
                  "failover_scaling" records of ``kafka-chaos bench failover`` carry its phases
timestamps        dict[str, float] | None, raw wall-clock epoch seconds behind latency_ms
session_timeout_ms int | None, zookeeper.session.timeout.ms of the brokers
tick_time_ms      int | None, ZooKeeper tickTime
mode              str | None (version 2), "kraft" for a KRaft cluster; absent: ZooKeeper mode
                  (there session_timeout_ms is broker.session.timeout.ms, detection the fence)
started_at        float, epoch seconds
finished_at       float, epoch seconds
================  =========================================================================

How the report reads them (``results.aggregate``): pass rates count ``kind == "check"`` records
only (``passed`` None = unknown, counted apart); latency percentiles use every record with
``latency_ms``; a line that is not JSON, has a wrong type or lacks one of ``REQUIRED_FIELDS`` is
counted as malformed, a ``schema_version`` outside ``READABLE_VERSIONS`` as rejected.
``duration_ms`` is derived (finished_at - started_at), not stored.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

SCHEMA_VERSION = 2
READABLE_VERSIONS = frozenset({1, 2})
# What a record without version 2's fields is written as (byte for byte as version 1 wrote it).
FIRST_VERSION = 1

LEADER_SWITCH_PHASES = ("detection", "election", "propagation", "first_produce", "client_gap")
# The clients' view of a fault per partition (the "client_availability" measurement,
# scenarios.checks.availability): gated and aggregated like the leader-switch phases.
CLIENT_PHASES = ("produce_outage", "produce_unavailable", "consume_unavailable", "unavailable", "e2e_p50", "e2e_p99",
                 "e2e_p999")
# A silence of this many seconds or more between the producer's acknowledgements of a partition
# is a stall (its "produce_outage"; the latency record's unended silence), not the workload's pace.
STALL_S = 1.0
# Of those, the counts of fixed 1 s windows without success (in ms, multiples of 1,000): coarse,
# shown apart from the phases measured to the millisecond.
WINDOW_PHASES = ("produce_unavailable", "consume_unavailable")
# The transactional workload's view of a fault step (the "txn_availability" measurement,
# scenarios.checks.txn_availability): commit latency and the longest stretch without a commit.
TXN_PHASES = ("txn_commit_p50", "txn_commit_p99", "txn_no_commit")
LATENCY_PHASES = LEADER_SWITCH_PHASES + CLIENT_PHASES + TXN_PHASES

RecordKind = Literal["check", "measurement"]

# Fields a record is useless without (grouping keys, replay keys, time): a line lacking one is
# malformed.  The others may be None.
REQUIRED_FIELDS = (
    "schema_version", "run_id", "scenario", "iteration", "seed", "backend", "kafka_version",
    "brokers", "partitions", "kind", "check", "started_at", "finished_at",
)


@dataclass(frozen=True)
class Record:
    run_id: str
    scenario: str
    iteration: int
    seed: int
    backend: str
    kafka_version: str
    brokers: int
    partitions: int
    kind: RecordKind
    check: str
    passed: bool | None
    started_at: float
    finished_at: float = field(default_factory=time.time)
    fault: str | None = None
    target: str | None = None
    expected: Any = None
    observed: Any = None
    detail: str = ""
    topic: str | None = None
    partition: int | None = None
    latency_ms: dict[str, float | None] | None = None
    timestamps: dict[str, float] | None = None
    session_timeout_ms: int | None = None
    tick_time_ms: int | None = None
    git_revision: str | None = None
    mode: str | None = None
    # 0: the version this record's fields make it (a record without version 2's fields is one
    # of version 1)
    schema_version: int = 0

    def __post_init__(self) -> None:
        if self.schema_version == 0:
            object.__setattr__(self, "schema_version", FIRST_VERSION if self.mode is None else SCHEMA_VERSION)

    @property
    def duration_ms(self) -> float:
        return (self.finished_at - self.started_at) * 1000.0

    def to_json(self) -> str:
        data = asdict(self)
        if data["mode"] is None:  # as version 1 wrote it
            del data["mode"]
        return json.dumps(data, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, line: str) -> "Record":
        """Parse one line of records.jsonl; ValueError (incl. JSONDecodeError) when unreadable."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError(f"a record is a JSON object, got {type(data).__name__}")
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Record":
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise ValueError(f"schema_version {version!r} is not readable (known: {sorted(READABLE_VERSIONS)})")
        missing = [name for name in REQUIRED_FIELDS if data.get(name) is None]
        if missing:
            raise ValueError(f"missing required field(s): {', '.join(missing)}")
        return cls(**{k: v for k, v in data.items() if k in _KNOWN_FIELDS})


FIELD_NAMES = tuple(f.name for f in fields(Record))
_KNOWN_FIELDS = frozenset(FIELD_NAMES)

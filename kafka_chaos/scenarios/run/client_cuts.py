"""What the step records of the clients, and how it waits for them: the workload's acks and
failed sends per partition, every send, poll and consumer reset since the last cut (:func:`client_ops`), and (faults that leave brokers running but unreachable) a bounded
wait until the clients of the touched partitions get acks again."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from kafka_chaos.scenarios.checks import latency as lat
from kafka_chaos.scenarios.clients.ops import READBACK, ClientOps, FailedSend, Poll
from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.checks.expectations import Expectation
from kafka_chaos.scenarios.faults import Fault
from kafka_chaos.scenarios.history.observations import ClientActivity
from kafka_chaos.harness.zkevents import ZkEvent
from kafka_chaos.harness.zksnapshot import ZkSnapshot

if TYPE_CHECKING:  # the clients import librdkafka's binding: loaded when a run starts them
    from kafka_chaos.scenarios.clients.consumers import Consumers
    from kafka_chaos.scenarios.clients.workload import Workload


def client_activity(workloads: Mapping[str, Workload], since: float, until: float) -> dict[str, ClientActivity]:
    """Per ``"topic-p"``: the acks from the last one before ``since`` (it bounds the first gap a
    measurement looks at) up to ``until``, and the failed sends and the leader's refusals in between."""
    activity = {}
    for topic, w in workloads.items():
        failures = w.failures()
        refused = w.refusals(since, until)
        for p in w.partitions:
            acks: list[Ack] = [a for a in w.acks(p) if a.acked_at <= until]
            earlier = [i for i, a in enumerate(acks) if a.acked_at < since]
            kept = acks[earlier[-1]:] if earlier else acks
            failed = tuple((name, at) for part, name, at in failures if part == p and since <= at <= until)
            activity[f"{topic}-{p}"] = ClientActivity(tuple(kept), failed, tuple(refused.get(p, ())))
    return activity


# A topic-wide fault (a config change) reaches the brokers through a change notification or the
# metadata log: the writes acknowledged this long after it show what the leaders enforce (the
# min_isr_honoured check judges from 2 s after the step converged).
CONFIG_APPLIED_S = 3.0


def wait_for_clients(workloads: Mapping[str, Workload], events: Iterable[ZkEvent], fault: Fault, before_snap: ZkSnapshot,
                     expected: Expectation, fault_at: float, timeout: float) -> list[str]:
    """Hold the step (bounded, woken by delivery reports) until the clients of every partition
    the fault touched get acks again after the cluster acted on it — so a cut lasts until the
    clients have found the new leaders, and the client windows measure the clients, not how
    soon the harness healed. Partitions a held broker keeps leading stall until healed: not
    waited for. Returns the partitions that got no ack in time."""
    deadline = time.monotonic() + timeout
    events = list(events)
    hit = set(fault.target.brokers)  # none: a cluster-wide fault (a topic's config) touches every partition
    waiting: list[str] = []
    for t, w in workloads.items():
        if t not in expected.state.topics:
            continue
        for p, want in sorted(expected.state.topics[t].partitions.items()):
            was = before_snap.partitions.get((t, p))
            if was is None or (hit and not hit & set(was.replicas)) or want.leader == -1 or want.leader in fault.holds:
                continue
            acted = (lat.election_at(events, t, p, want.leader, fault_at) if want.leader != was.leader
                     else lat.isr_written_at(events, t, p, want.isr, fault_at) if set(want.isr) != set(was.isr)
                     else fault_at + CONFIG_APPLIED_S if not hit else None)
            got = w.wait_for_acks(timeout=max(0.0, deadline - time.monotonic()),
                                  after=acted if acted is not None else fault_at, partitions=[p])
            if got.get(p) is None:
                waiting.append(f"{t}-{p}")
    return waiting


def client_ops(workloads: Mapping[str, Workload], consumers: Mapping[str, Consumers], since: float,
               until: float | None) -> dict[str, ClientOps]:
    """Per ``"topic-p"``: every ack, failed send, poll and consumer reset in ``(since, until]``
    (``until`` None: everything after ``since``) — consecutive cuts cover a run without gaps or
    overlaps, which the history checker relies on."""
    def inside(t: float) -> bool:
        return since < t and (until is None or t <= until)

    ops = {}
    for topic, w in workloads.items():
        c = consumers.get(topic)
        failed = w.failed_sends()
        for p in w.partitions:
            ops[f"{topic}-{p}"] = ClientOps(
                since, until,
                acks=tuple(a for a in w.acks(p) if inside(a.acked_at)),
                failed=tuple(FailedSend(key, name, at) for part, key, name, at in failed if part == p and inside(at)),
                polls=tuple(x for x in c.polls(p) if inside(x.polled_at)) if c is not None else (),
                resets=tuple(r for r in c.resets(p) if inside(r.at)) if c is not None else ())
    return ops


def with_read_back(ops: Mapping[str, ClientOps], topic: str, records: Iterable[tuple[int, int, str]] | None,
                   at: float) -> dict[str, ClientOps]:
    """``ops`` with the final read-back of ``topic`` added as polls of the ``readback`` consumer."""
    if records is None:
        return dict(ops)
    by_partition: dict[int, list[Poll]] = {}
    for partition, offset, key in records:
        by_partition.setdefault(partition, []).append(Poll(READBACK, offset, key, at))
    out = dict(ops)
    for partition, polls in by_partition.items():
        name = f"{topic}-{partition}"
        base = out.get(name, ClientOps(at, None))
        out[name] = replace(base, polls=base.polls + tuple(sorted(polls, key=lambda x: x.offset)))
    return out

"""``kafka-chaos bench kip291``: does a separate control-plane listener
(KIP-291, ``control.plane.listener.name``) get the controller's LeaderAndIsr / UpdateMetadata
to the brokers faster when their data-plane request queues are full?

For each configuration (``without``, ``with`` the listener) a fresh 3-broker local cluster with
request handling made scarce (:func:`bench_settings`: one network and one I/O thread) gets one
topic (``partitions``, RF 3, round-robin: each broker prefers a third of the leaders) whose
``compression.type=gzip`` makes every broker recompress the uncompressed batches it is sent, on
its request handler thread (3.9 ``LogValidator``), so each Produce request holds the only handler
for tens of milliseconds.  :class:`benches.produce_load.ProduceLoad` keeps one Produce request
per producer connection in every broker's queue.  Then each fault runs ``repeat`` times, each on
a settled cluster under ``warmup_s`` of steady load (:func:`benches.failover.one_fault`:
hard kill or controlled shutdown of the non-controller broker leading the most partitions).

Per iteration (one ``kip291`` measurement record): every controller request the live brokers
completed after the fault, from the request log (:mod:`benches.request_log`): its queue,
local and total time on the broker, the listener it came on, and the time from the
controller's "Sending ..." line to its end; the Produce requests' rate and queue time in the
``warmup_s`` before the fault (the load the controller's requests met); the client's records/s;
and the failover phases of :func:`benches.failover.failover_phases` (``metadata`` is
the client-visible switch: every live broker's metadata names a live leader for every
partition).  :func:`summarise` gives the table: configuration x request kind x (median, p90,
max) of queue / total / sent-to-done time, the produce load, the leader switch.

On either launcher (``backend``): the containers one mounts a host directory per broker and
logs there with the local launcher's file appenders
(:class:`harness.containers.cluster.ContainerCluster` ``broker_log_files``), so the request,
controller and state-change logs are read as files in both cases (:func:`_request_logs`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_chaos.records.schema import Record
from kafka_chaos.scenarios.history.controller_log import LogEvent
from kafka_chaos.benches.failover import TOPIC, BenchOptions, Iteration, Progress, failover_phases, round_robin
from kafka_chaos.benches.produce_load import LoadSample, LoadSettings, describe, rate
from kafka_chaos.benches.request_log import (
    CONTROLLER_REQUESTS,
    RequestEntry,
    Spread,
    pair_with_sends,
    parse_request_lines,
    request_stats,
    spread,
)

if TYPE_CHECKING:
    from kafka_chaos.benches.produce_load import ProduceLoad
    from kafka_chaos.harness.cluster import BenchCluster
    from kafka_chaos.harness.distribution import KafkaDistribution
    from kafka_chaos.harness.observer import ZkObserver

log = logging.getLogger(__name__)

CHECK = "kip291"
SCENARIO = "bench_kip291"
CONFIGURATIONS = ("without", "with")  # the control-plane listener
FAULTS = ("hard_kill", "controlled_shutdown")
# Appended to the nodes' log4j.properties: every completed request logged (Java's Properties
# keeps the last of a repeated key, so this overrides the WARN of harness/log4j.properties).
REQUEST_LOG4J = "\n# kafka-chaos bench kip291: the request log\nlog4j.logger.kafka.request.logger=DEBUG, requestAppender\n"
REQUEST_LOG = "kafka-request.log"
MAX_REQUEST_LOG_READ = 512 * 1024 * 1024


def bench_settings() -> dict[str, str]:
    """Scarce request handling: one network thread and one I/O (request handler) thread, so the
    data-plane queue is where requests wait; the control plane always has one of each (3.9
    ``SocketServer.createControlPlaneAcceptorAndProcessor``, ``KafkaServer``'s
    ``controlPlaneRequestHandlerPool``).  Retention is short so the load's gigabytes are deleted."""
    return {"num.network.threads": "1", "num.io.threads": "1", "num.replica.fetchers": "1",
            "auto.leader.rebalance.enable": "false", "log.retention.check.interval.ms": "10000",
            "log.segment.delete.delay.ms": "1000", "controller.socket.timeout.ms": "60000",
            "replica.lag.time.max.ms": "30000"}


TOPIC_CONFIG = {"compression.type": "gzip", "retention.bytes": str(32 * 1024 * 1024),
                "segment.bytes": str(8 * 1024 * 1024), "retention.ms": "120000"}


# ---------------------------------------------------------------- pure: one iteration

@dataclass(frozen=True)
class Kip291Iteration:
    """What one fault under load observed: the failover (``failover``), every request the live
    brokers logged from ``warmup_s`` before the fault on, and the load's samples."""

    control_plane: bool
    failover: Iteration
    requests: tuple[RequestEntry, ...]
    load_before: tuple[LoadSample, LoadSample]  # the warm-up window's ends (the second: the fault)
    load_after: LoadSample  # when the measurement ended


def configuration(control_plane: bool) -> str:
    return "with" if control_plane else "without"


def iteration_record(it: Kip291Iteration, *, run_id: str, partitions: int, index: int, started_at: float,
                     finished_at: float, settings: Mapping[str, Any], kafka_version: str,
                     backend: str = "local") -> Record:
    f = it.failover
    phases = failover_phases(f)
    controller = _controller_of(f.events)
    after = [r for r in it.requests if r.at >= f.fault_at]
    paired = pair_with_sends(after, f.events, controller)
    produce_before = request_stats([r for r in it.requests if r.api == "Produce"],
                                   it.load_before[0].at, f.fault_at).get("Produce")
    observed = {"configuration": configuration(it.control_plane), "target": f.target, "controller": controller,
                "moved_partitions": len(f.moved), "requests": [c.to_dict() for c in paired],
                "produce_requests_before": produce_before,
                "load_before": rate(*it.load_before), "load_during": rate(it.load_before[1], it.load_after),
                "settings": dict(settings)}
    detail = (f"{configuration(it.control_plane)} control plane, {f.fault} of broker {f.target}: "
              + "; ".join(_detail(kind, [c for c in paired if c.kind == kind]) for kind in CONTROLLER_REQUESTS
                          if any(c.kind == kind for c in paired))
              + (f"; switch {phases['metadata']:.0f} ms" if phases.get("metadata") is not None else ""))
    return Record(run_id=run_id, scenario=SCENARIO, iteration=index, seed=0, backend=backend,
                  kafka_version=kafka_version, brokers=3, partitions=partitions, kind="measurement", check=CHECK,
                  passed=None, started_at=started_at, finished_at=finished_at, fault=f.fault,
                  target=f"broker {f.target}", observed=observed, detail=detail, latency_ms=phases,
                  timestamps={"fault": f.fault_at})


def _controller_of(events: Iterable[LogEvent]) -> int | None:
    """Who sent the fault's requests: the controller of the first send line."""
    return next((e.node for e in sorted(events, key=lambda e: e.at) if e.kind in ("leader_and_isr", "update_metadata")),
                None)


def _detail(kind: str, requests: Sequence[Any]) -> str:
    queue = spread(c.entry.queue_ms for c in requests)
    done = spread(c.sent_to_done_ms for c in requests)
    sent = f"{done.max:.0f} ms" if done else "n/a (send not logged at INFO)"
    return f"{len(requests)} {kind} queue max {queue.max if queue else 0:.0f} ms, sent->done max {sent}"


# ---------------------------------------------------------------- pure: the table

@dataclass(frozen=True)
class Row:
    configuration: str
    fault: str
    what: str  # a request kind's figure, the produce load, or the switch
    spread: Spread | None

    def to_dict(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "fault": self.fault, "what": self.what,
                **(self.spread.to_dict() if self.spread else {"n": 0})}


def summarise(records: Iterable[Record]) -> list[Row]:
    """Per configuration and fault: each controller request kind's queue, total and
    sent-to-done times over every request of every iteration; the Produce queue time (iteration
    medians and p90s) and records/s before the faults; the client-visible switch and its
    phases."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        if r.check == CHECK and isinstance(r.observed, dict) and r.fault is not None:
            groups.setdefault((str(r.observed.get("configuration")), _fault_label(r)), []).append(r)
    rows: list[Row] = []
    order = {c: i for i, c in enumerate(CONFIGURATIONS)}
    for (conf, fault), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], order.get(kv[0][0], 9))):
        requests = [q for r in rs for q in r.observed.get("requests", [])]
        for kind in CONTROLLER_REQUESTS:
            mine = [q for q in requests if q["kind"] == kind]
            if not mine:
                continue
            for figure in ("queue_ms", "local_ms", "total_ms", "sent_to_done_ms"):
                rows.append(Row(conf, fault, f"{kind} {figure}", spread(q.get(figure) for q in mine)))
        before = [r.observed.get("produce_requests_before") or {} for r in rs]
        rows.append(Row(conf, fault, "Produce queue_ms median", spread((b.get("queue_ms") or {}).get("median")
                                                                        for b in before)))
        rows.append(Row(conf, fault, "Produce queue_ms p90", spread((b.get("queue_ms") or {}).get("p90")
                                                                     for b in before)))
        rows.append(Row(conf, fault, "Produce requests/s (3 brokers)", spread(b.get("per_s") for b in before)))
        rows.append(Row(conf, fault, "Produce queued, mean (3 brokers)", spread(b.get("mean_in_queue") for b in before)))
        rows.append(Row(conf, fault, "load records/s", spread((r.observed.get("load_before") or {}).get("records_per_s")
                                                              for r in rs)))
        rows.append(Row(conf, fault, "load MB/s", spread((r.observed.get("load_before") or {}).get("mb_per_s")
                                                         for r in rs)))
        for phase in ("detection", "controller_start", "leader_and_isr", "leaders_ready", "metadata"):
            rows.append(Row(conf, fault, f"phase {phase} ms", spread((r.latency_ms or {}).get(phase) for r in rs)))
        # The part KIP-291 can change, per iteration: the detection's own spread (4-6.5 s) is
        # larger than the difference in the phases measured from the fault.
        for name, (start, end) in DERIVED.items():
            rows.append(Row(conf, fault, name, spread(_between(r.latency_ms or {}, start, end) for r in rs)))
    return rows


DERIVED = {"span last LeaderAndIsr sent -> leaders ready ms": ("leader_and_isr", "leaders_ready"),
           "span controller start -> metadata ms": ("controller_start", "metadata")}


def _between(phases: Mapping[str, float | None], start: str, end: str) -> float | None:
    a, b = phases.get(start), phases.get(end)
    return None if a is None or b is None else round(b - a, 1)


def _fault_label(r: Record) -> str:
    """The fault, the load's acks when not "all" and the launcher when not local (runs with
    either may be summarised together)."""
    settings = r.observed.get("settings") or {} if isinstance(r.observed, dict) else {}
    acks = str((settings.get("load") or {}).get("acks", "all"))
    label = str(r.fault) if acks == "all" else f"{r.fault} acks={acks}"
    return label if r.backend == "local" else f"{label} {r.backend}"


def table(rows: Sequence[Row]) -> str:
    width = max([22, *(len(row.fault) for row in rows)])  # e.g. "hard_kill acks=1 containers"
    lines = [f"{'fault':<{width}} {'control plane':<13} {'figure':<50} {'n':>4} {'median':>9} {'p90':>9} {'max':>9}"]
    for row in rows:
        s = row.spread
        figures = f"{s.n:>4} {s.median:>9,.1f} {s.p90:>9,.1f} {s.max:>9,.1f}" if s else f"{0:>4} {'-':>9} {'-':>9} {'-':>9}"
        lines.append(f"{row.fault:<{width}} {row.configuration:<13} {row.what:<50} {figures}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the driver (talks to a cluster)

@dataclass
class Kip291Options:
    configurations: Sequence[str] = CONFIGURATIONS
    faults: Sequence[str] = ("hard_kill",)
    repeat: int = 5
    partitions: int = 60
    load: LoadSettings = field(default_factory=LoadSettings)
    warmup_s: float = 10.0
    broker_heap: str = "512m"
    backend: str = "local"  # or "containers"
    run_id: str = field(default_factory=lambda: f"kip291-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-"
                                                f"{uuid.uuid4().hex[:6]}")



def run_bench(options: Kip291Options, distribution: KafkaDistribution, write: Callable[[Record], None], progress: Progress) -> int:
    written = 0
    for conf in options.configurations:
        written += _bench_configuration(options, distribution, conf == "with", write, progress)
    return written


def _bench_configuration(options: Kip291Options, distribution: KafkaDistribution, control_plane: bool,
                         write: Callable[[Record], None], progress: Progress) -> int:
    from kafka_chaos.harness.backends import open_bench_cluster
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.metadata import create_topic
    from kafka_chaos.harness.observer import ZkObserver
    from kafka_chaos.benches.failover import restore, stop_timeout_for, wait_settled
    from kafka_chaos.benches.produce_load import ProduceLoad

    settings = bench_settings()
    config = ClusterConfig(brokers=3, broker_heap=options.broker_heap, cluster_overrides=settings,
                           control_plane_listener=control_plane)
    name = configuration(control_plane)
    fault_options = BenchOptions(partitions=[options.partitions], faults=options.faults, repeat=options.repeat)
    progress(f"{name} control plane: starting 3 brokers ({', '.join(f'{k}={v}' for k, v in settings.items())})")
    count = 0
    with open_bench_cluster(options.backend, config, distribution, start_timeout=180.0,
                            stop_timeout=stop_timeout_for(options.partitions), log4j_extra=REQUEST_LOG4J) as cluster:
        create_topic(cluster.bootstrap_servers, TOPIC, round_robin(options.partitions, cluster.broker_ids),
                     TOPIC_CONFIG, timeout=120.0)
        wait_settled(cluster, cluster.broker_ids, options.partitions, 300.0)
        stored = {**settings, **{f"topic.{k}": v for k, v in TOPIC_CONFIG.items()}, "broker_heap": options.broker_heap,
                  "control_plane_listener": control_plane, "load": dict(describe(options.load)),
                  "warmup_s": options.warmup_s}
        with ProduceLoad(cluster.bootstrap_servers, TOPIC, options.load) as load, \
                ZkObserver(cluster.zookeeper_connect, topics=[]) as observer:
            for fault in options.faults:
                for index in range(options.repeat):
                    started = time.time()
                    it = _one_iteration(cluster, observer, load, fault, control_plane, options, fault_options)
                    record = iteration_record(it, run_id=options.run_id, partitions=options.partitions, index=index,
                                              started_at=started, finished_at=time.time(), settings=stored,
                                              kafka_version=cluster.kafka_version, backend=options.backend)
                    write(record)
                    count += 1
                    progress(f"{name} #{index + 1} {fault}: {record.detail}")
                    if (fault, index) != (options.faults[-1], options.repeat - 1):
                        load.pause()  # the restarted broker catches up quickly without new data
                        try:
                            restore(cluster, it.failover.target, options.partitions, 300.0)
                        finally:
                            load.resume()
    return count


def _one_iteration(cluster: BenchCluster, observer: ZkObserver, load: ProduceLoad, fault: str, control_plane: bool,
                   options: Kip291Options, fault_options: BenchOptions) -> Kip291Iteration:
    from kafka_chaos.benches.failover import one_fault

    cursor = RequestLogCursor(_request_logs(cluster))
    warm_start = load.sample()
    cursor.mark()
    time.sleep(options.warmup_s)
    at_fault = load.sample()
    failover = one_fault(cluster, observer, fault, options.partitions, fault_options)
    ended = load.sample()
    # Every JVM runs in UTC (harness.node_logs.JVM_TIMEZONE_FLAG): the log stamps are UTC.
    requests = [r for broker, lines in cursor.lines_since_mark().items()
                for r in parse_request_lines(lines, broker, apis=("Produce", *CONTROLLER_REQUESTS))]
    return Kip291Iteration(control_plane, failover, tuple(sorted(requests, key=lambda r: r.at)),
                           (warm_start, at_fault), ended)


def _request_logs(cluster: BenchCluster) -> dict[int, Path]:
    return {b: cluster.broker_log_dir(b) / REQUEST_LOG for b in cluster.broker_ids}


class RequestLogCursor:
    """Where each broker's request log ends at :meth:`mark`, and its lines appended since."""

    def __init__(self, paths: Mapping[int, Path]) -> None:
        self._paths = dict(paths)
        self._sizes: dict[int, int] = {}

    def mark(self) -> None:
        self._sizes = {b: p.stat().st_size if p.exists() else 0 for b, p in self._paths.items()}

    def lines_since_mark(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for broker, path in self._paths.items():
            try:
                with open(path, "rb") as f:
                    f.seek(self._sizes.get(broker, 0))
                    out[broker] = f.read(MAX_REQUEST_LOG_READ).decode("utf-8", "replace").splitlines()
            except OSError as exc:
                log.warning("reading %s: %s", path, exc)
                out[broker] = []
        return out

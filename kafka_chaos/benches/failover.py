"""``kafka-chaos bench failover``: where a leader switch spends its time as the
partition count grows.

Per broker count and partition count a fresh cluster (heap sized for the partitions:
:func:`broker_heap_for`) gets one topic, replication factor min(3, brokers), assigned round-robin
(partition p on brokers p, p+1, p+2 mod B, so every broker prefers a third of the leaders).  Each
fault then runs ``repeat`` times, each time on a settled cluster with preferred leaders restored:

* ``hard_kill`` — SIGKILL the non-controller broker leading the most partitions;
* ``controlled_shutdown`` — SIGTERM that broker (the controller moves its leaders first);
* ``controller_kill`` — SIGKILL the active controller (which also leads a third of the topic).

What one iteration measures (ms from the fault; :func:`failover_phases`): ``detection`` (its
``/brokers/ids`` znode gone, from a ZooKeeper watch), ``controller_start`` (the controller logged
that it processes the event: BrokerChange, ControlledShutdown, or for a controller kill the
successor's election), ``controller_queue`` (detection to that start), ``controller_init`` (a
successor's ``onControllerFailover``: elected to "Ready to serve"), ``zk_writes`` (the last moved
partition's new leader written, as the controller logged it), ``leader_and_isr`` /
``update_metadata`` (the last of those requests sent), ``leaders_ready`` (the last new leader
logged that it leads), ``metadata`` (every live broker's metadata shows a live leader for every
partition), and the controller's own timers between two scrapes (:mod:`scenarios.history.controller_metrics`).

Why an iteration is not a :class:`scenarios.run.step.StepCore` step: the step pipeline watches
every partition znode and asks the oracle (with its interleavings) about every partition, and
its convergence wait reads ZooKeeper while the controller writes to it — at thousands of
partitions that load lands inside the very phases measured here. So the bench watches only
``/brokers/ids`` and reads the brokers' metadata; the leader/ISR checks are the conformance
suite's, on the same faults at small scale.

Each iteration is one ``failover_scaling`` measurement record (``latency_ms`` the phases, the
metrics in ``observed``); :func:`summarise` gives the median and p99 per fault, partition count
and phase.  The driver is here (it composes harness pieces); the phases are pure functions.

On either launcher (``BenchOptions.backend``, :func:`harness.backends.open_bench_cluster`): on
containers each broker logs to a host directory mounted as its log dir, so the same cursor reads
the same controller and state-change logs; their stamps (UTC, :data:`harness.node_logs.JVM_TIMEZONE_FLAG`)
come from the host's clock, which containers share, so they compare with the fault's
``time.time()``.  Records carry the backend and the table keeps the launchers apart.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.records.schema import Record
from kafka_chaos.scenarios.history.controller_log import TRIGGERS, LogEvent, expiry_before, parse_lines
from kafka_chaos.scenarios.history.controller_metrics import FaultMetrics, MetricsScrape, summarise as summarise_metrics

if TYPE_CHECKING:
    from kafka_chaos.harness.cluster import BenchCluster
    from kafka_chaos.harness.distribution import KafkaDistribution
    from kafka_chaos.harness.observer import ZkObserver

log = logging.getLogger(__name__)

FAULTS = ("hard_kill", "controlled_shutdown", "controller_kill")
TOPIC = "failover-bench"
CHECK = "failover_scaling"
SCENARIO = "bench_failover"
# In the order of a failover; the chart and tables follow it.
PHASES = ("detection", "controller_queue", "controller_start", "controller_init", "zk_writes", "leader_and_isr",
          "update_metadata", "leaders_ready", "metadata")
# What the controller's own work takes, whatever the detection took: the phases above measured
# from the controller's start instead of the fault (derived in :func:`summarise`).
SPANS = {"zk_writes_after_start": "zk_writes", "leaders_ready_after_start": "leaders_ready",
         "metadata_after_start": "metadata"}
CHART_PHASES = ("controller_queue", "controller_init", *SPANS)


def broker_heap_for(partitions: int, brokers: int) -> str:
    """Heap per broker: 384 MiB holds the small clusters; each replica's Partition, Log and
    index objects and the controller's context take roughly 40 KiB more per replica hosted
    (measured: 10,000 partitions x RF 3 on 3 brokers run in 1 GiB)."""
    replicas_per_broker = partitions * min(3, brokers) / brokers
    mib = 384 + int(replicas_per_broker * 0.064)
    return f"{min(max(mib, 384), 4096)}m"


def stop_timeout_for(partitions: int) -> float:
    """Seconds a SIGTERMed broker gets before SIGKILL: the launcher's 60 s, plus 20 ms per
    partition — a controlled shutdown first waits for the controller to move every partition it
    leads, then closes each log (at 10,000 partitions it did not exit within 60 s)."""
    return 60.0 + 0.02 * partitions


def bench_settings(partitions: int) -> dict[str, str]:
    """Broker settings that keep many partitions cheap on 2 cores: no leader rebalancing in the
    middle of a measurement, small preallocated indexes (10 MiB each by default: 20,000 of them
    are mmap'ed), and a request timeout the controller's big batches fit in."""
    return {"auto.leader.rebalance.enable": "false", "log.index.size.max.bytes": str(64 * 1024),
            "num.replica.fetchers": "1", "controller.socket.timeout.ms": "60000",
            "replica.lag.time.max.ms": "30000" if partitions >= 1000 else "10000"}


def round_robin(partitions: int, brokers: Sequence[int]) -> dict[int, list[int]]:
    rf = min(3, len(brokers))
    return {p: [brokers[(p + i) % len(brokers)] for i in range(rf)] for p in range(partitions)}


# ---------------------------------------------------------------- pure: phases of one failover

@dataclass(frozen=True)
class Iteration:
    """What one fault iteration observed (epoch seconds): the inputs of :func:`failover_phases`."""

    fault: str
    target: int
    controller_before: int | None
    fault_at: float
    moved: Mapping[tuple[str, int], int]  # partition -> its leader before (on the target)
    detection_at: float | None
    metadata_at: float | None
    events: tuple[LogEvent, ...]
    metrics: FaultMetrics | None = None
    log_lines: int = 0  # controller.log + state-change.log lines written from the fault on
    log_bytes: int = 0


def _last(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def failover_phases(it: Iteration) -> dict[str, float | None]:
    """The phases of one iteration (see the module doc), in ms from the fault."""
    events = [e for e in it.events if e.at >= it.fault_at]
    trigger = next((e for e in events if e.kind in TRIGGERS), None)
    controller = trigger.node if trigger is not None else None
    ready = next((e for e in events if e.kind == "failover_ready" and e.node == controller), None)
    # The fault's event: from its trigger to the controller's next event (a restart, say).
    following = next((e for e in events if trigger is not None and e.at > trigger.at and e.kind in TRIGGERS
                      and e.node == controller), None)
    end = following.at if following is not None else float("inf")
    mine = [e for e in events if e.node == controller and e.at < end] if controller is not None else []
    # The new leader's write of each moved partition: the first write naming another leader.
    written: dict[tuple[str, int], LogEvent] = {}
    for e in mine:
        if e.kind in ("partition_changed", "isr_shrunk") and e.topic is not None and e.partition is not None:
            key = (e.topic, e.partition)
            if key in it.moved and e.leader not in (None, -1, it.moved[key]) and key not in written:
                written[key] = e
    last_write = _last(e.at for e in written.values())
    # Per moved partition, the first LeaderAndIsr to its new leader and the first UpdateMetadata
    # after its write (later batches of the same event carry the dead replica's ISR removal).
    sent = [next((e.at for e in mine if e.kind == "leader_and_isr" and e.at >= w.at and w.leader in e.brokers), None)
            for w in written.values()]
    told = [next((e.at for e in mine if e.kind == "update_metadata" and e.at >= w.at), None) for w in written.values()]
    leader_and_isr = _last(sent) if sent and None not in sent else None
    update_metadata = _last(told) if told and None not in told else None
    # Each new leader's first "Leader t-p ... starts" after its write.
    started: dict[tuple[str, int], float] = {}
    for e in events:
        if e.kind == "leader_started" and e.topic is not None and e.partition is not None:
            w = written.get((e.topic, e.partition))
            if w is not None and e.node == w.leader and e.at >= w.at:
                started.setdefault((e.topic, e.partition), e.at)
    complete = bool(written) and len(written) == len(it.moved)
    leaders_ready = _last(started.values()) if complete and len(started) == len(written) else None

    def ms(at: float | None, since: float | None = it.fault_at) -> float | None:
        return None if at is None or since is None else round((at - since) * 1000.0, 1)

    return {
        "detection": ms(it.detection_at),
        # From ZooKeeper's expiry of the session when its log says it, as scenarios.checks.latency does.
        "controller_queue": ms(trigger.at, expiry_before(events, it.fault_at, trigger) or it.detection_at)
        if trigger is not None and trigger.kind != "shutdown_request" else None,
        "controller_start": ms(trigger.at if trigger is not None else None),
        "controller_init": ms(ready.at, trigger.at) if ready is not None and trigger is not None else None,
        "zk_writes": ms(last_write) if complete else None,
        "leader_and_isr": ms(leader_and_isr),
        "update_metadata": ms(update_metadata),
        "leaders_ready": ms(leaders_ready),
        "metadata": ms(it.metadata_at),
    }


def iteration_record(it: Iteration, *, run_id: str, brokers: int, partitions: int, index: int,
                     started_at: float, finished_at: float, settings: Mapping[str, str],
                     backend: str = "local") -> Record:
    phases = failover_phases(it)
    metrics = summarise_metrics(it.metrics) if it.metrics is not None else None
    observed = {"moved_partitions": len(it.moved), "target": it.target, "controller_before": it.controller_before,
                "log_events": len(it.events),
                "log_lines": it.log_lines, "log_bytes": it.log_bytes, "controller_metrics": metrics, "settings": dict(settings)}
    detail = (f"{it.fault} of broker {it.target} with {len(it.moved)} of {partitions} partitions led: "
              + ", ".join(f"{k} {v:.0f} ms" for k, v in phases.items() if v is not None))
    return Record(run_id=run_id, scenario=SCENARIO, iteration=index, seed=0, backend=backend, kafka_version="",
                  brokers=brokers, partitions=partitions, kind="measurement", check=CHECK, passed=None,
                  started_at=started_at, finished_at=finished_at, fault=it.fault, target=f"broker {it.target}",
                  observed=observed, detail=detail, latency_ms=phases,
                  timestamps={"fault": it.fault_at, **({"detection": it.detection_at} if it.detection_at else {}),
                              **({"metadata": it.metadata_at} if it.metadata_at else {})})


# ---------------------------------------------------------------- pure: the scaling table

@dataclass(frozen=True)
class Cell:
    fault: str
    brokers: int
    partitions: int
    phase: str
    samples: int
    median_ms: float
    p99_ms: float
    backend: str = "local"
    kafka_version: str = ""

    @property
    def label(self) -> str:
        """The fault, the launcher when not local (as ``bench kip291``'s table) and the release
        when not the default: ``--from`` may merge runs of several, which measure different
        set-ups and are never pooled."""
        from kafka_chaos.harness.distribution import DEFAULT_KAFKA_VERSION

        label = self.fault if self.backend == "local" else f"{self.fault} {self.backend}"
        return label if self.kafka_version in ("", DEFAULT_KAFKA_VERSION) else f"{label} {self.kafka_version}"


def spans(phases: Mapping[str, float | None]) -> dict[str, float | None]:
    """:data:`SPANS` of one iteration's phases (ms from the controller's start)."""
    start = phases.get("controller_start")
    out: dict[str, float | None] = {}
    for name, phase in SPANS.items():
        end = phases.get(phase)
        out[name] = None if start is None or end is None else round(end - start, 1)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def summarise(records: Iterable[Record]) -> list[Cell]:
    """Median and p99 per fault, launcher, release, broker count, partition count and phase
    (local first, then each other launcher; releases in order)."""
    groups: dict[tuple[str, str, str, int, int, str], list[float]] = {}
    for r in records:
        if r.check != CHECK or r.latency_ms is None or r.fault is None:
            continue
        for phase, value in {**r.latency_ms, **spans(r.latency_ms)}.items():
            if value is not None:
                groups.setdefault((r.fault, r.backend, r.kafka_version, r.brokers, r.partitions, phase),
                                  []).append(float(value))
    order = {p: i for i, p in enumerate((*PHASES, *SPANS))}
    cells = [Cell(f, b, p, ph, len(v), round(statistics.median(v), 1), round(percentile(v, 99), 1), backend, release)
             for (f, backend, release, b, p, ph), v in groups.items()]
    return sorted(cells, key=lambda c: (FAULTS.index(c.fault) if c.fault in FAULTS else 9, c.backend != "local",
                                        c.backend, _release_order(c.kafka_version), c.brokers, c.partitions,
                                        order.get(c.phase, 99)))


def _release_order(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".") if x.isdigit())


# ---------------------------------------------------------------- the driver (talks to a cluster)

@dataclass
class BenchOptions:
    partitions: Sequence[int]
    brokers: Sequence[int] = (3,)
    faults: Sequence[str] = FAULTS
    repeat: int = 3
    fault_timeout: float = 120.0
    settle_timeout: float = 600.0
    backend: str = "local"  # or "containers" (resolved: harness.backends.resolve_backend)
    # "test": the project's session and lag timeouts (6 s, bench_settings'); "release": the ones
    # the release ships (harness.config.shipped_timeouts), as its users run it
    timeouts: str = "test"
    run_id: str = field(default_factory=lambda: f"bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-"
                                                f"{uuid.uuid4().hex[:6]}")


Progress = Callable[[str], None]


def run_bench(options: BenchOptions, distribution: KafkaDistribution, write: Callable[[Record], None], progress: Progress) -> int:
    """Every (brokers, partitions) cluster in turn; returns the number of records written."""
    written = 0
    for brokers in options.brokers:
        for partitions in options.partitions:
            written += _bench_cluster(options, distribution, brokers, partitions, write, progress)
    return written


def _bench_cluster(options: BenchOptions, distribution: KafkaDistribution, brokers: int, partitions: int,
                   write: Callable[[Record], None], progress: Progress) -> int:
    from kafka_chaos.harness.backends import open_bench_cluster
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.metadata import create_topic
    from kafka_chaos.harness.observer import ZkObserver

    from kafka_chaos.harness.config import shipped_timeouts

    settings = bench_settings(partitions)
    if options.timeouts == "release":
        settings.update(shipped_timeouts(distribution.version))
    heap = broker_heap_for(partitions, brokers)
    config = ClusterConfig(brokers=brokers, broker_heap=heap, cluster_overrides=settings,
                           zookeeper_heap="512m" if partitions >= 1000 else "128m")
    progress(f"{brokers} brokers, {partitions} partitions: starting on {options.backend} (broker heap {heap})")
    count = 0
    with open_bench_cluster(options.backend, config, distribution, start_timeout=300.0,
                            stop_timeout=stop_timeout_for(partitions)) as cluster:
        began = time.monotonic()
        create_topic(cluster.bootstrap_servers, TOPIC, round_robin(partitions, cluster.broker_ids),
                     {"segment.bytes": str(1024 * 1024)}, timeout=300.0)
        wait_settled(cluster, cluster.broker_ids, partitions, options.settle_timeout)
        progress(f"{brokers} brokers, {partitions} partitions: topic ready in {time.monotonic() - began:.1f} s")
        with ZkObserver(cluster.zookeeper_connect, topics=[]) as observer:
            for fault in options.faults:
                for index in range(options.repeat):
                    started = time.time()
                    it = one_fault(cluster, observer, fault, partitions, options)
                    record = iteration_record(it, run_id=options.run_id, brokers=brokers, partitions=partitions,
                                              index=index, started_at=started, finished_at=time.time(),
                                              settings={**settings, "broker_heap": heap},
                                              backend=cluster.backend)
                    record = _with_version(record, cluster.kafka_version)
                    write(record)
                    count += 1
                    progress(f"{brokers}b/{partitions}p {fault} #{index + 1}: {record.detail}")
                    if (fault, index) != (options.faults[-1], options.repeat - 1):  # the cluster goes next
                        restore(cluster, it.target, partitions, options.settle_timeout)
    return count


def _with_version(record: Record, version: str) -> Record:
    from dataclasses import replace

    return replace(record, kafka_version=version)


def one_fault(cluster: BenchCluster, observer: ZkObserver, fault: str, partitions: int, options: BenchOptions) -> Iteration:
    from kafka_chaos.harness.metadata import broker_view
    from kafka_chaos.harness.metrics import endpoints_of, scrape_brokers
    from kafka_chaos.harness.node_logs import LogCursor

    controller = observer.snapshot().controller
    view = broker_view(cluster.endpoint(cluster.broker_ids[0]).bootstrap, [TOPIC], timeout=30.0)
    led: dict[int, list[tuple[str, int]]] = {}
    for key, pm in view.items():
        led.setdefault(pm.leader, []).append(key)
    if fault == "controller_kill":
        target = controller
    else:
        others = [b for b in cluster.broker_ids if b != controller]
        target = max(others, key=lambda b: (len(led.get(b, [])), -b))
    if target is None:
        raise HarnessError("no controller to target")
    moved = {key: target for key in led.get(target, [])}
    cursor = LogCursor(cluster)
    cursor.mark()
    endpoints = endpoints_of(cluster)
    before_at, before = scrape_brokers(endpoints)
    fault_at = time.time()
    stopping: threading.Thread | None = None
    if fault == "controlled_shutdown":
        # stop_broker returns once the JVM exited, long after its leaders moved: measure meanwhile.
        stopping = threading.Thread(target=cluster.stop_broker, args=(target,), name="bench-stop", daemon=True)
        stopping.start()
    else:
        cluster.kill_broker(target)
    live = [b for b in cluster.broker_ids if b != target]
    metadata_at = _wait_leaders_moved(cluster, live, target, partitions, options.fault_timeout)
    if stopping is not None:
        stopping.join(timeout=cluster.stop_timeout + 30.0)
        if stopping.is_alive():
            raise HarnessError(f"broker {target} still shutting down {cluster.stop_timeout + 30.0:.0f} s after SIGTERM")
    detection = observer.broker_gone_at(target, fault_at)
    if detection is None:
        try:
            observer.wait_broker_gone(target, timeout=options.fault_timeout)
        except HarnessError:
            pass
        detection = observer.broker_gone_at(target, fault_at)
    time.sleep(0.5)  # the last lines of the event reach the log files
    after_at, after = scrape_brokers({b: e for b, e in endpoints.items() if b != target})
    lines = cursor.lines_since_mark()
    events = tuple(parse_lines(lines, after=fault_at - 1.0))
    return Iteration(fault, target, controller, fault_at, moved, detection, metadata_at, events,
                     FaultMetrics(MetricsScrape(before_at, before), MetricsScrape(after_at, after)),
                     len(lines), sum(len(line) + 1 for line in lines))


def _wait_leaders_moved(cluster: BenchCluster, live: Sequence[int], target: int, partitions: int,
                        timeout: float) -> float | None:
    """When every live broker's metadata first showed a live leader (not ``target``) for every
    partition; None when that did not happen within ``timeout``."""
    from kafka_chaos.harness.metadata import MetadataError, broker_view

    pending = set(live)
    seen_at: dict[int, float] = {}

    def all_moved() -> bool:
        for b in sorted(pending):
            try:
                view = broker_view(cluster.endpoint(b).bootstrap, [TOPIC], timeout=10.0)
            except MetadataError:
                continue
            if len(view) == partitions and all(pm.leader in live for pm in view.values()):
                seen_at[b] = time.time()
                pending.discard(b)
        return not pending

    try:
        wait_until(all_moved, timeout=timeout, interval=0.05, description="every partition led by a live broker")
    except WaitTimeout:
        log.warning("after the fault on broker %d, brokers %s never showed live leaders", target, sorted(pending))
        return None
    return max(seen_at.values())


def wait_settled(cluster: BenchCluster, brokers: Sequence[int], partitions: int, timeout: float) -> None:
    """Every partition's ISR is its full replica list and its leader the preferred one, as
    broker ``brokers[0]``'s metadata shows (bounded)."""
    from kafka_chaos.harness.metadata import MetadataError, broker_view

    def settled() -> bool:
        try:
            view = broker_view(cluster.endpoint(brokers[0]).bootstrap, [TOPIC], timeout=30.0)
        except MetadataError:
            return False
        return len(view) == partitions and all(
            set(pm.isr) == set(pm.replicas) and pm.leader == pm.replicas[0] for pm in view.values())

    wait_until(settled, timeout=timeout, interval=1.0, description=f"{partitions} partitions settled")


def restore(cluster: BenchCluster, target: int, partitions: int, timeout: float) -> None:
    """Start the target again, wait for full ISRs, elect the preferred leaders (the next
    iteration starts from the same leadership)."""
    from kafka_chaos.harness.metadata import MetadataError, broker_view, elect_leaders

    cluster.start_broker(target)

    def caught_up() -> bool:
        try:
            view = broker_view(cluster.endpoint(cluster.broker_ids[0]).bootstrap, [TOPIC], timeout=30.0)
        except MetadataError:
            return False
        return len(view) == partitions and all(set(pm.isr) == set(pm.replicas) for pm in view.values())

    wait_until(caught_up, timeout=timeout, interval=1.0, description="ISRs full again")
    try:
        elect_leaders(cluster.bootstrap_servers, "preferred", [(TOPIC, p) for p in range(partitions)], timeout=120.0)
    except HarnessError as exc:  # ELECTION_NOT_NEEDED for some partitions is normal
        log.debug("preferred election: %s", exc)
    wait_settled(cluster, cluster.broker_ids, partitions, timeout)

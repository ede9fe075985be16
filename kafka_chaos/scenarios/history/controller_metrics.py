"""The controller's own figures around one fault: pure arithmetic over two scrapes of
every broker's JMX exporter (:mod:`harness.metrics`), taken right before the fault and when the
step's measurement window closes, and stored in the step's observation so ``kafka-chaos check``
recomputes the same ``controller_metrics`` record.

What the MBeans are (Kafka 3.9):

* ``ControllerStats`` ``LeaderElectionRateAndTimeMs`` / ``ControlledShutdownRateAndTimeMs`` /
  ``ControllerChangeRateAndTimeMs``: Yammer timers around the *processing* of a ``BrokerChange`` /
  ``ControlledShutdown`` / ``ControllerChange`` (``Startup``, ``Reelect``: a new controller's
  ``onControllerFailover``, where a controller kill's elections happen) controller event (``ControllerEventManager.ControllerEventThread.process``: ``timer.time(() => process())``,
  the metric name from ``ControllerState.rateAndTimeMetricName``); ``UncleanLeaderElectionsPerSec``
  a meter marked per unclean election (``KafkaController.updateLeaderAndIsrCache``' callers via
  ``PartitionStateMachine``).
* ``ControllerEventManager`` ``EventQueueTimeMs``: a histogram of each event's wait in the queue
  (enqueue to dequeue), cleared after 300 s with no event (``eventQueueTimeTimeoutMs``), so a
  count that went down is a reset, not a negative delta; ``EventQueueSize`` a gauge.
* ``KafkaController`` ``OfflinePartitionsCount`` / ``ActiveControllerCount`` and ``ReplicaManager``
  ``UnderReplicatedPartitions`` / ``UnderMinIsrPartitionCount``: gauges.
* ``KafkaController`` ``GlobalPartitionCount``: a gauge of the partitions in the active
  controller's context (``controllerContext.partitionWithLeadersCount``, the partitions whose state
  it read or wrote), 0 on every other broker; set by ``updateMetrics`` after every controller event
  (3.0.0 ``KafkaController.scala`` lines 1426-1443 and 2529; 2.4.0 lines 1289-1322 and 1917; 3.9
  lines 1478-1503 and 2665) and zeroed by ``onControllerResignation`` (3.0.0 line 464). Not in
  :data:`MEASURED` (the ``controller_metrics`` record stays as it was): ``active_controller_count``
  reads it (:func:`global_partition_counts`); histories before it was scraped have none.

Yammer's ``Histogram.mean()`` is ``sum / count``, so ``Mean * Count`` is the exact running sum:
the time spent over the fault is the difference of the two sums, per broker, over the brokers
that answered both scrapes (a killed broker's counters are gone with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_CONTROLLER = "kafka_controller_"

# Short name -> (exporter name prefix, kind).  "timer": Count/Mean/Max/percentiles;
# "meter": Count; "gauge": Value.
MEASURED: Mapping[str, tuple[str, str]] = {
    "leader_election": (_CONTROLLER + "controllerstats_leaderelectionrateandtimems", "timer"),
    "controlled_shutdown": (_CONTROLLER + "controllerstats_controlledshutdownrateandtimems", "timer"),
    "controller_change": (_CONTROLLER + "controllerstats_controllerchangerateandtimems", "timer"),
    "unclean_elections": (_CONTROLLER + "controllerstats_uncleanleaderelectionspersec", "meter"),
    "event_queue_time": (_CONTROLLER + "controllereventmanager_eventqueuetimems", "timer"),
    "event_queue_size": (_CONTROLLER + "controllereventmanager_eventqueuesize", "gauge"),
    "offline_partitions": (_CONTROLLER + "kafkacontroller_offlinepartitionscount", "gauge"),
    "active_controllers": (_CONTROLLER + "kafkacontroller_activecontrollercount", "gauge"),
    "under_replicated": ("kafka_server_replicamanager_underreplicatedpartitions", "gauge"),
    "under_min_isr": ("kafka_server_replicamanager_underminisrpartitioncount", "gauge"),
}


@dataclass(frozen=True)
class MetricsScrape:
    """One scrape of every broker that answered: broker -> exporter sample name -> value."""

    at: float
    brokers: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "brokers": {str(b): dict(sorted(v.items())) for b, v in sorted(self.brokers.items())}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricsScrape:
        return cls(float(d["at"]), {int(b): {str(k): float(x) for k, x in v.items()} for b, v in d["brokers"].items()})


@dataclass(frozen=True)
class FaultMetrics:
    """Both scrapes of one fault step."""

    before: MetricsScrape
    after: MetricsScrape

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before.to_dict(), "after": self.after.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FaultMetrics:
        return cls(MetricsScrape.from_dict(d["before"]), MetricsScrape.from_dict(d["after"]))


def _get(values: Mapping[str, float], prefix: str, attribute: str) -> float | None:
    return values.get(f"{prefix}_{attribute}")


def _running_sum(values: Mapping[str, float], prefix: str) -> tuple[float, float] | None:
    """(count, count * mean) of a timer or histogram on one broker."""
    count, mean = _get(values, prefix, "count"), _get(values, prefix, "mean")
    if count is None or mean is None:
        return None
    return count, count * mean


def _timer(before: Mapping[int, Mapping[str, float]], after: Mapping[int, Mapping[str, float]],
           prefix: str) -> dict[str, Any]:
    """Events and time spent between the scrapes, summed over brokers present in both; the
    largest single event (``max``) only when one broker did all of it (else unknowable)."""
    count = total = 0.0
    by_broker: dict[str, float] = {}
    for broker in sorted(set(before) & set(after)):
        was, now = _running_sum(before[broker], prefix), _running_sum(after[broker], prefix)
        if now is None:
            continue
        if was is None or now[0] < was[0]:  # histogram cleared (idle 300 s): all of it is new
            was = (0.0, 0.0)
        if now[0] > was[0]:
            count += now[0] - was[0]
            total += now[1] - was[1]
            by_broker[str(broker)] = round(now[0] - was[0])
    return {"count": round(count), "total_ms": round(total, 1),
            "mean_ms": round(total / count, 1) if count else None, "by_broker": by_broker}


def _meter(before: Mapping[int, Mapping[str, float]], after: Mapping[int, Mapping[str, float]],
           prefix: str) -> dict[str, Any]:
    delta = 0.0
    for broker in sorted(set(before) & set(after)):
        was, now = _get(before[broker], prefix, "count"), _get(after[broker], prefix, "count")
        if was is not None and now is not None and now >= was:
            delta += now - was
    return {"count": round(delta)}


def _gauge(scrape: Mapping[int, Mapping[str, float]], prefix: str) -> dict[str, float]:
    return {str(b): v for b, values in sorted(scrape.items())
            if (v := _get(values, prefix, "value")) is not None}


def _gauges(before: Mapping[int, Mapping[str, float]], after: Mapping[int, Mapping[str, float]],
            prefix: str) -> dict[str, Any]:
    """Sum over the brokers that answered (the controller gauges are non-zero on the active
    controller only), before and after, and the per-broker values after."""
    was, now = _gauge(before, prefix), _gauge(after, prefix)
    return {"before": sum(was.values()) if was else None, "after": sum(now.values()) if now else None,
            "by_broker_after": now}


def summarise(metrics: FaultMetrics) -> dict[str, Any]:
    """Per measured MBean (:data:`MEASURED`) what happened between the two scrapes, plus which
    brokers answered and which was the active controller in each."""
    before, after = metrics.before.brokers, metrics.after.brokers
    out: dict[str, Any] = {
        "brokers_before": sorted(before), "brokers_after": sorted(after),
        "controller_before": active_controller(before), "controller_after": active_controller(after),
        "window_s": round(metrics.after.at - metrics.before.at, 3),
    }
    for name, (prefix, kind) in MEASURED.items():
        if kind == "timer":
            out[name] = _timer(before, after, prefix)
        elif kind == "meter":
            out[name] = _meter(before, after, prefix)
        else:
            out[name] = _gauges(before, after, prefix)
    return out


def active_controller_counts(scrape: Mapping[int, Mapping[str, float]]) -> dict[int, float]:
    """Each answering broker's ActiveControllerCount (a broker without the gauge left out)."""
    return {int(b): v for b, v in _gauge(scrape, MEASURED["active_controllers"][0]).items()}


GLOBAL_PARTITION_COUNT = _CONTROLLER + "kafkacontroller_globalpartitioncount"


def global_partition_counts(scrape: Mapping[int, Mapping[str, float]]) -> dict[int, float]:
    """Each answering broker's GlobalPartitionCount (a broker without the gauge left out: every
    broker of a history scraped before it was exported)."""
    return {int(b): v for b, v in _gauge(scrape, GLOBAL_PARTITION_COUNT).items()}


def active_controller(scrape: Mapping[int, Mapping[str, float]]) -> int | None:
    """The one broker whose ActiveControllerCount is 1 (None: none or several answered so)."""
    active = [b for b, v in active_controller_counts(scrape).items() if v >= 1]
    return active[0] if len(active) == 1 else None


def describe(summary: Mapping[str, Any]) -> str:
    """One readable line for the record's ``detail``."""
    election, queue = summary["leader_election"], summary["event_queue_time"]
    shutdown, change = summary["controlled_shutdown"], summary["controller_change"]
    parts = [f"controller {summary['controller_before']} -> {summary['controller_after']}",
             f"BrokerChange events {election['count']} taking {election['total_ms']} ms",
             f"ControlledShutdown events {shutdown['count']} taking {shutdown['total_ms']} ms",
             f"ControllerChange events {change['count']} taking {change['total_ms']} ms",
             f"{queue['count']} events queued {queue['total_ms']} ms in all",
             f"unclean elections {summary['unclean_elections']['count']}",
             f"offline partitions {summary['offline_partitions']['before']} -> {summary['offline_partitions']['after']}",
             f"under-replicated {summary['under_replicated']['before']} -> {summary['under_replicated']['after']}"]
    return "; ".join(parts)

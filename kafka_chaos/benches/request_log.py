"""The brokers' request log (``kafka.request.logger`` at DEBUG, only in ``kafka-chaos bench
kip291``), parsed: how long each request waited in the broker's request queue and in total.

Kafka 3.9 ``RequestChannel.Request.updateRequestMetrics`` logs every completed request as
``Completed request:{json}`` (``RequestConvertToJson.requestDescMetrics``): the request header
(``requestApiKey``, ``correlationId``, ``clientId``), then ``totalTimeMs``,
``requestQueueTimeMs`` (received by the network processor -> taken by a handler thread),
``localTimeMs``, ``remoteTimeMs`` (purgatory), ``responseQueueTimeMs``, ``sendTimeMs`` and the
``listener`` it came in on — the same figures as the ``kafka.network:type=RequestMetrics``
histograms, per request.  The line is logged when the response was sent, so the log stamp is
the request's end and ``end - totalTimeMs`` when the broker had read it.

:func:`pair_with_sends` matches the controller's "Sending LeaderAndIsr / UpdateMetadata request"
lines (:mod:`scenarios.history.controller_log`) with the broker's completions: the controller's
``RequestSendThread`` to one broker sends one request and waits for its response before the
next (3.9 ``ControllerChannelManager.RequestSendThread.doWork``, ``sendAndReceive``), so the
k-th request of a kind the controller queued for broker B after a mark is the k-th of that kind
B completed from the controller after it.  Pure: no I/O.
"""

from __future__ import annotations

import calendar
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kafka_chaos.scenarios.history.controller_log import LogEvent

# requestApiKey -> the name the benchmark reports (ApiKeys in clients' protocol).
API_NAMES: Mapping[int, str] = {0: "Produce", 1: "Fetch", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
                                6: "UpdateMetadata", 7: "ControlledShutdown"}
CONTROLLER_REQUESTS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
# controller_log kinds of the controller's send lines.
SEND_KINDS: Mapping[str, str] = {"leader_and_isr": "LeaderAndIsr", "update_metadata": "UpdateMetadata"}

_STAMP = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3})\] \w+ Completed request:")
_API = re.compile(r'"requestApiKey":(\d+),')
_CORRELATION = re.compile(r'"correlationId":(-?\d+),"clientId":("(?:[^"\\]|\\.)*"|null)')
_TIMES = re.compile(r'"totalTimeMs":([\d.]+),"requestQueueTimeMs":([\d.]+),"localTimeMs":([\d.]+),'
                    r'"remoteTimeMs":([\d.]+),"throttleTimeMs":\d+,"responseQueueTimeMs":([\d.]+),'
                    r'"sendTimeMs":([\d.]+)')
_LISTENER = re.compile(r'"listener":"([^"]*)"')


@dataclass(frozen=True)
class RequestEntry:
    """One completed request on broker ``broker``; ``at`` its end (epoch seconds)."""

    broker: int
    at: float
    api: str
    correlation_id: int
    client_id: str
    listener: str
    total_ms: float
    queue_ms: float
    local_ms: float
    remote_ms: float
    response_queue_ms: float
    send_ms: float

    @property
    def received_at(self) -> float:
        """When the broker's network processor had read the whole request."""
        return self.at - self.total_ms / 1000.0


def parse_request_line(line: str, broker: int, utc_offset_s: float = 0.0,
                       apis: Iterable[str] | None = None) -> RequestEntry | None:
    """The request of one request-log line (of ``apis`` only, when given); None otherwise."""
    stamp = _STAMP.match(line)
    if stamp is None:
        return None
    api_found = _API.search(line)
    if api_found is None:
        return None
    key = int(api_found.group(1))
    api = API_NAMES.get(key, f"api{key}")
    if apis is not None and api not in apis:
        return None
    tail = line.rfind('"connection":')
    times = _TIMES.search(line, tail if tail >= 0 else 0)
    header = _CORRELATION.search(line, api_found.end())
    listener = _LISTENER.search(line, tail if tail >= 0 else 0)
    if times is None or header is None:
        return None
    year, month, day, hour, minute, second, millis = (int(stamp.group(i)) for i in range(1, 8))
    at = calendar.timegm((year, month, day, hour, minute, second)) + millis / 1000.0 - utc_offset_s
    client = header.group(2)
    total, queue, local, remote, response_queue, send = (float(times.group(i)) for i in range(1, 7))
    return RequestEntry(broker=broker, at=round(at, 3), api=api, correlation_id=int(header.group(1)),
                        client_id="" if client == "null" else client[1:-1],
                        listener=listener.group(1) if listener else "", total_ms=total, queue_ms=queue,
                        local_ms=local, remote_ms=remote, response_queue_ms=response_queue, send_ms=send)


def parse_request_lines(lines: Iterable[str], broker: int, utc_offset_s: float = 0.0,
                        apis: Iterable[str] | None = None) -> list[RequestEntry]:
    wanted = None if apis is None else frozenset(apis)
    found = (parse_request_line(line, broker, utc_offset_s, wanted) for line in lines)
    return [e for e in found if e is not None]


@dataclass(frozen=True)
class ControllerRequest:
    """A controller request from its queueing on the controller to its end on the broker."""

    kind: str
    broker: int
    sent_at: float | None  # the controller logged "Sending ..." (None: no send line paired)
    entry: RequestEntry

    @property
    def sent_to_done_ms(self) -> float | None:
        return None if self.sent_at is None else round((self.entry.at - self.sent_at) * 1000.0, 1)

    @property
    def sent_to_received_ms(self) -> float | None:
        """Controller queue, connection and the broker's network processor reading it."""
        return None if self.sent_at is None else round((self.entry.received_at - self.sent_at) * 1000.0, 1)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "broker": self.broker, "listener": self.entry.listener,
                "queue_ms": self.entry.queue_ms, "local_ms": self.entry.local_ms, "total_ms": self.entry.total_ms,
                "sent_to_done_ms": self.sent_to_done_ms, "sent_to_received_ms": self.sent_to_received_ms,
                "correlation_id": self.entry.correlation_id}


def pair_with_sends(entries: Iterable[RequestEntry], events: Iterable[LogEvent],
                    controller: int | None) -> list[ControllerRequest]:
    """Each controller request the brokers completed (from ``controller``'s client id, when
    known), with the controller's send line of the same order (module doc), in time order.
    StopReplica sends are not logged at INFO: those have ``sent_at`` None."""
    sends: dict[tuple[str, int], list[float]] = {}
    for e in sorted(events, key=lambda e: e.at):
        kind = SEND_KINDS.get(e.kind)
        if kind is None or (controller is not None and e.node != controller):
            continue
        for broker in e.brokers:
            sends.setdefault((kind, broker), []).append(e.at)
    done: dict[tuple[str, int], list[RequestEntry]] = {}
    for r in sorted(entries, key=lambda r: (r.at, r.correlation_id)):
        if r.api in CONTROLLER_REQUESTS and (controller is None or r.client_id == str(controller)):
            done.setdefault((r.api, r.broker), []).append(r)
    paired = []
    for (kind, broker), completed in done.items():
        queued = sends.get((kind, broker), [])
        for k, r in enumerate(completed):
            paired.append(ControllerRequest(kind, broker, queued[k] if k < len(queued) else None, r))
    return sorted(paired, key=lambda c: c.entry.at)


@dataclass(frozen=True)
class Spread:
    """Median, p90 and maximum of some milliseconds (n samples)."""

    n: int
    median: float
    p90: float
    max: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def spread(values: Iterable[float | None]) -> Spread | None:
    """None for no values; p90 is the nearest-rank one."""
    present = sorted(v for v in values if v is not None)
    if not present:
        return None
    rank = max(1, min(len(present), -(-9 * len(present) // 10)))
    return Spread(len(present), round(statistics.median(present), 1), round(present[rank - 1], 1),
                  round(present[-1], 1))


def request_stats(entries: Sequence[RequestEntry], since: float, until: float) -> dict[str, Any]:
    """Requests of each API completed in [since, until) on all the brokers given: count per
    second, mean number waiting in the queue, queue and total time spreads (how loaded the data
    plane was)."""
    out: dict[str, Any] = {}
    span = max(until - since, 1e-3)
    by_api: dict[str, list[RequestEntry]] = {}
    for r in entries:
        if since <= r.at < until:
            by_api.setdefault(r.api, []).append(r)
    for api, rs in sorted(by_api.items()):
        queue = spread(r.queue_ms for r in rs)
        total = spread(r.total_ms for r in rs)
        # Little's law: the time-averaged number of these requests waiting in the request queue
        # (what the RequestQueueSize gauge samples), from the waits of those that completed.
        out[api] = {"per_s": round(len(rs) / span, 1), "mean_in_queue": round(sum(r.queue_ms for r in rs) / 1000.0 / span, 2),
                    "queue_ms": queue.to_dict() if queue else None,
                    "total_ms": total.to_dict() if total else None,
                    "local_ms": (spread(r.local_ms for r in rs) or Spread(0, 0, 0, 0)).to_dict()}
    return out

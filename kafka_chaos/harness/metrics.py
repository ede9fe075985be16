"""Scrape the brokers' JMX exporters (:mod:`harness.jmx_exporter`) around a fault.

:func:`scrape_brokers` asks every broker's ``/metrics`` at once, each with a bounded timeout,
and parses the text format with ``prometheus_client.parser``.  A broker that does not answer in
time (paused, killed, still starting) is simply absent from the result: the caller compares the
brokers present before and after.  Only ``kafka_*`` samples are kept (the agent adds JVM ones).
"""

from __future__ import annotations

import logging
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

log = logging.getLogger(__name__)

PREFIX = "kafka_"
DEFAULT_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class MetricsEndpoint:
    broker_id: int
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"


def parse_exposition(text: str) -> dict[str, float]:
    """``kafka_*`` sample name -> value of one exposition (labels, which the configuration
    does not produce, would be folded into the name as ``name{k="v"}``)."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith(PREFIX):
                continue
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = float(sample.value)
    return values


def scrape_one(endpoint: MetricsEndpoint, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, float] | None:
    """One broker's values; None when it does not answer within ``timeout``."""
    try:
        with urllib.request.urlopen(endpoint.url, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
    except (OSError, urllib.error.URLError, ValueError) as exc:
        log.debug("broker %d metrics at %s: %s", endpoint.broker_id, endpoint.url, exc)
        return None
    return parse_exposition(text)


def scrape_brokers(endpoints: Mapping[int, MetricsEndpoint],
                   timeout: float = DEFAULT_TIMEOUT_S) -> tuple[float, dict[int, dict[str, float]]]:
    """(when the scrape began, broker -> values) of every broker that answered; all asked at
    once, so the whole scrape takes at most about ``timeout``."""
    at = time.time()
    if not endpoints:
        return at, {}
    with ThreadPoolExecutor(max_workers=len(endpoints), thread_name_prefix="metrics") as pool:
        answers = {b: pool.submit(scrape_one, e, timeout) for b, e in endpoints.items()}
        found = {b: f.result() for b, f in answers.items()}
    return at, {b: values for b, values in sorted(found.items()) if values is not None}


def endpoints_of(cluster: object) -> dict[int, MetricsEndpoint]:
    """Every broker's exporter endpoint (a :class:`harness.cluster.Cluster`'s
    ``endpoint(b).metrics_port``); brokers without an agent are left out."""
    found: dict[int, MetricsEndpoint] = {}
    for broker_id in getattr(cluster, "broker_ids"):
        endpoint = getattr(cluster, "endpoint")(broker_id)
        if endpoint.metrics_port is not None:
            found[broker_id] = MetricsEndpoint(broker_id, endpoint.host, endpoint.metrics_port)
    return found

"""CI gates on a report: a minimum overall pass rate and latency limits (pure functions).

``--max-latency FAULT:PHASE:STAT=MS`` — e.g. ``hard_kill:election:p99=500``; FAULT may be ``*``
(every fault); STAT is one of p50, p90, p99, max.  A limit whose fault/phase has no samples
fails too: a typo or a scenario that stopped measuring must not pass a CI gate silently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.common.errors import UsageError
from kafka_chaos.records.schema import LATENCY_PHASES

STATS = ("p50", "p90", "p99", "max")
ANY_FAULT = "*"
_LIMIT = re.compile(r"^(?P<fault>[^:=\s]+):(?P<phase>[^:=\s]+):(?P<stat>[^:=\s]+)=(?P<ms>[^=\s]+)$")


@dataclass(frozen=True)
class LatencyLimit:
    fault: str
    phase: str
    stat: str
    limit_ms: float

    def __str__(self) -> str:
        return f"{self.fault}:{self.phase}:{self.stat}={self.limit_ms:g}"


def parse_latency_limit(text: str) -> LatencyLimit:
    match = _LIMIT.match(text.strip())
    if not match:
        raise UsageError(f"--max-latency {text!r}: expected FAULT:PHASE:STAT=MS, e.g. hard_kill:election:p99=500")
    phase, stat = match["phase"], match["stat"].lower()
    if phase not in LATENCY_PHASES:
        raise UsageError(f"--max-latency {text!r}: unknown phase {phase!r} (phases: {', '.join(LATENCY_PHASES)})")
    if stat not in STATS:
        raise UsageError(f"--max-latency {text!r}: unknown statistic {stat!r} (one of {', '.join(STATS)})")
    try:
        limit = float(match["ms"])
    except ValueError:
        raise UsageError(f"--max-latency {text!r}: {match['ms']!r} is not a number of milliseconds") from None
    if not math.isfinite(limit) or limit < 0:
        raise UsageError(f"--max-latency {text!r}: the limit must be a non-negative number of milliseconds")
    return LatencyLimit(match["fault"], phase, stat, limit)


def parse_latency_limits(items: Iterable[str | LatencyLimit]) -> tuple[LatencyLimit, ...]:
    return tuple(item if isinstance(item, LatencyLimit) else parse_latency_limit(item) for item in items)


def parse_min_pass_rate(value: float | str | None) -> float | None:
    if value is None:
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"--min-pass-rate {value!r}: expected a number between 0 and 1") from None
    if not 0.0 <= rate <= 1.0:
        raise UsageError(f"--min-pass-rate {value!r}: expected a number between 0 and 1 (0.95 = 95 %)")
    return rate


def pass_rate_failure(totals: Mapping[str, Any], min_pass_rate: float | None) -> str | None:
    if min_pass_rate is None:
        return None
    passed, failed = int(totals.get("passed") or 0), int(totals.get("failed") or 0)
    if passed + failed == 0:
        return f"no decided checks: the pass rate is undefined, --min-pass-rate {min_pass_rate:g} not met"
    rate = passed / (passed + failed)
    if rate < min_pass_rate:
        return (f"overall pass rate {rate:.2%} ({passed}/{passed + failed} decided checks) "
                f"is under --min-pass-rate {min_pass_rate:g}")
    return None


def latency_failures(latency: Sequence[Mapping[str, Any]], limits: Iterable[LatencyLimit]) -> list[str]:
    failures = []
    for limit in limits:
        rows = [row for row in latency
                if row.get("phase") == limit.phase and limit.fault in (ANY_FAULT, row.get("fault"))]
        if not rows:
            known = sorted({str(row.get("fault")) for row in latency}) or ["none"]
            failures.append(f"--max-latency {limit}: no {limit.phase} samples for fault {limit.fault!r} "
                            f"(faults with samples: {', '.join(known)})")
            continue
        for row in rows:
            value = row.get(limit.stat)
            if value is not None and value > limit.limit_ms:
                failures.append(f"--max-latency {limit}: {row['fault']} {limit.phase} {limit.stat} is "
                                f"{value:g} ms over {row['count']} samples, above the limit {limit.limit_ms:g} ms")
    return failures


def gate_failures(totals: Mapping[str, Any], latency: Sequence[Mapping[str, Any]],
                  min_pass_rate: float | None, limits: Iterable[LatencyLimit]) -> list[str]:
    failure = pass_rate_failure(totals, min_pass_rate)
    return ([failure] if failure else []) + latency_failures(latency, limits)

"""Compare the verdicts of two sets of records (a stored run and its re-check): pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_chaos.records.schema import Record

VerdictKey = tuple[str, str, int, float, str, str | None, str | None, int | None]


def verdict_key(r: Record) -> VerdictKey:
    """Which check a record is the verdict of: run, scenario iteration, the step (its start),
    the check and what it is about."""
    return (r.run_id, r.scenario, r.iteration, r.started_at, r.check, r.fault, r.topic, r.partition)


def _verdict(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "unknown"}[passed]


@dataclass(frozen=True)
class VerdictChange:
    key: VerdictKey
    before: str  # "pass" / "FAIL" / "unknown" / "absent"
    after: str
    detail: str

    def describe(self) -> str:
        run_id, scenario, iteration, _, check, fault, topic, partition = self.key
        where = f" {topic}-{partition}" if partition is not None else (f" {topic}" if topic else "")
        step = f" after {fault}" if fault else ""
        return (f"{scenario}#{iteration} {check}{where}{step}: {self.before} -> {self.after}"
                + (f" ({self.detail})" if self.detail else ""))


def verdict_changes(stored: Iterable[Record], rechecked: Iterable[Record]) -> list[VerdictChange]:
    """Checks whose verdict differs (or that exist on one side only); measurements are not
    verdicts and are left out. Several records under one key are compared in order."""
    def by_key(records: Iterable[Record]) -> dict[VerdictKey, list[Record]]:
        out: dict[VerdictKey, list[Record]] = {}
        for r in records:
            if r.kind == "check":
                out.setdefault(verdict_key(r), []).append(r)
        return out

    old, new = by_key(stored), by_key(rechecked)
    changes = []
    for key in sorted(set(old) | set(new), key=repr):
        a, b = old.get(key, []), new.get(key, [])
        for i in range(max(len(a), len(b))):
            was = _verdict(a[i].passed) if i < len(a) else "absent"
            now = _verdict(b[i].passed) if i < len(b) else "absent"
            if was != now:
                changes.append(VerdictChange(key, was, now, b[i].detail if i < len(b) else ""))
    return changes

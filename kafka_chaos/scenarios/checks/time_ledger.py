"""The ``time_ledger`` measurement: a step's or a scenario iteration's time ledger
(:mod:`scenarios.model.ledger`) as a record, so the report and the run's end summary read where
the time went from records.jsonl. No verdict; ``observed`` holds:

* ``scope`` -- ``step`` (a fault step), ``topic_creation`` (a breakdown of its iteration's
  ``create_topics``), ``iteration`` (everything outside the fault steps);
* ``phases`` -- ``{phase: seconds}`` in the ledger's order;
* ``seconds`` -- their sum (the wall time the ledger covers);
* ``kafka_dictated_s`` -- what of it Kafka's own timeouts and start-ups took.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_chaos.records.schema import Record
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.model.ledger import COUNTED_SCOPES, SCOPES, TimeLedger

TIME_LEDGER = "time_ledger"
DETAIL_PHASES = 3  # the largest phases the detail line names


def ledger_measurement(scope: str, ledger: TimeLedger) -> list[CheckResult]:
    """The measurement of ``ledger`` (none for an empty one: an older history's)."""
    if scope not in SCOPES:
        raise ValueError(f"time-ledger scope {scope!r} is not one of {SCOPES}")
    if not ledger:
        return []
    observed = {"scope": scope, "phases": ledger.as_dict(), "seconds": ledger.total,
                "kafka_dictated_s": ledger.kafka_dictated}
    return [CheckResult(TIME_LEDGER, None, None, observed, describe(scope, ledger), kind="measurement")]


def describe(scope: str, ledger: TimeLedger) -> str:
    largest = sorted(ledger.entries, key=lambda entry: -entry[1])[:DETAIL_PHASES]
    return (f"{scope} {ledger.total:.1f} s: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in largest)
            + (f" (Kafka-dictated {ledger.kafka_dictated:.1f} s)" if ledger.kafka_dictated else ""))


def ledger_of(record: Record) -> tuple[str, TimeLedger] | None:
    """A ``time_ledger`` record's scope and ledger; None for any other record."""
    if record.check != TIME_LEDGER or not isinstance(record.observed, dict):
        return None
    phases = record.observed.get("phases") or {}
    return str(record.observed.get("scope")), TimeLedger.from_list(list(phases.items()))


def counted_ledgers(records: Iterable[Record]) -> list[TimeLedger]:
    """The ledgers of ``records`` that together cover their iterations' wall time once
    (:data:`scenarios.model.ledger.COUNTED_SCOPES`)."""
    found = (ledger_of(r) for r in records)
    return [ledger for scope, ledger in (f for f in found if f is not None) if scope in COUNTED_SCOPES]

"""Which latency phases the report shows as a leader switch's and which as the clients'.

Every phase is aggregated alike (fault × phase percentiles), but they are not the same kind of
figure: the leader-switch phases are ms from the fault to a moment the cluster or the producer
reached; the clients' are lengths of unavailability or end-to-end latencies, and two of them
(:data:`records.schema.WINDOW_PHASES`) count fixed 1 s windows.  The report keeps them apart so
that no table or chart puts a window count beside a millisecond phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_chaos.records.schema import CLIENT_PHASES, TXN_PHASES, WINDOW_PHASES

Row = Mapping[str, Any]

# ms from the fault, in a leader switch's order: each includes the ones before it.
CUMULATIVE_PHASES = ("detection", "election", "propagation", "first_produce")
# The clients' own view: client_gap (the latency record's longest silence between the target
# partition's acknowledgements) with the client_availability measurements' phases. The
# transactional workload's (txn_availability, per step) are shown apart.
CLIENT_SIDE_PHASES = ("client_gap", *CLIENT_PHASES)
CLIENT_MS_PHASES = tuple(p for p in CLIENT_SIDE_PHASES if p not in WINDOW_PHASES)


def leader_switch_rows(rows: Sequence[Row]) -> list[Row]:
    """The rows of the leader switch's phases (the cluster's; controller sub-phases included)."""
    return [r for r in rows if r.get("phase") not in CLIENT_SIDE_PHASES and r.get("phase") not in TXN_PHASES]


def client_rows(rows: Sequence[Row]) -> list[Row]:
    """The rows of the clients' phases, the 1 s-window ones included (in ``rows``' order)."""
    return [r for r in rows if r.get("phase") in CLIENT_SIDE_PHASES]


def txn_rows(rows: Sequence[Row]) -> list[Row]:
    """The rows of the transactional workload's phases (in ``rows``' order)."""
    return [r for r in rows if r.get("phase") in TXN_PHASES]


def client_ms_rows(rows: Sequence[Row]) -> list[Row]:
    """The rows of the clients' phases measured to the millisecond."""
    return [r for r in rows if r.get("phase") in CLIENT_MS_PHASES]


def window_rows(rows: Sequence[Row]) -> list[Row]:
    """The rows of the phases that count 1 s windows without success."""
    return [r for r in rows if r.get("phase") in WINDOW_PHASES]


def phase_label(phase: object) -> str:
    """A phase's name, the ones counting 1 s windows said to."""
    return f"{phase} (1 s windows)" if phase in WINDOW_PHASES else ("" if phase is None else str(phase))

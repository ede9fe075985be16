"""What a transaction held past its timeout came to (``scenarios.faults.txn_timeout``): the answer
the transactional workload gives the fault, in the layer both see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HeldTransaction:
    """One held attempt as the client saw it: ``name`` (``txn_id#seq``), its outcome
    (``committed`` / ``aborted`` / ``unknown``) and the error that ended it, the instance's
    ``transaction.timeout.ms`` and how long it was held open before the commit call."""

    name: str
    outcome: str
    error: str | None
    timeout_ms: int
    held_ms: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"txn": self.name, "outcome": self.outcome, "error": self.error, "timeout_ms": self.timeout_ms,
                "held_ms": self.held_ms}

"""The end of ``run`` and ``explore``: one short table of where the wall time went, from the
``time_ledger`` records the run wrote (:mod:`scenarios.checks.time_ledger`): per phase, seconds
and share of the command's wall time, and what no ledger holds (start-up, the iterations'
final checks, writing run.json; the report comes after). Explore adds its pace: checked
steps per 10 minutes."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_chaos.scenarios.model.ledger import KAFKA_DICTATED, TimeLedger, summed

OUTSIDE = "(no ledger)"  # the summary's row for the wall time no ledger covers
PACE_WINDOW_S = 600.0


def time_table(ledgers: Sequence[TimeLedger], wall_s: float, steps_checked: int | None = None) -> str:
    """Per phase over ``ledgers`` (each iteration's counted ones): seconds and share of
    ``wall_s``; Kafka-dictated phases marked; ``steps_checked`` (explore) gives the pace."""
    total = summed(ledgers)
    rows = [(name + (" *" if name in KAFKA_DICTATED else ""), seconds) for name, seconds in total.entries]
    rows.append((OUTSIDE, max(0.0, wall_s - total.total)))
    width = max(len(name) for name, _ in rows)
    lines = [f"where the time went ({wall_s:.0f} s wall; * Kafka-dictated: {total.kafka_dictated:.1f} s, "
             f"{_share(total.kafka_dictated, wall_s)}):"]
    lines += [f"  {name.ljust(width)}  {seconds:8.1f} s  {_share(seconds, wall_s):>6}" for name, seconds in rows]
    if steps_checked is not None:
        pace = steps_checked / wall_s * PACE_WINDOW_S if wall_s > 0 else 0.0
        lines.append(f"  {steps_checked} checked step(s): {pace:.1f} per 10 minutes")
    return "\n".join(lines)


def _share(seconds: float, wall_s: float) -> str:
    return f"{100 * seconds / wall_s:.1f} %" if wall_s > 0 else "-"

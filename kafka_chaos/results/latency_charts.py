"""The latency section's charts, as inline SVG (:mod:`results.svg`): a leader switch's phases per
fault as small multiples, and the producer's outage per fault.

Both read the summary's ``latency`` rows (fault × phase: n, p50, p90, p99, max) and draw the same
mark: a bar to the median and a whisker from there to p99, so a reader compares the typical case
and the tail at once.  The phases of a leader switch are cumulative (each is ms from the fault to
a later moment), so each phase's bar is grey up to where the phase before it ended and coloured
for what the phase adds: the coloured parts form a staircase from the fault to the first
acknowledged produce.  Every panel has the same x scale, so panels compare at a glance.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.results.formatting import ms as format_ms
from kafka_chaos.results.phases import CUMULATIVE_PHASES
from kafka_chaos.results.plots import FRAME, GRID, PHASE_COLOURS
from kafka_chaos.results.svg import Canvas, nice_ticks, number, scale

Row = Mapping[str, Any]
Scale = Callable[[float], float]

WIDTH = 1120
MARGIN = 12
GUTTER = 28  # between panels
EARLIER = "#dedede"  # the part of a bar before the phase began
WHISKER = "#333"
LABEL_PX = 5.9  # the width of a character at font-size 10
PHASE_LABELS = {"detection": "detection", "election": "election", "propagation": "propagation",
                "first_produce": "first produce"}


@dataclass(frozen=True)
class Stat:
    """One fault × phase's percentiles (ms)."""

    count: int
    p50: float
    p90: float | None
    p99: float

    @classmethod
    def of(cls, row: Row) -> Stat | None:
        if row.get("p50") is None or row.get("p99") is None:
            return None
        return cls(int(row.get("count") or 0), float(row["p50"]), _float(row.get("p90")), float(row["p99"]))

    def tooltip(self, what: str) -> str:
        return (f"{what}: p50 {format_ms(self.p50)} ms, p90 {format_ms(self.p90)} ms, "
                f"p99 {format_ms(self.p99)} ms (n={self.count:,})")


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def stats_by_fault(latency: Sequence[Row], phases: Sequence[str]) -> dict[str, dict[str, Stat]]:
    """``{fault: {phase: Stat}}`` for ``phases``, faults with at least one of them."""
    found: dict[str, dict[str, Stat]] = {}
    for row in latency:
        stat = Stat.of(row) if row.get("phase") in phases else None
        if stat is not None:
            found.setdefault(str(row.get("fault")), {})[str(row["phase"])] = stat
    return found


@dataclass(frozen=True)
class _Grid:
    """Where the panels go: ``columns`` side by side, each ``width`` wide."""

    columns: int
    width: float
    height: float
    top: float

    def origin(self, i: int) -> tuple[float, float]:
        return MARGIN + (i % self.columns) * (self.width + GUTTER), self.top + (i // self.columns) * self.height


def _most_measured(stats: Mapping[str, Mapping[str, Stat]], limit: int) -> list[str]:
    """Up to ``limit`` faults, by name: those with the most phases measured, then the most samples."""
    def measured(fault: str) -> tuple[int, int, str]:
        return (-len(stats[fault]), -max(s.count for s in stats[fault].values()), fault)

    return sorted(sorted(stats, key=measured)[:limit])


def _columns(panels: int) -> int:
    """Two columns up to four panels (wide bars), three beyond (every fault on one screen)."""
    return min(panels, 2 if panels <= 4 else 3)


ROW_H, TITLE_H, AXIS_H, PANEL_GAP = 18, 20, 16, 16
VALUES_W = 84  # the "p50 · p99" column at a panel's right
MAX_PANELS = 18  # six rows of three: a run's every fault kind, still one screen or two


def leader_switch_panels(latency: Sequence[Row]) -> str | None:
    """Small multiples, one panel per fault (at most ``MAX_PANELS``, by name): the four
    cumulative phases of a leader switch, each a bar to its median and a whisker to its p99, on
    one x scale (ms from the fault) shared by every panel.  None without any such phase."""
    stats = stats_by_fault(latency, CUMULATIVE_PHASES)
    if not stats:
        return None
    faults = _most_measured(stats, MAX_PANELS)
    columns = _columns(len(faults))
    panel_w = (WIDTH - 2 * MARGIN - (columns - 1) * GUTTER) / columns
    panel_h = TITLE_H + ROW_H * len(CUMULATIVE_PHASES) + AXIS_H + PANEL_GAP
    grid = _Grid(columns, panel_w, panel_h, top=70)
    height = grid.top + panel_h * math.ceil(len(faults) / columns) + 22
    label_w = 8 + LABEL_PX * max(len(label) for label in PHASE_LABELS.values())
    ticks = nice_ticks(0.0, max(s.p99 for f in faults for s in stats[f].values()) or 1.0, 4)
    title = "Where a leader switch spends its time, per fault"
    canvas = Canvas(WIDTH, height, title)
    shown = f" ({len(faults)} of {len(stats)} faults; all in the table below)" if len(stats) > len(faults) else ""
    canvas.text(MARGIN, 20, title + shown, size=14, extra=' font-weight="bold"')
    _legend(canvas, 40)
    for i, fault in enumerate(faults):
        left, top = grid.origin(i)
        x = scale(0.0, ticks[-1], left + label_w, left + panel_w - VALUES_W)
        _panel(canvas, fault, stats[fault], x, ticks, left, top, panel_w, label_w)
    canvas.text(WIDTH / 2, height - 8, "ms from the fault, the same scale in every panel",
                anchor="middle", size=11)
    return canvas.svg()


def _legend(canvas: Canvas, y: float) -> None:
    """The phases' colours, the grey, and the whisker, on one line."""
    entries = [(PHASE_LABELS[p], PHASE_COLOURS[p]) for p in CUMULATIVE_PHASES]
    entries.append(("time before the phase began", EARLIER))
    at = float(MARGIN)
    for label, colour in entries:
        canvas.legend([(label, colour, "box")], at, y)
        at += 20 + LABEL_PX * len(label) + 22
    canvas.line(at, y, at + 22, y, WHISKER, width=1.4)
    canvas.line(at + 22, y - 4, at + 22, y + 4, WHISKER, width=1.4)
    canvas.text(at + 28, y + 3.5, "bar: median (p50), whisker: to p99", size=10)


def _panel(canvas: Canvas, fault: str, stats: Mapping[str, Stat], x: Scale, ticks: Sequence[float],
           left: float, top: float, width: float, label_w: float) -> None:
    """One fault: its name and sample count, then a row per phase, then the x ticks (one SVG
    group, named after the fault)."""
    n = max(s.count for s in stats.values())
    canvas.add(f'<g class="panel" aria-label="{html.escape(fault, quote=True)}">')
    canvas.text(left, top + 13, fault, size=12, extra=' font-weight="bold"')
    canvas.text(left + width - 2, top + 13, f"n={n:,} · p50 · p99", anchor="end", size=10, extra=' fill="#666"')
    rows_top = top + TITLE_H
    rows_bottom = rows_top + ROW_H * len(CUMULATIVE_PHASES)
    for tick in ticks:
        canvas.line(x(tick), rows_top, x(tick), rows_bottom + 3, GRID)
        canvas.text(x(tick), rows_bottom + 13, number(tick), anchor="middle", size=9)
    reached = 0.0
    for k, phase in enumerate(CUMULATIVE_PHASES):
        middle = rows_top + ROW_H * k + ROW_H / 2
        canvas.text(left + label_w - 6, middle + 3.5, PHASE_LABELS[phase], anchor="end", size=10)
        stat = stats.get(phase)
        values = "–" if stat is None else f"{format_ms(stat.p50)} · {format_ms(stat.p99)}"
        canvas.text(left + width - 2, middle + 3.5, values, anchor="end", size=10)
        if stat is not None:
            _bar(canvas, x, middle, reached, stat, PHASE_COLOURS[phase], f"{fault}, {PHASE_LABELS[phase]}")
            reached = max(reached, stat.p50)
    canvas.rect(x(0.0), rows_top, x(ticks[-1]) - x(0.0), rows_bottom - rows_top, "none",
                extra=f' stroke="{FRAME}" stroke-width="0.6"')
    canvas.add("</g>")


def _bar(canvas: Canvas, x: Scale, middle: float, reached: float, stat: Stat, colour: str, what: str) -> None:
    """Grey to where the phase began (``reached``), coloured to its median, a whisker to p99."""
    bar_h = ROW_H * 0.6
    y = middle - bar_h / 2
    canvas.rect(x(0.0), y, x(min(reached, stat.p50)) - x(0.0), bar_h, EARLIER)
    added = x(stat.p50) - x(reached)
    if added >= 2.0:
        canvas.rect(x(reached), y, added, bar_h, colour, tooltip=stat.tooltip(what))
    else:  # the phase added (almost) nothing: a mark at its median, so it is still seen
        canvas.rect(x(stat.p50) - 1.0, y - 1, 2.0, bar_h + 2, colour, tooltip=stat.tooltip(what))
    _whisker(canvas, x(stat.p50), x(stat.p99), middle)


def _whisker(canvas: Canvas, start: float, end: float, middle: float) -> None:
    if end - start >= 1.0:
        canvas.line(start, middle, end, middle, WHISKER, width=1.2)
        canvas.line(end, middle - 4, end, middle + 4, WHISKER, width=1.2)


OUTAGE_PHASE = "produce_outage"


def produce_outage_chart(latency: Sequence[Row], stall_s: float) -> str | None:
    """Per fault (by name), the producer's outage per partition and fault step
    (``produce_outage``): a bar to the median, a whisker to p99.  None without any."""
    outages = {fault: stats[OUTAGE_PHASE] for fault, stats in stats_by_fault(latency, (OUTAGE_PHASE,)).items()}
    if not outages:
        return None
    faults = sorted(outages)
    top, row_h = 48.0, 20.0
    label_w = 16 + LABEL_PX * max(len(f) for f in faults)
    values_w = 150.0
    bottom = top + row_h * len(faults)
    height = bottom + 44
    ticks = nice_ticks(0.0, max(s.p99 for s in outages.values()) or 1.0, 6)
    x = scale(0.0, ticks[-1], MARGIN + label_w, WIDTH - MARGIN - values_w)
    title = "Producer outage per fault: how long its sends went unanswered, per partition and fault step"
    canvas = Canvas(WIDTH, height, title)
    canvas.text(MARGIN, 20, title, size=14, extra=' font-weight="bold"')
    canvas.text(MARGIN, 36, f"from the producer's own acknowledgements: stalls of {stall_s:g} s or more, "
                "0 where the partition never stalled; bar: median (p50) · whisker: to p99", size=10,
                extra=' fill="#555"')
    canvas.text(WIDTH - MARGIN, top - 4, "p50 · p99 ms (n)", anchor="end", size=10, extra=' fill="#555"')
    for tick in ticks:
        canvas.line(x(tick), top, x(tick), bottom + 3, GRID)
        canvas.text(x(tick), bottom + 14, number(tick), anchor="middle", size=9)
    colour = PHASE_COLOURS[OUTAGE_PHASE]
    for i, fault in enumerate(faults):
        stat, middle = outages[fault], top + row_h * i + row_h / 2
        canvas.text(MARGIN + label_w - 6, middle + 3.5, fault, anchor="end", size=10)
        _bar(canvas, x, middle, 0.0, stat, colour, fault)
        canvas.text(WIDTH - MARGIN, middle + 3.5,
                    f"{format_ms(stat.p50)} · {format_ms(stat.p99)} ({stat.count:,})", anchor="end", size=10)
    canvas.rect(x(0.0), top, x(ticks[-1]) - x(0.0), bottom - top, "none", extra=f' stroke="{FRAME}" stroke-width="0.6"')
    canvas.text((x(0.0) + x(ticks[-1])) / 2, height - 10, "ms without an acknowledgement", anchor="middle", size=11)
    return canvas.svg()

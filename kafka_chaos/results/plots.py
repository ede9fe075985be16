"""The report's charts other than the latency section's (:mod:`results.svg`,
:mod:`results.latency_charts`), drawn from the aggregates' Python rows as inline SVG text.

They were matplotlib PNGs: importing matplotlib cost about 2 CPU-s and drawing and PNG-encoding
the breakdown, trend, heatmap and three timelines about 5 CPU-s of a one-run report, on a
2-core machine where the Spark JVM needs the other core.  Written directly as
SVG elements they take milliseconds, stay sharp at any zoom, and the report imports no plotting
library at all.  Each function returns the SVG text, or None when there is nothing to draw.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_chaos.results.svg import FALLBACK_COLOURS, Canvas, nice_ticks, number, scale

Row = Mapping[str, Any]

# One colour per phase, the same in every chart.
PHASE_COLOURS = {
    "detection": "#4C72B0", "election": "#DD8452", "propagation": "#55A868",
    "first_produce": "#C44E52", "client_gap": "#8172B3",
    # the clients' phases (client_availability measurements)
    "produce_outage": "#0F766E", "produce_unavailable": "#937860", "consume_unavailable": "#DA8BC3",
    "unavailable": "#8C8C8C",
    "e2e_p50": "#CCB974", "e2e_p99": "#64B5CD", "e2e_p999": "#2F4F4F",
}
MAX_FAULT_PLOTS = 12
GRID, FRAME = "#e4e4e4", "#333"
CHAR_PX = 6.2  # the width of a character at font-size 10-11, for margins sized to their labels


def pass_rate_over_time(by_day: Sequence[Row], by_run: Sequence[Row]) -> str | None:
    """Daily pass rate with its 95 % Wilson band, and one dot per run (UTC)."""
    days = [r for r in by_day if r.get("pass_rate") is not None]
    runs = [r for r in by_run if r.get("pass_rate") is not None and r.get("started_at") is not None]
    if not days and not runs:
        return None
    day_at = [_epoch(dt.datetime.fromisoformat(r["day"])) + 43_200 for r in days]  # noon of the day
    run_at = [float(r["started_at"]) for r in runs]
    times = day_at + run_at
    span = max(max(times) - min(times), 86_400.0)
    x_low, x_high = min(times) - span * 0.05, max(times) + span * 0.05
    y_low = max(0.0, min(_lowest(days, runs) - 5, 95.0))
    width, height, left, right, top, bottom = 800, 320, 56, 780, 30, 270
    x, y = scale(x_low, x_high, left, right), scale(y_low, 100.5, bottom, top)
    canvas = Canvas(width, height, "Pass rate over time (UTC)")
    for tick in [t for t in nice_ticks(y_low, 100.0) if y_low <= t <= 100.5]:
        canvas.line(left, y(tick), right, y(tick), GRID)
        canvas.text(left - 6, y(tick) + 4, number(tick), anchor="end")
    for tick in _time_ticks(x_low, x_high):
        canvas.line(x(tick), top, x(tick), bottom + 4, GRID)
        stamp = dt.datetime.fromtimestamp(tick, tz=dt.timezone.utc)
        label = stamp.strftime("%Y-%m-%d") if x_high - x_low > 3 * 86_400 else stamp.strftime("%m-%d %H:%M")
        canvas.text(x(tick), bottom + 16, label, anchor="middle", size=10)
    blue, orange = "#4C72B0", "#DD8452"
    if days:
        upper = [f"{x(t):.1f},{y(100 * r['ci_high']):.1f}" for t, r in zip(day_at, days)]
        lower = [f"{x(t):.1f},{y(100 * r['ci_low']):.1f}" for t, r in reversed(list(zip(day_at, days)))]
        canvas.path("M" + "L".join(upper + lower) + "Z", fill=blue, extra=' fill-opacity="0.2"')
        canvas.path("M" + "L".join(f"{x(t):.1f},{y(100 * r['pass_rate']):.1f}" for t, r in zip(day_at, days)),
                    stroke=blue, width=1.6)
        for t, r in zip(day_at, days):
            canvas.add(f'<circle cx="{x(t):.1f}" cy="{y(100 * r["pass_rate"]):.1f}" r="3" fill="{blue}"/>')
    for t, r in zip(run_at, runs):
        canvas.add(f'<circle cx="{x(t):.1f}" cy="{y(100 * r["pass_rate"]):.1f}" r="2.5" fill="{orange}" '
                   f'fill-opacity="0.7"><title>{r.get("run_id", "")}: {100 * r["pass_rate"]:.1f} %</title></circle>')
    canvas.rect(left, top, right - left, bottom - top, "none", extra=f' stroke="{FRAME}"')
    canvas.text((left + right) / 2, 20, "Pass rate over time (UTC)", anchor="middle", size=13)
    canvas.text(14, (top + bottom) / 2, "pass rate %", anchor="middle", rotate=-90)
    entries = ([("day, 95 % CI", blue, "box"), ("pass rate per day", blue, "line")] if days else [])
    entries += [("per run", orange, "dot")] if runs else []
    canvas.legend(entries, left + 8, bottom - 14 * len(entries) + 2)
    return canvas.svg()


def _epoch(naive_utc: dt.datetime) -> float:
    return naive_utc.replace(tzinfo=dt.timezone.utc).timestamp()


def _time_ticks(low: float, high: float) -> list[float]:
    """Round ticks on a time axis: whole days (or hours, for a span of a few days or less)."""
    unit = 86_400.0 if high - low > 3 * 86_400 else 3_600.0
    return [t * unit for t in nice_ticks(low / unit, high / unit, 6) if low <= t * unit <= high]


def _lowest(days: Sequence[Row], runs: Sequence[Row]) -> float:
    values = [100 * r["ci_low"] for r in days] + [100 * r["pass_rate"] for r in runs]
    return min(values) if values else 0.0


TIMELINE_PANELS = (("leader (-1: none)", 1.2), ("per second", 1.0), ("e2e ms", 1.0))


def timeline(t: Any) -> str:
    """A Jepsen-style timeline of one scenario iteration (:class:`results.timeline.Timeline`):
    three panels on one time axis (s from the scenario's start), fault steps shaded on all —
    the leader of each partition, acks and failed sends per second, end-to-end latency."""
    width, left, right, top = 900, 64, 880, 34
    panel_heights = [150 * share for _, share in TIMELINE_PANELS]
    gap = 14
    height = top + sum(panel_heights) + 2 * gap + 50
    end_s = max([e for _, _, e in t.steps] + [x for x, _ in t.acks_per_s] + [x for x, _ in t.e2e_ms] + [1.0])
    start_s = min([s for _, s, _ in t.steps] + [x for x, _ in t.acks_per_s] + [x for x, _ in t.e2e_ms] + [0.0])
    x = scale(start_s, end_s, left, right)
    canvas = Canvas(width, height, f"Timeline — {t.title}")
    panels, y0 = [], float(top)
    for (label, _), panel_height in zip(TIMELINE_PANELS, panel_heights):
        panels.append((y0, y0 + panel_height))
        canvas.text(14, y0 + panel_height / 2, label, anchor="middle", rotate=-90, size=10)
        y0 += panel_height + gap
    x_ticks = [tick for tick in nice_ticks(start_s, end_s, 8) if start_s <= tick <= end_s]
    for panel_top, panel_bottom in panels:
        for tick in x_ticks:
            canvas.line(x(tick), panel_top, x(tick), panel_bottom, GRID)
    shades = ("#DD8452", "#8172B3")
    for i, (label, start, end) in enumerate(t.steps):
        for panel_top, panel_bottom in panels:
            canvas.rect(x(start), panel_top, max(x(max(end, start + 0.05)) - x(start), 0.5), panel_bottom - panel_top,
                        shades[i % 2], extra=' fill-opacity="0.18"')
        canvas.text(x(start) + 2, panels[0][0] + 10, label.split(" ", 2)[-1], size=8)
    _leaders_panel(canvas, t, x, end_s, panels[0], left, right)
    _rates_panel(canvas, t, x, panels[1], left, right)
    _e2e_panel(canvas, t, x, panels[2], left)
    for panel_top, panel_bottom in panels:
        canvas.rect(left, panel_top, right - left, panel_bottom - panel_top, "none", extra=f' stroke="{FRAME}"')
    axis = panels[-1][1]
    for tick in x_ticks:
        canvas.text(x(tick), axis + 14, number(tick), anchor="middle", size=10)
    canvas.text((left + right) / 2, axis + 32,
                "s from the scenario's start (shaded: fault steps, fault to end of measurement)", anchor="middle")
    canvas.text((left + right) / 2, 20, f"Timeline — {t.title}", anchor="middle", size=13)
    return canvas.svg()


def _leaders_panel(canvas: Canvas, t: Any, x: Any, end_s: float, panel: tuple[float, float], left: float,
                   right: float) -> None:
    """One step line per partition; partitions with the same leader drawn slightly apart."""
    values = [leader for series in t.leaders.values() for _, leader in series] or [0]
    low, high = min(values + [-1]) - 0.5, max(values) + 0.5
    y = scale(low, high, panel[1], panel[0])
    for leader in range(math.ceil(low), math.floor(high) + 1):
        canvas.text(left - 6, y(leader) + 4, str(leader), anchor="end", size=10)
    entries = []
    for i, (name, series) in enumerate(t.leaders.items()):
        colour = FALLBACK_COLOURS[i % len(FALLBACK_COLOURS)]
        lift = 0.06 * (i - (len(t.leaders) - 1) / 2)
        points = [(s, leader + lift) for s, leader in series] + [(end_s, series[-1][1] + lift)]
        steps = [f"M{x(points[0][0]):.1f},{y(points[0][1]):.1f}"]
        for (_, level), (s_next, next_level) in zip(points, points[1:]):
            steps.append(f"H{x(s_next):.1f}V{y(next_level):.1f}")
        canvas.path("".join(steps), stroke=colour, width=1.4)
        entries.append((name, colour, "line"))
    column_width = 30 + CHAR_PX * max((len(name) for name, _, _ in entries), default=4)
    columns = max(1, min(4, len(entries), int((right - left) // column_width)))
    rows = math.ceil(len(entries) / columns)
    canvas.legend(entries, right - columns * column_width - 4, panel[1] - 14 * rows + 4, columns=columns,
                  column_width=column_width)


def _rates_panel(canvas: Canvas, t: Any, x: Any, panel: tuple[float, float], left: float, right: float) -> None:
    """Acknowledged produces per second (step line), failed sends per second (bars)."""
    highest = max([n for _, n in t.acks_per_s] + [n for _, n in t.errors_per_s] + [1])
    ticks = nice_ticks(0.0, float(highest), 4)
    y = scale(0.0, ticks[-1], panel[1], panel[0])
    for tick in ticks:
        canvas.text(left - 6, y(tick) + 4, number(tick), anchor="end", size=10)
    for at, count in t.errors_per_s:
        canvas.rect(x(at), y(count), x(at + 1.0) - x(at), y(0) - y(count), "#C44E52")
    if t.acks_per_s:
        points = list(t.acks_per_s)
        steps = [f"M{x(points[0][0]):.1f},{y(points[0][1]):.1f}"]
        for (_, _count), (s_next, next_count) in zip(points, points[1:]):
            steps.append(f"H{x(s_next):.1f}V{y(next_count):.1f}")
        canvas.path("".join(steps), stroke="#55A868", width=1.2)
    entries = ([("acks/s", "#55A868", "line")] if t.acks_per_s else []) + (
        [("failed sends/s", "#C44E52", "box")] if t.errors_per_s else [])
    canvas.legend(entries, right - 120, panel[0] + 12)


def _e2e_panel(canvas: Canvas, t: Any, x: Any, panel: tuple[float, float], left: float) -> None:
    """End-to-end latency of each message's first poll, log scale: one small square per message
    (one path, however many messages)."""
    if not t.e2e_ms:
        return
    values = [max(ms, 0.1) for _, ms in t.e2e_ms]
    low, high = 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))
    high = max(high, low * 10)
    y = scale(math.log10(low), math.log10(high), panel[1], panel[0])
    decade = low
    while decade <= high * 1.0001:
        canvas.text(left - 6, y(math.log10(decade)) + 4, number(decade) if decade >= 1 else f"{decade:g}",
                    anchor="end", size=10)
        decade *= 10
    dots = "".join(f"M{x(s):.1f},{y(math.log10(v)) - 0.8:.1f}h1.6v1.6h-1.6z" for (s, _), v in zip(t.e2e_ms, values))
    canvas.path(dots, fill="#4C72B0")


MAX_HEATMAP_SCENARIOS, MAX_HEATMAP_CHECKS = 80, 60


def pass_rate_heatmap(pass_rates: Sequence[Row]) -> str | None:
    """Scenario × check: green for all passed, red scaled by the share failed, amber where only
    unknown results spoil it, grey for a check the scenario does not have; readable from one run
    to a thousand (cells aggregate every run, backend and Kafka version).  Each cell's tooltip
    gives its counts."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in pass_rates:
        cell = cells[(str(row["scenario"]), str(row["check"]))]
        cell[0] += int(row.get("passed") or 0)
        cell[1] += int(row.get("failed") or 0)
        cell[2] += int(row.get("unknown") or 0)
    if not cells:
        return None
    scenarios = sorted({s for s, _ in cells})[:MAX_HEATMAP_SCENARIOS]
    checks = sorted({c for _, c in cells})[:MAX_HEATMAP_CHECKS]
    cell_w, cell_h = 18.0, 15.0
    left = 16 + 5.6 * max(len(s) for s in scenarios)
    top = 34.0
    bottom = top + cell_h * len(scenarios)
    label_depth = 4.9 * max(len(c) for c in checks) * math.sin(math.radians(60)) + 16
    width = max(420.0, left + cell_w * len(checks) + 40)
    canvas = Canvas(width, bottom + label_depth, "Pass rate per scenario and check")
    for i, s in enumerate(scenarios):
        canvas.text(left - 5, top + cell_h * (i + 0.5) + 3.5, s, anchor="end", size=9)
        for j, c in enumerate(checks):
            passed, failed, unknown = cells.get((s, c), (0, 0, 0))
            canvas.rect(left + cell_w * j, top + cell_h * i, cell_w - 1, cell_h - 1,
                        _cell_colour(passed, failed, unknown),
                        tooltip=f"{s} × {c}: {passed} passed, {failed} failed, {unknown} unknown"
                        if passed + failed + unknown else None)
    for j, c in enumerate(checks):
        canvas.text(left + cell_w * (j + 0.5) + 3, bottom + 6, c, anchor="end", size=9, rotate=-60)
    canvas.text(8, 20, "pass rate per scenario and check (red: failures, amber: unknown, grey: not checked)",
                size=12)
    return canvas.svg()


def _cell_colour(passed: int, failed: int, unknown: int) -> str:
    total = passed + failed + unknown
    if not total:
        return "#ebebeb"
    if failed:
        fade = 0.35 * (1 - failed / total) + 0.1  # the larger the failed share, the deeper the red
        return "#{:02x}{:02x}{:02x}".format(round(255 * 0.85), round(255 * fade), round(255 * fade))
    return "#ffc208" if unknown else "#4db04f"

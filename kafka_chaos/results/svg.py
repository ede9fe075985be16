"""Latency-distribution charts written as inline SVG text, without matplotlib.

A report draws one distribution per fault (up to ``plots.MAX_FAULT_PLOTS``).  Drawn with
matplotlib, each cost about 0.7 s (log-axis minor ticks, text layout, the PNG encoder): 8–10 s
of a one-run report's 26 s.  The chart is simple — step lines on a log-scale x
axis, two marker lines per phase, a legend — so it is written here as SVG elements directly, in
milliseconds, and embedded in the HTML as text (sharp at any zoom, and smaller than the PNG).
"""

from __future__ import annotations

import html
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_chaos.records.schema import LATENCY_PHASES

Row = Mapping[str, Any]

WIDTH, HEIGHT = 800, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 30, 30, 46  # the plot area's margins, px
# For phases without a colour of their own, in turn (matplotlib's default cycle, which the PNG
# version fell back to).
FALLBACK_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                    "#bcbd22", "#17becf")
Y_TICKS = 5


@dataclass(frozen=True)
class Series:
    """One phase's histogram: bin edges (n + 1, increasing) and each bin's share of the samples."""

    phase: str
    edges: tuple[float, ...]
    shares: tuple[float, ...]
    colour: str
    label: str
    p50: float | None = None
    p99: float | None = None


def latency_distributions(histogram: Sequence[Row], latency: Sequence[Row]) -> dict[str, str]:
    """One SVG document per fault (at most ``MAX_FAULT_PLOTS``, faults by name): the share of
    samples per log-spaced latency bin, one step line per phase, each phase's p50 (solid) and
    p99 (dotted) marked — the same content as the matplotlib version it replaces."""
    from kafka_chaos.results.plots import MAX_FAULT_PLOTS, PHASE_COLOURS

    bins: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in histogram:
        bins[row["fault"]][row["phase"]].append(row)
    stats = {(row["fault"], row["phase"]): row for row in latency}
    charts = {}
    for fault in sorted(bins)[:MAX_FAULT_PLOTS]:
        series: list[Series] = []
        spare = iter(FALLBACK_COLOURS * 4)
        for phase in sorted(bins[fault], key=_phase_order):
            rows = sorted(bins[fault][phase], key=lambda r: r["low_ms"])
            edges, shares = _contiguous(rows, sum(r["count"] for r in rows))
            summary = stats.get((fault, phase))
            label = phase if summary is None else f"{phase} (n={summary['count']}, p50={summary['p50']:g} ms)"
            series.append(Series(phase, tuple(edges), tuple(shares), PHASE_COLOURS.get(phase) or next(spare, "#444"),
                                 label, _stat(summary, "p50"), _stat(summary, "p99")))
        charts[fault] = step_chart(f"Latency distribution — {fault}", series)
    return charts


def _stat(summary: Row | None, name: str) -> float | None:
    value = None if summary is None else summary.get(name)
    return None if value is None else float(value)


def step_chart(title: str, series: Sequence[Series]) -> str:
    """The SVG text of one chart: log-scale x (ms), linear y (share of samples)."""
    xs = [e for s in series for e in s.edges if e > 0]
    xs += [v for s in series for v in (s.p50, s.p99) if v is not None and v > 0]
    low = 10 ** math.floor(math.log10(min(xs))) if xs else 1.0
    high = 10 ** math.ceil(math.log10(max(xs))) if xs else 10.0
    high = max(high, low * 10)
    top = _nice_top(max((v for s in series for v in s.shares), default=1.0))
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(ms: float) -> float:
        ms = min(max(ms, low), high)
        return LEFT + width * (math.log10(ms) - math.log10(low)) / (math.log10(high) - math.log10(low))

    def y(share: float) -> float:
        return TOP + height * (1 - share / top)

    canvas = Canvas(WIDTH, HEIGHT, title)
    parts = canvas.parts
    parts += _axes(x, y, low, high, top)
    for s in series:
        parts.append(f'<path d="{_stairs(s, x, y)}" fill="none" stroke="{s.colour}" stroke-width="1.6"/>')
        for value, dash in ((s.p50, ""), (s.p99, ' stroke-dasharray="1.5 2.5"')):
            if value is not None:
                parts.append(f'<line x1="{x(value):.1f}" x2="{x(value):.1f}" y1="{TOP}" y2="{TOP + height}" '
                             f'stroke="{s.colour}" stroke-width="0.8" opacity="0.7"{dash}/>')
    parts += _legend(series)
    parts += [
        f'<text x="{LEFT + width / 2}" y="{TOP - 10}" text-anchor="middle" font-size="13">{_text(title)}</text>',
        f'<text x="{LEFT + width / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
        "ms from the fault (log scale); solid line p50, dotted p99</text>",
        f'<text transform="translate(14 {TOP + height / 2}) rotate(-90)" text-anchor="middle">share of samples</text>',
    ]
    return canvas.svg()


def _phase_order(phase: str) -> tuple[int, str]:
    return (LATENCY_PHASES.index(phase) if phase in LATENCY_PHASES else len(LATENCY_PHASES), phase)


def _contiguous(rows: Sequence[Row], total: int) -> tuple[list[float], list[float]]:
    """Bin edges and shares with empty bins filled in, so the step line drops to zero over gaps."""
    edges = [rows[0]["low_ms"]]
    shares: list[float] = []
    for row in rows:
        if not math.isclose(row["low_ms"], edges[-1], rel_tol=1e-9):
            shares.append(0.0)
            edges.append(row["low_ms"])
        shares.append(row["count"] / total)
        edges.append(row["high_ms"])
    return edges, shares


def _stairs(s: Series, x: Any, y: Any) -> str:
    """matplotlib's ``stairs`` with its baseline at 0: up from 0 at the first edge, across each
    bin at its share, down to 0 at the last edge."""
    steps = [f"M{x(s.edges[0]):.1f},{y(0):.1f}"]
    for left, right, share in zip(s.edges, s.edges[1:], s.shares):
        steps.append(f"L{x(left):.1f},{y(share):.1f}L{x(right):.1f},{y(share):.1f}")
    steps.append(f"L{x(s.edges[-1]):.1f},{y(0):.1f}")
    return "".join(steps)


def _axes(x: Any, y: Any, low: float, high: float, top: float) -> list[str]:
    """Frame, decade ticks and grid on x, ``Y_TICKS`` even ticks on y."""
    bottom, right = y(0), WIDTH - RIGHT
    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{right - LEFT}" height="{bottom - TOP}" fill="none" stroke="#333"/>']
    decade = low
    while decade <= high * 1.0001:
        at = x(decade)
        parts.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{TOP}" y2="{bottom + 4:.1f}" stroke="#ccc"/>')
        parts.append(f'<text x="{at:.1f}" y="{bottom + 16:.1f}" text-anchor="middle">{_ms(decade)}</text>')
        decade *= 10
    for i in range(Y_TICKS + 1):
        share = top * i / Y_TICKS
        at = y(share)
        parts.append(f'<line x1="{LEFT - 4}" x2="{right}" y1="{at:.1f}" y2="{at:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{at + 4:.1f}" text-anchor="end">{share:.2f}</text>')
    return parts


def _legend(series: Sequence[Series]) -> list[str]:
    """Top right inside the plot, one line per phase."""
    longest = max((len(s.label) for s in series), default=0)
    box_width, line = 30 + 6.2 * longest, 14
    left, top = WIDTH - RIGHT - box_width - 6, TOP + 6
    parts = [f'<rect x="{left:.1f}" y="{top}" width="{box_width:.1f}" height="{line * len(series) + 6}" '
             'fill="white" fill-opacity="0.85" stroke="#ccc"/>']
    for i, s in enumerate(series):
        at = top + 10 + i * line
        parts.append(f'<line x1="{left + 5:.1f}" x2="{left + 23:.1f}" y1="{at}" y2="{at}" stroke="{s.colour}" '
                     'stroke-width="1.6"/>')
        parts.append(f'<text x="{left + 27:.1f}" y="{at + 3.5}" font-size="10">{_text(s.label)}</text>')
    return parts


def _nice_top(value: float) -> float:
    """The y axis' top: the next multiple of 0.05 (shares are at most 1)."""
    return min(1.0, max(0.05, math.ceil(value * 20 - 1e-9) / 20))


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _text(value: str) -> str:
    return html.escape(value, quote=True)


# ------------------------------------------------------------------- shared drawing primitives
# The report's other charts (the latency section's: results.latency_charts; trend, heatmap,
# timelines: results.plots) are SVG too, so the report no longer imports matplotlib at all (its
# import alone was ~2 CPU-s, and drawing and PNG-encoding five or six figures ~5 CPU-s of a
# one-run report).


class Canvas:
    """One SVG document, written element by element (coordinates in px, y down)."""

    def __init__(self, width: float, height: float, label: str) -> None:
        self.width, self.height = width, height
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width:.0f} {height:.0f}" '
                      f'width="{width:.0f}" height="{height:.0f}" role="img" aria-label="{_text(label)}" '
                      'font-family="DejaVu Sans, sans-serif" font-size="11">',
                      f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>']

    def add(self, element: str) -> None:
        self.parts.append(element)

    def text(self, x: float, y: float, value: str, *, anchor: str = "start", size: float | None = None,
             rotate: float | None = None, extra: str = "") -> None:
        font = f' font-size="{size:g}"' if size is not None else ""
        where = (f'transform="translate({x:.1f} {y:.1f}) rotate({rotate:g})"' if rotate is not None
                 else f'x="{x:.1f}" y="{y:.1f}"')
        self.parts.append(f'<text {where} text-anchor="{anchor}"{font}{extra}>{_text(value)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, *, width: float = 1.0,
             extra: str = "") -> None:
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{width:g}"{extra}/>')

    def rect(self, x: float, y: float, width: float, height: float, fill: str, *, extra: str = "",
             tooltip: str | None = None) -> None:
        body = f'x="{x:.1f}" y="{y:.1f}" width="{max(width, 0.0):.1f}" height="{max(height, 0.0):.1f}" fill="{fill}"{extra}'
        self.parts.append(f"<rect {body}><title>{_text(tooltip)}</title></rect>" if tooltip is not None
                          else f"<rect {body}/>")

    def path(self, d: str, *, stroke: str = "none", fill: str = "none", width: float = 1.0, extra: str = "") -> None:
        if d:
            self.parts.append(f'<path d="{d}" fill="{fill}" stroke="{stroke}" stroke-width="{width:g}"{extra}/>')

    def legend(self, entries: Sequence[tuple[str, str, str]], left: float, top: float, *, columns: int = 1,
               column_width: float | None = None) -> None:
        """``entries``: (label, colour, mark) with mark ``line``, ``box`` or ``dot``; ``columns`` side by side."""
        width = column_width or 30 + 6.2 * max((len(label) for label, _, _ in entries), default=0)
        for i, (label, colour, mark) in enumerate(entries):
            x, y = left + (i % columns) * width, top + (i // columns) * 14
            if mark == "box":
                self.rect(x, y - 5, 14, 9, colour)
            elif mark == "dot":
                self.add(f'<circle cx="{x + 7:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
            else:
                self.line(x, y, x + 16, y, colour, width=1.6)
            self.text(x + 20, y + 3.5, label, size=10)

    def svg(self) -> str:
        return "".join([*self.parts, "</svg>"])


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round ticks (1, 2, 2.5 or 5 × 10^k apart) from the last at or under ``low``
    to the first at or over ``high``: an axis ending on its last tick shows every value."""
    if not high > low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def scale(low: float, high: float, out_low: float, out_high: float) -> Any:
    """The linear map [low, high] -> [out_low, out_high] (a degenerate range maps to its middle)."""
    span = high - low

    def at(value: float) -> float:
        if span == 0:
            return (out_low + out_high) / 2
        return out_low + (out_high - out_low) * (value - low) / span

    return at


def number(value: float) -> str:
    """A tick label: thousands separated, no needless decimals."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")

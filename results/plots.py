"""The report's PNG plots, drawn from the aggregates' Python rows.

``matplotlib.figure.Figure`` is used directly (no pyplot): no global figure state and the Agg
canvas, so plotting works headless and from any thread.
"""

from __future__ import annotations

import datetime as dt
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any


Row = Mapping[str, Any]

# One colour per phase, the same in every plot.
PHASE_COLOURS = {
    "detection": "#4C72B0", "election": "#DD8452", "propagation": "#55A868",
    "first_produce": "#C44E52", "client_gap": "#8172B3",
    # the clients' phases (client_availability measurements)
    "produce_unavailable": "#937860", "consume_unavailable": "#DA8BC3", "unavailable": "#8C8C8C",
    "e2e_p50": "#CCB974", "e2e_p99": "#64B5CD", "e2e_p999": "#2F4F4F",
}
CUMULATIVE_PHASES = ("detection", "election", "propagation", "first_produce")  # ms from the fault, in order
MAX_FAULT_PLOTS = 12


def _figure(width: float, height: float, constrained: bool = True) -> Any:
    """``constrained=False``: fixed margins, for plots drawn many times per report — the
    constrained layout measures every tick label's box first, half the cost of a log-scale plot."""
    import logging

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # font-cache chatter at INFO
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained" if constrained else None)
    if not constrained:
        figure.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.9)
    return figure


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def leader_switch_breakdown(latency: Sequence[Row]) -> bytes | None:
    """Stacked horizontal bars per fault: the median time from the fault to each phase, split
    into the part each phase adds; the median client gap drawn as a marker."""
    medians: dict[str, dict[str, float]] = defaultdict(dict)
    for row in latency:
        if row.get("p50") is not None:
            medians[row["fault"]][row["phase"]] = row["p50"]
    faults = sorted(f for f, m in medians.items() if any(p in m for p in CUMULATIVE_PHASES))[:MAX_FAULT_PLOTS]
    if not faults:
        return None
    figure = _figure(8, 0.6 * len(faults) + 1.6)
    axes = figure.add_subplot()
    labelled: set[str] = set()
    for y, fault in enumerate(faults):
        reached = 0.0
        for phase in CUMULATIVE_PHASES:
            if phase not in medians[fault]:
                continue
            width = max(0.0, medians[fault][phase] - reached)
            axes.barh(y, width, left=reached, color=PHASE_COLOURS[phase],
                      label=None if phase in labelled else phase, height=0.6)
            labelled.add(phase)
            reached += width
        gap = medians[fault].get("client_gap")
        if gap is not None:
            axes.plot([gap], [y], marker="D", color=PHASE_COLOURS["client_gap"], linestyle="none",
                      label=None if "client_gap" in labelled else "client_gap (median)")
            labelled.add("client_gap")
        axes.annotate(f"{reached:,.0f} ms", (max(reached, gap or 0.0), y), xytext=(8, 0),
                      textcoords="offset points", va="center", fontsize=7)
    axes.set_yticks(range(len(faults)), faults)
    axes.invert_yaxis()
    axes.set_xlabel("median ms from the fault (each segment: what the phase adds)")
    axes.margins(x=0.12)  # room for the totals written after the bars
    axes.set_title("Breakdown of a leader switch")
    axes.grid(True, axis="x", alpha=0.3)
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=5, frameon=False)
    return _png(figure)


def pass_rate_over_time(by_day: Sequence[Row], by_run: Sequence[Row]) -> bytes | None:
    """Daily pass rate with its 95 % Wilson band, and one dot per run."""
    days = [r for r in by_day if r.get("pass_rate") is not None]
    runs = [r for r in by_run if r.get("pass_rate") is not None and r.get("started_at") is not None]
    if not days and not runs:
        return None
    figure = _figure(8, 3.2)
    axes = figure.add_subplot()
    if days:
        x = [dt.datetime.fromisoformat(r["day"]) + dt.timedelta(hours=12) for r in days]
        axes.fill_between(x, [100 * r["ci_low"] for r in days], [100 * r["ci_high"] for r in days],
                          color="#4C72B0", alpha=0.2, label="day, 95 % CI", step=None)
        axes.plot(x, [100 * r["pass_rate"] for r in days], color="#4C72B0", marker="o", markersize=3,
                  label="pass rate per day")
    if runs:
        x = [dt.datetime.fromtimestamp(r["started_at"], tz=dt.timezone.utc).replace(tzinfo=None) for r in runs]
        axes.plot(x, [100 * r["pass_rate"] for r in runs], color="#DD8452", marker=".", linestyle="none",
                  alpha=0.7, label="per run")
    axes.set_ylabel("pass rate %")
    axes.set_ylim(max(0.0, min(_lowest(days, runs) - 5, 95.0)), 100.5)
    axes.set_title("Pass rate over time (UTC)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, loc="lower left")
    figure.autofmt_xdate()
    return _png(figure)


def _lowest(days: Sequence[Row], runs: Sequence[Row]) -> float:
    values = [100 * r["ci_low"] for r in days] + [100 * r["pass_rate"] for r in runs]
    return min(values) if values else 0.0


def timeline(t: Any) -> bytes:
    """A Jepsen-style timeline of one scenario iteration (:class:`results.timeline.Timeline`):
    three panels on one time axis (s from the scenario's start), fault steps shaded on all —
    the leader of each partition, acks and failed sends per second, end-to-end latency."""
    # Fixed margins: the constrained layout measured every tick label first, half of this plot's cost.
    figure = _figure(9, 5.4, constrained=False)
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.1, top=0.94, hspace=0.12)
    leaders_ax, rate_ax, e2e_ax = figure.subplots(3, 1, sharex=True, height_ratios=(1.2, 1, 1))
    colours = ("#DD8452", "#8172B3")
    for i, (label, start, end) in enumerate(t.steps):
        for ax in (leaders_ax, rate_ax, e2e_ax):
            ax.axvspan(start, max(end, start + 0.05), color=colours[i % 2], alpha=0.18, linewidth=0)
        leaders_ax.annotate(label.split(" ", 2)[-1], (start, 1.0), xycoords=("data", "axes fraction"),
                            xytext=(2, -2), textcoords="offset points", va="top", fontsize=6, rotation=0)
    end_s = max([e for _, _, e in t.steps] + [x for x, _ in t.acks_per_s] + [x for x, _ in t.e2e_ms] + [1.0])
    for i, (name, series) in enumerate(t.leaders.items()):
        lift = 0.06 * (i - (len(t.leaders) - 1) / 2)  # partitions with the same leader stay apart
        xs = [x for x, _ in series] + [end_s]
        ys = [y + lift for _, y in series] + [series[-1][1] + lift]
        leaders_ax.step(xs, ys, where="post", label=name, linewidth=1.4)
    leaders_ax.set_ylabel("leader (-1: none)")
    if t.leaders:
        leaders_ax.legend(fontsize=6, loc="lower right", ncol=4)
    if t.acks_per_s:
        rate_ax.step([x for x, _ in t.acks_per_s], [n for _, n in t.acks_per_s], where="post", color="#55A868",
                     label="acks/s")
    if t.errors_per_s:
        rate_ax.bar([x for x, _ in t.errors_per_s], [n for _, n in t.errors_per_s], width=1.0, align="edge",
                    color="#C44E52", label="failed sends/s")
    rate_ax.set_ylabel("per second")
    if t.acks_per_s or t.errors_per_s:
        rate_ax.legend(fontsize=6, loc="upper right")
    if t.e2e_ms:
        e2e_ax.plot([x for x, _ in t.e2e_ms], [max(ms, 0.1) for _, ms in t.e2e_ms], ".", markersize=1.5,
                    color="#4C72B0")
        e2e_ax.set_yscale("log")
    e2e_ax.set_ylabel("e2e ms")
    e2e_ax.set_xlabel("s from the scenario's start (shaded: fault steps, fault to end of measurement)")
    leaders_ax.set_title(f"Timeline — {t.title}")
    return _png(figure)


MAX_HEATMAP_SCENARIOS, MAX_HEATMAP_CHECKS = 80, 60


def pass_rate_heatmap(pass_rates: Sequence[Row]) -> bytes | None:
    """Scenario × check: green for all passed, red scaled by the share failed, amber where only
    unknown results spoil it, grey for a check the scenario does not have; readable from one run
    to a thousand (cells aggregate every run, backend and Kafka version)."""
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
    grey, green, amber = (0.92, 0.92, 0.92), (0.30, 0.69, 0.31), (1.0, 0.76, 0.03)
    image = []
    for s in scenarios:
        line = []
        for c in checks:
            passed, failed, unknown = cells.get((s, c), (0, 0, 0))
            total = passed + failed + unknown
            if not total:
                line.append(grey)
            elif failed:
                share = failed / total
                line.append((0.85, 0.35 * (1 - share) + 0.1, 0.35 * (1 - share) + 0.1))
            elif unknown:
                line.append(amber)
            else:
                line.append(green)
        image.append(line)
    figure = _figure(max(6.0, 0.28 * len(checks) + 3.5), max(2.5, 0.22 * len(scenarios) + 1.8))
    axes = figure.add_subplot()
    axes.imshow(image, aspect="auto", interpolation="nearest")
    axes.set_xticks(range(len(checks)), checks, rotation=60, ha="right", fontsize=7)
    axes.set_yticks(range(len(scenarios)), scenarios, fontsize=7)
    axes.set_title("pass rate per scenario and check (red: failures, amber: unknown, grey: not checked)", fontsize=9)
    return _png(figure)

"""The report's latency section: a leader switch's phases per fault as small multiples (one
panel per fault, one scale), the full table folded below, and the clients' figures apart, the
1 s-window ones labelled as such (HTML and terminal)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from kafka_chaos.results import latency_charts, plots
from kafka_chaos.results.html import render_html
from kafka_chaos.results.terminal import render_terminal
from tests.unit.results.test_rendering import summary_document

SVG = "{http://www.w3.org/2000/svg}"
CUMULATIVE = ("detection", "election", "propagation", "first_produce")


def row(fault: str, phase: str, p50: float, p99: float, count: int = 5) -> dict[str, object]:
    return {"fault": fault, "phase": phase, "count": count, "p50": p50, "p90": (p50 + p99) / 2, "p99": p99,
            "max": p99 + 1}


KILL = [row("hard_kill", p, v, v + 800) for p, v in zip(CUMULATIVE, (5000.0, 5040.0, 5090.0, 5200.0))]
SHUTDOWN = [row("controlled_shutdown", p, v, v + 40) for p, v in zip(CUMULATIVE[1:], (30.0, 80.0, 150.0))]
PAUSE = [row("pause", p, v, v + 4000) for p, v in zip(CUMULATIVE, (10000.0, 10020.0, 10060.0, 10100.0))]
CLIENTS = [row("hard_kill", "client_gap", 5300.0, 6000.0), row("hard_kill", "produce_outage", 5100.0, 6100.0, 12),
           row("hard_kill", "produce_unavailable", 5000.0, 6000.0, 12),
           row("hard_kill", "consume_unavailable", 4000.0, 6000.0, 12),
           row("controlled_shutdown", "produce_outage", 0.0, 0.0, 12), row("hard_kill", "e2e_p99", 900.0, 5200.0, 4)]
LATENCY = KILL + SHUTDOWN + PAUSE + [row("hard_kill", "controller_queue", 8.0, 16.0)] + CLIENTS


def panels_of(svg_text: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg_text)  # well-formed, as the HTML embeds it
    return {g.get("aria-label"): g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"}


def coloured_bars(panel: ET.Element) -> list[ET.Element]:
    return [r for r in panel.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]


def test_one_panel_per_fault_with_the_four_phases_in_their_colours() -> None:
    panels = panels_of(latency_charts.leader_switch_panels(LATENCY))
    assert list(panels) == ["controlled_shutdown", "hard_kill", "pause"]  # by name; client phases draw none
    kill = coloured_bars(panels["hard_kill"])
    assert [b.get("fill") for b in kill] == [plots.PHASE_COLOURS[p] for p in CUMULATIVE]
    assert kill[0].find(f"{SVG}title").text == "hard_kill, detection: p50 5,000 ms, p90 5,400 ms, p99 5,800 ms (n=5)"
    texts = [t.text for t in panels["hard_kill"].iter(f"{SVG}text")]
    assert "5,000 · 5,800" in texts and "first produce" in texts  # p50 · p99 beside each phase
    # a phase not measured (no detection in a controlled shutdown) is a dash, not a bar
    shutdown = panels["controlled_shutdown"]
    assert len(coloured_bars(shutdown)) == 3 and "–" in [t.text for t in shutdown.iter(f"{SVG}text")]
    # p99 as a whisker (a line and its cap) per measured phase
    whiskers = [line for line in panels["hard_kill"].iter(f"{SVG}line") if line.get("stroke") == latency_charts.WHISKER]
    assert len(whiskers) == 2 * len(CUMULATIVE)


def test_every_panel_has_the_same_scale() -> None:
    panels = panels_of(latency_charts.leader_switch_panels(LATENCY))

    def ticks(panel: ET.Element) -> list[str]:
        return [t.text or "" for t in panel.iter(f"{SVG}text") if re.fullmatch(r"[0-9,]+", t.text or "")]

    def frame_width(panel: ET.Element) -> float:
        return next(float(r.get("width")) for r in panel.iter(f"{SVG}rect") if r.get("fill") == "none")

    assert {tuple(ticks(p)) for p in panels.values()} == {("0", "5,000", "10,000", "15,000")}
    assert len({frame_width(p) for p in panels.values()}) == 1
    # detection starts at the fault in every panel: 10 s is twice as long as 5 s, across panels
    kill, pause = (float(coloured_bars(panels[f])[0].get("width")) for f in ("hard_kill", "pause"))
    assert abs(pause - 2 * kill) < 0.2


def test_each_phase_adds_to_the_one_before_grey_up_to_where_it_began() -> None:
    panel = panels_of(latency_charts.leader_switch_panels(KILL))["hard_kill"]
    grey = [r for r in panel.iter(f"{SVG}rect") if r.get("fill") == latency_charts.EARLIER]
    bars = coloured_bars(panel)
    starts = [float(b.get("x")) for b in bars]
    assert starts == sorted(starts)  # a staircase: each coloured part begins where the one before ended
    assert len(grey) == 4 and float(grey[0].get("width")) == 0.0  # detection began at the fault
    assert all(float(g.get("x")) + float(g.get("width")) <= float(b.get("x")) + 1.1 for g, b in zip(grey[1:], bars[1:]))


def test_no_phase_no_chart_and_at_most_a_screenful_of_panels() -> None:
    assert latency_charts.leader_switch_panels([]) is None
    assert latency_charts.leader_switch_panels(CLIENTS) is None
    many = [row(f"fault_{i:02d}", "election", 100.0, 200.0, count=i + 1) for i in range(25)]
    many.append(row("fault_00", "propagation", 150.0, 250.0))  # fewest samples, but two phases
    chart = latency_charts.leader_switch_panels(many)
    shown = list(panels_of(chart))
    assert len(shown) == latency_charts.MAX_PANELS and shown == sorted(shown)
    assert "fault_00" in shown and "fault_01" not in shown  # the most measured, then the most sampled
    assert f"({latency_charts.MAX_PANELS} of 25 faults; all in the table below)" in chart


def test_the_producers_outage_has_a_chart_of_its_own() -> None:
    chart = latency_charts.produce_outage_chart(LATENCY, 1.0)
    root = ET.fromstring(chart)
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert [b.find(f"{SVG}title").text.split(":")[0] for b in bars] == ["controlled_shutdown", "hard_kill"]
    assert {b.get("fill") for b in bars} == {plots.PHASE_COLOURS["produce_outage"]}
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "5,100 · 6,100 (12)" in texts and "0.0 · 0.0 (12)" in texts
    assert latency_charts.produce_outage_chart(KILL, 1.0) is None


def test_the_section_starts_with_the_panels_and_folds_the_table() -> None:
    panels = latency_charts.leader_switch_panels(LATENCY)
    outage = latency_charts.produce_outage_chart(LATENCY, 1.0)
    page = render_html(summary_document(latency=LATENCY), {"leader_switch": panels, "produce_outage": outage,
                                                           "latency": {"hard_kill": "<svg>distribution</svg>"}})
    section = page[page.index('<h2 id="latency">'):page.index('<h2 id="clients">')]
    assert section.index(panels) < section.index("<details>") < section.index("<table>")  # chart, then the table
    table = section[section.index("<details><summary>Every phase per fault"):]
    table = table[:table.index("</details>")]
    assert "(12 rows;" in table and "controller_queue" in table  # the leader switch's rows, all of them ...
    assert "produce_unavailable" not in table and "client_gap" not in table  # ... and none of the clients'
    distributions = section[section.index("<summary>Distribution of each phase, per fault (1 charts)"):]
    assert distributions.index("<svg>distribution</svg>") < distributions.index("</details>")  # folded too
    clients = page[page.index('<h2 id="clients">'):]
    assert clients.index(outage) < clients.index("<h3>In 1 s windows</h3>")
    ms_table = clients[clients.index("<details>"):clients.index("</details>")]
    assert "produce_outage" in ms_table and "client_gap" in ms_table and "produce_unavailable" not in ms_table
    windows = clients[clients.index("<h3>In 1 s windows</h3>"):]
    windows = windows[:windows.index("</table>")]
    assert "a multiple of 1,000" in windows and "ms without ack, p50" in windows
    assert re.search(r"<td>hard_kill</td>.*<td class=\"num\">5,000</td>", windows)  # produce_unavailable p50


def test_the_terminal_keeps_the_clients_apart_and_labels_the_windows() -> None:
    text = render_terminal(summary_document(latency=LATENCY))
    leader_switch = text[text.index("leader switch, ms from the fault"):text.index("clients, ms per partition")]
    clients = text[text.index("clients, ms per partition"):]
    assert re.search(r"hard_kill\s+election\s+5\s+5,040", leader_switch)
    assert not re.search(r"produce_outage|unavailable|client_gap|e2e", leader_switch)
    assert re.search(r"hard_kill\s+produce_outage\s+12\s+5,100", clients)
    assert re.search(r"hard_kill\s+produce_unavailable \(1 s windows\)\s+12\s+5,000", clients)


def test_the_producers_outage_is_gated_like_any_phase() -> None:
    from kafka_chaos.results.gates import latency_failures, parse_latency_limit

    failures = latency_failures(LATENCY, [parse_latency_limit("hard_kill:produce_outage:p99=6000")])
    assert len(failures) == 1 and "produce_outage p99 is 6100 ms" in failures[0]

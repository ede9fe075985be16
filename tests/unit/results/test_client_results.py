"""The clients' results in the report: --max-latency gates on the client phases, and the
timeline of a scenario iteration derived from its history and drawn."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.results import plots
from kafka_chaos.results.gates import latency_failures, parse_latency_limit
from kafka_chaos.results.html import render_html, timeline_anchor
from kafka_chaos.results.svg import FALLBACK_COLOURS
from kafka_chaos.results.timeline import timeline_of, timelines
from kafka_chaos.scenarios.clients.ops import ClientOps, FailedSend, Poll
from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.history.observations import HistoryWriter, ScenarioFinished
from tests.unit.scenarios.histories import RUN, T0, hard_kill_step

SVG = "{http://www.w3.org/2000/svg}"


def test_client_phases_are_gated() -> None:
    limit = parse_latency_limit("hard_kill:e2e_p99:p99=5000")
    assert (limit.phase, limit.stat) == ("e2e_p99", "p99")
    rows = [{"fault": "hard_kill", "phase": "e2e_p99", "count": 4, "p50": 900.0, "p90": 4000.0, "p99": 6100.0,
             "max": 6100.0}]
    failures = latency_failures(rows, [limit])
    assert len(failures) == 1 and "e2e_p99 p99 is 6100 ms" in failures[0]
    assert latency_failures(rows, [parse_latency_limit("*:e2e_p99:max=7000")]) == []
    with pytest.raises(UsageError, match="unknown phase 'e2e_p98'"):
        parse_latency_limit("*:e2e_p98:p99=1")


def _scenario() -> list:
    ops = ClientOps(T0 - 1, T0 + 7, tuple(Ack(0, i, f"r-0-{i}", T0 + 0.2 * i) for i in range(20)),
                    (FailedSend("r-0-x", "_MSG_TIMED_OUT", T0 + 3.2),),
                    tuple(Poll("assign", i, f"r-0-{i}", T0 + 0.2 * i + 0.05, T0 + 0.2 * i - 0.01) for i in range(20)))
    return [hard_kill_step(ops={"t-0": ops}), ScenarioFinished(RUN, T0 + 8, T0 + 9, None)]


def test_a_timeline_holds_steps_leaders_rates_and_latency() -> None:
    t = timeline_of(_scenario(), failed=True)
    assert t.origin == T0 and t.steps == (("step 1/1 hard_kill", 0.5, 7.0),)
    assert t.leaders["t-0"][0][1] == 1 and t.leaders["t-0"][-1][1] == 2  # broker 1 -> 2
    assert sum(n for _, n in t.acks_per_s) == 20 and t.acks_per_s[0] == (0.0, 5)
    assert t.errors_per_s == ((3.0, 1),)
    assert len(t.e2e_ms) == 20 and all(round(ms) == 60 for _, ms in t.e2e_ms)
    root = ET.fromstring(plots.timeline(t))  # SVG, well-formed as the HTML embeds it
    paths = [p for p in root.iter(f"{SVG}path")]
    leader = [p.get("d") for p in paths if p.get("stroke") == FALLBACK_COLOURS[0]]
    assert len(leader) == 1 and "V" in leader[0]  # the leader's step line changes level once at least
    assert any(p.get("stroke") == "#55A868" for p in paths)  # acks/s
    assert sum(r.get("fill") == "#C44E52" for r in root.iter(f"{SVG}rect")) == 2  # one failed send, its legend key
    e2e = next(p.get("d") for p in paths if p.get("fill") == "#4C72B0")
    assert e2e.count("M") == 20  # one mark per polled message
    texts = [x.text for x in root.iter(f"{SVG}text")]
    assert f"Timeline — {t.title}" in texts and "hard_kill" in texts


def test_timelines_pick_the_failing_iterations_and_the_html_shows_them(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path)
    for obs in _scenario():
        writer.append(obs)
    writer.close()
    assert timelines([tmp_path], set(), passing_sample=0) == []
    (chosen,) = timelines([tmp_path], {(RUN.run_id, RUN.scenario, RUN.iteration)})
    assert chosen.failed
    summary = {"totals": {}, "generated_at": "now", "files": [], "percentile_method": "nearest",
               "pass_rates": [], "latency": [], "latency_by_partitions": [], "latency_by_session_timeout": [],
               "trend_by_day": [], "trend_by_run": [], "failing_checks": [], "failing_checks_total": 0}
    anchor = timeline_anchor(RUN.run_id, RUN.scenario, RUN.iteration)
    failing = {"run_id": RUN.run_id, "scenario": RUN.scenario, "iteration": RUN.iteration, "check": "delivery",
               "seed": 7, "backend": "local", "detail": "lost", "expected": "{}", "observed": "{}"}
    page = render_html({**summary, "failing_checks": [failing], "failing_checks_total": 1},
                       {"timelines": [(anchor, plots.timeline(chosen))]})
    assert "<h2>Timelines</h2>" in page and f'aria-label="Timeline — {chosen.title}"' in page
    # the failing check links to its iteration's timeline, next to its evidence
    assert f'<div id="{anchor}">' in page and f'<a href="#{anchor}">timeline</a>' in page


def test_damaged_history_lines_are_skipped_and_only_drawn_iterations_parsed(tmp_path: Path) -> None:
    from kafka_chaos.results.timeline import load_histories

    writer = HistoryWriter(tmp_path)
    for obs in _scenario():
        writer.append(obs)
    writer.close()
    with open(tmp_path / "history.jsonl", "a", encoding="utf-8") as out:
        out.write('{"run": {"run_id": "x", "scenario": "s", "iteration": 0}, "type": "nonsense"}\n')  # JSON, no observation
        out.write('{"history_version": 2, "run": {"run_id"\n')  # cut mid-line
    (groups,) = load_histories([tmp_path])
    key = (RUN.run_id, RUN.scenario, RUN.iteration)
    assert list(groups) == [key, ("x", "s", 0)] and all(isinstance(line, str) for line in groups[key])
    (chosen,) = timelines([tmp_path], {key})  # the group of the unreadable line draws nothing
    assert chosen.failed and chosen.steps == (("step 1/1 hard_kill", 0.5, 7.0),)

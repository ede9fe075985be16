"""Terminal table, HTML page and SVG charts from a summary document (no Spark)."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from kafka_chaos.results import latency_charts, plots, svg
from kafka_chaos.results.html import render_html
from kafka_chaos.results.terminal import render_terminal



def summary_document(**overrides):
    document = {
        "generated_at": "2026-01-02T00:00:00+00:00",
        "percentile_method": "nearest-rank",
        "files": [{"source": "/r/records.jsonl", "valid": 9, "malformed": 1, "rejected": 0, "blank": 0,
                   "malformed_example": "not JSON: garbage", "rejected_example": None}],
        "problems": ["/r/records.jsonl: 1 malformed line(s) skipped, first: not JSON: garbage"],
        "totals": {"records": 9, "checks": 6, "measurements": 3, "runs": 2, "passed": 4, "failed": 1,
                   "unknown": 1, "first_started_at": 1_767_225_600.0, "last_finished_at": 1_767_312_000.0,
                   "pass_rate": 0.8, "ci_low": 0.376, "ci_high": 0.964},
        "pass_rates": [
            {"scenario": "kill", "check": "oracle_leader", "backend": "local", "kafka_version": "3.9.2",
             "passed": 4, "failed": 1, "unknown": 1, "pass_rate": 0.8, "ci_low": 0.376, "ci_high": 0.964},
            {"scenario": "stop", "check": "oracle_leader", "backend": "local", "kafka_version": "3.9.2",
             "passed": 0, "failed": 0, "unknown": 2, "pass_rate": None, "ci_low": None, "ci_high": None},
        ],
        "latency": [
            {"fault": "hard_kill", "phase": p, "count": 3, "p50": v, "p90": v + 10, "p99": v + 20, "max": v + 30}
            for p, v in (("detection", 5000.0), ("election", 5040.0), ("propagation", 5090.0),
                         ("first_produce", 5200.0), ("client_gap", 5300.0))
        ],
        "latency_by_partitions": [], "latency_by_session_timeout": [],
        "latency_histogram": [
            {"fault": "hard_kill", "phase": "election", "low_ms": 10 ** (b / 10), "high_ms": 10 ** ((b + 1) / 10),
             "count": c} for b, c in ((36, 2), (38, 1))
        ],
        "trend_by_day": [
            {"day": "2026-01-01", "runs": 1, "passed": 2, "failed": 1, "unknown": 0, "pass_rate": 2 / 3,
             "ci_low": 0.2, "ci_high": 0.94},
            {"day": "2026-01-02", "runs": 1, "passed": 2, "failed": 0, "unknown": 1, "pass_rate": 1.0,
             "ci_low": 0.34, "ci_high": 1.0},
        ],
        "trend_by_run": [
            {"run_id": "r1", "started_at": 1_767_225_600.0, "finished_at": 1_767_225_700.0, "backend": "local",
             "kafka_version": "3.9.2", "seed": 7, "scenarios": 2, "records": 5, "passed": 2, "failed": 1,
             "unknown": 0, "pass_rate": 2 / 3, "ci_low": 0.2, "ci_high": 0.94},
        ],
        "failing_checks": [
            {"run_id": "r1", "seed": 7, "scenario": "kill", "iteration": 3, "check": "oracle_leader",
             "backend": "local", "kafka_version": "3.9.2", "fault": "hard_kill", "target": "broker 2",
             "topic": "t", "partition": 0, "detail": "leader <1> != 2", "expected": '{"leader":2}',
             "observed": '{"leader":1}', "started_at": 1_767_225_600.0},
        ],
        "failing_checks_total": 1,
        "gates": {"min_pass_rate": 0.9, "max_latency": [], "failures": ["overall pass rate 80.00 % ..."]},
    }
    document.update(overrides)
    return document


def test_terminal_table_shows_totals_rates_latency_failures_and_gate():
    text = render_terminal(summary_document(), "/out/report.html")
    assert "4 passed, 1 failed, 1 unknown; pass rate 80.0 %" in text
    assert re.search(r"kill\s+oracle_leader\s+local\s+3\.9\.2\s+4\s+1\s+1\s+80\.0 %", text)
    assert re.search(r"hard_kill\s+election\s+3\s+5,040\s+5,050\s+5,060\s+5,070", text)
    assert "run r1, seed 7" in text and "CI gate FAILED" in text and "report: /out/report.html" in text
    assert "input problems:" in text


def test_terminal_table_of_an_empty_report():
    empty = summary_document(pass_rates=[], latency=[], failing_checks=[], failing_checks_total=0,
                             totals={"records": 0, "runs": 0, "passed": 0, "failed": 0, "unknown": 0},
                             gates={"min_pass_rate": None, "max_latency": [], "failures": []})
    text = render_terminal(empty)
    assert "0 records" in text and "pass rate –" in text and "CI gate" not in text


def test_the_first_line_says_how_many_inputs_came_from_the_cache():
    fresh = render_terminal(summary_document(timings={"cached_inputs": 0})).splitlines()[0]
    cached = render_terminal(summary_document(timings={"cached_inputs": 2})).splitlines()[0]
    assert "from the cache" not in fresh and "file(s) (2 from the cache);" in cached


SVG = "{http://www.w3.org/2000/svg}"


def test_plots_are_svg_or_none_without_data():
    document = summary_document()
    trend = ET.fromstring(plots.pass_rate_over_time(document["trend_by_day"], document["trend_by_run"]))
    assert trend.find(f"{SVG}circle") is not None and "pass rate %" in [t.text for t in trend.iter(f"{SVG}text")]
    assert plots.pass_rate_over_time([], []) is None
    assert "matplotlib" not in sys.modules  # the report draws without it


def test_nice_ticks_cover_the_range_with_round_steps():
    assert svg.nice_ticks(0, 700, 4) == [0, 200, 400, 600, 800]
    assert svg.nice_ticks(0, 5214) == [0, 2000, 4000, 6000]
    assert svg.nice_ticks(95.0, 100.0) == [95, 96, 97, 98, 99, 100]
    assert svg.nice_ticks(3, 3) == [3, 3.2, 3.4, 3.6, 3.8, 4]  # an empty range gets a unit's width


def test_latency_distributions_are_svg_step_lines_on_a_log_axis():
    document = summary_document()
    histogram = document["latency_histogram"] + [
        {"fault": "hard_kill", "phase": "detection", "low_ms": 100.0, "high_ms": 125.0, "count": 4},
        {"fault": "hard_kill", "phase": "leader_ready", "low_ms": 0.1, "high_ms": 0.125, "count": 1},
        {"fault": "pause <&>", "phase": "election", "low_ms": 1.0, "high_ms": 1.25, "count": 1},
    ]
    charts = svg.latency_distributions(histogram, document["latency"])
    assert list(charts) == ["hard_kill", "pause <&>"]
    root = ET.fromstring(charts["hard_kill"])  # well-formed XML, as the HTML embeds it
    lines = [p.get("d") for p in root.iter(f"{SVG}path")]
    assert len(lines) == 3  # one step line per phase, detection first (a leader switch's order)
    colours = [p.get("stroke") for p in root.iter(f"{SVG}path")]
    assert colours[:2] == [plots.PHASE_COLOURS["detection"], plots.PHASE_COLOURS["election"]]
    assert colours[2] not in plots.PHASE_COLOURS.values()  # a phase without a colour gets a spare one
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "Latency distribution — hard_kill" in texts
    ticks = [t for t in texts if re.fullmatch(r"[0-9.,]+", t or "")]
    assert ticks[:6] == ["0.1", "1", "10", "100", "1,000", "10,000"]  # decades over every edge and mark
    assert ticks[6:] == ["0.00", "0.20", "0.40", "0.60", "0.80", "1.00"]  # shares, up to the largest
    assert "election (n=3, p50=5,040 ms)" not in texts and "election (n=3, p50=5040 ms)" in texts
    # the election bins 10^3.6..10^3.7 and 10^3.8..10^3.9 with the empty bin between drawn at 0:
    # up, across, down to 0, across, up, across, down
    assert lines[1].count("L") == 2 * 3 + 1
    # p50 and p99 marked for the phases with statistics (election): solid and dotted
    marks = [l for l in root.iter(f"{SVG}line") if l.get("stroke") == plots.PHASE_COLOURS["election"]
             and l.get("opacity")]
    assert [m.get("stroke-dasharray") for m in marks] == [None, "1.5 2.5"]
    assert "pause &lt;&amp;&gt;" in charts["pause <&>"]
    assert svg.latency_distributions([], []) == {}


def test_html_is_self_contained_and_escaped():
    panels = latency_charts.leader_switch_panels(summary_document()["latency"])
    chart = svg.latency_distributions(summary_document()["latency_histogram"], summary_document()["latency"])
    heatmap = plots.pass_rate_heatmap(summary_document()["pass_rates"])
    page = render_html(summary_document(), {"latency": chart, "leader_switch": panels, "trend": None,
                                            "heatmap": heatmap})
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<img" not in page  # every chart inline, as SVG
    assert page.count("<svg ") == 3 and chart["hard_kill"] in page and panels in page and heatmap in page
    assert not re.search(r'(src|href)="(?!data:|#)', page)  # nothing fetched from elsewhere (in-page links only)
    assert "leader &lt;1&gt; != 2" in page and "<1>" not in page
    assert "CI gate FAILED" in page and "Failing checks" in page and "r1" in page


def test_the_verdict_and_the_failing_checks_come_first_with_replay_commands() -> None:
    from kafka_chaos.results.html import replay_command

    assert replay_command({"scenario": "leader_hard_kill", "seed": 7, "backend": "local", "iteration": 2}) == (
        "kafka-chaos run --scenario leader_hard_kill --seed 7 --backend local --iterations 3")
    explored = {"scenario": "explore-5-12", "seed": 5, "backend": "containers", "iteration": 0}
    assert replay_command(explored, "night 1/schedules/explore-5-12.json") == (
        "kafka-chaos run --schedule 'night 1/schedules/explore-5-12.json' --seed 5 --backend containers")


def test_replay_commands_name_the_schedule_the_run_kept_where_the_report_found_it(tmp_path) -> None:
    from kafka_chaos.results.report import with_replay_commands

    run = tmp_path / "results-1"
    (run / "schedules").mkdir(parents=True)
    (run / "schedules" / "h2026s3.json").write_text("{}")
    failures = [{"scenario": "h2026s3", "seed": 2026, "backend": "local", "iteration": 1},
                {"scenario": "leader_hard_kill", "seed": 2026, "backend": "local", "iteration": 0}]
    rows = with_replay_commands(failures, [run / "records.jsonl"])
    assert [r["replay"] for r in rows] == [
        f"kafka-chaos run --schedule {run}/schedules/h2026s3.json --seed 2026 --backend local --iterations 2",
        "kafka-chaos run --scenario leader_hard_kill --seed 2026 --backend local"]


def test_the_heatmap_draws_any_number_of_cells() -> None:
    from kafka_chaos.results.plots import pass_rate_heatmap

    assert pass_rate_heatmap([]) is None
    rows = [{"scenario": f"s{i}", "check": f"c{j}", "passed": (i + j) % 3, "failed": int(i == j), "unknown": 0}
            for i in range(30) for j in range(20)]
    chart = pass_rate_heatmap(rows)
    assert chart is not None
    cells = [r for r in ET.fromstring(chart).iter(f"{SVG}rect") if r.get("width") == "17.0"]
    assert len(cells) == 30 * 20
    tips = [r.find(f"{SVG}title").text for r in cells if r.find(f"{SVG}title") is not None]
    assert "s0 × c0: 0 passed, 1 failed, 0 unknown" in tips  # every checked cell says its counts
    colours = {r.get("fill") for r in cells}
    assert "#d91a1a" in colours and "#4db04f" in colours  # all failed: the deepest red; all passed: green


def test_the_controller_table_shows_each_fault_and_older_summaries_render_without_it():
    row = {"fault": "hard_kill", "steps": 2, "controller_moves": 1, "broker_change_events": 4,
           "broker_change_mean_ms": 150.0, "queued_events": 1234, "queue_mean_ms": 20.5, "controlled_shutdowns": 0,
           "shutdown_mean_ms": None, "unclean_elections": 1, "offline_max": 6, "under_replicated_max": 9,
           "under_min_isr_max": 0, "queue_size_max": 1}
    page = render_html(summary_document(controller=[row]), {})
    section = page[page.index("What the controller said"):page.index("By partition count")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    assert cells == ["hard_kill", "2", "1", "4", "150", "1,234", "20.5", "0", "–", "1", "6", "9", "0", "1"]
    older = render_html(summary_document(), {})  # a summary.json written before the table existed
    assert "What the controller said" in older and "No data." in older[older.index("What the controller said"):]


def test_a_failed_checks_evidence_is_the_sentence_then_its_fields_long_ones_folded() -> None:
    from kafka_chaos.results.html import evidence

    observed = {"misplaced": 1, "misplaced_evidence": [{"key": f"k-{i}", "why": "<x>" * 5} for i in range(30)]}
    cell = evidence({"detail": "t-0: 1 misplaced <k>", "expected": '{"misplaced": 0}', "observed": json.dumps(observed)})
    assert cell.startswith("t-0: 1 misplaced &lt;k&gt;<details>") and "<x>" not in cell
    assert "<th>misplaced</th><td>0</td><td>1</td>" in cell  # short values side by side
    assert cell.count("<pre>") == 1 and "&quot;k-29&quot;" in cell  # the long one folded, whole
    assert "(no detail)" in evidence({"expected": 2, "observed": 3})


TIME_ROWS = [
    {"phase": "settle", "kafka_dictated": False, "ledgers": 12, "seconds": 30.5, "mean_s": 2.54, "share": 0.25},
    {"phase": "session_expiry", "kafka_dictated": True, "ledgers": 4, "seconds": 91.5, "mean_s": 22.9, "share": 0.75},
]


def test_where_the_time_went_is_a_table_in_the_terminal_and_the_page():
    text = render_terminal(summary_document(time_ledger=TIME_ROWS))
    assert "where the time went" in text
    assert re.search(r"session_expiry\s+yes\s+4\s+91\.5\s+22\.9\s+75\.0 %", text)
    page = render_html(summary_document(time_ledger=TIME_ROWS), {"latency": {}, "trend": None})
    assert "<h2>Where the time went</h2>" in page and "91.5" in page
    # a summary written before time ledgers were (or with none) shows neither
    assert "where the time went" not in render_terminal(summary_document())
    assert "Where the time went" not in render_html(summary_document(), {"latency": {}, "trend": None})


SHAPING = [
    # (the run's command line, what a replay carries over)
    (["kafka-chaos", "run", "--suite", "conformance", "--seed", "7", "--results", "r"], []),
    (["kafka-chaos", "run", "--suite", "kraft", "--mode", "kraft", "--kafka-version", "4.4.0", "--controllers", "3"],
     ["--mode", "kraft", "--kafka-version", "4.4.0", "--controllers", "3"]),
    (["kafka-chaos", "run", "--transactions", "--txn-client=java", "--brokers", "5", "--junit", "j.xml"],
     ["--transactions", "--txn-client", "java", "--brokers", "5"]),
    (["kafka-chaos", "run", "--suite", "smoke", "--harness-defaults", "--tolerate", "client", "--deflake", "2"],
     ["--harness-defaults", "--tolerate", "client"]),
    (["kafka-chaos", "run", "--zookeepers", "3", "--kafka-home", "/opt/kafka 3.9", "--iterations", "4"],
     ["--zookeepers", "3", "--kafka-home", "/opt/kafka 3.9"]),
    (["kafka-chaos", "run", "--mode"], []),  # cut short: nothing to carry
    (["kafka-chaos", "explore", "--mode", "kraft", "--kafka-version", "4.4.0"], []),  # its files say it
    ([], []),
]


@pytest.mark.parametrize("command, carried", SHAPING)
def test_a_replay_carries_the_options_that_shaped_the_run(command, carried) -> None:
    from kafka_chaos.results.html import shaping_options

    assert shaping_options(command) == carried


def test_replay_commands_run_the_scenario_as_its_run_did(tmp_path) -> None:
    """From run.json: the run's shaping options (quoted as a shell reads them), or for a run
    started without a command line (run_scenarios called directly) the row's release, and with the
    harness's defaults --harness-defaults for a catalogue scenario (a schedule file runs as written)."""
    from kafka_chaos.results.report import with_replay_commands

    cli, direct = tmp_path / "cli", tmp_path / "direct"
    (direct / "schedules").mkdir(parents=True)
    (direct / "schedules" / "mine.json").write_text("{}")
    cli.mkdir()
    (cli / "run.json").write_text(json.dumps({"run_id": "a", "kafka_defaults": True, "command": [
        "kafka-chaos", "run", "--suite", "kraft", "--kafka-version", "4.4.0", "--kafka-home", "/opt/k 4"]}))
    (direct / "run.json").write_text(json.dumps({"run_id": "b", "kafka_defaults": False, "command": None}))
    failures = [{"run_id": "a", "scenario": "leader_hard_kill_kraft", "seed": 1, "backend": "local", "iteration": 0,
                 "kafka_version": "4.4.0"},
                {"run_id": "b", "scenario": "leader_hard_kill", "seed": 2, "backend": "local", "iteration": 0},
                {"run_id": "b", "scenario": "mine", "seed": 2, "backend": "local", "iteration": 0},
                {"run_id": "b", "scenario": "leader_hard_kill", "seed": 2, "backend": "local", "iteration": 1,
                 "kafka_version": "3.1.2"},
                {"run_id": "gone", "scenario": "leader_hard_kill", "seed": 3, "backend": "local", "iteration": 0}]
    rows = with_replay_commands(failures, [cli / "records.jsonl", direct / "records.jsonl"])
    assert [r["replay"] for r in rows] == [
        "kafka-chaos run --scenario leader_hard_kill_kraft --seed 1 --backend local --kafka-version 4.4.0 "
        "--kafka-home '/opt/k 4'",
        "kafka-chaos run --scenario leader_hard_kill --seed 2 --backend local --harness-defaults",
        f"kafka-chaos run --schedule {direct}/schedules/mine.json --seed 2 --backend local",
        "kafka-chaos run --scenario leader_hard_kill --seed 2 --backend local --iterations 2 --kafka-version 3.1.2 "
        "--harness-defaults",
        "kafka-chaos run --scenario leader_hard_kill --seed 3 --backend local"]

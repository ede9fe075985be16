"""The report as one self-contained HTML file: inline CSS, the charts as inline SVG
(:mod:`results.svg`, :mod:`results.plots`)."""

from __future__ import annotations

import html
import json
import shlex
from collections.abc import Callable, Mapping, Sequence, Set as AbstractSet
from typing import Any

from kafka_chaos.records.schema import STALL_S
from kafka_chaos.results import formatting as fmt, phases

Row = Mapping[str, Any]
Column = tuple[str, str, Callable[[Any], str]]  # (key, header, formatter)
HTML_FAILURE_LIMIT = 200

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; vertical-align: top; max-width: 32em; overflow-wrap: anywhere; white-space: pre-wrap; }
th { background: #f3f3f3; text-align: left; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bad td { background: #fdecec; } tr.unknown td { background: #fff8e1; }
.ok { color: #1a7f37; font-weight: bold; } .fail { color: #c62828; font-weight: bold; }
.problems li { color: #8a4b00; }
img, svg.chart { max-width: 100%; height: auto; border: 1px solid #eee; margin: 0.5em 0; display: block; }
.note { color: #666; font-size: 12px; }
.verdict { font-size: 1.4em; padding: 0.4em 0.6em; border-radius: 4px; background: #f6f6f6; }
details > summary { cursor: pointer; margin: 0.5em 0; }
"""


class Html(str):
    """A cell's text that is markup already (made here from escaped parts): not escaped again."""


def _escape(value: Any) -> str:
    return value if isinstance(value, Html) else html.escape(fmt.text(value))


_FOLD_OVER = 120  # characters: a longer value is folded, its first line shown


def _json_or_text(value: object) -> object:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _fact(value: object) -> str:
    """One value of the evidence: compact JSON, or folded and indented when long."""
    compact = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if len(compact) <= _FOLD_OVER:
        return html.escape(compact)
    pretty = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True)
    return (f"<details><summary>{html.escape(compact[:_FOLD_OVER - 20])}…</summary>"
            f"<pre>{html.escape(pretty)}</pre></details>")


def evidence(row: Row) -> Html:
    """A failed check's evidence as a reader wants it: the sentence, then what was expected and
    what was observed, field by field, long values folded (a check's ``observed`` can be ~2,000
    characters of JSON)."""
    expected, observed = _json_or_text(row.get("expected")), _json_or_text(row.get("observed"))
    if isinstance(expected, dict) and isinstance(observed, dict):
        keys = list(dict.fromkeys([*expected, *observed]))
        facts = [(k, expected.get(k), observed.get(k)) for k in keys]
    else:
        facts = [("", expected, observed)]
    body = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{'' if e is None else _fact(e)}</td>"
                   f"<td>{'' if o is None else _fact(o)}</td></tr>" for k, e, o in facts)
    sentence = html.escape(fmt.text(row.get("detail")) or "(no detail)")
    return Html(f"{sentence}<details><summary>expected / observed ({len(facts)} field(s))</summary>"
                f"<table><thead><tr><th></th><th>expected</th><th>observed</th></tr></thead>"
                f"<tbody>{body}</tbody></table></details>")


def _table(rows: Sequence[Row], columns: Sequence[Column], row_class: Callable[[Row], str] | None = None) -> str:
    if not rows:
        return '<p class="note">No data.</p>'
    head = "".join(f"<th>{html.escape(header)}</th>" for _, header, _ in columns)
    body = []
    for row in rows:
        cells = []
        for key, _, formatter in columns:
            value = row.get(key)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            cells.append(f'<td class="num">{_escape(formatter(value))}</td>' if numeric
                         else f"<td>{_escape(formatter(value))}</td>")
        css = row_class(row) if row_class else ""
        body.append(f'<tr class="{css}">' + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _outcome_class(row: Row) -> str:
    if row.get("failed"):
        return "bad"
    if row.get("unknown"):
        return "unknown"
    return ""


_OUTCOME_COLUMNS: list[Column] = [
    ("passed", "passed", fmt.count), ("failed", "failed", fmt.count), ("unknown", "unknown", fmt.count),
    ("pass_rate", "pass rate", fmt.rate), ("ci_low", "95 % CI low", fmt.rate), ("ci_high", "95 % CI high", fmt.rate),
]
_LATENCY_COLUMNS: list[Column] = [
    ("count", "n", fmt.count), ("p50", "p50 ms", fmt.ms), ("p90", "p90 ms", fmt.ms),
    ("p99", "p99 ms", fmt.ms), ("max", "max ms", fmt.ms),
]


def render_html(summary: Mapping[str, Any], images: Mapping[str, Any]) -> str:
    """``summary``: the summary.json content; ``images``: ``latency`` {fault: SVG text},
    ``leader_switch``, ``produce_outage``, ``trend``, ``heatmap``: SVG text | None;
    ``timelines``: (anchor, SVG)."""
    totals = summary["totals"]
    gates = summary.get("gates", {})
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<title>kafka-chaos report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>kafka-chaos report</h1>",
        f'<p class="note">Generated {_escape(summary["generated_at"])} from '
        f'{len(summary["files"])} records file(s). Percentiles: {_escape(summary["percentile_method"])}. '
        "Pass rates exclude unknown results; the interval is the 95 % Wilson score interval.</p>",
        _overview(totals, gates),
        _problems(summary.get("problems", [])),
        _failures(summary["failing_checks"], summary["failing_checks_total"],
                  {anchor for anchor, _ in images.get("timelines", [])}),
        _baseline(summary.get("baseline")),
        "<h2 id=\"heatmap\">Scenario × check</h2>",
        "<p class=\"note\">Pass rate of every check of every scenario over all runs read (red: failures, "
        "amber: unknown, grey: no such check). The full table is folded below.</p>",
        images.get("heatmap") or "",
        "<details><summary>Pass rates per scenario × check × backend × Kafka version "
        f"({len(summary['pass_rates']):,} rows)</summary>",
        _table(summary["pass_rates"], [
            ("scenario", "scenario", fmt.text), ("check", "check", fmt.text),
            ("backend", "backend", fmt.text), ("kafka_version", "Kafka", fmt.text), *_OUTCOME_COLUMNS,
        ], _outcome_class),
        "</details>",
        *_leader_switch(summary, images),
        *_client_availability(summary, images),
        *_transactions(summary),
        _migration_timeline(summary.get("migration_timeline", [])),  # absent before migrations were
        _time_ledger(summary.get("time_ledger", [])),  # absent before time ledgers were
        _timelines(images.get("timelines", [])),
        "<h2>Trend</h2>",
    ]
    if images.get("trend"):
        parts.append(images["trend"])
    parts += [
        "<h3>Per day (UTC)</h3>",
        _table(summary["trend_by_day"], [("day", "day", fmt.text), ("runs", "runs", fmt.count), *_OUTCOME_COLUMNS],
               _outcome_class),
        "<h3>Per run</h3>",
        _table(summary["trend_by_run"], [
            ("run_id", "run", fmt.text), ("started_at", "started (UTC)", fmt.epoch),
            ("backend", "backend", fmt.text), ("kafka_version", "Kafka", fmt.text), ("seed", "seed", fmt.text),
            ("scenarios", "scenarios", fmt.count), ("records", "records", fmt.count), *_OUTCOME_COLUMNS,
        ], _outcome_class),
        _files(summary["files"]),
        "</body></html>",
    ]
    return "\n".join(parts)


def _leader_switch(summary: Mapping[str, Any], images: Mapping[str, Any]) -> list[str]:
    """"Latency of a leader switch": the phases per fault as small multiples first, then
    everything behind them folded (every phase's percentiles, the distributions), the
    controller's own account, and the percentiles by partition count, session timeout, release
    and mode.  The clients' figures are in :func:`_client_availability`."""
    rows = phases.leader_switch_rows(summary["latency"])
    distributions = images.get("latency", {})
    return [
        '<h2 id="latency">Latency of a leader switch</h2>',
        '<p class="note">Per fault, each phase\'s median (bar) and p99 (whisker) in ms from the fault: '
        "<b>detection</b> (the controller can notice: the broker's znode is gone, or on KRaft it is fenced), "
        "<b>election</b> (the new leader written), <b>propagation</b> (every live broker's metadata shows it), "
        "<b>first produce</b> (the first acknowledged produce after it). Each phase includes the ones before it: "
        "grey is the time already spent when the phase began, the colour what the phase adds. Every panel has "
        "the same scale; the values at the right are p50 · p99. What the clients saw is under "
        '<a href="#clients">Client availability</a>.</p>',
        images.get("leader_switch") or '<p class="note">No leader-switch phase measured.</p>',
        f"<details><summary>Every phase per fault: n, p50, p90, p99, max ({len(rows):,} rows; controller_queue, "
        "controller_processing, leader_and_isr, update_metadata and leader_ready split the election from the "
        "controller's logs)</summary>",
        _table(rows, [("fault", "fault", fmt.text), ("phase", "phase", fmt.text), *_LATENCY_COLUMNS]),
        "</details>",
        # SVG written by results.svg, its text escaped there: embedded as it is.
        f"<details><summary>Distribution of each phase, per fault ({len(distributions)} charts)</summary>",
        *distributions.values(),
        "</details>",
        "<h3>What the controller said, per fault</h3>",
        "<p class=\"note\">The controller's own JMX metrics around each fault step (scraped before the fault and "
        "when the step's measurement closed): how often the controller moved, BrokerChange events "
        "(LeaderElectionRateAndTimeMs) and their mean time, events through the controller's queue and their mean "
        "wait (EventQueueTimeMs), controlled shutdowns, unclean elections, and the largest offline / "
        "under-replicated / under-min-ISR partition counts and event-queue size at a step's end.</p>",
        _table(summary.get("controller", []), [
            ("fault", "fault", fmt.text), ("steps", "steps", fmt.count),
            ("controller_moves", "controller moved", fmt.count),
            ("broker_change_events", "BrokerChange events", fmt.count),
            ("broker_change_mean_ms", "mean ms", fmt.ms), ("queued_events", "queued events", fmt.count),
            ("queue_mean_ms", "mean queue ms", fmt.ms), ("controlled_shutdowns", "controlled shutdowns", fmt.count),
            ("shutdown_mean_ms", "mean ms", fmt.ms), ("unclean_elections", "unclean elections", fmt.count),
            ("offline_max", "offline max", fmt.count), ("under_replicated_max", "under-replicated max", fmt.count),
            ("under_min_isr_max", "under min ISR max", fmt.count), ("queue_size_max", "queue size max", fmt.count)]),
        _folded_breakdown("By partition count", summary["latency_by_partitions"],
                          ("partitions", "partitions", fmt.count)),
        _folded_breakdown("By ZooKeeper session timeout", summary["latency_by_session_timeout"],
                          ("session_timeout_ms", "session timeout ms", fmt.count)),
        # absent from a summary written before releases / KRaft were
        _folded_breakdown("By Kafka release", summary.get("latency_by_release", []),
                          ("kafka_version", "Kafka", fmt.text)),
        _folded_breakdown("ZooKeeper mode and KRaft", summary.get("latency_by_mode", []), ("mode", "mode", fmt.text)),
    ]


def _folded_breakdown(title: str, rows: Sequence[Row], key: Column) -> str:
    """Every phase's percentiles per fault and one more key, folded under ``title``."""
    return (f"<h3>{html.escape(title)}</h3><details><summary>Every phase per fault × {html.escape(key[1])} "
            f"({len(rows):,} rows)</summary>"
            + _table(rows, [("fault", "fault", fmt.text), ("phase", "phase", phases.phase_label), key,
                            *_LATENCY_COLUMNS])
            + "</details>")


def _client_availability(summary: Mapping[str, Any], images: Mapping[str, Any]) -> list[str]:
    """"Client availability": the producer's outage (ms, from its own acknowledgements) first,
    the clients' other millisecond figures folded, then the coarse 1 s-window figures apart."""
    measured = phases.client_ms_rows(summary["latency"])
    return [
        '<h2 id="clients">Client availability</h2>',
        '<p class="note">What the workload\'s idempotent <code>acks=all</code> producer and its consumers saw, '
        "per partition and fault step (the <code>client_availability</code> measurements), from their own "
        "events. <b>produce_outage</b>: how long the producer's sends went unanswered — its stalls of "
        f"{STALL_S:g} s or more between two acknowledgements (or holding a failed send), from the last "
        "acknowledgement before each to the next one, added up from the fault to the end of the step's "
        "measurement; 0 where the partition never stalled. The producer retries, so a send during a leader "
        "switch is acknowledged late rather than failed.</p>",
        images.get("produce_outage") or '<p class="note">No produce outage measured (a history before it '
                                         "was, or no client ops).</p>",
        f"<details><summary>The clients' figures to the millisecond, per fault ({len(measured):,} rows): "
        "produce_outage; unavailable, the longest stretch without an acknowledgement from the fault to the "
        "step's end; client_gap, the fault's target partition's longest silence between acknowledgements (the "
        "latency record); e2e_p50 / p99 / p999, a message's creation to its first poll</summary>",
        _table(measured, [("fault", "fault", fmt.text), ("phase", "phase", fmt.text), *_LATENCY_COLUMNS]),
        "</details>",
        "<h3>In 1 s windows</h3>",
        "<p class=\"note\">Coarse, kept for the tables and gates that use them: the window from the fault to the "
        "end of the step's measurement cut into fixed 1 s windows, per partition and fault step. Availability: "
        "the share of windows with at least one acknowledged produce / one record consumed (assign-mode "
        "consumer). Windows without: the same as ms (<code>produce_unavailable</code>, "
        "<code>consume_unavailable</code>), always a multiple of 1,000 — a window count, not a duration "
        "measured to the millisecond.</p>",
        _table(_windows_per_fault(summary.get("availability", []), phases.window_rows(summary["latency"])), [
            ("fault", "fault", fmt.text), ("count", "n", fmt.count),
            ("produce_mean", "produce: mean share", fmt.rate), ("produce_min", "min share", fmt.rate),
            ("produce_p50", "ms without ack, p50", fmt.ms), ("produce_p99", "p99", fmt.ms),
            ("consume_mean", "consume: mean share", fmt.rate), ("consume_min", "min share", fmt.rate),
            ("consume_p50", "ms without poll, p50", fmt.ms), ("consume_p99", "p99", fmt.ms)]),
    ]


def _transactions(summary: Mapping[str, Any]) -> list[str]:
    """"Transactions": the transactional workload per fault (none without it)."""
    counts, latency = summary.get("transactions", []), phases.txn_rows(summary["latency"])
    if not counts and not latency:
        return []
    return [
        '<h2 id="transactions">Transactions</h2>',
        '<p class="note">What the transactional workload\'s clients saw per fault step, from the fault to the end '
        "of the step's measurement (the <code>txn_availability</code> measurements): the attempts that ended "
        "then — committed, aborted as the workload asked (every fifth), aborted by an error, or with an end the "
        "client never learnt — and the <b>failure rate</b>, the last two over all. <b>txn_commit_p50 / p99</b>: "
        "<code>commit_transaction</code>'s latency per step (librdkafka's workload; Kafka's Java copier reports "
        "a commit only once made); <b>txn_no_commit</b>: the longest stretch without a commit.</p>",
        _table(counts, [("fault", "fault", fmt.text), ("steps", "steps", fmt.count),
                        ("committed", "committed", fmt.count), ("aborted", "aborted as asked", fmt.count),
                        ("failed", "aborted by an error", fmt.count), ("unknown", "end unknown", fmt.count),
                        ("failure_rate", "failure rate", fmt.rate)]),
        _table(latency, [("fault", "fault", fmt.text), ("phase", "phase", fmt.text), *_LATENCY_COLUMNS]),
    ]


def _windows_per_fault(availability: Sequence[Row], windows: Sequence[Row]) -> list[Row]:
    """One row per fault: its availability shares beside its windows without success."""
    by_fault = {row["fault"]: dict(row) for row in availability}
    for row in windows:
        side = "produce" if row["phase"] == "produce_unavailable" else "consume"
        merged = by_fault.setdefault(row["fault"], {"fault": row["fault"], "count": row["count"]})
        merged[f"{side}_p50"], merged[f"{side}_p99"] = row.get("p50"), row.get("p99")
    return sorted(by_fault.values(), key=lambda r: fmt.text(r["fault"]))


def _overview(totals: Mapping[str, Any], gates: Mapping[str, Any]) -> str:
    failures = gates.get("failures", [])
    configured = gates.get("min_pass_rate") is not None or gates.get("max_latency") or gates.get("max_regression")
    if not configured:
        verdict = '<span class="note">no CI gate configured</span>'
    elif failures:
        verdict = '<span class="fail">CI gate FAILED</span><ul>' + "".join(
            f"<li>{_escape(f)}</li>" for f in failures) + "</ul>"
    else:
        verdict = '<span class="ok">CI gate passed</span>'
    rows = [
        ("records", fmt.count(totals.get("records"))), ("runs", fmt.count(totals.get("runs"))),
        ("checks", f'{fmt.count(totals.get("checks"))} ({fmt.count(totals.get("passed"))} passed, '
                   f'{fmt.count(totals.get("failed"))} failed, {fmt.count(totals.get("unknown"))} unknown)'),
        ("overall pass rate", f'{fmt.rate(totals.get("pass_rate"))} '
                              f'(95 % CI {fmt.interval(totals.get("ci_low"), totals.get("ci_high"))})'),
        ("measurements", fmt.count(totals.get("measurements"))),
        ("time span", f'{fmt.epoch(totals.get("first_started_at"))} … {fmt.epoch(totals.get("last_finished_at"))}'),
    ]
    table = "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    failed, unknown = totals.get("failed") or 0, totals.get("unknown") or 0
    headline = ('<p id="verdict" class="verdict fail">FAILED: '
                f'{fmt.count(failed)} failed and {fmt.count(unknown)} unknown of {fmt.count(totals.get("checks"))} checks'
                ' — <a href="#failing">the failing checks</a></p>' if failed or unknown else
                f'<p id="verdict" class="verdict ok">PASSED: all {fmt.count(totals.get("checks"))} checks passed</p>')
    return f"{headline}<h2>Overview</h2>{table}</table><p>{verdict}</p>"


def _problems(problems: Sequence[str]) -> str:
    if not problems:
        return ""
    items = "".join(f"<li>{_escape(p)}</li>" for p in problems)
    return f'<h2>Input problems</h2><ul class="problems">{items}</ul>'


# The options of ``kafka-chaos run`` that shape what a scenario runs on -- not which scenarios run,
# how often, or where the results go: a replay carries them over from the run's own command line.
SHAPING_FLAGS = frozenset({"--transactions", "--harness-defaults"})
SHAPING_OPTIONS = frozenset({"--brokers", "--mode", "--controllers", "--zookeepers", "--txn-client",
                             "--kafka-version", "--kafka-home", "--tolerate"})


def shaping_options(command: Sequence[str] | None) -> list[str]:
    """The :data:`SHAPING_FLAGS` and :data:`SHAPING_OPTIONS` of a ``kafka-chaos run`` command line
    (run.json's ``command``), in its order; nothing of another command's (``explore`` keeps what
    shapes its schedules in their files)."""
    if not command or len(command) < 2 or command[1] != "run":
        return []
    shaping: list[str] = []
    args = iter(command[2:])
    for arg in args:
        name, equals, value = arg.partition("=")
        if name in SHAPING_FLAGS and not equals:
            shaping.append(name)
        elif name in SHAPING_OPTIONS:
            given = value if equals else next(args, None)
            if given is not None:
                shaping += [name, given]
    return shaping


def replay_command(row: Row, schedule: str | None = None, shaping: Sequence[str] = ()) -> str:
    """How to run a failing check's scenario iteration again with the same choices: a scenario
    that came from a schedule file (``schedule``: where its run kept it, ``DIR/schedules/``, as
    ``run --schedule`` and ``explore`` do) from that file, a catalogue scenario by name; with the
    options that shaped it (``shaping``: :func:`shaping_options` of the run's command)."""
    scenario, seed, backend = row.get("scenario"), row.get("seed"), row.get("backend") or "local"
    iterations = int(row.get("iteration") or 0) + 1
    more = f" --iterations {iterations}" if iterations > 1 else ""
    which = f"--schedule {shlex.quote(schedule)}" if schedule else f"--scenario {scenario}"
    shaped = "".join(f" {shlex.quote(arg)}" for arg in shaping)
    return f"kafka-chaos run {which} --seed {seed} --backend {backend}{more}{shaped}"


def timeline_anchor(run_id: object, scenario: object, iteration: object) -> str:
    """The id of a scenario iteration's timeline in the page (letters, digits, '-', '_')."""
    return "timeline-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{run_id}-{scenario}-{iteration}")


def _timeline_link(row: Row, anchors: AbstractSet[str]) -> Html:
    anchor = timeline_anchor(row.get("run_id"), row.get("scenario"), row.get("iteration"))
    return Html(f'<a href="#{anchor}">timeline</a>' if anchor in anchors else "")


def _failures(failures: Sequence[Row], total: int, timelines: AbstractSet[str] = frozenset()) -> str:
    if not failures:
        return '<h2 id="failing">Failing checks</h2><p class="ok">none</p>'
    shown = [{**row, "replay": row.get("replay") or replay_command(row), "evidence": evidence(row),
              "timeline": _timeline_link(row, timelines)} for row in failures[:HTML_FAILURE_LIMIT]]
    note = (f"<p class=\"note\">Showing the newest {len(shown)} of {total:,}; all are in "
            "tables/failing_checks (Parquet).</p>" if total > len(shown) else "")
    return ('<h2 id="failing">Failing checks</h2><p class="note">Newest first, each with what was expected, what '
            "was observed and the command that replays its scenario iteration with the same choices.</p>" + note
            + _table(shown, [
                ("scenario", "scenario", fmt.text), ("iteration", "iteration", fmt.text),
                ("check", "check", fmt.text), ("fault", "fault", fmt.text), ("evidence", "evidence", Html),
                ("timeline", "timeline", Html),
                ("replay", "replay", fmt.text), ("started_at", "started (UTC)", fmt.epoch),
                ("run_id", "run", fmt.text), ("backend", "backend", fmt.text), ("target", "target", fmt.text),
            ]))


def _timelines(timelines: Sequence[tuple[str, str]]) -> str:
    """``timelines``: (anchor, SVG), the anchor from :func:`timeline_anchor`."""
    if not timelines:
        return ""
    parts = ["<h2>Timelines</h2>",
             "<p class=\"note\">Every failing scenario iteration (up to 10) and a sample of passing ones, from "
             "history.jsonl: fault steps shaded (fault to end of measurement), the leader of each partition "
             "(ZooKeeper), acknowledged produces and failed sends per second, end-to-end latency of each "
             "message's first poll by the assign-mode consumer.</p>"]
    parts += [f'<div id="{html.escape(anchor)}">{chart}</div>' for anchor, chart in timelines]
    return "\n".join(parts)


def _files(files: Sequence[Row]) -> str:
    return "<h2>Inputs</h2>" + _table(files, [
        ("source", "file", fmt.text), ("valid", "records", fmt.count), ("malformed", "malformed", fmt.count),
        ("rejected", "rejected", fmt.count), ("malformed_example", "first malformed", fmt.text),
        ("rejected_example", "first rejected", fmt.text),
    ], lambda r: "bad" if r.get("malformed") or r.get("rejected") else "")


HTML_REGRESSION_LIMIT = 200


def _baseline(baseline: Mapping[str, Any] | None) -> str:
    """"Compared with baseline": what with, the stated tests, every regression (up to a limit)
    first, then the full comparison tables folded — a few rows at 1 run, the same few hundred
    (one per scenario × check, one per fault × phase) at 1,000."""
    if not baseline:
        return ""
    sources = ", ".join(baseline["sources"][:5]) + (f" and {len(baseline['sources']) - 5} more"
                                                    if len(baseline["sources"]) > 5 else "")
    regressions = baseline["regressions"]
    gating = "gating (--max-regression)" if baseline.get("gating") else "not gating (no --max-regression)"
    parts = [
        '<h2 id="baseline">Compared with baseline</h2>',
        f'<p class="note">Baseline: {_escape(sources)} — {fmt.count(baseline["runs"])} run(s), '
        f'{fmt.count(baseline["records"])} records. Rules: {_escape(", ".join(baseline["rules"]))}, {gating}. '
        f'Latency: {_escape(baseline["test"]["latency"])}. Pass rate: {_escape(baseline["test"]["pass_rate"])}.</p>',
    ]
    if regressions:
        shown = regressions[:HTML_REGRESSION_LIMIT]
        more = (f"<li>… {len(regressions) - len(shown):,} more in summary.json</li>"
                if len(regressions) > len(shown) else "")
        parts.append(f'<p class="fail">{len(regressions):,} regression(s)</p><ul id="regressions">'
                     + "".join(f"<li>{_escape(line)}</li>" for line in shown) + more + "</ul>")
    else:
        parts.append('<p class="ok">no regression</p>')
    latency = sorted(baseline["latency"], key=lambda r: (not r["regressed"], r["p_greater"] is None,
                                                         r["p_greater"] or 1.0))
    parts += [
        f"<details><summary>Latency per fault × phase, baseline → this run ({len(latency):,} rows, "
        "most significant first)</summary>",
        _table(latency, [
            ("fault", "fault", fmt.text), ("phase", "phase", fmt.text),
            ("base_n", "n before", fmt.count), ("new_n", "n now", fmt.count),
            ("base_p50", "p50 before", fmt.ms), ("new_p50", "p50 now", fmt.ms), ("p50_growth", "p50 Δ", _growth),
            ("base_p99", "p99 before", fmt.ms), ("new_p99", "p99 now", fmt.ms), ("p99_growth", "p99 Δ", _growth),
            ("p_greater", "p (slower)", _p_value),
        ], lambda r: "bad" if r["regressed"] else ""),
        "</details>",
    ]
    rates = sorted(baseline["pass_rates"], key=lambda r: (not r["regressed"], (r["new_rate"] if r["new_rate"]
                                                                                 is not None else 2.0)
                                                           - (r["base_rate"] if r["base_rate"] is not None else 0.0)))
    parts += [
        f"<details><summary>Pass rate per scenario × check, baseline → this run ({len(rates):,} rows, "
        "biggest drop first)</summary>",
        _table(rates, [
            ("scenario", "scenario", fmt.text), ("check", "check", fmt.text),
            ("base_decided", "decided before", fmt.count), ("base_rate", "rate before", fmt.rate),
            ("base_ci_low", "CI low before", fmt.rate), ("new_decided", "decided now", fmt.count),
            ("new_rate", "rate now", fmt.rate), ("new_ci_high", "CI high now", fmt.rate),
        ], lambda r: "bad" if r["regressed"] else ""),
        "</details>",
    ]
    return "\n".join(parts)


def _growth(value: Any) -> str:
    return "–" if value is None else f"{100 * value:+.1f} %"


def _p_value(value: Any) -> str:
    return "–" if value is None else f"{value:.2g}"


def _migration_timeline(rows: list[dict[str, Any]]) -> str:
    """Each migrating scenario's steps in order: which phase it left the cluster in, how long it
    took, what ZooKeeper lagged the log by (nothing when no run migrated)."""
    if not rows:
        return ""
    return "".join([
        "<h2>Migration phase timeline</h2>",
        "<p class=\"note\">Every step of a migrating cluster in order (ZooKeeper→KRaft, KIP-866): the phase "
        "before and after it as Kafka reported them (the metadata log's ZkMigrationStateRecord, the migration "
        "driver's last state), the KRaft controller in charge, the step's seconds from fault to measurement, "
        "and how long ZooKeeper took to equal the log while dual-writing.</p>",
        _table(rows, [
            ("scenario", "scenario", fmt.text), ("iteration", "iter", fmt.count), ("fault", "step", fmt.text),
            ("target", "target", fmt.text), ("phase_before", "phase before", fmt.text),
            ("phase_after", "phase after", fmt.text), ("zk_migration_state", "ZkMigrationState", fmt.text),
            ("driver_state", "driver", fmt.text), ("kraft_controller", "KRaft controller", fmt.text),
            ("seconds", "seconds", fmt.text), ("write_behind_s", "ZooKeeper lag s", fmt.text)]),
    ])


def _time_ledger(rows: list[dict[str, Any]]) -> str:
    """Where the harness's time went, per phase (nothing when no run recorded a time ledger)."""
    if not rows:
        return ""
    return "".join([
        "<h2>Where the time went</h2>",
        "<p class=\"note\">Every scenario iteration's wall time by phase, from the <code>time_ledger</code> "
        "measurements: each fault step's (settle, predict, inject, convergence, metadata, clients, measure) and "
        "the iteration's around them (cluster, topics, workload, checks, heal, read-back); <code>other</code> is "
        "what no phase measured. Kafka-dictated phases (broker and controller start-up, session / heartbeat / "
        "election timeouts) are what the harness cannot shorten by itself. Ledgers: how many steps or "
        "iterations spent time in the phase; share: of all the seconds listed.</p>",
        _table(rows, [
            ("phase", "phase", fmt.text), ("kafka_dictated", "Kafka-dictated", fmt.flag),
            ("ledgers", "ledgers", fmt.count), ("seconds", "seconds", fmt.seconds), ("mean_s", "mean s", fmt.seconds),
            ("share", "share", fmt.rate)]),
    ])

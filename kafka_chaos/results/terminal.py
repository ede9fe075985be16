"""The compact plain-text summary `kafka-chaos report` prints."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka_chaos.results import formatting as fmt, phases

Row = Mapping[str, Any]
TERMINAL_PASS_RATE_ROWS = 12


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _columns(rows: Sequence[Row], spec: Sequence[tuple[str, str, int, Callable[[Any], str]]]) -> list[str]:
    """Fixed-width columns; a negative width means right-aligned (numbers)."""
    def line(cells: Sequence[str]) -> str:
        out = []
        for cell, (_, _, width, _) in zip(cells, spec):
            cell = _cut(cell, abs(width))
            out.append(cell.rjust(-width) if width < 0 else cell.ljust(width))
        return "  ".join(out).rstrip()

    lines = [line([header for _, header, _, _ in spec])]
    lines += [line([formatter(row.get(key)) for key, _, _, formatter in spec]) for row in rows]
    return lines


def _latency_spec(phase_width: int) -> list[tuple[str, str, int, Callable[[Any], str]]]:
    return [("fault", "fault", 30, fmt.text), ("phase", "phase", phase_width, phases.phase_label),
            ("count", "n", -7, fmt.count), ("p50", "p50", -8, fmt.ms), ("p90", "p90", -8, fmt.ms),
            ("p99", "p99", -8, fmt.ms), ("max", "max", -8, fmt.ms)]


def render_terminal(summary: Mapping[str, Any], report_path: str | None = None) -> str:
    totals = summary["totals"]
    cached = summary.get("timings", {}).get("cached_inputs", 0)
    lines = [
        f"kafka-chaos report: {fmt.count(totals.get('records'))} records, {fmt.count(totals.get('runs'))} run(s), "
        f"{len(summary['files'])} file(s){f' ({cached} from the cache)' if cached else ''}; "
        f"{fmt.epoch(totals.get('first_started_at'))} … "
        f"{fmt.epoch(totals.get('last_finished_at'))}",
        f"checks: {fmt.count(totals.get('passed'))} passed, {fmt.count(totals.get('failed'))} failed, "
        f"{fmt.count(totals.get('unknown'))} unknown; pass rate {fmt.rate(totals.get('pass_rate'))} "
        f"(95 % CI {fmt.interval(totals.get('ci_low'), totals.get('ci_high'))})",
    ]
    rates = summary["pass_rates"]
    if rates:
        worst = sorted(rates, key=lambda r: (r["pass_rate"] is None, r["pass_rate"] or 0.0, -r["failed"]))
        shown = worst[:TERMINAL_PASS_RATE_ROWS]
        title = "pass rates" if len(shown) == len(rates) else f"pass rates, worst {len(shown)} of {len(rates)}"
        lines += ["", title + ":"]
        lines += _columns(shown, [
            ("scenario", "scenario", 30, fmt.text), ("check", "check", 20, fmt.text),
            ("backend", "backend", 10, fmt.text), ("kafka_version", "kafka", 6, fmt.text),
            ("passed", "pass", -6, fmt.count), ("failed", "fail", -5, fmt.count),
            ("unknown", "unk", -4, fmt.count), ("pass_rate", "rate", -7, fmt.rate),
        ])
    leader_switch = phases.leader_switch_rows(summary["latency"])
    if leader_switch:
        lines += ["", "leader switch, ms from the fault (nearest-rank percentiles):"]
        lines += _columns(leader_switch, _latency_spec(21))
    clients = phases.client_rows(summary["latency"])
    if clients:
        lines += ["", "clients, ms per partition and fault step (produce_outage: unanswered sends, from the "
                      "producer's acks; 1 s windows: a count of windows without success, in ms):"]
        lines += _columns(clients, _latency_spec(33))
    lines += _transaction_lines(summary)
    if summary.get("time_ledger"):  # absent from a summary written before time ledgers were
        lines += ["", "where the time went (time_ledger measurements):"]
        lines += _columns(summary["time_ledger"], [
            ("phase", "phase", 18, fmt.text), ("kafka_dictated", "kafka", 5, fmt.flag),
            ("ledgers", "n", -7, fmt.count), ("seconds", "seconds", -10, fmt.seconds),
            ("mean_s", "mean s", -8, fmt.seconds), ("share", "share", -7, fmt.rate),
        ])
    if summary["failing_checks_total"]:
        newest = summary["failing_checks"][0]
        lines += ["", f"{summary['failing_checks_total']:,} failing check(s); newest: {newest['scenario']} "
                      f"#{newest['iteration']} {newest['check']} (run {newest['run_id']}, seed {newest['seed']}): "
                      f"{_cut(fmt.text(newest['detail']), 100)}"]
    if summary.get("baseline"):
        lines += ["", *_baseline_lines(summary["baseline"])]
    if summary.get("problems"):
        lines += ["", "input problems:"] + [f"  {p}" for p in summary["problems"]]
    failures = summary.get("gates", {}).get("failures", [])
    if failures:
        lines += ["", "CI gate FAILED:"] + [f"  {f}" for f in failures]
    elif (summary.get("gates", {}).get("min_pass_rate") is not None or summary.get("gates", {}).get("max_latency")
          or summary.get("gates", {}).get("max_regression")):
        lines += ["", "CI gate passed"]
    if report_path:
        lines += ["", f"report: {report_path}"]
    return "\n".join(lines)


def _transaction_lines(summary: Mapping[str, Any]) -> list[str]:
    """The transactional workload per fault: its attempts' outcomes, then its commit latency and
    longest stretch without a commit per step (absent from a summary written before they were)."""
    lines: list[str] = []
    if summary.get("transactions"):
        lines += ["", "transactions per fault (attempts ended in the fault steps' windows; failure rate: aborted "
                      "by an error or end unknown, over all):"]
        lines += _columns(summary["transactions"], [
            ("fault", "fault", 24, fmt.text), ("steps", "steps", -6, fmt.count),
            ("committed", "committed", -10, fmt.count), ("aborted", "aborted", -8, fmt.count),
            ("failed", "failed", -7, fmt.count), ("unknown", "unknown", -8, fmt.count),
            ("failure_rate", "failure", -8, fmt.rate),
        ])
    txn = phases.txn_rows(summary["latency"])
    if txn:
        lines += ["", "transactions, ms per fault step (commit_transaction's latency; the longest stretch "
                      "without a commit):"]
        lines += _columns(txn, _latency_spec(21))
    return lines


TERMINAL_REGRESSION_ROWS = 8


def _baseline_lines(baseline: Mapping[str, Any]) -> list[str]:
    """A short comparison: what was compared with, how many pairs, the regressions (a few)."""
    rates = [r for r in baseline["pass_rates"] if r["base_decided"] and r["new_decided"]]
    latency = [r for r in baseline["latency"] if r["p_greater"] is not None]
    sources = baseline["sources"]
    where = sources[0] if len(sources) == 1 else f"{len(sources)} sources"
    lines = [f"compared with baseline {where} ({fmt.count(baseline['runs'])} run(s), "
             f"{fmt.count(baseline['records'])} records): {len(rates)} scenario×check pass rates (Wilson), "
             f"{len(latency)} fault×phase latencies (Mann–Whitney U); rules: {', '.join(baseline['rules'])}"
             + ("" if baseline.get("gating") else " (not gating)")]
    slower = sorted((r for r in latency if r["p50_growth"] is not None),
                    key=lambda r: r["p_greater"])[:3]
    if slower:
        lines.append("  most significant latency changes: " + "; ".join(
            f"{r['fault']} {r['phase']} p50 {fmt.ms(r['base_p50'])} → {fmt.ms(r['new_p50'])} ms "
            f"(p={r['p_greater']:.2g})" for r in slower))
    regressions = baseline["regressions"]
    if not regressions:
        lines.append("  no regression")
        return lines
    if baseline.get("gating"):  # the gate's failure lines below are these regressions
        lines.append(f"  {len(regressions)} regression(s), listed under the CI gate below")
        return lines
    lines.append(f"  {len(regressions)} regression(s):")
    lines += [f"    {_cut(line, 160)}" for line in regressions[:TERMINAL_REGRESSION_ROWS]]
    if len(regressions) > TERMINAL_REGRESSION_ROWS:
        lines.append(f"    … {len(regressions) - TERMINAL_REGRESSION_ROWS} more in summary.json (baseline.regressions)")
    return lines

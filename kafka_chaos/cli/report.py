"""`kafka-chaos report RESULTS_DIR... [--out DIR] [--master URL] [--min-pass-rate R]
[--max-latency FAULT:PHASE:STAT=MS ...] [--baseline DIR_OR_SUMMARY ... [--max-regression RULE ...]] [--no-cache]`:
aggregate runs with Spark, compare them with a baseline, write the report, print a compact table;
exit 1 when a CI gate fails, 2 on bad arguments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "report",
        help="aggregate results dirs into summary.json, Parquet tables and report.html",
        description="Aggregate the records.jsonl of one or many runs (a run's dir, a dir of runs, or a "
                    "records.jsonl file) with Spark; write summary.json, Parquet tables and a "
                    "self-contained report.html; print a compact table.",
    )
    parser.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="run dir, dir of runs, or records.jsonl")
    parser.add_argument("--out", metavar="DIR",
                        help="output dir (default: RESULTS_DIR/report for one dir, ./report for several)")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master (default: local[2]), or a running Spark Connect server: sc://HOST:PORT "
                             "(`kafka-chaos spark up` starts one; it must read the results dirs at the same paths)")
    parser.add_argument("--min-pass-rate", metavar="R",
                        help="exit 1 when the overall pass rate of decided checks is under R (0..1)")
    parser.add_argument("--max-latency", metavar="FAULT:PHASE:STAT=MS", action="append", default=[],
                        help="exit 1 when a latency statistic exceeds MS, e.g. hard_kill:election:p99=500 "
                             "(FAULT may be '*'; STAT: p50, p90, p99, max); repeatable")
    parser.add_argument("--baseline", metavar="DIR_OR_SUMMARY", action="append", default=[],
                        help="compare with an earlier run: a results dir (or dir of runs), a records.jsonl or a "
                             "summary.json an earlier report wrote; repeatable (together: one window)")
    parser.add_argument("--max-regression", metavar="RULE", action="append", default=[],
                        help="exit 1 on a regression against --baseline: 'pass_rate[:ci=0.95]' (Wilson intervals "
                             "of a scenario x check no longer overlap, the new one below) or "
                             "'[FAULT:PHASE:]STAT=PCT%%[,p<ALPHA]', e.g. 'hard_kill:election:p99=20%%,p<0.01' "
                             "(STAT grew by more than PCT %% and the one-sided Mann-Whitney U test gives "
                             "p < ALPHA, default 0.01; FAULT, PHASE may be '*'); repeatable")
    parser.add_argument("--no-cache", action="store_true",
                        help="read every records.jsonl again and keep nothing: by default each file's partial "
                             "aggregates are kept (report-partials in the kafka-chaos cache dir, up to 2 GiB) and a "
                             "later report reads only the files it has not seen")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kafka_chaos.results.report import default_out, run_report

    out = Path(args.out) if args.out else default_out(args.results_dirs)
    summary = run_report(
        args.results_dirs,
        out,
        master=args.master,
        min_pass_rate=args.min_pass_rate,
        max_latency=args.max_latency,
        baseline=args.baseline,
        max_regression=args.max_regression,
        use_cache=not args.no_cache,
    )
    print(summary.terminal)
    if not summary.ok:
        print(f"kafka-chaos: CI gate failed ({len(summary.gate_failures)} condition(s), listed above)",
              file=sys.stderr)
    return summary.exit_code

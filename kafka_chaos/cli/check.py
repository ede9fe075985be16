"""`kafka-chaos check RESULTS_DIR... [--out DIR]`: run the checks again over stored histories.

Reads each results dir's ``history.jsonl`` (what every step observed), runs today's check
registry and oracle over it (:func:`scenarios.checks.registry.check_history`), writes
``OUT/records.jsonl`` and ``OUT/run.json``, says which verdicts differ from the records stored
beside the history, and ends with the Spark report. With unchanged checks the records are the
stored ones again; with a corrected oracle or a new check, this is how it applies to old runs.
Exit 0 only when every re-checked verdict passed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from kafka_chaos.common.errors import UsageError

SHOWN_CHANGES = 20


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "check", help="re-run the checks over stored histories (history.jsonl) and write new records",
        description="Re-run today's checks and oracle over the observations stored in RESULTS_DIR/history.jsonl; "
                    "write records and the report into --out; list the verdicts that changed.")
    parser.add_argument("results_dirs", nargs="+", type=Path, metavar="RESULTS_DIR",
                        help="a results dir of `kafka-chaos run` (holding history.jsonl)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where the new records and report go [default: check-<UTC time>]")
    parser.add_argument("--no-report", action="store_true", help="skip the Spark report at the end")
    parser.set_defaults(func=run)


def _histories(dirs: list[Path]) -> list[Path]:
    from kafka_chaos.scenarios.history.observations import HISTORY_FILE

    paths = []
    for d in dirs:
        path = d / HISTORY_FILE if d.is_dir() else d
        if not path.is_file():
            raise UsageError(f"{d}: no {HISTORY_FILE} here (a results dir of `kafka-chaos run` has one)")
        paths.append(path)
    return paths


def run(args: argparse.Namespace) -> int:
    from kafka_chaos.results.verdicts import verdict_changes
    from kafka_chaos.records.writer import RecordWriter, read_records
    from kafka_chaos.scenarios.checks.registry import check_history, to_records
    from kafka_chaos.scenarios.history.observations import HistoryProblem, Observation, read_history

    histories = _histories(list(args.results_dirs))
    out = args.out or Path(f"check-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    if out.resolve() in {p.parent.resolve() for p in histories}:
        raise UsageError(f"--out {out}: is an input dir; the new records would mix with the stored ones")
    observations: list[Observation] = []
    problems: list[HistoryProblem] = []
    for path in histories:
        for item in read_history(path):
            if isinstance(item, HistoryProblem):
                problems.append(item)
            else:
                observations.append(item)
    for p in problems:
        print(f"{p.path}:{p.line}: skipped: {p.error}")
    print(f"re-checking {len(observations)} observation(s) from {len(histories)} history file(s)", flush=True)
    passed = failed = unknown = 0
    new_records = []
    with RecordWriter(out) as writer:
        for obs, results in check_history(observations):
            records = to_records(obs, results)
            writer.write_all(records)
            new_records += records
            verdicts = [r.passed for r in results if not r.is_measurement]
            passed += sum(v is True for v in verdicts)
            failed += sum(v is False for v in verdicts)
            unknown += sum(v is None for v in verdicts)
        writer.write_run_info(_run_info(histories, out, len(observations), passed, failed, unknown))
    stored = [r for path in histories if (path.parent / "records.jsonl").is_file()
              for r in read_records(path.parent).records]
    changes = verdict_changes(stored, new_records)
    print(f"{passed} passed, {failed} failed, {unknown} unknown; "
          f"{len(changes)} verdict(s) differ from the stored records; records in {out / 'records.jsonl'}")
    for change in changes[:SHOWN_CHANGES]:
        print(f"  {change.describe()}")
    if len(changes) > SHOWN_CHANGES:
        print(f"  … and {len(changes) - SHOWN_CHANGES} more")
    if not args.no_report:
        from kafka_chaos.app.runs import write_report

        write_report(out)
    return 0 if failed == 0 and unknown == 0 and observations else 1


def _run_info(histories: list[Path], out: Path, observations: int, passed: int, failed: int,
              unknown: int) -> dict[str, Any]:
    return {"command": "check", "histories": [str(p) for p in histories], "out": str(out),
            "observations": observations, "passed": passed, "failed": failed, "unknown": unknown,
            "checked_at": time.time()}

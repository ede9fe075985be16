"""Where a report's baseline comes from: ``--baseline PATH`` (repeatable; several = a window).

A PATH is a results directory (a run's, or a directory of runs: its records are aggregated again
by the same Spark job as this run's), a records.jsonl file, or a ``summary.json`` an earlier
report wrote (or a directory holding only one, e.g. ``RESULTS_DIR/report``).  Every source
becomes a :class:`results.comparison.Side`; a window is their sum.  Bad paths are refused before
any JVM starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_chaos.common.errors import UsageError
from kafka_chaos.results.comparison import Side, outcomes_from_pass_rates, samples_from_document, value_counts_from_spark_rows
from kafka_chaos.results.inputs import locate_inputs, record_files

SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class BaselineSources:
    record_files: tuple[Path, ...]  # aggregated together with Spark
    summaries: tuple[tuple[Path, Side], ...]  # summary.json files, already read

    @property
    def names(self) -> list[str]:
        return [str(p) for p in self.record_files] + [str(p) for p, _ in self.summaries]


def locate_baseline(paths: Iterable[str | os.PathLike[str]]) -> BaselineSources | None:
    """None without ``--baseline``; UsageError (one line) for a path that holds no baseline."""
    files: list[Path] = []
    summaries: list[tuple[Path, Side]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"--baseline {path}: not found")
        if path.is_file() and path.suffix == ".json":
            summaries.append((path, side_from_summary(path)))
            continue
        found = record_files(locate_inputs([path])) if path.is_dir() or path.is_file() else []
        found = [f for f in found if f.stat().st_size > 0]
        if found:
            files += found
        elif path.is_dir() and (path / SUMMARY_FILE).is_file():
            summaries.append((path / SUMMARY_FILE, side_from_summary(path / SUMMARY_FILE)))
        else:
            raise UsageError(f"--baseline {path}: no records.jsonl (with records) or {SUMMARY_FILE} in it or below it")
    if not files and not summaries:
        return None
    return BaselineSources(tuple(dict.fromkeys(files)), tuple(summaries))


def side_from_summary(path: Path) -> Side:
    """A summary.json as a baseline; it must carry ``latency_samples`` (reports since baselines)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--baseline {path}: not a readable summary.json ({exc})") from None
    if not isinstance(document, dict) or "pass_rates" not in document or "totals" not in document:
        raise UsageError(f"--baseline {path}: not a kafka-chaos summary.json (no pass_rates/totals)")
    if "latency_samples" not in document:
        raise UsageError(f"--baseline {path}: written by a report older than baselines (no latency_samples); "
                         "pass the results directory instead")
    return side_of(document["pass_rates"], samples_from_document(document["latency_samples"]), document["totals"])


def side_from_aggregates(pass_rates: Sequence[Mapping[str, Any]], latency_values: Sequence[Mapping[str, Any]],
                         totals: Mapping[str, Any]) -> Side:
    return side_of(pass_rates, value_counts_from_spark_rows(latency_values), totals)


def side_of(pass_rates: Sequence[Mapping[str, Any]], samples: Any, totals: Mapping[str, Any]) -> Side:
    return Side(outcomes_from_pass_rates(pass_rates), samples, int(totals.get("runs") or 0),
                int(totals.get("records") or 0))


def window(sides: Iterable[Side]) -> Side:
    total = Side()
    for side in sides:
        total = total.merged(side)
    return total

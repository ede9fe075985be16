"""Which records.jsonl files a report reads, and what is wrong with the inputs that have none.

A RESULTS_DIR is a run's directory (holding records.jsonl), a directory of many runs (every
records.jsonl below it is read: months of nightly runs in one report), or a records.jsonl file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.common.errors import UsageError
from kafka_chaos.records.writer import RECORDS_FILE


@dataclass(frozen=True)
class InputDir:
    path: Path
    files: tuple[Path, ...]
    problem: str | None = None  # why nothing (or not everything) is read from it


def locate_inputs(paths: Iterable[str | os.PathLike[str]]) -> list[InputDir]:
    """Resolve each argument; a missing or empty input becomes an InputDir with a problem.

    Raises UsageError when no argument exists at all (a typo, not a report to write).
    """
    inputs = [_locate(Path(p)) for p in paths]
    if not inputs:
        raise UsageError("no RESULTS_DIR given")
    if all(not item.path.exists() for item in inputs):
        missing = ", ".join(str(item.path) for item in inputs)
        raise UsageError(f"results dir not found: {missing}")
    return inputs


def record_files(inputs: Sequence[InputDir]) -> list[Path]:
    """Every file to read, once, in argument order."""
    seen: dict[Path, None] = {}
    for item in inputs:
        for path in item.files:
            seen.setdefault(path.resolve(), None)
    return list(seen)


def empty_file_problems(files: Iterable[Path]) -> list[str]:
    return [f"{path}: empty (no records)" for path in files if path.stat().st_size == 0]


def _locate(path: Path) -> InputDir:
    if not path.exists():
        return InputDir(path, (), "does not exist")
    if path.is_file():
        return InputDir(path, (path,))
    if not path.is_dir():
        return InputDir(path, (), "is neither a directory nor a file")
    own = path / RECORDS_FILE
    if own.is_file():
        return InputDir(path, (own,))
    found = tuple(sorted(p for p in path.rglob(RECORDS_FILE) if p.is_file()))
    if not found:
        return InputDir(path, (), f"no {RECORDS_FILE} in it or below it")
    return InputDir(path, found)

"""Durable append of records to ``RESULTS_DIR/records.jsonl`` and reading them back.

Every record is flushed and fsync'ed before ``write`` (or, for a batch such as the records of
one observation, ``write_all``) returns: a run killed by a fault it injected itself (or by
Ctrl-C) keeps every record it reported, at worst with a truncated last line, which the report
counts as malformed instead of failing.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TextIO

from kafka_chaos.records.schema import READABLE_VERSIONS, Record

RECORDS_FILE = "records.jsonl"
RUN_INFO_FILE = "run.json"


class RecordSink(Protocol):
    """Where records go: a :class:`RecordWriter`, or a tee that also keeps them."""

    def write(self, record: Record) -> None: ...

    def write_all(self, records: Iterable[Record]) -> None: ...


class RecordWriter:
    """Thread-safe appender: producer threads and the scenario loop may write concurrently."""

    def __init__(self, results_dir: str | os.PathLike[str], filename: str = RECORDS_FILE) -> None:
        """``filename``: another name keeps records out of reports that gather every
        ``records.jsonl`` below a directory (the explorer's shrink trials)."""
        self.results_dir = Path(results_dir)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.results_dir / filename
        self._lock = threading.Lock()
        self._file: TextIO | None = open(self.path, "a", encoding="utf-8")
        self.written = 0

    def write(self, record: Record) -> None:
        self.write_all((record,))

    def write_all(self, records: Iterable[Record]) -> None:
        """Append ``records`` in order, with one fsync for all of them (a step's records are
        hundreds: one fsync each cost about 2 % of an explore's wall time)."""
        lines = []
        for record in records:
            if not isinstance(record, Record):
                raise TypeError(f"RecordWriter.write takes a records.schema.Record, got {type(record).__name__}")
            lines.append(record.to_json() + "\n")
        if not lines:
            return
        with self._lock:
            if self._file is None:
                raise ValueError(f"RecordWriter for {self.path} is closed")
            self._file.write("".join(lines))
            self._file.flush()
            os.fsync(self._file.fileno())
            self.written += len(lines)

    def write_run_info(self, info: Mapping[str, Any]) -> Path:
        """Write ``run.json`` (command line, seed, config...) atomically: replace, never half-written."""
        target = self.results_dir / RUN_INFO_FILE
        temporary = target.with_name(f".{RUN_INFO_FILE}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(dict(info), out, indent=2, sort_keys=True, default=str)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
        return target

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True)
class BadLine:
    line_number: int  # 1-based
    reason: str
    text: str  # the line, cut to 200 characters


@dataclass(frozen=True)
class ReadResult:
    records: list[Record] = field(default_factory=list)
    malformed: list[BadLine] = field(default_factory=list)
    rejected: list[BadLine] = field(default_factory=list)  # readable JSON, unreadable schema_version


def read_records(path: str | os.PathLike[str]) -> ReadResult:
    """Read a results dir (or a records.jsonl file) in plain Python, sorting out the bad lines.

    Meant for small files and tests; the report reads with Spark (``results.aggregate``).
    """
    source = Path(path)
    if source.is_dir():
        source = source / RECORDS_FILE
    result = ReadResult()
    with open(source, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            _sort_line(number, line.rstrip("\n"), result)
    return result


def iter_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    yield from read_records(path).records


def _sort_line(number: int, line: str, result: ReadResult) -> None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        result.malformed.append(BadLine(number, f"not JSON ({exc.msg})", line[:200]))
        return
    if not isinstance(data, dict):
        result.malformed.append(BadLine(number, "not a JSON object", line[:200]))
        return
    version = data.get("schema_version")
    if version is not None and (type(version) is not int):  # noqa: E721 - bool is not a version
        result.malformed.append(BadLine(number, f"schema_version {version!r} is not an integer", line[:200]))
        return
    if version is not None and version not in READABLE_VERSIONS:
        result.rejected.append(BadLine(number, f"schema_version {version!r} is not readable", line[:200]))
        return
    try:
        result.records.append(Record.from_dict(data))
    except (TypeError, ValueError) as exc:
        result.malformed.append(BadLine(number, str(exc), line[:200]))

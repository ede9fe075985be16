"""Each input file's partial aggregates, kept between reports (large reports).

A report over many runs — a nightly window, a baseline — reads the same records.jsonl files
again and again, and parsing them is most of its cost (docs/report.md: ~22 s of Spark parsing
alone per 3M records on 2 cores).  The one pass's result splits by input file
(:func:`results.aggregate.split_by_file`), and every table the report shows is a merge of such
partials, so each file's share is stored here as an Arrow IPC file and a later report reads only
the files it has not seen: nothing at all, not even a JVM, when it has seen them all.

An entry is keyed by the file's absolute path, size, modification time and inode (a file
appended to, rewritten or replaced is another key), and by the code whose result it holds
(:data:`CODE_MODULES`, pyspark's and pyarrow's versions).  Entries are written atomically
(temp file + rename: concurrent reports never read half an entry) and the least recently used
ones are removed beyond :data:`LIMIT_BYTES`.  The cache never fails a report: an entry that
cannot be read is a miss and is removed, a directory that cannot be written leaves the report
uncached (one warning).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_chaos.results.spark_cds import cache_root

log = logging.getLogger(__name__)

# The modules whose code decides what a partial holds: the query (aggregate.py), the record
# layout it parses (records/schema.py), the failed checks' columns (tables.FAILURE_COLUMNS) and
# which time ledgers count (scenarios/model/ledger.py, scenarios/checks/time_ledger.py).
CODE_MODULES = ("results/aggregate.py", "records/schema.py", "results/tables.py", "scenarios/model/ledger.py",
                "scenarios/checks/time_ledger.py")  # under kafka_chaos/
DIR_ENV = "KAFKA_CHAOS_REPORT_CACHE"  # where the entries go (default: <cache root>/report-partials)
LIMIT_BYTES = 2 << 30  # 2 GiB; beyond it, the least recently used entries go
SUFFIX = ".arrow"
_KEY_METADATA = b"kafka-chaos.key"
_EXAMPLES_METADATA = b"kafka-chaos.examples"


@dataclass
class FilePartials:
    """Partial-aggregate rows (:func:`results.aggregate.partials`, as Arrow) and the problem
    examples (``(source, status) -> text``) of one or more input files."""

    table: Any  # pyarrow.Table
    examples: dict[tuple[str, str], str] = field(default_factory=dict)


def code_version() -> str:
    import pyarrow  # type: ignore[import-untyped]
    import pyspark

    here = Path(__file__).parents[1]
    digest = hashlib.sha256(f"{pyspark.__version__}\0{pyarrow.__version__}".encode())
    for name in CODE_MODULES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()


class PartialsCache:
    """The per-file partials below ``root`` (default: ``$KAFKA_CHAOS_REPORT_CACHE``, else
    ``<cache root>/report-partials``)."""

    def __init__(self, root: Path | None = None, limit_bytes: int = LIMIT_BYTES) -> None:
        override = os.environ.get(DIR_ENV)
        self.root = root if root is not None else Path(override) if override else cache_root() / "report-partials"
        self.limit_bytes = limit_bytes
        self._code = code_version()
        self._writable = True

    def key(self, path: Path) -> str | None:
        """What identifies ``path``'s current content and this code (None: the file is gone)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return "\0".join([os.path.abspath(path), str(st.st_size), str(st.st_mtime_ns), str(st.st_ino), self._code])

    def _entry(self, key: str) -> Path:
        return self.root / (hashlib.sha256(key.encode()).hexdigest()[:40] + SUFFIX)

    def has(self, path: Path) -> bool:
        key = self.key(path)
        return key is not None and self._entry(key).is_file()

    def missing(self, paths: Sequence[Path]) -> list[Path]:
        return [path for path in paths if not self.has(path)]

    def load(self, path: Path) -> FilePartials | None:
        """``path``'s partials if an entry for its current content exists and reads back whole."""
        import pyarrow as pa

        key = self.key(path)
        if key is None:
            return None
        entry = self._entry(key)
        try:
            with pa.OSFile(str(entry)) as source:  # read whole: the table outlives the file
                table = pa.ipc.open_file(source).read_all()
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException) as exc:
            log.warning("report cache: %s unreadable (%s); it is removed and %s parsed again", entry, exc, path)
            _remove(entry)
            return None
        metadata = table.schema.metadata or {}
        if metadata.get(_KEY_METADATA) != key.encode():  # an entry-name collision: not this file's
            return None
        examples = {(source, status): text for source, status, text in json.loads(metadata[_EXAMPLES_METADATA])}
        _touch(entry)  # recently used: pruned last
        return FilePartials(table.replace_schema_metadata(None), examples)

    def load_many(self, paths: Sequence[Path]) -> dict[Path, FilePartials]:
        found = {path: self.load(path) for path in paths}
        return {path: partials for path, partials in found.items() if partials is not None}

    def store(self, path: Path, partials: FilePartials, read_key: str | None) -> None:
        """Keep ``partials`` as ``path``'s.  ``read_key``: :meth:`key` taken before the query
        read the file; a file that changed since (a run still appending to it) is not stored:
        its partials may hold more lines than that key's content, or fewer than the current one."""
        import pyarrow as pa

        key = self.key(path)
        if key is None or key != read_key or not self._writable:
            return
        examples = json.dumps([[source, status, text] for (source, status), text in sorted(partials.examples.items())])
        table = partials.table.replace_schema_metadata({_KEY_METADATA: key.encode(), _EXAMPLES_METADATA: examples})
        compression = "zstd" if pa.Codec.is_available("zstd") else None
        entry = self._entry(key)
        temp: Path | None = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".partial-", suffix=".tmp", delete=False) as out:
                temp = Path(out.name)
                with pa.ipc.new_file(out, table.schema,
                                     options=pa.ipc.IpcWriteOptions(compression=compression)) as writer:
                    writer.write_table(table)
            os.replace(temp, entry)
        except OSError as exc:
            self._writable = False
            log.warning("report cache: cannot write below %s (%s); this report is not cached", self.root, exc)
            if temp is not None:
                _remove(temp)
            return
        self.prune()

    def prune(self) -> None:
        """Remove the least recently used entries until the rest fit :attr:`limit_bytes`."""
        entries = []
        for entry in self.root.glob("*" + SUFFIX):
            try:
                st = entry.stat()
            except OSError:
                continue
            entries.append((st.st_mtime_ns, st.st_size, entry))
        total = sum(size for _, size, _ in entries)
        for _, size, entry in sorted(entries):
            if total <= self.limit_bytes:
                break
            _remove(entry)
            total -= size


def merged(parts: Sequence[FilePartials]) -> FilePartials:
    """Several files' partials as one (rows concatenated, examples united)."""
    import pyarrow as pa

    examples: Mapping[tuple[str, str], str] = {key: text for part in parts for key, text in part.examples.items()}
    return FilePartials(pa.concat_tables([part.table for part in parts]), dict(examples))


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass

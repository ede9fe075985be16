"""A class-data-sharing archive for the report's Spark driver JVM (report speed).

Starting Spark loads and verifies some 20,000 classes; a dynamic AppCDS archive (JDK 13+,
``-XX:ArchiveClassesAtExit``) holds them pre-parsed and halves the session start-up (measured
on this 2-core machine: 14.6 s -> 7.9 s).  It is built once — ``python -m kafka_chaos.results.spark_cds``,
which ``scripts/setup.sh`` runs — by a JVM that runs a small report's aggregation and exits
cleanly, which is when the JVM writes the archive.  The file is keyed by the java binary and
pyspark's jars, so another JDK or Spark version finds none; a JVM given an archive that does
not match its class path warns (into spark.log) and starts without it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

CACHE_ENV = "KAFKA_CHAOS_CACHE"  # the same override as harness.distribution's (results/ may not import it)
JVM_EXIT_TIMEOUT_S = 180.0  # writing the archive (~180 MB) at exit takes a while on a busy machine


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "kafka-chaos"


def _java() -> str | None:
    import shutil

    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    return shutil.which("java")


# The modules whose Spark queries decide which classes the archive holds: when they change, so
# may the classes a report loads (the one-pass query loads Arrow's and the
# higher-order functions' classes the earlier queries never did), and a new archive is built.
QUERY_MODULES = ("aggregate.py",)


def archive_path() -> Path | None:
    """Where this JDK + pyspark + query code's archive lives (None without a java to key it by)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    real = os.path.realpath(java)
    st = os.stat(real)
    jars = sorted(p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    queries = [hashlib.sha256((Path(__file__).parent / name).read_bytes()).hexdigest() for name in QUERY_MODULES]
    text = "\0".join([real, str(st.st_size), str(st.st_mtime_ns), pyspark.__version__, *jars, *queries])
    return cache_root() / "cds" / f"spark-{pyspark.__version__}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.jsa"


def archive_options() -> list[str]:
    """``-XX:SharedArchiveFile=...`` when the archive exists, else nothing."""
    path = archive_path()
    return [f"-XX:SharedArchiveFile={path}"] if path is not None and path.is_file() else []


def build_archive() -> Path | None:
    """Build the archive unless it exists; its path (None: no java)."""
    from kafka_chaos.results.aggregate import aggregate
    from kafka_chaos.results.spark_session import start_spark
    from kafka_chaos.results.synthetic import write_synthetic_results

    path = archive_path()
    if path is None or path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        with tempfile.TemporaryDirectory(prefix="spark-cds-") as work:
            spark = start_spark(None, log_path=Path(work) / "spark.log", cds=False,
                                extra_java_options=[f"-XX:ArchiveClassesAtExit={partial}"])
            try:
                # A small report's whole aggregation (parse, every aggregate, Parquet tables), so the
                # classes it loads are the ones archived — on both the small and the large input path.
                records = write_synthetic_results(Path(work) / "in", 2_000, seed=1)
                aggregate(spark, [records], Path(work) / "tables")
            finally:
                _stop_jvm(spark)
        if not partial.is_file():
            raise RuntimeError(f"the JVM wrote no archive ({partial}); see -Xlog:cds in its output")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)  # a failed build's half-written ~180 MB
    _remove_older_archives(path)
    return path


def _remove_older_archives(kept: Path) -> None:
    """Archives of an earlier JDK, pyspark or query code: ~180 MB each, never used again."""
    for other in kept.parent.glob("spark-*.jsa"):
        if other != kept:
            other.unlink(missing_ok=True)


def _stop_jvm(spark: object) -> None:
    """Stop Spark, then the gateway JVM itself, and wait until it has exited (and written the
    archive): pyspark keeps the JVM until its stdin closes."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # noqa: SLF001 - no public handle on the JVM process
    spark.stop()  # type: ignore[attr-defined]
    if gateway is None:
        return
    proc = gateway.proc
    gateway.shutdown()
    if proc.stdin is not None:
        proc.stdin.close()
    proc.wait(timeout=JVM_EXIT_TIMEOUT_S)
    SparkContext._gateway = None  # noqa: SLF001 - a later session must start a new JVM
    SparkContext._jvm = None  # noqa: SLF001


def main() -> int:
    """Set-up's step: never fatal, since the archive only speeds the report's start-up up; a
    build that fails for any reason (another JVM, a JVM flag, a full disk, Spark itself) is one
    warning, and reports start Spark without the archive."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        path = build_archive()
    except Exception as exc:  # noqa: BLE001 - any failure of the optional build is only a warning
        log.warning("no Spark class-data archive (%s: %s); reports start Spark without it",
                    type(exc).__name__, " ".join(str(exc).split())[:500])
        return 0
    print(f"Spark class-data archive: {path}" if path else "no java: no Spark class-data archive", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

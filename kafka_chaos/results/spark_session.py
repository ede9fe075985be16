"""A quiet, small Spark session for the report.

Spark's JVM prints banners and WARN lines (hostname, native-hadoop, incubator modules, progress
bars) on the terminal it inherits.  The JVM is started with its stdout/stderr pointed at a log
file instead, and with a log4j2 configuration at ERROR, so the user sees only the report.

A master of the form ``sc://HOST:PORT`` starts no JVM here: the session is a Spark Connect
client of a server that is already running (:mod:`results.spark_connect`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.common.errors import HarnessError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "2g"  # 3M records aggregate in well under this; the machine is shared
MAX_RESULT_SIZE = "768m"  # well under DEFAULT_DRIVER_MEMORY: the results are held twice while collected
SHUFFLE_PARTITIONS = 2  # aggregates are small: the default 200 partitions would be 200 tiny tasks per job
QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")


def java_options(*, cds: bool = True, small_input: bool = False, extra: Sequence[str] = ()) -> list[str]:
    """The driver JVM's options: quiet logging; the class-data archive when built
    (:mod:`results.spark_cds`); for a small input, the C1 compiler only — a report of a few
    thousand records is over before C2's optimised code would pay for its compilation."""
    options = [f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}"]
    if cds:
        from kafka_chaos.results.spark_cds import archive_options

        options += archive_options()
    if small_input:
        options.append("-XX:TieredStopAtLevel=1")
    return options + list(extra)


def spark_config(master: str | None = None, driver_memory: str = DEFAULT_DRIVER_MEMORY, *,
                 java: Sequence[str] | None = None) -> dict[str, str]:
    return {
        "spark.master": master or DEFAULT_MASTER,
        "spark.app.name": "kafka-chaos-report",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
        # Adaptive execution re-plans a query after each shuffle stage, as a separate job: with
        # 2 fixed shuffle partitions and tiny aggregates it only doubles the jobs.
        "spark.sql.adaptive.enabled": "false",
        # Each Parquet table is committed by renaming its task files once, not twice.
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
        "spark.driver.memory": driver_memory,
        # Collected results past this abort the job with an error the report prints: past the
        # heap instead, the driver ran out of memory and pyspark's toArrow waited forever (the
        # one-pass partials of 3M records are ~200 MB).
        "spark.driver.maxResultSize": MAX_RESULT_SIZE,
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": " ".join(java_options() if java is None else java),
        # The report is a batch job started from a terminal: no need for an IPv6/hostname lookup
        # dance, bind the driver to loopback unless a remote master needs otherwise.
        **({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
           if (master or DEFAULT_MASTER).startswith("local") else {}),
    }


def start_spark(master: str | None = None, *, log_path: str | os.PathLike[str] | None = None,
                driver_memory: str = DEFAULT_DRIVER_MEMORY, cds: bool = True, small_input: bool = False,
                extra_java_options: Sequence[str] = ()) -> "SparkSession":
    """Start (or reuse) the session; the JVM's own output goes to ``log_path`` (default: discarded).
    ``cds``, ``small_input``, ``extra_java_options``: see :func:`java_options`.  An ``sc://``
    master: a Spark Connect session instead (no JVM here; the other arguments are the server's
    business)."""
    from kafka_chaos.results.spark_connect import connect_session, is_connect_url

    if master is not None and is_connect_url(master):
        return connect_session(master)
    from pyspark.sql import SparkSession

    # py4j logs every gateway connection at INFO, which the CLI's logging setup would show.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    builder = SparkSession.builder
    java = java_options(cds=cds, small_input=small_input, extra=extra_java_options)
    for key, value in spark_config(master, driver_memory, java=java).items():
        builder = builder.config(key, value)
    started = time.monotonic()
    try:
        with _jvm_output_to(log_path):
            spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - py4j/pyspark raise many kinds; the user needs one line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = f" (Spark's output: {log_path})" if log_path is not None else ""
        raise HarnessError(f"Spark did not start on master {master or DEFAULT_MASTER!r}: {reason}{where}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    log.debug("Spark session on %s ready in %.1f s", spark.sparkContext.master, time.monotonic() - started)
    return spark


@contextlib.contextmanager
def spark_session(master: str | None = None, *, log_path: str | os.PathLike[str] | None = None,
                  driver_memory: str = DEFAULT_DRIVER_MEMORY, small_input: bool = False) -> Iterator["SparkSession"]:
    spark = start_spark(master, log_path=log_path, driver_memory=driver_memory, small_input=small_input)
    try:
        yield spark
    finally:
        spark.stop()


@contextlib.contextmanager
def _jvm_output_to(log_path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Point fds 1 and 2 at ``log_path`` while the JVM is forked, so it inherits the file.

    Python's own ``sys.stdout``/``sys.stderr`` objects are flushed first and keep working: only
    the file descriptors are swapped, and restored before returning.
    """
    target = os.devnull if log_path is None else os.fspath(log_path)
    if log_path is not None:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    sink = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for fd in (1, 2):
            os.dup2(sink, fd)
        yield
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(sink)

"""Set-up's Spark class-data archive step (``python -m kafka_chaos.results.spark_cds``) is an optimisation:
when the archive cannot be built it warns once and set-up goes on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_failing_spark_archive_build_is_one_warning_and_exit_0(tmp_path: Path) -> None:
    # -Xshare:off from the environment: the JVM runs, but cannot dump an archive, so the
    # Spark JVM that would build it does not start at all.
    env = dict(os.environ, KAFKA_CHAOS_CACHE=str(tmp_path / "cache"), JAVA_TOOL_OPTIONS="-Xshare:off")
    done = subprocess.run([sys.executable, "-m", "kafka_chaos.results.spark_cds"], capture_output=True, text=True,
                          timeout=300, env=env, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if line.startswith("no Spark class-data archive (")], \
        done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "cache").rglob("*.jsa*"))

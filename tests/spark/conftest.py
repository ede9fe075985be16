"""One local Spark session for the whole tests/spark suite (start-up costs ~5-10 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from kafka_chaos.results.spark_session import start_spark

    # small_input: the C1 compiler only, as a one-run report's JVM has.  The suite's inputs are a
    # few thousand records; C2's compilations cost more CPU than they win back on this 2-core machine.
    session = start_spark("local[2]", log_path=tmp_path_factory.mktemp("spark") / "spark.log", small_input=True)
    yield session
    session.stop()

"""One local Spark session for the whole tests/spark suite (start-up costs ~10 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from results.spark_session import start_spark

    session = start_spark("local[2]", log_path=tmp_path_factory.mktemp("spark") / "spark.log")
    yield session
    session.stop()

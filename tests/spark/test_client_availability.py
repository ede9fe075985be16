"""The client_availability measurements in the Spark aggregation: availability per fault, and
their client phases beside the leader-switch phases in the latency percentiles."""

from __future__ import annotations

from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from results import aggregate as A
from tests.spark.helpers import record, records_frame


def _measured(fault: str, produce: float, consume: float | None, e2e_p99: float):
    return record(kind="measurement", check="client_availability", passed=None, fault=fault,
                  observed={"produce_availability": produce, "consume_availability": consume, "windows": 5},
                  latency_ms={"produce_unavailable": (1 - produce) * 5000, "e2e_p99": e2e_p99, "e2e_p999": None})


def test_availability_per_fault_and_client_phases_in_the_percentiles(spark):
    frame = records_frame(spark, [
        _measured("hard_kill", 0.6, 0.8, 5000.0), _measured("hard_kill", 1.0, None, 90.0),
        _measured("controlled_shutdown", 1.0, 1.0, 40.0),
        record(kind="measurement", check="latency", passed=None, latency_ms={"election": 10.0}),
        record(),  # a check: not an availability sample
    ])
    assertDataFrameEqual(A.availability(frame), [
        Row(fault="controlled_shutdown", count=1, produce_mean=1.0, produce_min=1.0, consume_mean=1.0,
            consume_min=1.0),
        Row(fault="hard_kill", count=2, produce_mean=0.8, produce_min=0.6, consume_mean=0.8, consume_min=0.8),
    ], checkRowOrder=True)
    stats = {(r.fault, r.phase): r for r in A.latency_percentiles(A.latency_samples(frame)).collect()}
    assert stats[("hard_kill", "e2e_p99")]["count"] == 2 and stats[("hard_kill", "e2e_p99")]["max"] == 5000.0
    assert ("hard_kill", "e2e_p999") not in stats  # a null phase is no sample
    phases = [r.phase for r in A.latency_percentiles(A.latency_samples(frame)).collect() if r.fault == "hard_kill"]
    assert phases == ["election", "produce_unavailable", "e2e_p99"]  # leader-switch phases first

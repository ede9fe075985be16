"""The client_availability measurements in the Spark aggregation: availability per fault, and
their client phases beside the leader-switch phases in the latency percentiles; the
controller_metrics measurements' table per fault."""

from __future__ import annotations

from tests.spark.helpers import record, tables_of


def _measured(fault: str, produce: float, consume: float | None, e2e_p99: float):
    return record(kind="measurement", check="client_availability", passed=None, fault=fault,
                  observed={"produce_availability": produce, "consume_availability": consume, "windows": 5},
                  latency_ms={"produce_outage": (1 - produce) * 5300, "produce_unavailable": (1 - produce) * 5000,
                              "e2e_p99": e2e_p99, "e2e_p999": None})


def test_availability_per_fault_and_client_phases_in_the_percentiles(spark):
    tables = tables_of(spark, [
        _measured("hard_kill", 0.6, 0.8, 5000.0), _measured("hard_kill", 1.0, None, 90.0),
        _measured("controlled_shutdown", 1.0, 1.0, 40.0),
        record(kind="measurement", check="latency", passed=None, latency_ms={"election": 10.0}),
        record(),  # a check: not an availability sample
    ])
    assert tables["availability"] == [
        dict(fault="controlled_shutdown", count=1, produce_mean=1.0, produce_min=1.0, consume_mean=1.0,
             consume_min=1.0),
        dict(fault="hard_kill", count=2, produce_mean=0.8, produce_min=0.6, consume_mean=0.8, consume_min=0.8),
    ]
    stats = {(r["fault"], r["phase"]): r for r in tables["latency"]}
    assert stats[("hard_kill", "e2e_p99")]["count"] == 2 and stats[("hard_kill", "e2e_p99")]["max"] == 5000.0
    assert ("hard_kill", "e2e_p999") not in stats  # a null phase is no sample
    phases = [r["phase"] for r in tables["latency"] if r["fault"] == "hard_kill"]
    assert phases == ["election", "produce_outage", "produce_unavailable", "e2e_p99"]  # leader-switch phases first
    outage = stats[("hard_kill", "produce_outage")]
    assert (outage["count"], outage["p50"], outage["max"]) == (2, 0.0, 2120.0)  # a step without a stall is a 0


def _controller(fault: str | None, elections: int, election_ms: float, queued: int, queue_ms: float,
                offline_after: float, moved: bool = False, shutdowns: int = 0, shutdown_ms: float = 0.0):
    timer = {"by_broker": {"2": 1}, "mean_ms": None}
    return record(kind="measurement", check="controller_metrics", passed=None, fault=fault, observed={
        "controller_before": 2, "controller_after": 3 if moved else 2,
        "leader_election": {**timer, "count": elections, "total_ms": election_ms},
        "event_queue_time": {**timer, "count": queued, "total_ms": queue_ms},
        "controlled_shutdown": {**timer, "count": shutdowns, "total_ms": shutdown_ms},
        "unclean_elections": {"count": 1 if moved else 0},
        "offline_partitions": {"before": 0.0, "after": offline_after},
        "under_replicated": {"before": 0.0, "after": 9.0}, "under_min_isr": {"before": 0.0, "after": 0.0},
        "event_queue_size": {"before": 0.0, "after": 1.0}})


def test_the_controller_table_sums_counts_and_weights_means_per_fault(spark):
    rows = tables_of(spark, [
        _controller("hard_kill", 1, 100.0, 9, 180.0, 0.0), _controller("hard_kill", 3, 500.0, 1, 20.0, 6.0, moved=True),
        _controller("controlled_shutdown", 0, 0.0, 4, 8.0, 0.0, shutdowns=1, shutdown_ms=250.0),
        record(kind="measurement", check="latency", passed=None, latency_ms={"election": 10.0}),  # not counted
    ])["controller"]
    assert rows == [
        dict(fault="controlled_shutdown", steps=1, controller_moves=0, broker_change_events=0,
             broker_change_mean_ms=None, queued_events=4, queue_mean_ms=2.0, controlled_shutdowns=1,
             shutdown_mean_ms=250.0, unclean_elections=0, offline_max=0, under_replicated_max=9,
             under_min_isr_max=0, queue_size_max=1),
        dict(fault="hard_kill", steps=2, controller_moves=1, broker_change_events=4, broker_change_mean_ms=150.0,
             queued_events=10, queue_mean_ms=20.0, controlled_shutdowns=0, shutdown_mean_ms=None,
             unclean_elections=1, offline_max=6, under_replicated_max=9, under_min_isr_max=0, queue_size_max=1),
    ]

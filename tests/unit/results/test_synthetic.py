"""kafka_chaos.results.synthetic: generated lines are valid records of every kind the report needs."""

from __future__ import annotations

from kafka_chaos.records.schema import LATENCY_PHASES, TXN_PHASES
from kafka_chaos.results.synthetic import write_synthetic_results
from kafka_chaos.records.writer import read_records


def test_generated_records_parse_and_cover_outcomes_and_phases(tmp_path):
    write_synthetic_results(tmp_path, 2_500, seed=3, records_per_run=500)
    result = read_records(tmp_path)
    assert len(result.records) == 2_500 and not result.malformed and not result.rejected
    assert {r.passed for r in result.records if r.kind == "check"} == {True, False, None}
    assert len({r.run_id for r in result.records}) == 5
    phases = {p for r in result.records if r.latency_ms for p, v in r.latency_ms.items() if v is not None}
    # the transactional workload's phases are not generated (the golden aggregates are of these
    # lines): tests/spark/test_transforms.py aggregates them
    assert phases == set(LATENCY_PHASES) - set(TXN_PHASES)


def test_same_seed_same_lines(tmp_path):
    write_synthetic_results(tmp_path / "a", 300, seed=9)
    write_synthetic_results(tmp_path / "b", 300, seed=9)
    assert (tmp_path / "a" / "records.jsonl").read_bytes() == (tmp_path / "b" / "records.jsonl").read_bytes()

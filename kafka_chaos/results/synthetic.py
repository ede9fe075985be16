"""Plausible generated records for the report's tests and benchmark (no cluster needed).

Lines are assembled from pre-serialised fragments instead of ``json.dumps`` per record: the
benchmark writes millions of them and generation must not dominate its wall time.  The output
is ordinary records.jsonl that ``records.writer.read_records`` parses like any other.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.records.schema import FIRST_VERSION
from kafka_chaos.records.writer import RECORDS_FILE

DAY_S = 86_400.0
FIRST_DAY = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class _Shape:
    scenario: str
    fault: str
    checks: tuple[tuple[str, float, float], ...]  # (check, fail probability, unknown probability)
    partitions: int
    session_timeout_ms: int
    detects: bool  # a controlled shutdown moves leaders before the broker's znode goes


_SHAPES = (
    _Shape("leader_hard_kill", "hard_kill",
           (("oracle_leader", 0.02, 0.01), ("oracle_isr", 0.05, 0.02), ("no_acked_loss", 0.01, 0.0)), 6, 6000, True),
    _Shape("controller_hard_kill", "hard_kill",
           (("oracle_leader", 0.03, 0.01), ("controller_moved", 0.02, 0.01)), 12, 18000, True),
    _Shape("controlled_shutdown", "controlled_shutdown",
           (("oracle_leader", 0.0, 0.0), ("no_acked_loss", 0.0, 0.01)), 6, 18000, False),
    _Shape("zk_session_expiry", "session_expiry",
           (("oracle_leader", 0.08, 0.05), ("oracle_isr", 0.10, 0.05)), 3, 6000, True),
    _Shape("unclean_election", "unclean_election",
           (("oracle_leader", 0.15, 0.02), ("data_loss_reported", 0.05, 0.0)), 1, 6000, True),
)
_BACKENDS = ("local", "containers")
_KAFKA_VERSIONS = ("3.9.0", "3.9.1", "3.9.2")
_RUNS_PER_DAY = 3


def synthetic_lines(count: int, seed: int = 0, records_per_run: int = 1000, run_prefix: str = "run") -> Iterator[str]:
    """``count`` JSON lines (with newline): runs of ``records_per_run`` records, 3 runs a day."""
    rng = random.Random(seed)
    produced = 0
    run = 0
    while produced < count:
        in_this_run = min(records_per_run, count - produced)
        yield from _run_lines(rng, f"{run_prefix}-{run:06d}", run, in_this_run)
        produced += in_this_run
        run += 1


def write_synthetic_results(results_dir: str | os.PathLike[str], count: int, seed: int = 0,
                            records_per_run: int = 1000, run_prefix: str = "run") -> Path:
    """Write ``count`` generated records to ``results_dir/records.jsonl`` (appending)."""
    directory = Path(results_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RECORDS_FILE
    with open(path, "a", encoding="utf-8", buffering=1 << 20) as out:
        out.writelines(synthetic_lines(count, seed, records_per_run, run_prefix))
    return path


def _run_lines(rng: random.Random, run_id: str, run: int, count: int) -> Iterator[str]:
    backend = _BACKENDS[run % len(_BACKENDS)]
    kafka_version = _KAFKA_VERSIONS[(run // len(_BACKENDS)) % len(_KAFKA_VERSIONS)]
    run_seed = rng.randrange(1 << 31)
    clock = FIRST_DAY + (run // _RUNS_PER_DAY) * DAY_S + (run % _RUNS_PER_DAY) * 3 * 3600.0
    common = (f'"backend": {json.dumps(backend)}, "brokers": 3, "git_revision": "0123abc", '
              f'"kafka_version": {json.dumps(kafka_version)}, "run_id": {json.dumps(run_id)}, '
              f'"schema_version": {FIRST_VERSION}, "seed": {run_seed}, ')  # version 1: no mode
    emitted = 0
    iteration = 0
    while emitted < count:
        shape = _SHAPES[iteration % len(_SHAPES)]
        for line in _iteration_lines(rng, shape, common, iteration, clock):
            if emitted == count:
                return
            yield line
            emitted += 1
        clock += 20.0
        iteration += 1


def _iteration_lines(rng: random.Random, shape: _Shape, common: str, iteration: int,
                     started: float) -> Iterator[str]:
    finished = round(started + rng.uniform(8.0, 30.0), 3)
    started = round(started, 3)
    per_scenario = (f'"fault": "{shape.fault}", "iteration": {iteration}, "partitions": {shape.partitions}, '
                    f'"scenario": "{shape.scenario}", "session_timeout_ms": {shape.session_timeout_ms}, '
                    f'"started_at": {started!r}, "finished_at": {finished!r}, "target": "broker 2", '
                    f'"tick_time_ms": 500, "timestamps": null, ')
    for check, fail_p, unknown_p in shape.checks:
        draw = rng.random()
        if draw < unknown_p:
            passed, detail = "null", "could not decide: metadata timed out"
        elif draw < unknown_p + fail_p:
            passed, detail = "false", f"expected leader 2, observed {rng.choice((1, 3, -1))}"
        else:
            passed, detail = "true", ""
        yield ('{' + common + per_scenario +
               f'"check": "{check}", "kind": "check", "passed": {passed}, "detail": "{detail}", '
               '"expected": {"leader": 2, "isr": [2, 3]}, "observed": {"leader": 2, "isr": [2, 3]}, '
               '"topic": "t", "partition": 0, "latency_ms": null}\n')
    yield ('{' + common + per_scenario +
           '"check": "latency", "kind": "measurement", "passed": null, "detail": "", '
           '"expected": null, "observed": null, "topic": "t", "partition": 0, '
           f'"latency_ms": {_latency_json(rng, shape)}}}\n')
    produce = round(rng.uniform(0.5, 1.0), 4)
    consume = round(rng.uniform(0.5, 1.0), 4)
    windows = rng.randint(5, 30)
    e2e = sorted(round(rng.lognormvariate(3.0 + i, 0.4), 1) for i in range(3))
    longest = round(rng.lognormvariate(7.5, 0.5), 1)
    # No draw of its own, so the other values stay the ones this seed always gave: the longest
    # silence, when it was a stall (a second or more), less the ack before it.
    outage = round(longest - 20.0, 1) if longest >= 1000.0 else 0.0
    yield ('{' + common + per_scenario +
           '"check": "client_availability", "kind": "measurement", "passed": null, "detail": "", '
           f'"expected": null, "observed": {{"produce_availability": {produce!r}, "consume_availability": {consume!r}, '
           f'"windows": {windows}}}, "topic": "t", "partition": 0, '
           f'"latency_ms": {{"produce_outage": {outage!r}, '
           f'"produce_unavailable": {round((1 - produce) * windows * 1000, 1)!r}, '
           f'"consume_unavailable": {round((1 - consume) * windows * 1000, 1)!r}, '
           f'"unavailable": {longest!r}, "e2e_p50": {e2e[0]!r}, '
           f'"e2e_p99": {e2e[1]!r}, "e2e_p999": {e2e[2]!r}}}}}\n')


def _latency_json(rng: random.Random, shape: _Shape) -> str:
    session = shape.session_timeout_ms
    if shape.detects:
        detection = rng.uniform(2 * session / 3 + 1000, session + 500)
        detection_text = repr(round(detection, 1))
    else:
        detection, detection_text = 0.0, "null"
    election = detection + rng.lognormvariate(3.5, 0.6) * (1 + shape.partitions / 10)
    propagation = election + rng.lognormvariate(3.8, 0.5)
    first_produce = propagation + rng.lognormvariate(4.6, 0.7)
    client_gap = first_produce + rng.lognormvariate(5.0, 0.5)
    return (f'{{"detection": {detection_text}, "election": {round(election, 1)!r}, '
            f'"propagation": {round(propagation, 1)!r}, "first_produce": {round(first_produce, 1)!r}, '
            f'"client_gap": {round(client_gap, 1)!r}}}')

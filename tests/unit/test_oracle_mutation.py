"""benchmarks/oracle_mutation.py: its mutants are real one-point changes of the oracle's code,
swapped in and out of the running interpreter, and a recorded step that exercises the mutated
rule kills it while one that does not lets it survive."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from kafka_chaos.oracle import selectors
from tests.unit.scenarios.histories import hard_kill_step

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("oracle_mutation", ROOT / "benchmarks" / "oracle_mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_mutants_are_one_point_changes_inside_functions_never_docstrings_or_defaults() -> None:
    bench = _bench()
    found = bench.mutants_of(ROOT / "kafka_chaos" / "oracle" / "selectors.py")
    offline = [m for m in found if m.function == "offline_partition_leader_election"]
    # line 22: two `in`, line 23: `is not`, `or`, `not`
    assert sorted((m.line, m.what) for m in offline) == [
        (22, "In -> NotIn"), (22, "In -> NotIn"), (22, "and -> or"), (23, "IsNot -> Is"), (23, "not x -> x"),
        (23, "or -> and"), (25, "In -> NotIn")]


def test_a_mutant_in_the_rule_a_step_exercises_is_killed_and_the_code_put_back() -> None:
    """The hard-kill step elects t-0's new leader with offline_partition_leader_election."""
    bench = _bench()
    observations = [hard_kill_step()]
    baseline, crashes = bench.verdicts(observations)
    assert not crashes
    offline = [m for m in bench.mutants_of(ROOT / "kafka_chaos" / "oracle" / "selectors.py")
               if m.function == "offline_partition_leader_election" and m.line == 22 and m.what == "In -> NotIn"]
    original = selectors.offline_partition_leader_election.__code__
    outcomes = [bench.run_mutant(m, observations, baseline, timeout=30) for m in offline]
    assert {o.status for o in outcomes} <= {"killed", "crashed"} and outcomes
    assert selectors.offline_partition_leader_election.__code__ is original
    assert bench.verdicts(observations)[0] == baseline


def test_a_mutant_in_a_rule_no_step_exercises_survives() -> None:
    bench = _bench()
    observations = [hard_kill_step()]
    baseline, _ = bench.verdicts(observations)
    [controlled] = [m for m in bench.mutants_of(ROOT / "kafka_chaos" / "oracle" / "selectors.py")
                    if m.function == "controlled_shutdown_partition_leader_election"][:1]
    assert bench.run_mutant(controlled, observations, baseline, timeout=30).status == "survived"

"""The pytest plugin as a user meets it: the example in docs/examples runs in a fresh pytest
process (fixtures from the installed entry point), and a wrong expectation fails there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "test_orders_survive_a_leader_kill.py"


def test_the_documented_example_passes_and_a_wrong_expectation_fails_in_the_same_suite(
        pytester: pytest.Pytester) -> None:
    """One user's suite, one session-scoped cluster for both files (one start instead of two):
    the example kills broker 1, the chaos fixture's teardown restarts it, and the wrong
    expectation's topic then needs broker 1 back as its leader."""
    shutil.copy(EXAMPLE, pytester.path / EXAMPLE.name)
    pytester.makepyfile(test_wrong="""
        import pytest
        from scenarios.targets import LeaderOf

        def test_wrong(kafka_cluster, chaos):
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
            admin.create_topics([NewTopic("t", num_partitions=1, replica_assignment=[[1, 2]])])["t"].result(timeout=30)
            verdict = chaos.step("controlled_shutdown", LeaderOf("t", 0), topics=["t"])
            assert verdict.passed
            assert verdict.observation.after.partitions[("t", 0)].leader == 1, "the leader should have moved"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "--kafka-chaos-backend", "local",
                                           timeout=300)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"PASSED {EXAMPLE.name}::*", "FAILED test_wrong.py::test_wrong*"],
                                consecutive=False)
    result.stdout.fnmatch_lines(["*the leader should have moved*"])

"""kafka_chaos.harness.metadata refuses bad arguments before talking to any broker."""

from __future__ import annotations

import pytest

from kafka_chaos.harness import metadata
from kafka_chaos.harness.errors import UsageError


@pytest.mark.parametrize("bootstrap", ["127.0.0.1:1,127.0.0.1:2", "127.0.0.1", "", "host:port"])
def test_broker_view_needs_exactly_one_address(bootstrap: str) -> None:
    with pytest.raises(UsageError, match="exactly one broker"):
        metadata.broker_view(bootstrap, ["t"])


def test_broker_view_refuses_a_bare_string_of_topics() -> None:
    with pytest.raises(UsageError, match="list of names"):
        metadata.broker_view("127.0.0.1:1", "orders")


@pytest.mark.parametrize("assignment, message", [
    ({}, "empty"),
    ({1: [1, 2]}, "numbered 0..0"),
    ({0: [1], 2: [1]}, "numbered 0..1"),
    ({0: []}, "non-empty and distinct"),
    ({0: [1, 1]}, "non-empty and distinct"),
])
def test_create_topic_checks_the_assignment(assignment: dict[int, list[int]], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        metadata.create_topic("127.0.0.1:1", "t", assignment)


def test_a_long_assignment_is_logged_as_its_first_partitions_and_a_count() -> None:
    assert metadata.describe_assignment([[1, 2], [2, 1]]) == "2 partition(s), assignment {0: [1, 2], 1: [2, 1]}"
    long = metadata.describe_assignment([[p % 3 + 1] for p in range(10_000)], shown=2)
    assert long == "10000 partition(s), assignment {0: [1], 1: [2], ... 9998 more}"


def test_elect_leaders_checks_the_election_type_and_partitions() -> None:
    with pytest.raises(UsageError, match="'preferred' or 'unclean'"):
        metadata.elect_leaders("127.0.0.1:1", "dirty", [("t", 0)])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no partitions"):
        metadata.elect_leaders("127.0.0.1:1", "preferred", [])


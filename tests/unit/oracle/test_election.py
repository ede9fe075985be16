"""``Election.scala`` ISR/epoch rules, new-partition initialisation and the controller's removal
of a replica from the ISR (``doRemoveReplicasFromIsr``)."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import election
from tests.unit.oracle.builders import NEW, ONLINE, lit, new_part, part


@pytest.mark.parametrize(
    "name, before, live, unclean, recovery_supported, expected, was_unclean",
    [
        ("clean keeps ISR order minus offline", part([1, 2, 3], 1, [3, 1, 2], 4), {2, 3}, False, True,
         ([1, 2, 3], 2, [3, 2], 5, 0), False),
        ("clean keeps recovery state", part([1, 2], 1, [1, 2], 4, recovery=0), {2}, False, True,
         ([1, 2], 2, [2], 5, 0), False),
        ("no live ISR, unclean off", part([1, 2], -1, [1], 4), {2}, False, True, None, False),
        ("unclean: ISR [leader], RECOVERING", part([1, 2, 3], -1, [1], 4), {3, 2}, True, True,
         ([1, 2, 3], 2, [2], 5, 1), True),
        ("unclean before IBP 3.2: no recovery state", part([1, 2], -1, [1], 4), {2}, True, False,
         ([1, 2], 2, [2], 5, 0), True),
        ("nothing live even unclean", part([1, 2], -1, [1], 4), set(), True, True, None, False),
    ],
)
def test_leader_for_offline(name, before, live, unclean, recovery_supported, expected, was_unclean):
    result = election.leader_for_offline(before, live, unclean, recovery_supported)
    assert (lit(result.new_state) if result.new_state else None) == expected
    assert result.unclean is was_unclean
    if result.new_state:
        assert result.new_state.phase is ONLINE


def test_leader_for_reassign_uses_targets_and_keeps_isr():
    p = part([4, 5, 6, 1, 2, 3], 1, [1, 2, 3, 4, 5, 6], 7, adding=[4, 5, 6], removing=[1, 2, 3])
    result = election.leader_for_reassign(p, {1, 2, 3, 4, 5, 6})
    assert lit(result.new_state) == ([4, 5, 6, 1, 2, 3], 4, [1, 2, 3, 4, 5, 6], 8, 0)


def test_leader_for_reassign_no_live_target_in_isr():
    p = part([4, 1], 1, [1], 7, adding=[4], removing=[1])
    assert election.leader_for_reassign(p, {1, 4}).new_state is None


@pytest.mark.parametrize(
    "before, live, expected",
    [
        (part([1, 2, 3], 2, [2, 3, 1], 3), {1, 2, 3}, ([1, 2, 3], 1, [2, 3, 1], 4, 0)),
        (part([1, 2, 3], 2, [2, 3], 3), {1, 2, 3}, None),  # head not in ISR
        (part([1, 2, 3], 2, [2, 3, 1], 3), {2, 3}, None),  # head dead
    ],
)
def test_leader_for_preferred_replica(before, live, expected):
    result = election.leader_for_preferred_replica(before, live)
    assert (lit(result.new_state) if result.new_state else None) == expected


@pytest.mark.parametrize(
    "before, live_or_shutting, shutting, expected",
    [
        (part([1, 2, 3], 1, [1, 2, 3], 4), {1, 2, 3}, {1}, ([1, 2, 3], 2, [2, 3], 5, 0)),
        # every shutting-down broker leaves the ISR, not just the leader
        (part([1, 2, 3], 1, [1, 2, 3], 4), {1, 2, 3}, {1, 2}, ([1, 2, 3], 3, [3], 5, 0)),
        # no candidate: nothing written, ISR not shrunk
        (part([1, 2], 1, [1], 4), {1, 2}, {1}, None),
    ],
)
def test_leader_for_controlled_shutdown(before, live_or_shutting, shutting, expected):
    result = election.leader_for_controlled_shutdown(before, live_or_shutting, shutting)
    assert (lit(result.new_state) if result.new_state else None) == expected


@pytest.mark.parametrize(
    "replicas, live, expected",
    [
        ([2, 3, 1], {1, 2, 3}, ([2, 3, 1], 2, [2, 3, 1], 0, 0)),
        ([2, 3, 1], {1, 3}, ([2, 3, 1], 3, [3, 1], 0, 0)),
        ([2, 3, 1], set(), None),
    ],
)
def test_initialize_leader_and_isr(replicas, live, expected):
    result = election.initialize_leader_and_isr(new_part(replicas), live)
    assert (lit(result) if result else None) == expected
    if result:
        assert result.phase is ONLINE


@pytest.mark.parametrize(
    "before, replica, expected",
    [
        (part([1, 2, 3], 1, [1, 2, 3], 4), 1, ([1, 2, 3], -1, [2, 3], 5, 0)),  # leader -> -1
        (part([1, 2, 3], 1, [1, 2, 3], 4), 3, ([1, 2, 3], 1, [1, 2], 5, 0)),  # follower: +1 too
        (part([1, 2, 3], 1, [1], 4), 1, ([1, 2, 3], -1, [1], 5, 0)),  # last member kept
        (part([1, 2, 3], -1, [2], 4), 2, ([1, 2, 3], -1, [2], 5, 0)),  # written again, +1
        (part([1, 2, 3], 1, [1, 2], 4), 3, None),  # not in ISR: no write
        (new_part([1, 2]), 1, None),  # no state znode
    ],
)
def test_remove_replica_from_isr(before, replica, expected):
    result = election.remove_replica_from_isr(before, replica)
    assert (lit(result) if result else None) == expected


def test_epoch_helpers():
    p = part([1, 2], 1, [1], 9, recovery=1)
    assert lit(election.new_epoch(p)) == ([1, 2], 1, [1], 10, 1)
    assert lit(election.new_leader(p, 2)) == ([1, 2], 2, [1], 10, 1)
    assert lit(election.new_leader_and_isr(p, 1, (1, 2))) == ([1, 2], 1, [1, 2], 10, 1)
    assert lit(election.new_recovering_leader_and_isr(part([1, 2], 1, [1], 3), 2, (2,))) == ([1, 2], 2, [2], 4, 1)
    assert new_part([1]).phase is NEW

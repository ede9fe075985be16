"""Leader-epoch arithmetic per controller path (every controller write is +1; leader-made ISR
changes are +0)."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import BrokerFailure, BrokerStartup, ControlledShutdown, PreferredElection, Reassign, UncleanElection
from tests.unit.oracle.builders import T0, one, part, run

EPOCH_PATHS = [
    # (path, live, controller, partition, event, epoch delta)
    ("offline election", {1, 2, 3}, 3, part([1, 2, 3], 1, [1, 2, 3], 10), BrokerFailure((1,)), 1),
    ("follower removal", {1, 2, 3}, 3, part([1, 2, 3], 1, [1, 2, 3], 10), BrokerFailure((2,)), 1),
    ("dead follower outside ISR", {1, 2, 3}, 3, part([1, 2, 3], 1, [1, 3], 10), BrokerFailure((2,)), 0),
    ("two ISR members, one event: two removals", {1, 2, 3}, 3, part([1, 2, 3], 1, [1, 2], 10), BrokerFailure((1, 2)), 2),
    ("controller led it: removal + election", {1, 2, 3}, 1, part([1, 2, 3], 1, [1, 2, 3], 10), BrokerFailure((1,)), 2),
    ("controlled shutdown of the leader", {1, 2, 3}, 3, part([1, 2, 3], 1, [1, 2, 3], 10), ControlledShutdown(1), 1),
    ("RF=1 exit", {1, 2}, 2, part([1], 1, [1], 10), ControlledShutdown(1), 1),
    ("restart of the last ISR member", {2}, 2, part([1, 2], -1, [1], 10), BrokerStartup((1,)), 1),
    ("restart of a follower: leader-made ISR expansion", {1, 2}, 2, part([1, 2, 3], 1, [1, 2], 10), BrokerStartup((3,)), 0),
    ("preferred election", {1, 2}, 2, part([1, 2], 2, [2, 1], 10), PreferredElection((T0,)), 1),
    ("unclean election", {2}, 2, part([1, 2], -1, [1], 10), UncleanElection((T0,)), 1),
    ("reorder reassignment", {1, 2}, 2, part([1, 2], 1, [1, 2], 10), Reassign("t", 0, (2, 1)), 1),
    ("OAR {1,2,3} -> RAR {4,5,6}", {1, 2, 3, 4, 5, 6}, 1, part([1, 2, 3], 1, [1, 2, 3], 10), Reassign("t", 0, (4, 5, 6)), 5),
]


@pytest.mark.parametrize("path, live, controller, p, event, delta", EPOCH_PATHS, ids=[e[0] for e in EPOCH_PATHS])
def test_epoch_delta(path, live, controller, p, event, delta):
    after, _, _ = run(one(live, p, controller=controller), event)
    assert after.leader_epoch - p.leader_epoch == delta

"""Targeting is pure: plain states in, broker ids and a description out, same seed same choice."""

from __future__ import annotations

import random

import pytest

from kafka_chaos.harness.errors import UsageError
from kafka_chaos.harness.zksnapshot import PartitionZkState, ZkSnapshot
from kafka_chaos.oracle import ClusterState, PartitionState, TopicState
from kafka_chaos.scenarios.model.targets import (
    BrokerId,
    Controller,
    EarlierTarget,
    FollowerOf,
    IsrAllButOne,
    IsrOf,
    LeaderOf,
    NonReplicaOf,
    PartitionView,
    Target,
    TargetView,
    view_of,
)


def view(**partitions: tuple[tuple[int, ...], int, tuple[int, ...]]) -> TargetView:
    parts = {}
    for name, (replicas, leader, isr) in partitions.items():
        topic, p = name.rsplit("_", 1)
        parts[(topic, int(p))] = PartitionView(replicas, leader, isr)
    return TargetView(frozenset({1, 2, 3, 4}), 2, parts, frozenset({1, 2, 3, 4}))


V = view(t_0=((1, 2, 3), 1, (1, 2, 3)), t_1=((2, 3), 2, (2,)), u_0=((4,), -1, (4,)))


def rng(seed: int = 7) -> random.Random:
    return random.Random(seed)


def test_leader_of() -> None:
    t = LeaderOf("t", 0).resolve(V, rng())
    assert t == Target((1,), "broker 1 (leader of t-0)")


def test_leader_of_leaderless_partition_is_refused() -> None:
    with pytest.raises(UsageError, match="leader of u-0"):
        LeaderOf("u", 0).resolve(V, rng())


def test_unknown_partition_is_refused() -> None:
    with pytest.raises(UsageError, match="no partition t-9"):
        LeaderOf("t", 9).resolve(V, rng())


def test_controller() -> None:
    assert Controller().resolve(V, rng()).brokers == (2,)
    no_controller = TargetView(V.live_brokers, None, V.partitions)
    with pytest.raises(UsageError, match="controller"):
        Controller().resolve(no_controller, rng())


def test_follower_is_an_in_sync_non_leader_and_seeded() -> None:
    chosen = {FollowerOf("t", 0).resolve(V, rng(s)).broker for s in range(40)}
    assert chosen == {2, 3}
    assert FollowerOf("t", 0).resolve(V, rng(5)) == FollowerOf("t", 0).resolve(V, rng(5))


def test_follower_out_of_isr_is_not_chosen() -> None:
    with pytest.raises(UsageError, match="follower of t-1"):
        FollowerOf("t", 1).resolve(V, rng())


def test_isr_all_but_one_spares_the_leader() -> None:
    t = IsrAllButOne("t", 0).resolve(V, rng())
    assert t.brokers == (2, 3)
    assert "but 1" in t.description


def test_isr_all_but_one_random_spares_one_member() -> None:
    t = IsrAllButOne("t", 0, keep="random").resolve(V, rng(3))
    assert len(t.brokers) == 2 and set(t.brokers) < {1, 2, 3}


def test_isr_all_but_one_needs_two_members() -> None:
    with pytest.raises(UsageError):
        IsrAllButOne("t", 1).resolve(V, rng())


@pytest.mark.parametrize(("partitions", "expected"), [
    ({"t_0": ((1, 2, 3), 1, (1, 2, 3))}, (1, 2, 3)),
    ({"t_0": ((3, 1, 2), 1, (1, 3))}, (3, 1)),  # replica order, ISR members only
    ({"t_0": ((2, 3), 2, (2,))}, (2,)),
    ({"t_0": ((5, 2), 2, (5, 2))}, (2,)),  # broker 5 is not live
])
def test_isr_of_is_every_live_isr_member_in_replica_order(partitions, expected) -> None:
    assert IsrOf("t", 0).resolve(view(**partitions), rng()).brokers == expected


def test_isr_of_a_partition_with_no_live_isr_member_is_refused() -> None:
    with pytest.raises(UsageError, match=r"the ISR of t-0 \(ISR \[5\], none live\)"):
        IsrOf("t", 0).resolve(view(t_0=((5, 2), -1, (5,))), rng())


def test_broker_id_validates() -> None:
    assert BrokerId(4).resolve(V, rng()).description == "broker 4"
    with pytest.raises(UsageError, match="broker 9 is not in the cluster"):
        BrokerId(9).resolve(V, rng())


def test_non_replica() -> None:
    assert NonReplicaOf("t", 0).resolve(V, rng()).brokers == (4,)
    assert NonReplicaOf("t", 1).resolve(V, rng(1)).broker in {1, 4}
    full = view(x_0=((1, 2, 3, 4), 1, (1, 2, 3, 4)))
    with pytest.raises(UsageError, match="non-replica"):
        NonReplicaOf("x", 0).resolve(full, rng())


def test_earlier_target() -> None:
    history = [Target((3,), "broker 3 (follower of t-0)")]
    t = EarlierTarget(0).resolve(V, rng(), history)
    assert t.brokers == (3,) and "step 1" in t.description
    with pytest.raises(UsageError):
        EarlierTarget(1).resolve(V, rng(), history)


def test_view_of_snapshot_and_cluster_state_agree() -> None:
    zk = ZkSnapshot(0.0, {1: 10, 2: 11}, 1, 3, {("t", 0): PartitionZkState("t", 0, (1, 2), 2, 5, (2, 1), 3, 0, 4)},
                    {}, False)
    cs = ClusterState(live_brokers=frozenset({1, 2}), controller=1,
                      topics={"t": TopicState({0: PartitionState(replicas=(1, 2), leader=2, isr=(2, 1), leader_epoch=5)})})
    a, b = view_of(zk, [1, 2, 3]), view_of(cs, [1, 2, 3])
    assert a == b
    assert LeaderOf("t", 0).resolve(a, rng()).brokers == (2,)
    assert BrokerId(3).resolve(a, rng()).brokers == (3,)  # known from the cluster's broker list

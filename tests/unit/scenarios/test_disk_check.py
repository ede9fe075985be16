"""The ``replicas_on_disk`` invariant (scenarios.checks.disk): each case fires on its own
situation only — a stray the controller should have removed, a missing log — and lets be what
Kafka cannot or need not change (a replica removed while its broker could not be told, a topic
being deleted, the replicas of an offline directory)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, strategies as st

from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot
from kafka_chaos.scenarios.checks.disk import (
    reconciled_brokers,
    assigned_replicas,
    check_replicas_on_disk,
    disagreement,
    disk_settled,
    untold_removals,
)
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.history.disk import DiskReplicas, disk_replicas
from kafka_chaos.scenarios.history.observations import StepObserved, observation_from_json, observation_to_json
from kafka_chaos.harness.kafka_wire import WireLogDir, WireLogDirs
from tests.unit.scenarios.histories import hard_kill_step


def part(topic: str, p: int, replicas: tuple[int, ...], version: int = 1) -> PartitionZkState:
    return PartitionZkState(topic, p, replicas, replicas[0], 1, replicas, 1, 0, version)


def snap(live: dict[int, int], parts: list[PartitionZkState], deleting: frozenset[str] = frozenset()) -> ZkSnapshot:
    return ZkSnapshot(taken_at=0.0, live_brokers=live, controller=1, controller_epoch=1,
                      partitions={(p.topic, p.partition): p for p in parts}, topic_configs={},
                      pending_reassignment=False, topics_being_deleted=deleting)


LIVE = {1: 101, 2: 102, 3: 103}
# t-0 [1, 2, 3] reassigned to [2, 3]: broker 1 must drop its log (KAFKA-16120's step).
BEFORE = snap(LIVE, [part("t", 0, (1, 2, 3)), part("t", 1, (2, 3))])
AFTER = snap(LIVE, [part("t", 0, (2, 3)), part("t", 1, (2, 3))])


def disk(*replicas: tuple[str, int], failed: tuple[str, ...] = ()) -> DiskReplicas:
    return DiskReplicas(frozenset(replicas), failed)


EXACT = {1: disk(), 2: disk(("t", 0), ("t", 1)), 3: disk(("t", 0), ("t", 1))}
NONE: frozenset[int] = frozenset()  # no broker reconciled by a full LeaderAndIsr


def test_brokers_holding_exactly_their_replicas_pass() -> None:
    result = check_replicas_on_disk(AFTER, ["t"], EXACT)
    assert result.passed is True and result.check == "replicas_on_disk"


def test_a_removed_replica_left_on_a_broker_that_was_told_fails_naming_it() -> None:
    on_disk = {**EXACT, 1: disk(("t", 0))}
    result = check_replicas_on_disk(AFTER, ["t"], on_disk, tolerated=untold_removals([(BEFORE, AFTER, (), NONE)]))
    assert result.passed is False
    assert result.detail == "not assigned, still on disk: t-0 on broker 1"


def test_an_assigned_replica_without_a_log_fails_naming_it() -> None:
    result = check_replicas_on_disk(AFTER, ["t"], {**EXACT, 3: disk(("t", 0))})
    assert result.passed is False and result.detail == "assigned, no log: t-1 on broker 3"


@pytest.mark.parametrize(("why", "after", "held"), [
    ("down at the end of the step", snap({2: 102, 3: 103}, list(AFTER.partitions.values())), ()),
    ("down at its start", AFTER, ()),
    ("re-registered during it (a new broker epoch)", snap({**LIVE, 1: 555}, list(AFTER.partitions.values())), ()),
    ("held by a fault (cut off)", AFTER, (1,)),
])
def test_a_replica_removed_while_its_broker_could_not_be_told_is_let_be(
        why: str, after: ZkSnapshot, held: tuple[int, ...]) -> None:
    before = snap({2: 102, 3: 103}, list(BEFORE.partitions.values())) if why == "down at its start" else BEFORE
    tolerated = untold_removals([(before, after, held, NONE)])
    assert tolerated == {(1, "t", 0)}, why
    later = snap(LIVE, list(AFTER.partitions.values()))  # broker 1 back, its log still there
    assert check_replicas_on_disk(later, ["t"], {**EXACT, 1: disk(("t", 0))}, tolerated).passed is True, why


def test_a_tolerated_stray_assigned_again_and_removed_again_while_told_fails() -> None:
    gone_while_down = (BEFORE, snap({2: 102, 3: 103}, list(AFTER.partitions.values())), (), NONE)
    back = (snap(LIVE, list(AFTER.partitions.values())), BEFORE, (), NONE)  # reassigned to [1, 2, 3] again
    removed_again = (BEFORE, AFTER, (), NONE)
    assert untold_removals([gone_while_down]) == {(1, "t", 0)}
    assert untold_removals([gone_while_down, back, removed_again]) == frozenset()


def test_a_removal_between_two_steps_counts_as_told_when_the_broker_was_live() -> None:
    first = (BEFORE, BEFORE, (), NONE)  # a reassignment still pending when the step ended
    second = (AFTER, AFTER, (), NONE)  # ... and done when the next one began
    assert untold_removals([first, second]) == frozenset()
    down_between = (snap({2: 102, 3: 103}, list(AFTER.partitions.values())), AFTER, (), NONE)
    assert untold_removals([first, down_between]) == {(1, "t", 0)}


def test_a_deleted_topic_left_on_disk_is_a_stray_unless_its_deletion_is_still_running() -> None:
    gone = snap(LIVE, [part("t", 1, (2, 3))])
    on_disk = {1: disk(), 2: disk(("t", 0), ("t", 1)), 3: disk(("t", 1))}
    assert check_replicas_on_disk(gone, ["t"], on_disk).detail == "not assigned, still on disk: t-0 on broker 2"
    deleting = snap(LIVE, [part("t", 0, (2, 3)), part("t", 1, (2, 3))], deleting=frozenset({"t"}))
    assert check_replicas_on_disk(deleting, ["t"], {1: disk(), 2: disk(("t", 0)), 3: disk()}).passed is True


def test_an_offline_directory_excuses_missing_logs_not_strays() -> None:
    failed = disk(("t", 9), failed=("/data/b",))
    assert disagreement(AFTER, ["t"], {**EXACT, 3: failed}).missing == frozenset()
    assert disagreement(AFTER, ["t"], {**EXACT, 3: failed}).strays == {(3, "t", 9)}


def test_a_partition_without_a_state_is_not_expected_on_disk() -> None:
    new = snap(LIVE, [part("t", 0, (2, 3)), part("t", 1, (2, 3)), part("t", 2, (1, 2), version=-1)])
    assert check_replicas_on_disk(new, ["t"], EXACT).passed is True


def test_other_topics_on_disk_are_not_judged() -> None:
    assert check_replicas_on_disk(AFTER, ["t"], {**EXACT, 1: disk(("other", 0))}).passed is True


def test_a_broker_that_did_not_answer_makes_the_verdict_unknown_unless_another_fails() -> None:
    silent = {**EXACT, 3: "broker at 127.0.0.1:9094 did not answer DescribeLogDirs: timeout"}
    assert check_replicas_on_disk(AFTER, ["t"], silent).passed is None
    assert check_replicas_on_disk(AFTER, ["t"], {**silent, 1: disk(("t", 1))}).passed is False


def test_the_wait_ends_once_this_steps_removals_are_gone_not_earlier_strays() -> None:
    assert disk_settled(BEFORE, AFTER, ["t"], (), EXACT)
    assert not disk_settled(BEFORE, AFTER, ["t"], (), {**EXACT, 1: disk(("t", 0))})
    assert disk_settled(AFTER, AFTER, ["t"], (), {**EXACT, 1: disk(("t", 0))})  # an earlier step's
    assert not disk_settled(BEFORE, AFTER, ["t"], (), {**EXACT, 2: disk(("t", 1))})  # a log missing
    assert not disk_settled(BEFORE, AFTER, ["t"], (), {**EXACT, 2: "no answer"})
    assert disk_settled(BEFORE, AFTER, ["t"], (1,), {**EXACT, 1: disk(("t", 0))})  # held: cannot be told


def test_disk_replicas_keeps_current_logs_of_the_watched_topics_and_names_offline_dirs() -> None:
    answer = WireLogDirs(1, (WireLogDir(0, "/a", frozenset({("t", 0), ("x", 0)}), frozenset({("t", 1)})),
                             WireLogDir(56, "/b", frozenset(), frozenset())))
    assert disk_replicas(answer, ["t"]) == DiskReplicas(frozenset({("t", 0)}), ("/b",))


def test_the_registered_check_judges_a_recorded_step_and_an_older_history_gives_nothing() -> None:
    step = hard_kill_step()
    assert [r for r in evaluate(step, CheckContext()) if r.check == "replicas_on_disk"] == []
    # broker 1 was killed: asked are 2 and 3, whose replicas are t-0 (2) and t-1 (2, 3).
    on_disk = {2: disk(("t", 0), ("t", 1)), 3: disk(("t", 1), ("t", 0))}
    results = [r for r in evaluate(replace(step, on_disk=on_disk), CheckContext()) if r.check == "replicas_on_disk"]
    assert [r.passed for r in results] == [False]
    assert results[0].detail == "not assigned, still on disk: t-0 on broker 3"


def test_on_disk_survives_the_history_file() -> None:
    step = replace(hard_kill_step(), on_disk={2: disk(("t", 0)), 3: "no answer"})
    back = observation_from_json(observation_to_json(step))
    assert isinstance(back, StepObserved) and back.on_disk == step.on_disk


_brokers = st.sampled_from([1, 2, 3, 4, 5])


@given(st.dictionaries(st.integers(0, 5), st.lists(_brokers, min_size=1, max_size=3, unique=True), min_size=1),
       st.data())
def test_exact_logs_pass_and_any_one_extra_or_missing_log_fails(assignment: dict[int, list[int]], data: st.DataObject) -> None:
    after = snap({b: 100 + b for b in range(1, 6)}, [part("t", p, tuple(rs)) for p, rs in assignment.items()])
    exact = {b: DiskReplicas(rs) for b, rs in assigned_replicas(after, ["t"]).items()}
    exact.update({b: DiskReplicas(frozenset()) for b in range(1, 6) if b not in exact})
    assert check_replicas_on_disk(after, ["t"], exact).passed is True
    b = data.draw(_brokers)
    p = data.draw(st.integers(0, 6))
    held = exact[b].replicas
    changed = held - {("t", p)} if ("t", p) in held else held | {("t", p)}
    result = check_replicas_on_disk(after, ["t"], {**exact, b: DiskReplicas(changed)})
    assert result.passed is False and f"t-{p} on broker {b}" in result.detail


def _status(epoch: int | None, **roles: str) -> dict[str, object]:
    return {"kraft_controller_epoch": epoch, "broker_roles": {b[1:]: r for b, r in roles.items()}}


@pytest.mark.parametrize("before, after, held, reconciled", [
    (_status(1, b1="hybrid", b2="zk"), _status(2, b1="hybrid", b2="zk"), (), {1}),  # a failover: hybrid only
    (_status(None, b1="zk"), _status(1, b1="hybrid"), (), {1}),  # the KRaft controller's first epoch
    (_status(2, b1="hybrid"), _status(2, b1="hybrid"), (), set()),  # no new KRaft leader
    (_status(1, b1="hybrid"), _status(2, b1="hybrid"), (1,), set()),  # held: it cannot be told
    (None, _status(2, b1="hybrid"), (), set()),  # not a migrating cluster
])
def test_a_new_kraft_leader_reconciles_the_hybrid_brokers_it_could_tell(
        before: dict[str, object] | None, after: dict[str, object], held: tuple[int, ...], reconciled: set[int]) -> None:
    assert reconciled_brokers(before, after, AFTER, AFTER, held) == reconciled


def test_a_stray_let_be_while_its_broker_was_down_is_not_once_a_full_leader_and_isr_reconciled_it() -> None:
    down = snap({2: 102, 3: 103}, list(AFTER.partitions.values()))
    gone_while_down = (BEFORE, down, (), NONE)
    back = (down, snap(LIVE, list(AFTER.partitions.values())), (), NONE)
    failover = (AFTER, AFTER, (), frozenset({1}))
    assert untold_removals([gone_while_down, back]) == {(1, "t", 0)}
    assert untold_removals([gone_while_down, back, failover]) == frozenset()
    stray = {**EXACT, 1: disk(("t", 0))}
    assert not disk_settled(AFTER, AFTER, ["t"], (), stray, reconciled=(1,))  # the observation waits for it
    assert disk_settled(AFTER, AFTER, ["t"], (), stray)


def test_the_new_quorum_epoch_in_the_metadata_log_counts_before_the_drivers_status_shows_it() -> None:
    before, after = replace(AFTER, mode="kraft", controller_epoch=1), replace(AFTER, mode="kraft", controller_epoch=2)
    status = _status(1, b1="hybrid", b2="kraft")
    assert reconciled_brokers(status, status, before, after, ()) == {1}
    assert reconciled_brokers(status, status, before, before, ()) == set()

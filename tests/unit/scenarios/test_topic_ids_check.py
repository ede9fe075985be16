"""The topic_ids_kept invariant (scenarios.checks.topic_ids): a topic's id may appear, never
change or vanish, while the topic exists."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_chaos.harness.observer import ZkSnapshot
from kafka_chaos.oracle import DeleteTopic, Reassign
from kafka_chaos.scenarios.checks.registry import CheckContext, evaluate
from kafka_chaos.scenarios.checks.topic_ids import check_topic_ids_kept
from tests.unit.scenarios.histories import AFTER, BEFORE, hard_kill_step


def ids(snap: ZkSnapshot, deleting: frozenset[str] = frozenset(), **topic_ids: str | None) -> ZkSnapshot:
    return replace(snap, topic_ids=topic_ids, topics_being_deleted=deleting)


CASES = {
    "kept": (ids(BEFORE, t="A"), ids(AFTER, t="A"), [True]),
    # KAFKA-12835: an IBP-2.7 controller of 2.8.0 rewrote the znode without it on a reassignment
    "dropped": (ids(BEFORE, t="A"), ids(AFTER, t=None), [False]),
    # ...and the next IBP-2.8 controller gave the topic a new one
    "changed": (ids(BEFORE, t="A"), ids(AFTER, t="B"), [False]),
    "given for the first time (an IBP-2.8 controller takes over)": (ids(BEFORE, t=None), ids(AFTER, t="A"), []),
    "none before or after": (ids(BEFORE, t=None), ids(AFTER, t=None), []),
    "deleted in the step": (ids(BEFORE, t="A"), ids(AFTER), []),
    "being deleted after the step": (ids(BEFORE, t="A"), ids(AFTER, frozenset({"t"}), t="B"), []),
    "each topic on its own": (ids(BEFORE, t="A", u="C"), ids(AFTER, t="A", u=None), [True, False]),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_topic_ids_kept(case: str) -> None:
    before, after, verdicts = CASES[case]
    assert [r.passed for r in check_topic_ids_kept(before, after)] == verdicts


def test_a_change_names_the_topic_and_both_ids() -> None:
    [result] = check_topic_ids_kept(ids(BEFORE, t="A"), ids(AFTER, t=None))
    assert result.detail == "t had topic id A before the step and has no topic id after it"


def verdicts(obs: object) -> list[bool | None]:
    return [r.passed for r in evaluate(obs, CheckContext()) if r.check == "topic_ids_kept"]  # type: ignore[arg-type]


def test_the_registered_check_leaves_out_the_topics_the_step_deletes_or_creates() -> None:
    step = hard_kill_step(before=ids(BEFORE, t="A"), after=ids(AFTER, t="B"))
    assert verdicts(step) == [False]
    assert verdicts(replace(step, oracle_events=(Reassign("t", 0, (2, 1)),))) == [False]
    assert verdicts(replace(step, oracle_events=(DeleteTopic("t"),))) == []
    assert verdicts(replace(step, after=None)) == []

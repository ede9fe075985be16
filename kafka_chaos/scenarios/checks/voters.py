"""The voter set of a dynamic KRaft quorum after a voter change (``scenarios.faults.voters``): every
running voter acts on the same voter set, and it is the one the change leads to.

What the KRaft controller does: a voter change is one ``VotersRecord`` appended by the leader
(``AddVoterHandler`` / ``RemoveVoterHandler``, raft 4.1.2), answered once committed by the new
set; every replica acts on the newest VotersRecord in its own log, committed or not
(``KRaftControlRecordStateMachine``). A removed leader resigns once the record commits
(``RemoveVoterHandler.highWatermarkUpdated``) and the others elect among themselves; a removed
voter started again reads the record without itself in its log and stays an observer -- it does
not campaign (``controller.quorum.auto.join.enable`` is false by default, ``QuorumConfig``
4.1.2 line 109), so the quorum keeps its leader and epoch. Partition leaders do not change.

The fault records what it observed once the change settled (``FaultTraits.outcome`` under
:data:`VOTER_CHANGE`): the expected voter ids, each controller's voter set read from its own
metadata log, which controllers ran, and the leader's DescribeQuorum answer (a voter answers only
while it leads, ``KafkaRaftClient.handleDescribeQuorumRequest``) with its voters and epoch.
Pure: a function of that record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.model.voters import VOTER_CHANGE

CHECK = "quorum_voters"
__all__ = ["CHECK", "VOTER_CHANGE", "check_quorum_voters"]


def _ids(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"a voter set must be a list of node ids, not {value!r}")
    return tuple(sorted(int(v) for v in value))


def check_quorum_voters(seen: Mapping[str, Any]) -> CheckResult:
    """Pass when every running expected voter's log names the expected voter set, the leader that
    answers DescribeQuorum is one of them and describes that set, and -- when the change must
    not disturb the quorum (``keep_epoch``) -- the leader and its epoch are those before."""
    expected = _ids(seen["expected"])
    assert expected is not None
    logs = {int(c): _ids(v) for c, v in dict(seen.get("logs") or {}).items()}
    running = {int(c) for c in seen.get("running") or ()}
    leader, epoch = seen.get("leader"), seen.get("leader_epoch")
    described = _ids(seen.get("described"))
    want = f"every running voter's log and the leader's DescribeQuorum name voters {list(expected)}"
    if seen.get("keep_epoch"):
        want += f", leader {seen.get('leader_before')} of epoch {seen.get('epoch_before')} kept"
    observed = {"logs": {str(c): (None if v is None else list(v)) for c, v in sorted(logs.items())},
                "running": sorted(running), "leader": leader, "leader_epoch": epoch,
                "described": None if described is None else list(described)}
    wrong = [f"voter {c}'s log names {None if logs.get(c) is None else list(logs[c] or ())}"
             for c in sorted(running & set(expected)) if logs.get(c) != expected]
    if leader is None:
        wrong.append("no voter answers DescribeQuorum as the leader")
    else:
        if int(leader) not in expected:
            wrong.append(f"controller {leader}, not a voter, answers as the leader")
        if described != expected:
            wrong.append(f"the leader describes voters {None if described is None else list(described)}")
    if seen.get("keep_epoch") and leader is not None and (
            leader != seen.get("leader_before") or epoch != seen.get("epoch_before")):
        wrong.append(f"the quorum moved from leader {seen.get('leader_before')} of epoch {seen.get('epoch_before')} "
                     f"to leader {leader} of epoch {epoch}")
    missing = sorted(set(expected) - running)
    detail = "; ".join(wrong) if wrong else (
        f"voters {list(expected)}, leader {leader} of epoch {epoch}"
        + (f" ({', '.join(map(str, missing))} not running)" if missing else ""))
    return CheckResult(CHECK, not wrong, want, observed, detail)

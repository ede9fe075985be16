"""One KRaft quorum leader: an invariant that needs no prediction (invariant (b) for KRaft).

Raft elects at most one leader per epoch, and a leader that can no longer reach a majority of the
voters must stop leading: from 3.7.0 ``KafkaRaftClient.pollLeader`` resigns once no majority has
fetched within ``controller.quorum.fetch.timeout.ms`` x 1.5 (``LeaderState.timeUntilCheckQuorumExpires``,
KAFKA-15489, commit 37416e1aeba). Before it, a leader cut from the other voters (but not from its
brokers) stayed leader of its epoch for as long as the cut lasted, while the others elected a new
one: two active controllers, the brokers following the old one, the new one fencing them.

Each voter is asked DescribeQuorum on its own when the step's measurement closes
(:mod:`scenarios.history.quorum`); a voter answers only while it believes it leads. The check fails
when two voters answer as leaders of one epoch, or when a voter still answers as the leader of an
epoch older than the newest one known (another voter's, or the metadata log's) :data:`GRACE_S` or
more after the fault -- a stale leader Raft allows only until it notices. An answer within the
grace is unknown; no leader at all (an election under way) is no second leader.

Pure: a function of the recorded answers and the step's snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.history.quorum import VoterAnswer

CHECK = "one_quorum_leader"
# Twice controller.quorum.fetch.timeout.ms (2 s, the default the launchers keep), and a second of
# slack: a leader cut off resigns within 1.5 fetch timeouts of its last majority fetch.
GRACE_S = 5.0


def check_one_quorum_leader(answers: Mapping[int, VoterAnswer], after: ZkSnapshot | None,
                            fault_at: float) -> CheckResult:
    claims = {v: a for v, a in sorted(answers.items()) if a.claims_leadership}
    observed = {str(v): (f"leader of epoch {a.epoch}" if a.claims_leadership else a.error) for v, a in sorted(answers.items())}
    log_epoch = after.controller_epoch if after is not None and after.mode == "kraft" else None
    newest = max([a.epoch for a in claims.values() if a.epoch is not None] + ([log_epoch] if log_epoch is not None else []),
                 default=None)
    expected = "at most one voter answers as the quorum's leader, of the newest epoch"
    by_epoch: dict[int | None, list[int]] = {}
    for v, a in claims.items():
        by_epoch.setdefault(a.epoch, []).append(v)
    twins = {e: vs for e, vs in by_epoch.items() if len(vs) > 1}
    if twins:
        return CheckResult(CHECK, False, expected, observed, "; ".join(
            f"voters {vs} each answer as the leader of epoch {e}" for e, vs in sorted(twins.items(), key=str)))
    stale = {v: a for v, a in claims.items() if newest is not None and a.epoch is not None and a.epoch < newest}
    if stale:
        late = {v: a for v, a in stale.items() if a.at - fault_at >= GRACE_S}
        detail = "; ".join(f"voter {v} answers as the leader of epoch {a.epoch}, {a.at - fault_at:.1f} s after the fault"
                           for v, a in (late or stale).items())
        newer = f"the newest epoch is {newest}" + (f" (the metadata log's leader: {after.controller})"
                                                    if log_epoch == newest and after is not None else "")
        return CheckResult(CHECK, False if late else None, expected, observed, f"{detail}; {newer}")
    if not claims:  # between two leaders (an election), or every voter down: no two leaders either
        return CheckResult(CHECK, True, expected, observed, "no voter answered as the leader (an election, or none up)")
    [(leader, answer)] = claims.items()
    return CheckResult(CHECK, True, expected, observed, f"voter {leader} leads epoch {answer.epoch}")

"""Every KRaft voter asked DescribeQuorum on its own when a step's measurement closes; the
answers are what the ``one_quorum_leader`` check judges (:mod:`scenarios.checks.quorum`)."""

from __future__ import annotations

import time
from typing import cast

from kafka_chaos.harness.cluster import Capability, ChaosCluster, ControllerQuorumControl, capabilities_of
from kafka_chaos.harness.metadata import MetadataError, error_name, running_voters_quorum
from kafka_chaos.scenarios.history.quorum import VoterAnswer, voter_answer

# A paused voter costs this much once per step; a live one answers in milliseconds.
ASK_TIMEOUT_S = 1.0


def ask_voters(cluster: ChaosCluster) -> dict[int, VoterAnswer] | None:
    """Each running voter's answer (None: the cluster has no KRaft quorum, or none runs yet: a
    migration before its controllers are provisioned)."""
    if Capability.CONTROLLER_QUORUM not in capabilities_of(cluster):
        return None
    answers: dict[int, VoterAnswer] = {}
    for node, answer in running_voters_quorum(cast(ControllerQuorumControl, cluster), timeout=ASK_TIMEOUT_S):
        answers[node] = (VoterAnswer(time.time(), error=str(answer)) if isinstance(answer, MetadataError)
                         else voter_answer(time.time(), answer, error_name(answer.error_code)))
    return answers or None

"""A hard restart whose new incarnation registers before the old one is fenced (issue 45,
``explore --mode kraft --seed 7703`` on 4.4.0, schedule 7): ``registerBroker`` accepts a new
incarnation once the old session has expired, fenced or not (BrokerHeartbeatManager.java 3.6.1
lines 349-355 to 3.9.0; BrokerHeartbeatTracker.java 4.3.1 lines 131-150), so the periodic fence
may come after it and find nothing to fence.  One row per release line the KRaft model covers;
the old rule (a fence before every registration) has no ``registered before the fence`` plan and
fails every row that lists one."""

from __future__ import annotations

import pytest

from kafka_chaos.oracle import BrokerFailure, BrokerStartup, predict
from kafka_chaos.oracle.jsonio import parse_request, render_prediction
from kafka_chaos.oracle.release import Release
from kafka_chaos.oracle.state import RECOVERED, RECOVERING, ClusterState
from kafka_chaos.scenarios.clients import codec
from tests.unit.oracle.test_kraft import kraft
from tests.unit.oracle.test_kraft_4x import elr_p, row
from tests.unit.oracle.test_kraft_releases import at

EARLY = "registered before the fence"

# (leader, isr, elr, last known elr, leader epoch, partition epoch, recovery) of t-0 = [1], led by 1
FENCED_FIRST = (1, (1,), (), (), 2, 2, RECOVERED)  # fence (-1, epochs 1/1), unfence elects 1 (2/2)
FENCED_FIRST_UNCLEAN = (1, (1,), (), (), 2, 3, RECOVERING)  # 4.1+: + the registration's ELR removal
UNCHANGED = (1, (1,), (), (), 0, 0, RECOVERED)
LAST_KNOWN_LEADER = (1, (1,), (), (), 2, 2, RECOVERING)  # seen on 4.4.0 (explore-7703-7, d-0 = [4])


def _single_replica(release: Release) -> ClusterState:
    return at(kraft({1, 2}, {0: elr_p((1,), 1, (1,))}), release)


@pytest.mark.parametrize("release, early", [
    # 3.6.x-3.7.x: registerBroker writes only the (fenced) RegisterBrokerRecord (ClusterControlManager
    # 3.6.1 L328-339, 3.7.1 L345-356); 3.8.x-3.9.x call handleBrokerUncleanShutdown, a no-op below
    # MV 4.0-IV0 (ClusterControlManager 3.8.0 L358, ReplicationControlManager 3.8.0 L1396, 3.9.1
    # L1414): broker 1 keeps leader and ISR, epochs unchanged
    (Release(3, 6, 2), UNCHANGED), (Release(3, 7, 2), UNCHANGED), (Release(3, 8, 1), UNCHANGED),
    (Release(3, 9, 2), UNCHANGED),
    # 4.0.x (ELR off): handleBrokerShutdown's fence builder (ReplicationControlManager 4.0.0 L1446-1458)
    # writes what the fence would: the same state, listed once
    (Release(4, 0, 2), None),
    # 4.1+ (ELR on), SIGKILL = unclean: out of the ISR with no ELR (brokerWithUncleanShutdown), leader
    # -1 and last known leader 1; the unfence elects it, RECOVERING: one write fewer than fence first
    (Release(4, 1, 2), LAST_KNOWN_LEADER), (Release(4, 2, 0), LAST_KNOWN_LEADER),
    (Release(4, 3, 1), LAST_KNOWN_LEADER), (Release(4, 4, 0), LAST_KNOWN_LEADER),
])
def test_a_hard_restart_may_register_before_its_fence(release: Release, early: tuple | None) -> None:
    state = _single_replica(release)
    fenced = predict(state, [BrokerFailure((1,)), BrokerStartup((1,))])
    restarted = predict(state, [BrokerFailure((1,), restarting=True), BrokerStartup((1,))])
    # every fence-first plan stays, in the same order
    assert [row(a.state) for a in restarted.alternatives[:len(fenced.alternatives)]] == \
        [row(a.state) for a in fenced.alternatives]
    expected_fenced = [FENCED_FIRST] if not release.at_least(4, 1) else [FENCED_FIRST_UNCLEAN, FENCED_FIRST]
    assert [row(a.state) for a in fenced.alternatives] == expected_fenced
    extra = [(a.label, row(a.state)) for a in restarted.alternatives[len(fenced.alternatives):]]
    assert extra == ([] if early is None else [(f"event 0: {EARLY}: 1; brokers in order 1", early)])


def test_only_a_restart_names_the_early_registration() -> None:
    """A kill that is not followed by a start at once (hard_kill, power_failure: the harness
    waits for the fence) keeps the fence-first plans only."""
    state = _single_replica(Release(4, 4, 0))
    labels = [a.label for a in predict(state, [BrokerFailure((1,))]).alternatives]
    assert not any(EARLY in label for label in labels)


def test_of_two_brokers_restarted_each_may_register_first() -> None:
    """Two brokers (3.9.2, t-0 = [1, 2] led by 1): each fenced or registered first; what matters is
    which of them kept its registration, so the orders of the early ones collapse."""
    state = at(kraft({1, 2, 3}, {0: elr_p((1, 2), 1, (1, 2))}), Release(3, 9, 2))
    alternatives = predict(state, [BrokerFailure((1, 2), restarting=True), BrokerStartup((1, 2))]).alternatives
    assert [(a.label, row(a.state)) for a in alternatives] == [
        ("event 0: fenced 1 then 2", (2, (2, 1), (), (), 3, 4, RECOVERED)),
        ("event 0: fenced 2 then 1", (1, (1, 2), (), (), 2, 4, RECOVERED)),
        # 1 registers unfenced, no record; 2 fenced leaves the ISR (pe 1) and rejoins it (pe 2)
        (f"event 0: {EARLY}: 1; brokers in order 1 then 2", (1, (1, 2), (), (), 0, 2, RECOVERED)),
        (f"event 0: {EARLY}: 2; brokers in order 1 then 2", (2, (2, 1), (), (), 1, 2, RECOVERED)),
        (f"event 0: {EARLY}: 1, 2; brokers in order 1 then 2", (1, (1, 2), (), (), 0, 0, RECOVERED)),
    ]


def test_the_restart_flag_round_trips_and_older_histories_stay_byte_for_byte() -> None:
    assert codec.event_to_dict(BrokerFailure((4,))) == {"type": "broker_failure", "brokers": [4]}
    stored = codec.event_to_dict(BrokerFailure((4,), restarting=True))
    assert stored == {"type": "broker_failure", "brokers": [4], "restarting": True}
    assert codec.event_from_dict(stored) == BrokerFailure((4,), restarting=True)


def test_predict_takes_restarting_from_its_json() -> None:
    """``kafka-chaos predict`` offers the plan too: ``"restarting": true`` on a broker_failure (4.4.0:
    the last-known-leader election of explore-7703-7); without it the answer has no such plan."""
    request = {"mode": "kraft", "kafka_version": "4.4.0", "brokers": [1, 2],
               "topics": {"t": {"partitions": {"0": {"replicas": [1], "leader": 1, "isr": [1], "leader_epoch": 0,
                                                     "partition_epoch": 0}}}},
               "events": [{"type": "broker_failure", "brokers": [1], "restarting": True},
                          {"type": "broker_startup", "brokers": [1]}]}
    state, events = parse_request(request)
    assert events[0] == BrokerFailure((1,), restarting=True)
    labels = [a["label"] for a in render_prediction(predict(state, events))["alternatives"]]
    assert any(EARLY in label for label in labels)
    del request["events"][0]["restarting"]
    state, events = parse_request(request)
    assert not any(EARLY in a["label"] for a in render_prediction(predict(state, events))["alternatives"])

"""The ``kafka-chaos predict`` JSON contract: parsing, rendering and every rejection class."""

from __future__ import annotations

import copy

import pytest

from kafka_chaos.oracle import BrokerFailure, ControlledShutdown, CreateTopic, PartitionPhase, TopicConfigChange, predict
from kafka_chaos.oracle.jsonio import OracleInputError, parse_json_text, parse_request, render_prediction

ISSUE_EXAMPLE = {
    "brokers": [1, 2, 3],
    "controller": 1,
    "config": {"unclean.leader.election.enable": False},
    "topics": {
        "orders": {
            "config": {"unclean.leader.election.enable": "true"},
            "partitions": {"0": {"replicas": [1, 2, 3], "leader": 1, "isr": [1, 2, 3], "leader_epoch": 4}},
        }
    },
    "events": [
        {"type": "broker_failure", "brokers": [1]},
        {"type": "controlled_shutdown", "broker": 2},
        {"type": "broker_startup", "brokers": [1]},
        {"type": "reassign", "topic": "orders", "partition": 0, "replicas": [3, 2, 1]},
        {"type": "preferred_election", "partitions": [{"topic": "orders", "partition": 0}]},
        {"type": "unclean_election", "partitions": [{"topic": "orders", "partition": 0}]},
        {"type": "auto_rebalance"},
        {"type": "create_topic", "topic": "t2", "replicas": {"0": [2, 3, 1]}},
    ],
}


def test_issue_example_parses_and_renders():
    state, events = parse_request(ISSUE_EXAMPLE)
    assert state.live_brokers == frozenset({1, 2, 3}) and state.controller == 1
    assert dict(state.config) == {"unclean.leader.election.enable": "false"}  # JSON booleans -> Kafka strings
    assert [type(e).KIND for e in events] == [e["type"] for e in ISSUE_EXAMPLE["events"]]
    rendered = render_prediction(predict(state, events))
    assert set(rendered) >= {"brokers", "topics", "outcomes"}
    assert rendered["brokers"] == [1, 3]
    p = rendered["topics"]["orders"]["partitions"]["0"]
    assert {k: p[k] for k in ("replicas", "leader", "isr", "leader_epoch", "leader_recovery_state", "state")} == {
        "replicas": [3, 2, 1], "leader": 3, "isr": [3, 1], "leader_epoch": 8, "leader_recovery_state": 0,
        "state": "OnlinePartition",
    }
    assert rendered["topics"]["t2"]["partitions"]["0"]["leader"] == 3
    assert rendered["outcomes"][0] == {"event": 0, "topic": "orders", "partition": 0, "outcome": "elected"}
    assert {o["outcome"] for o in rendered["outcomes"]} <= {
        "elected", "unchanged", "no_replica_online", "election_not_needed", "preferred_leader_not_available",
        "unclean_elected"}


def test_output_can_be_fed_back_as_input():
    state, events = parse_request(ISSUE_EXAMPLE)
    rendered = render_prediction(predict(state, events))
    again, no_events = parse_request(rendered)
    assert again == predict(state, events).state and no_events == []


def test_phase_defaults_like_a_new_controller():
    state, _ = parse_request({
        "brokers": [2],
        "topics": {"t": {"partitions": {
            "0": {"replicas": [1, 2], "leader": 2, "isr": [2]},
            "1": {"replicas": [1, 2], "leader": 1, "isr": [1]},
            "2": {"replicas": [1, 2]},
            "3": {"replicas": [1, 2], "leader": -1, "isr": [1], "state": "OfflinePartition"},
        }}},
    })
    phases = [state.partition("t", i).phase for i in range(4)]
    assert phases == [PartitionPhase.ONLINE, PartitionPhase.OFFLINE, PartitionPhase.NEW, PartitionPhase.OFFLINE]
    assert state.partition("t", 0).leader_epoch == 0


def test_events_may_use_topics_created_earlier_and_brokers_introduced_by_them():
    _, events = parse_request({
        "brokers": [1],
        "events": [
            {"type": "create_topic", "topic": "x", "replicas": {"0": [1, 7]}, "config": {"retention.ms": 5}},
            {"type": "broker_failure", "brokers": [7]},
            {"type": "controlled_shutdown", "broker": 1},
            {"type": "topic_config_change", "topic": "x", "config": {"unclean.leader.election.enable": True,
                                                                     "retention.ms": None}},
        ],
    })
    assert events[0] == CreateTopic("x", {0: (1, 7)}, {"retention.ms": "5"})
    assert events[1] == BrokerFailure((7,)) and events[2] == ControlledShutdown(1)
    assert events[3] == TopicConfigChange("x", {"unclean.leader.election.enable": "true", "retention.ms": None})


def _with(path: str, value):
    """ISSUE_EXAMPLE with the value at a dotted path replaced (``...=DELETE`` removes it)."""
    request = copy.deepcopy(ISSUE_EXAMPLE)
    *parents, last = path.split(".")
    node = request
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is DELETE:
        del node[last]
    else:
        node[last] = value
    return request


DELETE = object()
P0 = "topics.orders.partitions.0"

BAD_REQUESTS = [
    # (name, request, field named in the error)
    ("not an object", [1, 2], "input"),
    ("brokers missing", _with("brokers", DELETE), "brokers"),
    ("broker id not an int", _with("brokers", [1, "2"]), "brokers.1"),
    ("duplicate live broker", _with("brokers", [1, 1]), "brokers"),
    ("controller not live", _with("controller", 9), "controller"),
    ("unknown top-level field", _with("topicz", {}), "topicz"),
    ("config boolean that is not one", _with("config", {"unclean.leader.election.enable": "yes"}), "config.unclean.leader.election.enable"),
    ("topic config value of the wrong type", _with("topics.orders.config", {"unclean.leader.election.enable": [1]}),
     "topics.orders.config.unclean.leader.election.enable"),
    ("partition id not a number", _with("topics.orders.partitions", {"zero": {"replicas": [1]}}), "topics.orders.partitions.zero"),
    ("duplicate replicas", _with(f"{P0}.replicas", [1, 2, 2]), f"{P0}.replicas"),
    ("no replicas", _with(f"{P0}.replicas", []), f"{P0}.replicas"),
    ("leader outside replicas", _with(f"{P0}.leader", 7), f"{P0}.leader"),
    ("ISR outside replicas", _with(f"{P0}.isr", [1, 2, 3, 4]), f"{P0}.isr"),
    ("leader not in ISR", _with(f"{P0}.isr", [2, 3]), f"{P0}.isr"),
    ("negative epoch", _with(f"{P0}.leader_epoch", -1), f"{P0}.leader_epoch"),
    ("bad recovery state", _with(f"{P0}.leader_recovery_state", 2), f"{P0}.leader_recovery_state"),
    ("bad state name", _with(f"{P0}.state", "Online"), f"{P0}.state"),
    ("misspelt partition field", _with(f"{P0}.isrs", [1]), f"{P0}.isrs"),
    ("events not a list", _with("events", {}), "events"),
    ("unknown event type", _with("events.0", {"type": "broker_reboot", "brokers": [1]}), "events.0.type"),
    ("event without type", _with("events.0", {"brokers": [1]}), "events.0.type"),
    ("unknown broker", _with("events.0", {"type": "broker_failure", "brokers": [9]}), "events.0.brokers.0"),
    ("unknown broker in shutdown", _with("events.1", {"type": "controlled_shutdown", "broker": 9}), "events.1.broker"),
    ("empty broker list", _with("events.0", {"type": "broker_startup", "brokers": []}), "events.0.brokers"),
    ("unknown topic", _with("events.3", {"type": "reassign", "topic": "nope", "partition": 0, "replicas": [1]}),
     "events.3.topic"),
    ("unknown partition", _with("events.4", {"type": "preferred_election", "partitions": [{"topic": "orders", "partition": 5}]}),
     "events.4.partitions.0.partition"),
    ("duplicate reassignment replicas", _with("events.3", {"type": "reassign", "topic": "orders", "partition": 0,
                                                           "replicas": [3, 3]}), "events.3.replicas"),
    ("missing event field", _with("events.3", {"type": "reassign", "topic": "orders", "partition": 0}), "events.3.replicas"),
    ("extra event field", _with("events.6", {"type": "auto_rebalance", "broker": 1}), "events.6.broker"),
    ("topic created twice", _with("events.7", {"type": "create_topic", "topic": "orders", "replicas": {"0": [1]}}),
     "events.7.topic"),
    ("config change of unknown topic", _with("events.7", {"type": "topic_config_change", "topic": "t9", "config": {}}),
     "events.7.topic"),
]


@pytest.mark.parametrize("name, request_obj, field", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_requests_name_the_field(name, request_obj, field):
    with pytest.raises(OracleInputError) as caught:
        parse_request(request_obj)
    assert caught.value.field == field
    assert "\n" not in str(caught.value) and str(caught.value).startswith(f"{field}: ")


def test_not_json():
    with pytest.raises(OracleInputError) as caught:
        parse_json_text('{"brokers": [1,')
    assert caught.value.field == "input" and "not valid JSON" in caught.value.message

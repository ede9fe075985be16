"""`kafka-chaos predict` never prints a traceback: any JSON (arbitrary values at every field of the
contract, arbitrary nesting) answers with exit 0 and JSON, or exit 2 and one line on stderr."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_chaos.cli.main import main

REPO = Path(__file__).resolve().parents[3]

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-3, max_value=12), st.integers(),
    st.floats(allow_nan=False), st.text(max_size=6),
    st.sampled_from(["true", " true", "TRUE", "false", "OnlinePartition", "NewPartition", "OfflinePartition",
                     "0", "1", "²", "٣", "01", "-1", "t", ""]),
)
ANY_JSON = st.recursive(
    SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=12,
)
BROKER = st.one_of(st.integers(min_value=0, max_value=6), ANY_JSON)
BROKERS = st.one_of(st.lists(BROKER, max_size=4), ANY_JSON)
EVENT_TYPES = ["broker_failure", "controlled_shutdown", "broker_startup", "reassign", "preferred_election",
               "unclean_election", "auto_rebalance", "create_topic", "topic_config_change", "delete_topic",
               "add_partitions", "log_dir_failure"]
PARTITION_KEY = st.one_of(st.sampled_from(["0", "1", "²", "01", "-1", "x", "１"]), st.text(max_size=3))


def maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(value, ANY_JSON)


PARTITION = st.fixed_dictionaries(
    {},
    optional={
        "replicas": BROKERS, "leader": maybe(st.integers(min_value=-1, max_value=6)), "isr": BROKERS,
        "leader_epoch": maybe(st.integers(min_value=0, max_value=9)), "leader_recovery_state": BROKER,
        "state": maybe(st.sampled_from(["OnlinePartition", "NewPartition", "OfflinePartition"])),
        "adding_replicas": BROKERS, "removing_replicas": BROKERS, "junk": ANY_JSON,
    },
)
CONFIG = maybe(st.dictionaries(
    st.sampled_from(["unclean.leader.election.enable", "auto.leader.rebalance.enable",
                     "controlled.shutdown.max.retries", "leader.imbalance.per.broker.percentage", "x"]),
    maybe(st.sampled_from(["true", "false", " true", "3", "0", "-1", "abc"])), max_size=3))
TOPIC = st.fixed_dictionaries({}, optional={
    "partitions": maybe(st.dictionaries(PARTITION_KEY, maybe(PARTITION), max_size=3)), "config": CONFIG})
TOPIC_PARTITION = maybe(st.fixed_dictionaries({}, optional={
    "topic": maybe(st.sampled_from(["t", "u", "new"])), "partition": maybe(st.integers(min_value=0, max_value=2))}))
EVENT = st.fixed_dictionaries({"type": maybe(st.sampled_from(EVENT_TYPES))}, optional={
    "brokers": BROKERS, "broker": BROKER, "topic": maybe(st.sampled_from(["t", "u", "new"])),
    "partition": maybe(st.integers(min_value=0, max_value=2)), "replicas": maybe(st.one_of(
        st.lists(st.integers(min_value=0, max_value=6), max_size=4),
        st.dictionaries(PARTITION_KEY, st.lists(st.integers(min_value=0, max_value=6), max_size=3), max_size=2))),
    "partitions": maybe(st.lists(TOPIC_PARTITION, max_size=3)), "config": CONFIG,
})
REQUEST = st.fixed_dictionaries({}, optional={
    "brokers": BROKERS, "controller": maybe(st.integers(min_value=0, max_value=6)), "config": CONFIG,
    "topics": maybe(st.dictionaries(st.sampled_from(["t", "u", ""]), maybe(TOPIC), max_size=2)),
    "events": maybe(st.lists(maybe(EVENT), max_size=4)), "outcomes": ANY_JSON, "extra": ANY_JSON,
    "topics_being_deleted": maybe(st.lists(maybe(st.sampled_from(["t", "u", "new"])), max_size=3)),
    "offline_replicas": maybe(st.dictionaries(st.one_of(st.sampled_from(["1", "2", "01", "x"]), st.text(max_size=3)),
                                              maybe(st.lists(TOPIC_PARTITION, max_size=2)), max_size=2)),
})


@st.composite
def valid_partition(draw: st.DrawFn, live: list[int]) -> dict[str, Any]:
    replicas = draw(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=4, unique=True))
    isr = [r for r in replicas if draw(st.booleans())]
    candidates = [r for r in isr if r in live] or [-1]
    leader = draw(st.sampled_from(candidates))
    if leader == -1 and isr and draw(st.booleans()):
        isr = isr[:1]
    if leader != -1 and leader not in isr:
        isr.append(leader)
    return {"replicas": replicas, "leader": leader, "isr": isr, "leader_epoch": draw(st.integers(0, 9))}


@st.composite
def valid_request(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly well-formed requests (so the oracle itself runs), one field now and then replaced by
    arbitrary JSON."""
    live = draw(st.lists(st.integers(min_value=1, max_value=6), max_size=5, unique=True))
    topics = {
        name: {"partitions": {str(p): draw(valid_partition(live)) for p in range(draw(st.integers(1, 2)))},
               "config": draw(st.sampled_from([{}, {"unclean.leader.election.enable": "true"},
                                               {"unclean.leader.election.enable": " true"}]))}
        for name in draw(st.lists(st.sampled_from(["t", "u"]), max_size=2, unique=True))
    }
    tps = [{"topic": t, "partition": int(p)} for t, body in topics.items() for p in body["partitions"]]
    some_brokers = st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=4, unique=True)
    event = st.one_of(
        st.builds(lambda b: {"type": "broker_failure", "brokers": b}, some_brokers),
        st.builds(lambda b: {"type": "broker_startup", "brokers": b}, some_brokers),
        st.builds(lambda b: {"type": "controlled_shutdown", "broker": b}, st.integers(1, 6)),
        st.builds(lambda: {"type": "auto_rebalance"}),
        st.builds(lambda ps: {"type": "preferred_election", "partitions": ps},
                  st.lists(st.sampled_from(tps), max_size=2) if tps else st.just([])),
        st.builds(lambda ps: {"type": "unclean_election", "partitions": ps},
                  st.lists(st.sampled_from(tps), max_size=2) if tps else st.just([])),
        st.builds(lambda r: {"type": "create_topic", "topic": "new", "replicas": {"0": r}}, some_brokers),
        *([st.builds(lambda tp, r: {"type": "reassign", **tp, "replicas": r}, st.sampled_from(tps), some_brokers),
           st.builds(lambda t, v: {"type": "topic_config_change", "topic": t,
                                   "config": {"unclean.leader.election.enable": v}},
                     st.sampled_from(sorted(topics)), st.sampled_from(["true", " true", None])),
           st.builds(lambda t: {"type": "delete_topic", "topic": t}, st.sampled_from(sorted(topics))),
           st.builds(lambda t, r: {"type": "add_partitions", "topic": t, "replicas": {"5": r}},
                     st.sampled_from(sorted(topics)), some_brokers),
           st.builds(lambda b, ps: {"type": "log_dir_failure", "broker": b, "partitions": ps},
                     st.integers(1, 6), st.lists(st.sampled_from(tps), max_size=2))]
          if tps else []),
    )
    request: dict[str, Any] = {
        "brokers": live, "topics": topics, "events": draw(st.lists(event, max_size=3)),
        "config": {"auto.leader.rebalance.enable": draw(st.sampled_from(["true", "false"]))},
    }
    if live and draw(st.booleans()):
        request["controller"] = draw(st.sampled_from(live))
    if topics and draw(st.booleans()):
        request["topics_being_deleted"] = draw(st.lists(st.sampled_from(sorted(topics)), max_size=2, unique=True))
    on_live = [(b, tp) for tp in tps for b in topics[tp["topic"]]["partitions"][str(tp["partition"])]["replicas"]
               if b in live]
    if on_live and draw(st.booleans()):
        b, tp = draw(st.sampled_from(on_live))
        request["offline_replicas"] = {str(b): [tp]}
    if draw(st.integers(0, 3)) == 0:  # now and then, one arbitrary value somewhere
        key = draw(st.sampled_from(sorted(request)))
        request[key] = draw(ANY_JSON)
    return request


def _predict(payload: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(payload))
    rc = main(["predict", "--compact", "-"])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _check(rc: int, out: str, err: str) -> None:
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err
    if rc == 0:
        answer = json.loads(out)
        assert answer["alternatives"] and answer["alternatives"][0]["label"]
    else:
        assert out == "" and err.startswith("kafka-chaos: error: ") and err.count("\n") == 1, err


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(REQUEST)
def test_any_request_of_the_contract_shape(capsys, monkeypatch, request_obj):
    _check(*_predict(json.dumps(request_obj), capsys, monkeypatch))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(valid_request())
def test_mostly_valid_requests_run_the_oracle(capsys, monkeypatch, request_obj):
    _check(*_predict(json.dumps(request_obj), capsys, monkeypatch))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ANY_JSON)
def test_any_json_value(capsys, monkeypatch, value):
    _check(*_predict(json.dumps(value), capsys, monkeypatch))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_any_text(capsys, monkeypatch, text):
    _check(*_predict(text, capsys, monkeypatch))


@pytest.mark.parametrize(
    "payload",
    [
        {"brokers": [1], "events": [{"type": ["broker_failure"], "brokers": [1]}]},
        {"brokers": [1], "events": [{"type": {"a": 1}}]},
        {"brokers": [1], "topics": {"t": {"partitions": {"0": {"replicas": [1], "state": ["OnlinePartition"]}}}}},
        {"brokers": [1], "topics": {"t": {"partitions": {"²": {"replicas": [1]}}}}},
        {"brokers": [1], "events": [{"type": "create_topic", "topic": "n", "replicas": {"²": [1]}}]},
        {"brokers": [1], "topics": {"t": {"partitions": {"１": {"replicas": [1]}}}}},  # fullwidth one
        {"brokers": [1], "topics": {"t": {"partitions": {"1": {"replicas": [1]}, "01": {"replicas": [1]}}}}},
    ],
)
def test_the_issue_inputs_exit_2_with_one_line(payload, capsys, monkeypatch):
    rc, out, err = _predict(json.dumps(payload), capsys, monkeypatch)
    assert rc == 2
    _check(rc, out, err)


@pytest.mark.parametrize("depth", [50, 5000, 200000])
def test_deeply_nested_json(depth, capsys, monkeypatch):
    for payload in ("[" * depth + "]" * depth, '{"brokers": ' + "[" * depth + "]" * depth + "}"):
        _check(*_predict(payload, capsys, monkeypatch))


def test_huge_integer_literal(capsys, monkeypatch):
    rc, out, err = _predict('{"brokers": [' + "9" * 5000 + "]}", capsys, monkeypatch)
    assert rc == 2
    _check(rc, out, err)


def test_as_a_process_no_traceback():
    for payload in ('{"brokers":[1],"events":[{"type":[1]}]}', "[" * 100000):
        done = subprocess.run([sys.executable, "-m", "kafka_chaos.cli.main", "predict", "-"], input=payload,
                              capture_output=True, text=True, cwd=REPO, timeout=60)
        assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1

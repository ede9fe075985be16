"""The ``roll`` fault: one broker of a rolling upgrade moved to another release and/or IBP."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, ReleaseRoller, capabilities_of, implements
from kafka_chaos.oracle import BrokerStartup, ControlledShutdown
from kafka_chaos.scenarios.faults import FaultEnv, make_fault, requirements_of
from kafka_chaos.scenarios.model.targets import Target
from kafka_chaos.scenarios.run.step import controller_settings

TARGET = Target((2,), "broker 2")


def roll(**options: object):  # type: ignore[no-untyped-def]
    return make_fault("roll", TARGET, options, topic_names={}, topic_partitions={})


class FakeRollingCluster:
    """Just what the roll and the oracle's release choice touch."""

    backend = "local"
    kafka_version = "2.8.2"
    broker_ids = [1, 2, 3]

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.versions = {1: "2.8.2", 2: "2.8.2", 3: "2.8.2"}
        self.overrides: dict[int, dict[str, str]] = {}
        self.running = {1: True, 2: True, 3: True}

    def broker_settings(self) -> dict[str, str]:
        return {"inter.broker.protocol.version": "2.8", "unclean.leader.election.enable": "false"}

    def stop_broker(self, b: int) -> None:
        self.calls.append(("stop", b))
        self.running[b] = False

    def start_broker(self, b: int) -> None:
        self.calls.append(("start", b, self.versions[b], dict(self.overrides.get(b, {}))))
        self.running[b] = True

    def broker_running(self, b: int) -> bool:
        return self.running[b]

    def broker_version(self, b: int) -> str:
        return self.versions[b]

    def broker_overrides(self, b: int) -> dict[str, str]:
        return dict(self.overrides.get(b, {}))

    def set_broker_release(self, b: int, kafka_version: str, overrides: Mapping[str, str]) -> None:
        if self.running[b]:
            raise HarnessError("running")
        self.versions[b] = kafka_version
        self.overrides[b] = {**self.overrides.get(b, {}), **overrides}


def test_options_build_and_are_refused_in_one_line() -> None:
    assert (roll(to="3.9.2").to, roll(to="3.9.2").ibp) == ("3.9.2", None)
    assert roll(to="3.9.2", ibp="3.9").label == "roll/to 3.9.2 ibp 3.9"
    assert roll(ibp="3.9").label == "roll/ibp 3.9"
    for options, message in [({}, "name the release to roll to"), ({"to": "4.0.0"}, "no ZooKeeper mode"),
                             ({"to": 3.9}, "strings"), ({"to": "3.9.2", "colour": 1}, "unknown option")]:
        with pytest.raises(UsageError, match=message):
            roll(**options)


def test_the_oracle_sees_a_restart_and_the_kind_needs_the_local_launcher() -> None:
    assert roll(to="3.9.2").oracle_events() == [ControlledShutdown(2), BrokerStartup((2,))]
    assert requirements_of(["roll"]) == {Capability.BROKER_CONTROL, Capability.BROKER_RELEASES}
    assert roll(to="3.9.2").holds == ()


def test_a_roll_stops_moves_and_starts_the_broker() -> None:
    cluster = FakeRollingCluster()
    assert implements(cluster, ReleaseRoller) and Capability.BROKER_RELEASES in capabilities_of(cluster)
    env = FaultEnv(cluster, None, None)  # type: ignore[arg-type]
    roll(to="3.9.2").inject(env)
    roll(ibp="3.9").inject(env)
    assert cluster.calls == [("stop", 2), ("start", 2, "3.9.2", {}),
                             ("stop", 2), ("start", 2, "3.9.2", {"inter.broker.protocol.version": "3.9"})]


@pytest.mark.parametrize("controller, release, ibp", [
    (1, "2.8.2", "2.8"),   # not rolled yet: the cluster's
    (2, "3.9.2", "3.9"),   # rolled, IBP raised: its own
    (None, "2.8.2", "2.8"),  # no controller known: the cluster's
])
def test_the_oracle_predicts_with_the_controllers_release(controller: int | None, release: str, ibp: str) -> None:
    cluster = FakeRollingCluster()
    env = FaultEnv(cluster, None, None)  # type: ignore[arg-type]
    roll(to="3.9.2", ibp="3.9").inject(env)
    settings, version = controller_settings(cluster, controller)  # type: ignore[arg-type]
    assert (version, settings["inter.broker.protocol.version"]) == (release, ibp)

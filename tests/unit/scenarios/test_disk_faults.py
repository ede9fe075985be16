"""The faults below the process (``scenarios.faults.disks``) against a fake cluster: a power
failure is a hard kill to the controller and records what each disk lost; a disk error fails the
writes of the directory ``log_dir_failure`` would fail, with ``log_dir_failure``'s oracle events;
both heal; bad options are one line; the schedule's ``cluster.filesystem`` and the generator sides
ask for the crash-consistency layer."""

from __future__ import annotations

from typing import Any, Sequence

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.lazyfs.mount import IoRule, PowerFailReport
from kafka_chaos.oracle import BrokerFailure, BrokerStartup, ControlledShutdown, LogDirFailure, TopicPartition
from kafka_chaos.scenarios.faults import GENERATORS, FaultEnv, Nemesis, make_fault, requirements_of
from kafka_chaos.scenarios.model.targets import Target
from kafka_chaos.scenarios.plans.schedule import schedule_from_json, schedule_to_json
from tests.unit.scenarios.test_log_dir_fault import STATE, FakeCluster


class FakeDisks(FakeCluster):
    """FakeCluster (log directories, broker control) + PowerFailer + DiskFaulter."""

    def power_fail_node(self, node_id: int) -> PowerFailReport:
        self.calls.append(("power_fail", node_id))
        self.running[node_id] = False
        return PowerFailReport(files_truncated=2, bytes_dropped=100, entries_undone=1,
                               undo_actions=tuple(f"rm /x/{i}" for i in range(30)))

    def disk_fault(self, node_id: int, rules: Sequence[IoRule]) -> None:
        self.calls.append(("disk_fault", node_id, tuple(rules)))

    def clear_disk_faults(self) -> None:
        self.calls.append(("clear",))


def _env(cluster: FakeCluster) -> FaultEnv:
    return FaultEnv(cluster, None, None)  # type: ignore[arg-type]


def _fault(kind: str, brokers: tuple[int, ...] = (1,), **options: Any) -> Any:
    return make_fault(kind, Target(brokers, "test"), options, topic_names={"t": "phys-t"},
                      topic_partitions={"t": (0, 1, 2, 3, 4, 5)})


def test_a_power_failure_is_a_hard_kill_to_the_controller_and_records_what_each_disk_lost() -> None:
    cluster = FakeDisks()
    f = _fault("power_failure", (1, 2))
    assert f.oracle_events() == [BrokerFailure((1, 2))]
    assert f.outcome is None  # nothing injected yet: the step records none
    f.inject(_env(cluster))
    assert cluster.calls == [("power_fail", 1), ("power_fail", 2)]
    lost = f.outcome["dropped"]["1"]
    assert (lost["files_truncated"], lost["bytes_dropped"], lost["entries_undone"]) == (2, 100, 1)
    assert len(lost["undo_actions"]) == 20 and lost["undo_actions_total"] == 30
    f.heal(_env(cluster))  # started again on what survived
    assert cluster.calls[-2:] == [("start", 1), ("start", 2)]
    assert requirements_of(["power_failure"]) >= {Capability.POWER_FAILURE, Capability.BROKER_CONTROL}


@pytest.mark.parametrize(("options", "rules"), [
    ({"dir": 1}, [IoRule("write", "1/*", error="EIO"), IoRule("fsync", "1/*", error="EIO")]),
    ({"dir": 0, "error": "ENOSPC", "files": "checkpoint"},
     [IoRule("write", "0/*checkpoint*", error="ENOSPC"), IoRule("fsync", "0/*checkpoint*", error="ENOSPC")]),
    ({"topic": "t", "partition": 3, "files": "log"},
     [IoRule("write", "1/*.log", error="EIO"), IoRule("fsync", "1/*.log", error="EIO")]),
])
def test_a_disk_error_fails_the_writes_of_the_directory_log_dir_failure_would_fail(options, rules) -> None:
    cluster = FakeDisks()  # log.dirs /d1/0 and /d1/1: the rules name them relative to the data directory
    f = _fault("disk_error", **options)
    index = options.get("dir", 1)
    held = tuple(TopicPartition(t, p) for t, p in cluster.held[(1, index)] if t != "old-topic")
    assert Nemesis(_env(cluster)).prepare(f, STATE) == [LogDirFailure(1, held)]
    f.inject(_env(cluster))
    assert cluster.calls == [("disk_fault", 1, tuple(rules))]
    f.heal(_env(cluster))  # the errors stop before the broker restarts
    assert cluster.calls[1:] == [("clear",), ("repair", 1), ("stop", 1), ("start", 1)]


def test_a_disk_error_on_the_only_directory_halts_the_broker_and_names_every_file() -> None:
    cluster = FakeDisks(dirs=1)
    f = _fault("disk_error", dir=0)
    assert Nemesis(_env(cluster)).prepare(f, STATE) == [BrokerFailure((1,))]
    f.inject(_env(cluster))
    assert cluster.calls == [("disk_fault", 1, (IoRule("write", "*", error="EIO"), IoRule("fsync", "*", error="EIO")))]


def test_the_disk_error_heal_step_clears_the_errors_then_restarts() -> None:
    cluster = FakeDisks()
    heal = _fault("disk_error", variant="heal")
    assert heal.label == "disk_error/heal" and heal.releases == (1,)
    assert Nemesis(_env(cluster)).prepare(heal, STATE) == [ControlledShutdown(1), BrokerStartup((1,))]
    heal.inject(_env(cluster))
    assert cluster.calls == [("clear",), ("repair", 1), ("stop", 1), ("start", 1)]


@pytest.mark.parametrize(("options", "message"), [
    ({"error": "EPERM"}, "disk_error: 'error' must be one of EIO, ENOSPC, not 'EPERM'"),
    ({"files": "index"}, "disk_error: 'files' must be one of all, log, checkpoint, not 'index'"),
    ({"dir": -1}, "'dir'"),
])
def test_bad_disk_error_options_are_one_line(options, message) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        _fault("disk_error", **options)


def _schedule(**cluster: Any) -> dict[str, Any]:
    return {"schedule_version": 1, "name": "s", "cluster": {"brokers": [1, 2, 3], **cluster},
            "topics": [{"name": "t", "assignment": {"0": [1, 2]}}],
            "steps": [{"fault": "power_failure", "target": {"brokers": [1]}},
                      {"fault": "start", "target": {"earlier": 0}}]}


def test_a_schedule_asks_for_the_layer_and_round_trips_it() -> None:
    s = schedule_from_json(_schedule(filesystem="lazyfs"))
    assert s.needs.filesystem == "lazyfs" and "data on lazyfs" in s.needs.describe()
    assert schedule_to_json(s)["cluster"]["filesystem"] == "lazyfs"
    # a power failure needs the layer: a schedule that does not ask for it gets it
    assert schedule_from_json(_schedule()).scenario().needs.filesystem == "lazyfs"
    with pytest.raises(UsageError, match=r"schedule\.cluster\.filesystem: must be one of 'plain', 'lazyfs', not 'ext4'"):
        schedule_from_json(_schedule(filesystem="ext4"))


def test_generated_power_failures_and_disk_errors_ask_for_the_layer_and_are_opt_in() -> None:
    for kind in ("power_failure", "disk_error"):
        side = GENERATORS[kind]
        assert side.opt_in and side.filesystem == "lazyfs" and side.shapes_cluster
    assert GENERATORS["disk_error"].log_dirs == 2


def test_the_controller_brokers_power_failure_is_zookeeper_modes_and_the_quorum_leaders_krafts() -> None:
    controller = _fault("controller_power_failure")
    assert controller.modes == {"zookeeper"} and controller.oracle_events() == [BrokerFailure((1,))]
    quorum = _fault("quorum_leader_power_failure", (3000,))
    assert quorum.modes == {"kraft"}
    assert requirements_of(["quorum_leader_power_failure"]) >= {Capability.CONTROLLER_QUORUM, Capability.POWER_FAILURE}
    cluster = FakeDisks()
    quorum._take_down(_env(cluster), 3000)  # the step's kill of the leader, as a power failure
    assert cluster.calls == [("power_fail", 3000)] and quorum.outcome["dropped"]["3000"]["files_truncated"] == 2


def test_a_disk_stall_slows_every_operation_of_its_kind_for_a_while_and_predicts_nothing(monkeypatch) -> None:
    import kafka_chaos.scenarios.faults.disks as disks

    slept: list[float] = []
    monkeypatch.setattr(disks.time, "sleep", slept.append)
    cluster = FakeDisks()
    f = _fault("disk_stall", (2, 3), op="fsync", delay_ms=1000, seconds=10)
    assert f.oracle_events() == [] and f.label == "disk_stall/fsync/1000ms" and f.client_windows
    f.inject(_env(cluster))
    assert cluster.calls == [("disk_fault", 2, (IoRule("fsync", "*", delay_ms=1000),)),
                             ("disk_fault", 3, (IoRule("fsync", "*", delay_ms=1000),)), ("clear",)]
    assert slept == [10.0]
    assert _fault("disk_stall").label == "disk_stall/write/200ms"  # the defaults


@pytest.mark.parametrize(("options", "message"), [
    ({"op": "truncate"}, "disk_stall: 'op' must be one of write, fsync, read, not 'truncate'"),
    ({"delay_ms": 1001}, r"disk_stall: 'delay_ms' must be an integer in \(0, 1000\], not 1001"),
    ({"delay_ms": 0.5}, r"disk_stall: 'delay_ms' must be an integer"),
    ({"seconds": 31}, r"disk_stall: 'seconds' must be a number in \(0, 30\], not 31"),
    ({"stall": 1}, "disk_stall: unknown option\\(s\\) 'stall': 'op', 'delay_ms', 'seconds'"),
])
def test_bad_disk_stall_options_are_one_line(options, message) -> None:
    with pytest.raises(UsageError, match=message):
        _fault("disk_stall", **options)


def test_the_checks_count_every_kind_that_power_fails_brokers() -> None:
    """The delivery and history checks allow a loss after the kinds they name (checks import no
    fault): every registered kind needing POWER_FAILURE but the KRaft quorum leader's, whose
    power failure takes no broker's log."""
    from kafka_chaos.scenarios.checks.registry import BROKER_POWER_FAILURES
    from kafka_chaos.scenarios.faults import FAULTS

    power = {k for k, entry in FAULTS.items() if Capability.POWER_FAILURE in entry.requires}
    assert BROKER_POWER_FAILURES == power - {"quorum_leader_power_failure"}

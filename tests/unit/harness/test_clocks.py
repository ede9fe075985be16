"""kafka_chaos.harness.local.clocks: the libfaketime command prefix, the control file and the
launcher mixin's bookkeeping (no JVM: a real node under libfaketime is tests/integration/test_clocks.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import ClusterConfig
from kafka_chaos.harness.local import clocks
from kafka_chaos.harness.local.clocks import (
    CONTROL_FILE,
    LocalClockControls,
    drift_offset,
    faked_command,
    offset_spec,
    write_offset,
)
from kafka_chaos.harness.local.nodes import LocalNode


def test_the_command_runs_under_libfaketime_with_the_measured_settings() -> None:
    cmd = faked_command(["java", "-cp", "x", "Main", "/run/broker-1/server.properties"], Path("/lib/ft.so.1"),
                        Path("/run/broker-1/faketime.rc"))
    assert cmd[0] == "/usr/bin/env" and cmd[-5:] == ["java", "-cp", "x", "Main", "/run/broker-1/server.properties"]
    assert cmd[1:6] == ["LD_PRELOAD=/lib/ft.so.1", "FAKETIME_TIMESTAMP_FILE=/run/broker-1/faketime.rc",
                        "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_FORCE_MONOTONIC_FIX=0", "FAKETIME_CACHE_DURATION=1"]


@pytest.mark.parametrize(("offset", "text"), [(0.0, "+0.000\n"), (60, "+60.000\n"), (-45.5, "-45.500\n"),
                                              (0.0004, "+0.000\n")])
def test_the_control_file_holds_a_relative_offset(offset: float, text: str) -> None:
    assert offset_spec(offset) == text


@given(st.floats(-1e4, 1e4), st.floats(0.01, 10), st.floats(0, 1e5))
def test_a_drift_gains_rate_minus_one_per_second(base: float, rate: float, elapsed: float) -> None:
    assert drift_offset(base, rate, elapsed) == pytest.approx(base + (rate - 1) * elapsed)
    assert drift_offset(base, 1.0, elapsed) == base
    if rate > 1.0:  # a fast clock only gains, a slow one only loses
        assert drift_offset(base, rate, elapsed) >= base
    elif rate < 1.0:
        assert drift_offset(base, rate, elapsed) <= base


class _Launcher(LocalClockControls):
    """The mixin over a launcher's node maps (a ZooKeeper-mode one: brokers and ZooKeeper servers)."""

    def __init__(self, root: Path, fake: bool) -> None:
        self.config = ClusterConfig(brokers=2, fake_clocks=fake)
        self._brokers = {b: _node(root, f"broker-{b}") for b in (1, 2)}
        self._zk_ensemble = {1: _node(root, "zookeeper")}


def _node(root: Path, name: str) -> LocalNode:
    (root / name).mkdir()
    return LocalNode(name, root / name, 0, root / name / "server.properties", ["java", "Main"])


def test_nodes_start_under_libfaketime_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocks, "libfaketime_path", lambda: Path("/lib/ft.so.1"))
    (tmp_path / "plain").mkdir()
    plain = _Launcher(tmp_path / "plain", fake=False)
    plain._fake_clocks(plain._brokers.values())
    assert plain._brokers[1].command == ["java", "Main"] and not (plain._brokers[1].directory / CONTROL_FILE).exists()
    with pytest.raises(HarnessError, match="host's clock"):
        plain.set_clock("broker", 1, offset_s=5)
    plain.heal_clocks()  # nothing to heal

    (tmp_path / "fake").mkdir()
    fake = _Launcher(tmp_path / "fake", fake=True)
    fake._fake_clocks([*fake._zk_ensemble.values(), *fake._brokers.values()])
    assert fake._brokers[2].command[0] == "/usr/bin/env" and fake._brokers[2].command[-2:] == ["java", "Main"]
    fake.set_clock("broker", 2, offset_s=60)
    fake.set_clock("zookeeper", 1, offset_s=-30)
    assert (fake._brokers[2].directory / CONTROL_FILE).read_text() == "+60.000\n"
    assert (fake._zk_ensemble[1].directory / CONTROL_FILE).read_text() == "-30.000\n"
    assert (fake._brokers[1].directory / CONTROL_FILE).read_text() == "+0.000\n"
    with pytest.raises(UsageError, match="no controller 3000"):
        fake.set_clock("controller", 3000, offset_s=5)
    with pytest.raises(UsageError, match="role must be one of"):
        fake.set_clock("client", 1)
    with pytest.raises(UsageError, match="rate must lie"):
        fake.set_clock("broker", 1, rate=0)
    fake.heal_clocks()
    assert {(n.directory / CONTROL_FILE).read_text() for n in fake._clock_nodes().values()} == {"+0.000\n"}


def test_no_libfaketime_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocks, "libfaketime_path", lambda: None)
    launcher = _Launcher(tmp_path, fake=True)
    with pytest.raises(HarnessError, match="apt-get install libfaketime"):
        launcher._fake_clocks(launcher._brokers.values())
    assert set(clocks.clock_problems()) == {clocks.Capability.CLOCK_CONTROL}


def test_a_drift_rewrites_the_offset_until_healed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocks, "libfaketime_path", lambda: Path("/lib/ft.so.1"))
    monkeypatch.setattr(clocks, "DRIFT_STEP_S", 0.01)
    launcher = _Launcher(tmp_path, fake=True)
    launcher._fake_clocks(launcher._brokers.values())
    control = launcher._brokers[1].directory / CONTROL_FILE
    launcher.set_clock("broker", 1, offset_s=10, rate=2.0)
    deadline = time.monotonic() + 10
    while control.read_text() == "+10.000\n" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert float(control.read_text()) > 10  # 2x: it gains
    launcher.heal_clocks()  # joins the drift's thread: its last write cannot land after the heal's
    assert control.read_text() == "+0.000\n"
    assert not any(t.name.startswith("clock-drift-") for t in threading.enumerate())


def test_the_write_replaces_the_file_whole(tmp_path: Path) -> None:
    control = tmp_path / CONTROL_FILE
    write_offset(control, 1.5)
    write_offset(control, -2)
    assert control.read_text() == "-2.000\n" and sorted(p.name for p in tmp_path.iterdir()) == [CONTROL_FILE]

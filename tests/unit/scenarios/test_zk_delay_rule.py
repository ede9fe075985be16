"""kafka_chaos.scenarios.model.zk_delay_rule (docs/zookeeper-faults.md R5): tables of the regimes and thresholds
against what the benchmark measured on a real cluster, Hypothesis properties of the rule, and
the network_delay fault refusing a claim the rule refutes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.common.errors import UsageError
from kafka_chaos.scenarios.faults import make_fault
from kafka_chaos.scenarios.faults.base import FaultEnv
from kafka_chaos.scenarios.model.targets import Target
from kafka_chaos.scenarios.model.zk_delay_rule import Regime, ZkTiming, predict, refuted_claim, thresholds_ms

OURS = ZkTiming(session_ms=6000, tick_ms=500, servers=1)  # the test clusters' settings


@pytest.mark.parametrize(("delay_ms", "regime", "expires"), [
    (0, Regime.STEADY, False),
    (1000, Regime.STEADY, False),  # the onset's reply comes exactly at readTimeout: no drop yet
    (1500, Regime.ONE_DROP, False),  # measured: 0/3 expired, 1 drop per run
    (2400, Regime.FLAPPING, False),  # measured: 0/3 expired, 3 drops per run
    (2999, Regime.FLAPPING, False),
    (3000, Regime.LATE_EXPIRY, True),  # 2D = connectTimeout: measured 3/3, 13.1-15.0 s
    (3600, Regime.LATE_EXPIRY, True),  # measured 15.0, 15.4 s
    (3999, Regime.LATE_EXPIRY, True),
    (4000, Regime.LATE_EXPIRY, True),  # the onset gap is session: survives it only by the rounding
    (4499, Regime.LATE_EXPIRY, True),
    (4500, Regime.EXPIRY, True),  # measured 3/3, 4.2-6.2 s
    (6000, Regime.EXPIRY, True),  # measured 6.3-6.4 s
    (9000, Regime.EXPIRY, True),  # measured 6.1-6.4 s
])
def test_regimes_with_our_settings(delay_ms: float, regime: Regime, expires: bool) -> None:
    verdict = predict(OURS, delay_ms)
    assert (verdict.regime, verdict.expires) == (regime, expires)


@pytest.mark.parametrize(("delay_ms", "measured_s"), [
    # docs/zookeeper-faults.md R5: the first runs (fixed phase), then runs A and B (random phase, captured)
    (3000, [14.7, 13.1, 15.0, 14.4, 13.0, 13.8, 14.9]),
    (3600, [15.0, 15.4, 15.1, 15.2, 15.3]),
    (4000, [14.3, 14.6, 14.7]),
    (4200, [4.3, 14.6, 16.3]),  # the band: one expired at the onset, two survived it
    (4500, [4.2, 6.0, 6.2, 6.1, 4.4, 5.2, 5.6]),
    (6000, [6.3, 6.4, 4.3, 6.2]),
    (9000, [6.1, 6.4, 5.6, 5.4]),
])
def test_measured_expiry_times_lie_in_the_predicted_range(delay_ms: float, measured_s: list[float]) -> None:
    window = predict(OURS, delay_ms).expiry_after_ms
    assert window is not None
    for seconds in measured_s:
        assert window[0] <= seconds * 1000 <= window[1] + 300  # + the watcher's poll and a loaded machine


def test_thresholds_of_our_settings() -> None:
    assert thresholds_ms(OURS) == {"drop_at_onset": 1000, "flapping": 2000, "no_reconnect": 3000,
                                   "expiry_at_onset": 4000, "expiry_at_onset_certain": 4500}


@pytest.mark.parametrize(("timing", "delay_ms", "regime", "expires"), [
    # Three servers: connectTimeout 2 s, so no reconnect completes from 1 s on, but attempts
    # come 2.1-4.1 s apart and keep the session; only the onset gap can expire it.
    (ZkTiming(6000, 500, 3), 3600, Regime.FLAPPING, False),
    (ZkTiming(6000, 500, 3), 4200, Regime.FLAPPING, None),
    (ZkTiming(6000, 500, 3), 4500, Regime.EXPIRY, True),
    # Kafka's default 18 s session and ZooKeeper's default 3 s tick: the failed reconnects'
    # ConnectRequests come 19.1-20.1 s apart, within a tick of the session: open; from the onset
    # threshold (12 s) + a tick on it always expires.
    (ZkTiming(18000, 3000, 1), 8000, Regime.FLAPPING, False),
    (ZkTiming(18000, 3000, 1), 9000, Regime.FLAPPING, None),
    (ZkTiming(18000, 3000, 1), 15000, Regime.EXPIRY, True),
])
def test_other_settings(timing: ZkTiming, delay_ms: float, regime: Regime, expires: bool | None) -> None:
    verdict = predict(timing, delay_ms)
    assert (verdict.regime, verdict.expires) == (regime, expires)


def test_jitter_that_straddles_a_threshold_leaves_it_open() -> None:
    assert predict(OURS, 2900, 200).expires is None  # 2D straddles connectTimeout
    assert predict(OURS, 1000, 200).expires is False  # the catalogue's 1 s ± 0.2 s: lives
    assert predict(OURS, 9000, 0).expires is True


def test_a_session_outside_the_negotiable_range_is_refused() -> None:
    with pytest.raises(ValueError, match="20"):
        ZkTiming(60000, 500, 1)
    with pytest.raises(ValueError, match="positive"):
        ZkTiming(6000, 500, 0)


timings = st.builds(lambda tick, ticks, servers: ZkTiming(tick * ticks, tick, servers),
                    st.integers(50, 3000), st.integers(2, 20), st.integers(1, 5))
delays = st.floats(0, 120_000, allow_nan=False)
jitters = st.floats(0, 5_000, allow_nan=False)


@given(timings, delays, delays)
def test_a_longer_delay_never_makes_expiry_less_certain(t: ZkTiming, a: float, b: float) -> None:
    rank = {False: 0, None: 1, True: 2}
    short, long = sorted((a, b))
    assert rank[predict(t, short).expires] <= rank[predict(t, long).expires]


@given(timings, delays, jitters, st.floats(-1, 1))
def test_a_certain_verdict_with_jitter_holds_for_every_delay_it_spans(t: ZkTiming, delay: float, jitter: float,
                                                                       u: float) -> None:
    verdict = predict(t, delay, jitter)
    if verdict.expires is not None:
        assert predict(t, max(0.0, delay + u * jitter)).expires in (verdict.expires, None)


@given(timings, delays, jitters)
def test_an_expiry_has_a_window_that_starts_after_the_last_undelayed_ping(t: ZkTiming, delay: float,
                                                                          jitter: float) -> None:
    verdict = predict(t, delay, jitter)
    if verdict.expires:
        assert verdict.expiry_after_ms is not None
        low, high = verdict.expiry_after_ms
        assert t.session_ms - t.ping_interval_ms <= low <= high
    else:
        assert verdict.regime not in (Regime.EXPIRY, Regime.LATE_EXPIRY)


@given(timings, delays)
def test_from_the_onset_threshold_plus_a_tick_it_always_expires(t: ZkTiming, delay: float) -> None:
    verdict = predict(t, delay)
    if delay >= thresholds_ms(t)["expiry_at_onset_certain"]:
        assert (verdict.regime, verdict.expires) == (Regime.EXPIRY, True)
    if delay < thresholds_ms(t)["drop_at_onset"] and delay + t.ping_interval_ms <= t.session_ms:
        assert verdict.expires is False


# --- the network_delay fault refuses a claim R5 refutes --------------------------------------------

class Cluster:
    zookeeper_connect = "127.0.0.1:2181"


def _env(servers: int = 1) -> FaultEnv:
    cluster = Cluster()
    cluster.zookeeper_connect = ",".join(f"127.0.0.1:{2181 + i}" for i in range(servers))
    return FaultEnv(cluster=cluster, observer=None, admin=None)  # type: ignore[arg-type]


TWO = Target((2,), "broker 2")
TOPICS: dict[str, Any] = {"topic_names": {}, "topic_partitions": {}}


@pytest.mark.parametrize(("delay_ms", "expect", "servers"), [
    (1000, "nothing", 1), (9000, "session_expiry", 1), (3600, "session_expiry", 1),
    (3600, "nothing", 3),  # an ensemble keeps it
    (4200, "session_expiry", 1),  # expires at the onset or after the failed reconnect
    (4200, "nothing", 3), (4200, "session_expiry", 3),  # an ensemble: within a tick of the onset threshold, open
])
def test_claims_r5_backs_or_leaves_open_pass(delay_ms: float, expect: str, servers: int) -> None:
    fault = make_fault("network_delay", TWO, {"delay_ms": delay_ms, "expect": expect}, **TOPICS)
    fault.prepare(_env(servers), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("delay_ms", "expect", "servers"), [
    (4500, "nothing", 1), (3000, "nothing", 1), (2400, "session_expiry", 1), (3600, "session_expiry", 3),
])
def test_claims_r5_refutes_are_one_line_errors(delay_ms: float, expect: str, servers: int) -> None:
    fault = make_fault("network_delay", TWO, {"delay_ms": delay_ms, "expect": expect}, **TOPICS)
    with pytest.raises(UsageError, match="contradicts docs/zookeeper-faults.md R5"):
        fault.prepare(_env(servers), None)  # type: ignore[arg-type]


def test_the_heal_step_and_other_claims_are_not_checked() -> None:
    make_fault("network_delay", TWO, {"variant": "heal", "expect": "nothing"}, **TOPICS).prepare(_env(), None)  # type: ignore[arg-type]
    assert refuted_claim("isr_shrink", 9000, 0, OURS) is None


# --- the benchmark's capture decoder (benchmarks/zookeeper_delay_bench.py --capture) --------------

def _bench() -> Any:
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "zookeeper_delay_bench.py"
    spec = importlib.util.spec_from_file_location("zookeeper_delay_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _frame(payload: bytes) -> bytes:
    import struct

    return struct.pack("!i", len(payload)) + payload


def _pcap(segments: list[tuple[float, int, int, int, bytes]]) -> bytes:
    """A classic little-endian pcap of Ethernet/IPv4/TCP segments (time, src, dst, flags, payload)."""
    import struct

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for time, src, dst, flags, payload in segments:
        tcp = struct.pack("!HHIIBBHHH", src, dst, 0, 0, 5 << 4, flags, 65535, 0, 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1") + tcp
        frame = b"\0" * 12 + b"\x08\x00" + ip
        out.append(struct.pack("<IIII", int(time), round((time % 1) * 1e6), len(frame), len(frame)) + frame)
    return b"".join(out)


def test_the_capture_decoder_names_the_zookeeper_frames_of_the_session(tmp_path: Any) -> None:
    import struct

    bench = _bench()
    session, proxy, zk = 0x1000A, 4000, 2181
    connect = _frame(struct.pack("!iqiq", 0, 0x40, 6000, session) + struct.pack("!i", 0) + b"\0")
    expired = _frame(struct.pack("!iiq", 0, 0, session) + struct.pack("!i", 0) + b"\0")
    ping = _frame(struct.pack("!ii", -2, 11))
    path = tmp_path / "point.pcap"
    path.write_bytes(_pcap([
        (100.0, 5000, proxy, 0x10, ping),  # an established connection: no SYN seen
        (101.0, 5001, proxy, 0x02, b""), (101.0, 6001, zk, 0x02, b""),
        (101.1, 5001, proxy, 0x18, connect), (104.1, 6001, zk, 0x18, connect),
        (104.1, zk, 6001, 0x18, expired), (104.2, 7000, zk, 0x18, ping),  # another session's connection
        (104.3, 5000, proxy, 0x11, b""),
    ]))
    packets = bench.session_packets(bench.decode(bench.read_pcap(path), proxy, zk), session, None)
    assert [(p.time, p.side, p.conn, p.what) for p in packets] == [
        (100.0, "client", 5000, "ping"),
        (101.0, "client", 5001, "SYN (connect)"), (101.0, "server", 6001, "SYN (connect)"),
        (101.1, "client", 5001, "ConnectRequest (session 0x1000a, timeout 6000 ms)"),
        (104.1, "server", 6001, "ConnectRequest (session 0x1000a, timeout 6000 ms)"),
        (104.1, "server", 6001, "ConnectResponse (session EXPIRED)"),
        (104.3, "client", 5000, "FIN"),
    ]
    lines = bench.timeline(100.0, packets, [(102.0, "zookeeper log: Expiring session 0x1000a")])
    assert lines[0].startswith("  +0.00 s  broker -> proxy") and "+2.00 s  zookeeper log" in lines[4]

"""kafka_chaos.harness.link_proxy: the pure delivery schedule (tables, Hypothesis) and the proxy itself on
real loopback sockets (an echo server behind it)."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.link_proxy import HEALTHY, DeliveryClock, Faults, LinkProxy, RemoteLinkProxy

# ---------------------------------------------------------------- the schedule (pure)


@pytest.mark.parametrize(("reads", "expected"), [
    # (now s, delay ms, jitter ms, spread) -> delivery s
    ([(0.0, 0, 0, 0.0)], [0.0]),
    ([(0.0, 100, 0, 0.0), (0.01, 100, 0, 0.0)], [0.1, 0.11]),
    ([(0.0, 100, 50, 1.0), (0.01, 100, 50, -1.0)], [0.15, 0.15]),  # jitter never reorders: held back
    ([(0.0, 100, 0, 0.0), (0.02, 0, 0, 0.0)], [0.1, 0.1]),  # delay lowered: still after the earlier chunk
    ([(0.0, 10, 50, -1.0)], [0.0]),  # delay - jitter below zero: now, not the past
    ([(5.0, 1000, 0, 0.0), (7.0, 0, 0, 0.0)], [6.0, 7.0]),
])
def test_delivery_table(reads: list[tuple[float, float, float, float]], expected: list[float]) -> None:
    clock = DeliveryClock()
    got = [clock.schedule(now, Faults(delay, jitter), spread) for now, delay, jitter, spread in reads]
    assert got == pytest.approx(expected)


_read = st.tuples(st.floats(0, 2.0), st.floats(0, 5000), st.floats(0, 5000), st.floats(-1, 1))


@given(st.lists(_read, min_size=1, max_size=60))
def test_order_preserved_and_delays_within_bounds(reads: list[tuple[float, float, float, float]]) -> None:
    clock = DeliveryClock()
    now, previous = 0.0, float("-inf")
    for gap, delay, jitter, spread in reads:
        now += gap
        at = clock.schedule(now, Faults(delay, jitter), spread)
        assert at >= previous  # never overtakes an earlier chunk
        assert at >= now + max(0.0, delay - jitter) / 1000 - 1e-9  # never earlier than the least delay
        assert at <= max(previous, now + (delay + jitter) / 1000) + 1e-9  # late only to keep order
        previous = at


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 10**9, True, "5"])
def test_faults_refuse_bad_numbers(bad: object) -> None:
    with pytest.raises(HarnessError):
        Faults(delay_ms=bad)  # type: ignore[arg-type]


def test_spread_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError):
        DeliveryClock().schedule(0.0, HEALTHY, 1.5)


# ---------------------------------------------------------------- the proxy on loopback


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.accepted += 1  # type: ignore[attr-defined]
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    server.accepted = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo: socketserver.ThreadingTCPServer) -> Iterator[LinkProxy]:
    with LinkProxy({"l": ("127.0.0.1", echo.server_address[1])}, seed=7) as p:
        yield p


def _connect(proxy: LinkProxy) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", proxy.port("l")), timeout=5)
    conn.settimeout(5)
    return conn


def _round_trip(conn: socket.socket, payload: bytes) -> tuple[bytes, float]:
    began = time.monotonic()
    conn.sendall(payload)
    got = b""
    while len(got) < len(payload):
        got += conn.recv(65536)
    return got, time.monotonic() - began


def test_forwards_both_ways(proxy: LinkProxy) -> None:
    with _connect(proxy) as conn:
        payload = bytes(range(256)) * 2000  # 512 KB: several chunks, back-pressure on the way
        assert _round_trip(conn, payload)[0] == payload


def test_delay_applies_to_each_direction(proxy: LinkProxy) -> None:
    with _connect(proxy) as conn:
        proxy.set_faults("l", upstream=Faults(150), downstream=Faults(100))
        got, took = _round_trip(conn, b"ping")
        assert got == b"ping"
        assert took >= 0.25  # 150 ms there, 100 ms back
        proxy.heal()
        assert _round_trip(conn, b"pong")[1] < 0.25


def test_jitter_keeps_the_byte_order(proxy: LinkProxy) -> None:
    proxy.set_faults("l", upstream=Faults(5, 20), downstream=Faults(5, 20))
    with _connect(proxy) as conn:
        sent = b""
        for i in range(60):  # separate writes: separate chunks with separate jitter
            line = f"{i:04d}\n".encode()
            conn.sendall(line)
            sent += line
            time.sleep(0.002)
        got = b""
        while len(got) < len(sent):
            got += conn.recv(65536)
        assert got == sent


def test_cut_holds_traffic_until_heal(proxy: LinkProxy) -> None:
    with _connect(proxy) as conn:
        assert _round_trip(conn, b"a")[0] == b"a"
        proxy.set_faults("l", upstream=Faults(cut=True), downstream=HEALTHY)
        conn.sendall(b"b")
        conn.settimeout(0.5)
        with pytest.raises(TimeoutError):
            conn.recv(10)
        proxy.heal()
        conn.settimeout(5)
        assert conn.recv(10) == b"b"


def test_cut_holds_new_connections_and_drops_abandoned_ones(
        proxy: LinkProxy, echo: socketserver.ThreadingTCPServer) -> None:
    proxy.set_faults("l", upstream=HEALTHY, downstream=Faults(cut=True))
    abandoned = _connect(proxy)
    abandoned.sendall(b"never")
    abandoned.close()  # gave up while the link was cut
    held = _connect(proxy)
    held.sendall(b"held")
    time.sleep(0.3)
    assert echo.accepted == 0  # type: ignore[attr-defined]
    proxy.heal()
    with held:
        got = b""
        while len(got) < 4:
            got += held.recv(10)
        assert got == b"held"
    assert echo.accepted == 1  # type: ignore[attr-defined]


def test_remote_control_and_clean_stop(echo: socketserver.ThreadingTCPServer) -> None:
    proxy = LinkProxy({"l": ("127.0.0.1", echo.server_address[1])}).start()
    remote = RemoteLinkProxy(proxy.control_port)
    port = remote.port("l")
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    remote.set_faults("l", upstream=Faults(200, 10), downstream=HEALTHY)
    [status] = remote.status()
    assert (status.upstream, status.connections) == (Faults(200, 10), 1)
    with pytest.raises(HarnessError, match="no link"):
        remote.set_faults("other", upstream=HEALTHY, downstream=HEALTHY)
    proxy.stop()
    conn.settimeout(5)
    assert conn.recv(10) == b""  # the proxy closed its side
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    assert not any(t.name == "link-proxy" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(HarnessError):
        proxy.set_faults("l", upstream=HEALTHY, downstream=HEALTHY)


def test_a_client_that_leaves_does_not_take_back_what_it_sent() -> None:
    """The server keeps writing to a client that sends, closes and is gone: the proxy's writes
    to it fail, yet the bytes the client sent before leaving, still in flight, reach the server
    on time (a ZooKeeper client giving up a connection does not take back its pings)."""
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def record(conn: socket.socket) -> None:
        while data := conn.recv(100):
            received.append(data)

    accepted: list[socket.socket] = []

    def serve_and_record() -> None:
        conn, _ = listener.accept()
        accepted.append(conn)
        conn.settimeout(5)
        ticker = threading.Thread(target=_tick, args=(conn,), daemon=True)
        ticker.start()
        try:
            record(conn)
        except OSError:
            pass

    thread = threading.Thread(target=serve_and_record, daemon=True)
    thread.start()
    with LinkProxy({"l": ("127.0.0.1", listener.getsockname()[1])}) as proxy:
        proxy.set_faults("l", upstream=Faults(400), downstream=HEALTHY)
        client = socket.create_connection(("127.0.0.1", proxy.port("l")), timeout=5)
        client.sendall(b"ping")
        time.sleep(0.1)  # the ticks are flowing to it
        client.close()
        thread.join(5)
    listener.close()
    for conn in accepted:
        conn.close()
    assert b"".join(received) == b"ping"


def _tick(conn: socket.socket) -> None:
    try:
        while True:
            conn.sendall(b"tick" * 1000)
            time.sleep(0.01)
    except OSError:
        pass

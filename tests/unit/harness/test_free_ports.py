"""free_ports picks ports below the kernel's ephemeral range (a client's local port cannot take
them before the node binds), distinct and free; bind(0) only when the range leaves no room."""

from __future__ import annotations

import socket

import pytest

from kafka_chaos.harness import nodes


def test_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    low = nodes._ephemeral_low()
    ports = nodes.free_ports(18)
    assert len(set(ports)) == 18 and all(nodes._LOWEST_PORT <= p < low for p in ports)
    for p in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", p))  # free indeed


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_taken_port_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    # the port after ours must be free for the answer to be known: on a busy machine (clusters
    # running beside the tests) draw again until it is
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
            held.bind(("127.0.0.1", 0))
            taken = held.getsockname()[1]
            if not _port_free(taken + 1):
                continue
            monkeypatch.setattr(nodes, "_ephemeral_low", lambda: taken + 2)
            monkeypatch.setattr(nodes, "_LOWEST_PORT", taken)
            assert nodes.free_ports(1) == [taken + 1]
            return
    pytest.fail("no port with a free neighbour in 50 draws")


def test_without_room_below_the_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodes, "_ephemeral_low", lambda: 1024)
    ports = nodes.free_ports(3)
    assert len(set(ports)) == 3


def test_ports_picked_earlier_for_other_nodes_are_not_picked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # A ZooKeeper server's port, picked first but not bound yet, is free to bind: only `taken` says
    # a broker must not get it (seen in CI: "Socket server failed to bind … Address already in use").
    # Three free ports in a row, drawn until found (real clusters may run beside the tests).
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
            held.bind(("127.0.0.1", 0))
            base = held.getsockname()[1] + 1
        if not all(_port_free(p) for p in (base, base + 1, base + 2)):
            continue
        monkeypatch.setattr(nodes, "_LOWEST_PORT", base)
        monkeypatch.setattr(nodes, "_ephemeral_low", lambda: base + 3)
        assert set(nodes.free_ports(2, taken=[base])) == {base + 1, base + 2}
        return
    pytest.fail("no three free ports in a row in 50 draws")

"""alter_topic_config asks the brokers of its bootstrap in turn (own IncrementalAlterConfigs v0):
one that does not answer is passed over, a refusal names Kafka's error."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kafka_chaos.harness.metadata import MetadataError, alter_topic_config


def _s(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


@contextmanager
def one_broker(error_code: int) -> Iterator[tuple[str, list[bytes]]]:
    """A listener that answers one IncrementalAlterConfigs request for topic t with ``error_code``."""
    server = socket.create_server(("127.0.0.1", 0))
    asked: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            request = b""
            while len(request) < size:
                request += conn.recv(size - len(request))
            asked.append(request)
            correlation_id = struct.unpack(">i", request[4:8])[0]
            body = (struct.pack(">iii", correlation_id, 0, 1) + struct.pack(">hh", error_code, -1)
                    + struct.pack(">b", 2) + _s("t"))
            conn.sendall(struct.pack(">i", len(body)) + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", asked
    finally:
        thread.join(timeout=5)
        server.close()


def closed_port() -> str:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return f"127.0.0.1:{s.getsockname()[1]}"  # closed again: connections are refused


def test_a_broker_that_does_not_answer_is_passed_over() -> None:
    with one_broker(0) as (address, asked):
        alter_topic_config(f"{closed_port()},{address}", "t", {"min.insync.replicas": "2"}, timeout=5)
    [request] = asked
    assert struct.unpack(">hh", request[:4]) == (44, 0)  # IncrementalAlterConfigs v0
    assert b"min.insync.replicas" in request


def test_a_refusal_names_kafkas_error() -> None:
    with one_broker(40) as (address, _), pytest.raises(MetadataError, match="INVALID_CONFIG"):
        alter_topic_config(address, "t", {"min.insync.replicas": "x"}, timeout=5)


def test_no_broker_answering_is_one_error() -> None:
    with pytest.raises(MetadataError, match="no broker of"):
        alter_topic_config(closed_port(), "t", {"a": None}, timeout=2)

"""The report on a Spark that is already running: a Spark Connect session from an ``sc://`` URL.

``kafka-chaos report --master sc://HOST:PORT`` sends the report's queries to a Spark Connect
server (``kafka-chaos spark up``, :mod:`results.connect_server`, or a user's own cluster) instead
of starting a driver JVM: the JVM's start-up and its first, cold query — most of a one-run
report's time — are paid once by the server.  The session runs the same DataFrame queries as a
local one (the aggregation uses no RDDs, UDFs or ``sparkContext``), so the aggregates are the
same; the server (and its executors) must read the results dirs at the paths given here, so it
runs on this machine or shares its file system.

Every wait for the server is bounded: the TCP connection (``CONNECT_TIMEOUT_S``), the first
requests (``HANDSHAKE_TIMEOUT_S``), and the client's retries of a request the server did not
answer (``RETRIES``: pyspark's default retries an unavailable server for some ten minutes).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.common.waits import WaitTimeout, wait_until

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

SCHEME = "sc"
DEFAULT_PORT = 15002  # Spark Connect's own default (spark.connect.grpc.binding.port)
URL_FORM = "sc://HOST[:PORT][/;PARAM=VALUE...]"
# The parameters Spark Connect's connection string knows (pyspark's ChannelBuilder).
KNOWN_PARAMS = frozenset({"token", "user_id", "use_ssl", "session_id", "user_agent", "grpc_max_message_size"})
# `spark up` returns once the server accepts connections: this wait is for a network that drops a
# first attempt, not for a server starting (refused connections are retried until then).
CONNECT_TIMEOUT_S = 5.0
HANDSHAKE_TIMEOUT_S = 30.0  # the first requests: the server's session and its version
# Client retries of a request an unavailable server did not answer: after 50 ms, 200 ms, 0.8 s, 3.2 s.
RETRIES = {"max_retries": 4, "initial_backoff": 50, "backoff_multiplier": 4.0, "max_backoff": 3200}
# What a Connect session may set (SQL settings of its own session); the server's JVM settings
# (driver memory, result size, the committer) are the server's: `spark up` sets them.
SESSION_CONFIG: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
CLIENT_MODULES = ("grpc", "grpc_status", "google.protobuf", "pandas", "zstandard")
INSTALL_HINT = "pip install 'kafka-chaos[connect]' (pyspark[connect])"

T = TypeVar("T")


@dataclass(frozen=True)
class ConnectUrl:
    """A parsed ``sc://`` connection string; ``params`` in their given order."""

    host: str
    port: int = DEFAULT_PORT
    params: tuple[tuple[str, str], ...] = ()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        tail = "".join(f";{key}={value}" for key, value in self.params)
        return f"{SCHEME}://{host}:{self.port}" + (f"/{tail}" if tail else "")

    def __str__(self) -> str:
        # A token is a secret: never in a log line or an error message.
        shown = tuple((key, "***" if key == "token" else value) for key, value in self.params)
        return ConnectUrl(self.host, self.port, shown).url


def is_connect_url(master: str | None) -> bool:
    """Whether ``--master`` names a Spark Connect server (``sc://``) rather than a master."""
    return master is not None and master.strip().lower().startswith(f"{SCHEME}://")


def parse_connect_url(text: str) -> ConnectUrl:
    """``sc://HOST[:PORT][/;PARAM=VALUE...]`` (Spark Connect's connection string); a UsageError
    naming what is wrong otherwise."""
    def bad(reason: str) -> UsageError:
        return UsageError(f"--master {text}: {reason} (expected {URL_FORM})")

    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:  # a port that is not a number in 0..65535
        raise bad(f"bad port ({exc})") from None
    if parts.scheme.lower() != SCHEME:
        raise bad(f"not an {SCHEME}:// URL")
    if not parts.hostname:
        raise bad("no host")
    if port == 0:
        raise bad("port 0")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise bad("unexpected '?', '#' or '@'")
    return ConnectUrl(parts.hostname, DEFAULT_PORT if port is None else port, _params(parts.path, bad))


def _params(path: str, bad: Callable[[str], UsageError]) -> tuple[tuple[str, str], ...]:
    """The ``/;key=value;...`` tail of the URL."""
    if path in ("", "/"):
        return ()
    if not path.startswith("/;"):
        raise bad(f"unexpected path {path!r}")
    params = []
    for item in path[2:].split(";"):
        key, equals, value = item.partition("=")
        if not equals or not key or not value:
            raise bad(f"parameter {item!r} is not KEY=VALUE")
        if key not in KNOWN_PARAMS:
            raise bad(f"unknown parameter {key!r} (known: {', '.join(sorted(KNOWN_PARAMS))})")
        params.append((key, value))
    return tuple(params)


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (a class of its own, not a SparkSession's subclass)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def connect_session(master: str) -> "SparkSession":
    """A Spark Connect session on the server ``master`` names, ready (it answered), or a one-line
    error: UsageError for a malformed URL or a missing client library, HarnessError when no
    server answers within the bounded waits."""
    url = parse_connect_url(master)
    _require_client()
    started = time.monotonic()
    wait_for_port(url.host, url.port, CONNECT_TIMEOUT_S,
                  f"no Spark Connect server answers at {url} (start one with `kafka-chaos spark up`)")
    from pyspark.sql import SparkSession

    # The client warns once its retries run out, then raises: the error below says it in one line.
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)
    # create(), not getOrCreate(): an active session of this process may be another server's.
    # Creating it sends nothing: the first request is the handshake below.
    session = SparkSession.builder.remote(url.url).create()
    try:
        _bound_retries(session)
        version = within(HANDSHAKE_TIMEOUT_S, lambda: _handshake(session),
                         f"the Spark Connect server at {url} accepted the connection but did not answer "
                         f"within {HANDSHAKE_TIMEOUT_S:.0f} s")
    except Exception as exc:
        # Closed, the client skips its exit hook's release request, which would retry a dead server again.
        close_quietly(session)
        if isinstance(exc, HarnessError):
            raise
        raise HarnessError(f"the Spark Connect server at {url} did not answer as one: {reason(exc)}") from exc
    log.debug("Spark Connect session on %s (Spark %s) ready in %.1f s", url, version, time.monotonic() - started)
    return session


def wait_for_port(host: str, port: int, timeout: float, failure: str) -> None:
    """Until ``host:port`` accepts a TCP connection; HarnessError ``failure`` after ``timeout`` s."""
    def connects() -> bool:
        with socket.create_connection((host, port), timeout=min(2.0, max(timeout, 0.1))):
            return True

    try:
        wait_until(connects, timeout=timeout, interval=0.25, description=f"{host}:{port}", retry_on=(OSError,))
    except WaitTimeout as exc:
        reason = f": {exc.last_error}" if exc.last_error is not None else ""
        raise HarnessError(f"{failure}; waited {timeout:.0f} s{reason}") from exc


def accepts_connections(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _require_client() -> None:
    """Spark Connect's Python client needs libraries plain pyspark does not install."""
    import importlib.util

    missing = [name for name in CLIENT_MODULES if _find_spec(importlib.util.find_spec, name) is None]
    if missing:
        raise UsageError(f"--master sc://... needs Spark Connect's client libraries ({', '.join(missing)} missing): "
                         f"{INSTALL_HINT}")


def _find_spec(find: Callable[[str], object], name: str) -> object:
    try:
        return find(name)
    except ModuleNotFoundError:  # a missing parent package (google for google.protobuf)
        return None


def _bound_retries(session: "SparkSession") -> None:
    from pyspark.sql.connect.client.retries import DefaultPolicy

    client = getattr(session, "client")  # a Connect session's; the classic type has none
    client.set_retry_policies([DefaultPolicy(**RETRIES)])  # type: ignore[arg-type]


def _handshake(session: "SparkSession") -> str:
    version = str(session.version)  # one request first: a server that is not one fails once, not per setting
    for key, value in SESSION_CONFIG.items():
        session.conf.set(key, value)
    return version


def close_quietly(session: "SparkSession") -> None:
    try:
        getattr(session, "client").close()
    except Exception as exc:  # noqa: BLE001 - already failing; the first error is the one to show
        log.debug("closing the Spark Connect client: %s", exc)


def within(timeout: float, call: Callable[[], T], failure: str) -> T:
    """``call()``'s result, or HarnessError ``failure`` after ``timeout`` s: a server that accepts
    the connection and never answers (a paused JVM) would otherwise hold the command for ever.
    The call goes on in a daemon thread, which the process does not wait for at exit."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="spark-connect-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise HarnessError(failure)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def reason(exc: BaseException) -> str:
    """What a failed Connect request says: the gRPC status and details when a gRPC error is in
    the chain (pyspark's own message is then a multi-line repr), else :func:`first_line`."""
    seen: BaseException | None = exc
    while seen is not None:
        # A grpc.RpcError, told by its methods (grpc is the Connect client's, imported only by it).
        code, details = getattr(seen, "code", None), getattr(seen, "details", None)
        if callable(code) and callable(details):
            return f"{getattr(code(), 'name', code())}: {first_line(Exception(details()))}"
        seen = seen.__cause__ or seen.__context__
    return first_line(exc)


def first_line(exc: BaseException) -> str:
    """The line of an exception's text that says what happened (pyspark's carry JVM stacks)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__

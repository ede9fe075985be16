"""A per-link userspace TCP proxy: delay, jitter and cuts on one broker's links without root.

This machine's kernel has no ``sch_netem`` (``tc qdisc add ... netem`` answers "unknown qdisc"),
so a delayed link cannot be made in the kernel; and cutting loopback links with iptables needs
root (:mod:`harness.local.network`).  Instead the local launcher can point each broker's
``zookeeper.connect`` at proxies of its own, one per ZooKeeper server (a *link*), and change
what each link does while the cluster runs:

* ``delay_ms`` ± ``jitter_ms`` per direction, **order-preserving**: a chunk read at ``now`` is
  delivered at ``max(previous delivery, now + max(0, delay + jitter × u))``, ``u`` uniform in
  [-1, 1] (:class:`DeliveryClock`) — TCP is a byte stream, so a later chunk can never overtake
  an earlier one; jitter therefore bunches chunks rather than reordering them.  A delay change
  applies to chunks read after it; chunks already read keep their delivery time (they are "in
  flight", as in netem).
* ``cut``: nothing is delivered that way until the heal, and a connection opened meanwhile is
  held (not connected upstream) — what an iptables DROP does to a SYN.  A held connection whose
  client gave up before the heal is discarded unseen, as its SYN would have been.  Data queued
  in a cut direction is delivered after the heal, as TCP would retransmit it.

Buffers are bounded (``max_chunks`` chunks of at most 64 KiB per direction; a full queue stops
reading, so the sender sees TCP back-pressure).  Every link and connection lives on one asyncio
loop in a background thread (:class:`LinkProxy`); :meth:`LinkProxy.stop` closes every socket and
joins the thread.  A small JSON-lines control port lets another process change the faults
(:class:`RemoteLinkProxy`): ``kafka-chaos cluster up`` runs the proxy as a detached process
(``python -m kafka_chaos.harness.link_proxy``) so it outlives the command, and later ``cluster delay`` /
``cluster heal`` commands reach it there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import math
import random
import signal
import socket
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from kafka_chaos.common.errors import HarnessError

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
CHUNK_BYTES = 64 * 1024
DEFAULT_MAX_CHUNKS = 64  # 4 MiB per direction at most
CONNECT_TIMEOUT_S = 10.0
CONTROL_TIMEOUT_S = 5.0
MAX_DELAY_MS = 600_000.0  # ten minutes: a bigger number is a typo
UPSTREAM = "upstream"  # client (the broker) -> server (ZooKeeper)
DOWNSTREAM = "downstream"  # server -> client


@dataclass(frozen=True)
class Faults:
    """What one direction of a link does to its bytes."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    cut: bool = False

    def __post_init__(self) -> None:
        for name in ("delay_ms", "jitter_ms"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not 0 <= value <= MAX_DELAY_MS):
                raise HarnessError(f"{name} must be a number of milliseconds in [0, {MAX_DELAY_MS:g}], "
                                   f"not {value!r}")

    @property
    def healthy(self) -> bool:
        return self == HEALTHY

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Faults:
        unknown = set(raw) - {"delay_ms", "jitter_ms", "cut"}
        if unknown:
            raise HarnessError(f"unknown fault fields {sorted(unknown)}")
        return cls(float(raw.get("delay_ms", 0.0)), float(raw.get("jitter_ms", 0.0)), bool(raw.get("cut", False)))


HEALTHY = Faults()


class DeliveryClock:
    """Pure: when each chunk of one direction is delivered (times in seconds, any monotonic
    origin).  Never earlier than a chunk read before it: order is preserved."""

    def __init__(self) -> None:
        self.last = -math.inf

    def schedule(self, now: float, faults: Faults, spread: float) -> float:
        """The delivery time of a chunk read at ``now``; ``spread`` in [-1, 1] picks the jitter."""
        if not -1.0 <= spread <= 1.0:
            raise ValueError(f"spread must be in [-1, 1], not {spread}")
        offset = max(0.0, faults.delay_ms + faults.jitter_ms * spread) / 1000.0
        self.last = max(self.last, now + offset)
        return self.last


@dataclass(frozen=True)
class LinkStatus:
    name: str
    port: int
    target: tuple[str, int]
    upstream: Faults
    downstream: Faults
    connections: int


class LinkControl(Protocol):
    """What the launcher asks of a proxy, in this process or another one."""

    def port(self, link: str) -> int: ...

    def set_faults(self, link: str, *, upstream: Faults, downstream: Faults) -> None: ...

    def heal(self) -> None: ...

    def status(self) -> list[LinkStatus]: ...


_EOF = b""


class _Link:
    """One listening port forwarding to one target; lives on the proxy's loop."""

    def __init__(self, name: str, target: tuple[str, int]) -> None:
        self.name = name
        self.target = target
        self.faults = {UPSTREAM: HEALTHY, DOWNSTREAM: HEALTHY}
        self.changed = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()

    def set(self, upstream: Faults, downstream: Faults) -> None:
        self.faults = {UPSTREAM: upstream, DOWNSTREAM: downstream}
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()  # wake every waiter; they re-read the faults

    def cut(self) -> bool:
        return self.faults[UPSTREAM].cut or self.faults[DOWNSTREAM].cut

    async def wait_uncut(self) -> None:
        while self.cut():
            await self.changed.wait()

    async def wait_deliverable(self, direction: str, at: float) -> None:
        """Until ``at`` (loop time) has come and the direction is not cut."""
        loop = asyncio.get_running_loop()
        while True:
            changed = self.changed
            if self.faults[direction].cut:
                await changed.wait()
                continue
            remaining = at - loop.time()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)

    @property
    def port(self) -> int:
        if self.server is None:
            raise HarnessError(f"link {self.name} is not listening")
        return int(self.server.sockets[0].getsockname()[1])


class LinkProxy:
    """Every link of one cluster on one asyncio loop in a daemon thread.  Thread-safe: the
    public methods hand their work to the loop and wait for it (bounded)."""

    def __init__(self, links: Mapping[str, tuple[str, int]], *, max_chunks: int = DEFAULT_MAX_CHUNKS,
                 seed: int | None = None, control: bool = True, upstream_mark: int | None = None) -> None:
        """``upstream_mark``: the ``SO_MARK`` of every connection the proxy opens to a target
        (needs CAP_NET_ADMIN), so that iptables rules redirecting a link *to* the proxy can leave
        the proxy's own onward connection alone (:mod:`harness.local.network`)."""
        if not links:
            raise HarnessError("a link proxy needs at least one link")
        self._targets = dict(links)
        self._upstream_mark = upstream_mark
        self._max_chunks = max_chunks
        self._random = random.Random(seed)
        self._control = control
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._links: dict[str, _Link] = {}
        self._control_server: asyncio.Server | None = None
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = CONTROL_TIMEOUT_S) -> LinkProxy:
        if self._thread is not None:
            raise HarnessError("this link proxy was already started")
        self._thread = threading.Thread(target=self._loop.run_forever, name="link-proxy", daemon=True)
        self._thread.start()
        try:
            self._call(self._open(), timeout)
        except BaseException:
            self.stop()
            raise
        log.info("link proxy: %s", ", ".join(f"{name} :{link.port} -> {link.target[0]}:{link.target[1]}"
                                              for name, link in self._links.items()))
        return self

    def stop(self, timeout: float = CONTROL_TIMEOUT_S) -> None:
        """Close every listener and connection, stop the loop, join the thread.  Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(HarnessError):
                self._call(self._close(), timeout)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("link proxy thread did not stop within %.0f s", timeout)
                return
        self._loop.close()

    def __enter__(self) -> LinkProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ LinkControl

    @property
    def control_port(self) -> int:
        if self._control_server is None:
            raise HarnessError("this link proxy has no control port")
        return int(self._control_server.sockets[0].getsockname()[1])

    def port(self, link: str) -> int:
        return self._link(link).port

    def set_faults(self, link: str, *, upstream: Faults, downstream: Faults) -> None:
        target = self._link(link)
        self._call(self._run(lambda: target.set(upstream, downstream)), CONTROL_TIMEOUT_S)
        log.info("link %s: upstream %s, downstream %s", link, upstream, downstream)

    def heal(self) -> None:
        links = list(self._links.values())
        self._call(self._run(lambda: _heal_all(links)), CONTROL_TIMEOUT_S)

    def status(self) -> list[LinkStatus]:
        return [LinkStatus(name, link.port, link.target, link.faults[UPSTREAM], link.faults[DOWNSTREAM],
                           len(link.connections)) for name, link in self._links.items()]

    # ------------------------------------------------------------------ loop side

    def _link(self, name: str) -> _Link:
        try:
            return self._links[name]
        except KeyError:
            raise HarnessError(f"no link {name!r}; the links are {', '.join(self._links)}") from None

    def _call(self, coroutine: Any, timeout: float) -> Any:
        if self._loop.is_closed() or self._thread is None:
            coroutine.close()
            raise HarnessError("the link proxy is not running")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise HarnessError(f"the link proxy did not answer within {timeout:.0f} s") from None

    @staticmethod
    async def _run(action: Any) -> None:
        action()

    async def _open(self) -> None:
        for name, target in self._targets.items():
            link = _Link(name, target)
            link.server = await asyncio.start_server(functools.partial(self._accept, link), HOST, 0)
            self._links[name] = link
        if self._control:
            self._control_server = await asyncio.start_server(self._serve_control, HOST, 0)

    async def _close(self) -> None:
        servers = [link.server for link in self._links.values() if link.server is not None]
        if self._control_server is not None:
            servers.append(self._control_server)
        for server in servers:
            server.close()
        tasks = [task for link in self._links.values() for task in link.connections]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)

    def _accept(self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._connection(link, reader, writer))
        link.connections.add(task)
        task.add_done_callback(link.connections.discard)

    async def _connection(self, link: _Link, client_r: asyncio.StreamReader,
                          client_w: asyncio.StreamWriter) -> None:
        up: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(self._max_chunks)
        down: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(self._max_chunks)
        writers = [client_w]
        tasks = [asyncio.create_task(self._read(link, UPSTREAM, client_r, up))]
        try:
            await link.wait_uncut()  # a DROP holds the SYN: no upstream connection while cut
            if _gave_up(up):
                return  # the client left before the heal: its SYN would never have arrived
            server_r, server_w = await asyncio.wait_for(self._open_upstream(link.target), CONNECT_TIMEOUT_S)
            writers.append(server_w)
            tasks += [asyncio.create_task(self._read(link, DOWNSTREAM, server_r, down)),
                      asyncio.create_task(self._deliver(link, UPSTREAM, up, server_w)),
                      asyncio.create_task(self._deliver(link, DOWNSTREAM, down, client_w))]
            # The connection ends when both directions have ended.  A side that is gone ends only
            # the direction towards it: what it sent before leaving, its FIN included, is still
            # in flight the other way and is delivered on time (as a delayed network would,
            # before the RST that follows it) — a ZooKeeper client that gives up a connection
            # does not take back the pings it already sent.
            await asyncio.gather(*tasks[2:])
        except (OSError, TimeoutError) as exc:
            log.debug("link %s: upstream %s:%d unreachable: %s", link.name, *link.target, exc)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for writer in writers:
                writer.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _open_upstream(self, target: tuple[str, int]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._upstream_mark is None:
            return await asyncio.open_connection(*target)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            # The mark must be on the SYN: the redirect rules match a connection when it opens.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, self._upstream_mark)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, target)
        except BaseException:
            sock.close()
            raise
        return await asyncio.open_connection(sock=sock)

    async def _read(self, link: _Link, direction: str, reader: asyncio.StreamReader,
                    queue: asyncio.Queue[tuple[float, bytes]]) -> None:
        loop = asyncio.get_running_loop()
        clock = DeliveryClock()
        while True:
            try:
                chunk = await reader.read(CHUNK_BYTES)
            except OSError:
                chunk = _EOF  # a reset ends this direction like a close
            at = clock.schedule(loop.time(), link.faults[direction], self._random.uniform(-1.0, 1.0))
            await queue.put((at, chunk))  # blocks when full: back-pressure, bounded memory
            if not chunk:
                return

    @staticmethod
    async def _deliver(link: _Link, direction: str, queue: asyncio.Queue[tuple[float, bytes]],
                       writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                at, chunk = await queue.get()
                await link.wait_deliverable(direction, at)
                if not chunk:
                    if writer.can_write_eof():
                        writer.write_eof()  # half-close: the other direction may still carry data
                    return
                writer.write(chunk)
                await writer.drain()
        except OSError as exc:  # the receiving side is gone: this direction ends
            log.debug("link %s %s: %s", link.name, direction, exc)

    async def _serve_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), CONTROL_TIMEOUT_S)
            try:
                answer = self._answer(json.loads(line))
            except (HarnessError, ValueError, TypeError, KeyError) as exc:
                answer = {"ok": False, "error": str(exc)}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    def _answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Runs on the loop: the control requests of :class:`RemoteLinkProxy`."""
        op = request.get("op")
        if op == "set":
            link = self._link(str(request["link"]))
            link.set(Faults.from_json(request.get(UPSTREAM, {})), Faults.from_json(request.get(DOWNSTREAM, {})))
            log.info("link %s: %s", link.name, request)
        elif op == "heal":
            _heal_all(self._links.values())
        elif op != "status":
            raise HarnessError(f"unknown control operation {op!r}")
        return {"ok": True, "links": [_status_json(s) for s in self.status()]}


def _heal_all(links: Iterable[_Link]) -> None:
    for link in links:
        link.set(HEALTHY, HEALTHY)


def _gave_up(queue: asyncio.Queue[tuple[float, bytes]]) -> bool:
    """Has the client already closed (its EOF is queued)?"""
    return any(not chunk for _, chunk in list(queue._queue))  # type: ignore[attr-defined]


def _status_json(s: LinkStatus) -> dict[str, Any]:
    return {"name": s.name, "port": s.port, "target": list(s.target), UPSTREAM: asdict(s.upstream),
            DOWNSTREAM: asdict(s.downstream), "connections": s.connections}


class RemoteLinkProxy:
    """:class:`LinkControl` of a proxy running in another process, through its control port."""

    def __init__(self, control_port: int) -> None:
        self.control_port = control_port

    def port(self, link: str) -> int:
        for s in self.status():
            if s.name == link:
                return s.port
        raise HarnessError(f"the link proxy has no link {link!r}")

    def set_faults(self, link: str, *, upstream: Faults, downstream: Faults) -> None:
        self._ask({"op": "set", "link": link, UPSTREAM: asdict(upstream), DOWNSTREAM: asdict(downstream)})

    def heal(self) -> None:
        self._ask({"op": "heal"})

    def status(self) -> list[LinkStatus]:
        return [LinkStatus(str(s["name"]), int(s["port"]), (str(s["target"][0]), int(s["target"][1])),
                           Faults.from_json(s[UPSTREAM]), Faults.from_json(s[DOWNSTREAM]), int(s["connections"]))
                for s in self._ask({"op": "status"})["links"]]

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        try:
            with socket.create_connection((HOST, self.control_port), CONTROL_TIMEOUT_S) as conn:
                conn.settimeout(CONTROL_TIMEOUT_S)
                conn.sendall(json.dumps(request).encode() + b"\n")
                answer: dict[str, Any] = json.loads(conn.makefile("rb").readline())
        except (OSError, ValueError) as exc:
            raise HarnessError(f"the link proxy on control port {self.control_port} does not answer: {exc}") from None
        if not answer.get("ok"):
            raise HarnessError(f"link proxy: {answer.get('error')}")
        return answer


# ---------------------------------------------------------------------- detached process

def main(argv: list[str] | None = None) -> int:
    """``python -m kafka_chaos.harness.link_proxy --links JSON --ready FILE``: serve the links until SIGTERM;
    writes ``{"control_port": P, "ports": {link: port}}`` to FILE once listening."""
    parser = argparse.ArgumentParser(prog="python -m kafka_chaos.harness.link_proxy")
    parser.add_argument("--links", required=True, help='JSON: {"name": ["host", port], ...}')
    parser.add_argument("--ready", required=True, type=Path)
    parser.add_argument("--mark", type=int, default=None, help="SO_MARK of the proxy's onward connections")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    links = {str(name): (str(t[0]), int(t[1])) for name, t in json.loads(args.links).items()}
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with LinkProxy(links, upstream_mark=args.mark) as proxy:
        ready = {"control_port": proxy.control_port, "ports": {name: proxy.port(name) for name in links}}
        args.ready.with_suffix(".tmp").write_text(json.dumps(ready))
        args.ready.with_suffix(".tmp").replace(args.ready)  # atomic: the launcher polls for it
        while not stop.wait(1.0):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

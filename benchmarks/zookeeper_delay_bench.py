"""Broker session expiry vs broker↔ZooKeeper delay, local launcher.

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/zookeeper_delay_bench.py \\
        [--factors 0,0.25,0.4,0.5,0.75,1,1.5] [--repeats 3] [--window 25] [--jitter 0] [--seed 1] \\
        [--capture DIR]

One 3-broker cluster with link proxies (``ClusterConfig(link_proxies=True)``, session 6 s,
tickTime 500 ms, one ZooKeeper server).  For each delay D = factor × session timeout, repeated:
after a random pause of up to one ping period (session/3; ``--seed``) — the onset's phase
against the client's pings decides near the thresholds (docs/zookeeper-faults.md R5,
:mod:`scenarios.model.zk_delay_rule`) — a broker that is not the controller gets both directions of its
ZooKeeper link delayed by D (``LocalCluster.delay_links``, :mod:`harness.link_proxy`; no root, no
netem), and for ``--window`` seconds the harness watches ``/brokers/ids/N`` (directly, not through
the proxy): the row says whether and when it vanished (the session expired), and how many times
the broker's ZooKeeper client gave up a connection meanwhile ("WARN Client session timed out"
lines in its server.log: a Disconnected, which Kafka ignores; read timeouts at 4 s and connect
timeouts at 6 s).  Then heal, and wait (bounded) until the broker is registered again.

``--capture DIR`` (root, tcpdump): each point's packets on the broker's proxy port and
ZooKeeper's port go to ``DIR/delay-<ms>ms-run<N>.pcap`` and are printed as a timeline — the
ZooKeeper frames (ConnectRequest/Response, pings, requests) of the broker's session on both
sides of the proxy, SYN/FIN/RST, and the broker's and ZooKeeper's session log lines (ZooKeeper's
``ZooKeeperServer`` and ``NIOServerCnxn`` at DEBUG) — seconds from the onset.
Figures only, nothing asserted.  One cluster at a time (the lock).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.common.waits import WaitTimeout, wait_until  # noqa: E402
from kafka_chaos.harness.config import ClusterConfig  # noqa: E402
from kafka_chaos.harness.distribution import resolve_distribution  # noqa: E402
from kafka_chaos.harness.local.cluster import LocalCluster  # noqa: E402
from kafka_chaos.harness.nodes import zookeeper_four_letter  # noqa: E402
from kafka_chaos.harness.zkclient import close_bounded, connect  # noqa: E402

TIMED_OUT = "WARN Client session timed out"  # once per drop (the stack trace repeats the text)
LEAD_IN_S = 1.5  # captured before the onset: the undelayed pings
# With --capture: the server's "renew session" and "Closed socket connection ... sessionid" lines.
CAPTURE_LOG4J = ("\nlog4j.logger.org.apache.zookeeper.server.ZooKeeperServer=DEBUG\n"
                 "log4j.logger.org.apache.zookeeper.server.NIOServerCnxn=DEBUG\n")
CONS_LINE = re.compile(r":(\d+)\[\d+\]\(.*?sid=0x([0-9a-f]+)")


# --- --capture: tcpdump of the broker's ZooKeeper links, decoded (root + tcpdump) ----------------
#
# The link proxy (kafka_chaos/harness/link_proxy.py) is not touched: the packets are read off lo.  Two sides:
# "client" = the broker <-> its proxy port (what the broker's ZooKeeper client sent, and when),
# "server" = the proxy <-> ZooKeeper's port, only the connections of the broker's session (what
# the server received, and when: each request it reads touches the session).  The ZooKeeper 3.8
# wire format (zookeeper-jute): every frame is an int32 length + payload; a connection's first
# client frame is a ConnectRequest (protocolVersion, lastZxidSeen, timeOut, sessionId, passwd,
# readOnly), its first server frame a ConnectResponse (protocolVersion, timeOut, sessionId, ...;
# timeOut 0 = "session expired"); later client frames start with (xid, type) -- a ping is xid -2
# type 11 -- and server frames with (xid, zxid, err).

PCAP_LINK_HEADER = {1: 14, 113: 16, 276: 20}  # EN10MB (lo), LINUX_SLL, LINUX_SLL2
PING_XID = -2
OPCODES = {11: "ping", -11: "closeSession", 101: "setWatches", 105: "setWatches2", 100: "auth", 3: "exists",
           4: "getData", 8: "getChildren", 12: "getChildren2", 1: "create", 2: "delete", 5: "setData", 14: "multi",
           15: "create2", 19: "create", 22: "getEphemerals"}
TCP_FIN, TCP_SYN, TCP_RST = 0x01, 0x02, 0x04


@dataclass(frozen=True)
class Segment:
    """One TCP segment seen on lo: wall time, ports, flags, payload."""

    time: float
    src: int
    dst: int
    flags: int
    payload: bytes


@dataclass(frozen=True)
class Packet:
    """One decoded event on one connection: a ZooKeeper frame, or a SYN/FIN/RST."""

    time: float
    side: str  # "client" (broker <-> proxy) or "server" (proxy <-> ZooKeeper)
    conn: int  # the connection's ephemeral port
    to_server: bool
    what: str
    session: int | None = None


def read_pcap(path: Path) -> list[Segment]:
    """Pure over the file's bytes: the IPv4 TCP segments of a classic pcap file."""
    data = path.read_bytes()
    if len(data) < 24:
        return []
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nanos = data[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    skip = PCAP_LINK_HEADER.get(linktype, 14)
    segments, offset = [], 24
    while offset + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", data[offset:offset + 16])
        frame = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        ip = frame[skip:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl, total = (ip[0] & 0x0F) * 4, struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        src, dst = struct.unpack("!HH", tcp[:4])
        header = (tcp[12] >> 4) * 4
        segments.append(Segment(sec + frac / (1e9 if nanos else 1e6), src, dst, tcp[13], bytes(tcp[header:])))
    return segments


def _client_frame(frame: bytes, first: bool) -> tuple[str, int | None]:
    if first and len(frame) >= 24:
        timeout, session = struct.unpack("!iq", frame[12:24])
        return f"ConnectRequest (session 0x{session:x}, timeout {timeout} ms)", session
    if len(frame) >= 8:
        xid, op = struct.unpack("!ii", frame[:8])
        return ("ping" if xid == PING_XID else OPCODES.get(op, f"request type {op}")), None
    return f"{len(frame)}-byte frame", None


def _server_frame(frame: bytes, first: bool) -> tuple[str, int | None]:
    if first and len(frame) >= 16:
        _, timeout, session = struct.unpack("!iiq", frame[:16])
        verdict = "session EXPIRED" if timeout <= 0 else f"negotiated timeout {timeout} ms"
        return f"ConnectResponse ({verdict})", session
    if len(frame) >= 16:
        xid, _, err = struct.unpack("!iqi", frame[:16])
        name = "ping reply" if xid == PING_XID else ("watch event" if xid == -1 else "reply")
        return name + (f" (err {err})" if err else ""), None
    return f"{len(frame)}-byte frame", None


def decode(segments: list[Segment], proxy_port: int, zk_port: int) -> list[Packet]:
    """Pure: the frames and SYN/FIN/RSTs of every connection to ``proxy_port`` or ``zk_port``
    (reassembled per direction; a connection whose SYN was not captured starts mid-session)."""
    buffers: dict[tuple[int, bool, str], bytearray] = {}
    started: dict[tuple[int, bool, str], bool] = {}  # first frame still to come (SYN seen)
    packets = []
    for s in segments:
        if s.dst in (proxy_port, zk_port):
            side, conn, to_server = ("client" if s.dst == proxy_port else "server"), s.src, True
        elif s.src in (proxy_port, zk_port):
            side, conn, to_server = ("client" if s.src == proxy_port else "server"), s.dst, False
        else:
            continue
        key = (conn, to_server, side)
        if s.flags & TCP_SYN:
            started[key] = True
            started[(conn, not to_server, side)] = True
            buffers[key] = bytearray()
            buffers[(conn, not to_server, side)] = bytearray()
            if to_server:
                packets.append(Packet(s.time, side, conn, True, "SYN (connect)"))
            continue
        buffer = buffers.setdefault(key, bytearray())
        buffer += s.payload
        while len(buffer) >= 4:
            length = struct.unpack("!i", buffer[:4])[0]
            if length < 0 or length > 1 << 20:  # not a ZooKeeper frame (a four-letter word)
                buffer.clear()
                break
            if len(buffer) < 4 + length:
                break
            frame, buffer[:] = bytes(buffer[4:4 + length]), buffer[4 + length:]
            first = started.pop(key, False)
            what, session = (_client_frame if to_server else _server_frame)(frame, first)
            packets.append(Packet(s.time, side, conn, to_server, what, session))
        if s.flags & TCP_RST:
            packets.append(Packet(s.time, side, conn, to_server, "RST"))
        elif s.flags & TCP_FIN:
            packets.append(Packet(s.time, side, conn, to_server, "FIN"))
    return packets


def session_packets(packets: list[Packet], session: int, first_server_conn: int | None) -> list[Packet]:
    """Pure: every client-side packet, and the server-side packets of the connections that carry
    ``session`` (its ConnectRequest/Response names it; ``first_server_conn`` is the one open
    before the capture, found with the ``cons`` four-letter word)."""
    mine = {first_server_conn} if first_server_conn is not None else set()
    mine |= {p.conn for p in packets if p.side == "server" and p.session == session}
    return [p for p in packets if p.side == "client" or p.conn in mine]


def collapse(packets: list[Packet]) -> list[tuple[float, float, int, Packet]]:
    """Pure: runs of the same event on the same connection and direction as (first, last, n, packet)."""
    runs: list[tuple[float, float, int, Packet]] = []
    for p in sorted(packets, key=lambda p: p.time):
        for i in range(len(runs) - 1, -1, -1):
            first, last, n, q = runs[i]
            if (q.side, q.conn, q.to_server) == (p.side, p.conn, p.to_server):
                if q.what == p.what and p.what in ("ping", "ping reply"):
                    runs[i] = (first, p.time, n + 1, q)
                    break
                runs.append((p.time, p.time, 1, p))
                break
        else:
            runs.append((p.time, p.time, 1, p))
    return sorted(runs, key=lambda r: r[0])


LOG_PATTERNS = ("Client session timed out", "Opening socket connection", "Session establishment complete",
                "Unable to reconnect", "Expiring session", "expired", "Expired", "Unable to read additional data",
                "Closed socket connection", "renew session", "Invalid session", "Creating new log file",
                "re-registering", "Registered broker", "Session: 0x", "Initializing a new session")
LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def log_events(path: Path, begin: float, end: float, name: str) -> list[tuple[float, str]]:
    """The lines of a node's server.log between ``begin`` and ``end`` (wall time) that say
    something about connections and sessions."""
    found = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        match = LOG_TIME.match(line)
        if not match or not any(p in line for p in LOG_PATTERNS):
            continue
        stamp = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc).timestamp()
        if begin <= stamp <= end:
            found.append((stamp, f"{name} log: {line[len(match.group(0)):].strip()[:150]}"))
    return found


def timeline(onset: float, packets: list[Packet], logs: list[tuple[float, str]]) -> list[str]:
    """Pure: the annotated lines, seconds from the delay's onset."""
    rows: list[tuple[float, str]] = []
    for first, last, n, p in collapse(packets):
        arrow = ("broker -> proxy" if p.to_server else "proxy -> broker") if p.side == "client" else \
                ("proxy -> ZooKeeper" if p.to_server else "ZooKeeper -> proxy")
        span = f" x{n}, until {last - onset:+7.2f}" if n > 1 else ""
        rows.append((first, f"{arrow:19} [:{p.conn}] {p.what}{span}"))
    rows += logs
    return [f"{t - onset:+7.2f} s  {text}" for t, text in sorted(rows)]


class Capture:
    """tcpdump on lo of the broker's proxy port and ZooKeeper's port, for one point."""

    def __init__(self, path: Path, ports: tuple[int, int]) -> None:
        self.path = path
        self.process = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-U", "-n", "-s", "256", "-w", str(path),
             f"tcp and (port {ports[0]} or port {ports[1]})"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert self.process.stderr is not None
        os.set_blocking(self.process.stderr.fileno(), False)
        said = bytearray()

        def listening() -> bool:
            said.extend(self.process.stderr.read() or b"")  # type: ignore[union-attr]
            return b"listening on" in said

        try:
            wait_until(listening, timeout=10, interval=0.05, description="tcpdump listening")
        except WaitTimeout:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # flushes the file
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def broker_proxy_port(cluster: LocalCluster, broker: int) -> int:
    """The broker's own proxy port (its zookeeper.connect), from its server.properties."""
    props = cluster.log_files()[f"broker-{broker}"].parent.parent / "server.properties"
    for line in props.read_text().splitlines():
        if line.startswith("zookeeper.connect="):
            return int(line.split("=", 1)[1].split(",")[0].rsplit(":", 1)[1].split("/")[0])
    raise SystemExit(f"zookeeper_delay_bench: no zookeeper.connect in {props}")


def server_conn_of(zk_port: int, session: int) -> int | None:
    """The proxy-side port of the session's connection as ZooKeeper lists it (``cons``)."""
    for port, sid in CONS_LINE.findall(zookeeper_four_letter("127.0.0.1", zk_port, "cons")):
        if int(sid, 16) == session:
            return int(port)
    return None


def registered(client: object, broker: int) -> bool:
    return client.exists(f"/brokers/ids/{broker}") is not None  # type: ignore[attr-defined]


def client_timeouts(log_file: Path) -> int:
    try:
        return log_file.read_text(errors="replace").count(TIMED_OUT)
    except OSError:
        return 0


def one_point(cluster: LocalCluster, client: object, broker: int, delay_ms: float, jitter_ms: float,
              window_s: float, phase_s: float, capture: Path | None = None) -> tuple[float | None, int, float | None]:
    """(seconds until the registration vanished or None, client timeouts, heal -> registered s).
    With ``capture`` (a pcap path): tcpdump of the broker's ZooKeeper links from ``LEAD_IN_S``
    before the onset to the re-registration, printed as an annotated timeline."""
    wait_until(lambda: all(registered(client, b) for b in cluster.broker_ids), timeout=90, interval=0.2,
               description="every broker registered")
    log_file = cluster.log_files()[f"broker-{broker}"]
    before = client_timeouts(log_file)
    tcpdump: Capture | None = None
    if capture is not None:
        session = client.exists(f"/brokers/ids/{broker}").ephemeralOwner  # type: ignore[attr-defined]
        zk_port = int(cluster.zookeeper_connect.split(",")[0].rsplit(":", 1)[1])
        proxy_port = broker_proxy_port(cluster, broker)
        first_conn = server_conn_of(zk_port, session)
        tcpdump = Capture(capture, (proxy_port, zk_port))
    try:
        if tcpdump is not None:
            time.sleep(LEAD_IN_S)  # the undelayed pings before the onset
        # The onset's phase against the client's pings (one per readTimeout/2 = session/3 when idle)
        # sets when the server last heard from it before the delay (R5): draw it, or every point
        # after a heal would start right after a ping (the re-registration fixes their phase).
        time.sleep(phase_s)
        onset = time.time()
        began = time.monotonic()
        cluster.delay_links(broker, delay_ms=delay_ms, jitter_ms=jitter_ms)
        vanished: float | None = None
        try:
            wait_until(lambda: not registered(client, broker), timeout=window_s, interval=0.05,
                       description="the registration vanishing")
            vanished = time.monotonic() - began
            time.sleep(max(0.0, window_s - vanished))  # same exposure for every row's timeout count
        except WaitTimeout:
            pass
        timeouts = client_timeouts(log_file) - before
        healed_at = time.time()
        cluster.heal_network()
        healed = time.monotonic()
        try:
            wait_until(lambda: registered(client, broker), timeout=90, interval=0.1, description="re-registration")
            back: float | None = time.monotonic() - healed
        except WaitTimeout:
            back = None
        time.sleep(2.0)  # let the controller finish its BrokerChange before the next point
    finally:
        if tcpdump is not None:
            tcpdump.stop()  # also when the point fails: no tcpdump left behind
    if tcpdump is not None and capture is not None:
        packets = session_packets(decode(read_pcap(capture), proxy_port, zk_port), session, first_conn)
        logs = (log_events(log_file, onset - LEAD_IN_S, time.time(), f"broker-{broker}")
                + log_events(cluster.log_files()["zookeeper"], onset - LEAD_IN_S, time.time(), "zookeeper"))
        logs.append((healed_at, "harness: heal"))
        print(f"    timeline (s from the onset; broker's session 0x{session:x}; client side :{proxy_port}, "
              f"server side :{zk_port}; {capture}):")
        for line in timeline(onset, packets, logs):
            print("     ", line)
    return vanished, timeouts, back


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default="0,0.25,0.4,0.5,0.75,1,1.5",
                        help="delays as multiples of the session timeout")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window", type=float, default=25.0, metavar="S", help="watch time per point")
    parser.add_argument("--jitter", type=float, default=0.0, metavar="MS")
    parser.add_argument("--seed", type=int, default=1, help="of the onsets' phases against the pings")
    parser.add_argument("--capture", type=Path, metavar="DIR",
                        help="tcpdump each point's ZooKeeper links into DIR and print its timeline (root)")
    args = parser.parse_args()
    if args.capture is not None and (os.geteuid() != 0 or shutil.which("tcpdump") is None):
        print("zookeeper_delay_bench: --capture needs root and tcpdump (apt-get install -y tcpdump)",
              file=sys.stderr)
        return 2
    try:
        factors = [float(f) for f in args.factors.split(",")]
    except ValueError:
        print(f"zookeeper_delay_bench: --factors must be numbers, not {args.factors!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # its reconnect chatter at teardown
    config = ClusterConfig(brokers=3, link_proxies=True)
    phases = random.Random(args.seed)
    rows = []
    if args.capture is not None:
        args.capture.mkdir(parents=True, exist_ok=True)
    with LocalCluster(config, resolve_distribution(), log4j_extra=CAPTURE_LOG4J if args.capture else "") as cluster:
        session_ms = cluster.session_timeout_s() * 1000
        client = connect(cluster.zookeeper_connect, session_timeout=20, connect_timeout=20, command_deadline=20)
        try:
            controller = int(json.loads(client.get("/controller")[0])["brokerid"])
            broker = next(b for b in cluster.broker_ids if b != controller)
            print(f"session {session_ms:.0f} ms, tickTime {config.zk_tick_time_ms} ms, 1 ZooKeeper server, "
                  f"broker {broker} (controller {controller}), jitter {args.jitter:g} ms, "
                  f"window {args.window:g} s", flush=True)
            for factor in factors:
                delay = factor * session_ms
                for repeat in range(args.repeats):
                    pcap = args.capture / f"delay-{delay:.0f}ms-run{repeat + 1}.pcap" if args.capture else None
                    phase = phases.uniform(0.0, session_ms / 3000)
                    vanished, timeouts, back = one_point(cluster, client, broker, delay, args.jitter, args.window,
                                                         phase, pcap)
                    rows.append((factor, delay, vanished, timeouts, back))
                    print(f"  delay {factor:4.2f} x session = {delay:6.0f} ms each way, run {repeat + 1}: "
                          f"{'expired after %.1f s' % vanished if vanished is not None else 'kept'}; "
                          f"client connection drops {timeouts}; "
                          f"re-registered {'%.1f s' % back if back is not None else 'not within 90 s'} "
                          f"after the heal", flush=True)
        finally:
            close_bounded(client, cluster.zookeeper_connect, timeout=5)
    print("\n| delay (× session) | one-way delay | expired | expiry after (s) | client connection drops per run |")
    print("|---|---|---|---|---|")
    for factor in factors:
        mine = [r for r in rows if r[0] == factor]
        times = [r[2] for r in mine if r[2] is not None]
        spread = (f"median {statistics.median(times):.1f} ({min(times):.1f}–{max(times):.1f})" if times else "–")
        print(f"| {factor:g} | {mine[0][1] / 1000:g} s | {len(times)}/{len(mine)} | {spread} | "
              f"{', '.join(str(r[3]) for r in mine)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

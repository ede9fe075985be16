"""Does a delayed broker↔ZooKeeper link expire the broker's session, and when?  Pure (no I/O,
no clocks): docs/zookeeper-faults.md R5, derived from ZooKeeper 3.8.4 (the version Kafka 3.9
ships) and checked on a real cluster with packet captures (``benchmarks/zookeeper_delay_bench.py
--capture``).

The session lives while the server hears *something* of it at least once per session timeout:
every request it reads, pings and ConnectRequests included, re-arms the expiry
(``ZooKeeperServer.submitRequestNow`` → ``touch`` → ``SessionTrackerImpl.touchSession``;
``processConnectRequest`` → ``reopenSession`` → ``revalidateSession`` → ``touchSession``), to
``now + timeout`` rounded *up* to the next tick (``ExpiryQueue.roundToNextInterval``), and the
expirer expires a bucket's sessions when its time comes (``SessionTrackerImpl.run``).  A closed
connection changes nothing until then.  So the rule is a question about the *gaps* between the
arrivals, at the server, of what the broker's client sends, under a one-way delay ``D`` (± ``J``
of jitter) on both directions, starting at an onset:

* ``G0`` — the onset.  An idle client (a broker's, outside ZooKeeper writes) pings once per
  ``PI = readTimeout / 2`` of send silence (``ClientCnxn.SendThread.run``: ``timeToNextPing =
  readTimeout/2 - idleSend``; the "− 1000 ms" term only matters when the loop wakes between
  pings), with ``readTimeout = 2/3 × session``.  The last touch before the onset is that of
  the last undelayed ping, and the first ping after it is sent ``PI`` later and arrives ``D``
  after that: ``G0 = PI + D``.  If ``G0 ≥ session + tick`` the session expires ``session − PI``
  to ``session + tick`` after the onset, whatever happens next (EXPIRY).  That is the step
  between 3.6 s and 4.5 s with our 6 s session: ``session − PI = 2/3 × session = 4 s``.
* the client gives up a connection after ``readTimeout`` without a byte ("Client session timed
  out, have not heard from server in …ms"): once ``PI + 2D > readTimeout``, at the onset.  Its
  reconnect (``cleanup`` sleeps 100 ms; ``StaticHostProvider.next(1000)`` sleeps 1 s when it
  wraps round to the server it was last connected to — every time with one server;
  ``startConnect`` sleeps up to 1 s more) sends a ConnectRequest, which arrives ``D`` later:
  ``G1 = readTimeout − PI + 100 ms + spin + [0, 1 s)`` after the last ping arrived.
* a reconnect completes when its ConnectResponse comes back within ``connectTimeout = session
  / servers``: ``2D < connectTimeout``.  Then the client pings at once and may drop again after
  ``readTimeout`` (FLAPPING), with the same gaps as above — the session lives.
* when ``2D ≥ connectTimeout`` no reconnect completes: the server hears one ConnectRequest per
  attempt, ``G3 = connectTimeout + 100 ms + spin + [0, 1 s)`` apart.  With one server that is
  more than ``session + tick`` (6 + 1.1 s > 6.5 s): the session, touched by the first
  ConnectRequest, expires one session after it, ~``D + 9.1`` to ``D + 12.6`` s after the onset
  (LATE_EXPIRY).  With an ensemble the attempts come faster than the session and keep it.

The broker's own requests (ZooKeeper writes) only ever shorten a gap, so EXPIRY and
LATE_EXPIRY assume a client that only pings, as a non-controller broker's does between writes.
Kafka 3.9's ``ZooKeeperClientWatcher`` ignores ``Disconnected``/``SyncConnected``; only
``Expired`` (learnt after the heal) makes it re-create the session and re-register.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

CLEANUP_SLEEP_MS = 100  # ClientCnxnSocketNIO.cleanup: Thread.sleep(100) after closing the socket
SPIN_DELAY_MS = 1000  # ClientCnxn.SendThread.run: hostProvider.next(1000)
MAX_BACKOFF_MS = 1000  # ClientCnxn.SendThread.startConnect: sleep(nextLong(1000)), not on the first connect


class Regime(StrEnum):
    """What the broker's ZooKeeper client and session do under the delay."""

    STEADY = "steady"  # every reply within readTimeout: no connection dropped
    ONE_DROP = "one_drop"  # the onset's reply gap drops one connection; the next one holds
    FLAPPING = "flapping"  # connections drop and re-establish; the session lives
    LATE_EXPIRY = "late_expiry"  # survives the onset; no reconnect completes; expires a session after one
    EXPIRY = "expiry"  # nothing sent after the onset reaches the server within the session


@dataclass(frozen=True)
class ZkTiming:
    """The broker's ZooKeeper client settings: ``zookeeper.session.timeout.ms`` (as negotiated:
    the server clamps it to [2, 20] ticks), the server's ``tickTime`` and how many servers
    ``zookeeper.connect`` names."""

    session_ms: int = 6000
    tick_ms: int = 500
    servers: int = 1

    def __post_init__(self) -> None:
        if self.tick_ms <= 0 or self.servers <= 0:
            raise ValueError(f"tick_ms and servers must be positive, not {self.tick_ms}, {self.servers}")
        if not 2 * self.tick_ms <= self.session_ms <= 20 * self.tick_ms:
            raise ValueError(f"a negotiated session lies in [2, 20] ticks (ZooKeeperServer.processConnectRequest: "
                             f"min/maxSessionTimeout), not {self.session_ms} ms with a {self.tick_ms} ms tick")

    @property
    def read_timeout_ms(self) -> int:
        """``ClientCnxn.onConnected``: ``readTimeout = negotiatedSessionTimeout * 2 / 3``."""
        return self.session_ms * 2 // 3

    @property
    def ping_interval_ms(self) -> int:
        """An idle client's ping period: ``readTimeout / 2`` of send silence."""
        return self.read_timeout_ms // 2

    @property
    def connect_timeout_ms(self) -> int:
        """``ClientCnxn.onConnected``: ``connectTimeout = negotiatedSessionTimeout / hostProvider.size()``."""
        return self.session_ms // self.servers

    @property
    def spin_ms(self) -> tuple[int, int]:
        """``StaticHostProvider.next(1000)`` sleeps when it comes back to the last connected
        server: on every attempt with one server, on one attempt in ``servers`` otherwise."""
        return (SPIN_DELAY_MS, SPIN_DELAY_MS) if self.servers == 1 else (0, SPIN_DELAY_MS)


@dataclass(frozen=True)
class DelayVerdict:
    """R5's answer.  ``expires`` is None when it depends on the onset's phase against the
    client's pings and the server's tick buckets, or on the jitter (within a tick or a jitter
    of a threshold); ``expiry_after_ms`` is the range of onset → expiry when it expires."""

    regime: Regime
    expires: bool | None
    expiry_after_ms: tuple[float, float] | None
    reason: str


@dataclass(frozen=True)
class Gap:
    """The range of one gap between two arrivals at the server of the session's packets."""

    name: str
    low: float
    high: float


def _fate(gap: Gap, t: ZkTiming) -> bool | None:
    """True: the session certainly expires in this gap; False: certainly not; None: it depends
    on the rounding up to the next tick bucket (``ExpiryQueue.roundToNextInterval``)."""
    if gap.low >= t.session_ms + t.tick_ms:
        return True
    if gap.high <= t.session_ms:
        return False
    return None


def onset_gap(t: ZkTiming, delay_ms: float, jitter_ms: float = 0.0) -> Gap:
    """``G0``: last undelayed ping → first ping sent after the onset, at the server."""
    return Gap("onset", t.ping_interval_ms + max(0.0, delay_ms - jitter_ms), t.ping_interval_ms + delay_ms + jitter_ms)


def reconnect_gap(t: ZkTiming, jitter_ms: float = 0.0) -> Gap:
    """``G1``: the last ping of a dropped connection → the reconnect's ConnectRequest."""
    base = t.read_timeout_ms - t.ping_interval_ms + CLEANUP_SLEEP_MS
    return Gap("reconnect", max(0.0, base + t.spin_ms[0] - 2 * jitter_ms),
               base + t.spin_ms[1] + MAX_BACKOFF_MS + 2 * jitter_ms)


def retry_gap(t: ZkTiming, jitter_ms: float = 0.0) -> Gap:
    """``G3``: ConnectRequest → the next one, when none completes within ``connectTimeout``."""
    base = t.connect_timeout_ms + CLEANUP_SLEEP_MS
    return Gap("retry", max(0.0, base + t.spin_ms[0] - 2 * jitter_ms),
               base + t.spin_ms[1] + MAX_BACKOFF_MS + 2 * jitter_ms)


def predict(t: ZkTiming, delay_ms: float, jitter_ms: float = 0.0) -> DelayVerdict:
    """R5 for a one-way delay ``delay_ms`` ± ``jitter_ms`` on both directions of every link
    between the broker and ZooKeeper, from its onset on (held long enough to matter)."""
    if delay_ms < 0 or jitter_ms < 0:
        raise ValueError(f"delay and jitter must be >= 0, not {delay_ms}, {jitter_ms}")
    low, high = max(0.0, delay_ms - jitter_ms), delay_ms + jitter_ms
    onset = onset_gap(t, delay_ms, jitter_ms)
    onset_fate = _fate(onset, t)
    at_onset = (float(t.session_ms - t.ping_interval_ms), float(t.session_ms + t.tick_ms))
    if onset_fate is True:
        # One session (rounded up to a tick) after the last undelayed ping, up to PI before the onset.
        return DelayVerdict(Regime.EXPIRY, True, at_onset,
                            f"nothing sent after the onset reaches the server within the session: ping interval "
                            f"{t.ping_interval_ms} + delay {low:g} ms >= session {t.session_ms} + tick {t.tick_ms} ms")
    note = _onset_note(onset_fate, t, onset)
    if t.ping_interval_ms + 2 * high <= t.read_timeout_ms:
        return DelayVerdict(Regime.STEADY, onset_fate, at_onset if onset_fate is None else None,
                            f"every reply within readTimeout {t.read_timeout_ms} ms" + note)
    completes_for_sure = 2 * high < t.connect_timeout_ms
    never_completes = 2 * low >= t.connect_timeout_ms
    retry_fate = _fate(retry_gap(t, jitter_ms), t)
    later = [_fate(reconnect_gap(t, jitter_ms), t)]
    if never_completes:
        later.append(retry_fate)
    elif not completes_for_sure:  # some attempts complete, some may not: retries may come in a row
        later.append(None if retry_fate is not False else False)
    if t.ping_interval_ms + 2 * low <= t.read_timeout_ms:  # the jitter decides whether it drops at all
        later = [None if fate is True else fate for fate in later]
    fates = [onset_fate, *later]
    expires = True if True in fates else (None if None in fates else False)
    if expires is True:
        start = t.read_timeout_ms - t.ping_interval_ms + CLEANUP_SLEEP_MS + t.spin_ms[0] + low + t.session_ms
        end = t.read_timeout_ms + CLEANUP_SLEEP_MS + t.spin_ms[1] + MAX_BACKOFF_MS + high + t.session_ms + t.tick_ms
        return DelayVerdict(Regime.LATE_EXPIRY, True, (min(start, at_onset[0]) if onset_fate is None else start, end),
                            f"the client gives up and reconnects, no reconnect completes (2 x delay >= connectTimeout "
                            f"{t.connect_timeout_ms} ms) and its ConnectRequests arrive more than session + tick "
                            f"apart" + note)
    flapping = 2 * high >= t.read_timeout_ms or not completes_for_sure
    if expires is None and not never_completes and not completes_for_sure:
        reason = f"2 x delay straddles connectTimeout {t.connect_timeout_ms} ms with the jitter"
    elif expires is None:
        reason = "a gap between the server's touches lies within a tick of the session"
    else:
        reason = "the client gives up connections but every gap between the server's touches stays within the session"
    return DelayVerdict(Regime.FLAPPING if flapping else Regime.ONE_DROP, expires,
                        at_onset if onset_fate is None else None, reason + note)


def _onset_note(fate: bool | None, t: ZkTiming, onset: Gap) -> str:
    if fate is None:
        return (f"; but the onset gap ({onset.low:g}-{onset.high:g} ms) lies within a tick of the session "
                f"{t.session_ms} ms: it expires or not by the phase of the server's tick buckets")
    return ""


def thresholds_ms(t: ZkTiming) -> dict[str, float]:
    """The one-way delays (no jitter) where the behaviour changes, for documentation."""
    return {
        "drop_at_onset": (t.read_timeout_ms - t.ping_interval_ms) / 2,  # PI + 2D > readTimeout
        "flapping": t.read_timeout_ms / 2,  # a re-established connection's first reply misses readTimeout
        "no_reconnect": t.connect_timeout_ms / 2,  # 2D >= connectTimeout
        "expiry_at_onset": t.session_ms - t.ping_interval_ms,  # from here to + tick: by the phase
        "expiry_at_onset_certain": t.session_ms - t.ping_interval_ms + t.tick_ms,
    }


def refuted_claim(expect: str, delay_ms: float, jitter_ms: float, t: ZkTiming) -> str | None:
    """Why R5 refutes a ``network_delay`` step's claim (``expect``: ``nothing`` or
    ``session_expiry``) for the broker's ZooKeeper links, or None when R5 backs it or cannot tell
    (a delay within a tick or a jitter of a threshold: the cluster decides)."""
    if expect not in ("nothing", "session_expiry"):
        return None
    verdict = predict(t, delay_ms, jitter_ms)
    if verdict.expires is None or verdict.expires == (expect == "session_expiry"):
        return None
    return (f"'expect: {expect}' contradicts docs/zookeeper-faults.md R5 (session {t.session_ms} ms, tick "
            f"{t.tick_ms} ms, {t.servers} ZooKeeper server(s)): a delay of {delay_ms:g} ± {jitter_ms:g} ms is "
            f"{verdict.regime.value}, {'the session expires' if verdict.expires else 'the session lives'}: "
            f"{verdict.reason}")

"""ZooKeeper-ensemble faults: kill or pause the leader, a follower or a minority of servers;
lose the quorum and restore it (optionally killing a broker meanwhile); cut one broker from
the ZooKeeper leader only.  What the cluster must show for each, and the ZooKeeper 3.8 / Kafka
3.9 source it follows, is docs/zookeeper-faults.md; in short:

* a quorum survives → every broker's session survives (its client reconnects to another server
  well within the session timeout: ``ClientCnxn`` gives up on a silent server after
  ``readTimeout = 2/3 × session`` and tries the next host) → no controller event;
* the quorum is lost → nothing can change (every ZooKeeper write fails, Kafka's
  ``ZooKeeperClient`` blocks in ``waitUntilConnected``), and once restored the new leader
  re-arms every session with its full timeout (``SessionTrackerImpl`` constructor →
  ``trackSession`` → ``updateSessionExpiry``), so live brokers keep their sessions however
  long the outage was, while the session of a broker that died meanwhile expires one session
  timeout after the restore → ``onBrokerFailure`` then.

Faults that predict "no event" hold the step for one session window after the fault, so a
session that did expire shows in the observation (a moved leader, a shrunk ISR) instead of
after it -- or, sooner, until every registered broker's session has a connection open on a
server it can reach (the ``cons`` four-letter word): a connected client pings, and ZooKeeper 3.8
expires only a session nobody pings (``SessionTrackerImpl.touchSession`` on every packet), so no
expiry is left pending.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import Capability, NetworkHealer, ZooKeeperEnsembleControl, ZooKeeperLinkPartitioner
from kafka_chaos.oracle import BrokerFailure, Event
from kafka_chaos.scenarios.faults.base import ZOOKEEPER_ONLY, FaultBase, FaultEnv, StepTopics, register_fault, require_capability
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, GeneratorSide, IllegalStep, register_generator
from kafka_chaos.scenarios.model.steps import Step
from kafka_chaos.scenarios.model.targets import Target

log = logging.getLogger(__name__)

ZOOKEEPER_SERVER = "zookeeper_server"
ZOOKEEPER_QUORUM_LOSS = "zookeeper_quorum_loss"
ZOOKEEPER_LEADER_CUT = "zookeeper_leader_cut"
ROLES = ("leader", "follower", "minority")
ACTIONS = ("kill", "pause", "restore")
_ENSEMBLE = frozenset({Capability.ZOOKEEPER_ENSEMBLE})
SERVE_TIMEOUT_S = 60.0  # a bound for a busy 2-core machine: an election takes well under 1 s


def choose_servers(role: str, leader: int | None, servers: Sequence[int]) -> tuple[int, ...]:
    """Pure: which servers a role names.  ``minority`` is the most a quorum survives losing,
    leader first (so the survivors must also elect a new leader)."""
    if len(servers) < 3:
        raise HarnessError(f"{ZOOKEEPER_SERVER}/{role} needs an ensemble of 3 or 5 ZooKeeper servers, "
                           f"this cluster has {len(servers)} (run with --zookeepers 3)")
    if leader is None or leader not in servers:
        raise HarnessError("no ZooKeeper server leads: the ensemble has no quorum")
    followers = [s for s in servers if s != leader]
    if role == "leader":
        return (leader,)
    if role == "follower":
        return (followers[0],)
    return (leader, *followers[:(len(servers) - 1) // 2 - 1])


def majority(leader: int | None, servers: Sequence[int]) -> tuple[int, ...]:
    """Pure: the smallest set whose loss ends the quorum (the leader first when there is one)."""
    ordered = ([leader] if leader is not None and leader in servers else []) + [s for s in servers if s != leader]
    return tuple(ordered[:len(servers) // 2 + 1])


def session_window_s(env: FaultEnv) -> float:
    """How long a broker whose session was lost needs to show it: session timeout, two ticks
    (the expirer runs per tick) and a margin for a loaded machine."""
    return (env.session_timeout_ms + 2 * env.tick_time_ms) / 1000.0 + 2.0


SAFE_CONFIRMATIONS = 2  # polls in a row: a connection whose session is being refused shows briefly
SAFE_POLL_S = 0.5


def sessions_safe(sessions: Mapping[int, int], connected: Mapping[int, set[int]],
                  reachable: Mapping[int, Sequence[int]], servers: Sequence[int]) -> bool:
    """Pure: whether every broker's session (``sessions``: broker -> session id) has a connection
    on a server it can reach (``reachable``: broker -> servers, default every one of ``servers``;
    ``connected``: server -> the sessions it lists)."""
    return all(any(session in connected.get(server, set()) for server in reachable.get(broker, servers))
               for broker, session in sessions.items())


def hold_for_lost_sessions(env: FaultEnv, cluster: ZooKeeperEnsembleControl, servers: Sequence[int],
                           reachable: Mapping[int, Sequence[int]] | None = None) -> float:
    """Hold the step until a session the fault lost would have expired (:func:`session_window_s`)
    or, sooner, until :func:`sessions_safe` holds :data:`SAFE_CONFIRMATIONS` polls in a row for
    the brokers registered now (``servers``: those that serve). Returns the seconds held."""
    from kafka_chaos.harness import zk_ensemble

    started = time.monotonic()
    deadline = started + session_window_s(env)
    ports, confirmed = cluster.zookeeper_client_ports(), 0
    while time.monotonic() < deadline:
        try:
            sessions = zk_ensemble.broker_sessions(env.cluster.zookeeper_connect,
                                                   env.cluster.broker_ids)
            connected = {server: zk_ensemble.connected_sessions(ports, [server]) for server in servers}
            safe = bool(sessions) and sessions_safe(sessions, connected, reachable or {}, servers)
        except HarnessError as exc:  # the ensemble electing: not known yet
            log.debug("sessions not confirmed: %s", exc)
            safe = False
        confirmed = confirmed + 1 if safe else 0
        if confirmed >= SAFE_CONFIRMATIONS:
            break
        time.sleep(min(SAFE_POLL_S, max(0.0, deadline - time.monotonic())))
    return time.monotonic() - started


class _LeaderCutter(ZooKeeperLinkPartitioner, ZooKeeperEnsembleControl, NetworkHealer, Protocol):
    """What the leader cut uses: a launcher with ZooKeeper link cuts has an ensemble and heals."""


def restore_servers(cluster: ZooKeeperEnsembleControl, servers: Sequence[int]) -> None:
    """Start the killed and resume the paused among ``servers``; return once all serve."""
    for server in servers:
        if not cluster.zookeeper_server_running(server):
            cluster.start_zookeeper_server(server, wait_serving=False)
        else:
            try:
                cluster.resume_zookeeper_server(server)
            except HarnessError:
                pass  # not paused
    from kafka_chaos.harness import zk_ensemble

    zk_ensemble.wait_serving(cluster.zookeeper_client_ports(), list(servers), SERVE_TIMEOUT_S)


@register_fault
@dataclass
class ZooKeeperServerFault(FaultBase):
    """Kill (SIGKILL) or pause (SIGSTOP) ZooKeeper servers by role — ``leader``, a
    ``follower``, or a ``minority`` (leader first) — keeping a quorum; ``restore`` starts and
    resumes every server an earlier step took down.  Oracle events: none — a quorum remains, so
    every broker's client reconnects to a surviving server before its session can expire
    (ZooKeeper 3.8 ``ClientCnxn``: readTimeout 2/3 of the session, then the next host) and
    nothing reaches the controller.  The step holds one session window after the fault so a
    session that expired anyway would show."""

    kind: ClassVar[str] = ZOOKEEPER_SERVER
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's
    requires: ClassVar[frozenset[Capability]] = _ENSEMBLE
    role: str = "leader"
    action: str = "kill"
    _hit: tuple[int, ...] = field(default=(), init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ZooKeeperServerFault:
        action = options.get("action", "kill")
        role = options.get("role", "leader")
        if action not in ACTIONS:
            raise UsageError(f"{ZOOKEEPER_SERVER}: 'action' must be one of {ACTIONS}, not {action!r}")
        if role not in ROLES:
            raise UsageError(f"{ZOOKEEPER_SERVER}: 'role' must be one of {ROLES}, not {role!r}")
        return cls(target, role, action)

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.action}" + ("" if self.action == "restore" else f"/{self.role}")

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        cluster = cast(ZooKeeperEnsembleControl, require_capability(env, Capability.ZOOKEEPER_ENSEMBLE, self.label))
        servers = cluster.zookeeper_servers()
        if self.action == "restore":
            restore_servers(cluster, servers)
            return
        self._hit = choose_servers(self.role, cluster.zookeeper_leader(), servers)
        for server in self._hit:
            (cluster.kill_zookeeper_server if self.action == "kill" else cluster.pause_zookeeper_server)(server)
        survivors = [s for s in servers if s not in self._hit]
        from kafka_chaos.harness import zk_ensemble

        zk_ensemble.wait_serving(cluster.zookeeper_client_ports(), survivors, SERVE_TIMEOUT_S)
        log.info("%s: servers %s down, %s serve (leader %s)", self.label, self._hit, survivors,
                 cluster.zookeeper_leader())
        held = hold_for_lost_sessions(env, cluster, survivors)  # any session the fault lost expires first
        log.info("%s: held %.1f s for lost sessions", self.label, held)

    def heal(self, env: FaultEnv) -> None:
        if self._hit:
            restore_servers(cast(ZooKeeperEnsembleControl, env.cluster), self._hit)
            self._hit = ()


@register_fault
@dataclass
class ZooKeeperQuorumLoss(FaultBase):
    """Kill a majority of the ensemble (leader first), keep the quorum lost for ``outage_s``
    (default: twice the session timeout, so the outage outlasts every session), restore it.
    Oracle events: none — while the quorum is lost no ZooKeeper write can happen, and the
    restored leader re-arms every session with its full timeout (ZooKeeper 3.8
    ``LeaderZooKeeperServer.createSessionTracker`` → ``SessionTrackerImpl`` → ``trackSession``),
    so live brokers reconnect in time; the step then holds one session window.  With
    ``kill_broker: true`` the target broker is SIGKILLed during the outage: its session cannot
    expire while there is no leader and expires one session timeout after the restore →
    ``BrokerFailure`` (Kafka 3.9 ``onBrokerFailure``), which the oracle predicts."""

    kind: ClassVar[str] = ZOOKEEPER_QUORUM_LOSS
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's
    requires: ClassVar[frozenset[Capability]] = _ENSEMBLE | {Capability.BROKER_CONTROL}
    outage_s: float | None = None
    kill_broker: bool = False
    _hit: tuple[int, ...] = field(default=(), init=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ZooKeeperQuorumLoss:
        outage = options.get("outage_s")
        if outage is not None and (isinstance(outage, bool) or not isinstance(outage, (int, float))
                                   or not 0 <= outage <= 120):
            raise UsageError(f"{ZOOKEEPER_QUORUM_LOSS}: 'outage_s' must be seconds in [0, 120], not {outage!r}")
        kill = options.get("kill_broker", False)
        if not isinstance(kill, bool):
            raise UsageError(f"{ZOOKEEPER_QUORUM_LOSS}: 'kill_broker' must be true or false, not {kill!r}")
        return cls(target, float(outage) if outage is not None else None, kill)

    @property
    def label(self) -> str:
        return f"{self.kind}/kill_broker" if self.kill_broker else self.kind

    @property
    def holds(self) -> tuple[int, ...]:
        return self.target.brokers if self.kill_broker else ()

    def oracle_events(self) -> list[Event]:
        return [BrokerFailure(tuple(self.target.brokers))] if self.kill_broker else []

    def inject(self, env: FaultEnv) -> None:
        from kafka_chaos.harness import zk_ensemble

        cluster = cast(ZooKeeperEnsembleControl, require_capability(env, Capability.ZOOKEEPER_ENSEMBLE, self.label))
        servers = cluster.zookeeper_servers()
        if len(servers) < 3:
            raise HarnessError(f"{self.label} needs an ensemble of 3 or 5 ZooKeeper servers, this cluster "
                               f"has {len(servers)} (run with --zookeepers 3)")
        self._hit = majority(cluster.zookeeper_leader(), servers)
        outage = self.outage_s if self.outage_s is not None else 2 * env.session_timeout_ms / 1000.0
        for server in self._hit:
            cluster.kill_zookeeper_server(server)
        lost_at = time.monotonic()
        survivors = [s for s in servers if s not in self._hit]
        zk_ensemble.wait_not_serving(cluster.zookeeper_client_ports(), survivors, SERVE_TIMEOUT_S)
        if self.kill_broker:
            for broker in self.target.brokers:
                env.cluster.kill_broker(broker)
        time.sleep(max(0.0, outage - (time.monotonic() - lost_at)))  # the outage is the fault
        restore_servers(cluster, self._hit)
        log.info("%s: quorum lost for %.1f s (servers %s), restored", self.label,
                 time.monotonic() - lost_at, self._hit)
        self._hit = ()
        if not self.kill_broker:  # a session lost to the outage expires first
            hold_for_lost_sessions(env, cluster, servers)

    def heal(self, env: FaultEnv) -> None:
        if self._hit:
            restore_servers(cast(ZooKeeperEnsembleControl, env.cluster), self._hit)
            self._hit = ()
        for broker in self.target.brokers if self.kill_broker else ():
            if not env.cluster.broker_running(broker):
                env.cluster.start_broker(broker)


@register_fault
@dataclass
class ZooKeeperLeaderCut(FaultBase):
    """Cut the target broker from the ZooKeeper *leader* only (``variant: cut``), or heal
    (``variant: heal``).  Oracle events: none — if its client was connected to the leader it
    times out (2/3 of the session) and reconnects to a follower, which forwards its session to
    the leader over the quorum link that still works; if it was connected to a follower,
    nothing at all happens (ZooKeeper 3.8 ``Learner``/``FollowerRequestProcessor``: followers
    forward writes and session revalidation to the leader).  Held one session window."""

    kind: ClassVar[str] = ZOOKEEPER_LEADER_CUT
    mode_support: ClassVar[frozenset[str]] = ZOOKEEPER_ONLY  # a ZooKeeper-mode cluster's
    requires: ClassVar[frozenset[Capability]] = _ENSEMBLE | {Capability.ZOOKEEPER_LINK_PARTITION,
                                                              Capability.NETWORK_PARTITION}
    variant: str = "cut"

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> ZooKeeperLeaderCut:
        variant = options.get("variant", "cut")
        if variant not in ("cut", "heal"):
            raise UsageError(f"{ZOOKEEPER_LEADER_CUT}: 'variant' must be 'cut' or 'heal', not {variant!r}")
        return cls(target, variant)

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.variant}"

    def oracle_events(self) -> list[Event]:
        return []

    def inject(self, env: FaultEnv) -> None:
        cluster = cast(_LeaderCutter, require_capability(env, Capability.ZOOKEEPER_LINK_PARTITION, self.label))
        if self.variant == "heal":
            cluster.heal_network()
            return
        leader = cluster.zookeeper_leader()
        if leader is None or len(cluster.zookeeper_servers()) < 3:
            raise HarnessError(f"{self.label} needs a serving ensemble of 3 or 5 ZooKeeper servers "
                               "(run with --zookeepers 3)")
        for broker in self.target.brokers:
            cluster.cut_from_zookeeper_server(broker, leader)
        servers = cluster.zookeeper_servers()  # a cut broker's session is safe only off the leader
        elsewhere = [s for s in servers if s != leader]
        hold_for_lost_sessions(env, cluster, servers, {b: elsewhere for b in self.target.brokers})

    def heal(self, env: FaultEnv) -> None:
        if self.variant == "cut":
            cast(NetworkHealer, env.cluster).heal_network()


# --- generator side (scenarios.faults.generation) ------------------------------------------------

# A generated schedule that may draw these runs a 3-server ensemble: one server down keeps a quorum.
GENERATED_ENSEMBLE = 3


def _zookeeper(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if model.mode != "zookeeper":
        raise IllegalStep(f"{step.fault} needs a ZooKeeper-mode cluster")
    if step.fault == ZOOKEEPER_SERVER and step.options.get("action") == "restore":
        if not model.zookeeper_down:
            raise IllegalStep(f"{ZOOKEEPER_SERVER} restore: no server is down")
        model.zookeeper_down = False
        return
    if model.zookeeper_down:
        raise IllegalStep(f"{step.fault} while a ZooKeeper server is down: a second one would lose the quorum")
    if step.options.get("kill_broker"):
        raise IllegalStep(f"{ZOOKEEPER_QUORUM_LOSS} with kill_broker is not drawn")
    # A quorum loss restores its servers itself; a server killed or paused stays down until restored.
    model.zookeeper_down = step.fault == ZOOKEEPER_SERVER


def _server_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    if model.mode != "zookeeper":
        return []
    if model.zookeeper_down:
        return [Step(ZOOKEEPER_SERVER, options={"action": "restore"})]
    return [Step(ZOOKEEPER_SERVER, options={"action": draw.rng.choice(("kill", "pause")),
                                            "role": draw.rng.choice(("leader", "follower"))})]


def _quorum_loss_candidates(model: ClusterModel, draw: Draw) -> list[Step]:
    return [Step(ZOOKEEPER_QUORUM_LOSS)] if model.mode == "zookeeper" and not model.zookeeper_down else []


register_generator(GeneratorSide(ZOOKEEPER_SERVER, 1, _zookeeper, _server_candidates, opt_in=True,
                                 zookeepers=GENERATED_ENSEMBLE))
register_generator(GeneratorSide(ZOOKEEPER_QUORUM_LOSS, 1, _zookeeper, _quorum_loss_candidates, opt_in=True,
                                 zookeepers=GENERATED_ENSEMBLE))

"""One cluster at a time (2-core machine), reused across scenarios with equal needs.

Between scenarios the cluster is restored (every stopped broker started, every broker
registered, a controller, settled internal topics); a cluster that cannot be restored is
recreated. The pool also answers which capabilities (``harness.cluster.Capability``) its
clusters lack, so scenarios needing them are skipped with one line why.

The next scenario's cluster, when its needs differ, may be started in the background once the
current scenario has healed (:meth:`ClusterPool.prepare`): its start then overlaps the current
one's drain, read-back and topic deletion — work that measures nothing — and never a fault step.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.harness.cluster import Capability, ControllerQuorumControl, ManagedCluster, capabilities_of, implements
from kafka_chaos.harness.zksnapshot import ZkSnapshot
from kafka_chaos.scenarios.plans.spec import ClusterNeeds
from kafka_chaos.scenarios.model.snapshots import INTERNAL_TOPICS, is_settled

if TYPE_CHECKING:
    from kafka_chaos.harness.distribution import KafkaDistribution
    from kafka_chaos.harness.readiness import ProducerIdGrant

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

# A restore that makes no progress this long will not make any: give up and recreate the cluster
# (about 14 s on containers, 10 s locally) instead of waiting out the whole settle timeout.  A
# restarted follower rejoins the small internal topics' ISRs within a few seconds, and every
# ISR expansion, registration or controller change is a visible change that restarts the clock.
STALL_TIMEOUT_S = 20.0
# ... except where Kafka itself stays silent longer. A leader whose AlterPartition reached a
# controller that then lost its ZooKeeper session gets no answer: the old controller's session
# expiry clears its event queue (KafkaController's beforeInitializingSession → clearAndPut(Expire))
# and AlterPartitionReceived.preempt() answers nothing. The leader's alter-partition channel
# (NodeToControllerRequestThread) turns to the new controller only when that request times out,
# after controller.socket.timeout.ms; until then none of its partitions' ISRs can grow
# (Partition.canAddReplicaToIsr: not while an update is in flight). Seen: explore-27005-6.
STALL_MARGIN_S = 5.0


def stall_timeout_for(settings: Mapping[str, str], floor: float = STALL_TIMEOUT_S) -> float:
    """How long a restore may see no change before giving up: ``floor``, or longer than the
    brokers' controller.socket.timeout.ms by :data:`STALL_MARGIN_S`."""
    from kafka_chaos.harness.config import CONTROLLER_SOCKET_TIMEOUT_MS, KAFKA_DEFAULT_CONTROLLER_SOCKET_TIMEOUT_MS

    timeout_ms = int(settings.get(CONTROLLER_SOCKET_TIMEOUT_MS, KAFKA_DEFAULT_CONTROLLER_SOCKET_TIMEOUT_MS))
    return max(floor, timeout_ms / 1000 + STALL_MARGIN_S)


class StallWatch:
    """A wait predicate that raises :class:`HarnessError` once the ZooKeeper state it watches
    (brokers, controller, internal topics' partition states) stayed the same, unhealthy, for
    ``stall_s`` — monotonic clock, so it belongs here and not in the pure checks."""

    def __init__(self, healthy: Callable[[ZkSnapshot], bool], stall_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._healthy = healthy
        self._stall_s = stall_s
        self._clock = clock
        self._last: tuple[object, ...] | None = None
        self._since = clock()

    def __call__(self, snapshot: ZkSnapshot) -> bool:
        if self._healthy(snapshot):
            return True
        state = (tuple(sorted(snapshot.live_brokers.items())), snapshot.controller,
                 tuple(sorted((k, str(v)) for k, v in snapshot.partitions.items())))
        now = self._clock()
        if state != self._last:
            self._last, self._since = state, now
        elif now - self._since >= self._stall_s:
            raise HarnessError(f"cluster not healthy: nothing changed for {now - self._since:.0f} s "
                               f"(ZooKeeper shows {snapshot.summary()})")
        return False


# How long acquire() waits for a cluster prepare() is starting: its start and readiness are
# bounded themselves (start timeout, settle timeouts); this only keeps the join bounded too.
PREPARED_JOIN_S = 600.0


@dataclass(frozen=True)
class _Prepared:
    """A cluster being started in the background for the next scenario."""

    needs: ClusterNeeds
    start: Future[ManagedCluster]


class ClusterPool:
    def __init__(self, backend: str, distribution: KafkaDistribution, progress: Progress,
                 open_cluster: Callable[..., ManagedCluster] | None = None, settle_timeout: float = 90.0,
                 stall_timeout: float = STALL_TIMEOUT_S) -> None:
        self.backend = backend
        self.distribution = distribution
        self.progress = progress
        self._open = open_cluster
        self.settle_timeout = settle_timeout
        self.stall_timeout = stall_timeout
        self.cluster: ManagedCluster | None = None
        self.needs: ClusterNeeds | None = None
        self._missing: dict[str, Mapping[Capability, str]] = {}  # by cluster mode
        self._releases: dict[str, KafkaDistribution] = {}  # scenarios' own releases (ClusterNeeds.kafka_version)
        self._prepared: _Prepared | None = None
        # The producer ids the held cluster's brokers handed the harness when it was acquired
        # (its warm-up), and those of clusters started but not yet acquired, by id().
        self.granted: list[ProducerIdGrant] = []
        self._granted_at_start: dict[int, list[ProducerIdGrant]] = {}
        # One worker thread for the pool's life: a node's PR_SET_PDEATHSIG (harness.processes)
        # fires when the *thread* that spawned it exits, so a thread per start would kill its JVMs.
        self._starter: ThreadPoolExecutor | None = None

    def missing_capabilities(self, mode: str = "zookeeper") -> Mapping[Capability, str]:
        """What this pool's clusters of ``mode`` cannot do, each with a one-line reason. A
        caller-supplied launcher's clusters say it themselves once one exists (its faults will
        tell before)."""
        if self.cluster is not None and getattr(self.cluster, "mode", "zookeeper") == mode:
            have = capabilities_of(self.cluster)
            backend = getattr(self.cluster, "backend", self.backend)
            return {c: f"the {backend} launcher lacks {c.value}" for c in Capability if c not in have}
        if self._open is not None:
            return {}
        if mode not in self._missing:
            from kafka_chaos.harness.backends import missing_capabilities

            self._missing[mode] = missing_capabilities(self.backend, mode)  # asked once: "auto" pings Docker
        return self._missing[mode]

    def acquire(self, needs: ClusterNeeds) -> ManagedCluster:
        from kafka_chaos.harness.readiness import warm_producer_ids

        if self._reusable(needs):
            self._discard_prepared()
            try:
                self.restore()
                # A broker a fault restarted holds no block of producer ids yet (_ready_for_clients).
                self.granted = warm_producer_ids(self.held(), timeout=self.settle_timeout)
                return self.held()
            except HarnessError as exc:
                self.progress(f"cluster could not be restored ({exc}); recreating it")
        cluster = self._take_prepared(needs)
        self.release()
        if cluster is None:
            self.progress(f"starting a {self.backend} cluster: {needs.describe()}")
            cluster = self._start(needs)
        self.cluster, self.needs = cluster, needs
        self.granted = self._granted_at_start.pop(id(cluster), [])
        return cluster

    def prepare(self, needs: ClusterNeeds) -> None:
        """Start, in the background, the cluster a later :meth:`acquire` of ``needs`` will take
        (nothing when the held cluster will do). Call it only when the held cluster's faults are
        healed: two clusters starting or under faults at once on two cores make timings lie."""
        if self._prepared is not None or self._reusable(needs):
            return
        self.progress(f"starting the next {self.backend} cluster meanwhile: {needs.describe()}")
        if self._starter is None:
            self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="next-cluster")
        self._prepared = _Prepared(needs, self._starter.submit(self._start, needs))

    def _reusable(self, needs: ClusterNeeds) -> bool:
        """The held cluster will do for ``needs``. Never a migration's (no longer a ZooKeeper-mode
        cluster once migrated) nor a dynamic quorum's: its voter changes (``controller_add``,
        ``controller_remove``) outlive the restore, which starts nodes but adds and removes no voter."""
        return (self.cluster is not None and self.needs == needs and needs.mode != "migration"
                and needs.quorum != "dynamic")

    def _take_prepared(self, needs: ClusterNeeds | None) -> ManagedCluster | None:
        """The prepared cluster when it has ``needs`` and started; else it is destroyed (a start
        that failed in the background is tried again in the foreground, where its error is
        reported). ``None``: destroy it whatever it has."""
        prepared = self._prepared
        if prepared is None:
            return None
        try:
            cluster = prepared.start.result(timeout=PREPARED_JOIN_S)
        except FutureTimeout:
            self._prepared = None  # still starting: destroyed at exit with every cluster this process owns
            raise HarnessError(f"the next cluster was still starting after {PREPARED_JOIN_S:.0f} s") from None
        except Exception as exc:  # noqa: BLE001 - the foreground start says it again if it fails again
            self._prepared = None
            if needs is not None:
                self.progress(f"the next cluster did not start in the background ({exc}); starting it again")
            return None
        # Only now: a Ctrl-C while waiting leaves it to release(), which waits again and destroys it.
        self._prepared = None
        if prepared.needs != needs:
            _destroy(cluster)
            return None
        return cluster

    def _discard_prepared(self) -> None:
        self._take_prepared(None)

    def _start(self, needs: ClusterNeeds) -> ManagedCluster:
        """A new cluster with ``needs``, ready for clients (destroyed again when it is not)."""
        from kafka_chaos.harness.backends import open_cluster
        from kafka_chaos.harness.config import ClusterConfig

        config = ClusterConfig(brokers=needs.brokers, cluster_overrides=needs.overrides_dict, ids=needs.broker_ids,
                               zookeepers=needs.zookeepers, log_dirs=needs.log_dirs,
                               link_proxies=needs.link_proxies, mode=needs.mode, controllers=needs.controllers,
                               broker_jaas=needs.broker_jaas, fake_clocks=needs.fake_clocks, filesystem=needs.filesystem,
                               quorum=needs.quorum, features=needs.features)
        opener = self._open or open_cluster
        cluster: ManagedCluster = opener(self.backend, config, self.distribution_for(needs))
        cluster.__enter__()  # starts; cleans up itself when starting fails
        try:
            self._ready_for_clients(cluster)
        except BaseException:
            _destroy(cluster)
            raise
        return cluster

    def distribution_for(self, needs: ClusterNeeds) -> KafkaDistribution:
        """The run's distribution, or the release a scenario names (fetched once per run)."""
        wanted = needs.kafka_version
        if wanted is None or wanted == self.distribution.version:
            return self.distribution
        if wanted not in self._releases:
            from kafka_chaos.harness.distribution import resolve_distribution

            self.progress(f"resolving Kafka {wanted}")
            self._releases[wanted] = resolve_distribution(wanted)
        return self._releases[wanted]

    def _ready_for_clients(self, cluster: ManagedCluster) -> None:
        """The scenarios' consumer groups must work from the first fault on: create
        ``__consumer_offsets`` while every broker is up (Kafka would create it lazily, refused
        while a broker is down). And their idempotent producers must not wait a second for
        their first producer id: every broker gets its first block now. A failure here is a
        cluster that cannot be used."""
        from kafka_chaos.harness.config import OFFSETS_TOPIC_NUM_PARTITIONS
        from kafka_chaos.harness.readiness import ensure_offsets_topic, warm_producer_ids

        partitions = int(dict(cluster.broker_settings()).get(OFFSETS_TOPIC_NUM_PARTITIONS, "50"))
        ensure_offsets_topic(cluster, partitions=partitions, timeout=self.settle_timeout)
        self._granted_at_start[id(cluster)] = warm_producer_ids(cluster, timeout=self.settle_timeout)

    def held(self) -> ManagedCluster:
        """The cluster the pool holds now (a HarnessError when it holds none)."""
        if self.cluster is None:
            raise HarnessError("the cluster pool holds no cluster")
        return self.cluster

    def restore(self) -> None:
        """Start every stopped broker and wait for all registered, a controller, and settled
        internal topics."""
        from kafka_chaos.harness.observer import ConvergenceTimeout
        from kafka_chaos.harness.observers import is_kraft, is_migrating, open_observer

        cluster = self.held()
        if implements(cluster, ControllerQuorumControl):
            quorum = cast(ControllerQuorumControl, cluster)
            for c in quorum.controller_ids:
                if not quorum.controller_running(c):
                    self.progress(f"restoring: starting controller {c}")
                    quorum.start_controller(c)
        for b in cluster.broker_ids:
            if not cluster.broker_running(b):
                self.progress(f"restoring: starting broker {b}")
                cluster.start_broker(b)
        wanted = set(cluster.broker_ids)
        # ZooKeeper mode: the controller is one of the brokers; KRaft: any quorum leader
        # (a migrating cluster's may be its KRaft controller)
        kraft = is_kraft(cluster) or is_migrating(cluster)
        healthy = StallWatch(lambda s: set(s.live_brokers) == wanted
                             and (s.controller is not None if kraft else s.controller in wanted)
                             and is_settled(s, INTERNAL_TOPICS),
                             stall_timeout_for(dict(cluster.broker_settings()), self.stall_timeout))
        with open_observer(cluster, list(INTERNAL_TOPICS)) as observer:
            try:
                observer.wait_until(healthy, timeout=self.settle_timeout,
                                    description="every broker registered and settled")
            except ConvergenceTimeout as exc:
                raise HarnessError(f"cluster not healthy: {exc}") from exc

    def release(self) -> None:
        """Destroy the held cluster (and a prepared one)."""
        cluster, self.cluster, self.needs = self.cluster, None, None
        if cluster is not None:
            _destroy(cluster)
        self._discard_prepared()


def _destroy(cluster: ManagedCluster) -> None:
    try:
        cluster.__exit__(None, None, None)
    except Exception as exc:  # noqa: BLE001 - teardown goes on
        log.warning("destroying the cluster failed: %s", exc)

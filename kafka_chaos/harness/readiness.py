"""Start-up readiness shared by every launcher: what "a broker is up" means in ZooKeeper."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kafka_chaos.common.errors import HarnessError
from kafka_chaos.common.waits import WaitTimeout, wait_until
from kafka_chaos.harness.config import ClusterConfig, session_timeout_ms, tick_time_ms
from kafka_chaos.harness.cluster import Cluster
from kafka_chaos.harness.observer import ConvergenceTimeout, ZkObserver, ZkSnapshot
from kafka_chaos.harness.observers import open_observer

log = logging.getLogger(__name__)

# Grace on top of the session timeout + 2 ticks before an old registration must have expired.
SESSION_EXPIRY_GRACE_SECONDS = 5.0
# How often a start-up question (metadata, coordinator, producer id) is asked again until answered:
# each answer is a broker's or controller's decision taking milliseconds, and every broker start
# and every cluster waits on the last one (a loopback request costs about a millisecond).
READY_POLL_S = 0.05


def wait_registered(zookeeper_connect: str, broker_ids: Iterable[int], *, deadline: float,
                    newer_than: Mapping[int, int] | None = None,
                    check_alive: Callable[[], None] = lambda: None, kraft_controller: bool = False) -> ZkSnapshot:
    """Wait (watch-driven, until the ``time.monotonic()`` ``deadline``) until every broker is
    registered in ``/brokers/ids`` — with a broker epoch newer than ``newer_than`` gives, so a
    restarted broker's stale registration does not count — and a live controller is elected
    (``kraft_controller``: a migrating cluster, where ``/controller`` may name its KRaft
    controller, a node that is no broker).

    ``check_alive`` raises when a node died meanwhile, which ends the wait at once; a timeout
    raises :class:`harness.observer.ConvergenceTimeout` with the last snapshot."""
    wanted = set(broker_ids)
    old = newer_than or {}

    def ready(snapshot: ZkSnapshot) -> bool:
        check_alive()
        registered = {b for b in wanted if snapshot.live_brokers.get(b, -1) > old.get(b, -1)}
        controller_up = (snapshot.controller is not None if kraft_controller
                         else snapshot.controller in snapshot.live_brokers)
        return registered == wanted and controller_up

    with ZkObserver(zookeeper_connect, topics=[]) as observer:
        return observer.wait_until(
            ready, timeout=max(0.0, deadline - time.monotonic()),
            description=f"brokers {sorted(wanted)} to register and a controller to be elected")


def metadata_brokers(bootstrap: str, timeout: float = 2.0) -> set[int]:
    """The broker ids one broker's metadata cache lists (filled by the controller's
    UpdateMetadata), asked of that broker alone."""
    from kafka_chaos.harness.metadata import fetch_metadata

    return set(fetch_metadata(bootstrap, [], timeout).brokers)


def wait_metadata_lists(bootstrap: str, expected: set[int] | Callable[[], set[int]], *, deadline: float,
                        check_alive: Callable[[], None] = lambda: None) -> str | None:
    """Wait (until the ``time.monotonic()`` ``deadline``, at least one try) until the broker at
    ``bootstrap`` answers metadata listing every broker in ``expected`` (a set, or asked again
    at every try: see :func:`still_registered`).  Kafka registers in ZooKeeper before its
    socket server accepts connections, and learns the other brokers only from the controller's
    UpdateMetadata, so registration alone is not "ready".

    Returns None when it answered, else the last reason it did not (the caller words the
    failure with that node's log); ``check_alive`` raising ends the wait at once."""
    last_error = ""

    def answers() -> bool:
        nonlocal last_error
        check_alive()
        try:
            listed = metadata_brokers(bootstrap, timeout=2.0)
        except HarnessError as exc:
            last_error = str(exc)
            raise ConnectionError(last_error) from exc
        wanted = expected() if callable(expected) else expected
        if not wanted <= listed:
            last_error = f"its metadata lists brokers {sorted(listed)}, expected {sorted(wanted)}"
            raise ConnectionError(last_error)
        return True

    try:
        wait_until(answers, timeout=deadline - time.monotonic(), interval=READY_POLL_S, retry_on=(ConnectionError,),
                   description=f"the broker at {bootstrap} to list the registered brokers")
    except WaitTimeout:
        return last_error
    return None


def still_registered(observer: ZkObserver, registered: set[int]) -> Callable[[], set[int]]:
    """The brokers of ``registered`` still in ``/brokers/ids`` now: a broker killed just before
    a start keeps its registration until its session expires, and once the controller has
    processed that, no broker's metadata lists it any more (waiting for it would never end)."""
    return lambda: registered & set(observer.snapshot().live_brokers)


def registration_expiry_bound_s(config: ClusterConfig) -> float:
    """Seconds within which ZooKeeper surely expired a dead broker's session: the session
    timeout, two ticks (the expirer runs per tick) and a grace for a busy machine."""
    return session_timeout_ms(config) / 1000 + 2 * tick_time_ms(config) / 1000 + SESSION_EXPIRY_GRACE_SECONDS


def wait_old_registration_gone(zookeeper_connect: str, broker_id: int, bound: float) -> int | None:
    """Before restarting a stopped or killed broker: its old session may still hold
    ``/brokers/ids/<id>`` until ZooKeeper expires it, and a start before that fails with
    NODEEXISTS, so wait (bounded by ``bound`` seconds) as kafkatest's ``hard_bounce`` does.

    Returns the old registration's broker epoch (None when there was none), so the caller can
    wait for a *newer* one."""
    with ZkObserver(zookeeper_connect, topics=[]) as observer:
        old_epoch = observer.snapshot().live_brokers.get(broker_id)
        if old_epoch is not None:
            log.info("waiting up to %.0f s for broker %d's old ZooKeeper session to expire", bound, broker_id)
            try:
                observer.wait_broker_gone(broker_id, bound)
            except ConvergenceTimeout as exc:
                raise HarnessError(f"broker {broker_id} is still registered in /brokers/ids {bound:.0f} s "
                                   f"after it stopped; not restarting it (it would fail with NODEEXISTS): "
                                   f"{exc}") from None
    return old_epoch


OFFSETS_TOPIC = "__consumer_offsets"


def ensure_offsets_topic(cluster: Cluster, *, partitions: int, timeout: float = 60.0) -> None:
    """Create ``__consumer_offsets`` now, while every broker is up, and wait (bounded) until
    each of its ``partitions`` has a leader and a full ISR.

    Kafka creates it lazily, on the first FindCoordinator, with
    ``offsets.topic.replication.factor`` replicas — refused while fewer brokers are alive, so a
    consumer group first used after a kill would wait for a coordinator until the broker is
    back. FindCoordinator is sent on the wire and repeated every :data:`READY_POLL_S` until it
    names a coordinator (COORDINATOR_NOT_AVAILABLE while the topic is being created); through
    librdkafka the first answer took a second, its own retry interval, not Kafka's."""
    from kafka_chaos.harness.metadata import MetadataError, error_name, find_coordinator

    bootstrap = cluster.bootstrap_servers.split(",")[0]
    deadline = time.monotonic() + timeout

    def coordinator_found() -> bool:
        answer = find_coordinator(bootstrap, "kafka-chaos-offsets-topic")
        if answer.error_code != 0:
            raise MetadataError(f"FindCoordinator answered {error_name(answer.error_code)}")
        return True

    try:
        wait_until(coordinator_found, timeout=timeout, interval=READY_POLL_S, retry_on=(MetadataError,),
                   description="a group coordinator (creates __consumer_offsets)")
    except WaitTimeout as exc:
        raise HarnessError(f"{OFFSETS_TOPIC} could not be created within {timeout:.0f} s: "
                           f"{exc.last_error or exc}") from None

    def settled(snapshot: ZkSnapshot) -> bool:
        states = [s for (t, _), s in snapshot.partitions.items() if t == OFFSETS_TOPIC]
        return len(states) >= partitions and all(
            s.leader in snapshot.live_brokers and set(s.isr) == set(s.replicas) for s in states)

    with open_observer(cluster, [OFFSETS_TOPIC]) as observer:
        try:
            observer.wait_until(settled, timeout=max(0.0, deadline - time.monotonic()),
                                description=f"{OFFSETS_TOPIC} led and fully in sync")
        except ConvergenceTimeout as exc:
            raise HarnessError(f"{OFFSETS_TOPIC} not settled within {timeout:.0f} s: {exc}") from None


@dataclass(frozen=True)
class ProducerIdGrant:
    """The broker at ``address`` handed the harness ``producer_id`` (and ``epoch``) at ``at``:
    one InitProducerId, so one producer instance as far as the cluster knows."""

    address: str
    at: float
    producer_id: int
    epoch: int


def warm_producer_ids(cluster: Cluster, *, timeout: float = 60.0) -> list[ProducerIdGrant]:
    """Give every broker its first block of producer ids before the workload starts, and return
    the id each one handed out.

    A broker holds none after it starts: its first InitProducerId asks the controller for a
    block and answers COORDINATOR_LOAD_IN_PROGRESS (``RPCProducerIdManager.generateProducerId``,
    3.9; releases before IBP 3.0 allocate from ZooKeeper at once), and librdkafka retries
    about a second later, so every idempotent producer of a fresh cluster got its first ack a
    second late. Asking each broker on the wire (every :data:`READY_POLL_S`) until it hands out an
    id is what a cluster that has served producers before looks like; a broker restarted by a
    fault starts without a block again, as in Kafka. Each id handed out is a producer instance's
    like any client's: the ``producer_ids_unique`` check counts them (a block handed out twice
    shows first in a fresh broker's first id: KAFKA-15552)."""
    from kafka_chaos.harness.metadata import MetadataError, error_name, init_producer_id

    waiting = {address.strip() for address in cluster.bootstrap_servers.split(",")}
    last: dict[str, str] = {}
    grants: list[ProducerIdGrant] = []

    def every_broker_has_ids() -> bool:
        for address in sorted(waiting):
            try:
                answer = init_producer_id(address)
            except MetadataError as exc:
                last[address] = str(exc)
                continue
            if answer.error_code == 0:
                waiting.discard(address)
                grants.append(ProducerIdGrant(address, time.time(), answer.producer_id, answer.epoch))
            else:
                last[address] = f"InitProducerId answered {error_name(answer.error_code)}"
        return not waiting

    try:
        wait_until(every_broker_has_ids, timeout=timeout, interval=READY_POLL_S,
                   description="a block of producer ids on every broker")
    except WaitTimeout:
        raise HarnessError(f"brokers at {', '.join(sorted(waiting))} handed out no producer id within "
                           f"{timeout:.0f} s: {'; '.join(last[a] for a in sorted(waiting) if a in last)}") from None
    return grants

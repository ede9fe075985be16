"""No two producers hold the same producer id: an invariant that needs no prediction.

An idempotent producer (no ``transactional.id``) asks any broker for an id (InitProducerId), and the
broker hands out the next one of a block the cluster reserved for it alone: ZooKeeper mode through
``/latest_producer_id_block`` (``ZkProducerIdManager.getNewProducerIdBlock``, a conditional write),
KRaft through the controller (``ProducerIdControlManager.generateNextProducerId``, the block
committed as a ``ProducerIdsRecord``). An id is never handed out twice; a later epoch of the same
id goes to the same producer only (KIP-360's bump: InitProducerId with the id and epoch it holds).
Two producer instances given one id share its sequence numbers on every partition: the broker
takes the second's first batch for a duplicate of the first's (acknowledged, never written) or
refuses it as out of order. KAFKA-15552 (3.6.0, fixed in 3.6.1) is the kind this catches: the
migration copied ``nextProducerId`` as the last ZooKeeper block's *first* id, so the KRaft
controller handed that block out again.

The workload's producers are idempotent only; a transactional producer re-initialised with its
``transactional.id`` takes the same id with a bumped epoch, which this rule would have to allow
(not needed yet).

Pure: judges the ids the producers logged (:func:`scenarios.clients.producer_log.producer_ids_given`).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_chaos.scenarios.checks.functions import CheckResult
from kafka_chaos.scenarios.clients.producer_log import ProducerIdGiven

CHECK = "producer_ids_unique"


def shared_ids(given: Iterable[ProducerIdGiven]) -> dict[int, list[ProducerIdGiven]]:
    """Producer id -> the first grant of it to each instance, for the ids more than one instance
    was given."""
    first: dict[int, dict[str, ProducerIdGiven]] = {}
    for g in sorted(given, key=lambda g: g.at):
        first.setdefault(g.producer_id, {}).setdefault(g.client, g)
    return {pid: sorted(by_client.values(), key=lambda g: g.at)
            for pid, by_client in sorted(first.items()) if len(by_client) > 1}


def check_producer_ids_unique(given: Iterable[ProducerIdGiven]) -> CheckResult:
    given = list(given)
    clients = sorted({g.client for g in given})
    ids = sorted({g.producer_id for g in given})
    observed = {c: sorted({(g.producer_id, g.epoch) for g in given if g.client == c}) for c in clients}
    expected = "each producer id given to one producer instance"
    shared = shared_ids(given)
    if shared:
        detail = "; ".join(
            f"producer id {pid} given to " + ", ".join(f"{g.client} (epoch {g.epoch}, at {g.at:.3f})" for g in grants)
            for pid, grants in shared.items())
        return CheckResult(CHECK, False, expected, observed, detail)
    if not given:
        return CheckResult(CHECK, None, expected, observed, "no producer logged a producer id")
    return CheckResult(CHECK, True, expected, observed,
                       f"{len(clients)} producer instance(s), {len(ids)} distinct producer id(s)")

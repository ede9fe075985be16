"""Hand-made observations for the check-registry and history tests: a 3-broker cluster with one
topic ``t`` (partitions 0: [1, 2], 1: [2, 3]), broker 3 the controller."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka_chaos.harness.observer import PartitionZkState, ZkSnapshot
from kafka_chaos.harness.zkevents import BrokerGone, PartitionStateWritten
from kafka_chaos.oracle import BrokerFailure
from kafka_chaos.scenarios.clients.delivery import Ack
from kafka_chaos.scenarios.history.observations import (
    ClientActivity,
    FaultTraits,
    PartitionSeen,
    ScenarioRun,
    StepObserved,
)
from kafka_chaos.scenarios.model.snapshots import cluster_state_of
from kafka_chaos.scenarios.model.targets import Target

T0 = 1000.0
TOPIC = "t"
RUN = ScenarioRun("run1", "leader_hard_kill", 0, 7, "local", "3.9.2", 3, 2, "abc", 6000, 500, (TOPIC,))
HARD_KILL = FaultTraits("hard_kill", "hard_kill", exact_epochs=True, holds=(1,))


def zk_partition(p: int, replicas: tuple[int, ...], leader: int, isr: tuple[int, ...], epoch: int,
                 version: int = 1) -> PartitionZkState:
    return PartitionZkState(TOPIC, p, replicas, leader, epoch, isr, 1, 0, version)


def snapshot(live: tuple[int, ...], parts: list[PartitionZkState], controller: int | None = 3,
             at: float = T0) -> ZkSnapshot:
    return ZkSnapshot(taken_at=at, live_brokers={b: 100 + b for b in live}, controller=controller,
                      controller_epoch=1, partitions={(p.topic, p.partition): p for p in parts},
                      topic_configs={TOPIC: {}}, pending_reassignment=False)


BEFORE = snapshot((1, 2, 3), [zk_partition(0, (1, 2), 1, (1, 2), 4), zk_partition(1, (2, 3), 2, (2, 3), 0)])
# What Kafka 3.9 does when broker 1 (leader of t-0, not the controller) dies: offline election
# picks 2 from the ISR, epoch +1; t-1 untouched.
AFTER = snapshot((2, 3), [zk_partition(0, (1, 2), 2, (2,), 5, 2), zk_partition(1, (2, 3), 2, (2, 3), 0)],
                 at=T0 + 6)


def metadata_of(snap: ZkSnapshot) -> dict[tuple[str, int], PartitionSeen]:
    return {k: PartitionSeen(p.leader, p.replicas, p.isr) for k, p in snap.partitions.items()}


def acks(partition: int, *times: float) -> tuple[Ack, ...]:
    return tuple(Ack(partition, i, f"k{partition}-{i}", t) for i, t in enumerate(times))


def hard_kill_step(**changes: Any) -> StepObserved:
    """Broker 1 SIGKILLed at T0 + 0.5; ZooKeeper and both brokers' metadata show Kafka's answer."""
    obs = StepObserved(
        run=RUN, index=0, label="step 1/1 hard_kill", traits=HARD_KILL, target=Target((1,), "broker 1 (leader of t-0)"),
        then=(), started_at=T0, before=BEFORE, oracle_state=cluster_state_of(BEFORE, [TOPIC], {}),
        oracle_events=(BrokerFailure((1,)),), fault_at=T0 + 0.5, episode_started_at=T0 + 0.5, after=AFTER,
        waited_s=5.6, convergence_timeout_s=90.0, excused=(1,), metadata={2: metadata_of(AFTER), 3: metadata_of(AFTER)},
        sightings={"t-0": ((T0 + 6.1, 2, 2), (T0 + 6.2, 3, 2))},
        events=(BrokerGone(T0 + 5.5, 1), PartitionStateWritten(T0 + 5.6, TOPIC, 0, leader=2, leader_epoch=5, isr=(2,),
                                                                  controller_epoch=1, leader_recovery_state=0,
                                                                  version=2)),
        clients={"t-0": ClientActivity(acks(0, T0 + 0.4, T0 + 6.3), (("REQUEST_TIMED_OUT", T0 + 3.0),)),
                 "t-1": ClientActivity(acks(1, T0 + 0.45, T0 + 0.55))},
        measured_at=T0 + 7, finished_at=T0 + 7.5)
    return replace(obs, **changes)

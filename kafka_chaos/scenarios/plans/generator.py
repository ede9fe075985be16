"""Generated fault schedules, Jepsen style: pure, seeded, legal by construction.

:func:`generate` makes schedule ``index`` of a seed (``random.Random(f"{seed}:{index}")``: the
same schedules on every machine): a cluster of B brokers with ids drawn from 1..12 (so ids ≥ 5
and gaps are common), one or two topics with explicit assignments (replication factor 1–3, up
to ``max_partitions`` partitions), then K steps drawn by weight from the fault kinds the model
allows at that point.

What each kind may be and when it is legal is the kind's own generator side, registered beside
its fault class (:mod:`scenarios.faults.generation`: weight, opt-in, legality rule, candidates);
this module draws over them in registration order. The :class:`ClusterModel` is the legality
check the shrinker (:mod:`scenarios.plans.shrink`) runs on every candidate before spending a
cluster on it: :func:`problems` replays a schedule and names the first illegal step. Every step is checked
on the cluster exactly as catalogue steps are: the oracle predicts it from the state observed
before it, with every legal interleaving of several brokers' session expiries.

Left out of the repertoire, with the reason: reassignments onto a dead broker, or of a partition
with a replica down (its only in-sync replica may be the dead one: the new replicas then have no
leader to copy from) — the stalled reassignment keeps ``/admin/reassign_partitions`` pending,
which the next step's settle wait cannot pass; auto-rebalance (its 5 s timer races every later step), topic creation during
faults (the runner creates topics before the first step), network cuts from peers only (they
need a short ``replica.lag.time.max.ms`` that makes a cut from everyone nondeterministic).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.config import kafka_default_overrides
from kafka_chaos.scenarios.faults import GENERATORS, fault_kind, make_fault, requirements_of
from kafka_chaos.scenarios.faults.base import MIGRATION_ONLY, QUORUM_MODES
from kafka_chaos.scenarios.faults.delay import DELAY_LINKS
from kafka_chaos.scenarios.faults.generation import ClusterModel, Draw, IllegalStep
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import Target
from kafka_chaos.scenarios.plans.schedule import Schedule
from kafka_chaos.scenarios.plans.transactional import with_transactional_topics

__all__ = ["DEFAULT_WEIGHTS", "DELAY_LINKS", "OPT_IN", "REPERTOIRE", "ClusterModel", "GeneratorConfig", "IllegalStep",
           "generate", "problems"]

REPERTOIRE = tuple(GENERATORS)
DEFAULT_WEIGHTS: Mapping[str, float] = {kind: side.weight for kind, side in GENERATORS.items()}
OPT_IN = tuple(kind for kind, side in GENERATORS.items() if side.opt_in)
BROKER_ID_POOL = range(1, 13)


def problems(schedule: Schedule, release: str | None = None) -> list[str]:
    """Empty when every step is legal in order; else the first illegal step and why. ``release``:
    what the schedule runs on unless it pins one (None: unknown, the conservative rules)."""
    model = ClusterModel.of(schedule, release)
    for i, step in enumerate(schedule.steps):
        try:
            model.apply(step)
        except IllegalStep as exc:
            return [f"step {i + 1} ({step.fault}): {exc}"]
    return []


# --- generation ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GeneratorConfig:
    steps: int = 6
    brokers: int = 3
    faults: tuple[str, ...] = tuple(k for k in REPERTOIRE if k not in OPT_IN)
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    max_partitions: int = 12
    topics: int = 2  # at most
    delay_links: tuple[str, ...] = DELAY_LINKS  # which links network_delay steps may delay
    # "kraft": schedules for a KRaft cluster of 3 voters; "migration": a ZooKeeper-mode cluster
    # migrated to 3 voters by the schedule's own steps; only steps whose faults apply there
    # (``Fault.modes``) are drawn
    mode: str = "zookeeper"
    # The transactional workload runs (its two topics added: scenarios.plans.transactional); process
    # faults may then be aimed at its coordinators, and txn_past_timeout is drawn
    transactions: bool = False
    # Each schedule states Kafka's defaults where the harness's quick ones differ
    # (harness.config.kafka_default_overrides), so its file replays as it ran: `explore` does
    # unless --harness-defaults; off for the test command's generated schedules (its budget)
    kafka_defaults: bool = False
    # The release the schedules run on (explore's --kafka-version, resolved): steps legal only on
    # some releases are drawn on those (ClusterModel.refusal); None: unknown, refused as on the oldest
    kafka_version: str | None = None

    @property
    def controllers(self) -> int:
        return 3 if self.mode in ("kraft", "migration") else 1


def default_faults(mode: str = "zookeeper") -> tuple[str, ...]:
    """What explore draws unless told: every kind not opt-in; on KRaft the quorum's own; on a
    migrating cluster the quorum's and the migration's steps."""
    def drawn(kind: str) -> bool:
        modes = fault_kind(kind).modes
        if kind not in OPT_IN:
            return True
        if mode == "kraft":
            return modes == QUORUM_MODES
        return mode == "migration" and (modes == QUORUM_MODES or modes == MIGRATION_ONLY)
    return tuple(k for k in REPERTOIRE if drawn(k))


def step_modes(step: Step, topics: Sequence[TopicSpec]) -> frozenset[str]:
    """The cluster modes a step's fault applies to (its options can narrow its kind's)."""
    fault = make_fault(step.fault, Target((1,), "a draw"), step.options, topic_names={t.name: t.name for t in topics},
                       topic_partitions={t.name: t.partitions for t in topics})
    return fault.modes


def _assignment(rng: random.Random, brokers: Sequence[int], partitions: int, rf: int) -> dict[int, tuple[int, ...]]:
    """Kafka's ``AdminUtils.assignReplicasToBrokersRackUnaware`` from a random start index and
    replica shift: leaders round robin, followers shifted once per round over the brokers."""
    n = len(brokers)
    start, shift = rng.randrange(n), rng.randrange(n)
    out = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        followers = [brokers[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(rf - 1)]
        out[p] = (brokers[first], *followers)
    return out


def _topics(rng: random.Random, brokers: Sequence[int], config: GeneratorConfig) -> tuple[TopicSpec, ...]:
    specs = []
    for t in range(rng.randint(1, config.topics)):
        rf = rng.randint(1, min(3, len(brokers)))
        partitions = rng.randint(1, config.max_partitions)
        topic_config = {"unclean.leader.election.enable": "true"} if rng.random() < 0.2 else {}
        specs.append(TopicSpec(f"t{t}", _assignment(rng, brokers, partitions, rf), topic_config))
    if any(GENERATORS[k].unproduced_topic for k in config.faults):
        # An unproduced topic to delete, drawn from its own stream so the others stay as they were.
        own = random.Random(f"{rng.random()}:d")
        rf = own.randint(1, min(3, len(brokers)))
        partitions = own.randint(1, min(3, config.max_partitions))
        specs.append(TopicSpec("d", _assignment(own, brokers, partitions, rf), {}, workload=False))
    return tuple(specs)


def generate(seed: int, index: int, config: GeneratorConfig = GeneratorConfig()) -> Schedule:
    """Schedule ``index`` of ``seed``: legal by construction (:func:`problems` is empty)."""
    rng = random.Random(f"kafka-chaos-explore:{seed}:{index}")
    brokers = tuple(sorted(rng.sample(BROKER_ID_POOL, config.brokers)))
    topics = _topics(rng, brokers, config)
    if config.transactions:
        topics = with_transactional_topics(topics)
    schedule = Schedule(f"explore-{seed}-{index}", brokers, topics, (), mode=config.mode,
                        controllers=config.controllers)
    model = ClusterModel.of(schedule, config.kafka_version)
    kinds = [k for k in config.faults if config.weights.get(k, 0) > 0]
    draw = Draw(rng, config.delay_links)
    steps: list[Step] = []
    while len(steps) < config.steps:
        options = [(k, s) for k in kinds for s in GENERATORS[k].candidates(model, draw)
                   if config.mode in step_modes(s, topics) and model.refusal(s) is None]
        if not options:
            break
        weights = [config.weights[k] for k, _ in options]
        _, step = rng.choices(options, weights=weights)[0]
        model.apply(step)
        steps.append(step)
    doc = (f"Generated by `kafka-chaos explore --seed {seed}` (schedule {index}): {len(steps)} steps "
           f"over brokers {list(brokers)}.")
    sides = [GENERATORS[k] for k in config.faults]
    fake_clocks = Capability.CLOCK_CONTROL in requirements_of([s.fault for s in steps])
    kafka = kafka_default_overrides(config.mode, fake_clocks=fake_clocks) if config.kafka_defaults else {}
    overrides = {**kafka, **{k: v for side in sides for k, v in side.cluster_overrides.items()}}
    return Schedule(schedule.name, brokers, topics, tuple(steps), overrides, doc,
                    log_dirs=max((side.log_dirs for side in sides), default=1),
                    link_proxies=any(side.link_proxies for side in sides), mode=config.mode,
                    controllers=config.controllers,
                    zookeepers=max((side.zookeepers for side in sides if config.mode == "zookeeper"), default=1),
                    filesystem=next((side.filesystem for side in sides if side.filesystem != "plain"), "plain"))

"""Generated fault schedules, Jepsen style: pure, seeded, legal by construction.

:func:`generate` makes schedule ``index`` of a seed (``random.Random(f"{seed}:{index}")``: the
same schedules on every machine): a cluster of B brokers with ids drawn from 1..12 (so ids ≥ 5
and gaps are common), one or two topics with explicit assignments (replication factor 1–3, up
to ``max_partitions`` partitions), then K steps drawn by weight from the fault kinds the model
allows at that point.

The :class:`ClusterModel` knows what the harness will let a step do: who is alive, stopped,
paused or cut, which target an earlier step hit. It is also the legality check the shrinker
(:mod:`scenarios.plans.shrink`) runs on every candidate before spending a cluster on it:
:func:`problems` replays a schedule and names the first illegal step. Every step is checked
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_chaos.scenarios.plans.spec import Step, TopicSpec
from kafka_chaos.scenarios.plans.schedule import Schedule
from kafka_chaos.scenarios.model.targets import Brokers, Controller, EarlierTarget, NoTarget

# Default weights: faults that move leaders most often, admin operations less.
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "hard_kill": 4, "controller_kill": 2, "controlled_shutdown": 3, "pause": 1, "short_pause": 1,
    "restart": 2, "start": 4, "reassignment": 2, "preferred_election": 2, "unclean_election": 1,
    "network_partition": 2, "delete_topic": 1, "add_partitions": 1, "log_dir_failure": 1,
    "network_delay": 1,
}
# Kinds drawn only when named (``GeneratorConfig.faults``), so the default schedules of a seed stay
# what they were before they joined the repertoire.
OPT_IN = ("network_partition", "delete_topic", "add_partitions", "log_dir_failure", "network_delay")
BROKER_ID_POOL = range(1, 13)
NETWORK_CUTS = ("zookeeper", "everyone")
# A schedule that may fail a log directory gives every broker two (the broker keeps running on the
# other: scenarios.faults.log_dirs) and checkpoints high watermarks every second, so Kafka notices
# the failed one within about a second (as the catalogue's TWO_LOG_DIRS).
LOG_DIR_CLUSTER = {"replica.high.watermark.checkpoint.interval.ms": "1000"}
# Delays a generated step may add (links, one-way ms, ± jitter ms), each well below every
# threshold, so the oracle's answer is "no event" whatever else the schedule does: a ZooKeeper
# round trip of ~0.6 s against the 4 s readTimeout of a 6 s session (docs/zookeeper-faults.md R5;
# also slow enough for a delayed controller's ZooKeeper writes to settle within the step's
# bounded waits), a follower's lag of ~4 × 250 ms against replica.lag.time.max.ms
# (scenarios.faults.delay).  A schedule that may delay links runs with link proxies.
NETWORK_DELAYS: tuple[tuple[str, int, int], ...] = (
    ("zookeeper", 300, 100), ("peers", 200, 50), ("clients", 200, 50), ("everyone", 200, 50))
DELAY_LINKS = tuple(links for links, _, _ in NETWORK_DELAYS)


class IllegalStep(ValueError):
    """A step the harness would refuse, or that could not settle (one line why)."""


@dataclass
class ClusterModel:
    """What the harness knows without a cluster: the brokers' process states."""

    brokers: tuple[int, ...]
    topics: Mapping[str, TopicSpec]
    live: set[int] = field(default_factory=set)
    stopped: set[int] = field(default_factory=set)  # killed or shut down, not started again
    cut: dict[int, str] = field(default_factory=dict)  # broker -> network cut variant
    failed_dir: set[int] = field(default_factory=set)  # brokers with a failed log directory, until healed
    delayed: dict[int, str] = field(default_factory=dict)  # broker -> its delayed links, until healed
    # Steps that killed the controller, not started again: which broker only the cluster knows.
    unknown_down: list[int] = field(default_factory=list)
    targets: list[tuple[int, ...] | None] = field(default_factory=list)  # per step; None: unknown

    @classmethod
    def of(cls, schedule: Schedule) -> ClusterModel:
        return cls(schedule.brokers, {t.name: t for t in schedule.topics}, live=set(schedule.brokers))

    # what a step may target ------------------------------------------------------------------

    def can_move(self, topic: str, partition: int) -> bool:
        """Whether a reassignment of the partition is sure to complete: every current replica
        is free. With one down, the ISR may hold only down replicas (the controller keeps the
        last one: ``ZkReplicaStateMachine.doRemoveReplicasFromIsr``), so no leader serves the
        new replicas' fetches, they never join the ISR, and ``onPartitionReassignment`` waits."""
        return set(self.topics[topic].assignment[partition]) <= set(self.free)

    @property
    def free(self) -> list[int]:
        """Live brokers no fault holds (a cut broker, or one with a failed log directory, is live
        but held until healed)."""
        return sorted(self.live - set(self.cut) - self.failed_dir)

    @property
    def spare(self) -> int:
        """How many more brokers may go down or be cut (one must stay to serve and elect)."""
        return len(self.free) - len(self.unknown_down) - 1

    # replay -----------------------------------------------------------------------------------

    def _target(self, step: Step) -> tuple[int, ...] | None:
        t = step.target
        if isinstance(t, Brokers):
            return tuple(t.broker_ids)
        if isinstance(t, EarlierTarget):
            if not 0 <= t.step < len(self.targets):
                raise IllegalStep(f"'earlier: {t.step}' names no earlier step")
            return self.targets[t.step]
        if isinstance(t, NoTarget):
            return ()
        if isinstance(t, Controller):
            return None
        raise IllegalStep(f"target {t} cannot be checked without a cluster")

    def apply(self, step: Step) -> None:
        """Advance the model by ``step``; IllegalStep when the harness would refuse it."""
        target = self._target(step)
        rule = _RULES.get(step.fault)
        if rule is None:
            raise IllegalStep(f"{step.fault} is not in the generator's repertoire")
        if target is None and step.fault == "start":  # the controller an earlier step killed
            assert isinstance(step.target, EarlierTarget)
            if step.target.step not in self.unknown_down:
                raise IllegalStep(f"start of the broker step {step.target.step + 1} killed: not down")
            self.unknown_down.remove(step.target.step)
        else:
            rule(self, step, target)
        if step.fault == "controller_kill":
            self.unknown_down.append(len(self.targets))
        self.targets.append(target)

    def _need_free(self, kind: str, target: tuple[int, ...] | None, downs: bool) -> tuple[int, ...]:
        if target is None or not target:
            raise IllegalStep(f"{kind} needs named brokers")
        if self.unknown_down:
            # Any named broker may be the controller an earlier step killed (found by
            # `explore --seed 2026`: a controlled shutdown of the killed controller, refused).
            raise IllegalStep(f"{kind} on named brokers while a killed controller's id is unknown")
        busy = [b for b in target if b not in self.free]
        if busy:
            raise IllegalStep(f"{kind} on {busy}: not live, or held by another fault")
        if downs and len(target) > self.spare:
            raise IllegalStep(f"{kind} on {list(target)} would leave no live broker")
        return target


def _stop(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if step.fault == "controller_kill":
        if target is not None or model.cut:  # a cut broker may be the controller ZK names
            raise IllegalStep("controller_kill targets the controller, with no broker cut")
        if model.spare < 1:
            raise IllegalStep("controller_kill would leave no live broker")
        return
    hit = model._need_free(step.fault, target, downs=True)
    model.live -= set(hit)
    model.stopped |= set(hit)


def _bounce(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    # The broker comes back by itself; a pause or restart still takes it away for a while.
    model._need_free(step.fault, target, downs=step.fault != "short_pause")


def _start(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    if target is None or not target or any(b not in model.stopped for b in target):
        raise IllegalStep(f"start on {list(target or ())}: not stopped")
    model.stopped -= set(target)
    model.live |= set(target)


def _admin(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    topic = step.options.get("topic")
    if not isinstance(topic, str) or topic not in model.topics:
        raise IllegalStep(f"{step.fault} on unknown topic {topic!r}")
    if step.fault == "reassignment":
        for p, replicas in step.options.get("moves", ()):
            if p not in model.topics[topic].assignment:
                raise IllegalStep(f"reassignment of {topic}-{p}: no such partition")
            dead = [r for r in replicas if r not in model.live or r in model.cut]
            if dead or model.unknown_down:  # a stalled reassignment never settles
                raise IllegalStep(f"reassignment of {topic}-{p} onto brokers that may be down")
            if not model.can_move(topic, p):
                raise IllegalStep(f"reassignment of {topic}-{p}: a current replica is down or held, its leader "
                                  "may be gone")
            spec = model.topics[topic]  # the settled reassignment leaves the new replicas
            model.topics = {**model.topics, topic: TopicSpec(spec.name, {**spec.assignment, p: tuple(replicas)},
                                                             spec.config, spec.workload)}
    for p in step.options.get("partitions", ()) or ():
        if p not in model.topics[topic].assignment:
            raise IllegalStep(f"{step.fault} of {topic}-{p}: no such partition")


def _topic_admin(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Deleting an unproduced topic (its replicas may be down: the deletion waits for them) and
    adding partitions (through the AdminClient only onto registered brokers; by rewriting the topic
    znode onto any broker of the cluster, down ones included)."""
    topic = step.options.get("topic")
    if not isinstance(topic, str) or topic not in model.topics:
        raise IllegalStep(f"{step.fault} on unknown topic {topic!r}")
    spec = model.topics[topic]
    if step.fault == "delete_topic":
        if spec.workload:
            raise IllegalStep(f"delete_topic of {topic}: it carries a workload")
        model.topics = {name: t for name, t in model.topics.items() if name != topic}
        return
    additions = [(int(p), tuple(int(r) for r in rs)) for p, rs in step.options.get("add", ())]
    rf = len(next(iter(spec.assignment.values())))
    assignment = dict(spec.assignment)
    for p, replicas in additions:
        if p != len(assignment) or len(replicas) != rf or len(set(replicas)) != rf:
            raise IllegalStep(f"add_partitions {topic}-{p}: not the next partition, or not {rf} distinct replicas")
        registered = model.free if not model.unknown_down else []
        if step.options.get("via", "admin") == "admin" and any(r not in registered for r in replicas):
            raise IllegalStep(f"add_partitions {topic}-{p} by AdminClient onto brokers that may not be registered")
        if any(r not in model.brokers for r in replicas):
            raise IllegalStep(f"add_partitions {topic}-{p} onto brokers outside the cluster")
        assignment[p] = replicas
    model.topics = {**model.topics, topic: TopicSpec(spec.name, assignment, spec.config, spec.workload)}


def _network(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    variant = step.options.get("variant")
    if variant == "heal":
        if target is None or not target or any(model.cut.get(b) != step.options.get("cut") for b in target):
            raise IllegalStep(f"heal of {target}: not cut that way")
        for b in target:
            del model.cut[b]
        return
    if model.delayed:  # one heal_network undoes both: the model could not say what is left
        raise IllegalStep("a cut while links are delayed")
    hit = model._need_free(step.fault, target, downs=True)
    for b in hit:
        model.cut[b] = str(variant)


def _log_dir(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Fail log directory 0 of one free broker (it keeps running on directory 1, its replicas
    there offline), or heal: restart it with the directory repaired."""
    if step.options.get("variant") == "heal":
        if target is None or len(target) != 1 or target[0] not in model.failed_dir:
            raise IllegalStep(f"heal of {target}: no failed log directory there")
        model.failed_dir.discard(target[0])
        return
    if target is None or len(target) != 1:
        raise IllegalStep("log_dir_failure acts on one named broker")
    # Held like a cut broker; its other directory still serves, so it costs no spare broker.
    hit = model._need_free(step.fault, target, downs=False)
    model.failed_dir |= set(hit)


def _delay(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    """Delay one free broker's links below every threshold (it is not held: later steps may
    kill, pause or restart it), or heal them.  Never with a cut: ``heal_network`` heals both."""
    if step.options.get("variant") == "heal":
        if target is None or len(target) != 1 or target[0] not in model.delayed:
            raise IllegalStep(f"heal of {target}: no delayed links there")
        del model.delayed[target[0]]
        return
    if target is None or len(target) != 1:
        raise IllegalStep("network_delay acts on one named broker")
    if model.delayed or model.cut:
        raise IllegalStep("network_delay while links are delayed or cut")
    if step.options.get("expect", "nothing") != "nothing":
        raise IllegalStep("a generated network_delay stays below every threshold (expect: nothing)")
    hit = model._need_free(step.fault, target, downs=False)
    model.delayed[hit[0]] = str(step.options.get("to", "zookeeper"))


_RULES: Mapping[str, Callable[[ClusterModel, Step, tuple[int, ...] | None], None]] = {
    "hard_kill": _stop, "controller_kill": _stop, "controlled_shutdown": _stop, "pause": _bounce,
    "short_pause": _bounce, "restart": _bounce, "start": _start, "reassignment": _admin,
    "preferred_election": _admin, "unclean_election": _admin, "network_partition": _network,
    "delete_topic": _topic_admin, "add_partitions": _topic_admin, "log_dir_failure": _log_dir,
    "network_delay": _delay,
}
REPERTOIRE = tuple(_RULES)


def problems(schedule: Schedule) -> list[str]:
    """Empty when every step is legal in order; else the first illegal step and why."""
    model = ClusterModel.of(schedule)
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
    if "delete_topic" in config.faults:
        # An unproduced topic to delete, drawn from its own stream so the others stay as they were.
        own = random.Random(f"{rng.random()}:d")
        rf = own.randint(1, min(3, len(brokers)))
        partitions = own.randint(1, min(3, config.max_partitions))
        specs.append(TopicSpec("d", _assignment(own, brokers, partitions, rf), {}, workload=False))
    return tuple(specs)


def _candidates(model: ClusterModel, kind: str, rng: random.Random) -> list[Step]:
    """Legal steps of ``kind`` now (a few, drawn with ``rng``); empty when there is none."""
    # While a killed controller is down, any named broker may be it: only steps naming none.
    free, spare = ([], 0) if model.unknown_down else (model.free, model.spare)
    topics = sorted(model.topics)
    if kind in ("hard_kill", "controlled_shutdown") and free and spare >= 1:
        most = min(spare, 3 if kind == "hard_kill" else 1, len(free))
        return [Step(kind, Brokers(tuple(sorted(rng.sample(free, rng.randint(1, most))))))]
    if kind == "controller_kill" and spare >= 1 and not model.cut:
        return [Step(kind, Controller())]
    if kind in ("pause", "short_pause", "restart") and free and (spare >= 1 or kind == "short_pause"):
        hard = {"hard": rng.random() < 0.5} if kind == "restart" else {}
        return [Step(kind, Brokers((rng.choice(free),)), hard)]
    if kind == "start":
        steps = [Step(kind, EarlierTarget(i)) for i in model.unknown_down]
        if model.stopped:
            chosen = rng.sample(sorted(model.stopped), rng.randint(1, len(model.stopped)))
            steps.append(Step(kind, Brokers(tuple(sorted(chosen)))))
        return steps
    movable = [t for t in topics if any(model.can_move(t, p) for p in model.topics[t].assignment)]
    if kind == "reassignment" and not model.unknown_down and len(free) >= 1 and movable:
        topic = rng.choice(movable)
        p = rng.choice([p for p in sorted(model.topics[topic].assignment) if model.can_move(topic, p)])
        size = rng.randint(1, min(3, len(free)))
        replicas = tuple(rng.sample(free, size))
        return [Step(kind, NoTarget(f"{topic}-{p} -> {list(replicas)}"), {"topic": topic, "moves": [[p, list(replicas)]]})]
    if kind == "preferred_election":
        topic = rng.choice(topics)
        return [Step(kind, NoTarget(f"{topic} (preferred)"), {"topic": topic, "via": rng.choice(("admin", "znode"))})]
    if kind == "unclean_election":
        topic = rng.choice(topics)
        via = rng.choice(("admin", "config"))
        options: dict[str, Any] = {"topic": topic, "via": via}
        if via == "admin":
            options["partitions"] = sorted(rng.sample(sorted(model.topics[topic].assignment),
                                                      rng.randint(1, len(model.topics[topic].assignment))))
        return [Step(kind, NoTarget(f"{topic} (unclean, {via})"), options)]
    if kind == "delete_topic":
        unproduced = [t for t in topics if not model.topics[t].workload]
        return [Step(kind, NoTarget(t), {"topic": t}) for t in unproduced[:1]]
    if kind == "add_partitions":
        topic = rng.choice(topics)
        spec = model.topics[topic]
        rf, n = len(next(iter(spec.assignment.values()))), len(spec.assignment)
        admin_ok = not model.unknown_down and len(model.free) >= rf
        via = rng.choice(("admin", "znode")) if admin_ok else "znode"
        pool = model.free if via == "admin" else list(model.brokers)
        chosen = rng.sample(pool, rf)
        return [Step(kind, NoTarget(f"{topic}-{n} -> {chosen}"), {"topic": topic, "add": [[n, chosen]], "via": via})]
    if kind == "log_dir_failure":
        if model.failed_dir:
            return [Step(kind, Brokers((rng.choice(sorted(model.failed_dir)),)), {"variant": "heal"})]
        if free and not model.unknown_down:
            return [Step(kind, Brokers((rng.choice(free),)), {"dir": 0})]
        return []
    if kind == "network_partition":
        if model.cut:
            b, variant = rng.choice(sorted(model.cut.items()))
            return [Step(kind, Brokers((b,)), {"variant": "heal", "cut": variant})]
        if free and spare >= 1 and not model.unknown_down and not model.delayed:
            return [Step(kind, Brokers((rng.choice(free),)), {"variant": rng.choice(NETWORK_CUTS)})]
    return []


def _delay_candidates(model: ClusterModel, rng: random.Random, config: GeneratorConfig) -> list[Step]:
    kind = "network_delay"
    if model.delayed:
        return [Step(kind, Brokers((rng.choice(sorted(model.delayed)),)), {"variant": "heal"})]
    delays = [d for d in NETWORK_DELAYS if d[0] in config.delay_links]
    if not delays or model.cut or model.unknown_down or not model.free:
        return []
    links, delay_ms, jitter_ms = rng.choice(delays)
    return [Step(kind, Brokers((rng.choice(model.free),)),
                 {"to": links, "delay_ms": delay_ms, "jitter_ms": jitter_ms, "expect": "nothing"})]


def generate(seed: int, index: int, config: GeneratorConfig = GeneratorConfig()) -> Schedule:
    """Schedule ``index`` of ``seed``: legal by construction (:func:`problems` is empty)."""
    rng = random.Random(f"kafka-chaos-explore:{seed}:{index}")
    brokers = tuple(sorted(rng.sample(BROKER_ID_POOL, config.brokers)))
    topics = _topics(rng, brokers, config)
    schedule = Schedule(f"explore-{seed}-{index}", brokers, topics, ())
    model = ClusterModel.of(schedule)
    kinds = [k for k in config.faults if config.weights.get(k, 0) > 0]
    steps: list[Step] = []
    while len(steps) < config.steps:
        options = [(k, s) for k in kinds
                   for s in (_delay_candidates(model, rng, config) if k == "network_delay" else _candidates(model, k, rng))]
        if not options:
            break
        weights = [config.weights[k] for k, _ in options]
        _, step = rng.choices(options, weights=weights)[0]
        model.apply(step)
        steps.append(step)
    doc = (f"Generated by `kafka-chaos explore --seed {seed}` (schedule {index}): {len(steps)} steps "
           f"over brokers {list(brokers)}.")
    log_dirs = "log_dir_failure" in config.faults
    return Schedule(schedule.name, brokers, topics, tuple(steps), dict(LOG_DIR_CLUSTER) if log_dirs else {}, doc,
                    log_dirs=2 if log_dirs else 1, link_proxies="network_delay" in config.faults)

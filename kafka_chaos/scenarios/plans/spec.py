"""The types a plan is made of: what a cluster must have (``ClusterNeeds``) and a scenario — topics
and steps (``scenarios.model.steps``) with the suites it belongs to. The catalogue, schedule files,
the generator and the shrinker build them; the runner executes them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.config import kafka_default_overrides
from kafka_chaos.oracle.release import Release
from kafka_chaos.scenarios.faults import Fault, fault_kinds, make_fault, requirements_of
from kafka_chaos.scenarios.model.steps import Step, TopicSpec
from kafka_chaos.scenarios.model.targets import Target

# How many transactional producers the librdkafka workload runs by default (a schedule's
# ``workload.producers``, roles p0, p1, ...; scenarios.plans.transactional.producers_problem).
DEFAULT_TXN_PRODUCERS = 2


class Verdict(Protocol):
    """A check's result as far as a known bug asks (scenarios.checks.functions.CheckResult)."""

    @property
    def check(self) -> str: ...

    @property
    def passed(self) -> bool | None: ...


@dataclass(frozen=True)
class ClusterNeeds:
    """Cluster settings a scenario needs; scenarios with equal needs share one cluster."""

    brokers: int = 3
    overrides: tuple[tuple[str, str], ...] = ()  # sorted (property, value) pairs: hashable
    broker_ids: tuple[int, ...] = ()  # explicit ids (schedules); empty: 1..brokers
    zookeepers: int = 1  # ZooKeeper ensemble size (1, 3 or 5); `run --zookeepers N` raises it
    log_dirs: int = 1  # log.dirs per broker (harness.config.log_dir_paths); 2: one can fail, the broker runs on
    link_proxies: bool = False  # brokers reach ZooKeeper through link proxies (harness.link_proxy): delayable
    kafka_version: str | None = None  # the Kafka release it must run on (None: the run's)
    # "kraft": KRaft controllers instead of ZooKeeper (harness.config.KRAFT_MODE); "migration": a
    # ZooKeeper-mode cluster its steps migrate to KRaft (harness.config.MIGRATION_MODE)
    mode: str = "zookeeper"
    controllers: int = 1  # KRaft controllers (1 or 3), provisioned by a step in migration mode
    # A JAAS configuration's text every broker JVM gets (harness.config.ClusterConfig.broker_jaas)
    broker_jaas: str | None = None
    # "lazyfs": data directories on the crash-consistency layer; set by Scenario when its faults
    # need it (POWER_FAILURE, DISK_FAULTS)
    filesystem: str = "plain"

    # Nodes under libfaketime: set by Scenario from its faults' requirements (CLOCK_CONTROL)
    fake_clocks: bool = False
    # A KRaft cluster's quorum: "static" or "dynamic" (KIP-853, 3.9+: harness.config.DYNAMIC_QUORUM)
    quorum: str = "static"
    # KRaft: feature levels its storage format finalizes, sorted (name, level) pairs
    # (harness.config.ClusterConfig.features)
    features: tuple[tuple[str, int], ...] = ()

    @property
    def overrides_dict(self) -> dict[str, str]:
        return dict(self.overrides)

    @property
    def ids(self) -> tuple[int, ...]:
        return self.broker_ids or tuple(range(1, self.brokers + 1))

    def describe(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.overrides)
        named = f" {list(self.broker_ids)}" if self.broker_ids else ""
        ensemble = f", {self.zookeepers} ZooKeeper servers" if self.zookeepers > 1 else ""
        dirs = f", {self.log_dirs} log dirs each" if self.log_dirs > 1 else ""
        dirs += ", ZooKeeper links proxied" if self.link_proxies else ""
        dirs += ", brokers with a JAAS file" if self.broker_jaas is not None else ""
        dirs += f", data on {self.filesystem}" if self.filesystem != "plain" else ""
        dirs += ", fake clocks" if self.fake_clocks else ""
        release = f", Kafka {self.kafka_version}" if self.kafka_version else ""
        release += f", KRaft with {self.controllers} controller{'s' if self.controllers > 1 else ''}" if self.mode == "kraft" else ""
        release += ", dynamic quorum" if self.quorum == "dynamic" else ""
        release += "".join(f", {name}={level}" for name, level in self.features)
        release += (f", migrating to {self.controllers} KRaft controller{'s' if self.controllers > 1 else ''}"
                     if self.mode == "migration" else "")
        return f"{self.brokers} brokers{named}{ensemble}{dirs}{release}" + (f" ({extra})" if extra else "")


@dataclass(frozen=True)
class KnownBug:
    """A Kafka bug a schedule reproduces (the known-bug corpus, docs/recall.md): the last release
    that has it, the first that has the fix, and the check that must fail on the former."""

    jira: str
    affected: str
    fixed: str
    caught_by: str
    # An intermittent race (KAFKA-15653: a buffer two request threads share): the run on the
    # affected release is repeated until caught, at most this many times in all; 1 for a
    # deterministic trigger. docs/recall.md gives each entry's rate.
    attempts: int = 1

    def to_json(self) -> dict[str, str | int]:
        return {"jira": self.jira, "affected": self.affected, "fixed": self.fixed, "caught_by": self.caught_by,
                **({"attempts": self.attempts} if self.attempts != 1 else {})}

    def caught_in(self, results: Iterable[Verdict]) -> bool:
        """Whether ``caught_by`` is among the checks that failed."""
        return any(r.check == self.caught_by and r.passed is False for r in results)

    def present_on(self, release: str) -> bool:
        """Whether ``release`` has the bug, as far as this entry says: a release of the affected
        one's line up to it (3.6.0-3.6.2 for an affected 3.6.2)."""
        try:
            have, last = Release.parse(release), Release.parse(self.affected)
        except ValueError:
            return False
        return (have.major, have.minor) == (last.major, last.minor) and have <= last


@dataclass(frozen=True)
class Scenario:
    name: str
    doc: str
    topics: tuple[TopicSpec, ...]
    steps: tuple[Step, ...]
    suites: frozenset[str]
    needs: ClusterNeeds = ClusterNeeds()
    # Run on a release with this bug: it passes only by failing ``caught_by`` (the corpus suite).
    expects: KnownBug | None = None
    # Kafka bugs the scenario meets on the releases that have them (KAFKA-15489 for
    # quorum_leader_cut on 3.6.x): run there, it expects the bug (:func:`expecting_known_bug`).
    known_bugs: tuple[KnownBug, ...] = ()
    # The transactional workload's clients (scenarios.plans.transactional.TXN_CLIENTS): confluent-kafka's
    # ("librdkafka") or Kafka's own Java test clients as processes ("java").
    txn_client: str = "librdkafka"
    # The codec its transactional producers compress their batches with (scenarios.model.codecs.COMPRESSIONS;
    # a schedule's "workload": {"compression": ...}): "none", or what KAFKA-15653 needs
    txn_compression: str = "none"
    # How many transactional producers the librdkafka workload runs ("workload": {"producers": N})
    txn_producers: int = DEFAULT_TXN_PRODUCERS

    def __post_init__(self) -> None:
        # Clock faults need every node started under libfaketime; other scenarios' clusters stay
        # untouched (and are not shared with these: the needs differ).
        known = [step.fault for step in self.steps if step.fault in fault_kinds()]  # validate_steps names the rest
        if Capability.CLOCK_CONTROL in requirements_of(known) and not self.needs.fake_clocks:
            object.__setattr__(self, "needs", replace(self.needs, fake_clocks=True))
        # Power failures and disk faults need the data directories on the crash-consistency layer.
        if requirements_of(known) & {Capability.POWER_FAILURE, Capability.DISK_FAULTS} and self.needs.filesystem == "plain":
            object.__setattr__(self, "needs", replace(self.needs, filesystem="lazyfs"))

    @property
    def requirements(self) -> frozenset[Capability]:
        """The cluster capabilities its faults need (the union over its steps); a delay of peer
        or client links also needs what a cut needs on the local launcher, root with iptables
        (its links are redirected through the link proxy by nat rules, docs/local-network.md)."""
        needs = requirements_of([step.fault for step in self.steps])
        if any(step.fault == "network_delay" and step.options.get("to", "zookeeper") != "zookeeper"
               for step in self.steps):
            needs |= {Capability.NETWORK_PARTITION}
        return needs

    @property
    def modes(self) -> frozenset[str]:
        """The cluster modes every step's fault applies to (``Fault.modes``)."""
        modes = frozenset({"zookeeper", "kraft", "migration"})
        for step in self.steps:
            modes &= _fault_of(self, step).modes
        return modes

    def topic(self, logical: str) -> TopicSpec:
        for t in self.topics:
            if t.name == logical:
                return t
        raise KeyError(logical)


def with_kafka_defaults(s: Scenario, release: str | None = None) -> Scenario:
    """``s`` with Kafka's own defaults stated where the harness's quick ones differ and ``s``
    states nothing (``harness.config.kafka_default_overrides`` of its mode and release: the one
    it needs, else the run's ``release``, None when unknown): how the catalogue runs
    (``kafka-chaos run``, ``explore``). A scenario that needs another value states it in its
    needs, and keeps it."""
    stated = s.needs.overrides_dict
    kafka = kafka_default_overrides(s.needs.mode, fake_clocks=s.needs.fake_clocks,
                                    release=s.needs.kafka_version or release)
    missing = {k: v for k, v in kafka.items() if k not in stated}
    if not missing:
        return s
    return replace(s, needs=replace(s.needs, overrides=tuple(sorted({**stated, **missing}.items()))))


def _fault_of(s: Scenario, step: Step) -> Fault:
    """The step's fault as its options build it (on a placeholder target)."""
    return make_fault(step.fault, Target((1,), "validation"), step.options,
                      topic_names={t.name: t.name for t in s.topics},
                      topic_partitions={t.name: t.partitions for t in s.topics})


def validate_steps(s: Scenario) -> None:
    """Every step names a registered fault kind whose options build a fault, and the scenario's
    cluster mode is one its faults apply to."""
    for step in s.steps:
        try:
            _fault_of(s, step)
        except UsageError as exc:
            raise TypeError(f"scenario {s.name}: {exc}") from exc
    if s.needs.mode not in s.modes:
        raise TypeError(f"scenario {s.name}: {mode_problem(s, s.needs.mode)}")


def mode_problem(s: Scenario, mode: str) -> str:
    """Which of the scenario's faults do not apply to ``mode`` clusters, in one line."""
    kinds = sorted({step.fault for step in s.steps if mode not in _fault_of(s, step).modes})
    return f"{', '.join(kinds)} {'is' if len(kinds) == 1 else 'are'} not a {mode}-mode fault"


def expecting_known_bug(s: Scenario, release: str) -> Scenario:
    """``s`` run on ``release``: expecting the first of its ``known_bugs`` that release has (a run
    then passes by failing that check, CAUGHT, and fails when it does not: MISSED), else as it is."""
    if s.expects is not None:
        return s
    bug = next((b for b in s.known_bugs if b.present_on(release)), None)
    return s if bug is None else replace(s, expects=bug)

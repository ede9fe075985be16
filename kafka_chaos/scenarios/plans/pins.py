"""What each option of ``run`` and ``explore``, a suite, a named scenario or a schedule file fixes
about the clusters it runs on -- its pins -- and the one rule, :func:`refuse_contradictions`, that
refuses a command line whose pins contradict, in one line naming both and why, before anything
starts (``kafka-chaos run --suite kraft --mode zookeeper``: the kraft suite is KRaft's).

An option (``--mode``, ``--controllers``, ``--zookeepers``, ``--kafka-version``, ``--brokers``,
``--backend``, explore's ``--faults`` and ``--weights``) holds for every cluster of the command; a
suite, a scenario or a schedule file for its own clusters only. So two of those never contradict
each other (schedules written for different releases run side by side), and a contradiction is
a pair with an option in it that no cluster can satisfy (:data:`CLASHES`).

What is no contradiction is kept: ``--mode kraft`` converts the scenarios of an unpinned suite
(``Suite.mode`` None) that mean the same on KRaft and leaves the others out, one line why, and
converts a ZooKeeper-mode scenario or schedule (the default mode) where its faults allow;
``--brokers``, ``--zookeepers`` and ``--controllers`` ask for at least that many, a scenario
needing more keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.backends import LAUNCHER_MODES, resolve_backend, undeclared_capabilities
from kafka_chaos.harness.cluster import Capability
from kafka_chaos.harness.config import KRAFT_MODE, MIGRATION_MODE, MODES, ZOOKEEPER_MODE, kraft_releases_text, modes_running
from kafka_chaos.harness.distribution import check_version
from kafka_chaos.scenarios.faults import fault_kind
from kafka_chaos.scenarios.plans import catalogue
from kafka_chaos.scenarios.plans.spec import Scenario

ALL_MODES = frozenset(MODES)
WITH_ZOOKEEPER = frozenset({ZOOKEEPER_MODE, MIGRATION_MODE})  # a migrating cluster starts as ZooKeeper mode
MODE_NAMES = {ZOOKEEPER_MODE: "ZooKeeper-mode", KRAFT_MODE: "KRaft", MIGRATION_MODE: "migrating"}


# --- pins -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pin:
    """One thing a source fixes. ``source`` as the command line says it (``--suite kraft``),
    ``why`` what it fixes for the refusal line ("" when the source says it all), ``option``:
    it holds for every cluster of the command."""

    source: str
    why: str
    option: bool


@dataclass(frozen=True)
class Modes(Pin):
    """The cluster modes it allows."""

    modes: frozenset[str]


@dataclass(frozen=True)
class Releases(Pin):
    """The Kafka releases it runs on: an option's one, or a suite's scenarios' each its own."""

    releases: frozenset[str]


@dataclass(frozen=True)
class AtLeastBrokers(Pin):
    """``--brokers N``: clusters of at least N brokers."""

    brokers: int


@dataclass(frozen=True)
class NamedBrokers(Pin):
    """A schedule naming its broker ids: its cluster is those, never grown."""

    ids: tuple[int, ...]


@dataclass(frozen=True)
class Launcher(Pin):
    """``--backend``: the launcher (local or containers) every cluster starts on."""

    chosen: str


@dataclass(frozen=True)
class Needs(Pin):
    """A suite pinned to ``mode`` whose every scenario needs ``capabilities``."""

    mode: str
    capabilities: frozenset[Capability]


@dataclass(frozen=True)
class Draws(Pin):
    """Explore's ``--faults``: the fault kinds its schedules draw from."""

    kinds: frozenset[str]


@dataclass(frozen=True)
class Weighs(Pin):
    """Explore's ``--weights KIND=W`` with W > 0: KIND is meant to be drawn."""

    kind: str


@dataclass(frozen=True)
class Replays(Pin):
    """``--rerun FILE`` (its iterations with its seed), or an option choosing them instead."""


# --- the rule -----------------------------------------------------------------------------------

def _whys(a: Pin, b: Pin) -> str:
    return "; ".join(why for why in (a.why, b.why) if why)


def _modes_clash(a: Pin, b: Pin) -> str | None:
    if isinstance(a, Modes) and isinstance(b, Modes) and not a.modes & b.modes:
        return _whys(a, b)
    return None


def _releases_clash(a: Pin, b: Pin) -> str | None:
    """An option's release against a scenario written for another (it would keep its own)."""
    if isinstance(a, Releases) and isinstance(b, Releases) and a.option and len(a.releases | b.releases) > 1:
        return _whys(a, b)
    return None


def _brokers_clash(a: Pin, b: Pin) -> str | None:
    if isinstance(a, AtLeastBrokers) and isinstance(b, NamedBrokers) and a.brokers > len(b.ids):
        return b.why
    return None


def _launcher_clash(a: Pin, b: Pin) -> str | None:
    """A pinned suite that needs what the launcher of its mode never has (not what this machine
    lacks: the suites leave those scenarios out and say why)."""
    if isinstance(a, Launcher) and isinstance(b, Needs):
        lacking = undeclared_capabilities(a.chosen, b.mode)
        reasons = [why for capability, why in lacking.items() if capability in b.capabilities]
        return "; ".join(dict.fromkeys(reasons)) or None
    return None


def _draws_clash(a: Pin, b: Pin) -> str | None:
    if isinstance(a, Draws) and isinstance(b, Weighs) and b.kind not in a.kinds:
        return f"{b.kind} is not among the faults it draws" + (f" ({a.why})" if a.why else "")
    return None


def _replays_clash(a: Pin, b: Pin) -> str | None:
    """The rerun file chooses the iterations and their seed; options choosing them too contradict
    it, not each other (``--seed 7 --iterations 3`` is three iterations of seed 7)."""
    if isinstance(a, Replays) and isinstance(b, Replays) and not (a.option and b.option):
        return _whys(a, b)
    return None


# Each: why pin a and pin b (in that order) cannot both hold, or None.
CLASHES: tuple[Callable[[Pin, Pin], str | None], ...] = (
    _modes_clash, _releases_clash, _brokers_clash, _launcher_clash, _draws_clash, _replays_clash)


def contradiction(pins: Sequence[Pin]) -> str | None:
    """The first two pins (in order) that contradict, as the refusal line; None when none do."""
    for i, first in enumerate(pins):
        for second in pins[i + 1:]:
            if not (first.option or second.option) or first.source == second.source:
                continue  # each item holds for its own clusters; one source's pins are one choice
            for clash in CLASHES:
                why = clash(first, second) or clash(second, first)
                if why is not None:
                    return f"{first.source} contradicts {second.source}: {why}"
    return None


def refuse_contradictions(pins: Sequence[Pin]) -> None:
    """UsageError (one line, exit 2) when two pins contradict: the one check ``run`` and
    ``explore`` make before anything starts."""
    line = contradiction(pins)
    if line is not None:
        raise UsageError(line)


# --- what each source pins ------------------------------------------------------------------------

def _named(modes: frozenset[str]) -> str:
    return " and ".join(MODE_NAMES[m] for m in MODES if m in modes)


def _release_modes(source: str, release: str, written: str, option: bool) -> list[Pin]:
    """A release outside the KRaft model's lines runs in ZooKeeper mode only (``written``: what
    the source is, said first)."""
    modes = modes_running(release)
    if modes == ALL_MODES:
        return []
    if modes == frozenset({KRAFT_MODE}):  # 4.x
        return [Modes(source, f"{written}Kafka {release} runs KRaft clusters only (4.0 removed ZooKeeper mode and "
                              f"with it the migration, KIP-833)", option, modes)]
    return [Modes(source, f"{written}KRaft and migrating clusters run Kafka {kraft_releases_text()} (the releases the "
                          f"KRaft model covers)", option, modes)]


def suite_pins(name: str) -> list[Pin]:
    """A suite's pins: its mode (``catalogue.SUITES``), what every one of its scenarios needs of
    the launcher of that mode, and the releases its scenarios are written for."""
    suite, scenarios, source = catalogue.SUITES[name], catalogue.suite(name), f"--suite {name}"
    pins: list[Pin] = []
    if suite.mode is not None:
        shared = frozenset.intersection(*(s.requirements for s in scenarios)) if scenarios else frozenset()
        pins += [Modes(source, suite.pinned, False, frozenset({suite.mode})),
                 Needs(source, suite.pinned, False, suite.mode, shared)]
    if suite.own_modes:  # no mode is every scenario's: any mode an option asks for contradicts
        pins.append(Modes(source, suite.pinned, False, frozenset()))
    releases = sorted({s.needs.kafka_version for s in scenarios if s.needs.kafka_version is not None})
    if releases:
        pins.append(Releases(source, f"each scenario of the {name} suite runs on its own Kafka release "
                                     f"({', '.join(releases)})", False, frozenset(releases)))
    return pins


def scenario_pins(source: str, s: Scenario) -> list[Pin]:
    """A named scenario's or schedule file's pins: a mode other than ZooKeeper mode (the default,
    which ``--mode`` converts where its faults allow), a ZooKeeper ensemble, its release, its
    named broker ids."""
    needs, pins = s.needs, list[Pin]()
    if needs.mode != ZOOKEEPER_MODE:
        pins.append(Modes(source, f"{s.name} is written for {MODE_NAMES[needs.mode]} clusters", False,
                          frozenset({needs.mode})))
    if needs.zookeepers > 1:
        pins.append(Modes(source, f"{s.name} runs on a {needs.zookeepers}-server ZooKeeper ensemble", False,
                          WITH_ZOOKEEPER))
    if needs.broker_jaas is not None:
        pins.append(Modes(source, f"{s.name} gives its brokers a JAAS file for their ZooKeeper client", False,
                          WITH_ZOOKEEPER))
    if needs.kafka_version is not None:
        pins.append(Releases(source, f"{s.name} is written for Kafka {needs.kafka_version}", False,
                             frozenset({needs.kafka_version})))
        pins += _release_modes(source, needs.kafka_version, f"{s.name} is written for Kafka {needs.kafka_version}; ",
                               False)
    if needs.broker_ids:
        pins.append(NamedBrokers(source, f"{s.name} names its brokers {list(needs.broker_ids)}, and a cluster of "
                                         f"named brokers is not grown", False, needs.broker_ids))
    return pins


def rerun_pins(path: Path, scenarios: Sequence[Scenario]) -> list[Pin]:
    """``--rerun FILE``: the iterations and seed the file names, and each listed scenario's pins."""
    source = f"--rerun {path}"
    return [Replays(source, "the rerun file names the iterations to run and their seed", False),
            *(pin for s in {s.name: s for s in scenarios}.values() for pin in scenario_pins(source, s))]


def option_pins(*, mode: str | None = None, mode_source: str | None = None, controllers: int | None = None,
                zookeepers: int | None = None, kafka_version: str | None = None, brokers: int | None = None,
                backend: str | None = None, seed: int | None = None, iterations: int = 1,
                shard: tuple[int, int] | None = None) -> list[Pin]:
    """The options' pins, in the order the refusal line names them. ``mode_source``: how to name
    a mode the user did not give (explore's default)."""
    pins: list[Pin] = []
    if mode is not None:
        pins.append(Modes(mode_source or f"--mode {mode}", "", True, frozenset({mode})))
    if controllers is not None:
        pins.append(Modes(f"--controllers {controllers}", "KRaft controllers are a KRaft cluster's", True,
                          frozenset({KRAFT_MODE})))
    if zookeepers is not None and zookeepers > 1:
        pins.append(Modes(f"--zookeepers {zookeepers}", "only ZooKeeper-mode and migrating clusters have a ZooKeeper "
                                                        "ensemble", True, WITH_ZOOKEEPER))
    if kafka_version is not None:
        release = check_version(kafka_version)
        source = f"--kafka-version {release}"
        pins += [Releases(source, "", True, frozenset({release})), *_release_modes(source, release, "", True)]
    if brokers is not None:
        pins.append(AtLeastBrokers(f"--brokers {brokers}", "", True, brokers))
    if backend is not None:
        pins += _backend_pins(backend)
    for given, name in ((seed is not None, f"--seed {seed}"), (iterations != 1, f"--iterations {iterations}"),
                        (shard is not None, f"--shard {shard[0]}/{shard[1]}" if shard else "")):
        if given:
            pins.append(Replays(name, "", True))
    return pins


def _backend_pins(backend: str) -> list[Pin]:
    chosen = resolve_backend(backend)  # auto: asks the Docker engine, as the run would
    source = f"--backend {backend}" + (f" ({chosen} here)" if backend != chosen else "")
    modes = LAUNCHER_MODES[chosen]
    pins: list[Pin] = [Launcher(source, "", True, chosen)]
    if modes != ALL_MODES:
        pins.append(Modes(source, f"the {chosen} launcher runs {_named(modes)} clusters only", True, modes))
    return pins


def fault_pins(kinds: Sequence[str], *, named: str | None, left_out: str = "") -> list[Pin]:
    """Explore's ``--faults`` (``named``: its value as given; None: the default, which leaves
    out what ``left_out`` says): each named kind's cluster modes, and the kinds drawn."""
    source = f"--faults {named}" if named is not None else "the default --faults"
    pins: list[Pin] = [Modes(source, f"{kind} applies to {_named(fault_kind(kind).modes)} clusters only", True,
                             fault_kind(kind).modes)
                       for kind in kinds if named is not None and fault_kind(kind).modes != ALL_MODES]
    return [*pins, Draws(source, "" if named is not None else left_out, True, frozenset(kinds))]


def weight_pins(weights: Mapping[str, tuple[str, float]]) -> list[Pin]:
    """Explore's ``--weights`` (kind -> (the item as given, weight)): a kind weighted above 0
    is meant to be drawn, so it must apply to the cluster mode and be among ``--faults``."""
    pins: list[Pin] = []
    for kind, (item, weight) in weights.items():
        if weight > 0:
            modes = fault_kind(kind).modes
            source = f"--weights {item}"
            if modes != ALL_MODES:
                pins.append(Modes(source, f"{kind} applies to {_named(modes)} clusters only", True, modes))
            pins.append(Weighs(source, "", True, kind))
    return pins

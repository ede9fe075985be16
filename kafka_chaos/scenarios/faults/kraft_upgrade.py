"""The journey's last leg: a migrated cluster (every node a KRaft node, the migration finalised)
upgraded to Kafka 4.x as its upgrade notes say (``docs/upgrade.html`` 4.4, "Upgrading Servers to
4.4.0 from any version 3.3.x through 4.3.0"): each node shut down, given the new code and started,
one at a time; then ``kafka-features.sh upgrade --release-version 4.4`` finalizes the metadata
version and every other feature's default level for it (docs/journey.md).

* ``kraft_roll`` -- one node to release ``to``: a broker (target ``Brokers((b,))``) by controlled
  shutdown (SIGTERM) and a start on the new jars; a controller (option ``controller``) by SIGTERM
  (none when an earlier kill left it down) and a start on the new jars, the step waiting until its metadata loader caught up with the
  quorum (so the next roll cannot leave the quorum without a majority) and, when it led, until
  another voter leads.
* ``kraft_finalize`` -- ``kafka-features upgrade --release-version V`` from the nodes' release's
  tools, refused unless every node runs that one release; done when the metadata log's
  FeatureLevelRecord for ``metadata.version`` is at V's level. ``features`` instead names the
  levels (``upgrade --feature name=level``): a finalize that may leave ``kraft.version``
  out (``--release-version`` also asks ``kraft.version=1``, turning a static quorum dynamic).

The oracle: a broker's roll is its controlled shutdown then its start (a new incarnation: on a 4.x
controller its registration runs the shutdown handler, ``oracle.kraft.config.registration_runs_shutdown_handler``);
a controller's roll changes no partition, and the active one's is a resignation
(:class:`oracle.events.ControllerFailover`); the finalize writes FeatureLevelRecords and changes no
partition. Which rules apply follows what was observed before each step
(``scenarios.run.step.controller_settings``, ``scenarios.model.snapshots``): the active
controller's release for its code, the log's finalized ``metadata.version`` and
``eligible.leader.replicas.version`` for the rest -- so ELR switches on at the finalize, not at the
binary roll.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.cluster import (
    DESCRIBE_MARK,
    Capability,
    ControllerQuorumControl,
    KraftReleaseRoller,
    implements,
)
from kafka_chaos.harness.config import KRAFT_MODE, check_kraft_release
from kafka_chaos.harness.distribution import check_version
from kafka_chaos.oracle import BrokerStartup, ClusterState, ControlledShutdown, Event
from kafka_chaos.oracle.events import ControllerFailover
from kafka_chaos.oracle.kraft.config import METADATA_VERSION, METADATA_VERSION_LEVELS
from kafka_chaos.scenarios.faults.base import (
    MIGRATION_ONLY,
    FaultBase,
    FaultEnv,
    StepTopics,
    register_fault,
    reject_unknown_options,
    require_capability,
)
from kafka_chaos.scenarios.faults.generation import (
    Candidates,
    ClusterModel,
    Draw,
    GeneratorSide,
    IllegalStep,
    register_generator,
)
from kafka_chaos.scenarios.faults.quorum import quorum_epoch, quorum_view, wait_new_epoch
from kafka_chaos.scenarios.model.ledger import STARTS_NODES, FaultWaits
from kafka_chaos.scenarios.model.steps import Step, frozen
from kafka_chaos.scenarios.model.targets import Brokers, NoTarget, Target

log = logging.getLogger(__name__)

ROLL = "kraft_roll"
FINALIZE = "kraft_finalize"
# A restarted controller replays the log and catches up in seconds; a loaded 2-core machine and a
# JVM start on new jars get a margin. The finalize's FeatureLevelRecords are committed before the
# tool returns (UpdateFeatures waits for them); the log reader is polled for them.
CATCH_UP_S = 90.0
FEATURES_WAIT_S = 30.0
# The release the journey upgrades to (the newest 4.x whose notes document an upgrade from 3.9.x:
# 4.4.0, "from any version 3.3.x through 4.3.0"), and its --release-version.
JOURNEY_RELEASE = "4.4.0"
JOURNEY_RELEASE_VERSION = "4.4"


def roller_of(env: FaultEnv, kind: str) -> KraftReleaseRoller:
    cluster = require_capability(env, Capability.ZK_MIGRATION, kind)
    if not implements(cluster, KraftReleaseRoller):
        raise HarnessError(f"{kind}: the {getattr(cluster, 'backend', 'this')} launcher cannot move KRaft nodes "
                           "to another release")
    return cast(KraftReleaseRoller, cluster)


def _release(kind: str, value: object) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{kind}: 'to' is a release like \"{JOURNEY_RELEASE}\", not {value!r}")
    version = check_version(value)
    check_kraft_release(KRAFT_MODE, version)
    return version


def metadata_level(release_version: str) -> int:
    """Pure: the ``metadata.version`` level ``--release-version`` names -- "4.4-IV2" exactly, "4.4"
    its line's newest production IV (``MetadataVersion.fromVersionString``, server-common 4.3.1
    lines 349-366, reads ``IBP_VERSIONS``, where a line's name maps to its newest production
    version: lines 306-314). The table holds production versions only up to each line's newest."""
    exact = [level for level, name in METADATA_VERSION_LEVELS.items() if name == release_version]
    line = [level for level, name in METADATA_VERSION_LEVELS.items() if name.split("-")[0] == release_version]
    found = exact or line
    if not found:
        raise UsageError(f"{FINALIZE}: unknown release version {release_version!r} (known: 3.3-IV3 to 4.4-IV2)")
    return max(found)


@register_fault
@dataclass
class KraftRoll(FaultBase):
    """Roll one KRaft node of a migrated cluster onto release ``to``: a broker by controlled
    shutdown and a start, a controller by SIGTERM and a start, caught up with the quorum before
    the step ends (the active one resigns: a new quorum leader)."""

    to: str = JOURNEY_RELEASE
    controller: int | None = None
    kind: ClassVar[str] = ROLL
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.ZK_MIGRATION, Capability.BROKER_CONTROL,
                                                           Capability.CONTROLLER_QUORUM})
    mode_support: ClassVar[frozenset[str]] = MIGRATION_ONLY
    kafka_waits: ClassVar[FaultWaits] = STARTS_NODES
    _led: bool = field(default=False, repr=False)  # the controller led when the step was prepared

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> KraftRoll:
        reject_unknown_options(cls.kind, options, ("to", "controller"))
        to = _release(cls.kind, options.get("to", JOURNEY_RELEASE))
        controller = options.get("controller")
        if controller is not None and (isinstance(controller, bool) or not isinstance(controller, int)):
            raise UsageError(f"{cls.kind}: 'controller' is a controller's node id, not {controller!r}")
        if controller is None and len(target.brokers) != 1:
            raise UsageError(f"{cls.kind}: one node: a broker as the target, or a controller as option 'controller'")
        return cls(target, to=to, controller=controller)

    @property
    def node(self) -> int:
        return self.controller if self.controller is not None else self.target.brokers[0]

    @property
    def label(self) -> str:
        return f"{ROLL}/{'controller' if self.controller is not None else 'broker'} to {self.to}"

    def prepare(self, env: FaultEnv, state: ClusterState) -> None:
        self._led = self.controller is not None and state.controller == self.controller

    def oracle_events(self) -> list[Event]:
        return roll_events(self.controller, (self.node,) if self.controller is None else (), self._led)

    def inject(self, env: FaultEnv) -> None:
        roller = roller_of(env, self.label)
        if self.controller is None:
            b = self.node
            env.cluster.stop_broker(b)
            roller.set_node_release(b, self.to)
            env.cluster.start_broker(b)
            return
        quorum = cast(ControllerQuorumControl, require_capability(env, Capability.CONTROLLER_QUORUM, self.label))
        epoch = quorum_epoch(env)
        led = quorum_view(env).controller == self.controller
        since = roller.server_log_size(self.controller)
        if quorum.controller_running(self.controller):  # one an earlier kill left down starts on the new jars
            quorum.stop_controller(self.controller)
        roller.set_node_release(self.controller, self.to)
        quorum.start_controller(self.controller)
        roller.wait_controller_caught_up(self.controller, since, CATCH_UP_S)
        if led:
            wait_new_epoch(env, epoch, self.label)

    def heal(self, env: FaultEnv) -> None:
        if self.controller is None:
            if not env.cluster.broker_running(self.node):
                env.cluster.start_broker(self.node)
            return
        quorum = cast(ControllerQuorumControl, env.cluster)
        if not quorum.controller_running(self.controller):  # a roll interrupted between stop and start
            quorum.start_controller(self.controller)


def roll_events(controller: int | None, brokers: tuple[int, ...], led: bool) -> list[Event]:
    """Pure: what the KRaft controller sees of one node's roll -- a broker's controlled shutdown
    then its start; the active controller's resignation (no partition changes, no broker fenced:
    the new leader starts every session afresh); nothing for a follower voter."""
    if controller is None:
        return [ControlledShutdown(brokers[0]), BrokerStartup(brokers)]
    return [ControllerFailover()] if led else []


@register_fault
@dataclass
class KraftFinalize(FaultBase):
    """``kafka-features upgrade --release-version V`` once every node runs one 4.x release
    (or ``features``: the levels named, ``kraft.version`` left out to keep a static quorum); done when the metadata log
    finalized V's ``metadata.version``. Writes FeatureLevelRecords only."""

    release_version: str = JOURNEY_RELEASE_VERSION
    features: Mapping[str, int] = field(default_factory=dict)
    kind: ClassVar[str] = FINALIZE
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.ZK_MIGRATION})
    mode_support: ClassVar[frozenset[str]] = MIGRATION_ONLY
    _said: str = field(default="", repr=False)

    @classmethod
    def from_step(cls, target: Target, options: Mapping[str, Any], topics: StepTopics) -> KraftFinalize:
        reject_unknown_options(cls.kind, options, ("release_version", "features"))
        version = options.get("release_version", JOURNEY_RELEASE_VERSION)
        if not isinstance(version, str):
            raise UsageError(f"{cls.kind}: 'release_version' is like \"{JOURNEY_RELEASE_VERSION}\", not {version!r}")
        metadata_level(version)
        raw = options.get("features") or {}
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                                   for k, v in raw.items()):
            raise UsageError(f"{cls.kind}: 'features' maps feature names to levels, not {raw!r}")
        return cls(target, release_version=version, features=dict(raw))

    @property
    def label(self) -> str:
        return f"{FINALIZE}/{self.release_version}" + ("/features" if self.features else "")

    def oracle_events(self) -> list[Event]:
        return []  # FeatureLevelRecords only: no partition, broker or leader changes

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        """The tool's answers: what ``upgrade`` upgraded, and ``describe``'s finalized levels after."""
        if not self._said:
            return None
        upgrade, _, describe = self._said.partition(DESCRIBE_MARK)
        return {"tool": upgrade.strip().splitlines()[-12:], "describe": describe.strip().splitlines()[-12:]}

    def inject(self, env: FaultEnv) -> None:
        roller = roller_of(env, self.label)
        releases = roller.node_versions()
        tool = finalize_tool_release(releases, self.release_version)
        features = dict(self.features)
        if features and METADATA_VERSION not in features:
            features[METADATA_VERSION] = metadata_level(self.release_version)
        self._said = roller.upgrade_features(self.release_version, tool, features or None)
        want = features.get(METADATA_VERSION, metadata_level(self.release_version))
        deadline = time.monotonic() + FEATURES_WAIT_S
        while (got := quorum_view(env).features.get(METADATA_VERSION, -1)) < want:
            if time.monotonic() >= deadline:
                raise HarnessError(f"{self.label}: the metadata log shows metadata.version level {got}, not {want}, "
                                   f"{FEATURES_WAIT_S:.0f} s after kafka-features upgrade")
            time.sleep(0.2)


def finalize_tool_release(releases: Mapping[int, str], release_version: str) -> str:
    """Pure: the release whose ``kafka-features`` finalizes -- the one every node runs, whose line
    is ``release_version``'s (the upgrade notes: roll every node first, then finalize)."""
    running = sorted(set(releases.values()))
    if len(running) != 1:
        behind = {n: r for n, r in sorted(releases.items())}
        raise HarnessError(f"{FINALIZE}: the nodes run {', '.join(running)} ({behind}); finalize once every node "
                           "runs the new release")
    line = ".".join(running[0].split(".")[:2])
    if release_version.split("-")[0] != line:
        raise HarnessError(f"{FINALIZE}: --release-version {release_version} is not the nodes' release {running[0]}")
    return running[0]


# --- generator side (scenarios.faults.generation) ------------------------------------------------
# Once the migration is finalised: every controller rolled onto the journey's release, one at a
# time, then every broker, then the finalize; each with every broker up and no voter down.

def _controller_ids(model: ClusterModel) -> list[int]:
    return model.voter_ids


def _legal(model: ClusterModel, kind: str) -> None:
    if model.mode != "migration" or not model.finalized:
        raise IllegalStep(f"{kind} needs a migrated cluster (the migration finalised)")
    busy = [b for b in model.brokers if b not in model.free]
    if busy or model.unknown_down or model.controllers_down:
        raise IllegalStep(f"{kind} while nodes {busy or 'of earlier steps'} are down or held")


def _rule(model: ClusterModel, step: Step, target: tuple[int, ...] | None) -> None:
    _legal(model, step.fault)
    nodes = [*_controller_ids(model), *model.brokers]
    if step.fault == FINALIZE:
        if model.features_finalized or any(n not in model.releases for n in nodes):
            raise IllegalStep("finalizing needs every node rolled, once")
        model.features_finalized = True
        return
    controller = step.options.get("controller")
    node = controller if isinstance(controller, int) else (target[0] if target and len(target) == 1 else None)
    if node is None or node not in nodes:
        raise IllegalStep(f"{ROLL} needs one node of the cluster")
    model.releases[node] = str(step.options.get("to", JOURNEY_RELEASE))


def _candidates(kind: str) -> Candidates:
    def candidates(model: ClusterModel, draw: Draw) -> list[Step]:
        try:
            _legal(model, kind)
        except IllegalStep:
            return []
        controllers = [c for c in _controller_ids(model) if c not in model.releases]
        brokers = [b for b in model.brokers if b not in model.releases]
        if kind == FINALIZE:
            return [] if controllers or brokers or model.features_finalized else [
                Step(kind, NoTarget("the cluster's features"), frozen({"release_version": JOURNEY_RELEASE_VERSION}))]
        if controllers:  # the controllers first, then the brokers: the journey suite's order
            return [Step(kind, NoTarget(f"controller {controllers[0]}"),
                         frozen({"controller": controllers[0], "to": JOURNEY_RELEASE}))]
        return [Step(kind, Brokers((b,)), frozen({"to": JOURNEY_RELEASE})) for b in brokers[:1]]
    return candidates


for _kind in (ROLL, FINALIZE):
    register_generator(GeneratorSide(_kind, 25.0, _rule, _candidates(_kind), opt_in=True))

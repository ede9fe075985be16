"""kafka-chaos as a pytest plugin (entry point ``pytest11``: loaded wherever kafka-chaos is
installed). Fixtures for people's own Kafka tests:

* ``kafka_cluster`` — a started ZooKeeper-mode Kafka 3.9 cluster (local JVMs or
  Testcontainers), torn down at the end of its scope;
* ``kafka_cluster_factory`` — ``kafka_cluster_factory(brokers=5, overrides={...})`` for a test
  that needs another shape (torn down after the test);
* ``chaos`` — faults from kafka-chaos's registry on that cluster: ``chaos.step(...)`` injects one
  and checks the cluster against the oracle (returns a :class:`StepVerdict`), ``chaos.inject``
  just injects; every fault is healed at teardown;
* ``oracle`` — the oracle over the cluster's current state: ``oracle.state()``,
  ``oracle.predict(*events)``.

Options (command line, or environment for CI): ``--kafka-chaos-backend`` (``KAFKA_CHAOS_BACKEND``,
default ``local``), ``--kafka-chaos-brokers`` (``KAFKA_CHAOS_BROKERS``, 3),
``--kafka-chaos-kafka-version`` (``KAFKA_CHAOS_KAFKA_VERSION``, 3.9.2),
``--kafka-chaos-scope`` (``KAFKA_CHAOS_SCOPE``: ``session``, ``module`` or ``function``;
default ``session``). Marker ``kafka_chaos``: the test needs a real cluster (select or leave
them out with ``-m``). See ``docs/pytest.md``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

import pytest

if TYPE_CHECKING:  # the plugin loads into every test run: the package is imported only when used
    from kafka_chaos.harness.cluster import ManagedCluster
    from kafka_chaos.harness.observers import AdminWriter, Observer
    from kafka_chaos.oracle import ClusterState, Event, Prediction
    from kafka_chaos.scenarios.faults import Fault, Nemesis
    from kafka_chaos.scenarios.model.targets import Selector
    from kafka_chaos.scenarios.run.probe import Probe, StepVerdict

# A fault's target: a selector (``LeaderOf("orders", 0)``), a broker id, broker ids, or None.
Targeted: TypeAlias = "Selector | int | tuple[int, ...] | list[int] | None"

Scope = Literal["session", "package", "module", "class", "function"]
SCOPES: tuple[Scope, ...] = ("session", "package", "module", "class", "function")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos", "kafka-chaos clusters, faults and oracle")
    group.addoption("--kafka-chaos-backend", default=None, choices=("local", "containers", "auto"),
                    help="where the kafka_cluster fixture runs brokers [env KAFKA_CHAOS_BACKEND; default local]")
    group.addoption("--kafka-chaos-brokers", type=int, default=None,
                    help="brokers of the kafka_cluster fixture [env KAFKA_CHAOS_BROKERS; default 3]")
    group.addoption("--kafka-chaos-kafka-version", default=None, metavar="V",
                    help="the Kafka release of the kafka_cluster fixture, 2.4.0 to 3.9.x "
                         "[env KAFKA_CHAOS_KAFKA_VERSION; default 3.9.2]")
    group.addoption("--kafka-chaos-mode", default=None, choices=("zookeeper", "kraft"),
                    help="ZooKeeper mode, or KRaft (1 controller; local launcher) "
                         "[env KAFKA_CHAOS_MODE; default zookeeper]")
    group.addoption("--kafka-chaos-scope", default=None, choices=SCOPES,
                    help="how long one kafka_cluster lives [env KAFKA_CHAOS_SCOPE; default session]")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_chaos: needs a real Kafka cluster started by kafka-chaos")


def _setting(config: pytest.Config, option: str, env: str, default: str) -> str:
    value = config.getoption(option)
    return str(value if value is not None else os.environ.get(env, default))


def _scope(fixture_name: str, config: pytest.Config) -> Scope:
    wanted = _setting(config, "--kafka-chaos-scope", "KAFKA_CHAOS_SCOPE", "session")
    for scope in SCOPES:
        if scope == wanted:
            return scope
    raise pytest.UsageError(f"KAFKA_CHAOS_SCOPE must be one of {', '.join(SCOPES)}, not {wanted!r}")


def _start(config: pytest.Config, brokers: int | None = None,
           overrides: Mapping[str, str] | None = None) -> ManagedCluster:
    from kafka_chaos.common.errors import HarnessError
    from kafka_chaos.harness.backends import open_cluster
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import resolve_distribution

    backend = _setting(config, "--kafka-chaos-backend", "KAFKA_CHAOS_BACKEND", "local")
    count = brokers if brokers is not None else int(_setting(config, "--kafka-chaos-brokers", "KAFKA_CHAOS_BROKERS", "3"))
    try:
        version = config.getoption("--kafka-chaos-kafka-version") or os.environ.get("KAFKA_CHAOS_KAFKA_VERSION") or None
        mode = _setting(config, "--kafka-chaos-mode", "KAFKA_CHAOS_MODE", "zookeeper")
        cluster: ManagedCluster = open_cluster(backend, ClusterConfig(brokers=count, cluster_overrides=dict(overrides or {}),
                                                                      mode=mode),
                                               resolve_distribution(version, os.environ.get("KAFKA_HOME")))
        cluster.__enter__()  # launchers are context managers: starts, cleans up if starting fails
    except HarnessError as exc:  # UsageError too (a bad KAFKA_CHAOS_MODE)
        pytest.fail(f"kafka-chaos could not start a cluster: {exc}", pytrace=False)
    return cluster


def _stop(cluster: ManagedCluster) -> None:
    cluster.__exit__(None, None, None)


@pytest.fixture(scope=_scope)
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[ManagedCluster]:
    """A started cluster (``harness.cluster.Cluster``): ``bootstrap_servers``, ``zookeeper_connect``,
    ``broker_ids``, and the broker controls of its launcher."""
    cluster = _start(request.config)
    try:
        yield cluster
    finally:
        _stop(cluster)


@pytest.fixture
def kafka_cluster_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., ManagedCluster]]:
    """``kafka_cluster_factory(brokers=N, overrides={...})``: a cluster of that shape for this test."""
    started: list[ManagedCluster] = []

    def make(brokers: int = 3, overrides: Mapping[str, str] | None = None) -> ManagedCluster:
        cluster = _start(request.config, brokers, overrides)
        started.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in reversed(started):
            _stop(cluster)


@dataclass
class Chaos:
    """Faults from kafka-chaos's registry on one cluster, healed at teardown."""

    cluster: ManagedCluster
    _observer: Observer | None = None
    _admin: AdminWriter | None = None
    _nemesis: Nemesis | None = None
    _probe: Probe | None = None
    _probe_topics: tuple[str, ...] | None = None

    @property
    def nemesis(self) -> Nemesis:
        """The faults injected so far (opens the ZooKeeper handles on first use)."""
        return self._open()[1]

    def _open(self) -> tuple[Observer, Nemesis]:
        if self._observer is None or self._nemesis is None:
            from kafka_chaos.harness.observers import open_admin, open_observer
            from kafka_chaos.scenarios.faults import FaultEnv, Nemesis

            self._observer = open_observer(self.cluster).__enter__()
            self._admin = open_admin(self.cluster).__enter__()
            session_ms = int(round(self.cluster.session_timeout_s() * 1000))
            self._nemesis = Nemesis(FaultEnv(self.cluster, self._observer, self._admin, session_ms))
        return self._observer, self._nemesis

    def step(self, fault: str, target: Targeted = None, *, topics: tuple[str, ...] | list[str] = (),
             then: tuple[str, ...] = (), **options: object) -> StepVerdict:
        """Inject ``fault`` (a registered kind) on ``target`` (a selector from
        ``scenarios.model.targets``, e.g. ``LeaderOf("orders", 0)``, or broker ids) and check what the
        cluster does against the oracle for the partitions of ``topics``. Returns a
        ``StepVerdict``: ``.passed``, ``.describe()``, ``.assert_ok()``, ``.observation``."""
        from kafka_chaos.scenarios.model.steps import Step
        from kafka_chaos.scenarios.history.observations import ScenarioRun
        from kafka_chaos.scenarios.run.probe import Probe

        observer, nemesis = self._open()
        wanted = tuple(topics)
        if self._probe is None or self._probe_topics != wanted:
            run = ScenarioRun(uuid.uuid4().hex[:12], "pytest", 0, 0, self.cluster.backend, self.cluster.kafka_version,
                              len(self.cluster.broker_ids), 0, topics=wanted)
            self._probe = Probe(self.cluster, observer, nemesis, wanted, run)
            self._probe_topics = wanted
        return self._probe.step(Step(fault, _selector(target), options, tuple(then)))

    def inject(self, fault: str, target: Targeted = None, **options: object) -> Fault:
        """Inject ``fault`` without checking anything; healed at teardown (or by ``heal_all``)."""
        from kafka_chaos.scenarios.model.steps import Step
        from kafka_chaos.scenarios.run.step import StepNaming

        observer, nemesis = self._open()
        snapshot = observer.snapshot()
        naming = StepNaming({t: t for (t, _) in snapshot.partitions})
        step = Step(fault, _selector(target), options)
        built = naming.fault(step, naming.resolve(step, snapshot, self.cluster.broker_ids), snapshot)
        nemesis.inject(built)
        return built

    def heal_all(self) -> list[str]:
        """Heal every fault still active; the errors met (healing goes on after one)."""
        if self._nemesis is None:
            return []
        return list(self._nemesis.heal_all())

    def close(self) -> None:
        errors = self.heal_all()
        for b in self.cluster.broker_ids:  # a test's kills must not leak into the next test
            if not self.cluster.broker_running(b):
                self.cluster.start_broker(b)
        for handle in (self._admin, self._observer):
            if handle is not None:
                handle.__exit__(None, None, None)
        if errors:
            raise AssertionError(f"healing failed: {'; '.join(errors)}")


def _selector(target: Targeted) -> Selector:
    from kafka_chaos.scenarios.model.targets import Brokers, NoTarget

    if target is None:
        return NoTarget()
    if isinstance(target, int):
        return Brokers((target,))
    if isinstance(target, (tuple, list)):
        return Brokers(tuple(int(b) for b in target))
    return target


@pytest.fixture
def chaos(kafka_cluster: ManagedCluster) -> Iterator[Chaos]:
    c = Chaos(kafka_cluster)
    try:
        yield c
    finally:
        c.close()


@dataclass
class ClusterOracle:
    """The oracle over the cluster's current ZooKeeper state."""

    cluster: ManagedCluster

    def state(self, topics: list[str] | None = None) -> ClusterState:
        """The oracle's ``ClusterState`` now (every topic when ``topics`` is None)."""
        from kafka_chaos.harness.observers import open_observer
        from kafka_chaos.scenarios.model.snapshots import cluster_state_of

        with open_observer(self.cluster, topics) as observer:
            snapshot = observer.snapshot()
        return cluster_state_of(snapshot, topics, dict(self.cluster.broker_settings()), self.cluster.kafka_version)

    def predict(self, *events: Event, topics: list[str] | None = None) -> Prediction:
        """``oracle.predict`` from the current state: the main prediction and its alternatives."""
        from kafka_chaos.oracle import predict

        return predict(self.state(topics), list(events))


@pytest.fixture
def oracle(kafka_cluster: ManagedCluster) -> ClusterOracle:
    return ClusterOracle(kafka_cluster)

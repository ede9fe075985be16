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
``--kafka-chaos-scope`` (``KAFKA_CHAOS_SCOPE``: ``session``, ``module`` or ``function``;
default ``session``). Marker ``kafka_chaos``: the test needs a real cluster (select or leave
them out with ``-m``). See ``docs/pytest.md``.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

Scope = Literal["session", "package", "module", "class", "function"]
SCOPES: tuple[Scope, ...] = ("session", "package", "module", "class", "function")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos", "kafka-chaos clusters, faults and oracle")
    group.addoption("--kafka-chaos-backend", default=None, choices=("local", "containers", "auto"),
                    help="where the kafka_cluster fixture runs brokers [env KAFKA_CHAOS_BACKEND; default local]")
    group.addoption("--kafka-chaos-brokers", type=int, default=None,
                    help="brokers of the kafka_cluster fixture [env KAFKA_CHAOS_BROKERS; default 3]")
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


def _start(config: pytest.Config, brokers: int | None = None, overrides: Mapping[str, str] | None = None) -> Any:
    from kafka_chaos.common.errors import HarnessError
    from kafka_chaos.harness.backends import open_cluster
    from kafka_chaos.harness.config import ClusterConfig
    from kafka_chaos.harness.distribution import resolve_distribution

    backend = _setting(config, "--kafka-chaos-backend", "KAFKA_CHAOS_BACKEND", "local")
    count = brokers if brokers is not None else int(_setting(config, "--kafka-chaos-brokers", "KAFKA_CHAOS_BROKERS", "3"))
    try:
        cluster: Any = open_cluster(backend, ClusterConfig(brokers=count, cluster_overrides=dict(overrides or {})),
                                    resolve_distribution(None, os.environ.get("KAFKA_HOME")))
        cluster.__enter__()  # launchers are context managers: starts, cleans up if starting fails
    except HarnessError as exc:
        pytest.fail(f"kafka-chaos could not start a cluster: {exc}", pytrace=False)
    return cluster


def _stop(cluster: Any) -> None:
    cluster.__exit__(None, None, None)


@pytest.fixture(scope=_scope)
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A started cluster (``harness.cluster.Cluster``): ``bootstrap_servers``, ``zookeeper_connect``,
    ``broker_ids``, and the broker controls of its launcher."""
    cluster = _start(request.config)
    try:
        yield cluster
    finally:
        _stop(cluster)


@pytest.fixture
def kafka_cluster_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``kafka_cluster_factory(brokers=N, overrides={...})``: a cluster of that shape for this test."""
    started: list[Any] = []

    def make(brokers: int = 3, overrides: Mapping[str, str] | None = None) -> Any:
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

    cluster: Any
    _observer: Any = None
    _admin: Any = None
    _probe: Any = None
    _probe_topics: tuple[str, ...] | None = None
    _faults: list[Any] = field(default_factory=list)

    def _open(self) -> None:
        if self._observer is not None:
            return
        from kafka_chaos.harness.observer import ZkObserver
        from kafka_chaos.harness.zkadmin import ZkAdmin
        from kafka_chaos.scenarios.faults import FaultEnv, Nemesis

        self._observer = ZkObserver(self.cluster.zookeeper_connect).__enter__()
        self._admin = ZkAdmin(self.cluster.zookeeper_connect).__enter__()
        settings = dict(self.cluster.broker_settings())
        self.nemesis = Nemesis(FaultEnv(self.cluster, self._observer, self._admin,
                                        int(settings.get("zookeeper.session.timeout.ms", 6000))))

    def step(self, fault: str, target: Any = None, *, topics: tuple[str, ...] | list[str] = (), then: tuple[str, ...] = (),
             **options: Any) -> Any:
        """Inject ``fault`` (a registered kind) on ``target`` (a selector from
        ``scenarios.model.targets``, e.g. ``LeaderOf("orders", 0)``, or broker ids) and check what the
        cluster does against the oracle for the partitions of ``topics``. Returns a
        ``StepVerdict``: ``.passed``, ``.describe()``, ``.assert_ok()``, ``.observation``."""
        from kafka_chaos.scenarios.model.steps import Step
        from kafka_chaos.scenarios.history.observations import ScenarioRun
        from kafka_chaos.scenarios.run.probe import Probe

        self._open()
        wanted = tuple(topics)
        if self._probe is None or self._probe_topics != wanted:
            run = ScenarioRun(uuid.uuid4().hex[:12], "pytest", 0, 0, getattr(self.cluster, "backend", "?"),
                              str(getattr(self.cluster, "kafka_version", "?")), len(self.cluster.broker_ids), 0,
                              topics=wanted)
            self._probe = Probe(self.cluster, self._observer, self.nemesis, wanted, run)
            self._probe_topics = wanted
        return self._probe.step(Step(fault, _selector(target), options, tuple(then)))

    def inject(self, fault: str, target: Any = None, **options: Any) -> Any:
        """Inject ``fault`` without checking anything; healed at teardown (or by ``heal_all``)."""
        from kafka_chaos.scenarios.faults import make_fault
        from kafka_chaos.scenarios.model.targets import view_of

        self._open()
        snapshot = self._observer.snapshot()
        resolved = _selector(target).resolve(view_of(snapshot, self.cluster.broker_ids), random.Random(0), [])
        topics = {t for (t, _) in snapshot.partitions}
        built = make_fault(fault, resolved, options, topic_names={t: t for t in topics},
                           topic_partitions={t: sorted(p for (n, p) in snapshot.partitions if n == t) for t in topics})
        self.nemesis.inject(built)
        return built

    def heal_all(self) -> list[str]:
        """Heal every fault still active; the errors met (healing goes on after one)."""
        if self._observer is None:
            return []
        return list(self.nemesis.heal_all())

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


def _selector(target: Any) -> Any:
    from kafka_chaos.scenarios.model.targets import Brokers, NoTarget

    if target is None:
        return NoTarget()
    if isinstance(target, int):
        return Brokers((target,))
    if isinstance(target, (tuple, list)):
        return Brokers(tuple(int(b) for b in target))
    return target


@pytest.fixture
def chaos(kafka_cluster: Any) -> Iterator[Chaos]:
    c = Chaos(kafka_cluster)
    try:
        yield c
    finally:
        c.close()


@dataclass
class ClusterOracle:
    """The oracle over the cluster's current ZooKeeper state."""

    cluster: Any

    def state(self, topics: list[str] | None = None) -> Any:
        """The oracle's ``ClusterState`` now (every topic when ``topics`` is None)."""
        from kafka_chaos.harness.observer import ZkObserver
        from kafka_chaos.scenarios.model.snapshots import cluster_state_of

        with ZkObserver(self.cluster.zookeeper_connect, topics=topics) as observer:
            snapshot = observer.snapshot()
        return cluster_state_of(snapshot, topics, dict(self.cluster.broker_settings()))

    def predict(self, *events: Any, topics: list[str] | None = None) -> Any:
        """``oracle.predict`` from the current state: the main prediction and its alternatives."""
        from kafka_chaos.oracle import predict

        return predict(self.state(topics), list(events))


@pytest.fixture
def oracle(kafka_cluster: Any) -> ClusterOracle:
    return ClusterOracle(kafka_cluster)

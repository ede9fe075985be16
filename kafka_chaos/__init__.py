"""kafka-chaos: chaos testing of real ZooKeeper-mode Kafka clusters, checked against a model of
the controller.

Everything installs under this one name (``kafka_chaos.oracle``, ``kafka_chaos.harness``,
``kafka_chaos.scenarios``, ``kafka_chaos.results``, ``kafka_chaos.cli``, ``kafka_chaos.common``).
What a user's own tests need is importable from here — the targets a fault takes, the oracle's
events and prediction, and the pytest plugin's verdict::

    from kafka_chaos import LeaderOf, BrokerFailure, StepVerdict

The names are resolved on first use (PEP 562), so importing one layer does not import the others.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC: dict[str, str] = {
    **{name: "kafka_chaos.scenarios.model.targets" for name in (
        "LeaderOf", "FollowerOf", "Controller", "NonControllerLeaderOf", "IsrAllButOne", "BrokerId", "Brokers",
        "FollowerLeadingNothing", "NonReplicaOf", "Target")},
    **{name: "kafka_chaos.oracle" for name in (
        "ClusterState", "TopicState", "PartitionState", "Prediction", "predict", "BrokerFailure",
        "ControlledShutdown", "BrokerStartup", "NO_LEADER")},
    "StepVerdict": "kafka_chaos.scenarios.run.probe",
    "Chaos": "kafka_chaos.pytest_plugin.plugin",
    "ClusterOracle": "kafka_chaos.pytest_plugin.plugin",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'kafka_chaos' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

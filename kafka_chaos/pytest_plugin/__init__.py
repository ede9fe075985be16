"""kafka-chaos's pytest plugin: clusters, faults and the oracle as fixtures (``plugin``)."""

from kafka_chaos.pytest_plugin.plugin import Chaos, ClusterOracle
from kafka_chaos.scenarios.run.probe import StepVerdict

__all__ = ["Chaos", "ClusterOracle", "StepVerdict"]

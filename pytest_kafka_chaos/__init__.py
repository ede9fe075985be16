"""kafka-chaos's pytest plugin: clusters, faults and the oracle as fixtures (``plugin``)."""

from pytest_kafka_chaos.plugin import Chaos, ClusterOracle
from scenarios.probe import StepVerdict

__all__ = ["Chaos", "ClusterOracle", "StepVerdict"]

"""Faults: one class per kind, registered in :data:`FAULTS` by :func:`register_fault`.

``base`` holds the contract, the registry and the :class:`Nemesis`; ``process``, ``network``,
``admin``, ``topics``, ``zookeeper``, ``degrade``, ``log_dirs``, ``delay``, ``upgrade``, ``quorum``,
``migration``, ``configs``, ``quorum_links``, ``records``, ``voter_links``, ``disks``, ``kraft_upgrade``, ``voters`` and ``broker_links`` hold the kinds
(importing them registers them). A new fault kind is one class with ``@register_fault`` in one of
those modules; a generatable one also registers its generator side beside it (``generation``:
weight, opt-in, legality rule, candidate steps), which ``explore`` and the shrinker read from
:data:`GENERATORS`.
"""

# Importing registers the kinds; this order is the order `--list`, errors and docs show them.
from kafka_chaos.scenarios.faults import process  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import admin  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import network  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import topics  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import zookeeper  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import degrade  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import log_dirs  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import delay  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import upgrade  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import quorum  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import migration  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import configs  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import quorum_links  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import records  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import voter_links  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import clocks  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import txn_timeout  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import disks  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import clients  # noqa: F401  isort: skip
# Last, so the kinds drawn before it keep their place in every seed's draw order.
from kafka_chaos.scenarios.faults import kraft_upgrade  # noqa: F401  isort: skip
from kafka_chaos.scenarios.faults import voters  # noqa: F401  isort: skip  (opt-in: no draw order changes)
from kafka_chaos.scenarios.faults import broker_links  # noqa: F401  isort: skip  (opt-in: no draw order changes)
from kafka_chaos.scenarios.faults.base import (
    FAULTS,
    Fault,
    FaultEnv,
    FaultKind,
    Nemesis,
    StepTopics,
    fault_kind,
    fault_kinds,
    make_fault,
    register_fault,
    requirements_of,
)
from kafka_chaos.scenarios.faults.generation import GENERATORS, GeneratorSide
from kafka_chaos.scenarios.faults.network import CUTS, HEAL, PARTITION_VARIANTS

__all__ = [
    "CUTS",
    "FAULTS",
    "GENERATORS",
    "HEAL",
    "PARTITION_VARIANTS",
    "Fault",
    "FaultEnv",
    "FaultKind",
    "GeneratorSide",
    "Nemesis",
    "StepTopics",
    "fault_kind",
    "fault_kinds",
    "make_fault",
    "register_fault",
    "requirements_of",
]
